//! A layer's exact tar rebuilt from the store: its tar-split record (gzip'd JSON lines; type 2
//! carries raw tar bytes, headers and padding; type 1 names a file whose content is read from the
//! layer's directory) replayed in order, hashed as it goes, and refused at its end unless it is
//! the layer's diff_id at its size. A file gone midway means the layer was removed while read.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Component, Path, PathBuf};

use base64::Engine as _;
use flate2::read::GzDecoder;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use crate::image::digest::Digest;

/// A raw segment is a tar header or two (PAX records included); no sane line comes near this.
const LINE_LIMIT: u64 = 16 << 20;

/// Why reading a layer from the store failed: told as it is, never blamed on the registry.
#[derive(Debug, Clone)]
pub(crate) struct StoreFault {
    text: String,
    /// The store holds a file we may not read. Rootless podman reads such files (owned by a
    /// mapped uid, or mode 000) inside its user namespace: its export can, we cannot.
    pub(crate) denied: bool,
}

impl std::fmt::Display for StoreFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for StoreFault {}

/// The store's own words when `err` came from reading it.
pub(crate) fn store_fault(err: &io::Error) -> Option<&StoreFault> {
    err.get_ref()?.downcast_ref::<StoreFault>()
}

fn fault(text: String) -> io::Error {
    io::Error::other(StoreFault {
        text,
        denied: false,
    })
}

/// A failure to open or read `path`: a denial is marked as one.
fn io_fault(text: String, err: &io::Error) -> io::Error {
    io::Error::other(StoreFault {
        text,
        denied: err.kind() == io::ErrorKind::PermissionDenied,
    })
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "type")]
    kind: u8,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    name_raw: Option<String>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    payload: Option<String>,
}

/// The rebuilt tar of one layer.
pub struct LayerReader {
    entries: BufReader<GzDecoder<File>>,
    files: PathBuf,
    /// For messages: `layer <id>`.
    label: String,
    current: Current,
    hasher: Sha256,
    read: u64,
    diff_id: Digest,
    size: u64,
    verified: bool,
}

enum Current {
    None,
    Bytes(Vec<u8>, usize),
    File(io::Take<File>, PathBuf),
}

impl LayerReader {
    /// Opens the record; the files are opened as the replay reaches them.
    pub fn open(
        tar_split: &Path,
        files: &Path,
        label: String,
        diff_id: Digest,
        size: u64,
    ) -> io::Result<Self> {
        let record = File::open(tar_split).map_err(|err| {
            io_fault(
                format!(
                    "{label}: its tar-split record {} cannot be read: {err}",
                    tar_split.display()
                ),
                &err,
            )
        })?;
        Ok(Self {
            entries: BufReader::new(GzDecoder::new(record)),
            files: files.to_path_buf(),
            label,
            current: Current::None,
            hasher: Sha256::new(),
            read: 0,
            diff_id,
            size,
            verified: false,
        })
    }

    /// The next entry's bytes as the current source; false at the record's end.
    fn next_entry(&mut self) -> io::Result<bool> {
        let mut line = Vec::new();
        let read = (&mut self.entries)
            .take(LINE_LIMIT)
            .read_until(b'\n', &mut line)
            .map_err(|err| {
                fault(format!(
                    "{}: its tar-split record is broken: {err}",
                    self.label
                ))
            })?;
        if read == 0 {
            return Ok(false);
        }
        if !line.ends_with(b"\n") && read as u64 == LINE_LIMIT {
            return Err(fault(format!(
                "{}: its tar-split record has a line over {LINE_LIMIT} bytes",
                self.label
            )));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            self.current = Current::None;
            return Ok(true);
        }
        let entry: Entry = serde_json::from_slice(&line).map_err(|err| {
            fault(format!(
                "{}: its tar-split record has an entry that is not one: {err}",
                self.label
            ))
        })?;
        self.current = match entry.kind {
            2 => {
                let payload = entry.payload.unwrap_or_default();
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(payload.as_bytes())
                    .map_err(|err| {
                        fault(format!(
                            "{}: its tar-split record has a segment that is not base64: {err}",
                            self.label
                        ))
                    })?;
                Current::Bytes(bytes, 0)
            }
            1 => match entry.size.unwrap_or(0) {
                0 => Current::None,
                size => {
                    let path = self.file_path(&entry)?;
                    let file = File::open(&path).map_err(|err| self.file_failure(&path, &err))?;
                    Current::File(file.take(size), path)
                }
            },
            other => {
                return Err(fault(format!(
                    "{}: its tar-split record has an entry of unknown type {other}",
                    self.label
                )));
            }
        };
        Ok(true)
    }

    /// The file an entry names, inside the layer's directory.
    fn file_path(&self, entry: &Entry) -> io::Result<PathBuf> {
        let name: PathBuf = match (&entry.name, &entry.name_raw) {
            (Some(name), _) => PathBuf::from(name),
            (None, Some(raw)) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(raw.as_bytes())
                    .map_err(|err| {
                        fault(format!(
                            "{}: a raw file name is not base64: {err}",
                            self.label
                        ))
                    })?;
                raw_path(bytes)
            }
            (None, None) => {
                return Err(fault(format!(
                    "{}: its tar-split record has a file entry without a name",
                    self.label
                )));
            }
        };
        let inside = name.components().all(|c| {
            matches!(
                c,
                Component::Normal(_) | Component::CurDir | Component::RootDir
            )
        });
        if !inside {
            return Err(fault(format!(
                "{}: its tar-split record names {} outside the layer",
                self.label,
                name.display()
            )));
        }
        let relative: PathBuf = name
            .components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .collect();
        Ok(self.files.join(relative))
    }

    fn file_failure(&self, path: &Path, err: &io::Error) -> io::Error {
        if err.kind() == io::ErrorKind::NotFound {
            fault(format!(
                "{}: {} is gone: the layer was removed from the store while it was read",
                self.label,
                path.display()
            ))
        } else {
            io_fault(
                format!("{}: {} cannot be read: {err}", self.label, path.display()),
                err,
            )
        }
    }

    /// At the record's end: the bytes must be the layer's diff_id at its size.
    fn verify(&mut self) -> io::Result<()> {
        let digest = Digest::from_sha256(std::mem::take(&mut self.hasher));
        if digest != self.diff_id || self.read != self.size {
            return Err(fault(format!(
                "{}: the tar rebuilt from the store is {digest} ({} bytes), not its diff_id {} ({} bytes): the layer changed in the store",
                self.label, self.read, self.diff_id, self.size
            )));
        }
        self.verified = true;
        Ok(())
    }
}

#[cfg(unix)]
fn raw_path(bytes: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(bytes))
}

#[cfg(not(unix))]
fn raw_path(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
}

impl Read for LayerReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_replayed(buf)
    }
}

impl LayerReader {
    fn read_replayed(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let n = match &mut self.current {
                Current::None => 0,
                Current::Bytes(bytes, at) => {
                    let n = buf.len().min(bytes.len() - *at);
                    buf[..n].copy_from_slice(&bytes[*at..*at + n]);
                    *at += n;
                    n
                }
                Current::File(file, path) => {
                    let left = file.limit();
                    let n = file.read(buf).map_err(|err| {
                        io_fault(
                            format!("{}: {} cannot be read: {err}", self.label, path.display()),
                            &err,
                        )
                    })?;
                    if n == 0 && left > 0 {
                        return Err(fault(format!(
                            "{}: {} is shorter than its record says: the layer changed in the store while it was read",
                            self.label,
                            path.display()
                        )));
                    }
                    n
                }
            };
            if n > 0 {
                self.hasher.update(&buf[..n]);
                self.read += n as u64;
                return Ok(n);
            }
            if self.verified {
                return Ok(0);
            }
            if !self.next_entry()? {
                self.verify()?;
                return Ok(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A tar-split record over `files`: a header segment, then the file, then padding.
    fn record(dir: &Path, lines: &[String]) -> PathBuf {
        let path = dir.join("layer.tar-split.gz");
        let mut gz = flate2::write::GzEncoder::new(
            File::create(&path).unwrap(),
            flate2::Compression::fast(),
        );
        for line in lines {
            writeln!(gz, "{line}").unwrap();
        }
        gz.finish().unwrap();
        path
    }

    fn segment(bytes: &[u8]) -> String {
        format!(
            r#"{{"type":2,"payload":"{}","position":0}}"#,
            base64::engine::general_purpose::STANDARD.encode(bytes)
        )
    }

    #[test]
    fn the_replay_is_the_exact_tar_and_is_checked_against_the_diff_id() {
        let dir = tempfile::tempdir().unwrap();
        let files = dir.path().join("diff");
        std::fs::create_dir_all(files.join("d")).unwrap();
        std::fs::write(files.join("d/f"), b"hello").unwrap();
        let lines = [
            segment(b"HEADER"),
            r#"{"type":1,"name":"d/f","size":5,"payload":"x","position":1}"#.to_string(),
            r#"{"type":1,"name":"d/","payload":null,"position":2}"#.to_string(),
            segment(b"PAD"),
        ];
        let tar_split = record(dir.path(), &lines);
        let expected = b"HEADERhelloPAD";
        let mut out = Vec::new();
        LayerReader::open(
            &tar_split,
            &files,
            "layer x".into(),
            Digest::of_bytes(expected),
            expected.len() as u64,
        )
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
        assert_eq!(out, expected);

        let wrong = LayerReader::open(
            &tar_split,
            &files,
            "layer x".into(),
            Digest::of_bytes(b"other"),
            expected.len() as u64,
        )
        .unwrap()
        .read_to_end(&mut Vec::new())
        .unwrap_err();
        assert!(
            store_fault(&wrong)
                .unwrap()
                .text
                .contains("not its diff_id")
        );

        std::fs::remove_file(files.join("d/f")).unwrap();
        let gone = LayerReader::open(
            &tar_split,
            &files,
            "layer x".into(),
            Digest::of_bytes(expected),
            expected.len() as u64,
        )
        .unwrap()
        .read_to_end(&mut Vec::new())
        .unwrap_err();
        assert!(
            store_fault(&gone)
                .unwrap()
                .text
                .contains("removed from the store while it was read"),
            "{gone}"
        );
    }

    #[test]
    fn a_name_outside_the_layer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let lines = [r#"{"type":1,"name":"../../etc/passwd","size":5,"position":0}"#.to_string()];
        let tar_split = record(dir.path(), &lines);
        let err = LayerReader::open(
            &tar_split,
            dir.path(),
            "layer x".into(),
            Digest::of_bytes(b""),
            0,
        )
        .unwrap()
        .read_to_end(&mut Vec::new())
        .unwrap_err();
        assert!(
            store_fault(&err)
                .unwrap()
                .text
                .contains("outside the layer")
        );
    }
}
