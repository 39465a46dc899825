//! A tunnel through the API server to a registry only the cluster reaches: a loopback listener
//! here, each connection accepted bridged to a new port-forward stream to a ready pod of the
//! registry's Service. The registry client talks to `127.0.0.1:PORT` as to any registry; a
//! connection that drops is simply reopened by its retry, as a new stream. When the pod is
//! replaced (a rollout, a drain), the Service is resolved again to a ready pod, and the pod
//! change is counted so that the push checks its blobs again before the manifest. The registry
//! is spoken to by the Service's DNS name over TLS first, with the cluster's service CA trusted
//! where it publishes one (`TunnelEndpoint`). `services`: the Service resolved to a ready pod,
//! and its service CA; `forward`: one port-forward stream to that pod, and whether RBAC allows it.

mod bridge;
mod forward;
mod frames;
mod services;

#[cfg(fuzzing)]
pub(crate) use frames::{Frame, Reader, kubelet_words};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};

use forward::Forwarder;
pub use forward::may_port_forward;
use services::Services;

use crate::cluster::client::Cluster;
use crate::cluster::hosting::{LocalRegistry, ServiceRef};
use crate::image::reference::RegistryHost;
use crate::image::registry::TunnelEndpoint;
use crate::plumbing::error::{Context, Error, ExitCode, Result};
use crate::plumbing::output::Printer;

/// How long a resolved pod is used for new streams before the Service is asked again: a pod
/// that turns not-ready stops getting new streams within this.
const RESOLVE_AGAIN: Duration = Duration::from_secs(1);

/// An open tunnel; it closes (listener and streams) when dropped.
pub struct Tunnel {
    host: RegistryHost,
    endpoint: TunnelEndpoint,
    route: Arc<Route>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Which pod new streams go to, found again when it is stale or failed.
struct Route {
    cluster: Cluster,
    service: ServiceRef,
    current: tokio::sync::Mutex<Resolved>,
    /// Times a new stream went to a different pod than the one before.
    moves: AtomicU64,
    /// What new streams go to, for messages.
    described: Mutex<String>,
    last_failure: Mutex<Option<String>>,
    printer: Printer,
}

struct Resolved {
    forwarder: Forwarder,
    /// `None`: ask the Service before the next stream (a stream to this pod failed).
    at: Option<Instant>,
}

impl Tunnel {
    /// Resolves `service` to a ready pod, checks that a port-forward to it opens (permission,
    /// protocol), reads the cluster's service CA in its namespace, and listens on a loopback
    /// port. `registry`'s certificate is checked against the Service's name, and its
    /// credentials are looked up under the names the cluster advertises it by.
    pub async fn open(
        cluster: &Cluster,
        service: &ServiceRef,
        registry: &LocalRegistry,
        printer: &Printer,
    ) -> Result<Self> {
        let dns_name = &service.dns_name(registry.host_from_cluster_network.as_ref());
        let services = Services::new(cluster);
        let (backend, service_ca) = tokio::join!(
            services.backend(service),
            services.service_ca(&service.namespace)
        );
        let backend = backend?;
        let forwarder = Forwarder::new(cluster, &backend);
        // The first stream shows at once what would fail every one: RBAC, the protocol.
        drop(forwarder.open().await?);
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.context(
            ExitCode::Failure,
            || "listening on a loopback port for the tunnel",
        )?;
        let port = listener
            .local_addr()
            .context(ExitCode::Failure, || "reading the tunnel's loopback port")?
            .port();
        let local = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let host = RegistryHost::parse(&local.to_string()).context(ExitCode::Failure, || {
            format!("naming the tunnel's loopback address {local} as a registry host")
        })?;
        if service_ca.is_some() {
            printer.debug(&format!(
                "tunnel: trusting the cluster's service CA of namespace {} for the registry",
                service.namespace
            ));
        }
        let endpoint =
            TunnelEndpoint::new(dns_name, local, service.to_string(), service_ca, printer)
                .map(|endpoint| endpoint.known_as(registry.login_names()))
                .ok_or_else(|| {
                    Error::new(
                        ExitCode::Cluster,
                        format!(
                            "{} is not a DNS name to reach {service} by",
                            crate::plumbing::output::shown(dns_name)
                        ),
                    )
                })?;
        printer.debug(&format!(
            "tunnel: {host} -> {} of {service}, through the API server",
            forwarder.describe()
        ));
        let route = Arc::new(Route {
            cluster: cluster.clone(),
            service: service.clone(),
            described: Mutex::new(forwarder.describe()),
            current: tokio::sync::Mutex::new(Resolved {
                forwarder,
                at: Some(Instant::now()),
            }),
            moves: AtomicU64::new(0),
            last_failure: Mutex::new(None),
            printer: printer.clone(),
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&route)));
        Ok(Self {
            host,
            endpoint,
            route,
            accept,
        })
    }

    /// Where the registry client connects: `127.0.0.1:PORT`.
    pub fn host(&self) -> &RegistryHost {
        &self.host
    }

    /// The Service's name the registry client speaks TLS to first, resolved to this tunnel.
    pub fn endpoint(&self) -> &TunnelEndpoint {
        &self.endpoint
    }

    /// How many times new streams moved to another pod: a registry pod without a volume
    /// comes back empty, so a push whose streams moved checks its blobs again.
    pub fn moves(&self) -> u64 {
        self.route.moves.load(Ordering::Relaxed)
    }

    /// `a port-forward to pod kube-system/registry-x port 5000 of Service kube-system/registry`.
    pub fn describe(&self) -> String {
        let forwarder = locked(&self.route.described).clone();
        format!("{forwarder} of {}", self.route.service)
    }

    /// A failure of the registry reached through the tunnel, with what the tunnel saw.
    pub fn explain(&self, error: Error) -> Error {
        let last = locked(&self.route.last_failure).clone();
        let said = match last {
            Some(failure) => format!("; its last failure: {failure}"),
            None => String::new(),
        };
        error.with_hint(format!(
            "the registry was reached through {}, through the API server{said}",
            self.describe()
        ))
    }
}

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Route {
    fn failed(&self, failure: String) {
        self.printer.debug(&format!("tunnel: {failure}"));
        *locked(&self.last_failure) = Some(failure);
    }

    /// A new stream to a ready pod: the one resolved last while it is fresh, else the
    /// Service's ready pod now. A stream that will not open to it is tried once more on the
    /// pod the Service names then (the one it had may just have been replaced).
    async fn open(&self) -> Result<(kube::client::Connection, Forwarder)> {
        let forwarder = self.forwarder(false).await?;
        match forwarder.open().await {
            Ok(connection) => Ok((connection, forwarder)),
            Err(first) => {
                self.failed(first.message().to_string());
                let again = self.forwarder(true).await?;
                if again.backend == forwarder.backend {
                    return Err(first);
                }
                Ok((again.open().await?, again))
            }
        }
    }

    async fn forwarder(&self, stale: bool) -> Result<Forwarder> {
        let mut current = self.current.lock().await;
        let fresh = current.at.is_some_and(|at| at.elapsed() < RESOLVE_AGAIN);
        if fresh && !stale {
            return Ok(current.forwarder.clone());
        }
        let backend = Services::new(&self.cluster).backend(&self.service).await?;
        if backend != current.forwarder.backend {
            self.printer.debug(&format!(
                "tunnel: {} now goes to pod {}/{} port {}",
                self.service, backend.namespace, backend.pod, backend.port
            ));
            self.moves.fetch_add(1, Ordering::Relaxed);
            current.forwarder = Forwarder::new(&self.cluster, &backend);
            *locked(&self.described) = current.forwarder.describe();
        }
        current.at = Some(Instant::now());
        Ok(current.forwarder.clone())
    }

    /// A stream to this pod broke: the next one asks the Service first.
    async fn distrust(&self, forwarder: &Forwarder) {
        let mut current = self.current.lock().await;
        if current.forwarder.backend == forwarder.backend {
            current.at = None;
        }
    }
}

async fn accept_loop(listener: TcpListener, route: Arc<Route>) {
    loop {
        let Ok((connection, _)) = listener.accept().await else {
            continue;
        };
        let route = Arc::clone(&route);
        tokio::spawn(async move {
            if let Err(failure) = bridge(connection, &route).await {
                route.failed(failure);
            }
        });
    }
}

/// One accepted connection, over one new stream, until either side ends.
async fn bridge(connection: TcpStream, route: &Route) -> Result<(), String> {
    let (opened, forwarder) = route
        .open()
        .await
        .map_err(|err| err.message().to_string())?;
    let ended = bridge::pump(connection, opened.into_stream(), forwarder.backend.port).await;
    match ended
        .err()
        .and_then(|broke| broke.failure(&forwarder.describe()))
    {
        None => Ok(()),
        Some(failure) => {
            route.distrust(&forwarder).await;
            Err(failure)
        }
    }
}
