//! Recognising what a file or stream is by its first bytes, and spooling pipes and compressed
//! archives (gzip, zstd, bzip2, xz: what `docker load` and `podman load` read) to an anonymous
//! temporary file so the tar inside can be read at offsets.

use std::fs::File;
use std::io::{self, Read, Seek, Write};

use super::error::ArchiveError;

/// How many leading bytes `sniff` needs: one tar header.
pub(crate) const SNIFF_LEN: usize = 512;

/// Copy buffer for spooling; fixed, whatever the archive's size.
const SPOOL_BUFFER: usize = 1 << 20;

/// What the leading bytes say a stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Magic {
    Empty,
    Tar,
    Gzip,
    Zstd,
    Bzip2,
    Xz,
    Unknown,
}

/// Classifies a stream by its first bytes (up to `SNIFF_LEN`).
pub(crate) fn sniff(prefix: &[u8]) -> Magic {
    if prefix.is_empty() {
        Magic::Empty
    } else if prefix.starts_with(&[0x1f, 0x8b]) {
        Magic::Gzip
    } else if prefix.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Magic::Zstd
    } else if prefix.starts_with(b"BZh") {
        Magic::Bzip2
    } else if prefix.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Magic::Xz
    } else if is_tar_header(prefix) {
        Magic::Tar
    } else {
        Magic::Unknown
    }
}

/// A tar header: the ustar magic, or (old v7 tars) a valid header checksum.
fn is_tar_header(block: &[u8]) -> bool {
    if block.len() < SNIFF_LEN {
        return false;
    }
    if &block[257..262] == b"ustar" {
        return true;
    }
    let stored = std::str::from_utf8(&block[148..156])
        .ok()
        .map(|field| field.trim_matches(|c: char| c == '\0' || c == ' '))
        .and_then(|field| u32::from_str_radix(field, 8).ok());
    let computed: u32 = block[..148]
        .iter()
        .chain(&block[156..SNIFF_LEN])
        .map(|&b| u32::from(b))
        .sum::<u32>()
        + 8 * u32::from(b' ');
    stored == Some(computed)
}

/// Reads up to `SNIFF_LEN` bytes, however the reader splits them (pipes deliver in pieces).
pub(crate) fn read_prefix(reader: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut prefix = Vec::with_capacity(SNIFF_LEN);
    reader
        .by_ref()
        .take(SNIFF_LEN as u64)
        .read_to_end(&mut prefix)?;
    Ok(prefix)
}

/// The reason text for a stream that is none of the formats we read.
pub(crate) fn not_an_archive_reason() -> String {
    "it is not a tar file, nor gzip, zstd, bzip2 or xz compressed".into()
}

/// Copies `stream` (whose first bytes `magic` describes) into an anonymous temporary file,
/// decompressing gzip, zstd, bzip2 or xz on the way, and returns that file rewound. Like
/// `docker load`, concatenated streams (pigz, pbzip2, `cat a.xz b.xz`) are read as one.
pub(crate) fn spool(
    stream: impl Read,
    magic: Magic,
    archive: &str,
) -> Result<(File, Magic), ArchiveError> {
    let mut file = tempfile::tempfile().map_err(|source| ArchiveError::Spool {
        archive: archive.to_string(),
        source,
    })?;
    let (copied, compression) = match magic {
        Magic::Gzip => (
            copy_tar(GzipMembers::new(stream), &mut file, archive, "gzip")?,
            Some("gzip"),
        ),
        Magic::Zstd => match zstd::stream::read::Decoder::new(stream) {
            Ok(decoder) => (copy_tar(decoder, &mut file, archive, "zstd")?, Some("zstd")),
            Err(source) => {
                return Err(ArchiveError::Decompress {
                    archive: archive.to_string(),
                    compression: "zstd",
                    source,
                });
            }
        },
        Magic::Bzip2 => (
            copy_tar(
                bzip2::read::MultiBzDecoder::new(stream),
                &mut file,
                archive,
                "bzip2",
            )?,
            Some("bzip2"),
        ),
        Magic::Xz => (
            copy_tar(
                liblzma::read::XzDecoder::new_multi_decoder(stream),
                &mut file,
                archive,
                "xz",
            )?,
            Some("xz"),
        ),
        _ => (copy(stream, &mut file), None),
    };
    copied.map_err(|failure| match (failure, compression) {
        (CopyFailure::Read(source), Some(compression)) => ArchiveError::Decompress {
            archive: archive.to_string(),
            compression,
            source,
        },
        (CopyFailure::Read(source) | CopyFailure::Write(source), _) => ArchiveError::Spool {
            archive: archive.to_string(),
            source,
        },
    })?;
    file.rewind().map_err(|source| ArchiveError::Spool {
        archive: archive.to_string(),
        source,
    })?;
    let inner = read_prefix(&mut file)
        .and_then(|prefix| file.rewind().map(|()| sniff(&prefix)))
        .map_err(|source| ArchiveError::Spool {
            archive: archive.to_string(),
            source,
        })?;
    Ok((file, inner))
}

/// Copies decompressed content that must be a tar, refusing anything else after its first
/// block: a small compressed file can inflate to gigabytes, which must not reach the disk first.
fn copy_tar(
    mut decompressed: impl Read,
    to: &mut File,
    archive: &str,
    compression: &'static str,
) -> Result<Result<(), CopyFailure>, ArchiveError> {
    let prefix = read_prefix(&mut decompressed).map_err(|source| ArchiveError::Decompress {
        archive: archive.to_string(),
        compression,
        source,
    })?;
    if sniff(&prefix) != Magic::Tar {
        return Err(ArchiveError::NotAnArchive {
            archive: archive.to_string(),
            reason: "its decompressed content is not a tar file".to_string(),
        });
    }
    Ok(copy(io::Cursor::new(prefix).chain(decompressed), to))
}

/// Every gzip member of a stream, one after another (pigz and `cat a.gz b.gz` write several),
/// then the end: bytes after the last member that start no other one (a tape's zero padding, a
/// signature appended) are left unread, as `gzip -d` and `tar -z` leave them, since the tar
/// inside has already ended whole.
struct GzipMembers<R: Read> {
    decoder: Option<flate2::bufread::GzDecoder<io::BufReader<R>>>,
}

impl<R: Read> GzipMembers<R> {
    fn new(stream: R) -> Self {
        Self {
            decoder: Some(flate2::bufread::GzDecoder::new(io::BufReader::new(stream))),
        }
    }
}

impl<R: Read> Read for GzipMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(decoder) = self.decoder.as_mut() else {
                return Ok(0);
            };
            let read = decoder.read(buf)?;
            if read > 0 || buf.is_empty() {
                return Ok(read);
            }
            let Some(decoder) = self.decoder.take() else {
                return Ok(0);
            };
            let mut rest = decoder.into_inner();
            let next = io::BufRead::fill_buf(&mut rest)?;
            let another_member =
                next.first() == Some(&0x1f) && next.get(1).is_none_or(|&b| b == 0x8b);
            if !another_member {
                return Ok(0);
            }
            self.decoder = Some(flate2::bufread::GzDecoder::new(rest));
        }
    }
}

enum CopyFailure {
    Read(io::Error),
    Write(io::Error),
}

/// `io::copy` with a fixed 1 MiB buffer, telling read failures (bad compressed data) from write
/// failures (a full temporary directory).
fn copy(mut from: impl Read, to: &mut File) -> Result<(), CopyFailure> {
    let mut buffer = vec![0u8; SPOOL_BUFFER];
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(CopyFailure::Read(err)),
        };
        to.write_all(&buffer[..read]).map_err(CopyFailure::Write)?;
    }
    to.flush().map_err(CopyFailure::Write)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_content_that_is_no_tar_is_refused_before_it_is_written() {
        // 256 MiB of zeros compress to about 250 KiB; only the first block is ever inflated.
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..256 {
            encoder.write_all(&zeros).unwrap();
        }
        let compressed = encoder.finish().unwrap();
        let mut counted = CountingReader {
            inner: io::Cursor::new(compressed),
            read: 0,
        };
        let err = spool(&mut counted, Magic::Gzip, "bomb.gz").unwrap_err();
        assert!(
            matches!(&err, ArchiveError::NotAnArchive { reason, .. } if reason.contains("not a tar")),
            "{err}"
        );
        assert!(
            counted.read < 64 * 1024,
            "read {} compressed bytes",
            counted.read
        );
    }

    struct CountingReader<R> {
        inner: R,
        read: usize,
    }

    impl<R: Read> Read for CountingReader<R> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let read = self.inner.read(buf)?;
            self.read += read;
            Ok(read)
        }
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn gzip_members_are_read_in_turn_and_trailing_bytes_left() {
        let mut stream = gzip(b"first ");
        stream.extend(gzip(b"second"));
        let mut text = String::new();
        GzipMembers::new(&stream[..])
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "first second");
        for trailing in [&[0u8; 512][..], b"-----BEGIN SIGNATURE-----"] {
            let mut padded = gzip(b"whole");
            padded.extend_from_slice(trailing);
            let mut text = String::new();
            GzipMembers::new(&padded[..])
                .read_to_string(&mut text)
                .unwrap();
            assert_eq!(text, "whole");
        }
        let mut damaged = gzip(b"whole");
        let middle = damaged.len() / 2;
        damaged[middle] ^= 0xff;
        assert!(
            GzipMembers::new(&damaged[..])
                .read_to_string(&mut String::new())
                .is_err()
        );
    }

    #[test]
    fn recognises_compression_and_tar_magic() {
        assert_eq!(sniff(b""), Magic::Empty);
        assert_eq!(sniff(&[0x1f, 0x8b, 8, 0]), Magic::Gzip);
        assert_eq!(sniff(&[0x28, 0xb5, 0x2f, 0xfd, 0]), Magic::Zstd);
        assert_eq!(sniff(b"BZh91AY"), Magic::Bzip2);
        assert_eq!(sniff(&[0xfd, b'7', b'z', b'X', b'Z', 0, 0]), Magic::Xz);
        assert_eq!(sniff(b"hello world"), Magic::Unknown);
        let mut header = tar::Header::new_gnu();
        header.set_path("manifest.json").unwrap();
        header.set_size(3);
        header.set_cksum();
        assert_eq!(sniff(header.as_bytes()), Magic::Tar);
        let mut old = tar::Header::new_old();
        old.set_path("x").unwrap();
        old.set_cksum();
        assert_eq!(sniff(old.as_bytes()), Magic::Tar);
        assert_eq!(sniff(&[7u8; 512]), Magic::Unknown);
    }
}
