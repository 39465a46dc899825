//! Where each engine's API listens, found the way its own CLI finds it: `DOCKER_HOST`, then
//! `DOCKER_CONTEXT`, then the docker config's `currentContext` (its endpoint in
//! `contexts/meta/<sha256 of the name>/meta.json`), then the default socket (on Windows Docker
//! Desktop's named pipe `npipe:////./pipe/docker_engine`), then the sockets Docker Desktop, colima
//! and OrbStack make in the home folder (macOS, where `/var/run/docker.sock` may be absent);
//! podman's `CONTAINER_HOST`, then its rootless and rootful sockets.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest as _, Sha256};

const DOCKER_DEFAULT_SOCKET: &str = "/var/run/docker.sock";
/// Docker Desktop's engine on Windows, as `DOCKER_HOST` names it.
const DOCKER_DEFAULT_PIPE: &str = "npipe:////./pipe/docker_engine";
const PODMAN_ROOTFUL_SOCKET: &str = "/run/podman/podman.sock";
/// The sockets in the home folder, after the default one: Docker Desktop's (macOS, Linux),
/// colima's default instance and OrbStack's, each with its name for `-v`.
const HOME_SOCKETS: [(&str, &str); 3] = [
    (".docker/run/docker.sock", "Docker Desktop's socket"),
    (".colima/default/docker.sock", "colima's socket"),
    (".orbstack/run/docker.sock", "OrbStack's socket"),
];

/// How an engine is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// Its API over a unix socket, or on Windows a named pipe (`\\.\pipe\docker_engine`);
    /// `origin` says where the path came from, for `-v`.
    Socket { path: PathBuf, origin: String },
    /// Its CLI: the API is elsewhere (tcp://, ssh://) or no socket was found, and the CLI knows
    /// how to reach it.
    Cli,
}

/// What the environment says about where the engines listen (read once, by the settings).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineEnv {
    pub docker_host: Option<String>,
    pub docker_context: Option<String>,
    /// `DOCKER_CONFIG`, else `~/.docker`: where the contexts are.
    pub docker_config_dir: Option<PathBuf>,
    pub container_host: Option<String>,
    /// `XDG_RUNTIME_DIR`: where podman's rootless socket is.
    pub runtime_dir: Option<PathBuf>,
    /// `TMPDIR`: where podman spools big files when set (else `/var/tmp`).
    pub tmp_dir: Option<PathBuf>,
    /// `CONTAINERS_STORAGE_CONF` and `STORAGE_DRIVER`: podman's image store, as podman reads them.
    pub storage_conf: Option<PathBuf>,
    pub storage_driver: Option<String>,
    /// `XDG_CONFIG_HOME`, `XDG_DATA_HOME` and `HOME`: where a rootless store and its file are.
    pub config_home: Option<PathBuf>,
    pub data_home: Option<PathBuf>,
    pub home: Option<PathBuf>,
    /// `CONTAINERD_ADDRESS`, `CONTAINERD_NAMESPACE` and `NERDCTL_TOML`: where nerdctl's images are.
    pub containerd_address: Option<String>,
    pub containerd_namespace: Option<String>,
    pub nerdctl_toml: Option<PathBuf>,
}

impl EngineEnv {
    /// Where an engine's CLI writes its big temporary files: `TMPDIR`, else `/var/tmp`, as
    /// podman decides (`/tmp` is often a small tmpfs).
    pub fn big_files_dir(&self) -> PathBuf {
        self.tmp_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("/var/tmp"))
    }
}

/// Where docker's API is, as the docker CLI would decide.
pub(super) fn docker(env: &EngineEnv) -> Endpoint {
    docker_on(env, Platform::HERE, Path::new(DOCKER_DEFAULT_SOCKET))
}

/// The system whose rules [`docker_on`] follows: a named pipe is reached only on Windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Platform {
    Unix,
    Windows,
}

impl Platform {
    const HERE: Self = if cfg!(windows) {
        Self::Windows
    } else {
        Self::Unix
    };
}

/// [`docker`] on `platform`, whose default socket (on unix) is `default_socket`.
fn docker_on(env: &EngineEnv, platform: Platform, default_socket: &Path) -> Endpoint {
    if let Some(host) = &env.docker_host {
        return from_host(host, "DOCKER_HOST", platform);
    }
    let config_dir = env.docker_config_dir.as_deref();
    let context = env
        .docker_context
        .clone()
        .or_else(|| config_dir.and_then(current_context));
    if let (Some(context), Some(dir)) = (context.filter(|c| c != "default"), config_dir) {
        return match context_host(dir, &context) {
            Some(host) => from_host(&host, &format!("docker context {context}"), platform),
            // A context we cannot read: its CLI will say what is wrong with it.
            None => Endpoint::Cli,
        };
    }
    if platform == Platform::Windows {
        return match from_host(DOCKER_DEFAULT_PIPE, "docker's default pipe", platform) {
            Endpoint::Socket { path, origin } => existing_socket(&path, &origin),
            Endpoint::Cli => Endpoint::Cli,
        };
    }
    let default = existing_socket(default_socket, "docker's default socket");
    let Some(home) = env.home.as_deref().filter(|_| default == Endpoint::Cli) else {
        return default;
    };
    HOME_SOCKETS
        .iter()
        .map(|(path, origin)| existing_socket(&home.join(path), origin))
        .find(|found| *found != Endpoint::Cli)
        .unwrap_or(Endpoint::Cli)
}

/// `unix:///run/docker.sock` or `npipe:////./pipe/docker_engine`, as `DOCKER_HOST` writes it.
pub(super) fn url_of(path: &Path) -> String {
    let text = path.to_string_lossy();
    if is_pipe(path) {
        format!("npipe://{}", text.replace('\\', "/"))
    } else {
        format!("unix://{text}")
    }
}

/// Whether `path` names a Windows named pipe (`\\.\pipe\NAME`), not a unix socket.
pub(super) fn is_pipe(path: &Path) -> bool {
    path.to_string_lossy().starts_with(PIPE_PREFIX)
}

/// Where Windows' named pipes are: `\\.\pipe\NAME`.
const PIPE_PREFIX: &str = r"\\.\pipe\";

/// The pipe an `npipe://` host names, as Windows opens it: `npipe:////./pipe/docker_engine` is
/// `\\.\pipe\docker_engine` (Docker's CLI also takes `npipe:///./pipe/...`).
fn pipe_path(host: &str) -> Option<PathBuf> {
    let rest = host.strip_prefix("npipe://")?;
    let name = rest
        .trim_start_matches('/')
        .strip_prefix("./pipe/")
        .filter(|name| !name.is_empty() && !name.contains(['/', '\\']))?;
    Some(PathBuf::from(format!("{PIPE_PREFIX}{name}")))
}

/// Where podman's API is: `CONTAINER_HOST`, else the rootless socket, else the rootful one.
pub(super) fn podman(env: &EngineEnv) -> Endpoint {
    if let Some(host) = &env.container_host {
        return from_host(host, "CONTAINER_HOST", Platform::HERE);
    }
    if let Some(runtime) = &env.runtime_dir {
        let rootless = runtime.join("podman/podman.sock");
        if let found @ Endpoint::Socket { .. } = existing_socket(&rootless, "podman's socket") {
            return found;
        }
    }
    existing_socket(Path::new(PODMAN_ROOTFUL_SOCKET), "podman's socket")
}

/// The API a host names when we can speak to it ourselves: a unix socket, or on Windows a named
/// pipe; else (tcp://, ssh://, a pipe elsewhere) the CLI, which knows how.
fn from_host(host: &str, origin: &str, platform: Platform) -> Endpoint {
    let path = match (host.strip_prefix("unix://"), platform) {
        (Some(path), _) => Some(PathBuf::from(path)),
        (None, Platform::Windows) => pipe_path(host),
        (None, Platform::Unix) => None,
    };
    match path {
        Some(path) => Endpoint::Socket {
            path,
            origin: origin.to_string(),
        },
        None => Endpoint::Cli,
    }
}

fn existing_socket(path: &Path, origin: &str) -> Endpoint {
    if path.exists() {
        Endpoint::Socket {
            path: path.to_path_buf(),
            origin: origin.to_string(),
        }
    } else {
        Endpoint::Cli
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigFile {
    current_context: Option<String>,
}

fn current_context(config_dir: &Path) -> Option<String> {
    let bytes = std::fs::read(config_dir.join("config.json")).ok()?;
    let config: ConfigFile = serde_json::from_slice(&bytes).ok()?;
    config.current_context.filter(|c| !c.is_empty())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ContextMeta {
    endpoints: std::collections::HashMap<String, EndpointMeta>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct EndpointMeta {
    host: Option<String>,
}

/// The docker endpoint of context `name`: the CLI stores it under the sha256 of the name.
fn context_host(config_dir: &Path, name: &str) -> Option<String> {
    let id = hex::encode(Sha256::digest(name.as_bytes()));
    let meta = config_dir.join("contexts/meta").join(id).join("meta.json");
    let meta: ContextMeta = serde_json::from_slice(&std::fs::read(meta).ok()?).ok()?;
    meta.endpoints.get("docker")?.host.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_endpoint_is_read_from_the_hashed_meta_directory() {
        let dir = tempfile::tempdir().unwrap();
        let id = hex::encode(Sha256::digest(b"colima"));
        let meta_dir = dir.path().join("contexts/meta").join(id);
        std::fs::create_dir_all(&meta_dir).unwrap();
        std::fs::write(
            meta_dir.join("meta.json"),
            r#"{"Name":"colima","Metadata":{},"Endpoints":{"docker":{"Host":"unix:///x/docker.sock","SkipTLSVerify":false}}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("config.json"),
            r#"{"currentContext":"colima"}"#,
        )
        .unwrap();
        assert_eq!(current_context(dir.path()).as_deref(), Some("colima"));
        assert_eq!(
            context_host(dir.path(), "colima").as_deref(),
            Some("unix:///x/docker.sock")
        );
        assert_eq!(context_host(dir.path(), "other"), None);
    }

    fn socket(path: &str, origin: &str) -> Endpoint {
        Endpoint::Socket {
            path: path.into(),
            origin: origin.into(),
        }
    }

    #[test]
    fn unix_hosts_and_on_windows_pipes_are_spoken_to_directly() {
        for platform in [Platform::Unix, Platform::Windows] {
            assert_eq!(
                from_host("unix:///run/user/1/docker.sock", "DOCKER_HOST", platform),
                socket("/run/user/1/docker.sock", "DOCKER_HOST")
            );
            assert_eq!(
                from_host("tcp://10.0.0.1:2376", "DOCKER_HOST", platform),
                Endpoint::Cli
            );
            assert_eq!(
                from_host("ssh://me@box", "DOCKER_HOST", platform),
                Endpoint::Cli
            );
        }
        let pipe = "npipe:////./pipe/docker_engine";
        assert_eq!(
            from_host(pipe, "DOCKER_HOST", Platform::Windows),
            socket(r"\\.\pipe\docker_engine", "DOCKER_HOST")
        );
        assert_eq!(
            from_host(pipe, "DOCKER_HOST", Platform::Unix),
            Endpoint::Cli
        );
    }

    #[test]
    fn pipe_hosts_are_read_as_dockers_cli_reads_them() {
        let pipe = |host| pipe_path(host).map(|path| path.to_string_lossy().into_owned());
        assert_eq!(
            pipe("npipe:////./pipe/docker_engine").as_deref(),
            Some(r"\\.\pipe\docker_engine")
        );
        assert_eq!(
            pipe("npipe:///./pipe/dockerDesktopLinuxEngine").as_deref(),
            Some(r"\\.\pipe\dockerDesktopLinuxEngine")
        );
        for not_a_pipe in [
            "npipe://",
            "npipe:////./pipe/",
            "npipe:////./pipe/a/b",
            "npipe:////host/pipe/x",
            "unix:///x",
        ] {
            assert_eq!(pipe(not_a_pipe), None, "{not_a_pipe}");
        }
        assert_eq!(
            url_of(Path::new(r"\\.\pipe\docker_engine")),
            "npipe:////./pipe/docker_engine"
        );
        assert_eq!(url_of(Path::new("/x/docker.sock")), "unix:///x/docker.sock");
    }

    #[test]
    fn windows_uses_the_desktop_pipe_only_where_it_is_and_a_context_first() {
        let dir = tempfile::tempdir().unwrap();
        let env = EngineEnv {
            docker_config_dir: Some(dir.path().to_path_buf()),
            ..EngineEnv::default()
        };
        // No Docker Desktop here: the pipe is absent, so the CLI, as before.
        let nowhere = dir.path().join("none");
        assert_eq!(docker_on(&env, Platform::Windows, &nowhere), Endpoint::Cli);
        let env = EngineEnv {
            docker_host: Some("npipe:////./pipe/docker_engine".into()),
            ..env
        };
        assert_eq!(
            docker_on(&env, Platform::Windows, &nowhere),
            socket(r"\\.\pipe\docker_engine", "DOCKER_HOST")
        );
    }

    #[test]
    fn the_home_folders_sockets_follow_the_default_one_in_order() {
        let home = tempfile::tempdir().unwrap();
        let env = EngineEnv {
            home: Some(home.path().to_path_buf()),
            ..EngineEnv::default()
        };
        let default = home.path().join("var-run-docker.sock");
        let docker = || docker_on(&env, Platform::Unix, &default);
        assert_eq!(docker(), Endpoint::Cli);
        for (at, origin) in HOME_SOCKETS.iter().rev() {
            let path = home.path().join(at);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, b"").unwrap();
            assert_eq!(docker(), socket(path.to_str().unwrap(), origin));
        }
        std::fs::write(&default, b"").unwrap();
        assert_eq!(
            docker(),
            socket(default.to_str().unwrap(), "docker's default socket")
        );
    }
}
