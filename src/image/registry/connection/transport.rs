//! How we reach a registry: plain HTTP or HTTPS and which certificates to trust, the shared HTTP
//! client, and connection failures explained with the flag that fixes them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::{Certificate, Client, Url, redirect};

use super::below_http::{ConnectFailure, connect_failure};
use super::proxy::Proxies;
use super::tunnelled::TunnelEndpoint;
use crate::image::reference::RegistryHost;
use crate::image::registry::credentials::{ClusterLogin, CredentialSources};
use crate::image::registry::watchdog::Stalled;
use crate::plumbing::error::{Context, Error, ExitCode, Result};
use crate::plumbing::limits::{Limits, REQUEST_TIMEOUT_ENV, STALL_TIMEOUT_ENV, seconds_text};

/// How to reach the registry, from the command line and the cluster's advertisement.
#[derive(Debug, Clone, Default)]
pub struct TransportOptions {
    /// `--insecure`: allow plain HTTP to non-loopback hosts, and skip certificate checks over HTTPS.
    pub insecure: bool,
    /// `--ca-file`: a PEM bundle to trust for the registry's certificate (implies HTTPS).
    pub ca_file: Option<PathBuf>,
    /// The cluster's registry guide (KEP-1755 `help`), shown with every registry failure.
    pub help: Option<String>,
    /// Where credentials are looked up (the settings' docker and podman files).
    pub credentials: CredentialSources,
    /// How long to wait and how often to retry.
    pub limits: Limits,
    /// The environment's proxies (never used for loopback).
    pub proxies: Proxies,
    /// The cluster's token, for a token realm on the registry's own host when no docker or
    /// podman credentials name it (OpenShift).
    pub cluster_login: Option<ClusterLogin>,
    /// Through a tunnel: the Service's name, which TLS is tried with first.
    pub tunnel: Option<TunnelEndpoint>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    pub(crate) fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// How long we wait for a TCP (and TLS) connection: registries here are local or near.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Redirects followed for one request, as browsers and Go's client do.
const MAX_REDIRECTS: usize = 10;

/// The HTTP client and the scheme for one registry host. The scheme may change once, when `ping`
/// finds the server speaks the other one and the rules allow it.
#[derive(Debug)]
pub(crate) struct Transport {
    pub http: Client,
    pub host: RegistryHost,
    pub insecure: bool,
    pub has_ca_file: bool,
    pub help: Option<String>,
    pub limits: Limits,
    pub tunnel: Option<TunnelEndpoint>,
    https: AtomicBool,
}

impl Transport {
    pub(crate) fn new(host: &RegistryHost, options: &TransportOptions) -> Result<Self> {
        let scheme = initial_scheme(host, options);
        let http = build_client(options, scheme)?;
        Ok(Self {
            http,
            host: host.clone(),
            insecure: options.insecure,
            has_ca_file: options.ca_file.is_some(),
            help: options.help.clone(),
            limits: options.limits,
            tunnel: options.tunnel.clone(),
            https: AtomicBool::new(scheme == Scheme::Https),
        })
    }

    /// The names credentials are looked up under: through a tunnel, those the cluster
    /// advertises the registry by (its loopback port means nothing to `docker login`); else the
    /// host.
    pub(crate) fn login_names(&self) -> Vec<&RegistryHost> {
        match &self.tunnel {
            Some(tunnel) if !tunnel.login_names().is_empty() => {
                tunnel.login_names().iter().collect()
            }
            _ => vec![&self.host],
        }
    }

    /// The registry as messages name it: through a tunnel, the name the cluster gives it
    /// (never the tunnel's loopback port, which the user never typed), else its host.
    pub(crate) fn known_as(&self) -> &RegistryHost {
        self.login_names()[0]
    }

    /// Who can renew its certificate: the registry by the cluster's name, with the Service
    /// behind the tunnel.
    fn run_by(&self) -> String {
        match &self.tunnel {
            Some(tunnel) => format!("{}, behind {},", self.known_as(), tunnel.service()),
            None => self.host.to_string(),
        }
    }

    pub(crate) fn scheme(&self) -> Scheme {
        if self.https.load(Ordering::Relaxed) {
            Scheme::Https
        } else {
            Scheme::Http
        }
    }

    pub(crate) fn set_scheme(&self, scheme: Scheme) {
        self.https.store(scheme == Scheme::Https, Ordering::Relaxed);
    }

    /// The registry answered over the scheme we speak now: through a tunnel, that is the
    /// scheme of every client through it from now on (said with -v, and `--insecure` over TLS
    /// said once).
    pub(crate) fn answered(&self) {
        let Some(tunnel) = &self.tunnel else {
            return;
        };
        let https = self.scheme() == Scheme::Https;
        if tunnel.settled_https() != Some(https) {
            tunnel.settle(https);
            tunnel.say_settled(https, self.insecure);
        }
        if https && self.insecure {
            tunnel.say_unchecked();
        }
    }

    /// Who a TLS failure is of: the host, or through a tunnel the registry behind the Service
    /// and the name it was spoken to as.
    pub(crate) fn tls_peer(&self) -> String {
        match &self.tunnel {
            Some(tunnel) => format!(
                "the registry behind {} (as {})",
                tunnel.service(),
                tunnel.dns_name()
            ),
            None => self.host.to_string(),
        }
    }

    /// The host and port URLs name: through a tunnel over TLS the Service's name (resolved to
    /// the tunnel), else the host.
    pub(crate) fn authority(&self) -> &RegistryHost {
        self.tunnel
            .as_ref()
            .and_then(|tunnel| tunnel.authority(self.scheme() == Scheme::Https))
            .unwrap_or(&self.host)
    }

    /// Whether the rules let us switch to `scheme` after the server showed it speaks that one.
    pub(crate) fn may_switch_to(&self, scheme: Scheme) -> bool {
        match scheme {
            // Plain HTTP needs consent, except on loopback where nothing crosses a network.
            Scheme::Http => self.insecure || self.host.is_loopback(),
            Scheme::Https => true,
        }
    }

    /// Whether `url` is the registry itself, over the scheme we settled on: the only place
    /// our credentials may go.
    pub(crate) fn is_origin(&self, url: &Url) -> bool {
        url.scheme() == self.scheme().as_str() && same_authority(url, self.authority())
    }

    /// Refuses a URL the registry sent us to (an upload `Location`) that would leave HTTPS.
    pub(crate) fn check_no_downgrade(&self, url: &Url) -> Result<()> {
        if self.scheme() == Scheme::Https && url.scheme() != "https" {
            return Err(Error::new(
                ExitCode::Registry,
                format!(
                    "the registry {} sent us on to {url}, which is not HTTPS; we do not leave HTTPS",
                    self.known_as()
                ),
            )
            .with_hint("a proxy in front of the registry may rewrite its answers: check its settings for HTTPS"));
        }
        Ok(())
    }

    /// `scheme://host/v2/<path>`.
    pub(crate) fn url(&self, path: &str) -> Result<Url> {
        let text = format!(
            "{}://{}/v2/{path}",
            self.scheme().as_str(),
            self.authority()
        );
        Url::parse(&text).context(ExitCode::Registry, || {
            format!(
                "{} is not a valid registry URL",
                crate::plumbing::output::shown(&text)
            )
        })
    }
}

/// Loopback gets plain HTTP (as docker does), except a tunnel's, where TLS is tried first (or
/// the scheme an earlier client through it settled on); a CA file means the user expects TLS;
/// anything else HTTPS.
fn initial_scheme(host: &RegistryHost, options: &TransportOptions) -> Scheme {
    if let Some(tunnel) = &options.tunnel {
        return match tunnel.settled_https() {
            Some(false) => Scheme::Http,
            Some(true) | None => Scheme::Https,
        };
    }
    if options.ca_file.is_none() && host.is_loopback() {
        Scheme::Http
    } else {
        Scheme::Https
    }
}

fn build_client(options: &TransportOptions, scheme: Scheme) -> Result<Client> {
    let spared = options.tunnel.as_ref().map(TunnelEndpoint::dns_name);
    let mut builder = base_client(&options.proxies, spared)
        .pool_idle_timeout(Duration::from_secs(60))
        .http2_adaptive_window(true);
    let mut extra_roots = match &options.ca_file {
        Some(path) => read_ca_file(path)?,
        None => Vec::new(),
    };
    if let Some(tunnel) = &options.tunnel {
        builder = tunnel.route(builder);
        extra_roots.extend(tunnel.service_ca());
    }
    if options.insecure {
        builder = builder.tls_danger_accept_invalid_certs(true);
    }
    let with_system_roots = match crate::plumbing::tls_roots::system_roots() {
        // The roots this process already read: reqwest's own verifier would read them again.
        Some(roots) => {
            // Through a tunnel the registry may answer in plain HTTP (minikube's addon): a
            // TLS one fails its handshake as untrusted, as a loopback one does.
            let may_be_plain = options.tunnel.is_some();
            if roots.is_empty()
                && scheme == Scheme::Https
                && extra_roots.is_empty()
                && !may_be_plain
            {
                return Err(no_system_roots(
                    "no CA certificates were found on this system",
                ));
            }
            let system = roots
                .iter()
                .filter_map(|der| Certificate::from_der(der).ok());
            builder.tls_certs_only(system.chain(extra_roots.iter().cloned()))
        }
        None => builder.tls_certs_merge(extra_roots.clone()),
    };
    match with_system_roots.build() {
        Ok(client) => Ok(client),
        // A machine without a system CA store (a slim container) can still reach a plain-HTTP
        // loopback registry, or a TLS one whose CA was given.
        Err(err) if scheme == Scheme::Http || !extra_roots.is_empty() => {
            let fallback = base_client(&options.proxies, spared);
            match &options.tunnel {
                Some(tunnel) => tunnel.route(fallback),
                None => fallback,
            }
            .tls_danger_accept_invalid_certs(options.insecure)
            .tls_certs_only(extra_roots)
            .build()
            .map_err(|_| err)
            .context(ExitCode::Registry, || "setting up the HTTP client")
        }
        Err(err) => Err(no_system_roots(err)),
    }
}

fn no_system_roots(cause: impl Into<crate::plumbing::error::Cause>) -> Error {
    Error::new(ExitCode::Registry, "setting up the HTTP client")
        .with_source(cause)
        .with_hint("install the system CA certificates (ca-certificates), or pass --ca-file")
}

/// What every client of ours has: our name, the connect bound, the environment's proxies but
/// never for loopback (nor for `spared`, a tunnel's Service name), and redirects that never
/// leave HTTPS.
fn base_client(proxies: &Proxies, spared: Option<&str>) -> reqwest::ClientBuilder {
    Client::builder()
        .user_agent(concat!("kubectl-registry/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(CONNECT_TIMEOUT)
        .proxy(proxies.to_reqwest(spared))
        .redirect(redirect::Policy::custom(|attempt| {
            let leaves_https = attempt
                .previous()
                .last()
                .is_some_and(|previous| previous.scheme() == "https")
                && attempt.url().scheme() != "https";
            if leaves_https {
                let to = attempt.url().to_string();
                attempt.error(format!(
                    "the registry redirected us to {to}, which is not HTTPS; we do not leave HTTPS"
                ))
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.stop()
            } else {
                attempt.follow()
            }
        }))
}

fn read_ca_file(path: &std::path::Path) -> Result<Vec<Certificate>> {
    let pem = std::fs::read(path).context(ExitCode::Input, || {
        format!("reading the CA file {}", path.display())
    })?;
    let certs = Certificate::from_pem_bundle(&pem).context(ExitCode::Input, || {
        format!("reading the CA file {} as PEM certificates", path.display())
    })?;
    if certs.is_empty() {
        return Err(Error::new(
            ExitCode::Input,
            format!("the CA file {} holds no PEM certificate", path.display()),
        ));
    }
    Ok(certs)
}

/// The cause to show for a request that never got an answer.
pub(crate) fn explain_send_error(transport: &Transport, err: reqwest::Error) -> Error {
    let failure = connect_failure(&err);
    let (message, hint) = match &failure {
        Some(failure) => what_broke(transport, failure, &err),
        None => (
            format!("the request to {} failed", transport.known_as()),
            None,
        ),
    };
    let error = Error::new(ExitCode::Registry, message).with_source(SendFailure {
        failure,
        error: err,
    });
    match hint {
        Some(hint) => error.with_hint(hint),
        None => error,
    }
}

/// What broke below HTTP, said of the registry as the user knows it, and what to do about it.
fn what_broke(
    transport: &Transport,
    failure: &ConnectFailure,
    err: &reqwest::Error,
) -> (String, Option<String>) {
    let host = transport.known_as();
    match failure {
        ConnectFailure::Unreachable => (
            format!("the registry at {host} is down or not reachable from here"),
            Some(format!(
                "check that the registry runs and that {host} is reachable from this machine"
            )),
        ),
        ConnectFailure::ServerSpeaksHttp => (
            format!("{host} answered in plain HTTP, not HTTPS"),
            Some(if transport.has_ca_file {
                format!(
                    "drop --ca-file: {host} does not use TLS (pass --insecure to allow plain HTTP to it)"
                )
            } else {
                format!("pass --insecure to allow plain HTTP to {host}")
            }),
        ),
        ConnectFailure::UntrustedCertificate => untrusted_certificate(transport),
        ConnectFailure::WrongName => {
            let presented = super::below_http::presented_names(err);
            let (message, hint) = super::below_http::wrong_name(
                host,
                transport.tunnel.as_ref(),
                presented.as_deref(),
            );
            (message, Some(hint))
        }
        ConnectFailure::ExpiredCertificate(not_after) => expired_certificate(transport, *not_after),
        ConnectFailure::Tls => (
            format!("the TLS handshake with {} failed", transport.tls_peer()),
            Some("pass --ca-file with the registry's CA, or --insecure".to_string()),
        ),
        ConnectFailure::Dropped => (format!("the connection to {host} broke off"), None),
        ConnectFailure::TimedOut => (
            format!("the registry at {host} did not answer in time"),
            None,
        ),
    }
}

fn untrusted_certificate(transport: &Transport) -> (String, Option<String>) {
    let service_ca = match &transport.tunnel {
        Some(tunnel) if tunnel.has_service_ca() => {
            "; the cluster's service CA (ConfigMap openshift-service-ca.crt) did not sign it"
        }
        Some(_) => {
            "; the cluster publishes no service CA (ConfigMap openshift-service-ca.crt) in the Service's namespace"
        }
        None => "",
    };
    (
        format!(
            "the TLS certificate of {} is not trusted",
            transport.tls_peer()
        ),
        Some(format!(
            "pass --ca-file with the CA that signed the registry's certificate, or --insecure to skip the check{service_ca}"
        )),
    )
}

fn expired_certificate(transport: &Transport, not_after: Option<u64>) -> (String, Option<String>) {
    let message = match not_after {
        Some(seconds) => format!(
            "the TLS certificate of {} expired on {}",
            transport.tls_peer(),
            super::below_http::utc_text(seconds)
        ),
        None => format!(
            "the TLS certificate of {} has expired",
            transport.tls_peer()
        ),
    };
    let ca_file = if transport.has_ca_file {
        ": the --ca-file given is not the problem"
    } else {
        ""
    };
    let hint = format!(
        "renew the registry's certificate (whoever runs {} can); check this machine's clock too{ca_file}",
        transport.run_by()
    );
    (message, Some(hint))
}

/// The cause to show when an operation made no progress for its whole allowance.
pub(crate) fn stalled_error(transport: &Transport, stalled: Stalled) -> Error {
    let host = transport.known_as();
    Error::new(
        ExitCode::Registry,
        format!(
            "the registry at {host} stopped answering: nothing moved for {}",
            seconds_text(stalled.0)
        ),
    )
    .with_hint(format!(
        "check that the registry (and any proxy in front of it) works; {STALL_TIMEOUT_ENV} and {REQUEST_TIMEOUT_ENV} set how long to wait"
    ))
}

/// A request that got no answer. Shows only the innermost reason ("Connection refused (os error
/// 111)"): reqwest's layers above it ("client error (Connect)", ...) say nothing to a user.
#[derive(Debug)]
pub(crate) struct SendFailure {
    pub failure: Option<ConnectFailure>,
    pub error: reqwest::Error,
}

impl std::fmt::Display for SendFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut innermost: &(dyn std::error::Error + 'static) = &self.error;
        loop {
            let inner = innermost
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref());
            match inner
                .map(|e| e as &(dyn std::error::Error + 'static))
                .or_else(|| innermost.source())
            {
                Some(next) => innermost = next,
                None => break,
            }
        }
        write!(f, "{innermost}")
    }
}

impl std::error::Error for SendFailure {}

/// Whether `url` names `host`: the same name, and the same port with `url`'s scheme default
/// filled in (`127.0.0.1:80` is `http://127.0.0.1/`); a host without a port is on its URL's
/// default port.
pub(crate) fn same_authority(url: &Url, host: &RegistryHost) -> bool {
    let same_port = match host.port() {
        Some(port) => url.port_or_known_default() == Some(port),
        None => url.port().is_none(),
    };
    same_port
        && url
            .host_str()
            .is_some_and(|name| name.eq_ignore_ascii_case(host.hostname()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::reference::is_loopback_url;

    /// A transport to `host`, settled on HTTPS or plain HTTP.
    fn transport(host: &str, https: bool) -> Transport {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let host = RegistryHost::parse(host).unwrap();
        let transport = Transport::new(&host, &TransportOptions::default()).unwrap();
        transport.set_scheme(if https { Scheme::Https } else { Scheme::Http });
        transport
    }

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn through_a_tunnel_tls_goes_first_to_the_services_name_and_the_settled_scheme_is_kept() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let printer = crate::plumbing::output::Printer::new(0, true, false);
        let local: std::net::SocketAddr = "127.0.0.1:40123".parse().unwrap();
        let service = "Service dev/registry".to_string();
        let endpoint =
            TunnelEndpoint::new("registry.dev.svc", local, service, None, &printer).unwrap();
        let options = TransportOptions {
            tunnel: Some(endpoint),
            ..TransportOptions::default()
        };
        let host = RegistryHost::parse("127.0.0.1:40123").unwrap();
        let first = Transport::new(&host, &options).unwrap();
        assert_eq!(first.scheme(), Scheme::Https);
        let tls = "https://registry.dev.svc:40123/v2/";
        assert_eq!(first.url("").unwrap().as_str(), tls);
        assert!(first.is_origin(&url(tls)));
        assert!(!first.is_origin(&url("https://127.0.0.1:40123/v2/")));
        // It answered our TLS hello in plain HTTP: 127.0.0.1, and every client after on HTTP.
        first.set_scheme(Scheme::Http);
        first.answered();
        assert_eq!(
            first.url("").unwrap().as_str(),
            "http://127.0.0.1:40123/v2/"
        );
        let next = Transport::new(&host, &options).unwrap();
        assert_eq!(next.scheme(), Scheme::Http);
    }

    #[test]
    fn the_origin_is_the_registry_host_over_the_settled_scheme() {
        let plain = transport("127.0.0.1:5000", false);
        assert!(plain.is_origin(&url("http://127.0.0.1:5000/v2/app/blobs/uploads/x")));
        assert!(!plain.is_origin(&url("https://127.0.0.1:5000/v2/")));
        assert!(!plain.is_origin(&url("http://127.0.0.1:5001/v2/")));
        assert!(!plain.is_origin(&url("http://storage.example/blob")));
        let tls = transport("reg.example:5000", true);
        assert!(tls.is_origin(&url("https://reg.example:5000/v2/")));
        assert!(!tls.is_origin(&url("http://reg.example:5000/v2/")));
    }

    #[test]
    fn an_explicit_default_port_is_the_same_origin() {
        let eighty = transport("127.0.0.1:80", false);
        assert!(eighty.is_origin(&url("http://127.0.0.1/v2/")));
        assert!(eighty.is_origin(&url("http://127.0.0.1:80/v2/")));
        assert!(!eighty.is_origin(&url("http://127.0.0.1:8080/v2/")));
        let bare = transport("127.0.0.1", false);
        assert!(bare.is_origin(&url("http://127.0.0.1:80/v2/")));
        assert!(!bare.is_origin(&url("http://127.0.0.1:443/v2/")));
        let tls = transport("REG.example:443", true);
        assert!(tls.is_origin(&url("https://reg.example/v2/")));
        assert!(!tls.is_origin(&url("https://reg.example:5000/v2/")));
        let v6 = transport("[::1]:80", false);
        assert!(v6.is_origin(&url("http://[::1]/v2/")));
    }

    #[test]
    fn a_location_may_not_leave_https() {
        let tls = transport("reg.example:5000", true);
        assert!(
            tls.check_no_downgrade(&url("https://reg.example:5000/v2/app/blobs/uploads/1"))
                .is_ok()
        );
        let err = tls
            .check_no_downgrade(&url("http://reg.example:5000/v2/app/blobs/uploads/1"))
            .unwrap_err();
        assert!(
            err.message().contains("we do not leave HTTPS"),
            "{}",
            err.message()
        );
        let plain = transport("127.0.0.1:5000", false);
        assert!(
            plain
                .check_no_downgrade(&url("http://127.0.0.1:5000/v2/"))
                .is_ok()
        );
    }

    #[test]
    fn loopback_urls_are_the_ones_never_proxied() {
        for loopback in [
            "http://localhost:5000/",
            "http://LOCALHOST./",
            "http://kind.localhost/",
            "http://127.0.0.1/",
            "http://127.1.2.3:80/",
            "http://[::1]:5000/",
        ] {
            assert!(is_loopback_url(&url(loopback)), "{loopback}");
        }
        for remote in [
            "http://10.0.0.1/",
            "https://registry.example/",
            "http://[::2]/",
        ] {
            assert!(!is_loopback_url(&url(remote)), "{remote}");
        }
    }
}
