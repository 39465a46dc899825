//! OCI layouts (`index.json` + `blobs/sha256/`), in a tar or a directory: docker 25+, containerd
//! exports, oci-archive. Index entries become images, their platforms those whose blobs are here.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::config::ConfigFacts;
use super::docker::{self, digest_in_blob_path};
use super::error::ArchiveError;
use super::image::{
    AbsentPlatform, Image, OCI_CONFIG, OCI_INDEX, OCI_MANIFEST, PlatformImage, RawBlob,
};
use super::layer::layer_at;
use super::members::Container;
use super::names::{ref_name_is_reference, same_image};
use super::platform::Platform;
use crate::digest::Digest;

pub(crate) const INDEX_JSON: &str = "index.json";
pub(crate) const OCI_LAYOUT: &str = "oci-layout";

/// containerd's (and docker's) full image name annotation.
pub(crate) const IMAGE_NAME: &str = "io.containerd.image.name";
/// OCI's: a tag for docker and containerd, a whole reference for jib and rules_oci.
pub(crate) const REF_NAME: &str = "org.opencontainers.image.ref.name";

const DOCKER_CONFIG: &str = "application/vnd.docker.container.image.v1+json";
/// Indexes nest (an index entry naming an index); deeper than this is refused.
const MAX_INDEX_DEPTH: usize = 4;

#[derive(Debug, Deserialize)]
struct IndexJson {
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    media_type: Option<String>,
    digest: Digest,
    size: u64,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    platform: Option<PlatformJson>,
}

#[derive(Debug, Clone, Deserialize)]
struct PlatformJson {
    os: Option<String>,
    architecture: Option<String>,
    variant: Option<String>,
}

/// A manifest or an index, told apart by their fields as media types may be missing.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ManifestOrIndex {
    media_type: Option<String>,
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Vec<Descriptor>,
    manifests: Option<Vec<Descriptor>>,
}

impl Descriptor {
    fn platform(&self) -> Option<Platform> {
        self.platform.as_ref().map(|p| {
            Platform::from_parts(
                p.os.as_deref(),
                p.architecture.as_deref(),
                p.variant.as_deref(),
            )
        })
    }

    fn blob_path(&self) -> String {
        format!("blobs/sha256/{}", self.digest.hex())
    }

    /// Attestations and signatures that buildx and others put beside an index's platforms.
    fn is_attachment(&self) -> bool {
        self.annotations.contains_key("vnd.docker.reference.type")
            || self
                .platform()
                .is_some_and(|p| p.os == "unknown" && p.architecture == "unknown")
    }
}

fn read_index_json(container: &Container) -> Result<IndexJson, ArchiveError> {
    let location = container.require(INDEX_JSON, "an OCI layout")?;
    let bytes = container.read_small(&location, "index.json")?;
    container.parse_json(&bytes, INDEX_JSON, "OCI index.json")
}

/// `index.json`'s entries with the names `ctr images import` gives them: each manifest digest
/// and its `io.containerd.image.name`, which containerd takes verbatim. (A reference in
/// `ref.name` is taken verbatim too, `myimg:dev` unnormalised, which is not the
/// `docker.io/library/myimg:dev` the kubelet looks up; so it names nothing here.)
pub(crate) fn named_entries(
    container: &Container,
) -> Result<Vec<(Digest, Vec<String>)>, ArchiveError> {
    Ok(read_index_json(container)?
        .manifests
        .into_iter()
        .map(|descriptor| {
            let names = descriptor.annotations.get(IMAGE_NAME).cloned();
            (descriptor.digest, names.into_iter().collect())
        })
        .collect())
}

/// The images of an OCI layout, with names from `manifest.json` when the archive has one too.
pub(crate) fn images(container: &Container) -> Result<Vec<Image>, ArchiveError> {
    let index = read_index_json(container)?;

    let mut images: Vec<(Digest, Image)> = Vec::new();
    for descriptor in &index.manifests {
        let (names, bare_tags) = names_of(descriptor);
        if let Some((_, image)) = images.iter_mut().find(|(d, _)| *d == descriptor.digest) {
            merge_names(&mut image.names, names);
            merge_tags(&mut image.bare_tags, bare_tags);
            continue;
        }
        if let Some(mut image) = resolve_entry(container, descriptor)? {
            merge_names(&mut image.names, names);
            merge_tags(&mut image.bare_tags, bare_tags);
            images.push((descriptor.digest.clone(), image));
        }
    }
    let mut images: Vec<Image> = images.into_iter().map(|(_, image)| image).collect();
    if container.find(docker::MANIFEST_JSON).is_some() {
        add_repo_tags(container, &mut images)?;
    }
    Ok(images)
}

/// Names from an index entry's annotations: (full names, bare tags).
fn names_of(descriptor: &Descriptor) -> (Vec<String>, Vec<String>) {
    let image_name = descriptor.annotations.get(IMAGE_NAME);
    let ref_name = descriptor.annotations.get(REF_NAME);
    match (image_name, ref_name) {
        (Some(name), _) => (vec![name.clone()], Vec::new()),
        (None, Some(reference)) if ref_name_is_reference(reference) => {
            (vec![reference.clone()], Vec::new())
        }
        (None, Some(tag)) => (Vec::new(), vec![tag.clone()]),
        (None, None) => (Vec::new(), Vec::new()),
    }
}

fn merge_names(names: &mut Vec<String>, more: Vec<String>) {
    for name in more {
        if !names.iter().any(|known| same_image(known, &name)) {
            names.push(name);
        }
    }
}

fn merge_tags(tags: &mut Vec<String>, more: Vec<String>) {
    for tag in more {
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
}

/// Docker's `RepoTags` go first: they are the names the user gave (`myimg:dev`).
fn add_repo_tags(container: &Container, images: &mut [Image]) -> Result<(), ArchiveError> {
    for entry in docker::read_manifest_json(container)? {
        let Some(config) = digest_in_blob_path(&entry.config) else {
            continue;
        };
        let owner = images.iter_mut().find(|image| {
            image
                .platforms
                .iter()
                .any(|platform| platform.config.digest == config)
        });
        if let Some(image) = owner {
            let mut names = entry.repo_tags.unwrap_or_default();
            merge_names(&mut names, std::mem::take(&mut image.names));
            image.names = names;
        }
    }
    Ok(())
}

/// An image from a top-level index entry; `None` for entries that are not container images
/// (artifacts such as signatures or helm charts).
fn resolve_entry(
    container: &Container,
    descriptor: &Descriptor,
) -> Result<Option<Image>, ArchiveError> {
    let mut image = Image {
        names: Vec::new(),
        bare_tags: Vec::new(),
        index: None,
        platforms: Vec::new(),
        absent_platforms: Vec::new(),
    };
    let Some(blob) = read_blob(container, descriptor, "manifest")? else {
        image
            .absent_platforms
            .push(absent(descriptor, descriptor.blob_path()));
        return Ok(Some(image));
    };
    let parsed: ManifestOrIndex = container.parse_json(
        &blob.bytes,
        &descriptor.blob_path(),
        "OCI manifest or index",
    )?;
    if let Some(children) = parsed.manifests {
        let complete = collect_platforms(container, &children, &mut image, 1)?;
        if complete && !image.platforms.is_empty() {
            let media_type = descriptor
                .media_type
                .clone()
                .or(parsed.media_type)
                .unwrap_or_else(|| OCI_INDEX.to_string());
            image.index = Some(RawBlob { media_type, ..blob });
        }
        return Ok(Some(image));
    }
    match platform_image(container, descriptor, blob, parsed)? {
        Resolved::Present(platform) => image.platforms.push(platform),
        Resolved::Absent(absent) => image.absent_platforms.push(absent),
        Resolved::NotAnImage => return Ok(None),
    }
    Ok(Some(image))
}

/// Adds an index's children to `image`; true when every child was added as a platform.
fn collect_platforms(
    container: &Container,
    children: &[Descriptor],
    image: &mut Image,
    depth: usize,
) -> Result<bool, ArchiveError> {
    let mut complete = true;
    for child in children {
        if child.is_attachment() {
            complete = false;
            continue;
        }
        let Some(blob) = read_blob(container, child, "manifest")? else {
            image
                .absent_platforms
                .push(absent(child, child.blob_path()));
            complete = false;
            continue;
        };
        let parsed: ManifestOrIndex =
            container.parse_json(&blob.bytes, &child.blob_path(), "OCI manifest or index")?;
        if let Some(grandchildren) = parsed.manifests {
            if depth >= MAX_INDEX_DEPTH {
                return Err(ArchiveError::invalid(
                    &container.name,
                    &child.blob_path(),
                    "indexes nest too deeply",
                ));
            }
            collect_platforms(container, &grandchildren, image, depth + 1)?;
            complete = false;
            continue;
        }
        match platform_image(container, child, blob, parsed)? {
            Resolved::Present(platform) => image.platforms.push(platform),
            Resolved::Absent(absent) => {
                image.absent_platforms.push(absent);
                complete = false;
            }
            Resolved::NotAnImage => complete = false,
        }
    }
    Ok(complete)
}

enum Resolved {
    Present(PlatformImage),
    Absent(AbsentPlatform),
    NotAnImage,
}

/// One platform's manifest, config and layers; absent when any of their blobs is missing.
fn platform_image(
    container: &Container,
    descriptor: &Descriptor,
    manifest: RawBlob,
    parsed: ManifestOrIndex,
) -> Result<Resolved, ArchiveError> {
    let manifest_path = descriptor.blob_path();
    let Some(config_descriptor) = parsed.config else {
        return Err(ArchiveError::invalid(
            &container.name,
            &manifest_path,
            "the manifest has no config",
        ));
    };
    let config_type = config_descriptor
        .media_type
        .as_deref()
        .unwrap_or(OCI_CONFIG);
    if config_type != OCI_CONFIG && config_type != DOCKER_CONFIG {
        return Ok(Resolved::NotAnImage);
    }
    let Some(config) = read_blob(container, &config_descriptor, "config")? else {
        return Ok(Resolved::Absent(absent(
            descriptor,
            config_descriptor.blob_path(),
        )));
    };
    let facts = ConfigFacts::parse(container, &config.bytes, &config_descriptor.blob_path())?;
    facts.check_layer_count(container, &manifest_path, parsed.layers.len())?;
    let mut layers = Vec::with_capacity(parsed.layers.len());
    for (layer, diff_id) in parsed.layers.iter().zip(&facts.diff_ids) {
        let path = layer.blob_path();
        let Some(location) = container.find(&path) else {
            return Ok(Resolved::Absent(absent(descriptor, path)));
        };
        if location.len != layer.size {
            return Err(size_mismatch(container, &path, layer.size, location.len));
        }
        layers.push(layer_at(
            location,
            layer.media_type.clone(),
            diff_id.clone(),
            Some(layer.digest.clone()),
        )?);
    }
    let media_type = descriptor
        .media_type
        .clone()
        .or(parsed.media_type)
        .unwrap_or_else(|| OCI_MANIFEST.to_string());
    Ok(Resolved::Present(PlatformImage {
        platform: descriptor.platform().unwrap_or(facts.platform),
        manifest: Some(RawBlob {
            media_type,
            ..manifest
        }),
        config: RawBlob {
            media_type: config_type.to_string(),
            ..config
        },
        layers,
    }))
}

fn absent(descriptor: &Descriptor, missing: String) -> AbsentPlatform {
    AbsentPlatform {
        platform: descriptor.platform(),
        manifest: descriptor.digest.clone(),
        missing,
    }
}

/// Reads a small blob named by a descriptor and checks its size and digest; `None` if absent.
fn read_blob(
    container: &Container,
    descriptor: &Descriptor,
    what: &'static str,
) -> Result<Option<RawBlob>, ArchiveError> {
    let path = descriptor.blob_path();
    let Some(location) = container.find(&path) else {
        return Ok(None);
    };
    if location.len != descriptor.size {
        return Err(size_mismatch(
            container,
            &path,
            descriptor.size,
            location.len,
        ));
    }
    let bytes = container.read_small(&location, what)?;
    let media_type = descriptor.media_type.clone().unwrap_or_default();
    let blob = RawBlob::new(media_type, bytes);
    if blob.digest != descriptor.digest {
        return Err(ArchiveError::digest_mismatch(
            &container.name,
            &path,
            "digest",
            &descriptor.digest,
            &blob.digest,
        ));
    }
    Ok(Some(blob))
}

fn size_mismatch(container: &Container, path: &str, expected: u64, actual: u64) -> ArchiveError {
    ArchiveError::Mismatch {
        archive: container.name.to_string(),
        member: path.to_string(),
        what: "size",
        expected: format!("{expected} bytes"),
        actual: format!("{actual} bytes"),
    }
}
