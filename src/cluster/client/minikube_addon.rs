//! minikube's registry addon as the addon installs it: Service `kube-system/registry` with
//! the addon's label, and whether its `registry-proxy` DaemonSet is there.

use std::num::NonZeroU16;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Service, ServicePort};
use kube::api::Api;

use super::{Cluster, Lookup};
use crate::cluster::hosting::{
    MINIKUBE_ADDON_LABEL, MINIKUBE_NAMESPACE, MINIKUBE_PROXY_DAEMONSET, MINIKUBE_SERVICE,
    MinikubeAddon,
};
use crate::plumbing::error::Result;

impl Cluster {
    /// minikube's registry addon: Service `kube-system/registry` labelled
    /// `kubernetes.io/minikube-addons: registry`, and whether its `registry-proxy` DaemonSet is there.
    pub async fn minikube_registry_addon(&self) -> Result<Lookup<MinikubeAddon>> {
        let services: Api<Service> = Api::namespaced(self.client.clone(), MINIKUBE_NAMESPACE);
        let what = || format!("reading Service {MINIKUBE_NAMESPACE}/{MINIKUBE_SERVICE}");
        let service = match self.lookup(services.get(MINIKUBE_SERVICE).await, what)? {
            Lookup::Found(service) => service,
            Lookup::NotFound => return Ok(Lookup::NotFound),
            Lookup::Forbidden => return Ok(Lookup::Forbidden),
        };
        let (key, value) = MINIKUBE_ADDON_LABEL;
        let labelled = service
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(key))
            .is_some_and(|label| label == value);
        let spec = service.spec.unwrap_or_default();
        let port = spec.ports.as_deref().and_then(<[ServicePort]>::first);
        let (true, Some(port)) = (labelled, port) else {
            return Ok(Lookup::NotFound);
        };
        let daemonsets: Api<DaemonSet> = Api::namespaced(self.client.clone(), MINIKUBE_NAMESPACE);
        let what = || format!("reading DaemonSet {MINIKUBE_NAMESPACE}/{MINIKUBE_PROXY_DAEMONSET}");
        let proxy = matches!(
            self.lookup(daemonsets.get(MINIKUBE_PROXY_DAEMONSET).await, what)?,
            Lookup::Found(_)
        );
        Ok(Lookup::Found(MinikubeAddon {
            service_port: addon_port(port.port),
            cluster_ip: spec.cluster_ip.filter(|ip| !ip.is_empty() && ip != "None"),
            proxy,
        }))
    }
}

/// The Service's port, 80 (as the addon writes it) for one kube-apiserver would refuse (0, or
/// out of range), so that a stand-in's answer never makes a host that does not parse.
fn addon_port(port: i32) -> NonZeroU16 {
    u16::try_from(port)
        .ok()
        .and_then(NonZeroU16::new)
        .unwrap_or(NonZeroU16::new(80).expect("80 is not 0"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::hosting::registry_from_minikube_addon;

    #[test]
    fn a_port_kube_apiserver_would_refuse_is_the_addons_80() {
        for (given, taken) in [(5000, 5000), (0, 80), (-1, 80), (70000, 80)] {
            let addon = MinikubeAddon {
                service_port: addon_port(given),
                cluster_ip: Some("10.96.0.1".into()),
                proxy: false,
            };
            let registry = registry_from_minikube_addon(&addon);
            assert_eq!(
                registry
                    .host_from_cluster_network
                    .map(|host| host.to_string()),
                Some(format!("registry.kube-system.svc.cluster.local:{taken}")),
                "{given}"
            );
        }
    }
}
