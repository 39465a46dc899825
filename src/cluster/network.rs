//! Where the pusher runs decides the host it pushes to (KEP-1755): outside the cluster the
//! advertised `host`, inside the cluster network `hostFromClusterNetwork`. Pure.

use serde::Serialize;

use crate::cluster::hosting::{HOSTING_CONFIGMAP, LocalRegistry, RegistrySource};
use crate::image::reference::RegistryHost;
use crate::plumbing::error::{Error, ExitCode};

/// Which network the pusher is on (KEP-1755: `host` vs `hostFromClusterNetwork`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    /// Outside the cluster (a laptop, CI next to the cluster): push to the advertised `host`.
    Host,
    /// Inside the cluster network (a pod, an in-cluster builder): push to
    /// `hostFromClusterNetwork`.
    Cluster,
    /// Outside, through a tunnel: a port-forward through the API server to a ready pod of the
    /// registry's Service (what `kubectl port-forward` does).
    Tunnel,
}

/// Why the pusher counts as on that network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// `--network`.
    Flag,
    /// The cluster was reached with the pod's service account.
    InCluster,
    /// The cluster was reached with a kubeconfig context.
    Kubeconfig,
    /// `--registry` or the environment named the host; the cluster was not asked.
    RegistryNamed,
}

/// The network the pusher is on, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Vantage {
    pub network: Network,
    pub reason: Reason,
}

impl Vantage {
    /// `--network` wins; else a pod is on the cluster network and a kubeconfig user is not.
    /// `in_cluster` is `None` when the cluster was not contacted.
    pub fn choose(flag: Option<Network>, in_cluster: Option<bool>) -> Self {
        let (network, reason) = match (flag, in_cluster) {
            (Some(network), _) => (network, Reason::Flag),
            (None, Some(true)) => (Network::Cluster, Reason::InCluster),
            (None, Some(false)) => (Network::Host, Reason::Kubeconfig),
            (None, None) => (Network::Host, Reason::RegistryNamed),
        };
        Self { network, reason }
    }

    /// `cluster (in a pod: in-cluster config)`, for `info`.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.network.as_str(), self.why())
    }

    /// `in a pod: in-cluster config`.
    pub fn why(&self) -> String {
        match self.reason {
            Reason::Flag => format!("--network {}", self.network.as_str()),
            Reason::InCluster => "in a pod: in-cluster config".to_string(),
            Reason::Kubeconfig => "outside the cluster: a kubeconfig context".to_string(),
            Reason::RegistryNamed => "the registry was named, not discovered".to_string(),
        }
    }
}

impl Network {
    pub fn as_str(self) -> &'static str {
        match self {
            Network::Host => "host",
            Network::Cluster => "cluster",
            Network::Tunnel => "tunnel",
        }
    }
}

/// Which of the registry's hosts push uploads to, and the KEP-1755 field it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushHost<'a> {
    pub host: &'a RegistryHost,
    /// `host` or `hostFromClusterNetwork`; `None` for a registry named by flag or environment.
    pub field: Option<&'static str>,
}

/// The host to push to from `vantage`. A registry named by `--registry` (or the environment)
/// is pushed to as named; in the cluster network, a registry that advertises no
/// `hostFromClusterNetwork` is an error, since its `host` is the laptop's view.
pub fn push_host(registry: &LocalRegistry, vantage: Vantage) -> Result<PushHost<'_>, Error> {
    if matches!(registry.source, RegistrySource::Flag | RegistrySource::Env) {
        return Ok(PushHost {
            host: &registry.host,
            field: None,
        });
    }
    match (vantage.network, &registry.host_from_cluster_network) {
        (Network::Host | Network::Tunnel, _) => Ok(PushHost {
            host: &registry.host,
            field: Some("host"),
        }),
        (Network::Cluster, Some(host)) => Ok(PushHost {
            host,
            field: Some("hostFromClusterNetwork"),
        }),
        (Network::Cluster, None) => Err(unreachable_from_cluster(registry, vantage)),
    }
}

fn unreachable_from_cluster(registry: &LocalRegistry, vantage: Vantage) -> Error {
    let advertiser = match registry.source {
        RegistrySource::Configmap => format!("ConfigMap {HOSTING_CONFIGMAP} sets"),
        RegistrySource::Annotation => "the node annotations set".to_string(),
        RegistrySource::Microk8sService => "microk8s's registry Service sets".to_string(),
        RegistrySource::MinikubeAddon => "minikube's registry addon sets".to_string(),
        RegistrySource::Openshift | RegistrySource::Flag | RegistrySource::Env => {
            "the cluster sets".to_string()
        }
    };
    let error = Error::new(
        ExitCode::Load,
        format!(
            "pushing from the cluster network ({}): {advertiser} no hostFromClusterNetwork, the registry's name inside the cluster",
            vantage.why()
        ),
    );
    let error = match &registry.help {
        Some(help) => error.with_hint(format!("this cluster's registry guide: {help}")),
        None => error,
    };
    error.with_hint(format!(
        "name the registry as this pod reaches it with --registry HOST[:PORT] (and --registry-from-runtime {}), or pass --network host if {} is reachable from here",
        registry.host_from_container_runtime, registry.host
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(cluster_network: Option<&str>, source: RegistrySource) -> LocalRegistry {
        let host = |raw: &str| RegistryHost::parse(raw).unwrap();
        LocalRegistry {
            host: host("localhost:5001"),
            host_from_container_runtime: host("kind-registry:5000"),
            host_from_cluster_network: cluster_network.map(host),
            service: None,
            host_advertised: true,
            help: Some("https://kind.sigs.k8s.io/docs/user/local-registry/".into()),
            source,
        }
    }

    #[test]
    fn a_flag_beats_where_the_cluster_was_reached_from() {
        let chosen = Vantage::choose(Some(Network::Host), Some(true));
        assert_eq!(
            (chosen.network, chosen.reason),
            (Network::Host, Reason::Flag)
        );
        let in_pod = Vantage::choose(None, Some(true));
        assert_eq!(in_pod.network, Network::Cluster);
        assert_eq!(in_pod.describe(), "cluster (in a pod: in-cluster config)");
        assert_eq!(Vantage::choose(None, Some(false)).network, Network::Host);
        assert_eq!(Vantage::choose(None, None).reason, Reason::RegistryNamed);
    }

    #[test]
    fn each_network_pushes_to_its_own_host() {
        let advertised = registry(Some("kind-registry:5000"), RegistrySource::Configmap);
        let host = push_host(&advertised, Vantage::choose(None, Some(false))).unwrap();
        assert_eq!(
            (host.host.as_str(), host.field),
            ("localhost:5001", Some("host"))
        );
        let pod = push_host(&advertised, Vantage::choose(None, Some(true))).unwrap();
        assert_eq!(
            (pod.host.as_str(), pod.field),
            ("kind-registry:5000", Some("hostFromClusterNetwork"))
        );
    }

    #[test]
    fn a_named_registry_is_pushed_to_as_named_from_anywhere() {
        let named = registry(None, RegistrySource::Flag);
        let pod = push_host(&named, Vantage::choose(Some(Network::Cluster), None)).unwrap();
        assert_eq!((pod.host.as_str(), pod.field), ("localhost:5001", None));
    }

    #[test]
    fn no_cluster_network_host_is_an_error_with_the_guide_and_the_ways_out() {
        let advertised = registry(None, RegistrySource::Configmap);
        let err = push_host(&advertised, Vantage::choose(None, Some(true))).unwrap_err();
        assert_eq!(err.exit_code(), ExitCode::Load);
        assert_eq!(
            err.message(),
            "pushing from the cluster network (in a pod: in-cluster config): ConfigMap \
             kube-public/local-registry-hosting sets no hostFromClusterNetwork, the registry's \
             name inside the cluster"
        );
    }
}
