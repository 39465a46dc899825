//! minikube's registry addon as the addon installs it: Service `kube-system/registry` with
//! the addon's label, and whether its `registry-proxy` DaemonSet is there.

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
            service_port: u16::try_from(port.port).unwrap_or(80),
            cluster_ip: spec.cluster_ip.filter(|ip| !ip.is_empty() && ip != "None"),
            proxy,
        }))
    }
}
