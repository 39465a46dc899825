//! What the registry holds, read for `ls` and `prune`: every repository (or those asked for),
//! each tag's manifest digest, its size (config and layers; an index summed over its
//! platforms), its config's `created`, and the blobs it references.

use std::collections::{BTreeMap, HashMap};

use futures_util::StreamExt;
use futures_util::stream;

use super::created;
use crate::error::Result;
use crate::image::digest::Digest;
use crate::image::oci::{ManifestOrIndex, parse_manifest};
use crate::image::registry::RegistryClient;
use crate::output::Printer;

/// Manifests read at once.
const PARALLEL_READS: usize = 8;
/// Platform manifests of one index read; more are not summed.
const MAX_CHILDREN: usize = 64;

/// One tag and what it points at.
#[derive(Debug, Clone)]
pub(crate) struct TagEntry {
    pub repository: String,
    pub tag: String,
    pub digest: Digest,
    /// Config and layers; an index's platform manifests summed.
    pub size: u64,
    /// The config's `created` as written (an index: its newest platform's).
    pub created: Option<String>,
    /// An index's platform manifests.
    pub children: Vec<Digest>,
    /// Every blob the manifest (and an index's platform manifests) references, with its size.
    pub blobs: BTreeMap<Digest, u64>,
}

/// A manifest read once, whatever number of tags point at it.
#[derive(Debug, Clone, Default)]
struct Described {
    size: u64,
    created: Option<String>,
    children: Vec<Digest>,
    blobs: BTreeMap<Digest, u64>,
}

/// Every tag of `repositories` (all of the registry's when empty), repository by repository in
/// name order, tags in name order. A tag that vanished while read is left out.
pub(crate) async fn read(
    client: &RegistryClient,
    repositories: &[String],
    printer: &Printer,
) -> Result<Vec<TagEntry>> {
    let mut names = if repositories.is_empty() {
        client.catalog().await?
    } else {
        repositories.to_vec()
    };
    names.sort();
    names.dedup();
    let mut entries = Vec::new();
    for repository in names {
        let mut tags = client.tags(&repository).await?;
        tags.sort();
        tags.dedup();
        printer.debug(&format!("{repository}: {} tags", tags.len()));
        let mut described: HashMap<Digest, Described> = HashMap::new();
        let read: Vec<Result<Option<(String, Digest, Described)>>> =
            stream::iter(tags.into_iter().map(|tag| {
                let repository = repository.clone();
                async move { read_tag(client, &repository, tag).await }
            }))
            .buffered(PARALLEL_READS)
            .collect()
            .await;
        for found in read {
            let Some((tag, digest, about)) = found? else {
                continue;
            };
            let about = described.entry(digest.clone()).or_insert(about).clone();
            entries.push(TagEntry {
                repository: repository.clone(),
                tag,
                digest,
                size: about.size,
                created: about.created,
                children: about.children,
                blobs: about.blobs,
            });
        }
    }
    Ok(entries)
}

async fn read_tag(
    client: &RegistryClient,
    repository: &str,
    tag: String,
) -> Result<Option<(String, Digest, Described)>> {
    let Some(manifest) = client.manifest(repository, &tag).await? else {
        return Ok(None);
    };
    let Ok(parsed) = parse_manifest(&manifest.bytes) else {
        // Not JSON we know (a schema 1 manifest, an artifact of its own kind): its digest only.
        return Ok(Some((tag, manifest.digest, Described::default())));
    };
    let about = if parsed.is_index() {
        describe_index(client, repository, &parsed).await?
    } else {
        describe_image(client, repository, &parsed).await?
    };
    Ok(Some((tag, manifest.digest, about)))
}

async fn describe_image(
    client: &RegistryClient,
    repository: &str,
    manifest: &ManifestOrIndex,
) -> Result<Described> {
    let mut about = Described::default();
    for layer in manifest.layers() {
        about.blobs.insert(layer.digest.clone(), layer.size);
    }
    if let Some(config) = &manifest.config {
        about.blobs.insert(config.digest.clone(), config.size);
        if let Some(bytes) = client.small_blob(repository, &config.digest).await? {
            about.created = created_of(&bytes);
        }
    }
    about.size = about.blobs.values().sum();
    Ok(about)
}

async fn describe_index(
    client: &RegistryClient,
    repository: &str,
    index: &ManifestOrIndex,
) -> Result<Described> {
    let mut about = Described::default();
    for child in index.children().iter().take(MAX_CHILDREN) {
        about.children.push(child.digest.clone());
        about.blobs.insert(child.digest.clone(), child.size);
        let Some(manifest) = client.manifest(repository, child.digest.as_str()).await? else {
            continue;
        };
        let Ok(parsed) = parse_manifest(&manifest.bytes) else {
            continue;
        };
        if parsed.is_index() {
            continue;
        }
        let platform = describe_image(client, repository, &parsed).await?;
        about.blobs.extend(platform.blobs);
        about.created = match (about.created.take(), platform.created) {
            (Some(a), Some(b)) => Some(if created::parse(&b) > created::parse(&a) {
                b
            } else {
                a
            }),
            (a, b) => a.or(b),
        };
    }
    // The platforms' images, not the small manifests that list them.
    about.size = about
        .blobs
        .iter()
        .filter(|(digest, _)| !about.children.contains(digest))
        .map(|(_, size)| size)
        .sum();
    Ok(about)
}

/// The `created` of an image config, when it has one.
pub(crate) fn created_of(config: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Config {
        created: Option<String>,
    }
    serde_json::from_slice::<Config>(config)
        .ok()
        .and_then(|config| config.created)
        .filter(|created| !created.is_empty())
}
