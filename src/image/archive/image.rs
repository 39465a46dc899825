//! What an archive holds, as plain data: images, their platforms, configs, layers and the
//! original manifests, plus the OCI manifest to push when the archive carried none.

use serde::Serialize;

use super::input::blob::BlobLocation;
use crate::image::digest::Digest;
use crate::image::oci::{Descriptor, MediaType, Platform};

/// One image of an archive: its names and every platform whose blobs are present.
#[derive(Debug, Clone)]
pub struct Image {
    /// Full references as recorded (`myimg:dev`, `docker.io/library/myimg:dev`), one per image
    /// name, in the order the archive gives them (docker's `RepoTags` first).
    pub names: Vec<String>,
    /// Tags recorded without a repository (an OCI layout's `ref.name` such as `dev`).
    pub bare_tags: Vec<String>,
    /// The archive's own multi-platform index, kept byte for byte; only set when every manifest
    /// it names is among `platforms`, so pushing it unchanged is valid.
    pub index: Option<RawBlob>,
    pub platforms: Vec<PlatformImage>,
    /// Platforms the archive's index names but whose blobs are not in the archive.
    pub absent_platforms: Vec<AbsentPlatform>,
    /// Manifests the index carries beside its platforms (attestations, signatures), whole:
    /// pushed by digest with their blobs, so that the index itself goes unchanged.
    pub attachments: Vec<Attachment>,
    /// What the archive's index names that a push of this image leaves out, and why.
    pub dropped: Vec<Dropped>,
}

impl Image {
    /// How to name this image in a list for the user: its first name, else its digest.
    pub fn label(&self) -> String {
        if let Some(name) = self.names.first() {
            return name.clone();
        }
        let id = self.id();
        let tags = if self.bare_tags.is_empty() {
            String::new()
        } else {
            format!(" tagged {}", self.bare_tags.join(", "))
        };
        match id {
            Some(id) => format!("unnamed image {}{tags}", id.short()),
            None => format!("unnamed image{tags}"),
        }
    }

    /// The label, with the short digest that tells it apart from another image of that name.
    pub fn label_with_id(&self) -> String {
        match (self.names.first(), self.id()) {
            (Some(name), Some(id)) => format!("{name} ({})", id.short()),
            _ => self.label(),
        }
    }

    /// The digest that identifies it: its index's, else its first platform's manifest's (or
    /// config's), else the manifest of an absent platform.
    pub fn id(&self) -> Option<&Digest> {
        self.index
            .as_ref()
            .map(|index| &index.digest)
            .or_else(|| self.platforms.first().map(PlatformImage::id))
            .or_else(|| self.absent_platforms.first().map(|absent| &absent.manifest))
    }

    /// The platforms present, as text.
    pub fn platform_names(&self) -> Vec<String> {
        self.platforms
            .iter()
            .map(|platform| platform.platform.to_string())
            .collect()
    }
}

/// A manifest an image index names beside its platforms (a buildx attestation, a signature),
/// with every blob it names, all small JSON read whole.
#[derive(Debug, Clone)]
pub struct Attachment {
    pub manifest: RawBlob,
    pub blobs: Vec<RawBlob>,
}

/// Something an index names that is not pushed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// `linux/arm64`, `attestation manifest sha256:0123456789ab`.
    pub what: String,
    pub why: DropReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// Its blobs (or some of them) are not in the archive.
    NotInArchive,
    /// `--platform` chose another platform.
    PlatformChosen,
}

/// An `index.json` entry that is not a pushable image: an artifact, or an entry whose graph
/// cannot be read. Its problem is only reported when it is the entry asked for.
#[derive(Debug, Clone)]
pub struct OtherEntry {
    pub names: Vec<String>,
    pub bare_tags: Vec<String>,
    pub digest: Digest,
    pub kind: OtherKind,
    pub(crate) descriptor: Descriptor,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OtherKind {
    /// `signature (application/vnd.dev.cosign...)`
    Artifact(String),
    /// Why it could not be read as an image.
    Unreadable(String),
}

impl OtherEntry {
    /// Its first name or tag, else its short digest.
    pub fn name(&self) -> String {
        self.names
            .first()
            .or(self.bare_tags.first())
            .cloned()
            .unwrap_or_else(|| self.digest.short())
    }

    /// `sbom (SBOM (application/spdx+json))`, `sha256:0123456789ab (unreadable)`.
    pub fn label(&self) -> String {
        let name = self.name();
        match &self.kind {
            OtherKind::Artifact(kind) => format!("{name} ({kind})"),
            OtherKind::Unreadable(_) => format!("{name} (unreadable)"),
        }
    }
}

/// A platform named by an index whose manifest, config or a layer is missing from the archive.
#[derive(Debug, Clone)]
pub struct AbsentPlatform {
    pub platform: Option<Platform>,
    pub manifest: Digest,
    /// The member that is missing.
    pub missing: String,
}

/// Everything needed to push one platform of an image.
#[derive(Debug, Clone)]
pub struct PlatformImage {
    pub platform: Platform,
    /// The manifest as the archive stored it (OCI layouts), to push byte for byte.
    pub manifest: Option<RawBlob>,
    /// The config; its media type is the stored one, or the OCI config type for docker archives.
    pub config: RawBlob,
    pub layers: Vec<Layer>,
}

impl PlatformImage {
    /// The digest that identifies this platform: its manifest's, else its config's.
    pub fn id(&self) -> &Digest {
        self.manifest
            .as_ref()
            .map_or(&self.config.digest, |manifest| &manifest.digest)
    }
}

/// Small JSON held whole: a manifest, index or config, with the exact bytes its digest covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawBlob {
    pub media_type: String,
    pub digest: Digest,
    pub bytes: Vec<u8>,
}

impl RawBlob {
    pub(crate) fn new(media_type: impl Into<String>, bytes: Vec<u8>) -> Self {
        Self {
            media_type: media_type.into(),
            digest: Digest::of_bytes(&bytes),
            bytes,
        }
    }

    pub fn size(&self) -> u64 {
        self.bytes.len() as u64
    }
}

/// How a layer's bytes are stored, judged by their magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

/// One layer: where its bytes are and what they must hash to.
#[derive(Debug, Clone)]
pub struct Layer {
    pub location: BlobLocation,
    /// The media type the archive's manifest gave it; docker archives record none.
    pub media_type: Option<String>,
    pub compression: Compression,
    /// The sha256 of the uncompressed tar, from the config's `rootfs.diff_ids`.
    pub diff_id: Digest,
    /// The sha256 of the stored bytes, when known without reading them: OCI layouts name blobs
    /// by digest, and an uncompressed layer's digest is its diff_id. `None` for a compressed
    /// layer of a docker archive until `Archive::resolve_digests` hashes it.
    pub digest: Option<Digest>,
}

impl Layer {
    /// Bytes stored.
    pub fn size(&self) -> u64 {
        self.location.len
    }

    /// The recorded media type, else the OCI layer type for the stored compression.
    pub fn media_type_or_default(&self) -> &str {
        self.media_type
            .as_deref()
            .unwrap_or_else(|| oci_layer_type(self.compression).as_str())
    }

    /// The layer's identity across platforms and in what a push sent: the stored digest, or the
    /// diff_id while a compressed docker-archive layer's digest is not yet resolved.
    pub fn stored_digest(&self) -> &Digest {
        self.digest.as_ref().unwrap_or(&self.diff_id)
    }

    /// How errors and progress name this layer: its stored digest and member.
    pub fn describe(&self) -> String {
        format!("layer {} ({})", self.stored_digest(), self.location.member)
    }
}

pub fn oci_layer_type(compression: Compression) -> MediaType {
    match compression {
        Compression::None => MediaType::OciLayer,
        Compression::Gzip => MediaType::OciLayerGzip,
        Compression::Zstd => MediaType::OciLayerZstd,
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ManifestJson<'a> {
    schema_version: u32,
    media_type: MediaType,
    config: DescriptorJson<'a>,
    layers: Vec<DescriptorJson<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DescriptorJson<'a> {
    pub media_type: &'a str,
    pub digest: &'a Digest,
    pub size: u64,
}

/// An OCI image manifest for a config and layers given as (media type, digest, size).
pub(crate) fn oci_manifest(config: &RawBlob, layers: &[(&str, &Digest, u64)]) -> RawBlob {
    let manifest = ManifestJson {
        schema_version: 2,
        media_type: MediaType::OciManifest,
        config: DescriptorJson {
            media_type: &config.media_type,
            digest: &config.digest,
            size: config.size(),
        },
        layers: layers
            .iter()
            .map(|&(media_type, digest, size)| DescriptorJson {
                media_type,
                digest,
                size,
            })
            .collect(),
    };
    let bytes =
        serde_json::to_vec(&manifest).expect("a manifest of strings and numbers serialises");
    RawBlob::new(MediaType::OciManifest.as_str(), bytes)
}
