//! What we sent to each registry before: layer (diff_id, encoding) -> the blob as sent and the
//! repository it went to. Spares a re-compression on re-push, and names a repository to mount from.
//!
//! Only a hint: every entry is checked against the registry (HEAD, or a mount the registry
//! refuses) before it is used, a file we cannot read is treated as empty and an entry that
//! makes no sense is skipped. Concurrent pushes merge what they recorded under a file lock.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::stream::Encoding;
use crate::digest::Digest;
use crate::hosting::RegistryHost;

const FILE_NAME: &str = "sent-blobs-v1.json";
/// Held (flock) while a push merges its entries into the file.
const LOCK_NAME: &str = "sent-blobs-v1.lock";
/// Oldest entries go first past this; a layer costs ~250 bytes, so the file stays under ~5 MB.
const MAX_ENTRIES: usize = 20_000;

/// A blob as a registry holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SentBlob {
    pub digest: Digest,
    pub size: u64,
    pub media_type: String,
    pub repository: String,
}

#[derive(Default, Serialize, Deserialize)]
struct CacheFile {
    /// Insertion order, oldest first, so the cap drops the least recent.
    entries: Vec<(String, SentBlob)>,
}

pub struct SentBlobs {
    path: Option<PathBuf>,
    entries: HashMap<String, SentBlob>,
    order: Vec<String>,
    /// Keys recorded by this run: what a save merges into the file.
    recorded: Vec<String>,
}

impl SentBlobs {
    /// The record kept in `dir` (the settings' cache directory); no directory means no record.
    pub fn load_in(dir: Option<&Path>) -> Self {
        match dir {
            Some(dir) => Self::load(&dir.join(FILE_NAME)),
            None => Self::empty(None),
        }
    }

    pub fn load(path: &Path) -> Self {
        let file: CacheFile = std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        let mut cache = Self::empty(Some(path.to_path_buf()));
        for (key, blob) in file.entries {
            if crate::registry::is_valid_repository(&blob.repository) {
                cache.insert(key, blob);
            }
        }
        cache
    }

    fn empty(path: Option<PathBuf>) -> Self {
        Self {
            path,
            entries: HashMap::new(),
            order: Vec::new(),
            recorded: Vec::new(),
        }
    }

    pub fn get(
        &self,
        host: &RegistryHost,
        diff_id: &Digest,
        encoding: Encoding,
    ) -> Option<&SentBlob> {
        self.entries.get(&key(host, diff_id, encoding))
    }

    pub fn record(
        &mut self,
        host: &RegistryHost,
        diff_id: &Digest,
        encoding: Encoding,
        blob: SentBlob,
    ) {
        let key = key(host, diff_id, encoding);
        self.recorded.retain(|k| *k != key);
        self.recorded.push(key.clone());
        self.insert(key, blob);
    }

    fn insert(&mut self, key: String, blob: SentBlob) {
        if self.entries.insert(key.clone(), blob).is_some() {
            self.order.retain(|k| *k != key);
        }
        self.order.push(key);
        if self.order.len() > MAX_ENTRIES {
            let dropped: Vec<String> = self.order.drain(..self.order.len() - MAX_ENTRIES).collect();
            for key in dropped {
                self.entries.remove(&key);
            }
        }
    }

    /// Merges what this run recorded into the file as it is now (other pushes may have saved
    /// since we read it), under a file lock, and writes it atomically (temp file, then rename):
    /// nothing another push saved is lost, and a crash never leaves half a file.
    pub fn save(&self) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK_NAME))?;
        // Released when `lock` is dropped, at the end of this function.
        lock.lock()?;
        let mut merged = Self::load(path);
        for key in &self.recorded {
            if let Some(blob) = self.entries.get(key) {
                merged.insert(key.clone(), blob.clone());
            }
        }
        let file = CacheFile {
            entries: merged
                .order
                .iter()
                .filter_map(|k| Some((k.clone(), merged.entries.get(k)?.clone())))
                .collect(),
        };
        let mut temp = tempfile::NamedTempFile::new_in(dir)?;
        temp.write_all(&serde_json::to_vec(&file).map_err(std::io::Error::other)?)?;
        temp.persist(path).map_err(|err| err.error)?;
        Ok(())
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
            media_type: "application/vnd.oci.image.layer.v1.tar+gzip".into(),
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
        let mut cache = SentBlobs::load(&path);
        cache.record(&host, &diff_id, Encoding::Gzip, blob(1, "app"));
        cache.save().unwrap();
        let cache = SentBlobs::load(&path);
        assert_eq!(
            cache.get(&host, &diff_id, Encoding::Gzip),
            Some(&blob(1, "app"))
        );
        assert_eq!(cache.get(&host, &diff_id, Encoding::Zstd), None);
        assert_eq!(cache.get(&other, &diff_id, Encoding::Gzip), None);
    }

    #[test]
    fn saves_from_two_runs_merge_and_keep_the_newest_value() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let host = RegistryHost::parse("localhost:5001").unwrap();
        let (one, two) = (Digest::of_bytes(b"one"), Digest::of_bytes(b"two"));
        let mut first = SentBlobs::load(&path);
        let mut second = SentBlobs::load(&path);
        first.record(&host, &one, Encoding::Gzip, blob(1, "a"));
        first.save().unwrap();
        second.record(&host, &two, Encoding::Gzip, blob(2, "b"));
        second.save().unwrap();
        first.record(&host, &one, Encoding::Gzip, blob(3, "c"));
        first.save().unwrap();
        let read = SentBlobs::load(&path);
        assert_eq!(read.get(&host, &one, Encoding::Gzip), Some(&blob(3, "c")));
        assert_eq!(read.get(&host, &two, Encoding::Gzip), Some(&blob(2, "b")));
    }

    #[test]
    fn entries_naming_an_invalid_repository_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let host = RegistryHost::parse("localhost:5001").unwrap();
        let (good, bad) = (Digest::of_bytes(b"good"), Digest::of_bytes(b"bad"));
        let mut cache = SentBlobs::load(&path);
        cache.record(&host, &good, Encoding::Gzip, blob(1, "app"));
        cache.record(&host, &bad, Encoding::Gzip, blob(2, "Not/../valid"));
        cache.save().unwrap();
        let read = SentBlobs::load(&path);
        assert!(read.get(&host, &good, Encoding::Gzip).is_some());
        assert_eq!(read.get(&host, &bad, Encoding::Gzip), None);
    }

    #[test]
    fn a_corrupt_file_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        std::fs::write(&path, b"{\"entries\": [[\"k\", {\"digest\": \"nope\"").unwrap();
        let host = RegistryHost::parse("localhost:5001").unwrap();
        let cache = SentBlobs::load(&path);
        assert_eq!(
            cache.get(&host, &Digest::of_bytes(b"x"), Encoding::Gzip),
            None
        );
        assert!(cache.entries.is_empty());
    }

    #[test]
    fn the_oldest_entries_go_past_the_cap() {
        let host = RegistryHost::parse("localhost:5001").unwrap();
        let mut cache = SentBlobs::empty(None);
        for i in 0..(MAX_ENTRIES + 2) {
            cache.record(
                &host,
                &Digest::of_bytes(&i.to_le_bytes()),
                Encoding::Gzip,
                blob(1, "a"),
            );
        }
        assert_eq!(cache.entries.len(), MAX_ENTRIES);
        assert!(
            cache
                .get(
                    &host,
                    &Digest::of_bytes(&0usize.to_le_bytes()),
                    Encoding::Gzip
                )
                .is_none()
        );
        assert!(
            cache
                .get(
                    &host,
                    &Digest::of_bytes(&(MAX_ENTRIES + 1).to_le_bytes()),
                    Encoding::Gzip
                )
                .is_some()
        );
    }
}
