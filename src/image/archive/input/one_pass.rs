//! Reading an archive in one pass as it is produced (an engine's export on a pipe), without a
//! copy of the image: each large member is handed to the caller while it streams past (to upload
//! or read past), hashed on the way, and only small members (configs, manifests, metadata) are
//! kept. They go into a skeleton tar, in an anonymous temporary file, where each large member keeps
//! its first block and the rest is a hole: the ordinary parsers then read the skeleton as they read
//! any archive, and every layer is checked against the digest hashed while it streamed.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use sha2::{Digest as _, Sha256};
use tar::{EntryType, Header};

use super::spool::{Magic, sniff};
use super::tar_index::clean_path;
use crate::image::archive::error::ArchiveError;
use crate::image::archive::formats::docker::digest_in_blob_path;
use crate::image::archive::image::{Compression, Layer};
use crate::image::archive::{Archive, Wrapping};
use crate::image::digest::Digest;

/// Members up to this size are kept whole: every config, manifest and metadata file, and layers
/// small enough that holding them costs nothing.
const KEEP_WHOLE: u64 = 1 << 20;

const BLOCK: usize = 512;
const COPY_BUFFER: usize = 256 * 1024;

/// A large member as it starts to stream past.
#[derive(Debug)]
pub struct LargeMember<'a> {
    /// Where its data is in the skeleton: the `location.offset` of the layer it turns out to be.
    pub offset: u64,
    pub path: &'a str,
    pub len: u64,
    /// The digest its name promises (`blobs/sha256/<hex>`, podman's `<hex>.tar`): checked at
    /// its end, so the caller may rely on it.
    pub named_digest: Option<Digest>,
    pub compression: Compression,
}

/// Takes each large member as it streams past. It must read `content` to its end (uploading it,
/// or reading past it); an error stops the pass.
pub trait MemberSink {
    fn large_member(&mut self, member: &LargeMember, content: &mut dyn Read) -> io::Result<()>;
}

/// An archive read in one pass: its images, with the layers that streamed past marked.
pub struct StreamedArchive {
    pub archive: Archive,
    /// The hashed digest of each large member, by its data offset in the skeleton.
    streamed: HashMap<u64, Digest>,
}

impl StreamedArchive {
    /// True when `layer` streamed past the sink (so its bytes are not in the skeleton); the
    /// sink saw it as the `LargeMember` at the same offset.
    pub fn streamed(&self, layer: &Layer) -> bool {
        self.streamed.contains_key(&layer.location.offset)
    }
}

impl Archive {
    /// Reads the tar `stream` once, handing large members to `sink`, and resolves its images.
    pub fn read_stream(
        stream: impl Read,
        name: &str,
        sink: &mut dyn MemberSink,
    ) -> Result<StreamedArchive, ArchiveError> {
        let tar_error = |source| ArchiveError::Tar {
            archive: name.to_string(),
            source,
        };
        let spool_error = |source| ArchiveError::Spool {
            archive: name.to_string(),
            source,
        };
        let mut skeleton = tar::Builder::new(tempfile::tempfile().map_err(spool_error)?);
        let mut streamed = HashMap::new();
        let mut reader = tar::Archive::new(stream);
        for entry in reader.entries().map_err(tar_error)? {
            let mut entry = entry.map_err(tar_error)?;
            let path = clean_path(&String::from_utf8_lossy(&entry.path_bytes()));
            let entry_type = entry.header().entry_type();
            let len = entry.size();
            match entry_type {
                EntryType::Regular | EntryType::Continuous if len > KEEP_WHOLE => {
                    let (offset, digest) =
                        stream_member(&mut skeleton, &path, len, &mut entry, sink)
                            .map_err(|failure| failure.into_error(name, &path))?;
                    streamed.insert(offset, digest);
                }
                EntryType::Regular | EntryType::Continuous => {
                    let mut header = member_header(EntryType::Regular, len);
                    skeleton
                        .append_data(&mut header, &path, &mut entry)
                        .map_err(spool_error)?;
                }
                EntryType::Symlink | EntryType::Link => {
                    let Some(target) = entry.link_name_bytes() else {
                        continue;
                    };
                    let target = String::from_utf8_lossy(&target).into_owned();
                    let mut header = member_header(entry_type, 0);
                    skeleton
                        .append_link(&mut header, &path, target)
                        .map_err(spool_error)?;
                }
                _ => {}
            }
        }
        skeleton.finish().map_err(spool_error)?;
        let mut file = skeleton.into_inner().map_err(spool_error)?;
        file.rewind().map_err(spool_error)?;
        let mut archive = Self::from_tar(file, name, Wrapping::Piped, None)?;
        check_streamed_layers(&mut archive, &streamed)?;
        Ok(StreamedArchive { archive, streamed })
    }
}

fn member_header(entry_type: EntryType, len: u64) -> Header {
    let mut header = Header::new_gnu();
    header.set_entry_type(entry_type);
    header.set_size(len);
    header.set_mode(0o644);
    header
}

/// Why streaming one member failed: the stream itself, the skeleton, or a wrong digest.
enum MemberFailure {
    Read(io::Error),
    Skeleton(io::Error),
    Mismatch { expected: Digest, actual: Digest },
}

impl MemberFailure {
    fn into_error(self, archive: &str, member: &str) -> ArchiveError {
        match self {
            Self::Read(source) => ArchiveError::Read {
                archive: archive.to_string(),
                member: member.to_string(),
                source,
            },
            Self::Skeleton(source) => ArchiveError::Spool {
                archive: archive.to_string(),
                source,
            },
            Self::Mismatch { expected, actual } => {
                ArchiveError::digest_mismatch(archive, member, "digest", &expected, &actual)
            }
        }
    }
}

/// Hands one large member to the sink, hashing it, and writes its header and first block to
/// the skeleton with a hole for the rest. Returns its data offset there and its digest.
fn stream_member(
    skeleton: &mut tar::Builder<File>,
    path: &str,
    len: u64,
    content: &mut impl Read,
    sink: &mut dyn MemberSink,
) -> Result<(u64, Digest), MemberFailure> {
    let mut first = Vec::with_capacity(BLOCK);
    content
        .take(BLOCK as u64)
        .read_to_end(&mut first)
        .map_err(MemberFailure::Read)?;
    let mut header = member_header(EntryType::Regular, len);
    skeleton
        .append_data(&mut header, path, &first[..])
        .map_err(MemberFailure::Skeleton)?;
    let file = skeleton.get_mut();
    let after_first = file.stream_position().map_err(MemberFailure::Skeleton)?;
    let offset = after_first - BLOCK as u64;
    file.seek(SeekFrom::Start(
        offset + len.div_ceil(BLOCK as u64) * BLOCK as u64,
    ))
    .map_err(MemberFailure::Skeleton)?;

    let compression = match sniff(&first) {
        Magic::Gzip => Compression::Gzip,
        Magic::Zstd => Compression::Zstd,
        _ => Compression::None,
    };
    let member = LargeMember {
        offset,
        path,
        len,
        named_digest: named_digest(path),
        compression,
    };
    let mut hashing = Hashing {
        inner: io::Cursor::new(first).chain(content),
        hasher: Sha256::new(),
    };
    sink.large_member(&member, &mut hashing)
        .map_err(MemberFailure::Read)?;
    // Whatever the sink left unread is still hashed: the digest covers the whole member.
    let mut buffer = vec![0u8; COPY_BUFFER];
    while hashing.read(&mut buffer).map_err(MemberFailure::Read)? > 0 {}
    let actual = Digest::from_sha256(hashing.hasher);
    match member.named_digest {
        Some(expected) if expected != actual => Err(MemberFailure::Mismatch { expected, actual }),
        _ => Ok((offset, actual)),
    }
}

/// The digest a member's name promises: an OCI layout blob, or podman's `<hex>.tar` layer.
fn named_digest(path: &str) -> Option<Digest> {
    digest_in_blob_path(path).or_else(|| {
        let hex = path.strip_suffix(".tar")?;
        (hex.len() == 64 && !hex.contains('/'))
            .then(|| format!("sha256:{hex}").parse().ok())
            .flatten()
    })
}

/// Every streamed layer's hashed digest must be the one its manifest (or, uncompressed, its
/// diff_id) names; a compressed docker-archive layer learns its digest here.
fn check_streamed_layers(
    archive: &mut Archive,
    streamed: &HashMap<u64, Digest>,
) -> Result<(), ArchiveError> {
    let name = archive.name().to_string();
    for image in &mut archive.images {
        for platform in &mut image.platforms {
            for layer in &mut platform.layers {
                let Some(actual) = streamed.get(&layer.location.offset) else {
                    continue;
                };
                match &layer.digest {
                    Some(expected) if expected != actual => {
                        let what = if layer.compression == Compression::None {
                            "diff_id"
                        } else {
                            "digest"
                        };
                        return Err(ArchiveError::digest_mismatch(
                            &name,
                            &layer.location.member,
                            what,
                            expected,
                            actual,
                        ));
                    }
                    Some(_) => {}
                    None => layer.digest = Some(actual.clone()),
                }
            }
        }
    }
    Ok(())
}

struct Hashing<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.hasher.update(&buf[..read]);
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_promise_digests_for_layout_blobs_and_podman_layers() {
        let hex = "0aced4ecfcce9b90930ca600911446237d36bfe896ed2af7556f8bc1427acea3";
        let digest: Digest = format!("sha256:{hex}").parse().unwrap();
        assert_eq!(
            named_digest(&format!("blobs/sha256/{hex}")),
            Some(digest.clone())
        );
        assert_eq!(named_digest(&format!("{hex}.tar")), Some(digest));
        assert_eq!(named_digest(&format!("{hex}/layer.tar")), None);
        assert_eq!(named_digest("layer.tar"), None);
    }
}
