//! The host this run talks to the registry at: the one the route picks, or a tunnel through the
//! API server opened to its Service (said with -v, and why).

use std::sync::Arc;
use std::time::Duration;

use crate::cluster::discovery::Discovered;
use crate::cluster::hosting::{LocalRegistry, ServiceRef};
use crate::cluster::network::Network;
use crate::cluster::route::{self, TunnelWhy, Way};
use crate::cluster::tunnel::Tunnel;
use crate::image::reference::RegistryHost;
use crate::image::registry::TransportOptions;
use crate::plumbing::error::{Error, Result};
use crate::plumbing::output::Printer;

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

impl Reach {
    /// A failure of the registry, with what the tunnel saw when there is one.
    pub fn explain(&self, error: Error) -> Error {
        match &self.tunnel {
            Some(tunnel) => tunnel.explain(error),
            None => error,
        }
    }

    /// `options` for a registry client of this host: through a tunnel, TLS goes first to the
    /// Service's name. The way the registry is reached stays here.
    pub fn transport(&self, options: TransportOptions) -> TransportOptions {
        TransportOptions {
            tunnel: self.tunnel.as_ref().map(|tunnel| tunnel.endpoint().clone()),
            ..options
        }
    }

    /// The host is this run's own (a tunnel's loopback port): neither printed nor recorded.
    pub fn lives_with_this_run(&self) -> bool {
        self.tunnel.is_some()
    }

    /// The network this run pushes over: through the API server, or `vantage`'s.
    pub fn network(&self, vantage: Network) -> Network {
        match self.tunnel {
            Some(_) => Network::Tunnel,
            None => vantage,
        }
    }

    /// How many times the tunnel's streams moved to another pod (0 straight to a host).
    pub fn moves(&self) -> u64 {
        self.tunnel.as_ref().map_or(0, |tunnel| tunnel.moves())
    }

    /// `attempt` (a push), once more when it failed after the tunnel moved to another pod: the
    /// registry's pod was replaced mid-push, and one without a volume comes back empty, so the
    /// push is worth once more: every blob asked for again, what the new pod lacks sent, the
    /// manifest last. A failure says what the tunnel saw.
    pub async fn once_more_if_moved<T, F, Fut>(&self, printer: &Printer, attempt: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let moves = self.moves();
        match attempt().await {
            Err(failure) if self.moves() != moves => {
                printer.note(&format!(
                    "the registry's pod was replaced mid-push ({}); pushing again to {}",
                    failure.message(),
                    self.tunnel
                        .as_ref()
                        .map_or_else(String::new, |tunnel| tunnel.describe())
                ));
                attempt().await
            }
            pushed => pushed,
        }
        .map_err(|err| self.explain(err))
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
