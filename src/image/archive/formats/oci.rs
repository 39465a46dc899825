//! OCI layouts (`index.json` + `blobs/sha256/`), in a tar or a directory: docker 25+, containerd
//! exports, oci-archive, and layouts written by oras, cosign, regclient or buildx that hold
//! artifacts beside images. Each entry is read on its own: one that is an artifact or cannot be
//! read never stops the others, and its problem is told only when it is the entry asked for.

use super::docker;
use super::docker::digest_in_blob_path;
use crate::image::archive::config::ConfigFacts;
use crate::image::archive::error::ArchiveError;
use crate::image::archive::image::{
    AbsentPlatform, Attachment, DropReason, Dropped, Image, OtherEntry, OtherKind, PlatformImage,
    RawBlob,
};
use crate::image::archive::input::members::Container;
use crate::image::archive::layer::layer_at;
use crate::image::digest::Digest;
use crate::image::oci::{self as shapes, Descriptor, ManifestOrIndex, MediaType, is_image_config};
use crate::image::reference::{ref_name_is_reference, same_image};

pub(crate) const INDEX_JSON: &str = "index.json";
pub(crate) const OCI_LAYOUT: &str = "oci-layout";

/// containerd's (and docker's) full image name annotation.
pub(crate) const IMAGE_NAME: &str = "io.containerd.image.name";
/// OCI's: a tag for docker and containerd, a whole reference for jib and rules_oci.
pub(crate) const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// How a format names blob files: an OCI layout's `blobs/sha256/<hex>`, or skopeo's `dir:`
/// transport's bare `<hex>` (where an index's manifests are `<hex>.manifest.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlobNaming {
    Layout,
    DirTransport,
}

/// The archive's members and how its blobs are named.
pub(crate) struct Blobs<'a> {
    container: &'a Container,
    naming: BlobNaming,
}

impl<'a> Blobs<'a> {
    pub(crate) fn new(container: &'a Container, naming: BlobNaming) -> Self {
        Self { container, naming }
    }

    fn layout(container: &'a Container) -> Self {
        Self::new(container, BlobNaming::Layout)
    }

    fn path_of(&self, descriptor: &Descriptor) -> String {
        match self.naming {
            BlobNaming::Layout => descriptor.blob_path(),
            BlobNaming::DirTransport => descriptor.digest.hex().to_string(),
        }
    }

    /// Where a manifest an index names is kept.
    fn manifest_path_of(&self, descriptor: &Descriptor) -> String {
        match self.naming {
            BlobNaming::Layout => descriptor.blob_path(),
            BlobNaming::DirTransport => format!("{}.manifest.json", descriptor.digest.hex()),
        }
    }
}

impl std::ops::Deref for Blobs<'_> {
    type Target = Container;

    fn deref(&self) -> &Container {
        self.container
    }
}

/// Indexes nest (an index entry naming an index); deeper than this is refused.
const MAX_INDEX_DEPTH: usize = 4;

/// What a layout's `index.json` lists: images, and everything else.
pub(crate) struct Layout {
    pub images: Vec<Image>,
    pub others: Vec<OtherEntry>,
}

fn read_index_json(container: &Container) -> Result<Vec<Descriptor>, ArchiveError> {
    let location = container.require(INDEX_JSON, "an OCI layout")?;
    let bytes = container.read_small(&location, "index.json")?;
    // A manifest copied where the index belongs (config and layers, no manifest list) would
    // read as an index listing nothing: say what it is instead.
    if let Ok(document) = shapes::parse_manifest(&bytes)
        && !document.is_index()
        && (document.config.is_some() || document.layers.is_some())
    {
        let kind = document.artifact_kind().map_or_else(
            || "an image manifest".to_string(),
            |kind| format!("the manifest of an artifact ({kind})"),
        );
        let media_type = document
            .media_type
            .as_deref()
            .map(|media_type| format!(" ({media_type})"))
            .unwrap_or_default();
        let layers = document.layers().len();
        return Err(ArchiveError::ManifestForIndex {
            archive: container.name.to_string(),
            member: INDEX_JSON.to_string(),
            found: format!(
                "{kind}{media_type}, with a config and {layers} layer{}",
                if layers == 1 { "" } else { "s" }
            ),
        });
    }
    shapes::parse_index_json(&bytes).map_err(|source| ArchiveError::Json {
        archive: container.name.to_string(),
        member: INDEX_JSON.to_string(),
        what: "OCI index.json",
        source,
    })
}

/// `index.json`'s entries with the names `ctr images import` gives them: each manifest digest
/// and its `io.containerd.image.name`, which containerd takes verbatim. (A reference in
/// `ref.name` is taken verbatim too, `myimg:dev` unnormalised, which is not the
/// `docker.io/library/myimg:dev` the kubelet looks up; so it names nothing here.)
pub(crate) fn named_entries(
    container: &Container,
) -> Result<Vec<(Digest, Vec<String>)>, ArchiveError> {
    Ok(read_index_json(container)?
        .into_iter()
        .map(|descriptor| {
            let names = descriptor.annotations.get(IMAGE_NAME).cloned();
            (descriptor.digest, names.into_iter().collect())
        })
        .collect())
}

/// An `index.json` entry read on its own.
pub(crate) enum Entry {
    Image(Image),
    Artifact(String),
}

/// The entries of an OCI layout, with names from `manifest.json` when the archive has one too.
pub(crate) fn layout(container: &Container) -> Result<Layout, ArchiveError> {
    let mut images: Vec<(Digest, Image)> = Vec::new();
    let mut others: Vec<OtherEntry> = Vec::new();
    for descriptor in read_index_json(container)? {
        let (names, bare_tags) = names_of(&descriptor);
        if let Some((_, image)) = images.iter_mut().find(|(d, _)| *d == descriptor.digest) {
            merge_names(&mut image.names, names);
            merge_tags(&mut image.bare_tags, bare_tags);
            continue;
        }
        if let Some(other) = others.iter_mut().find(|o| o.digest == descriptor.digest) {
            merge_names(&mut other.names, names);
            merge_tags(&mut other.bare_tags, bare_tags);
            continue;
        }
        let kind = match resolve_entry(&Blobs::layout(container), &descriptor) {
            Ok(Entry::Image(mut image)) => {
                merge_names(&mut image.names, names);
                merge_tags(&mut image.bare_tags, bare_tags);
                images.push((descriptor.digest.clone(), image));
                continue;
            }
            Ok(Entry::Artifact(kind)) => OtherKind::Artifact(kind),
            Err(err) => OtherKind::Unreadable(err.to_string()),
        };
        others.push(OtherEntry {
            names,
            bare_tags,
            digest: descriptor.digest.clone(),
            kind,
            descriptor,
        });
    }
    let mut images: Vec<Image> = images.into_iter().map(|(_, image)| image).collect();
    if container.find(docker::MANIFEST_JSON).is_some() {
        add_repo_tags(container, &mut images)?;
    }
    Ok(Layout { images, others })
}

/// The image an entry holds, or why it holds none: the error found when reading it.
pub(crate) fn image_of(container: &Container, other: &OtherEntry) -> Result<Image, ArchiveError> {
    match resolve_entry(&Blobs::layout(container), &other.descriptor)? {
        Entry::Image(mut image) => {
            image.names.clone_from(&other.names);
            image.bare_tags.clone_from(&other.bare_tags);
            Ok(image)
        }
        Entry::Artifact(kind) => Err(ArchiveError::NotAnImage {
            archive: container.name.to_string(),
            entry: other.name(),
            kind,
        }),
    }
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

pub(crate) fn empty_image() -> Image {
    Image {
        names: Vec::new(),
        bare_tags: Vec::new(),
        index: None,
        platforms: Vec::new(),
        absent_platforms: Vec::new(),
        attachments: Vec::new(),
        dropped: Vec::new(),
    }
}

/// A top-level index entry: an image (a manifest, or an index of platforms), or an artifact.
pub(crate) fn resolve_entry(blobs: &Blobs, descriptor: &Descriptor) -> Result<Entry, ArchiveError> {
    let mut image = empty_image();
    let Some(blob) = read_manifest(blobs, descriptor)? else {
        image
            .absent_platforms
            .push(absent(descriptor, blobs.manifest_path_of(descriptor)));
        return Ok(Entry::Image(image));
    };
    resolve_manifest(blobs, descriptor, blob, &blobs.manifest_path_of(descriptor))
}

/// The entry whose manifest or index `blob` is (read from `path`).
pub(crate) fn resolve_manifest(
    blobs: &Blobs,
    descriptor: &Descriptor,
    blob: RawBlob,
    path: &str,
) -> Result<Entry, ArchiveError> {
    let mut image = empty_image();
    let (blob, parsed) = parse_manifest_blob(blobs, path, blob)?;
    if parsed.is_index() {
        let mut kinds = Vec::new();
        let complete = collect_platforms(blobs, parsed.children(), &mut image, 1, &mut kinds)?;
        if image.platforms.is_empty() && image.absent_platforms.is_empty() {
            let kind = parsed
                .artifact_type
                .as_deref()
                .map_or_else(|| index_of_artifacts(&kinds), shapes::describe_artifact);
            return Ok(Entry::Artifact(kind));
        }
        if complete && !image.platforms.is_empty() {
            image.index = Some(blob);
        } else {
            drop_attachments(&mut image, DropReason::NotInArchive);
        }
        return Ok(Entry::Image(image));
    }
    match platform_image(blobs, descriptor, blob, &parsed)? {
        Resolved::Present(platform) => image.platforms.push(platform),
        Resolved::Absent(absent) => image.absent_platforms.push(absent),
        Resolved::Artifact(kind) => return Ok(Entry::Artifact(kind)),
    }
    Ok(Entry::Image(image))
}

/// Reads a manifest or index and settles its media type from its own bytes.
fn parse_manifest_blob(
    blobs: &Blobs,
    path: &str,
    blob: RawBlob,
) -> Result<(RawBlob, ManifestOrIndex), ArchiveError> {
    let parsed = shapes::parse_manifest(&blob.bytes).map_err(|source| ArchiveError::Json {
        archive: blobs.name.to_string(),
        member: path.to_string(),
        what: "OCI manifest or index",
        source,
    })?;
    let media_type = parsed
        .own_media_type()
        .map_err(|reason| ArchiveError::invalid(&blobs.name, path, reason))?
        .to_string();
    Ok((RawBlob { media_type, ..blob }, parsed))
}

/// An index, once the push leaves out some of its children, is rewritten: the manifests it
/// carried for the original's children describe a different index, so they go too.
pub(crate) fn drop_attachments(image: &mut Image, why: DropReason) {
    for attachment in image.attachments.drain(..) {
        image.dropped.push(Dropped {
            what: format!("attached manifest {}", attachment.manifest.digest.short()),
            why,
        });
    }
}

/// Adds an index's children to `image`; true when every child was kept (as a platform or an
/// attachment), so that the index can go unchanged.
fn collect_platforms(
    blobs: &Blobs,
    children: &[Descriptor],
    image: &mut Image,
    depth: usize,
    kinds: &mut Vec<String>,
) -> Result<bool, ArchiveError> {
    let mut complete = true;
    for child in children {
        let Some(blob) = read_manifest(blobs, child)? else {
            if child.is_attachment() {
                image.dropped.push(not_in_archive(child));
            } else {
                image
                    .absent_platforms
                    .push(absent(child, blobs.manifest_path_of(child)));
            }
            complete = false;
            continue;
        };
        let (blob, parsed) = parse_manifest_blob(blobs, &blobs.manifest_path_of(child), blob)?;
        if parsed.is_index() {
            if depth >= MAX_INDEX_DEPTH {
                return Err(ArchiveError::invalid(
                    &blobs.name,
                    &blobs.manifest_path_of(child),
                    "indexes nest too deeply",
                ));
            }
            collect_platforms(blobs, parsed.children(), image, depth + 1, kinds)?;
            complete = false;
            continue;
        }
        let resolved = if child.is_attachment() {
            Resolved::Artifact(String::new())
        } else {
            platform_image(blobs, child, blob.clone(), &parsed)?
        };
        if let Resolved::Artifact(kind) = &resolved
            && !kind.is_empty()
            && !kinds.contains(kind)
        {
            kinds.push(kind.clone());
        }
        match resolved {
            Resolved::Present(platform) => image.platforms.push(platform),
            Resolved::Absent(absent) => {
                image.absent_platforms.push(absent);
                complete = false;
            }
            Resolved::Artifact(_) => match attachment(blobs, blob, &parsed) {
                Some(attachment) => image.attachments.push(attachment),
                None => {
                    image.dropped.push(not_in_archive(child));
                    complete = false;
                }
            },
        }
    }
    Ok(complete)
}

fn not_in_archive(child: &Descriptor) -> Dropped {
    Dropped {
        what: format!(
            "attached manifest {} (its blobs are not in the archive)",
            child.digest.short()
        ),
        why: DropReason::NotInArchive,
    }
}

/// An attached manifest with every blob it names, or `None` when one is missing or unreadable.
fn attachment(blobs: &Blobs, manifest: RawBlob, parsed: &ManifestOrIndex) -> Option<Attachment> {
    let blobs = parsed
        .config
        .iter()
        .chain(parsed.layers())
        .map(|descriptor| read_blob(blobs, descriptor, "attached blob").ok()?)
        .collect::<Option<Vec<_>>>()?;
    Some(Attachment { manifest, blobs })
}

/// Why a config is not an image config: what every image config has, it lacks.
const NO_ROOTFS: &str = "its config has no `rootfs` field, so it is not an image config";

/// An index none of whose manifests is an image, saying what they are (`kinds`, each once).
fn index_of_artifacts(kinds: &[String]) -> String {
    let rootfs_alone = format!("artifact ({NO_ROOTFS})");
    match kinds {
        [] => "index of artifacts".to_string(),
        [only] if *only == rootfs_alone => "index of artifacts: the config of each of its \
            manifests has no `rootfs` field, so none is an image config (an image config \
            has `rootfs`, not only `architecture` and `os`)"
            .to_string(),
        kinds => format!("index of artifacts: {}", kinds.join("; ")),
    }
}

enum Resolved {
    Present(PlatformImage),
    Absent(AbsentPlatform),
    Artifact(String),
}

/// One platform's manifest, config and layers; absent when any of their blobs is missing.
fn platform_image(
    blobs: &Blobs,
    descriptor: &Descriptor,
    manifest: RawBlob,
    parsed: &ManifestOrIndex,
) -> Result<Resolved, ArchiveError> {
    let manifest_path = blobs.manifest_path_of(descriptor);
    if let Some(kind) = parsed.artifact_kind() {
        return Ok(Resolved::Artifact(kind));
    }
    let Some(config_descriptor) = &parsed.config else {
        return Err(ArchiveError::invalid(
            &blobs.name,
            &manifest_path,
            "the manifest has no config",
        ));
    };
    let Some(config) = read_blob(blobs, config_descriptor, "config")? else {
        return Ok(Resolved::Absent(absent(
            descriptor,
            blobs.path_of(config_descriptor),
        )));
    };
    if !is_image_config(&config.bytes) {
        return Ok(Resolved::Artifact(format!("artifact ({NO_ROOTFS})")));
    }
    let facts = ConfigFacts::parse(blobs, &config.bytes, &blobs.path_of(config_descriptor))?;
    facts.check_layer_count(blobs, &manifest_path, parsed.layers().len())?;
    let mut layers = Vec::with_capacity(parsed.layers().len());
    for (layer, diff_id) in parsed.layers().iter().zip(&facts.diff_ids) {
        let path = blobs.path_of(layer);
        let Some(location) = blobs.find(&path) else {
            return Ok(Resolved::Absent(absent(descriptor, path)));
        };
        if location.len != layer.size {
            return Err(size_mismatch(blobs, &path, layer.size, location.len));
        }
        layers.push(layer_at(
            location,
            layer.media_type.clone(),
            diff_id.clone(),
            Some(layer.digest.clone()),
        )?);
    }
    Ok(Resolved::Present(PlatformImage {
        platform: descriptor.platform().unwrap_or(facts.platform),
        manifest: Some(manifest),
        config,
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
/// Its media type is the descriptor's, else the OCI config type (configs are what lack one).
pub(crate) fn read_blob(
    blobs: &Blobs,
    descriptor: &Descriptor,
    what: &'static str,
) -> Result<Option<RawBlob>, ArchiveError> {
    read_at(blobs, descriptor, &blobs.path_of(descriptor), what)
}

/// Reads a manifest or index an index names; its media type is settled by its bytes later.
fn read_manifest(blobs: &Blobs, descriptor: &Descriptor) -> Result<Option<RawBlob>, ArchiveError> {
    read_at(
        blobs,
        descriptor,
        &blobs.manifest_path_of(descriptor),
        "manifest",
    )
}

fn read_at(
    blobs: &Blobs,
    descriptor: &Descriptor,
    path: &str,
    what: &'static str,
) -> Result<Option<RawBlob>, ArchiveError> {
    let Some(location) = blobs.find(path) else {
        return Ok(None);
    };
    if location.len != descriptor.size {
        return Err(size_mismatch(blobs, path, descriptor.size, location.len));
    }
    let bytes = blobs.read_small(&location, what)?;
    let media_type = descriptor
        .media_type
        .clone()
        .unwrap_or_else(|| MediaType::OciConfig.as_str().to_string());
    let blob = RawBlob::new(media_type, bytes);
    if blob.digest != descriptor.digest {
        return Err(ArchiveError::digest_mismatch(
            &blobs.name,
            path,
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
