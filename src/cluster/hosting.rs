//! KEP-1755 local-registry-hosting: what a cluster advertises, where it was found, and the
//! rules for reading it. Pure: no I/O here.

mod advertisement;
mod configmap;
mod older_conventions;
mod openshift;
mod service;

use crate::image::reference::RegistryHost;

pub use advertisement::{Advertisement, BadHelpUrl, HelpUrl, hosting_v1_key};
pub use configmap::{HostingConfigMap, registry_from_configmap};
pub use older_conventions::{
    registry_from_microk8s_node_port, registry_from_node_annotations, registry_from_override,
};
pub use openshift::{
    INGRESS_CA_HINT, OPENSHIFT_REGISTRY_GUIDE, openshift_repository, registry_from_openshift,
};
pub use service::{
    MINIKUBE_ADDON_LABEL, MINIKUBE_NAMESPACE, MINIKUBE_PROXY_DAEMONSET, MINIKUBE_SERVICE,
    MinikubeAddon, ServiceRef, registry_from_minikube_addon,
};

/// Where KEP-1755 says a cluster advertises its registry.
pub const HOSTING_NAMESPACE: &str = "kube-public";
pub const HOSTING_NAME: &str = "local-registry-hosting";
/// `namespace/name`, as messages name it.
pub const HOSTING_CONFIGMAP: &str = "kube-public/local-registry-hosting";
/// The KEP's design document, for users whose cluster advertises nothing.
pub const KEP_URL: &str = "https://github.com/kubernetes/enhancements/tree/master/keps/sig-cluster-lifecycle/generic/1755-communicating-a-local-registry";

/// Node annotations older tools (Tilt, kind's early script) wrote before KEP-1755.
pub const TILT_REGISTRY_ANNOTATION: &str = "tilt.dev/registry";
pub const TILT_REGISTRY_FROM_CLUSTER_ANNOTATION: &str = "tilt.dev/registry-from-cluster";
pub const KIND_REGISTRY_ANNOTATION: &str = "kind.x-k8s.io/registry";

/// Where a registry was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RegistrySource {
    Flag,
    Env,
    Configmap,
    /// OpenShift's `images.config.openshift.io/cluster`.
    Openshift,
    Annotation,
    Microk8sService,
    /// minikube's registry addon: Service `kube-system/registry` and its `registry-proxy`.
    MinikubeAddon,
}

/// A cluster's local registry, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalRegistry {
    /// Where tools outside the cluster push.
    pub host: RegistryHost,
    /// What goes in pod image fields (defaulted to `host`).
    pub host_from_container_runtime: RegistryHost,
    /// Where pods reach it, when advertised.
    pub host_from_cluster_network: Option<RegistryHost>,
    /// The Service behind the registry, when `hostFromClusterNetwork` names one (or minikube's
    /// addon): what a tunnel through the API server reaches.
    pub service: Option<ServiceRef>,
    /// False when nothing said `host` answers from outside the cluster (a ConfigMap with only a
    /// Service's `hostFromClusterNetwork`, minikube's addon): `host` is then what the nodes or
    /// pods use, and outside the cluster push tunnels.
    pub host_advertised: bool,
    /// The cluster's registry guide, shown when something fails.
    pub help: Option<String>,
    pub source: RegistrySource,
}

impl LocalRegistry {
    /// The names a user logs in to this registry by (`docker login HOST`): `host`, then
    /// `hostFromClusterNetwork`. Through a tunnel, credentials are looked up under these.
    pub fn login_names(&self) -> Vec<RegistryHost> {
        let mut names = vec![self.host.clone()];
        names.extend(self.host_from_cluster_network.clone());
        names.dedup();
        names
    }
}

/// Something worth telling the user while reading what a cluster advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// Only with -v.
    Debug(String),
    Warning(String),
}

#[cfg(test)]
mod openshift_tests;
#[cfg(test)]
mod tests;
