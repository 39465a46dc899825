//! Where a blob's bytes live (a range of the tar file, a file of a layout directory, or a stream
//! made when read, such as a layer rebuilt from podman's store) and a reader over them that uses
//! positioned reads, so several blobs stream from one open file at once.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::Arc;

use super::positioned;

/// A blob's bytes: `len` bytes at `offset` of a file. Cheap to clone; owns what it needs to read.
#[derive(Clone)]
pub struct BlobLocation {
    /// The archive's display name (its path, or "standard input"), for messages.
    pub archive: Arc<str>,
    /// The tar member (or layout file) the bytes belong to, as named in the archive.
    pub member: String,
    pub offset: u64,
    pub len: u64,
    pub(crate) file: BlobFile,
}

/// Opens a stream of a blob's bytes that are not a file range (a layer rebuilt from a store).
pub type OpenBlob = Arc<dyn Fn() -> io::Result<Box<dyn Read + Send>> + Send + Sync>;

/// The file holding the bytes: the (shared) tar file, or one file of a layout directory,
/// opened when read so that a large layout does not hold a descriptor per blob; or a stream.
#[derive(Clone)]
pub(crate) enum BlobFile {
    Shared(Arc<File>),
    Path(Arc<PathBuf>),
    Stream(OpenBlob),
}

impl fmt::Debug for BlobLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobLocation")
            .field("archive", &self.archive)
            .field("member", &self.member)
            .field("offset", &self.offset)
            .field("len", &self.len)
            .finish()
    }
}

impl BlobLocation {
    /// A reader over exactly this blob's bytes.
    pub fn open(&self) -> io::Result<BlobReader> {
        let source = match &self.file {
            BlobFile::Shared(file) => Source::File(Arc::clone(file)),
            BlobFile::Path(path) => Source::File(Arc::new(File::open(path.as_path())?)),
            BlobFile::Stream(open) => Source::Stream(open()?),
        };
        Ok(BlobReader {
            source,
            position: self.offset,
            end: self.offset + self.len,
        })
    }

    /// Reads the first bytes of the blob (fewer if it is shorter), to sniff its compression.
    pub(crate) fn read_prefix(&self, wanted: usize) -> io::Result<Vec<u8>> {
        let mut prefix = Vec::with_capacity(wanted);
        self.open()?.take(wanted as u64).read_to_end(&mut prefix)?;
        Ok(prefix)
    }

    /// Reads the whole blob; only for small metadata (callers check `len` against a cap first).
    pub(crate) fn read_small(&self) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(self.len as usize);
        self.open()?.read_to_end(&mut bytes)?;
        if (bytes.len() as u64) < self.len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("expected {} bytes, found {}", self.len, bytes.len()),
            ));
        }
        Ok(bytes)
    }
}

/// Reads a byte range of a file with `pread`, so it shares the file with other readers.
/// Unbuffered: each `read` is one system call, so read with large buffers (256 KiB or more).
pub struct BlobReader {
    source: Source,
    position: u64,
    end: u64,
}

enum Source {
    File(Arc<File>),
    Stream(Box<dyn Read + Send>),
}

impl fmt::Debug for BlobReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobReader")
            .field("position", &self.position)
            .field("end", &self.end)
            .finish()
    }
}

impl BlobReader {
    /// Bytes not yet read.
    pub fn remaining(&self) -> u64 {
        self.end - self.position
    }
}

impl Read for BlobReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let wanted = buf
            .len()
            .min(usize::try_from(self.remaining()).unwrap_or(usize::MAX));
        if wanted == 0 {
            return Ok(0);
        }
        let read = match &mut self.source {
            Source::File(file) => positioned::read_at(file, &mut buf[..wanted], self.position)?,
            Source::Stream(stream) => stream.read(&mut buf[..wanted])?,
        };
        if read == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the file ends {} bytes before this blob does",
                    self.remaining()
                ),
            ));
        }
        self.position += read as u64;
        Ok(read)
    }
}
