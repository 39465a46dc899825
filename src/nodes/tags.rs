//! The content tags this tool gives the images it loads into the nodes (`NAME:TAG-<12 hex>`, the
//! hex being the start of the image's config digest): the tag written (`node_load_tag`), and
//! the tags read back per node, with each image's config `created`.

use std::collections::HashMap;

use super::{ImageStore, NodeAccess};
use crate::image::created::created_of;
use crate::image::digest::Digest;
use crate::image::oci::parse_manifest;
use crate::image::reference::ImageName;
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;

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

/// The tag a node-loaded image gets beside the user's: `TAG-<first 12 hex of the image ID>`.
///
/// The image ID (the config's digest) changes when and only when the content (config and
/// layer diff_ids) changes, whatever the compression; a new tag rolls pods where a reused one
/// does not; it is never `latest` (which means pull Always); and a tag resolves on the node,
/// where a digest ref of a loaded image does not (kind#2394). Tags are at most 128 characters.
pub fn node_load_tag(tag: &str, image_id: &Digest) -> String {
    let keep = tag.len().min(128 - HEX - 1);
    // Tags are ASCII ([A-Za-z0-9_.-]), so any byte index is a char boundary; be safe anyway.
    let base = tag.get(..keep).unwrap_or(tag);
    format!("{base}-{}", &image_id.hex()[..HEX])
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
    let listed = super::node_images(cluster).await.map_err(failed)?;
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
    for (node, images) in super::docker_images(cluster).await? {
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
    let bytes = super::node_content(cluster, node, manifest).await?;
    let parsed = parse_manifest(&bytes).map_err(|err| format!("not a manifest: {err}"))?;
    let config = parsed
        .config
        .ok_or_else(|| "an index, not an image manifest".to_string())?;
    let created = match super::node_content(cluster, node, &config.digest).await {
        Ok(bytes) => created_of(&bytes),
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

    #[test]
    fn node_load_tag_appends_the_image_id_and_stays_a_valid_tag() {
        let id: Digest = format!("sha256:{}", "0123456789ab".repeat(5) + "cdef")
            .parse()
            .unwrap();
        assert_eq!(node_load_tag("dev", &id), "dev-0123456789ab");
        assert_eq!(node_load_tag("latest", &id), "latest-0123456789ab");
        let long = "t".repeat(128);
        let tag = node_load_tag(&long, &id);
        assert_eq!(tag.len(), 128);
        assert!(tag.ends_with("-0123456789ab"));
    }
}
