//! A record kept across runs in one JSON file (what we sent to registries): keyed entries, the
//! oldest dropped past a cap, read leniently (an unreadable file is empty, entries `keep` refuses
//! are skipped), and saved by merging this run's new entries into the file as it is now, under a
//! file lock, written atomically, so concurrent pushes lose nothing and a crash leaves no half file.
//! A run that recorded nothing new leaves the file alone.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
#[serde(bound = "V: Serialize + DeserializeOwned")]
struct OnDisk<V> {
    /// Insertion order, oldest first, so the cap drops the least recent.
    entries: Vec<(String, V)>,
}

pub(crate) struct RecordFile<V> {
    /// `None`: nothing is read or saved.
    path: Option<PathBuf>,
    cap: usize,
    keep: fn(&V) -> bool,
    entries: HashMap<String, V>,
    order: Vec<String>,
    /// Keys recorded by this run: what a save merges into the file.
    recorded: Vec<String>,
    /// Whether this run recorded anything new since its last save: the file is only rewritten then
    /// (it is rewritten whole, which for a record near its cap costs more than the push).
    unsaved: bool,
}

impl<V: Clone + PartialEq + Serialize + DeserializeOwned> RecordFile<V> {
    pub(crate) fn load(path: Option<PathBuf>, cap: usize, keep: fn(&V) -> bool) -> Self {
        let on_disk: Option<OnDisk<V>> = path
            .as_deref()
            .and_then(|path| std::fs::read(path).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        let mut record = Self {
            path,
            cap,
            keep,
            entries: HashMap::new(),
            order: Vec::new(),
            recorded: Vec::new(),
            unsaved: false,
        };
        for (key, value) in on_disk.map(|file| file.entries).unwrap_or_default() {
            if keep(&value) {
                record.insert(key, value);
            }
        }
        record
    }

    pub(crate) fn get(&self, key: &str) -> Option<&V> {
        self.entries.get(key)
    }

    /// Sets `key` for this run; a save writes it. What the record already holds is not recorded
    /// again (so it keeps its place among the oldest).
    pub(crate) fn record(&mut self, key: String, value: V) {
        if self.entries.get(&key) == Some(&value) {
            return;
        }
        self.unsaved = true;
        self.recorded.retain(|k| *k != key);
        self.recorded.push(key.clone());
        self.insert(key, value);
    }

    fn insert(&mut self, key: String, value: V) {
        if self.entries.insert(key.clone(), value).is_some() {
            self.order.retain(|k| *k != key);
        }
        self.order.push(key);
        if self.order.len() > self.cap {
            let dropped: Vec<String> = self.order.drain(..self.order.len() - self.cap).collect();
            for key in dropped {
                self.entries.remove(&key);
            }
        }
    }

    /// Merges what this run recorded into the file as it is now (other pushes may have saved
    /// since we read it), holding `NAME.lock` beside it meanwhile.
    pub(crate) fn save(&mut self) -> std::io::Result<()> {
        let Some(path) = self.path.as_ref().filter(|_| self.unsaved) else {
            return Ok(());
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path.with_extension("lock"))?;
        // Released when `lock` is dropped, at the end of this function.
        lock.lock()?;
        let mut merged = Self::load(Some(path.clone()), self.cap, self.keep);
        for key in &self.recorded {
            if let Some(value) = self.entries.get(key) {
                merged.insert(key.clone(), value.clone());
            }
        }
        let file = OnDisk {
            entries: merged
                .order
                .iter()
                .filter_map(|k| Some((k.clone(), merged.entries.get(k)?.clone())))
                .collect(),
        };
        let mut temp = tempfile::NamedTempFile::new_in(dir)?;
        temp.write_all(&serde_json::to_vec(&file).map_err(std::io::Error::other)?)?;
        temp.persist(path).map_err(|err| err.error)?;
        self.unsaved = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(path: &Path) -> RecordFile<u32> {
        RecordFile::load(Some(path.to_path_buf()), 3, |value| *value != 0)
    }

    #[test]
    fn saves_from_two_runs_merge_and_keep_the_newest_value() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let (mut first, mut second) = (record(&path), record(&path));
        first.record("one".into(), 1);
        first.save().unwrap();
        second.record("two".into(), 2);
        second.save().unwrap();
        first.record("one".into(), 3);
        first.save().unwrap();
        let read = record(&path);
        assert_eq!((read.get("one"), read.get("two")), (Some(&3), Some(&2)));
        assert!(dir.path().join("r.lock").exists());
    }

    #[test]
    fn the_file_is_rewritten_only_when_this_run_recorded_something_new() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let mut first = record(&path);
        first.record("one".into(), 1);
        first.save().unwrap();
        let mut again = record(&path);
        std::fs::remove_file(&path).unwrap();
        again.record("one".into(), 1);
        again.save().unwrap();
        assert!(!path.exists(), "an unchanged record was written again");
        again.record("one".into(), 2);
        again.save().unwrap();
        assert_eq!(record(&path).get("one"), Some(&2));
        std::fs::remove_file(&path).unwrap();
        again.save().unwrap();
        assert!(!path.exists(), "a second save wrote what the first had");
    }

    #[test]
    fn refused_entries_are_skipped_and_a_corrupt_file_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, br#"{"entries": [["good", 5], ["bad", 0]]}"#).unwrap();
        let read = record(&path);
        assert_eq!((read.get("good"), read.get("bad")), (Some(&5), None));
        std::fs::write(&path, br#"{"entries": [["k", "#).unwrap();
        assert!(record(&path).entries.is_empty());
    }

    #[test]
    fn the_oldest_entries_go_past_the_cap() {
        let mut record: RecordFile<u32> = RecordFile::load(None, 3, |_| true);
        for (i, key) in ["a", "b", "c", "d"].into_iter().enumerate() {
            record.record(key.into(), i as u32);
        }
        record.record("b".into(), 9);
        assert_eq!(record.entries.len(), 3);
        assert_eq!(record.get("a"), None);
        assert_eq!(record.get("b"), Some(&9));
        record.record("e".into(), 4);
        assert_eq!(
            record.get("c"),
            None,
            "b was refreshed, so c is now the oldest"
        );
    }
}
