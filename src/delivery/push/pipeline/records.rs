//! What we sent to each registry before, kept across runs, per (registry, key, encoding): the
//! blob each layer (diff_id) became, which spares a re-compression and names a repository to
//! mount from; and the manifest an engine's image (its ID) was tagged with, so an unchanged image
//! is re-pushed by checking its blobs and sending the same bytes again, with no export.
//!
//! Only hints: every entry is checked against the registry (HEAD, or a mount the registry
//! refuses) before it is used, a file we cannot read is treated as empty and an entry that
//! makes no sense is skipped. Concurrent pushes merge what they recorded under a file lock.

use std::fmt::Display;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::delivery::push::pipeline::record_file::RecordFile;
use crate::delivery::push::pipeline::stream::Encoding;
use crate::image::digest::Digest;
use crate::image::oci;
use crate::image::reference::RegistryHost;

/// One kind of record: its file in the cache directory, its cap, and which entries are usable.
pub(crate) trait Entry: Clone + PartialEq + Serialize + DeserializeOwned {
    const FILE_NAME: &'static str;
    /// The oldest entries go first past this.
    const MAX_ENTRIES: usize;
    fn is_usable(&self) -> bool;
}

/// A blob as a registry holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SentBlob {
    pub digest: Digest,
    pub size: u64,
    pub media_type: String,
    pub repository: String,
}

impl Entry for SentBlob {
    const FILE_NAME: &'static str = "sent-blobs-v1.json";
    /// A layer costs ~250 bytes, so the file stays under ~5 MB.
    const MAX_ENTRIES: usize = 20_000;
    fn is_usable(&self) -> bool {
        crate::image::registry::is_valid_repository(&self.repository)
    }
}

/// A manifest as it was tagged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SentManifest {
    pub media_type: String,
    /// The bytes, exactly as sent (manifests are JSON, so UTF-8).
    pub manifest: String,
    pub repository: String,
}

impl Entry for SentManifest {
    const FILE_NAME: &'static str = "sent-manifests-v1.json";
    /// A manifest is ~1 KB.
    const MAX_ENTRIES: usize = 1_000;
    fn is_usable(&self) -> bool {
        true
    }
}

/// A blob a manifest names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NamedBlob {
    pub digest: Digest,
    pub size: u64,
}

impl SentManifest {
    /// The config then the layers it names; `None` when it is not an image manifest.
    pub(crate) fn blobs(&self) -> Option<Vec<NamedBlob>> {
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

/// The record of one kind, as read at start and added to by this run.
pub(crate) struct Sent<V> {
    record: RecordFile<V>,
}

pub(crate) type SentBlobs = Sent<SentBlob>;
pub(crate) type SentManifests = Sent<SentManifest>;

impl<V: Entry> Sent<V> {
    /// The record kept in `dir` (the settings' cache directory); no directory means no record.
    pub(crate) fn load_in(dir: Option<&Path>) -> Self {
        Self::load(dir.map(|dir| dir.join(V::FILE_NAME)))
    }

    fn load(path: Option<PathBuf>) -> Self {
        Self {
            record: RecordFile::load(path, V::MAX_ENTRIES, V::is_usable),
        }
    }

    /// What was sent to `host` for `id` (a layer's diff_id, an image ID) in `encoding`.
    pub(crate) fn get(
        &self,
        host: &RegistryHost,
        id: impl Display,
        encoding: Encoding,
    ) -> Option<&V> {
        self.record.get(&key(host, id, encoding))
    }

    pub(crate) fn record(
        &mut self,
        host: &RegistryHost,
        id: impl Display,
        encoding: Encoding,
        value: V,
    ) {
        self.record.record(key(host, id, encoding), value);
    }

    /// Merges this run's entries into the file (see `RecordFile::save`).
    pub(crate) fn save(&mut self) -> std::io::Result<()> {
        self.record.save()
    }
}

fn key(host: &RegistryHost, id: impl Display, encoding: Encoding) -> String {
    let encoding = match encoding {
        Encoding::AsStored => "stored",
        Encoding::Gzip => "gzip",
        Encoding::Zstd => "zstd",
    };
    format!("{host} {id} {encoding}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(n: u8, repo: &str) -> SentBlob {
        SentBlob {
            digest: Digest::of_bytes(&[n]),
            size: u64::from(n),
            media_type: crate::image::oci::MediaType::OciLayerGzip.as_str().into(),
            repository: repo.into(),
        }
    }

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
    fn blobs_survive_a_save_and_load_per_host_and_encoding() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let host = RegistryHost::parse("localhost:5001").unwrap();
        let other = RegistryHost::parse("localhost:5002").unwrap();
        let diff_id = Digest::of_bytes(b"layer");
        let mut cache = SentBlobs::load(Some(path.clone()));
        cache.record(&host, &diff_id, Encoding::Gzip, blob(1, "app"));
        cache.save().unwrap();
        let cache = SentBlobs::load(Some(path.clone()));
        assert_eq!(
            cache.get(&host, &diff_id, Encoding::Gzip),
            Some(&blob(1, "app"))
        );
        assert_eq!(cache.get(&host, &diff_id, Encoding::Zstd), None);
        assert_eq!(cache.get(&other, &diff_id, Encoding::Gzip), None);
    }

    #[test]
    fn blobs_naming_an_invalid_repository_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let host = RegistryHost::parse("localhost:5001").unwrap();
        let (good, bad) = (Digest::of_bytes(b"good"), Digest::of_bytes(b"bad"));
        let mut cache = SentBlobs::load(Some(path.clone()));
        cache.record(&host, &good, Encoding::Gzip, blob(1, "app"));
        cache.record(&host, &bad, Encoding::Gzip, blob(2, "Not/../valid"));
        cache.save().unwrap();
        let read = SentBlobs::load(Some(path.clone()));
        assert!(read.get(&host, &good, Encoding::Gzip).is_some());
        assert_eq!(read.get(&host, &bad, Encoding::Gzip), None);
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
