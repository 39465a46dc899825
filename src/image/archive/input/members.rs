//! The files an archive holds, by path: members of an indexed tar, or files under a layout
//! directory. Finds blobs and reads small metadata members with a size cap.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::blob::{BlobFile, BlobLocation};
use super::tar_index::{TarIndex, clean_path};
use crate::image::archive::error::ArchiveError;

/// Largest metadata member (manifest, config, index) read into memory.
pub(crate) const METADATA_LIMIT: u64 = 16 << 20;

pub(crate) enum Members {
    Tar {
        file: Arc<File>,
        index: TarIndex,
    },
    Directory {
        root: PathBuf,
    },
    /// No files at all: an image assembled from blobs kept elsewhere (an engine's store).
    Nothing,
}

/// A source of member files plus the archive's display name for errors.
pub(crate) struct Container {
    pub name: Arc<str>,
    pub members: Members,
}

impl Container {
    /// Where `path`'s bytes are, if the archive has such a member.
    pub(crate) fn find(&self, path: &str) -> Option<BlobLocation> {
        let member = clean_path(path);
        match &self.members {
            Members::Tar { file, index } => index.find(&member).map(|data| BlobLocation {
                archive: Arc::clone(&self.name),
                member,
                offset: data.offset,
                len: data.len,
                file: BlobFile::Shared(Arc::clone(file)),
            }),
            Members::Directory { root } => {
                if member.is_empty() {
                    return None;
                }
                let full = root.join(Path::new(&member));
                let metadata = std::fs::metadata(&full).ok()?;
                metadata.is_file().then(|| BlobLocation {
                    archive: Arc::clone(&self.name),
                    member,
                    offset: 0,
                    len: metadata.len(),
                    file: BlobFile::Path(Arc::new(full)),
                })
            }
            Members::Nothing => None,
        }
    }

    /// Like `find`, but a missing member is an error naming who listed it (or the link that
    /// stands where it should be and leads nowhere).
    pub(crate) fn require(
        &self,
        path: &str,
        listed_by: &str,
    ) -> Result<BlobLocation, ArchiveError> {
        if let Some(location) = self.find(path) {
            return Ok(location);
        }
        if let Some(broken) = self.broken_link(path) {
            return Err(broken);
        }
        Err(ArchiveError::MissingMember {
            archive: self.name.to_string(),
            member: clean_path(path),
            listed_by: listed_by.to_string(),
            looks_truncated: self.looks_truncated(),
        })
    }

    /// When `path` is a symbolic link that cannot be followed to a file (a loop, in a tar or a
    /// directory; or, in a directory, any other reason the system gives), the error saying so.
    pub(crate) fn broken_link(&self, path: &str) -> Option<ArchiveError> {
        let member = clean_path(path);
        let reason = match &self.members {
            Members::Nothing => return None,
            Members::Tar { index, .. } => {
                let chain = index.link_loop(&member)?;
                format!(
                    "it is a symbolic link that never reaches a file ({})",
                    chain.join(" -> ")
                )
            }
            Members::Directory { root } => {
                if member.is_empty() {
                    return None;
                }
                let full = root.join(Path::new(&member));
                let link = std::fs::symlink_metadata(&full).ok()?;
                if !link.file_type().is_symlink() {
                    return None;
                }
                let err = std::fs::metadata(&full).err()?;
                let target = std::fs::read_link(&full)
                    .map(|target| format!(" to {}", target.display()))
                    .unwrap_or_default();
                format!("it is a symbolic link{target} that cannot be followed: {err}")
            }
        };
        Some(ArchiveError::BrokenLink {
            archive: self.name.to_string(),
            member,
            reason,
        })
    }

    /// The folders at the archive's top (`etc`, `blobs`), sorted.
    pub(crate) fn top_level_names(&self) -> Vec<String> {
        match &self.members {
            Members::Tar { index, .. } => index.top_level_folders(),
            Members::Directory { root } => {
                let mut names: Vec<String> = std::fs::read_dir(root)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .collect();
                names.sort();
                names
            }
            Members::Nothing => Vec::new(),
        }
    }

    /// True when the tar stops without its end marker.
    pub(crate) fn looks_truncated(&self) -> bool {
        match &self.members {
            Members::Tar { index, .. } => !index.ends_cleanly,
            Members::Directory { .. } | Members::Nothing => false,
        }
    }

    /// Reads a small member whole, refusing anything over `METADATA_LIMIT`.
    pub(crate) fn read_small(
        &self,
        location: &BlobLocation,
        what: &'static str,
    ) -> Result<Vec<u8>, ArchiveError> {
        if location.len > METADATA_LIMIT {
            return Err(ArchiveError::TooLarge {
                archive: self.name.to_string(),
                member: location.member.clone(),
                what,
                size: location.len,
                limit: METADATA_LIMIT,
            });
        }
        location.read_small().map_err(|source| ArchiveError::Read {
            archive: self.name.to_string(),
            member: location.member.clone(),
            source,
        })
    }

    /// Parses JSON already read from `member`.
    pub(crate) fn parse_json<T: DeserializeOwned>(
        &self,
        bytes: &[u8],
        member: &str,
        what: &'static str,
    ) -> Result<T, ArchiveError> {
        serde_json::from_slice(bytes).map_err(|source| ArchiveError::Json {
            archive: self.name.to_string(),
            member: member.to_string(),
            what,
            source,
        })
    }
}
