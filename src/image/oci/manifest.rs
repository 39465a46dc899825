//! The JSON an image is made of, parsed from bytes (reusable by any reader of these formats):
//! `index.json`, manifests and indexes, their descriptors; a manifest's own media type; and
//! what tells a container image from an artifact (signature, SBOM, attestation, chart).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::platform::Platform;
use super::{MediaType, is_layer_type};
use crate::image::digest::Digest;
use crate::image::go_json::null_as_empty;

/// The type of bytes nobody typed: Docker 1.10 to 1.12 gave image configs this one.
const GENERIC_BYTES: &str = "application/octet-stream";

/// buildx's annotation on an attestation manifest inside an image index.
const REFERENCE_TYPE: &str = "vnd.docker.reference.type";
/// The value BuildKit gives [`REFERENCE_TYPE`] (moby/buildkit `util/attestation`).
const ATTESTATION_MANIFEST: &str = "attestation-manifest";
/// The platform manifest a BuildKit attestation describes.
const REFERENCE_DIGEST: &str = "vnd.docker.reference.digest";

/// A content descriptor, as index entries and manifests write them.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Descriptor {
    pub media_type: Option<String>,
    pub digest: Digest,
    pub size: u64,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub annotations: BTreeMap<String, String>,
    pub platform: Option<PlatformJson>,
    pub artifact_type: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct PlatformJson {
    os: Option<String>,
    architecture: Option<String>,
    variant: Option<String>,
}

impl Descriptor {
    pub(crate) fn platform(&self) -> Option<Platform> {
        self.platform.as_ref().map(|p| {
            Platform::from_parts(
                p.os.as_deref(),
                p.architecture.as_deref(),
                p.variant.as_deref(),
            )
        })
    }

    /// Where an OCI layout keeps the blob: `blobs/sha256/<hex>`.
    pub(crate) fn blob_path(&self) -> String {
        format!("blobs/sha256/{}", self.digest.hex())
    }

    /// For a BuildKit attestation manifest in an index: the platform manifest it describes.
    pub(crate) fn attestation_subject(&self) -> Option<Digest> {
        let is_attestation =
            self.annotations.get(REFERENCE_TYPE).map(String::as_str) == Some(ATTESTATION_MANIFEST);
        is_attestation
            .then(|| self.annotations.get(REFERENCE_DIGEST)?.parse().ok())
            .flatten()
    }

    /// Attestations and signatures that buildx and others put beside an index's platforms.
    pub(crate) fn is_attachment(&self) -> bool {
        self.annotations.contains_key(REFERENCE_TYPE)
            || self.artifact_type.is_some()
            || self
                .platform()
                .is_some_and(|p| p.os == "unknown" && p.architecture == "unknown")
    }
}

#[derive(Debug, Deserialize)]
struct IndexJson {
    /// Docker 25/26 may write `null` here: no OCI entries, not a broken file.
    manifests: Option<Vec<Descriptor>>,
}

/// The entries of an OCI layout's `index.json`; a null or missing `manifests` is none.
pub(crate) fn parse_index_json(bytes: &[u8]) -> serde_json::Result<Vec<Descriptor>> {
    let index: IndexJson = serde_json::from_slice(bytes)?;
    Ok(index.manifests.unwrap_or_default())
}

/// A manifest or an index, told apart by their fields as media types may be missing.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ManifestOrIndex {
    pub schema_version: Option<u64>,
    pub media_type: Option<String>,
    pub artifact_type: Option<String>,
    pub config: Option<Descriptor>,
    pub layers: Option<Vec<Descriptor>>,
    pub manifests: Option<Vec<Descriptor>>,
    /// OCI 1.1: the manifest this one refers to (a signature's, an SBOM's image); kept as JSON
    /// so that a malformed one does not make the manifest unreadable (see `subject_digest`).
    subject: Option<serde_json::Value>,
}

/// Parses a manifest or index blob.
pub(crate) fn parse_manifest(bytes: &[u8]) -> serde_json::Result<ManifestOrIndex> {
    serde_json::from_slice(bytes)
}

impl ManifestOrIndex {
    pub(crate) fn is_index(&self) -> bool {
        self.manifests.is_some()
            || self
                .media_type
                .as_deref()
                .and_then(MediaType::parse)
                .is_some_and(MediaType::is_index)
    }

    /// OCI 1.1: the digest of the manifest this one refers to, when `subject` names one.
    pub(crate) fn subject_digest(&self) -> Option<Digest> {
        self.subject.as_ref()?.get("digest")?.as_str()?.parse().ok()
    }

    pub(crate) fn layers(&self) -> &[Descriptor] {
        self.layers.as_deref().unwrap_or_default()
    }

    pub(crate) fn children(&self) -> &[Descriptor] {
        self.manifests.as_deref().unwrap_or_default()
    }

    /// The Content-Type a registry must get for these bytes: the `mediaType` they declare, or
    /// for bytes that declare none, the OCI type of their shape (docker's types require the
    /// field, so only OCI fits). Never the type of the descriptor that points here: the
    /// registry checks the bytes, not our caller. `Err` says why no registry would take them.
    pub(crate) fn own_media_type(&self) -> Result<&str, String> {
        if self.schema_version != Some(2) {
            return Err(match self.schema_version {
                Some(1) => "it is a docker schema 1 manifest, which registries no longer accept; \
                            convert it with `skopeo copy --format v2s2`"
                    .to_string(),
                Some(other) => format!("its schemaVersion is {other}, not 2"),
                None => "it has no schemaVersion, so it is not a manifest or index".to_string(),
            });
        }
        let (fits, shape): (fn(MediaType) -> bool, _) = if self.is_index() {
            (MediaType::is_index, MediaType::OciIndex)
        } else {
            (MediaType::is_image_manifest, MediaType::OciManifest)
        };
        match self.media_type.as_deref() {
            None => Ok(shape.as_str()),
            Some(declared) if MediaType::parse(declared).is_some_and(fits) => Ok(declared),
            Some(declared) => Err(format!(
                "its mediaType is {declared}, which is not {}",
                if self.is_index() {
                    "an image index's"
                } else {
                    "an image manifest's"
                }
            )),
        }
    }

    /// For a manifest: what it is when it is not a container image (`None` for an image, or
    /// when only the config's content can tell). Decided from the manifest alone; a config
    /// without `rootfs` is caught later.
    pub(crate) fn artifact_kind(&self) -> Option<String> {
        if let Some(artifact_type) = &self.artifact_type {
            return Some(describe_artifact(artifact_type));
        }
        if let Some(layer) = self
            .layers()
            .iter()
            .filter_map(|layer| layer.media_type.as_deref())
            .find(|media_type| !is_layer_type(media_type))
        {
            return Some(describe_artifact(layer));
        }
        // Docker 1.10 to 1.12 labelled the config `application/octet-stream`: filesystem
        // layers under a generic config type are an image when the config holds a `rootfs`.
        let config_type = self
            .config
            .as_ref()
            .and_then(|config| config.media_type.as_deref())
            .unwrap_or(MediaType::OciConfig.as_str());
        if config_type == GENERIC_BYTES
            || MediaType::parse(config_type).is_some_and(MediaType::is_image_config)
        {
            None
        } else {
            Some(describe_artifact(config_type))
        }
    }
}

/// Whether a config's bytes are an image config: an object with a `rootfs`. Artifacts use
/// `{}` or the empty descriptor's bytes under an image config type.
pub(crate) fn is_image_config(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|config| {
        config
            .get("rootfs")
            .is_some_and(serde_json::Value::is_object)
    })
}

/// `a cosign signature (application/vnd.dev.cosign...)`: a word for people, and the type.
pub(crate) fn describe_artifact(media_type: &str) -> String {
    let kind = if media_type.contains("cosign") && media_type.contains("sig") {
        "signature"
    } else if media_type.contains("in-toto") {
        "attestation"
    } else if media_type.contains("spdx") || media_type.contains("cyclonedx") {
        "SBOM"
    } else if media_type.contains("helm") {
        "Helm chart"
    } else if media_type.contains("wasm") {
        "WebAssembly module"
    } else {
        "artifact"
    };
    format!("{kind} ({media_type})")
}

#[cfg(test)]
mod tests {
    use super::*;

    const OCI_MANIFEST: &str = MediaType::OciManifest.as_str();
    const OCI_INDEX: &str = MediaType::OciIndex.as_str();
    const OCI_CONFIG: &str = MediaType::OciConfig.as_str();
    const DOCKER_MANIFEST: &str = MediaType::DockerManifest.as_str();
    const DOCKER_CONFIG: &str = MediaType::DockerConfig.as_str();

    fn manifest(json: &str) -> ManifestOrIndex {
        parse_manifest(json.as_bytes()).unwrap()
    }

    #[test]
    fn a_null_or_missing_manifests_list_is_no_entries() {
        assert!(
            parse_index_json(br#"{"schemaVersion":2,"manifests":null}"#)
                .unwrap()
                .is_empty()
        );
        assert!(
            parse_index_json(br#"{"schemaVersion":2}"#)
                .unwrap()
                .is_empty()
        );
        assert!(parse_index_json(br#"{"manifests":"x"}"#).is_err());
    }

    #[test]
    fn the_media_type_comes_from_the_bytes_or_their_shape() {
        let docker = manifest(&format!(
            r#"{{"schemaVersion":2,"mediaType":"{DOCKER_MANIFEST}","config":{{"mediaType":"{DOCKER_CONFIG}","digest":"sha256:{0}","size":1}},"layers":[]}}"#,
            "a".repeat(64)
        ));
        assert_eq!(docker.own_media_type(), Ok(DOCKER_MANIFEST));
        let bare = manifest(r#"{"schemaVersion":2,"layers":[]}"#);
        assert_eq!(bare.own_media_type(), Ok(OCI_MANIFEST));
        let index = manifest(r#"{"schemaVersion":2,"manifests":[]}"#);
        assert_eq!(index.own_media_type(), Ok(OCI_INDEX));
        let wrong = manifest(r#"{"schemaVersion":2,"mediaType":"text/plain","layers":[]}"#);
        assert!(wrong.own_media_type().unwrap_err().contains("text/plain"));
        let v1 = manifest(r#"{"schemaVersion":1}"#);
        assert!(v1.own_media_type().unwrap_err().contains("schema 1"));
    }

    #[test]
    fn artifacts_are_told_from_images() {
        let digest = format!("sha256:{}", "b".repeat(64));
        let with = |config: &str, layer: &str| {
            manifest(&format!(
                r#"{{"schemaVersion":2,"config":{{"mediaType":"{config}","digest":"{digest}","size":2}},"layers":[{{"mediaType":"{layer}","digest":"{digest}","size":2}}]}}"#
            ))
        };
        assert_eq!(
            with(OCI_CONFIG, "application/vnd.oci.image.layer.v1.tar+gzip").artifact_kind(),
            None
        );
        assert_eq!(
            with(
                DOCKER_CONFIG,
                "application/vnd.docker.image.rootfs.diff.tar.gzip"
            )
            .artifact_kind(),
            None
        );
        let empty = with("application/vnd.oci.empty.v1+json", "application/spdx+json");
        assert_eq!(
            empty.artifact_kind().as_deref(),
            Some("SBOM (application/spdx+json)")
        );
        let cosign = with(
            OCI_CONFIG,
            "application/vnd.dev.cosign.simplesigning.v1+json",
        );
        assert!(cosign.artifact_kind().unwrap().starts_with("signature"));
        let docker_1_10 = with(
            "application/octet-stream",
            "application/vnd.docker.image.rootfs.diff.tar.gzip",
        );
        assert_eq!(
            docker_1_10.artifact_kind(),
            None,
            "the config's content decides"
        );
        let flux = with(
            "application/vnd.cncf.flux.config.v1+json",
            "application/vnd.oci.image.layer.v1.tar+gzip",
        );
        assert_eq!(
            flux.artifact_kind().as_deref(),
            Some("artifact (application/vnd.cncf.flux.config.v1+json)")
        );
        assert!(is_image_config(
            br#"{"rootfs":{"type":"layers","diff_ids":[]}}"#
        ));
        assert!(!is_image_config(b"{}"));
    }
}
