//! The content tags this tool loaded into the nodes (`NAME:TAG-<12 hex>`, the hex being the
//! start of the image's config digest), per node, with each image's config `created`.

use std::collections::HashMap;
use std::time::Duration;

use crate::cluster::client::NodeFacts;
use crate::cluster::product::{Product, ProductKind};
use crate::error::{Error, ExitCode, Result};
use crate::image::digest::Digest;
use crate::image::oci::parse_manifest;
use crate::image::reference::ImageName;
use crate::nodes::{self, ImageStore, NodeAccess, NodeCluster};
use crate::output::{Printer, escape_control as printable};

/// The hex digits a content tag ends with.
const HEX: usize = 12;

/// One content tag on one node.
#[derive(Debug, Clone)]
pub(crate) struct NodeTag {
    pub node: String,
    /// As containerd records it: `docker.io/library/myimg:dev-0123456789ab`.
    pub name: String,
    /// `myimg`, `someone/app`: as a pod spec writes it.
    pub repository: String,
    pub tag: String,
    pub digest: Digest,
    pub created: Option<String>,
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

/// Every content tag of ours on every node, node by node, in name order.
pub(crate) async fn read(cluster: &NodeAccess, printer: &Printer) -> Result<Vec<NodeTag>> {
    let failed =
        |why: String| Error::new(ExitCode::Load, "reading what the nodes hold").with_source(why);
    if cluster.store() == ImageStore::Docker {
        let mut tags = read_docker(cluster).await.map_err(failed)?;
        tags.sort_by(|a, b| (&a.node, &a.name).cmp(&(&b.node, &b.name)));
        return Ok(tags);
    }
    let listed = nodes::node_images(cluster).await.map_err(failed)?;
    let mut tags = Vec::new();
    for (node, images) in listed {
        // A manifest's config and created time, read once per node.
        let mut configs: HashMap<Digest, Option<(Digest, Option<String>)>> = HashMap::new();
        for image in images {
            let Some((repository, tag, hex)) = content_tag(&image.name) else {
                continue;
            };
            if !configs.contains_key(&image.digest) {
                let read = config_of(cluster, &node, &image.digest).await;
                if let Err(why) = &read {
                    printer.debug(&format!("{node}: {}: {why}", image.name));
                }
                configs.insert(image.digest.clone(), read.ok());
            }
            let Some(Some((config, created))) = configs.get(&image.digest) else {
                continue;
            };
            // Ours only when the hex is the image's own ID, as push names it.
            if !config.hex().starts_with(&hex) {
                continue;
            }
            tags.push(NodeTag {
                node: node.clone(),
                name: image.name.clone(),
                repository,
                tag,
                digest: image.digest.clone(),
                created: created.clone(),
            });
        }
    }
    tags.sort_by(|a, b| (&a.node, &a.name).cmp(&(&b.node, &b.name)));
    Ok(tags)
}

/// The content tags of ours in each node's dockerd: docker's image ID is the config digest, so
/// the hex is checked against it directly, and docker reports the config's `created`.
async fn read_docker(cluster: &NodeAccess) -> std::result::Result<Vec<NodeTag>, String> {
    let mut tags = Vec::new();
    for (node, images) in nodes::docker_images(cluster).await? {
        for image in images {
            let Some((repository, tag, hex)) = content_tag(&image.name) else {
                continue;
            };
            if !image.id.hex().starts_with(&hex) {
                continue;
            }
            tags.push(NodeTag {
                node: node.clone(),
                name: image.name,
                repository,
                tag,
                digest: image.id,
                created: image.created,
            });
        }
    }
    Ok(tags)
}

/// `(repository, tag, hex)` of a name whose tag ends in `-<12 lowercase hex>`.
fn content_tag(name: &str) -> Option<(String, String, String)> {
    let parsed = ImageName::parse(name).ok()?;
    if parsed.digest.is_some() {
        return None;
    }
    let tag = parsed.tag.clone()?;
    let (base, hex) = tag.rsplit_once('-')?;
    let is_hex = hex.len() == HEX && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if base.is_empty() || !is_hex {
        return None;
    }
    Some((parsed.familiar_repository(), tag.clone(), hex.to_string()))
}

/// The config digest and `created` of an image manifest on `node`.
async fn config_of(
    cluster: &NodeAccess,
    node: &str,
    manifest: &Digest,
) -> std::result::Result<(Digest, Option<String>), String> {
    let bytes = nodes::node_content(cluster, node, manifest).await?;
    let parsed = parse_manifest(&bytes).map_err(|err| format!("not a manifest: {err}"))?;
    let config = parsed
        .config
        .ok_or_else(|| "an index, not an image manifest".to_string())?;
    let created = match nodes::node_content(cluster, node, &config.digest).await {
        Ok(bytes) => super::inventory::created_of(&bytes),
        Err(_) => None,
    };
    Ok((config.digest, created))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_tags_end_in_twelve_hex_digits() {
        assert_eq!(
            content_tag("docker.io/library/myimg:dev-0123456789ab"),
            Some((
                "myimg".to_string(),
                "dev-0123456789ab".to_string(),
                "0123456789ab".to_string()
            ))
        );
        assert_eq!(content_tag("docker.io/library/myimg:dev"), None);
        assert_eq!(
            content_tag("docker.io/library/myimg:dev-0123456789AB"),
            None
        );
        assert_eq!(content_tag("docker.io/library/myimg:dev-0123456789a"), None);
        assert_eq!(content_tag("docker.io/library/myimg:-0123456789ab"), None);
    }
}
