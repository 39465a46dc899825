//! A registry reached through a tunnel through the API server: spoken to by the name its Service
//! has in the cluster, so that TLS is tried first with that name sent as SNI and checked in the
//! certificate, while every connection goes to the tunnel's loopback port. Plain HTTP only when
//! the registry answers the TLS hello in plain HTTP (minikube's addon), never after a
//! certificate failure. The scheme is settled once per tunnel, for every client through it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use reqwest::Certificate;

use crate::image::reference::RegistryHost;
use crate::plumbing::output::Printer;

/// Where the registry behind a tunnel is, and what its certificate is checked against.
#[derive(Debug, Clone)]
pub struct TunnelEndpoint {
    /// The Service's DNS name (`registry.dev.svc.cluster.local`): SNI and the checked name.
    dns_name: String,
    /// `DNS_NAME:LOCAL_PORT`: the authority of HTTPS URLs, resolved to the tunnel.
    authority: RegistryHost,
    local: SocketAddr,
    /// `Service dev/registry port 5000`, for messages.
    service: String,
    /// The cluster's service CA (PEM), when it publishes one.
    service_ca: Option<String>,
    /// The names the cluster advertises the registry by, which a user logs in to (`docker
    /// login`): credentials are looked up under these, never under the tunnel's loopback port.
    login_names: Vec<RegistryHost>,
    shared: Arc<Shared>,
    printer: Printer,
}

#[derive(Debug, Default)]
struct Shared {
    /// 0: not settled yet; 1: plain HTTP; 2: HTTPS.
    settled: AtomicU8,
    said_unchecked: AtomicBool,
    said_bad_ca: AtomicBool,
}

impl TunnelEndpoint {
    /// `None` when `dns_name` is not a DNS name (a Service's name always is).
    pub fn new(
        dns_name: &str,
        local: SocketAddr,
        service: String,
        service_ca: Option<String>,
        printer: &Printer,
    ) -> Option<Self> {
        let authority = RegistryHost::parse(&format!("{dns_name}:{}", local.port())).ok()?;
        Some(Self {
            dns_name: dns_name.to_string(),
            authority,
            local,
            service,
            service_ca,
            login_names: Vec::new(),
            shared: Arc::default(),
            printer: printer.clone(),
        })
    }

    /// Credentials for the registry are those for `names` (the first that has any), in order.
    pub fn known_as(mut self, names: Vec<RegistryHost>) -> Self {
        self.login_names = names;
        self
    }

    pub(crate) fn login_names(&self) -> &[RegistryHost] {
        &self.login_names
    }

    /// The name the certificate is checked against.
    pub fn dns_name(&self) -> &str {
        &self.dns_name
    }

    /// Whether the cluster published a service CA that is trusted for this registry.
    pub fn has_service_ca(&self) -> bool {
        self.service_ca.is_some()
    }

    pub(crate) fn service(&self) -> &str {
        &self.service
    }

    /// `https://` URLs name the Service; plain HTTP stays on `127.0.0.1:PORT` (loopback, as
    /// before: never proxied, and a token realm there may be given credentials).
    pub(crate) fn authority(&self, https: bool) -> Option<&RegistryHost> {
        https.then_some(&self.authority)
    }

    /// Whether an earlier client through this tunnel settled on HTTPS (or plain HTTP).
    pub(crate) fn settled_https(&self) -> Option<bool> {
        match self.shared.settled.load(Ordering::Relaxed) {
            1 => Some(false),
            2 => Some(true),
            _ => None,
        }
    }

    pub(crate) fn settle(&self, https: bool) {
        let value = if https { 2 } else { 1 };
        self.shared.settled.store(value, Ordering::Relaxed);
    }

    /// Every connection to the Service's name goes to the tunnel.
    pub(crate) fn route(&self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        builder.resolve(&self.dns_name, self.local)
    }

    /// The service CA's certificates, to trust besides the system's and `--ca-file`'s. One that
    /// does not read is left out, said once.
    pub(crate) fn service_ca(&self) -> Vec<Certificate> {
        let Some(pem) = &self.service_ca else {
            return Vec::new();
        };
        match Certificate::from_pem_bundle(pem.as_bytes()) {
            Ok(certs) if !certs.is_empty() => certs,
            _ => {
                if !self.shared.said_bad_ca.swap(true, Ordering::Relaxed) {
                    self.printer.warn(
                        "the cluster's service CA (ConfigMap openshift-service-ca.crt) holds no PEM certificate; it is not trusted",
                    );
                }
                Vec::new()
            }
        }
    }

    /// `--insecure` over TLS through the tunnel: said once.
    pub(crate) fn say_unchecked(&self) {
        if !self.shared.said_unchecked.swap(true, Ordering::Relaxed) {
            self.printer.warn(&format!(
                "--insecure: the TLS certificate of the registry behind {} is not checked",
                self.service
            ));
        }
    }

    /// Said with -v once the scheme is settled.
    pub(crate) fn say_settled(&self, https: bool, insecure: bool) {
        let how = match (https, insecure) {
            (true, true) => "over TLS, its certificate not checked (--insecure)",
            (true, false) => "over TLS, its certificate checked for the Service's name",
            (false, _) => "in plain HTTP: it answered our TLS hello in plain HTTP",
        };
        self.printer.debug(&format!(
            "tunnel: the registry behind {} is spoken to as {} {how}",
            self.service, self.dns_name
        ));
    }
}
