//! The probe image (one tiny gzip layer, built in memory, the same bytes every time) and its round
//! trip: pushed with the registry client to a repository of its own, read back by digest, untagged.

use std::io::Write;

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use futures_util::stream;

use crate::image::digest::Digest;
use crate::image::oci::{MediaType, Platform};
use crate::image::registry::{Deletion, RegistryClient};
use crate::plumbing::error::{Context, ExitCode, Result};

/// The probe's own repository, so that nothing of the user's is touched (in the project, on
/// OpenShift).
pub(super) const PROBE_REPOSITORY: &str = "kubectl-registry-probe";
pub(super) const PROBE_TAG: &str = "doctor";
const PROBE_FILE: &str = "kubectl-registry-probe";
const PROBE_TEXT: &[u8] = b"written by kubectl registry doctor to check that this registry works\n";

/// A whole image: its blobs and the manifest that names them.
pub(super) struct ProbeImage {
    config: Bytes,
    layer: Bytes,
    pub manifest: Bytes,
}

impl ProbeImage {
    /// One layer holding one small file; a config for the platform this binary runs on.
    pub(super) fn build() -> Result<Self> {
        let tar = layer_tar().context(ExitCode::Failure, || "building the probe image's layer")?;
        let diff_id = Digest::of_bytes(&tar);
        let mut gzip = GzEncoder::new(Vec::new(), Compression::best());
        gzip.write_all(&tar)
            .context(ExitCode::Failure, || "compressing the probe image's layer")?;
        let layer = Bytes::from(
            gzip.finish()
                .context(ExitCode::Failure, || "compressing the probe image's layer")?,
        );
        let config = Bytes::from(
            serde_json::json!({
                "architecture": Platform::host().architecture,
                "os": "linux",
                "config": {},
                "rootfs": {"type": "layers", "diff_ids": [diff_id.as_str()]},
            })
            .to_string(),
        );
        let manifest = Bytes::from(
            serde_json::json!({
                "schemaVersion": 2,
                "mediaType": MediaType::OciManifest,
                "config": descriptor(MediaType::OciConfig, &config),
                "layers": [descriptor(MediaType::OciLayerGzip, &layer)],
            })
            .to_string(),
        );
        Ok(Self {
            config,
            layer,
            manifest,
        })
    }

    /// Bytes in all: config, layer and manifest.
    pub(super) fn size(&self) -> usize {
        self.config.len() + self.layer.len() + self.manifest.len()
    }
}

/// Pushes the probe (blobs, then the manifest under [`PROBE_TAG`]) and HEADs it back by digest.
/// Its digest; [`remove`] deletes it once nothing needs it.
pub(super) async fn push_and_read_back(
    client: &RegistryClient,
    repository: &str,
    image: &ProbeImage,
) -> Result<Digest> {
    for blob in [&image.config, &image.layer] {
        let digest = Digest::of_bytes(blob);
        let body = stream::iter([Ok::<_, std::io::Error>(blob.clone())]);
        client
            .push_blob(repository, &digest, blob.len() as u64, body)
            .await?;
    }
    let digest = client
        .put_manifest(
            repository,
            PROBE_TAG,
            MediaType::OciManifest.as_str(),
            image.manifest.clone(),
        )
        .await?;
    let answered = client.manifest_digest(repository, digest.as_str()).await?;
    if answered.as_deref() != Some(digest.as_str()) {
        let what = match answered {
            Some(other) => format!("answered digest {other}"),
            None => "answered 404".to_string(),
        };
        return Err(crate::plumbing::error::Error::new(
            ExitCode::Registry,
            format!(
                "the registry took manifest {} but a HEAD by its digest {what}",
                digest.short()
            ),
        )
        .with_hint("a proxy or cache in front of the registry may be answering for it"));
    }
    Ok(digest)
}

/// Deletes the probe's tag when the registry allows it, else its manifest (only the probe uses it).
pub(super) async fn remove(
    client: &RegistryClient,
    repository: &str,
    digest: &Digest,
) -> Result<Deletion> {
    match client.delete_manifest(repository, PROBE_TAG).await? {
        Deletion::Deleted => Ok(Deletion::Deleted),
        Deletion::Refused(_) => client.delete_manifest(repository, digest.as_str()).await,
    }
}

fn descriptor(media_type: MediaType, bytes: &[u8]) -> serde_json::Value {
    serde_json::json!({
        "mediaType": media_type,
        "digest": Digest::of_bytes(bytes).as_str(),
        "size": bytes.len(),
    })
}

/// A tar holding one small read-only file, with fixed times and owners.
fn layer_tar() -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_ustar();
    header.set_size(PROBE_TEXT.len() as u64);
    header.set_mode(0o444);
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    builder.append_data(&mut header, PROBE_FILE, PROBE_TEXT)?;
    builder.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_is_a_few_hundred_bytes_and_the_same_every_time() {
        let first = ProbeImage::build().unwrap();
        let second = ProbeImage::build().unwrap();
        assert_eq!(first.manifest, second.manifest);
        assert!(first.size() < 1024, "{} bytes", first.size());
        let manifest: serde_json::Value = serde_json::from_slice(&first.manifest).unwrap();
        assert_eq!(
            manifest["layers"][0]["digest"],
            Digest::of_bytes(&first.layer).as_str()
        );
    }
}
