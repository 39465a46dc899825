//! What we sent to each registry before: layer (diff_id, encoding) -> the blob as sent and the
//! repository it went to. Spares a re-compression on re-push, and names a repository to mount from.
//!
//! Only a hint: every entry is checked against the registry (HEAD, or a mount the registry
//! refuses) before it is used, a file we cannot read is treated as empty and an entry that
//! makes no sense is skipped. Concurrent pushes merge what they recorded under a file lock.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::record_file::RecordFile;
use super::stream::Encoding;
use crate::image::digest::Digest;
use crate::image::reference::RegistryHost;

const FILE_NAME: &str = "sent-blobs-v1.json";
/// Oldest entries go first past this; a layer costs ~250 bytes, so the file stays under ~5 MB.
const MAX_ENTRIES: usize = 20_000;

/// A blob as a registry holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SentBlob {
    pub digest: Digest,
    pub size: u64,
    pub media_type: String,
    pub repository: String,
}

pub(super) struct SentBlobs {
    record: RecordFile<SentBlob>,
}

impl SentBlobs {
    /// The record kept in `dir` (the settings' cache directory); no directory means no record.
    pub(super) fn load_in(dir: Option<&Path>) -> Self {
        Self::load(dir.map(|dir| dir.join(FILE_NAME)))
    }

    fn load(path: Option<PathBuf>) -> Self {
        Self {
            record: RecordFile::load(path, MAX_ENTRIES, |blob| {
                crate::image::registry::is_valid_repository(&blob.repository)
            }),
        }
    }

    pub(super) fn get(
        &self,
        host: &RegistryHost,
        diff_id: &Digest,
        encoding: Encoding,
    ) -> Option<&SentBlob> {
        self.record.get(&key(host, diff_id, encoding))
    }

    pub(super) fn record(
        &mut self,
        host: &RegistryHost,
        diff_id: &Digest,
        encoding: Encoding,
        blob: SentBlob,
    ) {
        self.record.record(key(host, diff_id, encoding), blob);
    }

    /// Merges this run's entries into the file (see `RecordFile::save`).
    pub(super) fn save(&self) -> std::io::Result<()> {
        self.record.save()
    }
}

fn key(host: &RegistryHost, diff_id: &Digest, encoding: Encoding) -> String {
    let encoding = match encoding {
        Encoding::AsStored => "stored",
        Encoding::Gzip => "gzip",
        Encoding::Zstd => "zstd",
    };
    format!("{host} {diff_id} {encoding}")
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

    #[test]
    fn entries_survive_a_save_and_load_per_host_and_encoding() {
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
    fn entries_naming_an_invalid_repository_are_skipped() {
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
}
