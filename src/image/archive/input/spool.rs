//! Recognising what a file or stream is by its first bytes, and spooling pipes and compressed
//! archives (gzip, zstd, bzip2, xz: what `docker load` and `podman load` read) to an anonymous
//! temporary file so the tar inside can be read at offsets.

use std::cell::Cell;
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::rc::Rc;

use crate::image::archive::error::ArchiveError;

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
    spool_within(stream, magic, archive, BOMB_FLOOR)
}

/// [`spool`], refusing a stream that inflates past `floor` bytes and [`BOMB_RATIO`] times its
/// compressed size.
fn spool_within(
    stream: impl Read,
    magic: Magic,
    archive: &str,
    floor: u64,
) -> Result<(File, Magic), ArchiveError> {
    let mut file = tempfile::tempfile().map_err(|source| ArchiveError::Spool {
        archive: archive.to_string(),
        source,
    })?;
    let compressed_read = Rc::new(Cell::new(0u64));
    let stream = Counted {
        inner: stream,
        read: Rc::clone(&compressed_read),
    };
    let read = &(compressed_read, floor);
    let (copied, compression) = match magic {
        Magic::Gzip => (
            copy_tar(GzipMembers::new(stream), read, &mut file, archive, "gzip")?,
            Some("gzip"),
        ),
        Magic::Zstd => match zstd::stream::read::Decoder::new(stream) {
            Ok(decoder) => (
                copy_tar(decoder, read, &mut file, archive, "zstd")?,
                Some("zstd"),
            ),
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
                read,
                &mut file,
                archive,
                "bzip2",
            )?,
            Some("bzip2"),
        ),
        Magic::Xz => (
            copy_tar(xz_decoder(stream, archive)?, read, &mut file, archive, "xz")?,
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

/// The most memory the xz decoder may take, as `xz -d --memlimit=256MiB` bounds it: the stream's
/// header says how large a dictionary it needs, and a hostile one claims gigabytes. `xz -9`
/// (64 MiB dictionary) and every preset below it decode within it.
pub(crate) const XZ_MEMORY_LIMIT: u64 = 256 << 20;

/// An xz decoder of concatenated streams, whose memory is bounded by [`XZ_MEMORY_LIMIT`]: a
/// stream that needs more is refused with an error that says so.
fn xz_decoder(stream: impl Read, archive: &str) -> Result<impl Read, ArchiveError> {
    let decoder =
        liblzma::stream::Stream::new_stream_decoder(XZ_MEMORY_LIMIT, liblzma::stream::CONCATENATED)
            .map_err(|err| ArchiveError::Decompress {
                archive: archive.to_string(),
                compression: "xz",
                source: io::Error::other(err),
            })?;
    Ok(XzBounded(liblzma::read::XzDecoder::new_stream(
        stream, decoder,
    )))
}

/// An xz reader whose memory-limit failure names the limit and the way out.
struct XzBounded<R: Read>(liblzma::read::XzDecoder<R>);

impl<R: Read> Read for XzBounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).map_err(|err| {
            let over_limit = err
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<liblzma::stream::Error>())
                .is_some_and(|inner| matches!(inner, liblzma::stream::Error::MemLimit));
            if over_limit {
                io::Error::other(format!(
                    "the stream needs more than {} MiB of memory to decompress (its header asks for a larger dictionary than `xz -9` uses); decompress it yourself (`xz -d --memlimit=0`) and push the tar",
                    XZ_MEMORY_LIMIT >> 20
                ))
            } else {
                err
            }
        })
    }
}

/// Copies decompressed content that must be a tar, refusing anything else after its first
/// block: a small compressed file can inflate to gigabytes, which must not reach the disk first.
fn copy_tar(
    decompressed: impl Read,
    (compressed_read, floor): &(Rc<Cell<u64>>, u64),
    to: &mut File,
    archive: &str,
    compression: &'static str,
) -> Result<Result<(), CopyFailure>, ArchiveError> {
    let mut decompressed = Inflation {
        inner: decompressed,
        compressed: Rc::clone(compressed_read),
        written: 0,
        floor: *floor,
    };
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

/// Past this many decompressed bytes, an archive must stay within [`BOMB_RATIO`] times its
/// compressed size. (Lower when fuzzing, so that a bomb is told in milliseconds.)
#[cfg(not(fuzzing))]
const BOMB_FLOOR: u64 = 1 << 30;
#[cfg(fuzzing)]
const BOMB_FLOOR: u64 = 16 << 20;
/// gzip cannot inflate past 1032:1, and real image tars compress by 2 to 10 with any codec; a
/// stream that inflates a thousandfold is a decompression bomb, refused before it fills the disk.
const BOMB_RATIO: u64 = 1000;

/// The compressed stream, counting what the decoder has read of it.
struct Counted<R> {
    inner: R,
    read: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.read.set(self.read.get() + read as u64);
        Ok(read)
    }
}

/// The decompressed stream, failing once it has inflated past [`BOMB_FLOOR`] and [`BOMB_RATIO`]
/// times what was read of the compressed one.
struct Inflation<R> {
    inner: R,
    compressed: Rc<Cell<u64>>,
    written: u64,
    floor: u64,
}

impl<R: Read> Read for Inflation<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.written += read as u64;
        if self.written > self.floor && self.written / BOMB_RATIO > self.compressed.get() {
            return Err(io::Error::other(format!(
                "it inflates to more than {BOMB_RATIO} times its compressed size ({} MiB from {} KiB so far), which no image tar does: a decompression bomb; stopped there",
                self.written >> 20,
                self.compressed.get() >> 10
            )));
        }
        Ok(read)
    }
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

    /// A tar header, then `zeros` zero bytes: a tar as far as its first block says.
    fn tar_then_zeros(zeros: u64) -> impl Read {
        let mut header = tar::Header::new_gnu();
        header.set_path("layer.tar").unwrap();
        header.set_size(zeros);
        header.set_cksum();
        io::Cursor::new(header.as_bytes().to_vec()).chain(io::repeat(0).take(zeros))
    }

    /// `content` as the real xz CLI's library writes it with a 4 KiB dictionary, its block
    /// header then edited to claim a 4 GiB one (LZMA2's property byte 40) and its CRC32 made
    /// right: 229 KB of such a file made `xz -d` without a limit take 1.5 GiB.
    fn xz_claiming_a_huge_dictionary(mut content: impl Read) -> Vec<u8> {
        let mut options = liblzma::stream::LzmaOptions::new_preset(0).unwrap();
        options.dict_size(4096);
        let mut filters = liblzma::stream::Filters::new();
        filters.lzma2(&options);
        let stream =
            liblzma::stream::Stream::new_stream_encoder(&filters, liblzma::stream::Check::Crc64)
                .unwrap();
        let mut encoder = liblzma::write::XzEncoder::new_stream(Vec::new(), stream);
        io::copy(&mut content, &mut encoder).unwrap();
        let mut xz = encoder.finish().unwrap();
        let header = 12;
        let size = (usize::from(xz[header]) + 1) * 4;
        assert_eq!(
            xz[header + 1],
            0,
            "one filter, no sizes in the block header"
        );
        assert_eq!(
            &xz[header + 2..header + 4],
            &[0x21, 0x01],
            "LZMA2, one property byte"
        );
        xz[header + 4] = 40;
        let mut crc = flate2::Crc::new();
        crc.update(&xz[header..header + size - 4]);
        xz[header + size - 4..header + size].copy_from_slice(&crc.sum().to_le_bytes());
        xz
    }

    #[test]
    fn an_xz_stream_claiming_a_dictionary_past_the_memory_limit_is_refused() {
        let hostile = xz_claiming_a_huge_dictionary(tar_then_zeros(1 << 20));
        let err = spool(&hostile[..], Magic::Xz, "big-dict.tar.xz").unwrap_err();
        let ArchiveError::Decompress {
            compression,
            source,
            ..
        } = &err
        else {
            panic!("{err}");
        };
        assert_eq!(*compression, "xz");
        assert!(
            source
                .to_string()
                .starts_with("the stream needs more than 256 MiB of memory to decompress"),
            "{source}"
        );
        // The same stream with its honest 4 KiB dictionary reads.
        let mut honest = xz_claiming_a_huge_dictionary(tar_then_zeros(1 << 20));
        honest[16] = 0;
        let mut crc = flate2::Crc::new();
        crc.update(&honest[12..20]);
        honest[20..24].copy_from_slice(&crc.sum().to_le_bytes());
        let (_, inner) = spool(&honest[..], Magic::Xz, "small-dict.tar.xz").unwrap();
        assert_eq!(inner, Magic::Tar);
    }

    #[test]
    fn a_stream_inflating_a_thousandfold_past_the_floor_is_refused() {
        let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 19).unwrap();
        io::copy(&mut tar_then_zeros(64 << 20), &mut encoder).unwrap();
        let bomb = encoder.finish().unwrap();
        assert!(bomb.len() < (64 << 20) / 1000, "{} bytes", bomb.len());
        let err = spool_within(&bomb[..], Magic::Zstd, "bomb.tar.zst", 16 << 20).unwrap_err();
        assert!(
            err.to_string().contains("bomb.tar.zst")
                && std::error::Error::source(&err)
                    .unwrap()
                    .to_string()
                    .contains("inflates to more than 1000 times its compressed size"),
            "{err}"
        );
        // Under the floor, the same ratio is an archive like any other.
        assert!(spool_within(&bomb[..], Magic::Zstd, "bomb.tar.zst", 128 << 20).is_ok());
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
