//! The only Kubernetes I/O: kubeconfig, the hosting ConfigMap, nodes, services -> plain facts.

use std::collections::BTreeMap;

/// What the kubeconfig says about the current cluster (plain data, no client).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeconfigFacts {
    pub context: Option<String>,
    /// The kubeconfig's name for the context's cluster.
    pub cluster: Option<String>,
    pub server: Option<String>,
}

/// What the product detector needs to know about one node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFacts {
    pub name: String,
    pub provider_id: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}
