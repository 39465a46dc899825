//! One pass over a tar file's headers: where each member's data starts and how long it is, with
//! symlinks and hardlinks between members resolved. Member data is never read here.

use std::collections::HashMap;
use std::fs::File;

use tar::EntryType;

use super::positioned;
use crate::image::archive::error::ArchiveError;

/// Links followed before a member is declared a loop.
const MAX_LINK_DEPTH: usize = 16;

/// The data of one regular member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemberData {
    pub offset: u64,
    pub len: u64,
}

#[derive(Debug, Clone)]
enum Member {
    Data(MemberData),
    /// A symlink or hardlink, its target already made archive-relative.
    Link(String),
}

/// The members of a tar file, by cleaned path.
#[derive(Debug, Default)]
pub(crate) struct TarIndex {
    members: HashMap<String, Member>,
    /// False when the file stops without the zero block that ends a tar: likely truncated.
    pub ends_cleanly: bool,
}

impl TarIndex {
    /// Reads every header of `file` (whose size is `file_len`) from its first byte, seeking over
    /// member data with a cursor of its own: the handle's cursor, which Windows' positioned reads
    /// move, is neither read nor moved.
    pub(crate) fn build(file: &File, file_len: u64, archive: &str) -> Result<Self, ArchiveError> {
        let tar_error = |source| ArchiveError::Tar {
            archive: archive.to_string(),
            source,
        };
        let mut reader = tar::Archive::new(positioned::At::start(file));
        let mut index = TarIndex::default();
        let mut next_header = 0u64;
        for entry in reader.entries_with_seek().map_err(tar_error)? {
            let entry = entry.map_err(tar_error)?;
            let offset = entry.raw_file_position();
            let len = entry.size();
            let end = offset.saturating_add(len);
            next_header = end.div_ceil(512).saturating_mul(512);
            let name = clean_path(&String::from_utf8_lossy(&entry.path_bytes()));
            let entry_type = entry.header().entry_type();
            if end > file_len && matches!(entry_type, EntryType::Regular | EntryType::Continuous) {
                return Err(ArchiveError::Truncated {
                    archive: archive.to_string(),
                    member: name,
                    end,
                    len: file_len,
                });
            }
            let member = match entry_type {
                EntryType::Regular | EntryType::Continuous => {
                    Member::Data(MemberData { offset, len })
                }
                EntryType::Symlink | EntryType::Link => {
                    let Some(target) = entry.link_name_bytes() else {
                        continue;
                    };
                    let target = String::from_utf8_lossy(&target).into_owned();
                    Member::Link(if entry_type == EntryType::Symlink {
                        resolve_symlink(&name, &target)
                    } else {
                        clean_path(&target)
                    })
                }
                _ => continue,
            };
            index.members.insert(name, member);
        }
        index.ends_cleanly = ends_with_zero_block(file, next_header);
        Ok(index)
    }

    /// The data of the member at `path`, following links.
    pub(crate) fn find(&self, path: &str) -> Option<MemberData> {
        let mut name = clean_path(path);
        for _ in 0..MAX_LINK_DEPTH {
            match self.members.get(&name)? {
                Member::Data(data) => return Some(*data),
                Member::Link(target) => name = target.clone(),
            }
        }
        None
    }

    /// The chain of links from `path` when it never reaches data (`manifest.json -> a ->
    /// manifest.json`): a loop, or more links than we follow. `None` when `path` is not a link
    /// or its links end (at data, or at nothing).
    pub(crate) fn link_loop(&self, path: &str) -> Option<Vec<String>> {
        let mut name = clean_path(path);
        let mut chain = vec![name.clone()];
        for _ in 0..MAX_LINK_DEPTH {
            match self.members.get(&name)? {
                Member::Data(_) => return None,
                Member::Link(target) => {
                    name = target.clone();
                    let looped = chain.contains(&name);
                    chain.push(name.clone());
                    if looped {
                        return Some(chain);
                    }
                }
            }
        }
        Some(chain)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The folders at the tar's top that hold members, sorted, each once.
    pub(crate) fn top_level_folders(&self) -> Vec<String> {
        let mut folders: Vec<String> = self
            .members
            .keys()
            .filter_map(|path| path.split_once('/').map(|(first, _)| first.to_string()))
            .collect();
        folders.sort();
        folders.dedup();
        folders
    }
}

/// True when a zero block follows the last member, as every tar writer ends its output.
fn ends_with_zero_block(file: &File, position: u64) -> bool {
    let mut block = [0u8; 512];
    matches!(
        positioned::read_exact_at(file, &mut block, position),
        Ok(())
    ) && block.iter().all(|&b| b == 0)
}

/// A symlink's target relative to the archive root (targets are relative to the link's folder).
fn resolve_symlink(link: &str, target: &str) -> String {
    if target.starts_with('/') {
        return clean_path(target);
    }
    match link.rsplit_once('/') {
        Some((folder, _)) => clean_path(&format!("{folder}/{target}")),
        None => clean_path(target),
    }
}

/// Normalises a member path like Go's `path.Clean`, relative to the archive root:
/// `./a//b/../c/` becomes `a/c`; nothing climbs above the root.
pub(crate) fn clean_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleans_paths_like_go_path_clean_from_the_root() {
        assert_eq!(clean_path("./manifest.json"), "manifest.json");
        assert_eq!(clean_path("a//b/../c/"), "a/c");
        assert_eq!(clean_path("/../../etc/passwd"), "etc/passwd");
    }

    #[test]
    fn symlink_targets_are_relative_to_the_link_folder() {
        assert_eq!(
            resolve_symlink("abc/layer.tar", "../def/layer.tar"),
            "def/layer.tar"
        );
        assert_eq!(resolve_symlink("top", "other"), "other");
        assert_eq!(resolve_symlink("a/b", "/c/d"), "c/d");
    }

    #[test]
    fn indexes_from_the_first_byte_wherever_the_handle_cursor_was_left() {
        use std::io::{Seek, SeekFrom};
        let mut builder = tar::Builder::new(tempfile::tempfile().unwrap());
        for (path, data) in [("manifest.json", &b"[]"[..]), ("blobs/a", &[7u8; 700][..])] {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            builder.append_data(&mut header, path, data).unwrap();
        }
        let mut file = builder.into_inner().unwrap();
        let len = file.metadata().unwrap().len();
        // Where Windows' `seek_read` of the first bytes leaves the cursor (the sniff reads 512).
        file.seek(SeekFrom::Start(512)).unwrap();
        let index = TarIndex::build(&file, len, "x.tar").unwrap();
        assert_eq!(
            index.find("manifest.json"),
            Some(MemberData {
                offset: 512,
                len: 2
            })
        );
        assert_eq!(
            index.find("./blobs/a"),
            Some(MemberData {
                offset: 1536,
                len: 700
            })
        );
        assert!(index.ends_cleanly);
    }
}
