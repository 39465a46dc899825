//! Our OCI distribution client: one per registry host, cheap to clone, safe to share between
//! concurrent uploads. Every error names the operation and `host/repo` and carries the cluster's guide.

mod auth;
mod connection;
mod credentials;
mod engine_side;
mod errors;
mod listing;
mod manifest;
mod manifest_check;
mod open_uploads;
mod request;
mod upload;
mod watchdog;

use std::sync::Arc;

use reqwest::{Method, Response, Url};

pub use connection::proxy::Proxies;
pub use connection::transport::TransportOptions;
pub use connection::tunnelled::TunnelEndpoint;
pub use credentials::{ClusterLogin, CredentialSources};
pub use errors::{RegistryResponse, is_retryable};
pub use listing::{Catalog, FetchedManifest};
pub use manifest_check::{Deletion, Removal};
pub use open_uploads::cancel_all as cancel_open_uploads;
pub use watchdog::{Stalled, Watchdog};

use self::auth::{Auth, Scope};
use self::errors::{is_plain_http_to_tls_answer, plain_http_to_tls_error, unexpected_answer};
use self::request::{Request, failure_in, retry_delay, send};
use crate::image::reference::RegistryHost;
use crate::plumbing::error::{Error, ExitCode, Result};
use connection::below_http::ConnectFailure;
use connection::transport::{Scheme, Transport};

/// What the fuzz targets reach (`fuzz/`, `crate::fuzz_entry`): the readers of registries' answers
/// and of docker's credentials.
#[cfg(fuzzing)]
pub(crate) mod fuzzing {
    pub(crate) use super::auth::{parse_challenge, token_of, unspoken_scheme};
    pub(crate) use super::credentials::{
        Wanted, find_entry, from_auths, helper_answer, helper_reason, parse_config,
    };
    pub(crate) use super::errors::retry_after_of;
    pub(crate) use super::listing::next_page;
    pub(crate) use super::manifest::check_answered_digest;
    pub(crate) use super::upload::location_in;
}

/// A client for one registry host.
#[derive(Debug, Clone)]
pub struct RegistryClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    transport: Transport,
    auth: Auth,
}

impl RegistryClient {
    pub fn new(host: &RegistryHost, options: &TransportOptions) -> Result<Self> {
        let transport = Transport::new(host, options).map_err(|cause| {
            let exit = cause.exit_code();
            with_help(
                Error::new(exit, format!("preparing to talk to the registry {host}"))
                    .with_source(cause),
                options.help.as_deref(),
            )
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                transport,
                auth: Auth::new(options.credentials.clone(), options.cluster_login.clone()),
            }),
        })
    }

    pub fn host(&self) -> &RegistryHost {
        &self.inner.transport.host
    }

    /// The registry as messages name it: through a tunnel the name the cluster gives it, not
    /// the tunnel's loopback port; else [`RegistryClient::host`].
    pub fn known_as(&self) -> &RegistryHost {
        self.inner.transport.known_as()
    }

    /// Over TLS to a host other than the certificate's (a tunnel's `127.0.0.1:PORT`): the
    /// Service's name, which the certificate is checked against (an engine pushing to the host
    /// would check another name, or none).
    pub fn checked_tls_name(&self) -> Option<&str> {
        let transport = &self.inner.transport;
        (transport.scheme() == Scheme::Https)
            .then_some(transport.tunnel.as_ref())
            .flatten()
            .map(TunnelEndpoint::dns_name)
    }

    /// `GET /v2/`: checks that the registry answers, settles HTTP or HTTPS, and answers its auth
    /// challenge so that wrong credentials show up before any upload.
    pub async fn ping(&self) -> Result<()> {
        // Through a tunnel, the name the cluster gives the registry: the loopback port is ours.
        let known_as = self.known_as();
        let what = || format!("reaching the registry {known_as}");
        // At most one switch of scheme: the server speaks the other one and the rules allow it.
        let mut switched = false;
        loop {
            let transport = &self.inner.transport;
            let url = transport
                .url("")
                .map_err(|cause| self.failed(what(), cause))?;
            let mut request = Request::new(Method::GET, url, Scope::registry());
            request.retry_unreachable = false;
            let sent = send(transport, &self.inner.auth, request).await;
            let response = match sent {
                Ok(response) => response,
                Err(cause) => {
                    let speaks_http = failure_in(&cause) == Some(ConnectFailure::ServerSpeaksHttp);
                    if speaks_http && !switched && transport.may_switch_to(Scheme::Http) {
                        transport.set_scheme(Scheme::Http);
                        switched = true;
                        continue;
                    }
                    return Err(self.failed(what(), cause));
                }
            };
            if response.status().is_success() {
                transport.answered();
                return Ok(());
            }
            let answer = RegistryResponse::read(response, transport.limits.request_timeout).await;
            let status = answer.status;
            if transport.scheme() == Scheme::Http
                && is_plain_http_to_tls_answer(status, answer.body())
            {
                if !switched && transport.may_switch_to(Scheme::Https) {
                    transport.set_scheme(Scheme::Https);
                    switched = true;
                    continue;
                }
                return Err(self.failed(what(), plain_http_to_tls_error(transport)));
            }
            let cause = unexpected_answer(answer);
            let cause = if status == reqwest::StatusCode::NOT_FOUND {
                cause.with_hint(format!(
                    "{} may not be an OCI registry (GET /v2/ answered 404)",
                    self.known_as()
                ))
            } else {
                cause
            };
            return Err(self.failed(what(), cause));
        }
    }

    fn transport(&self) -> &Transport {
        &self.inner.transport
    }

    /// The no-progress bound for one blob upload, its retries included.
    pub fn upload_watchdog(&self) -> Watchdog {
        Watchdog::new(self.transport().limits.stall_timeout)
    }

    /// The wait before attempt `attempt + 1` of an upload that failed with `error`, or `None`
    /// when it must not be tried again (not transient, out of attempts or of time).
    pub fn retry_delay(
        &self,
        error: &Error,
        attempt: u32,
        watchdog: &Watchdog,
    ) -> Option<std::time::Duration> {
        retry_delay(&self.transport().limits, error, attempt, watchdog)
    }

    pub fn attempts(&self) -> u32 {
        self.transport().limits.attempts
    }

    async fn send(&self, request: Request) -> Result<Response> {
        send(&self.inner.transport, &self.inner.auth, request).await
    }

    /// `scheme://host/v2/<repo>/<rest>` after checking the names cannot break out of the path.
    fn repo_url(&self, repo: &str, rest: &str) -> Result<Url> {
        check_repository(repo)?;
        self.transport().url(&format!("{repo}/{rest}"))
    }

    /// The cause for a non-success answer: the registry's own words, or the HTTPS/HTTP mismatch.
    async fn answer_error(&self, response: Response) -> Error {
        let answer =
            RegistryResponse::read(response, self.transport().limits.request_timeout).await;
        if self.transport().scheme() == Scheme::Http
            && is_plain_http_to_tls_answer(answer.status, answer.body())
        {
            return plain_http_to_tls_error(self.transport());
        }
        unexpected_answer(answer)
    }

    /// The error for a failed operation: what we did, to what, the cause, and the cluster's guide.
    fn failed(&self, what: String, cause: Error) -> Error {
        let exit = cause.exit_code();
        with_help(
            Error::new(exit, what).with_source(cause),
            self.transport().help.as_deref(),
        )
    }

    fn target(&self, repo: &str) -> String {
        format!("{}/{repo}", self.known_as())
    }
}

/// True when `error` comes from a registry whose TLS certificate we do not trust.
pub fn is_untrusted_certificate(error: &Error) -> bool {
    failure_in(error) == Some(ConnectFailure::UntrustedCertificate)
}

fn with_help(error: Error, help: Option<&str>) -> Error {
    match help {
        Some(help) => error.with_hint(format!("this cluster's registry guide: {help}")),
        None => error,
    }
}

/// Whether `repo` is a repository name we would send (see [`check_repository`]).
pub fn is_valid_repository(repo: &str) -> bool {
    check_repository(repo).is_ok()
}

/// Repository names are the reference grammar's path components, so that `.` and `..` (which a
/// URL resolves) or `?` and `#` never reach a URL.
fn check_repository(repo: &str) -> Result<()> {
    crate::image::reference::check_repository(repo).map_err(|err| {
        Error::new(ExitCode::Usage, err.to_string())
            .with_hint("repository names are lowercase letters, digits and . _ - / separators")
    })
}

/// Tags (`[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`) or digests (`sha256:<hex>`).
fn check_reference(reference: &str) -> Result<()> {
    crate::image::reference::check_tag_or_digest(reference)
        .map_err(|err| Error::new(ExitCode::Usage, err.to_string()))
}
