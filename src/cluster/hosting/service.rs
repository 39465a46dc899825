//! A registry that is a Service in the cluster: its name read from `hostFromClusterNetwork`
//! (`NAME.NS.svc[.cluster.local][:PORT]`), and minikube's registry addon as the addon installs it
//! (Service `kube-system/registry` port 80, the `registry-proxy` DaemonSet's hostPort 5000 on
//! every node). Pure.

use std::fmt;
use std::num::NonZeroU16;

use super::{LocalRegistry, RegistrySource};
use crate::image::reference::RegistryHost;

/// A Service a tunnel through the API server can reach: a ready pod behind it, on its target port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
    /// The Service port named (`:PORT`); `None`: the Service's first port.
    pub port: Option<u16>,
}

impl fmt::Display for ServiceRef {
    /// `Service kube-system/registry` (with `port 80` when one was named).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Service {}/{}", self.namespace, self.name)?;
        match self.port {
            Some(port) => write!(f, " port {port}"),
            None => Ok(()),
        }
    }
}

impl ServiceRef {
    /// The Service a cluster-network host names: `NAME.NS.svc`, then nothing or a cluster
    /// domain (`.cluster.local`), then an optional port. Any other host names no Service.
    pub fn from_cluster_host(host: &RegistryHost) -> Option<Self> {
        let name = host.hostname().trim_end_matches('.').to_ascii_lowercase();
        let labels: Vec<&str> = name.split('.').collect();
        let [service, namespace, "svc", domain @ ..] = labels.as_slice() else {
            return None;
        };
        let dns_label = |label: &str| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        };
        if !dns_label(service) || !dns_label(namespace) || domain.iter().any(|l| l.is_empty()) {
            return None;
        }
        Some(Self {
            namespace: namespace.to_string(),
            name: service.to_string(),
            port: host.port(),
        })
    }

    /// The name the registry's TLS certificate is checked against through a tunnel: the
    /// cluster-network host when it names this Service (what pods pull from, so what the
    /// certificate must name), else `NAME.NS.svc`.
    pub fn dns_name(&self, cluster_host: Option<&RegistryHost>) -> String {
        let same = |host: &&RegistryHost| {
            Self::from_cluster_host(host)
                .is_some_and(|named| named.namespace == self.namespace && named.name == self.name)
        };
        match cluster_host.filter(same) {
            Some(host) => host.hostname().trim_end_matches('.').to_ascii_lowercase(),
            None => format!("{}.{}.svc", self.name, self.namespace),
        }
    }
}

/// minikube's registry addon (deploy/addons/registry in minikube's source).
pub const MINIKUBE_NAMESPACE: &str = "kube-system";
pub const MINIKUBE_SERVICE: &str = "registry";
pub const MINIKUBE_PROXY_DAEMONSET: &str = "registry-proxy";
/// The label the addon puts on each of its objects.
pub const MINIKUBE_ADDON_LABEL: (&str, &str) = ("kubernetes.io/minikube-addons", "registry");
/// The registry-proxy's hostPort: every node reaches the registry on `localhost:5000`.
pub(super) const MINIKUBE_PROXY_HOST_PORT: u16 = 5000;
/// minikube's page for the addon.
pub(super) const MINIKUBE_REGISTRY_GUIDE: &str =
    "https://minikube.sigs.k8s.io/docs/handbook/registry/";

/// What discovery read of the addon's Service and DaemonSet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinikubeAddon {
    /// The Service's first port (80 as the addon writes it).
    pub service_port: NonZeroU16,
    /// The Service's clusterIP, used by the nodes when there is no registry-proxy.
    pub cluster_ip: Option<String>,
    /// Whether the `registry-proxy` DaemonSet is there.
    pub proxy: bool,
}

/// The addon as a registry: nodes pull from `localhost:5000` through the registry-proxy (as
/// minikube's docs name it), pods reach the Service by name, and from outside the VM only a
/// tunnel through the API server reaches it (or the user's own `kubectl port-forward` to
/// `localhost:5000`, with `--network host`).
pub fn registry_from_minikube_addon(addon: &MinikubeAddon) -> LocalRegistry {
    let service_host = format!(
        "{MINIKUBE_SERVICE}.{MINIKUBE_NAMESPACE}.svc.cluster.local:{}",
        addon.service_port
    );
    let service_host = RegistryHost::parse(&service_host).expect("the addon's Service name");
    let node_host = match (&addon.proxy, &addon.cluster_ip) {
        (false, Some(ip)) => RegistryHost::parse(&format!("{ip}:{}", addon.service_port)).ok(),
        _ => None,
    };
    let proxy_host =
        RegistryHost::localhost(NonZeroU16::new(MINIKUBE_PROXY_HOST_PORT).expect("a port"));
    LocalRegistry {
        host: proxy_host.clone(),
        host_from_container_runtime: node_host.unwrap_or(proxy_host),
        service: Some(ServiceRef {
            namespace: MINIKUBE_NAMESPACE.to_string(),
            name: MINIKUBE_SERVICE.to_string(),
            port: Some(addon.service_port.get()),
        }),
        host_from_cluster_network: Some(service_host),
        host_advertised: false,
        help: Some(MINIKUBE_REGISTRY_GUIDE.to_string()),
        source: RegistrySource::MinikubeAddon,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(raw: &str) -> Option<ServiceRef> {
        ServiceRef::from_cluster_host(&RegistryHost::parse(raw).unwrap())
    }

    #[test]
    fn a_service_name_is_read_from_the_cluster_host() {
        let full = service("registry.dev.svc.cluster.local:5000").unwrap();
        assert_eq!(
            (full.namespace.as_str(), full.name.as_str(), full.port),
            ("dev", "registry", Some(5000))
        );
        assert_eq!(full.to_string(), "Service dev/registry port 5000");
        assert_eq!(service("Registry.Dev.svc").unwrap().port, None);
        assert_eq!(service("reg.dev.svc.example.org:80").unwrap().name, "reg");
    }

    #[test]
    fn other_hosts_name_no_service() {
        for raw in [
            "kind-registry:5000",
            "registry.dev:5000",
            "registry.svc.cluster.local",
            "10.96.0.1:80",
            "registry.dev.svcx:5000",
            "localhost:5000",
        ] {
            assert_eq!(service(raw), None, "{raw}");
        }
    }

    #[test]
    fn the_addon_pulls_through_its_proxy_and_pushes_through_the_service() {
        let addon = MinikubeAddon {
            service_port: NonZeroU16::new(80).unwrap(),
            cluster_ip: Some("10.96.12.34".into()),
            proxy: true,
        };
        let registry = registry_from_minikube_addon(&addon);
        assert_eq!(
            registry.host_from_container_runtime.as_str(),
            "localhost:5000"
        );
        assert_eq!(
            registry.host_from_cluster_network.unwrap().as_str(),
            "registry.kube-system.svc.cluster.local:80"
        );
        assert!(!registry.host_advertised);
        let without_proxy = registry_from_minikube_addon(&MinikubeAddon {
            proxy: false,
            ..addon
        });
        assert_eq!(
            without_proxy.host_from_container_runtime.as_str(),
            "10.96.12.34:80"
        );
    }
}
