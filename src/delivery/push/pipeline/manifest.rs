//! The manifests a push sends: the archive's own bytes when the layers went as stored, a new
//! OCI manifest when they were re-encoded, and the index over several platforms.

use std::collections::HashMap;

use serde::Serialize;

use crate::image::archive::{self, Archive, Image, Platform, PlatformImage, RawBlob};
use crate::image::digest::Digest;
use crate::image::oci::MediaType;
use crate::plumbing::error::{Error, ExitCode, Result};

/// A layer as the pushed manifest describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Descriptor {
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
}

impl Descriptor {
    pub(crate) fn new(media_type: &str, digest: Digest, size: u64) -> Self {
        Self {
            media_type: media_type.to_string(),
            digest,
            size,
        }
    }
}

/// The manifest for `platform`, given each layer's descriptor as sent (keyed by stored digest).
pub(crate) fn manifest_for(
    archive: &Archive,
    platform: &PlatformImage,
    sent: &HashMap<Digest, Descriptor>,
) -> Result<RawBlob> {
    let as_sent = platform
        .layers
        .iter()
        .map(|layer| {
            sent.get(layer.stored_digest()).ok_or_else(|| {
                // Every layer is uploaded (or found) before a manifest is built: a gap is our bug,
                // and a manifest without that layer would tag a broken image.
                Error::new(
                    ExitCode::Failure,
                    format!("{} was not sent before its manifest", layer.describe()),
                )
            })
        })
        .collect::<Result<Vec<&Descriptor>>>()?;
    let unchanged = as_sent
        .iter()
        .zip(&platform.layers)
        .all(|(sent, layer)| layer.digest.as_ref() == Some(&sent.digest));
    if unchanged {
        return archive.manifest(platform).map_err(Error::from);
    }
    let layers: Vec<(&str, &Digest, u64)> = as_sent
        .iter()
        .map(|d| (d.media_type.as_str(), &d.digest, d.size))
        .collect();
    Ok(archive::oci_manifest(&platform.config, &layers))
}

/// The index to tag for a multi-platform image: the archive's own when every manifest went
/// unchanged, else a new OCI index of the platforms pushed.
pub(crate) fn index_for(image: &Image, manifests: &[RawBlob]) -> RawBlob {
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
        media_type: MediaType::OciIndex,
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
    let bytes = serde_json::to_vec(&index).expect("an index of strings and numbers serialises");
    RawBlob::new(MediaType::OciIndex.as_str(), bytes)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IndexJson<'a> {
    schema_version: u32,
    media_type: MediaType,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::archive::Source;

    /// An OCI layout of one uncompressed layer, written as the spec lays it out.
    fn layout(dir: &std::path::Path) -> Archive {
        let blob = |bytes: &[u8]| {
            let digest = Digest::of_bytes(bytes);
            let blobs = dir.join("blobs/sha256");
            std::fs::create_dir_all(&blobs).unwrap();
            std::fs::write(blobs.join(digest.hex()), bytes).unwrap();
            (digest, bytes.len())
        };
        let mut layer = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(5);
        header.set_cksum();
        layer
            .append_data(&mut header, "hello", &b"world"[..])
            .unwrap();
        let layer = layer.into_inner().unwrap();
        let (layer_digest, layer_size) = blob(&layer);
        let config = serde_json::json!({
            "architecture": "amd64", "os": "linux",
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        });
        let (config_digest, config_size) = blob(config.to_string().as_bytes());
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": config_digest, "size": config_size},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": layer_digest, "size": layer_size}],
        });
        let (manifest_digest, manifest_size) = blob(manifest.to_string().as_bytes());
        let index = serde_json::json!({
            "schemaVersion": 2,
            "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "digest": manifest_digest, "size": manifest_size,
                           "annotations": {"org.opencontainers.image.ref.name": "dev"}}],
        });
        std::fs::write(dir.join("index.json"), index.to_string()).unwrap();
        std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
        Archive::open(&Source::Path(dir.to_path_buf())).unwrap()
    }

    #[test]
    fn layers_sent_as_stored_keep_the_archives_manifest_and_a_missing_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let archive = layout(dir.path());
        let image = archive.select(None, None).unwrap();
        let platform = &image.platforms[0];
        let layer = &platform.layers[0];

        let mut sent = HashMap::new();
        let err = manifest_for(&archive, platform, &sent).unwrap_err();
        assert_eq!(
            err.message(),
            format!("{} was not sent before its manifest", layer.describe())
        );

        let as_stored = Descriptor::new(
            layer.media_type_or_default(),
            layer.stored_digest().clone(),
            layer.size(),
        );
        sent.insert(layer.stored_digest().clone(), as_stored);
        let manifest = manifest_for(&archive, platform, &sent).unwrap();
        assert_eq!(manifest.bytes, archive.manifest(platform).unwrap().bytes);
    }
}
