//! The Kubernetes layer: the API client and its configuration (kubeconfig or in-cluster), which registry
//! the cluster advertises (KEP-1755 and older conventions), where the pusher runs, which product the
//! cluster is, and OpenShift's integrated registry.

pub mod client;
pub mod discovery;
pub mod exec_plugin;
pub mod hosting;
pub mod in_cluster;
pub mod kubeconfig;
pub mod network;
pub mod openshift;
pub mod product;
pub mod reach;
pub mod rollout;
pub mod route;
pub mod session;
pub mod tunnel;

use std::path::PathBuf;

use network::Network;

/// How to reach the cluster and its registry, as the command line gave it (kubectl passes none of
/// its own flags to plugins). Plain data: the layers below never see clap.
#[derive(Debug, Clone, Default)]
pub struct ClusterOptions {
    /// `--kubeconfig`: instead of `$KUBECONFIG`, then `~/.kube/config`.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`: instead of the current context.
    pub context: Option<String>,
    /// `--registry`: the registry to push to, skipping discovery.
    pub registry: Option<String>,
    /// `--registry-from-runtime`: how the nodes' runtime names that registry.
    pub registry_from_runtime: Option<String>,
    /// `--network`: where this command runs (default: cluster in a pod, else host).
    pub network: Option<Network>,
    /// `-n`: the namespace (OpenShift project) images go to on OpenShift's registry.
    pub namespace: Option<String>,
}
