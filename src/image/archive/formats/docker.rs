//! Docker archives: `manifest.json` (`[{"Config","RepoTags","Layers"}]`) as written by docker
//! save (legacy and 25+), podman/skopeo, nix dockerTools, jib (lowercase keys before mid-2020)
//! and crane.

use serde::Deserialize;

use crate::image::archive::config::ConfigFacts;
use crate::image::archive::error::ArchiveError;
use crate::image::archive::image::{Image, PlatformImage, RawBlob};
use crate::image::archive::input::members::Container;
use crate::image::archive::input::tar_index::clean_path;
use crate::image::archive::layer::layer_at;
use crate::image::digest::Digest;
use crate::image::oci::MediaType;

pub(crate) const MANIFEST_JSON: &str = "manifest.json";

/// One image entry of `manifest.json`; paths are archive members. Jib wrote the keys in
/// lowercase (`config`, `repoTags`, `layers`) until mid-2020.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct ManifestEntry {
    #[serde(alias = "config")]
    pub config: String,
    #[serde(default, alias = "repoTags")]
    pub repo_tags: Option<Vec<String>>,
    #[serde(default, alias = "layers")]
    pub layers: Option<Vec<String>>,
}

/// Parses `manifest.json`'s bytes.
pub(crate) fn parse_manifest_json(bytes: &[u8]) -> serde_json::Result<Vec<ManifestEntry>> {
    serde_json::from_slice(bytes)
}

/// Reads and parses `manifest.json`.
pub(crate) fn read_manifest_json(
    container: &Container,
) -> Result<Vec<ManifestEntry>, ArchiveError> {
    let location = container.require(MANIFEST_JSON, "an image archive")?;
    let bytes = container.read_small(&location, "manifest.json")?;
    parse_manifest_json(&bytes).map_err(|source| ArchiveError::Json {
        archive: container.name.to_string(),
        member: MANIFEST_JSON.to_string(),
        what: "docker manifest.json",
        source,
    })
}

/// The images `manifest.json` describes, one platform each.
pub(crate) fn images(
    container: &Container,
    entries: &[ManifestEntry],
) -> Result<Vec<Image>, ArchiveError> {
    entries
        .iter()
        .map(|entry| image(container, entry))
        .collect()
}

fn image(container: &Container, entry: &ManifestEntry) -> Result<Image, ArchiveError> {
    let config_location = container.require(&entry.config, MANIFEST_JSON)?;
    let config_bytes = container.read_small(&config_location, "an image config")?;
    let config = RawBlob::new(MediaType::OciConfig.as_str(), config_bytes);
    if let Some(named) = digest_in_blob_path(&entry.config)
        && named != config.digest
    {
        return Err(ArchiveError::digest_mismatch(
            &container.name,
            &config_location.member,
            "digest",
            &named,
            &config.digest,
        ));
    }
    let facts = ConfigFacts::parse(container, &config.bytes, &config_location.member)?;
    let layer_paths = entry.layers.as_deref().unwrap_or_default();
    facts.check_layer_count(container, &config_location.member, layer_paths.len())?;
    let layers = layer_paths
        .iter()
        .zip(&facts.diff_ids)
        .map(|(path, diff_id)| {
            let location = container.require(path, MANIFEST_JSON)?;
            layer_at(location, None, diff_id.clone(), digest_in_blob_path(path))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Image {
        names: entry.repo_tags.clone().unwrap_or_default(),
        bare_tags: Vec::new(),
        index: None,
        platforms: vec![PlatformImage {
            platform: facts.platform,
            manifest: None,
            config,
            layers,
        }],
        absent_platforms: Vec::new(),
        attachments: Vec::new(),
        dropped: Vec::new(),
    })
}

/// The digest an OCI layout path (`blobs/sha256/<hex>`) names, as docker 25+ and containerd
/// write in `manifest.json`.
pub(crate) fn digest_in_blob_path(path: &str) -> Option<Digest> {
    clean_path(path)
        .strip_prefix("blobs/sha256/")
        .and_then(|hex| format!("sha256:{hex}").parse().ok())
}
