//! Verifying while bytes flow: a reader that hashes what passes through (and, for a compressed
//! layer, decompresses it on the side to hash the diff_id) and fails before handing over the
//! last bytes when a digest or the size is wrong, so an upload never completes with bad data.
//! Memory is fixed: the caller's buffer plus the decompressor's own window.

use std::io::{self, Read, Write};

use sha2::{Digest as _, Sha256};

use super::Archive;
use super::error::{ArchiveError, archive_error_in};
use super::image::{Compression, Layer};
use super::input::blob::{BlobLocation, BlobReader};
use crate::image::digest::Digest;

/// Reads `inner` (exactly the location's `len` bytes), checking what passes against the
/// expected digests. The check runs as the last byte arrives; on a mismatch that read fails
/// with `InvalidData` carrying an `ArchiveError::Mismatch`, and so does every later read.
pub struct VerifyingReader<R> {
    inner: R,
    len: u64,
    position: u64,
    hasher: Sha256,
    expected_digest: Option<Digest>,
    diff_id: DiffIdCheck,
    /// What errors call the blob, and the archive it is in.
    label: String,
    archive: String,
    state: State,
}

/// How the uncompressed content is checked against a layer's diff_id.
enum DiffIdCheck {
    /// A blob that is not a layer.
    NotALayer,
    /// An uncompressed layer: the stored bytes are the content, one hash serves both.
    StoredBytes(Digest),
    /// A compressed layer, decompressed on the side; `Err` holds why decompressing failed.
    Decompressed {
        expected: Digest,
        decoder: Result<SideDecoder, String>,
    },
}

enum State {
    Reading,
    Verified {
        digest: Digest,
        diff_id: Option<Digest>,
    },
    Failed(String),
}

impl<R: Read> VerifyingReader<R> {
    /// Checks a blob's size and, when given, its digest.
    pub fn for_blob(inner: R, location: &BlobLocation, digest: Option<&Digest>) -> Self {
        let label = location.member.clone();
        Self::new(
            inner,
            location,
            digest.cloned(),
            DiffIdCheck::NotALayer,
            label,
        )
    }

    /// Checks a layer: its stored digest when known, and its diff_id (decompressing gzip or
    /// zstd on the side; for an uncompressed layer one hash serves both).
    pub fn for_layer(inner: R, layer: &Layer) -> Self {
        let expected = layer.diff_id.clone();
        let diff_id = match layer.compression {
            Compression::None => DiffIdCheck::StoredBytes(expected),
            Compression::Gzip => DiffIdCheck::Decompressed {
                expected,
                decoder: Ok(SideDecoder::gzip()),
            },
            Compression::Zstd => DiffIdCheck::Decompressed {
                expected,
                decoder: SideDecoder::zstd().map_err(|err| err.to_string()),
            },
        };
        let digest = layer.digest.clone();
        Self::new(inner, &layer.location, digest, diff_id, layer.describe())
    }

    fn new(
        inner: R,
        location: &BlobLocation,
        expected_digest: Option<Digest>,
        diff_id: DiffIdCheck,
        label: String,
    ) -> Self {
        Self {
            inner,
            len: location.len,
            position: 0,
            hasher: Sha256::new(),
            expected_digest,
            diff_id,
            label,
            archive: location.archive.to_string(),
            state: State::Reading,
        }
    }

    /// The stored bytes' digest, once every byte has been read and verified.
    pub fn digest(&self) -> Option<&Digest> {
        match &self.state {
            State::Verified { digest, .. } => Some(digest),
            _ => None,
        }
    }

    /// The uncompressed content's digest, once verified (layers only).
    pub fn diff_id(&self) -> Option<&Digest> {
        match &self.state {
            State::Verified { diff_id, .. } => diff_id.as_ref(),
            _ => None,
        }
    }

    fn fail(&mut self, error: ArchiveError) -> io::Error {
        self.state = State::Failed(error.to_string());
        error.into_io()
    }

    /// Runs as the last byte arrives. The stored digest is checked first, as it explains a
    /// corrupt compressed stream; an uncompressed layer's single hash is reported as its
    /// diff_id, the digest users know it by.
    fn finish(&mut self) -> io::Result<()> {
        let digest = Digest::from_sha256(std::mem::take(&mut self.hasher));
        let diff_id = match std::mem::replace(&mut self.diff_id, DiffIdCheck::NotALayer) {
            DiffIdCheck::NotALayer => {
                self.check("digest", self.expected_digest.clone(), &digest)?;
                None
            }
            DiffIdCheck::StoredBytes(expected) => {
                self.check(DIFF_ID, Some(expected), &digest)?;
                self.check("digest", self.expected_digest.clone(), &digest)?;
                Some(digest.clone())
            }
            DiffIdCheck::Decompressed { expected, decoder } => {
                self.check("digest", self.expected_digest.clone(), &digest)?;
                let actual = decoder.and_then(|decoder| decoder.finish());
                let actual = actual.map_err(|failure| self.corrupt(&failure))?;
                self.check(DIFF_ID, Some(expected), &actual)?;
                Some(actual)
            }
        };
        self.state = State::Verified { digest, diff_id };
        Ok(())
    }

    fn check(
        &mut self,
        what: &'static str,
        expected: Option<Digest>,
        actual: &Digest,
    ) -> io::Result<()> {
        match expected {
            Some(expected) if expected != *actual => {
                let error = ArchiveError::digest_mismatch(
                    &self.archive,
                    &self.label,
                    what,
                    &expected,
                    actual,
                );
                Err(self.fail(error))
            }
            _ => Ok(()),
        }
    }

    fn corrupt(&mut self, failure: &str) -> io::Error {
        let error = ArchiveError::invalid(
            &self.archive,
            &self.label,
            format!("its compressed data is corrupt: {failure}"),
        );
        self.fail(error)
    }
}

const DIFF_ID: &str = "diff_id (the uncompressed content's digest)";

impl<R: Read> Read for VerifyingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &self.state {
            State::Reading => {}
            State::Verified { .. } => return Ok(0),
            State::Failed(message) => {
                return Err(io::Error::new(io::ErrorKind::InvalidData, message.clone()));
            }
        }
        let remaining = self.len - self.position;
        if remaining == 0 {
            self.finish()?;
            return Ok(0);
        }
        let wanted = buf
            .len()
            .min(usize::try_from(remaining).unwrap_or(usize::MAX));
        if wanted == 0 {
            return Ok(0);
        }
        let read = self.inner.read(&mut buf[..wanted])?;
        if read == 0 {
            let error = ArchiveError::invalid(
                &self.archive,
                &self.label,
                format!(
                    "the data ends after {} of {} bytes",
                    self.position, self.len
                ),
            );
            return Err(self.fail(error));
        }
        let chunk = &buf[..read];
        self.hasher.update(chunk);
        if let DiffIdCheck::Decompressed { decoder, .. } = &mut self.diff_id
            && let Ok(side) = decoder
            && let Err(cause) = side.write_all(chunk)
        {
            // Keep hashing: at the end a digest mismatch, if any, is the clearer report.
            *decoder = Err(format!("{} stream: {cause}", side.name()));
        }
        self.position += read as u64;
        if self.position == self.len {
            // Verify before handing over the last bytes: a consumer that stops at the known
            // size must still never receive a complete bad blob.
            self.finish()?;
        }
        Ok(read)
    }
}

/// A sink that hashes what the decompressor writes.
#[derive(Default)]
struct HashSink(Sha256);

impl Write for HashSink {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Push-style decompressors: compressed bytes are written in as they pass, the output is
/// hashed and dropped.
enum SideDecoder {
    Gzip(Box<flate2::write::MultiGzDecoder<HashSink>>),
    Zstd(Box<zstd::stream::write::Decoder<'static, HashSink>>),
}

impl SideDecoder {
    fn gzip() -> Self {
        Self::Gzip(Box::new(flate2::write::MultiGzDecoder::new(
            HashSink::default(),
        )))
    }

    fn zstd() -> io::Result<Self> {
        let decoder = zstd::stream::write::Decoder::new(HashSink::default())?;
        Ok(Self::Zstd(Box::new(decoder)))
    }

    fn name(&self) -> &'static str {
        match self {
            Self::Gzip(_) => "gzip",
            Self::Zstd(_) => "zstd",
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Self::Gzip(decoder) => decoder.write_all(bytes),
            Self::Zstd(decoder) => decoder.write_all(bytes),
        }
    }

    /// Ends the stream (a truncated one is an error) and returns the uncompressed digest.
    fn finish(self) -> Result<Digest, String> {
        let name = self.name();
        let sink = match self {
            Self::Gzip(decoder) => decoder.finish(),
            Self::Zstd(decoder) => decoder.finish(),
        };
        sink.map(|sink| Digest::from_sha256(sink.0))
            .map_err(|err| format!("{name} stream: {err}"))
    }
}

impl Archive {
    /// A reader over a blob that fails at its end if the bytes do not hash to `digest`.
    pub fn verified_blob_reader(
        &self,
        location: &BlobLocation,
        digest: &Digest,
    ) -> io::Result<VerifyingReader<BlobReader>> {
        Ok(VerifyingReader::for_blob(
            location.open()?,
            location,
            Some(digest),
        ))
    }

    /// A reader over a layer's stored bytes that verifies its digest (when known) and its
    /// diff_id in the same pass; the error at the end names the layer and both digests.
    pub fn layer_reader(&self, layer: &Layer) -> io::Result<VerifyingReader<BlobReader>> {
        Ok(VerifyingReader::for_layer(layer.location.open()?, layer))
    }
}

/// Whether an I/O error is a verification failure (as opposed to a failed read).
pub fn is_verification_failure(err: &io::Error) -> bool {
    matches!(
        archive_error_in(err),
        Some(ArchiveError::Mismatch { .. } | ArchiveError::Invalid { .. })
    )
}
