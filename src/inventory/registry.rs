//! What the registry holds, read for `ls` and `prune`: every repository (or those asked for),
//! each tag's manifest digest, its size (config and layers; an index summed over its
//! platforms), its config's `created`, the blobs it references, and whose it is when it is a
//! signature, attestation or other referrer (see `attached`).

use std::collections::{BTreeMap, HashMap};

use futures_util::StreamExt;
use futures_util::stream;

use super::attached::{Attached, attached};
use crate::image::created::{self, created_of};
use crate::image::digest::Digest;
use crate::image::oci::{ManifestOrIndex, parse_manifest};
use crate::image::registry::{Catalog, RegistryClient};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;

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
    /// When the tag belongs to another manifest (a signature, an attestation, a referrer).
    pub attached: Option<Attached>,
    /// An index's BuildKit attestation manifests, and the platform manifest each describes.
    pub attestations: Vec<(Digest, Option<Digest>)>,
}

/// A manifest read once, whatever number of tags point at it.
#[derive(Debug, Clone, Default)]
struct Described {
    size: u64,
    created: Option<String>,
    children: Vec<Digest>,
    blobs: BTreeMap<Digest, u64>,
    attestations: Vec<(Digest, Option<Digest>)>,
}

/// Which command reads, for what its errors tell the user to type.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reader(pub &'static str);

/// Every tag of `repositories` (all of the registry's when empty), repository by repository in
/// name order, tags in name order. A tag that vanished while read is left out.
pub(crate) async fn read(
    client: &RegistryClient,
    repositories: &[String],
    reader: Reader,
    printer: &Printer,
) -> Result<Vec<TagEntry>> {
    let named = !repositories.is_empty();
    let mut names = if named {
        repositories.to_vec()
    } else {
        match client.catalog().await? {
            Catalog::Listed(names) => names,
            Catalog::Refused(refusal) => return Err(catalog_refused(client, refusal, reader)),
        }
    };
    names.sort();
    names.dedup();
    let mut entries = Vec::new();
    for repository in names {
        let mut tags = match client.tags(&repository).await? {
            Some(tags) => tags,
            // Listed in the catalog but gone since: nothing to show.
            None if !named => Vec::new(),
            None => return Err(no_such_repository(client, &repository, reader)),
        };
        tags.sort();
        tags.dedup();
        printer.debug(&format!("{repository}: {} tags", tags.len()));
        let mut described: HashMap<Digest, Described> = HashMap::new();
        let read: Vec<Result<Option<ReadTag>>> = stream::iter(tags.into_iter().map(|tag| {
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
            let (about, attached) = about;
            let about = described.entry(digest.clone()).or_insert(about).clone();
            entries.push(TagEntry {
                repository: repository.clone(),
                tag,
                digest,
                size: about.size,
                created: about.created,
                children: about.children,
                blobs: about.blobs,
                attached,
                attestations: about.attestations,
            });
        }
    }
    Ok(entries)
}

/// A tag, its manifest's digest, what that manifest is, and whose it is.
type ReadTag = (String, Digest, (Described, Option<Attached>));

async fn read_tag(
    client: &RegistryClient,
    repository: &str,
    tag: String,
) -> Result<Option<ReadTag>> {
    let Some(manifest) = client.manifest(repository, &tag).await? else {
        return Ok(None);
    };
    let Ok(parsed) = parse_manifest(&manifest.bytes) else {
        // Not JSON we know (a schema 1 manifest, an artifact of its own kind): its digest only.
        let belongs = attached(&tag, None);
        return Ok(Some((
            tag,
            manifest.digest,
            (Described::default(), belongs),
        )));
    };
    let belongs = attached(&tag, Some(&parsed));
    let mut about = if parsed.is_index() {
        describe_index(client, repository, &parsed).await?
    } else {
        describe_image(client, repository, &parsed).await?
    };
    if belongs.is_some() {
        // Never ranked by age: it lives and goes with its subject.
        about.created = None;
    }
    Ok(Some((tag, manifest.digest, (about, belongs))))
}

/// The registry will not list its repositories: say so, and how to name them instead.
fn catalog_refused(client: &RegistryClient, refusal: Error, reader: Reader) -> Error {
    let Reader(command) = reader;
    Error::new(
        ExitCode::Registry,
        format!(
            "the registry {} does not list its repositories: its catalog (GET /v2/_catalog) was refused",
            client.host()
        ),
    )
    .with_source(refusal)
    .with_hint(format!(
        "name the repositories instead: kubectl registry {command} REPO..., e.g. kubectl registry {command} myimg"
    ))
}

/// A repository named on the command line that the registry does not know (NAME_UNKNOWN).
fn no_such_repository(client: &RegistryClient, repository: &str, reader: Reader) -> Error {
    let Reader(command) = reader;
    Error::new(
        ExitCode::Registry,
        format!(
            "the registry {} has no repository {repository} (NAME_UNKNOWN)",
            client.host()
        ),
    )
    .with_hint(format!(
        "`kubectl registry {command}` without a repository lists those it has"
    ))
}

async fn describe_image(
    client: &RegistryClient,
    repository: &str,
    manifest: &ManifestOrIndex,
) -> Result<Described> {
    let mut about = Described {
        blobs: referenced(manifest),
        ..Described::default()
    };
    if let Some(config) = &manifest.config
        && let Some(bytes) = client.small_blob(repository, &config.digest).await?
    {
        about.created = created_of(&bytes);
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
    let mut attachment_blobs: BTreeMap<Digest, u64> = BTreeMap::new();
    for child in index.children().iter().take(MAX_CHILDREN) {
        about.children.push(child.digest.clone());
        about.blobs.insert(child.digest.clone(), child.size);
        let Some(manifest) = client.manifest(repository, child.digest.as_str()).await? else {
            continue;
        };
        let Ok(parsed) = parse_manifest(&manifest.bytes) else {
            continue;
        };
        if child.is_attachment() {
            // BuildKit's attestations (and others') describe a platform; they are not one:
            // neither its age nor its size, but freed with the index.
            about
                .attestations
                .push((child.digest.clone(), child.attestation_subject()));
            attachment_blobs.extend(referenced(&parsed));
            continue;
        }
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
    // The platforms' images, not the small manifests that list them, nor their attestations.
    about.size = about
        .blobs
        .iter()
        .filter(|(digest, _)| !about.children.contains(digest))
        .map(|(_, size)| size)
        .sum();
    for (digest, size) in attachment_blobs {
        about.blobs.entry(digest).or_insert(size);
    }
    Ok(about)
}

/// The config and layers a manifest names, with their sizes.
fn referenced(manifest: &ManifestOrIndex) -> BTreeMap<Digest, u64> {
    manifest
        .config
        .iter()
        .chain(manifest.layers())
        .map(|descriptor| (descriptor.digest.clone(), descriptor.size))
        .collect()
}

/// Each attached entry's digest and its subject's.
pub(crate) fn subjects(entries: &[TagEntry]) -> HashMap<&Digest, &Digest> {
    entries
        .iter()
        .filter_map(|entry| Some((&entry.digest, &entry.attached.as_ref()?.subject)))
        .collect()
}
