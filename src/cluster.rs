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
