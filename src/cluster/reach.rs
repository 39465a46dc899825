//! The host this run talks to the registry at: the one the route picks, or a tunnel through the
//! API server opened to its Service (said with -v, and why).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cluster::discovery::Discovered;
use crate::cluster::hosting::{LocalRegistry, ServiceRef};
use crate::cluster::route::{self, TunnelWhy, Way};
use crate::cluster::tunnel::Tunnel;
use crate::error::{Error, ExitCode, Result};
use crate::image::reference::RegistryHost;
use crate::image::registry::TunnelEndpoint;
use crate::output::Printer;

/// How long an advertised host may take to accept a connection before the tunnel is taken.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(3);

/// The way decided, the probe of an advertised host done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decided {
    /// The host, and the KEP-1755 field it came from (`None`: named by flag or environment).
    Direct(RegistryHost, Option<&'static str>),
    Tunnel(ServiceRef, TunnelWhy),
}

/// Where this run reaches the registry, and the tunnel it goes through.
pub struct Reach {
    pub host: RegistryHost,
    pub field: Option<&'static str>,
    pub tunnel: Option<Arc<Tunnel>>,
}

/// The tunnels this process opened, by Service: a `push --watch` run opens its tunnel once and
/// sends every round through it (its loopback port stays the same; a replaced pod is followed).
static OPENED: Mutex<Vec<(ServiceRef, Arc<Tunnel>)>> = Mutex::new(Vec::new());

fn opened() -> std::sync::MutexGuard<'static, Vec<(ServiceRef, Arc<Tunnel>)>> {
    OPENED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Reach {
    /// A failure of the registry, with what the tunnel saw when there is one.
    pub fn explain(&self, error: Error) -> Error {
        match &self.tunnel {
            Some(tunnel) => tunnel.explain(error),
            None => error,
        }
    }

    /// Through a tunnel: where the registry client speaks TLS first, by the Service's name.
    pub fn endpoint(&self) -> Option<TunnelEndpoint> {
        self.tunnel.as_ref().map(|tunnel| tunnel.endpoint().clone())
    }

    /// How many times the tunnel's streams moved to another pod (0 straight to a host).
    pub fn moves(&self) -> u64 {
        self.tunnel.as_ref().map_or(0, |tunnel| tunnel.moves())
    }

    /// A push failed after the tunnel moved to another pod since `moves`: the registry's pod
    /// was replaced mid-push, and one without a volume comes back empty, so the push is worth
    /// once more: every blob asked for again, what the new pod lacks sent, the manifest last.
    pub fn moved_since(&self, moves: u64, failure: &Error, printer: &Printer) -> bool {
        let moved = self.moves() != moves;
        if moved {
            printer.note(&format!(
                "the registry's pod was replaced mid-push ({}); pushing again to {}",
                failure.message(),
                self.tunnel
                    .as_ref()
                    .map_or_else(String::new, |tunnel| tunnel.describe())
            ));
        }
        moved
    }
}

/// The way for this run, probing an advertised host that a tunnel could replace.
pub async fn decide(
    discovered: &Discovered,
    registry: &LocalRegistry,
    printer: &Printer,
) -> Result<Decided> {
    Ok(match route::way(registry, discovered.vantage)? {
        Way::Direct(push) => Decided::Direct(push.host.clone(), push.field),
        Way::Tunnel { service, why } => Decided::Tunnel(service.clone(), why),
        Way::DirectIfAnswering { host, service } => {
            if answers(host).await {
                Decided::Direct(host.clone(), Some("host"))
            } else {
                printer.debug(&format!(
                    "{host} does not accept a connection within {} s",
                    ANSWER_TIMEOUT.as_secs()
                ));
                Decided::Tunnel(service.clone(), TunnelWhy::HostSilent)
            }
        }
    })
}

/// Decides, and opens the tunnel when that is the way.
pub async fn reach(
    discovered: &Discovered,
    registry: &LocalRegistry,
    printer: &Printer,
) -> Result<Reach> {
    match decide(discovered, registry, printer).await? {
        Decided::Direct(host, field) => Ok(Reach {
            host,
            field,
            tunnel: None,
        }),
        Decided::Tunnel(service, why) => {
            printer.debug(&format!(
                "pushing through a tunnel to {service} through the API server: {}",
                why.text(registry)
            ));
            let Some(cluster) = &discovered.cluster else {
                return Err(Error::new(
                    ExitCode::Usage,
                    "a tunnel needs the cluster, which was not asked (--registry or KUBECTL_REGISTRY_HOST named the registry)",
                ));
            };
            let kept = opened()
                .iter()
                .find(|(open, _)| *open == service)
                .map(|(_, tunnel)| Arc::clone(tunnel));
            let tunnel = match kept {
                Some(tunnel) => {
                    printer.debug(&format!("tunnel: {} again", tunnel.host()));
                    tunnel
                }
                None => {
                    let tunnel =
                        Arc::new(Tunnel::open(cluster, &service, registry, printer).await?);
                    opened().push((service, Arc::clone(&tunnel)));
                    tunnel
                }
            };
            Ok(Reach {
                host: tunnel.host().clone(),
                field: None,
                tunnel: Some(tunnel),
            })
        }
    }
}

/// Whether `host` accepts a TCP connection from here within [`ANSWER_TIMEOUT`].
async fn answers(host: &RegistryHost) -> bool {
    let port = host.port().unwrap_or(443);
    let name = host
        .hostname()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let connect = tokio::net::TcpStream::connect((name, port));
    matches!(
        tokio::time::timeout(ANSWER_TIMEOUT, connect).await,
        Ok(Ok(_))
    )
}
