//! The registry's auth challenge: which `Authorization` a request carries (none, Basic, or a Bearer
//! token fetched from the realm for the repository's scope), and the "wrong credentials" error.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use base64::Engine as _;
use reqwest::header::HeaderValue;
use reqwest::{StatusCode, Url};
use serde::Deserialize;
use tokio::sync::OnceCell;

use super::connection::transport::{Transport, explain_send_error, same_authority, stalled_error};
use super::credentials;
use super::credentials::{ClusterLogin, CredentialSources, Credentials, Secret};
use super::errors::RegistryResponse;
use super::watchdog::Stalled;
use crate::image::http_body::{TOKEN_BODY_LIMIT, read_capped};
use crate::image::reference::{RegistryHost, is_loopback_url};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::limits::{REQUEST_TIMEOUT_ENV, seconds_text};
use crate::plumbing::output::shown_bare;

mod challenge;

pub(crate) use challenge::{
    Challenge, TokenRefusal, parse_challenge, refusal_said, unspoken_scheme,
};

/// The token-server scopes a request needs: `repository:<repo>:pull,push`, and `pull` on a mount's source.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Scope(Vec<String>);

impl Scope {
    /// No repository: the `/v2/` ping.
    pub(super) fn registry() -> Self {
        Self(Vec::new())
    }

    pub(super) fn push(repo: &str) -> Self {
        Self(vec![format!("repository:{repo}:pull,push")])
    }

    pub(super) fn pull(repo: &str) -> Self {
        Self(vec![format!("repository:{repo}:pull")])
    }

    /// What a manifest DELETE needs (distribution asks its token server for `delete`).
    pub(super) fn delete(repo: &str) -> Self {
        Self(vec![format!("repository:{repo}:pull,delete")])
    }

    /// `GET /v2/_catalog`.
    pub(super) fn catalog() -> Self {
        Self(vec!["registry:catalog:*".to_string()])
    }

    pub(super) fn push_with_pull_from(repo: &str, from: &str) -> Self {
        Self(vec![
            format!("repository:{repo}:pull,push"),
            format!("repository:{from}:pull"),
        ])
    }

    fn key(&self) -> String {
        self.0.join(" ")
    }
}

/// Auth state for one registry, shared by every request of a client.
#[derive(Debug)]
pub(super) struct Auth {
    sources: CredentialSources,
    /// The cluster's own token, for a registry whose token realm takes it (OpenShift's).
    cluster_login: Option<ClusterLogin>,
    /// Set once the cluster's token was sent to the realm, to say so if it is refused.
    cluster_login_sent: AtomicBool,
    credentials: OnceCell<Option<Credentials>>,
    challenge: Mutex<Option<Challenge>>,
    tokens: Mutex<HashMap<String, String>>,
}

impl Auth {
    pub(super) fn new(sources: CredentialSources, cluster_login: Option<ClusterLogin>) -> Self {
        Self {
            sources,
            cluster_login,
            cluster_login_sent: AtomicBool::new(false),
            credentials: OnceCell::new(),
            challenge: Mutex::new(None),
            tokens: Mutex::new(HashMap::new()),
        }
    }

    /// Looks the credentials up (running a credential helper, under its own time limit) once the
    /// registry has challenged us, so that the request's own bound does not count that time.
    pub(super) async fn prepare(&self, transport: &Transport) -> Result<()> {
        if lock(&self.challenge).is_some() {
            self.credentials(transport).await?;
        }
        Ok(())
    }

    /// The `Authorization` for a request in `scope`; none until the registry has challenged us.
    pub(super) async fn header(
        &self,
        transport: &Transport,
        scope: &Scope,
    ) -> Result<Option<HeaderValue>> {
        let challenge = lock(&self.challenge).clone();
        match challenge {
            None => Ok(None),
            Some(Challenge::Basic) => match &self.credentials(transport).await? {
                Some(Credentials {
                    secret: Secret::Basic { username, password },
                    ..
                }) => Ok(Some(basic_header(username, password))),
                _ => Ok(None),
            },
            Some(Challenge::Bearer { realm, service }) => {
                if let Some(token) = lock(&self.tokens).get(&scope.key()) {
                    return Ok(Some(bearer_header(token)));
                }
                let token = self
                    .fetch_token(transport, &realm, service.as_deref(), scope)
                    .await?;
                lock(&self.tokens).insert(scope.key(), token.clone());
                Ok(Some(bearer_header(&token)))
            }
        }
    }

    /// After a 401: remember what the registry asks for and drop the token it refused.
    /// False when the answer carries no challenge we can meet.
    /// A registry may send several `WWW-Authenticate` headers; the first one we can meet counts.
    pub(super) fn on_unauthorized(&self, www_authenticate: &[String], scope: &Scope) -> bool {
        let Some(challenge) = www_authenticate
            .iter()
            .find_map(|value| parse_challenge(value))
        else {
            return false;
        };
        *lock(&self.challenge) = Some(challenge);
        lock(&self.tokens).remove(&scope.key());
        true
    }

    /// "wrong or missing credentials for HOST", saying which credentials were tried.
    pub(super) fn refused(&self, transport: &Transport, answer: RegistryResponse) -> Error {
        let names = transport.login_names();
        let host = names[0];
        if let Some(login) = &self.cluster_login
            && self.cluster_login_sent.load(Ordering::Relaxed)
        {
            return Error::new(
                ExitCode::Registry,
                format!(
                    "wrong or missing credentials for {host}: {} was refused",
                    login.origin
                ),
            )
            .with_source(answer)
            .with_hint(login.refused_hint.clone());
        }
        let tried = match self.credentials.get() {
            Some(Some(found)) => format!("the credentials from the {} were refused", found.origin),
            Some(None) => format!(
                "no credentials for {} were found ({})",
                names
                    .iter()
                    .map(|name| name.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
                self.sources.describe()
            ),
            None => "no credentials were sent".to_string(),
        };
        Error::new(
            ExitCode::Registry,
            format!("wrong or missing credentials for {host}: {tried}"),
        )
        .with_source(answer)
        .with_hint(format!(
            "run `docker login {host}` (or `podman login {host}`) with an account allowed to push"
        ))
    }

    /// Whether a 401 after we answered the challenge is worth one more token: a Bearer challenge
    /// that does not say the token lacks the scope (an expired or not yet valid token).
    pub(super) fn may_fetch_again(&self, said: Option<&TokenRefusal>) -> bool {
        matches!(*lock(&self.challenge), Some(Challenge::Bearer { .. }))
            && !said.is_some_and(TokenRefusal::is_scope)
    }

    /// A token the registry refused right after we fetched it, twice: which scope was asked,
    /// where, and what the registry said of it.
    pub(super) fn token_refused(
        &self,
        transport: &Transport,
        scope: &Scope,
        said: Option<&TokenRefusal>,
        answer: RegistryResponse,
    ) -> Error {
        let host = transport.login_names()[0];
        let realm = match lock(&self.challenge).clone() {
            Some(Challenge::Bearer { realm, .. }) => realm,
            _ => String::new(),
        };
        let scope = match scope.key() {
            key if key.is_empty() => "its `/v2/` check (no scope)".to_string(),
            key => format!("scope {key}"),
        };
        let what = said.map_or_else(
            || "without saying why".to_string(),
            |said| match &said.description {
                Some(description) => {
                    format!("{}: {}", shown_bare(&said.error), shown_bare(description))
                }
                None => shown_bare(&said.error),
            },
        );
        Error::new(
            ExitCode::Registry,
            format!(
                "the registry at {host} refused the access token it had just been given for {scope}, twice ({what})"
            ),
        )
        .with_source(answer)
        .with_hint(format!(
            "the token server ({}) answers, but the registry does not take its tokens: a token that expires before it is used (clocks apart, a lifetime of seconds), a service name or signing key the registry does not expect",
            shown_bare(&realm)
        ))
    }

    /// The token server (or the registry, for Basic auth) gave no answer within the bound.
    pub(super) fn stalled(&self, transport: &Transport, stalled: Stalled) -> Error {
        match lock(&self.challenge).clone() {
            Some(Challenge::Bearer { realm, .. }) => Error::new(
                ExitCode::Registry,
                format!(
                    "getting an access token for {} from {realm}: the token server did not answer in {}",
                    transport.known_as(),
                    seconds_text(stalled.0)
                ),
            )
            .with_hint(format!(
                "check that the token server works; {REQUEST_TIMEOUT_ENV} sets how long to wait"
            )),
            _ => stalled_error(transport, stalled),
        }
    }

    /// Who a daemon pushing for us logs in as: no one while the registry has not challenged us,
    /// else our credentials for it, else the cluster's token.
    pub(super) async fn login_for_engine(
        &self,
        transport: &Transport,
    ) -> Result<Option<Credentials>> {
        if lock(&self.challenge).is_none() {
            return Ok(None);
        }
        let found = self.credentials(transport).await?.clone();
        Ok(found.or_else(|| self.cluster_login.as_ref().map(ClusterLogin::credentials)))
    }

    async fn credentials(&self, transport: &Transport) -> Result<&Option<Credentials>> {
        self.credentials
            .get_or_try_init(|| async {
                for name in transport.login_names() {
                    let found = credentials::lookup(
                        name,
                        transport.scheme().default_port(),
                        &self.sources,
                        transport.limits.helper_timeout,
                    )
                    .await?;
                    if found.is_some() {
                        return Ok(found);
                    }
                }
                Ok(None)
            })
            .await
    }

    async fn fetch_token(
        &self,
        transport: &Transport,
        realm: &str,
        service: Option<&str>,
        scope: &Scope,
    ) -> Result<String> {
        let host = transport.login_names()[0];
        let fetching = || format!("getting an access token for {host} from {realm}");
        let url = Url::parse(realm).map_err(|err| {
            Error::new(
                ExitCode::Registry,
                format!("{}: the realm is not a URL", fetching()),
            )
            .with_source(err)
        })?;
        let credentials = self.credentials_for_realm(transport, &url).await?;
        if credentials.is_some() && !may_send_credentials_to(&url, transport.insecure) {
            return Err(Error::new(
                ExitCode::Registry,
                format!(
                    "{}: the realm is plain HTTP to another machine, so our credentials for {host} are not sent there",
                    fetching()
                ),
            )
            .with_hint(
                "pass --insecure to send them anyway, or have the registry name an https:// realm",
            ));
        }
        let request = token_request(transport, url, credentials.as_ref(), service, scope)?;
        let response = request.send().await.map_err(|err| {
            Error::new(ExitCode::Registry, fetching())
                .with_source(explain_send_error(transport, err))
        })?;
        let status = response.status();
        let wait = transport.limits.request_timeout;
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(self.refused(transport, RegistryResponse::read(response, wait).await));
        }
        if !status.is_success() {
            return Err(Error::new(ExitCode::Registry, fetching())
                .with_source(RegistryResponse::read(response, wait).await));
        }
        read_token(response, &fetching()).await
    }

    /// What to present to `realm`: what names this registry, else the cluster's token, which
    /// stands in only when nothing else does and goes only to the registry's own realm
    /// (OpenShift's `/openshift/token`).
    async fn credentials_for_realm(
        &self,
        transport: &Transport,
        realm: &Url,
    ) -> Result<Option<Credentials>> {
        let found = self.credentials(transport).await?;
        let cluster_login = self
            .cluster_login
            .as_ref()
            .filter(|_| found.is_none() && realm_is_on_registry(transport, realm));
        let Some(login) = cluster_login else {
            return Ok(found.clone());
        };
        self.cluster_login_sent.store(true, Ordering::Relaxed);
        Ok(Some(login.credentials()))
    }
}

/// The token request: an OAuth2 refresh grant for an identity token, as docker sends it; else a
/// GET, with Basic credentials when we have them.
fn token_request(
    transport: &Transport,
    mut url: Url,
    credentials: Option<&Credentials>,
    service: Option<&str>,
    scope: &Scope,
) -> Result<reqwest::RequestBuilder> {
    if let Some(Credentials {
        secret: Secret::IdentityToken(refresh),
        ..
    }) = credentials
    {
        let mut form = Url::parse("form:").map_err(|err| {
            Error::new(ExitCode::Failure, "encoding the token request").with_source(err)
        })?;
        {
            let mut pairs = form.query_pairs_mut();
            pairs.append_pair("grant_type", "refresh_token");
            pairs.append_pair("refresh_token", refresh);
            pairs.append_pair("client_id", "kubectl-registry");
            if let Some(service) = service {
                pairs.append_pair("service", service);
            }
            if !scope.0.is_empty() {
                pairs.append_pair("scope", &scope.0.join(" "));
            }
        }
        return Ok(transport
            .http
            .post(url)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(form.query().unwrap_or_default().to_string()));
    }
    {
        let mut pairs = url.query_pairs_mut();
        if let Some(service) = service {
            pairs.append_pair("service", service);
        }
        for one in &scope.0 {
            pairs.append_pair("scope", one);
        }
    }
    let request = transport.http.get(url);
    Ok(match credentials {
        Some(Credentials {
            secret: Secret::Basic { username, password },
            ..
        }) => request.header("Authorization", basic_header(username, password)),
        _ => request,
    })
}

/// The token in a realm's answer (`token`, or OAuth2's `access_token`), read within a cap.
async fn read_token(response: reqwest::Response, fetching: &str) -> Result<String> {
    let body = read_capped(response, TOKEN_BODY_LIMIT)
        .await
        .map_err(|err| Error::new(ExitCode::Registry, fetching).with_source(err))?;
    token_of(&body, fetching)
}

/// The token in a realm's answer body (`token`, or OAuth2's `access_token`).
pub(crate) fn token_of(body: &[u8], fetching: &str) -> Result<String> {
    let answer: TokenAnswer = serde_json::from_slice(body).map_err(|err| {
        Error::new(
            ExitCode::Registry,
            format!("{fetching}: the answer is not a token"),
        )
        .with_source(err)
    })?;
    answer
        .token
        .or(answer.access_token)
        .filter(|token| !token.is_empty())
        .ok_or_else(|| {
            Error::new(
                ExitCode::Registry,
                format!("{fetching}: the answer holds no token"),
            )
        })
}

/// Credentials go to a token realm over HTTPS, or over plain HTTP only on this machine (or
/// with --insecure): never in clear text across a network.
fn may_send_credentials_to(realm: &Url, insecure: bool) -> bool {
    match realm.scheme() {
        "https" => true,
        "http" => insecure || is_loopback_url(realm),
        _ => false,
    }
}

/// The cluster's token goes only to a realm on the registry's own host, never to a third party
/// (how it travels is [`may_send_credentials_to`]'s rule, as for any credentials).
/// The registry's own host: as we reached it, or (through a tunnel over TLS) the Service's
/// name we spoke to, which OpenShift's registry builds its realm from (the request's `Host`).
fn realm_is_on_registry(transport: &Transport, realm: &Url) -> bool {
    realm_is_on_the_registrys_host(&transport.host, realm)
        || realm_is_on_the_registrys_host(transport.authority(), realm)
}

fn realm_is_on_the_registrys_host(host: &RegistryHost, realm: &Url) -> bool {
    same_authority(realm, host)
}

#[derive(Debug, Deserialize)]
struct TokenAnswer {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The guarded maps stay consistent even if a holder panicked: every write is one statement.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn basic_header(username: &str, password: &str) -> HeaderValue {
    let encoded =
        base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
    sensitive(format!("Basic {encoded}"))
}

fn bearer_header(token: &str) -> HeaderValue {
    sensitive(format!("Bearer {token}"))
}

fn sensitive(text: String) -> HeaderValue {
    // Base64 and token characters are always valid header bytes; an invalid token just sends nothing useful.
    let mut value = HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""));
    value.set_sensitive(true);
    value
}

/// The registry asks for Kerberos/SPNEGO (or NTLM): no `docker login` helps, since we do not
/// speak it; say so, and what does work.
pub(super) fn unspoken_scheme_error(transport: &Transport, scheme: &str) -> Error {
    let host = transport.login_names()[0];
    let what = if scheme == "NTLM" {
        "NTLM"
    } else {
        "Kerberos (SPNEGO)"
    };
    Error::new(
        ExitCode::Registry,
        format!(
            "{host} asks for {what} authentication (`WWW-Authenticate: {scheme}`), which kubectl-registry does not speak"
        ),
    )
    .with_hint(format!(
        "we speak Basic and Bearer (token) auth: get a username and password or a token for {host} \
         from whoever runs it, then run `docker login {host}`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_ask_for_push_and_the_mount_source() {
        assert_eq!(Scope::push("app").key(), "repository:app:pull,push");
        assert_eq!(
            Scope::push_with_pull_from("app", "base").key(),
            "repository:app:pull,push repository:base:pull"
        );
    }

    #[test]
    fn credentials_go_to_a_realm_over_https_or_loopback_http_only() {
        let url = |text: &str| Url::parse(text).unwrap();
        assert!(may_send_credentials_to(
            &url("https://auth.example/token"),
            false
        ));
        assert!(may_send_credentials_to(
            &url("http://127.0.0.1:5000/token"),
            false
        ));
        assert!(may_send_credentials_to(
            &url("http://localhost/token"),
            false
        ));
        assert!(may_send_credentials_to(
            &url("http://[::1]:80/token"),
            false
        ));
        assert!(!may_send_credentials_to(
            &url("http://auth.example/token"),
            false
        ));
        assert!(!may_send_credentials_to(
            &url("http://10.0.0.1/token"),
            false
        ));
        assert!(may_send_credentials_to(
            &url("http://auth.example/token"),
            true
        ));
        assert!(!may_send_credentials_to(
            &url("ftp://auth.example/token"),
            true
        ));
    }

    #[test]
    fn the_cluster_token_goes_only_to_a_realm_on_the_registrys_own_host() {
        let url = |text: &str| Url::parse(text).unwrap();
        let route =
            RegistryHost::parse("default-route-openshift-image-registry.apps-crc.testing").unwrap();
        let own = |realm: &str| realm_is_on_the_registrys_host(&route, &url(realm));
        assert!(own(
            "https://default-route-openshift-image-registry.apps-crc.testing/openshift/token"
        ));
        assert!(own(
            "https://Default-Route-OpenShift-Image-Registry.apps-crc.testing:443/openshift/token"
        ));
        assert!(!own("https://auth.example/openshift/token"));
        assert!(!own(
            "https://default-route-openshift-image-registry.apps-crc.testing.evil.example/token"
        ));
        assert!(!own(
            "https://default-route-openshift-image-registry.apps-crc.testing:8443/openshift/token"
        ));

        let service = RegistryHost::parse("127.0.0.1:5000").unwrap();
        assert!(realm_is_on_the_registrys_host(
            &service,
            &url("http://127.0.0.1:5000/openshift/token")
        ));
        assert!(!realm_is_on_the_registrys_host(
            &service,
            &url("http://127.0.0.1:5001/openshift/token")
        ));
    }

    #[test]
    fn auth_headers_are_marked_sensitive() {
        assert!(basic_header("a", "b").is_sensitive());
        assert!(bearer_header("t").is_sensitive());
        assert_eq!(
            basic_header("alice", "s3cret").to_str().unwrap(),
            "Basic YWxpY2U6czNjcmV0"
        );
    }
}
