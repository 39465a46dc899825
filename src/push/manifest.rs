//! The manifests a push sends: the archive's own bytes when the layers went as stored, a new
//! OCI manifest when they were re-encoded, and the index over several platforms.

use std::collections::HashMap;

use serde::Serialize;

use crate::archive::{self, Archive, Image, OCI_INDEX, Platform, PlatformImage, RawBlob};
use crate::digest::Digest;
use crate::error::Result;

/// A layer as the pushed manifest describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Descriptor {
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
}

impl Descriptor {
    pub fn new(media_type: &str, digest: Digest, size: u64) -> Self {
        Self {
            media_type: media_type.to_string(),
            digest,
            size,
        }
    }
}

/// The manifest for `platform`, given each layer's descriptor as sent (keyed by stored digest).
pub fn manifest_for(
    archive: &Archive,
    platform: &PlatformImage,
    sent: &HashMap<Digest, Descriptor>,
) -> Result<RawBlob> {
    let as_sent: Vec<&Descriptor> = platform
        .layers
        .iter()
        .filter_map(|layer| sent.get(layer.digest.as_ref().unwrap_or(&layer.diff_id)))
        .collect();
    let unchanged = as_sent.len() == platform.layers.len()
        && as_sent
            .iter()
            .zip(&platform.layers)
            .all(|(sent, layer)| layer.digest.as_ref() == Some(&sent.digest));
    if unchanged {
        return archive
            .manifest(platform)
            .map_err(crate::error::Error::from);
    }
    let layers: Vec<(&str, &Digest, u64)> = as_sent
        .iter()
        .map(|d| (d.media_type.as_str(), &d.digest, d.size))
        .collect();
    Ok(archive::oci_manifest(&platform.config, &layers))
}

/// The index to tag for a multi-platform image: the archive's own when every manifest went
/// unchanged, else a new OCI index of the platforms pushed.
pub fn index_for(image: &Image, manifests: &[RawBlob]) -> RawBlob {
    let unchanged = image
        .platforms
        .iter()
        .zip(manifests)
        .all(|(platform, sent)| {
            platform
                .manifest
                .as_ref()
                .is_some_and(|original| original.digest == sent.digest)
        });
    if let Some(index) = image.index.as_ref().filter(|_| unchanged) {
        return index.clone();
    }
    let index = IndexJson {
        schema_version: 2,
        media_type: OCI_INDEX,
        manifests: image
            .platforms
            .iter()
            .zip(manifests)
            .map(|(platform, manifest)| IndexEntry {
                media_type: &manifest.media_type,
                digest: &manifest.digest,
                size: manifest.size(),
                platform: PlatformJson::from(&platform.platform),
            })
            .collect(),
    };
    // Serialising plain strings and numbers cannot fail.
    RawBlob::new(OCI_INDEX, serde_json::to_vec(&index).unwrap_or_default())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IndexJson<'a> {
    schema_version: u32,
    media_type: &'a str,
    manifests: Vec<IndexEntry<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IndexEntry<'a> {
    media_type: &'a str,
    digest: &'a Digest,
    size: u64,
    platform: PlatformJson<'a>,
}

#[derive(Serialize)]
struct PlatformJson<'a> {
    os: &'a str,
    architecture: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    variant: Option<&'a str>,
}

impl<'a> From<&'a Platform> for PlatformJson<'a> {
    fn from(platform: &'a Platform) -> Self {
        Self {
            os: &platform.os,
            architecture: &platform.architecture,
            variant: platform.variant.as_deref(),
        }
    }
}
