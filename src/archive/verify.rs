//! Verifying while bytes flow: a reader that hashes what passes through (and, for a compressed
//! layer, decompresses it on the side to hash the diff_id) and fails before handing over the
//! last bytes when a digest or the size is wrong, so an upload never completes with bad data.
//! Memory is fixed: the caller's buffer plus the decompressor's own window.

use std::io::{self, Read, Write};

use sha2::{Digest as _, Sha256};

use super::Archive;
use super::blob::{BlobLocation, BlobReader};
use super::error::{ArchiveError, archive_error_in};
use super::image::{Compression, Layer, PlatformImage, RawBlob, oci_manifest};
use crate::digest::Digest;

/// Buffer used when hashing a whole blob without a consumer (`resolve_digests`).
const DRAIN_BUFFER: usize = 1 << 20;

/// Reads `inner` (exactly `len` bytes), checking what passes against the expected digests.
pub struct VerifyingReader<R> {
    inner: R,
    len: u64,
    position: u64,
    hasher: Sha256,
    expected_digest: Option<Digest>,
    /// The uncompressed bytes' expected digest (a layer's diff_id).
    expected_diff_id: Option<Digest>,
    /// Decompresses a compressed layer on the side, hashing its output.
    side: Option<SideDecoder>,
    /// Why the side decompressor gave up; reported at the end unless the digest explains it.
    side_failure: Option<String>,
    /// What errors call the blob, and the archive it is in.
    label: String,
    archive: String,
    state: State,
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
        Self::new(
            inner,
            location,
            digest.cloned(),
            None,
            Compression::None,
            location.member.clone(),
        )
    }

    /// Checks a layer: its stored digest when known, and its diff_id (decompressing gzip or
    /// zstd on the side; for an uncompressed layer one hash serves both).
    pub fn for_layer(inner: R, layer: &Layer) -> Self {
        Self::new(
            inner,
            &layer.location,
            layer.digest.clone(),
            Some(layer.diff_id.clone()),
            layer.compression,
            layer.describe(),
        )
    }

    fn new(
        inner: R,
        location: &BlobLocation,
        expected_digest: Option<Digest>,
        expected_diff_id: Option<Digest>,
        compression: Compression,
        label: String,
    ) -> Self {
        let side = match (compression, expected_diff_id.is_some()) {
            (Compression::Gzip, true) => Some(SideDecoder::gzip()),
            (Compression::Zstd, true) => SideDecoder::zstd().ok(),
            _ => None,
        };
        Self {
            inner,
            len: location.len,
            position: 0,
            hasher: Sha256::new(),
            expected_digest,
            expected_diff_id,
            side,
            side_failure: None,
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

    fn corrupt(&mut self, failure: &str) -> io::Error {
        let error = ArchiveError::invalid(
            &self.archive,
            &self.label,
            format!("its compressed data is corrupt: {failure}"),
        );
        self.fail(error)
    }

    /// Runs once every byte has passed: compares digests, finishes the side decompressor.
    /// The stored digest is checked first (it explains a corrupt compressed stream), except
    /// for an uncompressed layer, whose digest is its diff_id and is reported as such.
    fn finish(&mut self) -> io::Result<()> {
        let digest = Digest::from_sha256(std::mem::take(&mut self.hasher));
        let uncompressed_layer = self.side.is_none() && self.expected_diff_id.is_some();
        if !uncompressed_layer {
            self.check("digest", self.expected_digest.clone(), &digest)?;
        }
        let diff_id = match self.side.take() {
            Some(side) => match side.finish() {
                Ok(diff_id) => Some(diff_id),
                Err(cause) => {
                    let failure = self.side_failure.take().unwrap_or(cause.to_string());
                    return Err(self.corrupt(&failure));
                }
            },
            None if self.side_failure.is_some() => {
                let failure = self.side_failure.take().unwrap_or_default();
                return Err(self.corrupt(&failure));
            }
            None => self.expected_diff_id.as_ref().map(|_| digest.clone()),
        };
        if let Some(actual) = &diff_id {
            let what = "diff_id (the uncompressed content's digest)";
            self.check(what, self.expected_diff_id.clone(), actual)?;
        }
        if uncompressed_layer {
            self.check("digest", self.expected_digest.clone(), &digest)?;
        }
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
}

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
        if let Some(side) = &mut self.side
            && let Err(cause) = side.write_all(chunk)
        {
            // Keep hashing: at the end a digest mismatch, if any, is the clearer report.
            self.side_failure = Some(format!("{} stream: {cause}", side.name()));
            self.side = None;
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
        Ok(Self::Zstd(Box::new(zstd::stream::write::Decoder::new(
            HashSink::default(),
        )?)))
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
    fn finish(self) -> io::Result<Digest> {
        let sink = match self {
            Self::Gzip(decoder) => decoder.finish()?,
            Self::Zstd(decoder) => decoder.finish()?,
        };
        Ok(Digest::from_sha256(sink.0))
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

    /// Hashes (and verifies) every layer whose stored digest is not known yet: jib's and
    /// crane's gzip layers in docker archives.
    pub fn resolve_digests(&self, image: &mut PlatformImage) -> Result<(), ArchiveError> {
        for layer in image
            .layers
            .iter_mut()
            .filter(|layer| layer.digest.is_none())
        {
            let digest = self.hash_layer(layer)?;
            layer.digest = Some(digest);
        }
        Ok(())
    }

    fn hash_layer(&self, layer: &Layer) -> Result<Digest, ArchiveError> {
        let read_error = |source: io::Error| match source.into_inner() {
            Some(inner) => match inner.downcast::<ArchiveError>() {
                Ok(archive_error) => *archive_error,
                Err(other) => ArchiveError::Read {
                    archive: self.name().to_string(),
                    member: layer.location.member.clone(),
                    source: io::Error::other(other),
                },
            },
            None => ArchiveError::invalid(self.name(), &layer.describe(), "read failed"),
        };
        let mut reader = self.layer_reader(layer).map_err(read_error)?;
        drain(&mut reader).map_err(read_error)?;
        reader.digest().cloned().ok_or_else(|| {
            ArchiveError::invalid(
                self.name(),
                &layer.describe(),
                "the layer was not fully read",
            )
        })
    }

    /// The manifest to push for a platform: the archive's own, byte for byte, when it has
    /// one; else an OCI manifest built from the config and layers (every layer digest must be
    /// known: see `resolve_digests`).
    pub fn manifest(&self, image: &PlatformImage) -> Result<RawBlob, ArchiveError> {
        if let Some(original) = &image.manifest {
            return Ok(original.clone());
        }
        let layers = image
            .layers
            .iter()
            .map(|layer| {
                let digest =
                    layer
                        .digest
                        .as_ref()
                        .ok_or_else(|| ArchiveError::UnresolvedDigest {
                            archive: self.name().to_string(),
                            member: layer.location.member.clone(),
                        })?;
                Ok((layer.media_type_or_default(), digest, layer.size()))
            })
            .collect::<Result<Vec<_>, ArchiveError>>()?;
        Ok(oci_manifest(&image.config, &layers))
    }
}

/// Reads `reader` to its end with a fixed buffer, discarding the bytes.
pub(crate) fn drain(reader: &mut impl Read) -> io::Result<u64> {
    let mut buffer = vec![0u8; DRAIN_BUFFER];
    let mut total = 0u64;
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => return Ok(total),
            Ok(read) => total += read as u64,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
}

/// Whether an I/O error is a verification failure (as opposed to a failed read).
pub fn is_verification_failure(err: &io::Error) -> bool {
    matches!(
        archive_error_in(err),
        Some(ArchiveError::Mismatch { .. } | ArchiveError::Invalid { .. })
    )
}
