//! The containers/image `dir:` transport, as `skopeo copy ... dir:DIR` and `podman save --format
//! docker-dir` (or `oci-dir`) write it: `manifest.json` is the manifest (or index) itself, blobs
//! are files named by their hex digest, an index's manifests `<hex>.manifest.json`, plus a
//! `version` file. It records no image name.

use super::docker::MANIFEST_JSON;
use super::oci;
use super::oci::{BlobNaming, Blobs, Entry};
use crate::image::archive::error::ArchiveError;
use crate::image::archive::image::{Image, RawBlob};
use crate::image::archive::input::members::Container;
use crate::image::oci::Descriptor;

/// Whether `manifest.json` holds a manifest object (this transport) rather than docker
/// save's list of images.
pub(crate) fn is_dir_transport(manifest_json: &[u8]) -> bool {
    manifest_json
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{')
}

/// The one image the directory holds (or the artifact it is, refused by name).
pub(crate) fn image(container: &Container, manifest_json: Vec<u8>) -> Result<Image, ArchiveError> {
    let blob = RawBlob::new(String::new(), manifest_json);
    let descriptor = Descriptor {
        media_type: None,
        digest: blob.digest.clone(),
        size: blob.size(),
        annotations: Default::default(),
        platform: None,
        artifact_type: None,
    };
    let blobs = Blobs::new(container, BlobNaming::DirTransport);
    match oci::resolve_manifest(&blobs, &descriptor, blob, MANIFEST_JSON)? {
        Entry::Image(image) => Ok(image),
        Entry::Artifact(kind) => Err(ArchiveError::NotAnImage {
            archive: container.name.to_string(),
            entry: MANIFEST_JSON.to_string(),
            kind,
        }),
    }
}
