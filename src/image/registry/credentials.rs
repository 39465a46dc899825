//! Registry credentials as docker and podman store them: config.json's `credHelpers`, `credsStore`
//! and `auths`, credential helpers (`docker-credential-X get`), and podman's `auth.json`.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;

use crate::image::go_json::null_as_empty;
use crate::image::reference::RegistryHost;
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::limits::{HELPER_TIMEOUT_ENV, seconds_text};
use crate::plumbing::process::{Argv, Bound, Out, ProcessError, Run, Stdin};

/// Where credentials are looked up: the settings' files, or a test's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CredentialSources {
    /// Docker's `config.json` (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`).
    pub docker_config: Option<PathBuf>,
    /// Podman's `auth.json` (`$REGISTRY_AUTH_FILE`, else `$XDG_RUNTIME_DIR/containers/auth.json`).
    pub podman_auth_file: Option<PathBuf>,
    /// The `PATH` searched for `docker-credential-*` helpers; `None` inherits ours.
    pub helper_path: Option<OsString>,
}

impl CredentialSources {
    /// The files we read, for messages: "looked in ...".
    pub fn describe(&self) -> String {
        let files: Vec<String> = [&self.docker_config, &self.podman_auth_file]
            .into_iter()
            .flatten()
            .map(|path| path.display().to_string())
            .collect();
        if files.is_empty() {
            "no docker or podman config file is known".to_string()
        } else {
            files.join(" and ")
        }
    }
}

/// A secret for one registry. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    Basic {
        username: String,
        password: String,
    },
    /// A refresh token for the registry's token server (docker's `identitytoken`).
    IdentityToken(String),
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Secret::Basic { username, .. } => write!(
                f,
                "Basic {{ username: {username:?}, password: <redacted> }}"
            ),
            Secret::IdentityToken(_) => f.write_str("IdentityToken(<redacted>)"),
        }
    }
}

/// Credentials and where they came from (said in errors; never the secret itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub secret: Secret,
    pub origin: String,
}

/// The cluster's own bearer token, for a registry whose token realm takes it as a password
/// (OpenShift's, as `oc registry login` does). Docker's credentials for the host win over it.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterLogin {
    pub token: String,
    /// Where the token came from, for "... was refused".
    pub origin: String,
    /// What to do when the registry refuses it.
    pub refused_hint: String,
}

/// Any user name will do: the registry reads the token alone.
const CLUSTER_LOGIN_USER: &str = "kubectl-registry";

impl ClusterLogin {
    pub fn credentials(&self) -> Credentials {
        Credentials {
            secret: Secret::Basic {
                username: CLUSTER_LOGIN_USER.to_string(),
                password: self.token.clone(),
            },
            origin: self.origin.clone(),
        }
    }
}

impl fmt::Debug for ClusterLogin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ClusterLogin {{ origin: {:?}, token: <redacted> }}",
            self.origin
        )
    }
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ConfigFile {
    #[serde(default, deserialize_with = "null_as_empty")]
    auths: HashMap<String, AuthEntry>,
    #[serde(default, rename = "credHelpers", deserialize_with = "null_as_empty")]
    pub(crate) cred_helpers: HashMap<String, String>,
    #[serde(default, rename = "credsStore")]
    pub(crate) creds_store: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

/// Finds credentials for `host`: docker's config (helper for the host, the default store, `auths`),
/// then podman's `auth.json`. `Ok(None)` means anonymous. `default_port` is the port of the scheme
/// we reach `host` by (80 for plain HTTP, 443 for HTTPS): a key naming it explicitly, or leaving
/// it out, is the same registry.
pub(super) async fn lookup(
    host: &RegistryHost,
    default_port: u16,
    sources: &CredentialSources,
    helper_timeout: Duration,
) -> Result<Option<Credentials>> {
    let wanted = Wanted { host, default_port };
    if let Some(path) = &sources.docker_config
        && let Some(config) = read_config(path)?
    {
        if let Some(helper) = find_entry(&config.cred_helpers, &wanted) {
            let origin = format!(
                "credential helper docker-credential-{helper} (credHelpers in {})",
                path.display()
            );
            if let Some(secret) = run_helper(helper, host, sources, &origin, helper_timeout).await?
            {
                return Ok(Some(Credentials { secret, origin }));
            }
        }
        if let Some(store) = config.creds_store.as_deref().filter(|s| !s.is_empty()) {
            let origin = format!(
                "credential helper docker-credential-{store} (credsStore in {})",
                path.display()
            );
            if let Some(secret) = run_helper(store, host, sources, &origin, helper_timeout).await? {
                return Ok(Some(Credentials { secret, origin }));
            }
        }
        if let Some(found) = from_auths(&config, &wanted, path)? {
            return Ok(Some(found));
        }
    }
    if let Some(path) = &sources.podman_auth_file
        && let Some(config) = read_config(path)?
        && let Some(found) = from_auths(&config, &wanted, path)?
    {
        return Ok(Some(found));
    }
    Ok(None)
}

fn read_config(path: &Path) -> Result<Option<ConfigFile>> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(Error::new(
                ExitCode::Registry,
                format!("reading credentials from {}", path.display()),
            )
            .with_source(err));
        }
    };
    parse_config(&text, path).map(Some)
}

/// A docker `config.json` (or podman's `auth.json`) read from `path`'s bytes.
pub(crate) fn parse_config(text: &[u8], path: &Path) -> Result<ConfigFile> {
    serde_json::from_slice(text).map_err(|err| {
        Error::new(
            ExitCode::Registry,
            format!(
                "reading credentials from {}: it is not valid JSON",
                path.display()
            ),
        )
        .with_source(err)
        .with_hint(format!("fix or remove {}", path.display()))
    })
}

/// The registry a key must name, and the default port of the scheme we reach it by.
pub(crate) struct Wanted<'a> {
    pub(crate) host: &'a RegistryHost,
    pub(crate) default_port: u16,
}

/// Keys are written as `host`, `https://host`, `http://host/v1/`...: compare the host part, the
/// same text first; else the same name on the same port, each side's default port filled in (a
/// key's scheme names its own default; a bare key's is the scheme we use), so that
/// `127.0.0.1:80` is `127.0.0.1` over plain HTTP, as Go's URL rules make them one origin.
pub(crate) fn find_entry<'a, V>(entries: &'a HashMap<String, V>, wanted: &Wanted) -> Option<&'a V> {
    let host = wanted.host;
    let exact = entries
        .iter()
        .find(|(key, _)| normalize_key(key).eq_ignore_ascii_case(host.as_str()));
    let same_origin = || {
        let port = host.port().unwrap_or(wanted.default_port);
        entries.iter().find(|(key, _)| {
            let Ok(named) = RegistryHost::parse(normalize_key(key)) else {
                return false;
            };
            let key_default = if key.starts_with("http://") {
                80
            } else if key.starts_with("https://") {
                443
            } else {
                wanted.default_port
            };
            named.hostname().eq_ignore_ascii_case(host.hostname())
                && named.port().unwrap_or(key_default) == port
        })
    };
    exact.or_else(same_origin).map(|(_, value)| value)
}

fn normalize_key(key: &str) -> &str {
    let without_scheme = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    without_scheme.split('/').next().unwrap_or(without_scheme)
}

pub(crate) fn from_auths(
    config: &ConfigFile,
    wanted: &Wanted,
    path: &Path,
) -> Result<Option<Credentials>> {
    let host = wanted.host;
    let Some(entry) = find_entry(&config.auths, wanted) else {
        return Ok(None);
    };
    let origin = format!("auths entry for {host} in {}", path.display());
    if let Some(token) = entry.identitytoken.as_deref().filter(|t| !t.is_empty()) {
        return Ok(Some(Credentials {
            secret: Secret::IdentityToken(token.to_string()),
            origin,
        }));
    }
    if let Some(encoded) = entry.auth.as_deref().filter(|a| !a.is_empty()) {
        let (username, password) = decode_basic(encoded).ok_or_else(|| {
            Error::new(
                ExitCode::Registry,
                format!("the {origin} is not base64 of user:password"),
            )
            .with_hint(format!("run `docker login {host}` again"))
        })?;
        return Ok(Some(Credentials {
            secret: Secret::Basic { username, password },
            origin,
        }));
    }
    match (&entry.username, &entry.password) {
        (Some(username), Some(password)) => Ok(Some(Credentials {
            secret: Secret::Basic {
                username: username.clone(),
                password: password.clone(),
            },
            origin,
        })),
        // An empty entry is what `docker login` leaves when a credsStore holds the secret.
        _ => Ok(None),
    }
}

fn decode_basic(encoded: &str) -> Option<(String, String)> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (user, pass) = text.split_once(':')?;
    Some((user.to_string(), pass.to_string()))
}

#[derive(Debug, Deserialize)]
struct HelperAnswer {
    #[serde(rename = "Username", default)]
    username: String,
    #[serde(rename = "Secret", default)]
    secret: String,
}

/// What a helper prints on stderr/stdout when it has nothing for the server.
const NOT_FOUND_TEXT: &str = "credentials not found";

/// The most of a helper's stdout or stderr we keep: its JSON answer is a few KiB.
const HELPER_OUTPUT_LIMIT: usize = 1 << 20;

/// The most of a failed helper's message we show.
const HELPER_REASON_LIMIT: usize = 300;

/// Why a helper failed, as docker shows it: the helper protocol's message on stdout
/// (docker-credential-helpers print their error there), never stderr, where a helper may
/// echo what it was given or what it read, the password included. A stdout that holds a
/// JSON answer with a secret is not shown either. `None` when there is nothing safe to say.
pub(crate) fn helper_reason(stdout: &[u8]) -> Option<String> {
    if serde_json::from_slice::<HelperAnswer>(stdout).is_ok_and(|answer| !answer.secret.is_empty())
    {
        return None;
    }
    let text = String::from_utf8_lossy(stdout);
    let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    Some(match line.char_indices().nth(HELPER_REASON_LIMIT) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    })
}

/// Runs `docker-credential-<name> get` with the server on stdin. `Ok(None)`: it has nothing for us.
async fn run_helper(
    name: &str,
    host: &RegistryHost,
    sources: &CredentialSources,
    origin: &str,
    timeout: Duration,
) -> Result<Option<Secret>> {
    let program = format!("docker-credential-{name}");
    let argv = Argv::of(&program, ["get"]);
    let mut run = Run::new(&argv, Bound::Within(timeout))
        .stdin(Stdin::Bytes(host.as_str().as_bytes().to_vec()))
        .stdout(Out::Keep {
            cap: HELPER_OUTPUT_LIMIT,
        })
        .stderr(Out::Keep {
            cap: HELPER_OUTPUT_LIMIT,
        });
    if let Some(path) = &sources.helper_path {
        run = run.env("PATH", path);
    }
    let failed = |message: String| {
        Error::new(
            ExitCode::Registry,
            format!("getting credentials for {host} from the {origin}: {message}"),
        )
    };
    // Its stderr is never shown: a helper may echo what it was given or read there.
    let output = run.output().await.map_err(|err| match err {
        ProcessError::NotFound { source, .. } | ProcessError::Start { source, .. } => {
            failed(format!("{program} could not be started"))
                .with_source(source)
                .with_hint(format!(
                    "install {program}, or remove it from the docker config"
                ))
        }
        ProcessError::TimedOut { .. } | ProcessError::LeftOpen { .. } => failed(format!(
            "{program} did not answer within {}",
            seconds_text(timeout)
        ))
        .with_hint(format!(
            "check that {program} works (it may be waiting for a password prompt or a locked keychain); {HELPER_TIMEOUT_ENV} sets how long to wait"
        )),
        err => failed(format!("{program} did not finish")).with_source(err),
    })?;
    if !output.status.success() {
        let said = format!(
            "{} {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        if said.to_ascii_lowercase().contains(NOT_FOUND_TEXT) {
            return Ok(None);
        }
        return Err(failed(match helper_reason(&output.stdout) {
            Some(reason) => format!("{program} failed ({}): {reason}", output.status),
            None => format!("{program} failed ({})", output.status),
        }));
    }
    helper_answer(&output.stdout).map_err(|err| {
        failed(format!(
            "{program} printed something other than its JSON answer"
        ))
        .with_source(err)
    })
}

/// A helper's answer to `get`: its secret, `None` when it holds none for the server.
pub(crate) fn helper_answer(
    stdout: &[u8],
) -> std::result::Result<Option<Secret>, serde_json::Error> {
    let answer: HelperAnswer = serde_json::from_slice(stdout)?;
    if answer.secret.is_empty() {
        return Ok(None);
    }
    Ok(Some(if answer.username == "<token>" {
        Secret::IdentityToken(answer.secret)
    } else {
        Secret::Basic {
            username: answer.username,
            password: answer.secret,
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lookup(
        host: &RegistryHost,
        sources: &CredentialSources,
    ) -> Result<Option<Credentials>> {
        super::lookup(host, 443, sources, Duration::from_secs(10)).await
    }

    fn host(raw: &str) -> RegistryHost {
        RegistryHost::parse(raw).unwrap()
    }

    fn write_config(dir: &Path, json: &str) -> PathBuf {
        let path = dir.join("config.json");
        std::fs::write(&path, json).unwrap();
        path
    }

    fn sources(docker_config: Option<PathBuf>, podman: Option<PathBuf>) -> CredentialSources {
        CredentialSources {
            docker_config,
            podman_auth_file: podman,
            helper_path: Some(OsString::new()),
        }
    }

    #[test]
    fn an_explicit_default_port_names_the_same_registry() {
        let entries: HashMap<String, u8> = [
            ("127.0.0.1:80".to_string(), 1),
            ("https://reg.example".to_string(), 2),
            ("other.example:5000".to_string(), 3),
        ]
        .into_iter()
        .collect();
        let find = |raw: &str, default_port: u16| {
            let host = host(raw);
            find_entry(
                &entries,
                &Wanted {
                    host: &host,
                    default_port,
                },
            )
            .copied()
        };
        assert_eq!(find("127.0.0.1", 80), Some(1));
        assert_eq!(
            find("127.0.0.1", 443),
            None,
            "127.0.0.1 over HTTPS is port 443"
        );
        assert_eq!(
            find("reg.example:443", 80),
            Some(2),
            "the key's scheme names its port"
        );
        assert_eq!(find("reg.example:80", 80), None);
        assert_eq!(find("other.example", 443), None);
    }

    #[tokio::test]
    async fn auths_keys_match_with_or_without_scheme_and_path() {
        let dir = tempfile::tempdir().unwrap();
        // "alice:s3cret"
        let path = write_config(
            dir.path(),
            r#"{"auths":{"https://reg.example:5000/v1/":{"auth":"YWxpY2U6czNjcmV0"}}}"#,
        );
        let found = lookup(
            &host("reg.example:5000"),
            &sources(Some(path.clone()), None),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(
            found.secret,
            Secret::Basic {
                username: "alice".into(),
                password: "s3cret".into()
            }
        );
        assert!(found.origin.contains(&path.display().to_string()));
        let other = lookup(&host("reg.example:5001"), &sources(Some(path), None))
            .await
            .unwrap();
        assert_eq!(other, None);
    }

    #[tokio::test]
    async fn identity_tokens_are_kept_apart_from_passwords() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_config(
            dir.path(),
            r#"{"auths":{"reg.example":{"identitytoken":"refresh-me"}}}"#,
        );
        let found = lookup(&host("reg.example"), &sources(Some(path), None))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.secret, Secret::IdentityToken("refresh-me".into()));
    }

    #[tokio::test]
    async fn podman_auth_json_is_read_when_docker_has_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let docker = write_config(dir.path(), r#"{"auths":{}}"#);
        let podman = dir.path().join("auth.json");
        std::fs::write(
            &podman,
            r#"{"auths":{"http://reg.example":{"auth":"Ym9iOnB3"}}}"#,
        )
        .unwrap();
        let found = lookup(
            &host("reg.example"),
            &sources(Some(docker), Some(podman.clone())),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(
            found.secret,
            Secret::Basic {
                username: "bob".into(),
                password: "pw".into()
            }
        );
        assert!(found.origin.contains(&podman.display().to_string()));
    }

    #[tokio::test]
    async fn missing_files_mean_anonymous_and_broken_json_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.json");
        assert_eq!(
            lookup(&host("reg.example"), &sources(Some(missing), None))
                .await
                .unwrap(),
            None
        );
        let broken = write_config(dir.path(), "{not json");
        let err = lookup(&host("reg.example"), &sources(Some(broken.clone()), None))
            .await
            .unwrap_err();
        assert!(
            err.message().contains(&broken.display().to_string()),
            "{}",
            err.message()
        );
    }

    #[tokio::test]
    async fn a_missing_helper_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_config(dir.path(), r#"{"credsStore":"nosuchhelper"}"#);
        let err = lookup(&host("reg.example"), &sources(Some(path), None))
            .await
            .unwrap_err();
        assert!(
            err.message().contains("docker-credential-nosuchhelper"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn debug_output_never_shows_secrets() {
        let secret = Secret::Basic {
            username: "alice".into(),
            password: "s3cret".into(),
        };
        let token = Secret::IdentityToken("tok3n".into());
        let shown = format!("{secret:?} {token:?}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("tok3n"),
            "{shown}"
        );
        assert!(shown.contains("alice"));
    }
}
