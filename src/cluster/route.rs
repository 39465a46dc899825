//! Whether the registry is reached directly or through a tunnel through the API server, and
//! why: from outside the cluster, a registry whose Service is known and whose `host` is not
//! advertised (or does not answer from here) is tunnelled to. Pure.

use crate::cluster::hosting::{HOSTING_CONFIGMAP, LocalRegistry, RegistrySource, ServiceRef};
use crate::cluster::network::{self, Network, PushHost, Reason, Vantage};
use crate::image::reference::RegistryHost;
use crate::plumbing::error::{Error, ExitCode};

/// How this run reaches the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way<'a> {
    Direct(PushHost<'a>),
    /// `host` if it answers from here, else the tunnel (`TunnelWhy::HostSilent`).
    DirectIfAnswering {
        host: &'a RegistryHost,
        service: &'a ServiceRef,
    },
    Tunnel {
        service: &'a ServiceRef,
        why: TunnelWhy,
    },
}

/// Why the tunnel is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TunnelWhy {
    /// `--network tunnel`.
    Flag,
    /// The advertisement names only a Service (`hostFromClusterNetwork`), no `host`.
    NoHost,
    /// minikube's addon, reached from outside its VM.
    MinikubeAddon,
    /// OpenShift's registry without a route: only its Service's name is known.
    NoRoute,
    /// The advertised `host` does not answer from here.
    HostSilent,
}

impl TunnelWhy {
    pub fn text(self, registry: &LocalRegistry) -> String {
        match self {
            TunnelWhy::Flag => "--network tunnel".to_string(),
            TunnelWhy::NoHost => format!(
                "ConfigMap {HOSTING_CONFIGMAP} sets no host, only the Service of hostFromClusterNetwork"
            ),
            TunnelWhy::MinikubeAddon => {
                "minikube's registry addon is reached only inside the cluster".to_string()
            }
            TunnelWhy::NoRoute => {
                "OpenShift's registry has no route (images.config.openshift.io/cluster names no external hostname)".to_string()
            }
            TunnelWhy::HostSilent => format!("host {} does not answer from here", registry.host),
        }
    }
}

/// The way from `vantage`. `--network host` never tunnels; `--network tunnel` always does.
pub fn way(registry: &LocalRegistry, vantage: Vantage) -> Result<Way<'_>, Error> {
    let named = matches!(registry.source, RegistrySource::Flag | RegistrySource::Env);
    let service = registry.service.as_ref();
    match (vantage.network, vantage.reason, service) {
        (Network::Tunnel, _, Some(service)) if !named => Ok(Way::Tunnel {
            service,
            why: TunnelWhy::Flag,
        }),
        (Network::Tunnel, _, _) => Err(Error::new(
            ExitCode::Usage,
            format!(
                "--network tunnel: the registry {} is not a Service of the cluster's, so there is nothing to tunnel to",
                registry.host
            ),
        )
        .with_hint("the cluster must advertise hostFromClusterNetwork as NAME.NAMESPACE.svc[.cluster.local][:PORT]; or drop --network tunnel")),
        (Network::Host, Reason::Flag, _)
            if !registry.host_advertised && registry.source == RegistrySource::Configmap =>
        {
            Err(Error::new(
                ExitCode::Usage,
                format!(
                    "--network host: ConfigMap {HOSTING_CONFIGMAP} sets no host, so nothing outside the cluster reaches the registry"
                ),
            )
            .with_hint("drop --network host to push through a tunnel through the API server, or name a registry with --registry HOST[:PORT]"))
        }
        (Network::Host, Reason::Kubeconfig, Some(service)) if !named => {
            if registry.host_advertised {
                Ok(Way::DirectIfAnswering {
                    host: &registry.host,
                    service,
                })
            } else {
                let why = match registry.source {
                    RegistrySource::MinikubeAddon => TunnelWhy::MinikubeAddon,
                    RegistrySource::Openshift => TunnelWhy::NoRoute,
                    _ => TunnelWhy::NoHost,
                };
                Ok(Way::Tunnel { service, why })
            }
        }
        _ => network::push_host(registry, vantage).map(Way::Direct),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(host_advertised: bool, source: RegistrySource) -> LocalRegistry {
        let host = |raw: &str| RegistryHost::parse(raw).unwrap();
        let cluster = host("registry.dev.svc.cluster.local:5000");
        LocalRegistry {
            host: if host_advertised {
                host("registry.example:443")
            } else {
                cluster.clone()
            },
            host_from_container_runtime: host("localhost:5000"),
            service: ServiceRef::from_cluster_host(&cluster),
            host_from_cluster_network: Some(cluster),
            host_advertised,
            help: None,
            source,
        }
    }

    fn outside() -> Vantage {
        Vantage::choose(None, Some(false))
    }

    #[test]
    fn a_service_without_host_is_tunnelled_to_from_outside() {
        let only_service = registry(false, RegistrySource::Configmap);
        assert!(matches!(
            way(&only_service, outside()).unwrap(),
            Way::Tunnel {
                why: TunnelWhy::NoHost,
                ..
            }
        ));
        let minikube = registry(false, RegistrySource::MinikubeAddon);
        assert!(matches!(
            way(&minikube, outside()).unwrap(),
            Way::Tunnel {
                why: TunnelWhy::MinikubeAddon,
                ..
            }
        ));
        let with_host = registry(true, RegistrySource::Configmap);
        assert!(matches!(
            way(&with_host, outside()).unwrap(),
            Way::DirectIfAnswering { .. }
        ));
        let no_route = registry(false, RegistrySource::Openshift);
        assert!(matches!(
            way(&no_route, outside()).unwrap(),
            Way::Tunnel {
                why: TunnelWhy::NoRoute,
                ..
            }
        ));
    }

    #[test]
    fn the_flag_forces_or_refuses_the_tunnel() {
        let with_host = registry(true, RegistrySource::Configmap);
        let forced = way(
            &with_host,
            Vantage::choose(Some(Network::Tunnel), Some(false)),
        )
        .unwrap();
        assert!(matches!(
            forced,
            Way::Tunnel {
                why: TunnelWhy::Flag,
                ..
            }
        ));
        let host = way(
            &with_host,
            Vantage::choose(Some(Network::Host), Some(false)),
        )
        .unwrap();
        assert!(matches!(host, Way::Direct(_)));
        let only_service = registry(false, RegistrySource::Configmap);
        let refused = way(
            &only_service,
            Vantage::choose(Some(Network::Host), Some(false)),
        );
        assert_eq!(refused.unwrap_err().exit_code(), ExitCode::Usage);
        let minikube = registry(false, RegistrySource::MinikubeAddon);
        let own_forward = way(&minikube, Vantage::choose(Some(Network::Host), Some(false)));
        assert!(matches!(own_forward.unwrap(), Way::Direct(_)));
    }

    #[test]
    fn in_a_pod_the_service_is_reached_by_name() {
        let only_service = registry(false, RegistrySource::Configmap);
        let Way::Direct(push) = way(&only_service, Vantage::choose(None, Some(true))).unwrap()
        else {
            panic!("not direct");
        };
        assert_eq!(push.host.as_str(), "registry.dev.svc.cluster.local:5000");
    }

    #[test]
    fn a_named_registry_is_never_tunnelled_to() {
        let mut named = registry(true, RegistrySource::Flag);
        named.service = None;
        assert!(matches!(way(&named, outside()).unwrap(), Way::Direct(_)));
        let forced = way(&named, Vantage::choose(Some(Network::Tunnel), None));
        assert_eq!(forced.unwrap_err().exit_code(), ExitCode::Usage);
    }
}
