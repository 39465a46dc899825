//! How the commands reach the nodes where no registry is advertised: one by one through the
//! product's containers (kind, k3d), `minikube ssh` by the nodes' runtime, or the product's own
//! `ctr` on the local node (microk8s, k3s); `ls`, `prune` and `why` read the content tags so.

use std::time::Duration;

use super::{ImageStore, NodeAccess, NodeCluster};
use crate::cluster::client::NodeFacts;
use crate::cluster::discovery::Discovered;
use crate::cluster::product::{self, Product, ProductKind};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::escape_control as printable;

/// The cluster's nodes, listed once, and how to reach them ([`node_cluster`]), for the nodes'
/// content tags.
pub(crate) async fn reach_nodes(discovered: &Discovered, bound: Duration) -> Result<NodeAccess> {
    let cluster = discovered.cluster.as_ref().ok_or_else(|| {
        Error::new(
            ExitCode::Load,
            "no registry and no cluster to read the nodes of",
        )
    })?;
    let nodes = cluster.nodes().await?;
    let product = product::detect(cluster.facts(), &nodes);
    node_cluster(&product, &nodes, bound)
}

/// The cluster's nodes, reachable one by one (kind, k3d, minikube) or through the product's
/// `ctr` on the local node (microk8s, k3s), each command bounded by `bound`; or why not.
pub(crate) fn node_cluster(
    product: &Product,
    nodes: &[NodeFacts],
    bound: Duration,
) -> Result<NodeAccess> {
    if let Some(cluster) = NodeCluster::of(product, nodes) {
        return Ok(NodeAccess::Containers(cluster.bounded(bound)));
    }
    if let Some(argv) = product.kind.node_ctr() {
        let node = nodes
            .first()
            .map(|node| node.name.clone())
            .unwrap_or_else(|| product.kind.as_str().to_string());
        return Ok(NodeAccess::LocalCtr { argv, node, bound });
    }
    if product.kind == ProductKind::Minikube {
        return minikube(product, nodes, bound);
    }
    Err(Error::new(
            ExitCode::Load,
            format!(
                "no registry is advertised, and the nodes of {} cannot be asked what they hold",
                product.target_phrase()
            ),
        )
    .with_hint("ls and prune read the nodes of kind, k3d and minikube clusters (docker exec NODE ctr, minikube ssh) and the local node of microk8s and k3s (their ctr); give the cluster a registry to list and prune it instead"))
}

/// minikube's nodes, by their runtime: containerd's (images in its `k8s.io` namespace,
/// `minikube ssh -n NODE -- sudo ctr`) or docker's (minikube's default: images in the node's
/// dockerd, `minikube ssh -n NODE -- docker`). CRI-O's containers-storage is not read.
fn minikube(product: &Product, nodes: &[NodeFacts], bound: Duration) -> Result<NodeAccess> {
    let profile = product
        .cluster_name
        .clone()
        .unwrap_or_else(|| "minikube".to_string());
    let target = product.target_phrase();
    if nodes.is_empty() {
        return Err(Error::new(
            ExitCode::Load,
            format!("no registry is advertised, and the nodes of {target} could not be listed"),
        )
        .with_hint("ls and prune ask each node of a minikube cluster through `minikube ssh -n NODE`; they need to list the cluster's Nodes (kubectl auth can-i list nodes)"));
    }
    let store_of = |node: &NodeFacts| match node.container_runtime.as_deref() {
        Some(runtime) if runtime.starts_with("containerd://") => Some(ImageStore::Containerd),
        Some(runtime) if runtime.starts_with("docker://") => Some(ImageStore::Docker),
        _ => None,
    };
    let store = store_of(&nodes[0]);
    let mismatch = match store {
        None => Some(&nodes[0]),
        Some(_) => nodes.iter().find(|node| store_of(node) != store),
    };
    if let Some(node) = mismatch {
        let runtime = node.container_runtime.as_deref().unwrap_or("not given");
        let name = runtime.split("://").next().unwrap_or(runtime);
        let listing = format!("minikube image ls -p {profile}");
        let removal = format!("minikube image rm IMAGE... -p {profile}");
        let error = Error::new(
            ExitCode::Load,
            format!(
                "no registry is advertised, and node {} of {target} runs the {name} runtime ({}); ls and prune read minikube nodes that all run containerd, or all docker",
                printable(&node.name),
                printable(runtime)
            ),
        );
        let error = error.with_hint(format!(
            "list the node's images with `{listing}`, remove old content tags with `{removal}`"
        ));
        return Err(error
            .with_hint(format!("or run the profile on containerd or docker: `minikube start -p {profile} --container-runtime=containerd` (a new profile)"))
            .with_hint(format!("or give the cluster a registry to list and prune it instead: {}", product.registry_guide())));
    }
    Ok(NodeAccess::Minikube {
        profile,
        nodes: nodes.iter().map(|node| node.name.clone()).collect(),
        store: store.unwrap_or(ImageStore::Containerd),
        bound,
    })
}
