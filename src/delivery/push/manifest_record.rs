//! What a push of an engine's image left in each registry: for (registry, engine image ID,
//! encoding), the exact manifest bytes tagged and the repository they went to. With it, an
//! unchanged image is re-pushed by checking its blobs and sending the same bytes again: no export.
//!
//! Kept beside the record of sent blobs, in a file of its own, merged under a lock like it. Only a
//! hint: every blob it names is checked against the registry before the manifest is sent, and a
//! file we cannot read is empty.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::record_file::RecordFile;
use super::stream::Encoding;
use crate::image::digest::Digest;
use crate::image::oci;
use crate::image::reference::RegistryHost;

const FILE_NAME: &str = "sent-manifests-v1.json";
/// A manifest is ~1 KB; the oldest entries go past this.
const MAX_ENTRIES: usize = 1_000;

/// A manifest as it was tagged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SentManifest {
    pub media_type: String,
    /// The bytes, exactly as sent (manifests are JSON, so UTF-8).
    pub manifest: String,
    pub repository: String,
}

/// A blob a manifest names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NamedBlob {
    pub digest: Digest,
    pub size: u64,
}

impl SentManifest {
    /// The config then the layers it names; `None` when it is not an image manifest.
    pub(super) fn blobs(&self) -> Option<Vec<NamedBlob>> {
        let manifest = oci::parse_manifest(self.manifest.as_bytes()).ok()?;
        let config = manifest.config.as_ref()?;
        Some(
            std::iter::once(config)
                .chain(manifest.layers())
                .map(|d| NamedBlob {
                    digest: d.digest.clone(),
                    size: d.size,
                })
                .collect(),
        )
    }
}

pub(super) struct SentManifests {
    record: RecordFile<SentManifest>,
}

impl SentManifests {
    /// The record kept in `dir` (the settings' cache directory); no directory means no record.
    pub(super) fn load_in(dir: Option<&Path>) -> Self {
        Self::load(dir.map(|dir| dir.join(FILE_NAME)))
    }

    fn load(path: Option<PathBuf>) -> Self {
        Self {
            record: RecordFile::load(path, MAX_ENTRIES, |_| true),
        }
    }

    pub(super) fn get(
        &self,
        host: &RegistryHost,
        image_id: &str,
        encoding: Encoding,
    ) -> Option<&SentManifest> {
        self.record.get(&key(host, image_id, encoding))
    }

    pub(super) fn record(
        &mut self,
        host: &RegistryHost,
        image_id: &str,
        encoding: Encoding,
        manifest: SentManifest,
    ) {
        self.record.record(key(host, image_id, encoding), manifest);
    }

    /// Merges this run's entries into the file (see `RecordFile::save`).
    pub(super) fn save(&self) -> std::io::Result<()> {
        self.record.save()
    }
}

fn key(host: &RegistryHost, image_id: &str, encoding: Encoding) -> String {
    let encoding = match encoding {
        Encoding::AsStored => "stored",
        Encoding::Gzip => "gzip",
        Encoding::Zstd => "zstd",
    };
    format!("{host} {image_id} {encoding}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(repo: &str) -> SentManifest {
        let config = Digest::of_bytes(b"config");
        let layer = Digest::of_bytes(b"layer");
        SentManifest {
            media_type: crate::image::oci::MediaType::OciManifest.as_str().into(),
            manifest: format!(
                r#"{{"schemaVersion":2,"config":{{"mediaType":"x","digest":"{config}","size":6}},"layers":[{{"mediaType":"y","digest":"{layer}","size":5}}]}}"#
            ),
            repository: repo.into(),
        }
    }

    #[test]
    fn a_recorded_manifest_survives_a_save_per_host_image_and_encoding() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        let host = RegistryHost::parse("localhost:5001").unwrap();
        let mut record = SentManifests::load(Some(path.clone()));
        record.record(&host, "sha256:1", Encoding::AsStored, manifest("app"));
        record.save().unwrap();
        let record = SentManifests::load(Some(path));
        let found = record.get(&host, "sha256:1", Encoding::AsStored).unwrap();
        assert_eq!(found, &manifest("app"));
        assert_eq!(
            found.blobs().unwrap(),
            [
                NamedBlob {
                    digest: Digest::of_bytes(b"config"),
                    size: 6
                },
                NamedBlob {
                    digest: Digest::of_bytes(b"layer"),
                    size: 5
                }
            ]
        );
        assert!(record.get(&host, "sha256:1", Encoding::Gzip).is_none());
        assert!(record.get(&host, "sha256:2", Encoding::AsStored).is_none());
    }
}
