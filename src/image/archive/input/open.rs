//! Opening an input: a tar file read in place, a compressed tar (gzip, zstd, bzip2, xz) or a
//! pipe spooled to a temporary file, or a layout directory; recognised by content, then its
//! images resolved.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::members::{Container, Members};
use super::spool::Magic;
use super::tar_index::TarIndex;
use super::{positioned, spool};
use crate::image::archive::error::ArchiveError;
use crate::image::archive::formats::oci::Layout;
use crate::image::archive::formats::{dir, docker, oci};
use crate::image::archive::image::Image;
use crate::image::archive::{Archive, Format, Source, Wrapping};

impl Archive {
    /// Opens a path (tar, compressed tar, or OCI layout directory) or standard input.
    pub fn open(source: &Source) -> Result<Self, ArchiveError> {
        match source {
            Source::Stdin => Self::from_reader(io::stdin().lock(), "standard input"),
            Source::Path(path) => Self::open_path(path),
        }
    }

    /// Reads an archive from a stream (a pipe), copying it to a temporary file first.
    pub fn from_reader(mut stream: impl Read, name: &str) -> Result<Self, ArchiveError> {
        let prefix = spool::read_prefix(&mut stream).map_err(|source| ArchiveError::Open {
            archive: name.to_string(),
            source,
        })?;
        let magic = spool::sniff(&prefix);
        let wrapping = match magic {
            Magic::Tar => Wrapping::Piped,
            other => compressed(other).ok_or_else(|| unreadable(name, other))?,
        };
        let (file, inner) = spool::spool(io::Cursor::new(prefix).chain(stream), magic, name)?;
        Self::from_spooled(file, inner, name, wrapping)
    }

    fn open_path(path: &Path) -> Result<Self, ArchiveError> {
        let name = path.display().to_string();
        let open_error = |source| ArchiveError::Open {
            archive: name.clone(),
            source,
        };
        let metadata = std::fs::metadata(path).map_err(open_error)?;
        if metadata.is_dir() {
            return Self::from_directory(path, name);
        }
        let file = File::open(path).map_err(open_error)?;
        if !metadata.is_file() {
            // A pipe such as `<(docker save img)`: it cannot be read at offsets.
            return Self::from_reader(file, &name);
        }
        let mut prefix = vec![0u8; spool::SNIFF_LEN.min(metadata.len() as usize)];
        positioned::read_exact_at(&file, &mut prefix, 0).map_err(open_error)?;
        match spool::sniff(&prefix) {
            Magic::Tar => Self::from_tar(file, &name, Wrapping::None, Some(path.to_path_buf())),
            magic => {
                let wrapping = compressed(magic).ok_or_else(|| unreadable(&name, magic))?;
                // From the first byte, whatever the read of the prefix did to the handle's cursor.
                let (spooled, inner) = spool::spool(positioned::At::start(&file), magic, &name)?;
                Self::from_spooled(spooled, inner, &name, wrapping)
            }
        }
    }

    fn from_spooled(
        file: File,
        inner: Magic,
        name: &str,
        wrapping: Wrapping,
    ) -> Result<Self, ArchiveError> {
        match inner {
            Magic::Tar => Self::from_tar(file, name, wrapping, None),
            _ => Err(ArchiveError::NotAnArchive {
                archive: name.to_string(),
                reason: "its decompressed content is not a tar file".to_string(),
            }),
        }
    }

    pub(super) fn from_tar(
        file: File,
        name: &str,
        wrapping: Wrapping,
        in_place: Option<PathBuf>,
    ) -> Result<Self, ArchiveError> {
        let len = file
            .metadata()
            .map_err(|source| ArchiveError::Open {
                archive: name.to_string(),
                source,
            })?
            .len();
        let index = TarIndex::build(&file, len, name)?;
        if index.is_empty() {
            return Err(ArchiveError::NotAnArchive {
                archive: name.to_string(),
                reason: "the tar holds no files".to_string(),
            });
        }
        let container = Container {
            name: Arc::from(name),
            members: Members::Tar {
                file: Arc::new(file),
                index,
            },
        };
        Self::discover(container, wrapping, in_place)
    }

    fn from_directory(root: &Path, name: String) -> Result<Self, ArchiveError> {
        let container = Container {
            name: Arc::from(name.as_str()),
            members: Members::Directory {
                root: root.to_path_buf(),
            },
        };
        if container.find(oci::INDEX_JSON).is_none()
            && container.find(docker::MANIFEST_JSON).is_none()
        {
            if let Some(broken) = metadata_link(&container) {
                return Err(broken);
            }
            return Err(ArchiveError::NotAnArchive {
                archive: name,
                reason: "it is a directory without index.json or manifest.json, so neither an OCI \
                         layout nor a `dir:` copy (skopeo, podman save --format docker-dir)"
                    .to_string(),
            });
        }
        Self::discover(container, Wrapping::Directory, None)
    }

    /// Reads the metadata members and resolves every image. An archive with both an OCI
    /// index and docker's `manifest.json` is read by whichever describes an image: docker 25/26
    /// may write an index with no entries (`"manifests": null`) beside a valid `manifest.json`.
    fn discover(
        container: Container,
        wrapping: Wrapping,
        in_place: Option<PathBuf>,
    ) -> Result<Self, ArchiveError> {
        let has_index = container.find(oci::INDEX_JSON).is_some();
        let has_manifest = container.find(docker::MANIFEST_JSON).is_some();
        let (format, layout) = match (has_index, has_manifest) {
            (true, _) => {
                let layout = oci::layout(&container)?;
                let describes_an_image = layout
                    .images
                    .iter()
                    .any(|image| !image.platforms.is_empty());
                if !describes_an_image && has_manifest {
                    let entries = docker::read_manifest_json(&container)?;
                    let images = docker::images(&container, &entries)?;
                    (Format::Docker, Layout { images, ..layout })
                } else {
                    (Format::OciLayout, layout)
                }
            }
            (false, true) => {
                let location = container.require(docker::MANIFEST_JSON, "an image archive")?;
                let bytes = container.read_small(&location, "manifest.json")?;
                if dir::is_dir_transport(&bytes) {
                    let image = dir::image(&container, bytes)?;
                    (Format::DirTransport, layout_of(vec![image]))
                } else {
                    let entries = docker::read_manifest_json(&container)?;
                    let images = docker::images(&container, &entries)?;
                    (Format::Docker, layout_of(images))
                }
            }
            (false, false) => return Err(no_metadata(&container)),
        };
        // An archive of artifacts or unreadable entries opens: `select` says what is wrong with
        // the entry asked for, or with all of them when none is named.
        if layout.images.is_empty() && layout.others.is_empty() {
            return Err(ArchiveError::NoImages {
                archive: container.name.to_string(),
                looks_truncated: container.looks_truncated(),
                others: Vec::new(),
            });
        }
        Ok(Self {
            container,
            format,
            wrapping,
            in_place,
            images: layout.images,
            others: layout.others,
        })
    }
}

fn layout_of(images: Vec<Image>) -> Layout {
    Layout {
        images,
        others: Vec::new(),
    }
}

/// The wrapping of a compressed tar; `None` for what is not compressed the ways we read.
fn compressed(magic: Magic) -> Option<Wrapping> {
    match magic {
        Magic::Gzip => Some(Wrapping::Gzip),
        Magic::Zstd => Some(Wrapping::Zstd),
        Magic::Bzip2 => Some(Wrapping::Bzip2),
        Magic::Xz => Some(Wrapping::Xz),
        Magic::Empty | Magic::Tar | Magic::Unknown => None,
    }
}

fn unreadable(name: &str, magic: Magic) -> ArchiveError {
    match magic {
        Magic::Empty => ArchiveError::Empty {
            archive: name.to_string(),
        },
        _ => ArchiveError::NotAnArchive {
            archive: name.to_string(),
            reason: spool::not_an_archive_reason(),
        },
    }
}

/// Folders a root filesystem has at its top and an image archive never does.
const ROOT_FILESYSTEM_DIRS: [&str; 9] = [
    "bin", "etc", "usr", "lib", "sbin", "var", "opt", "home", "root",
];

/// A symbolic link where `manifest.json` or `index.json` belongs that leads to no file.
fn metadata_link(container: &Container) -> Option<ArchiveError> {
    [docker::MANIFEST_JSON, oci::INDEX_JSON]
        .into_iter()
        .find_map(|member| container.broken_link(member))
}

fn no_metadata(container: &Container) -> ArchiveError {
    if let Some(broken) = metadata_link(container) {
        return broken;
    }
    if container.looks_truncated() {
        return ArchiveError::TruncatedBeforeMetadata {
            archive: container.name.to_string(),
        };
    }
    if container.find("repositories").is_some() {
        return ArchiveError::NotAnArchive {
            archive: container.name.to_string(),
            reason:
                "it is in docker's pre-1.10 save format (no manifest.json), which is not supported"
                    .to_string(),
        };
    }
    let top_level = container.top_level_names();
    if top_level
        .iter()
        .any(|name| ROOT_FILESYSTEM_DIRS.contains(&name.as_str()))
    {
        return ArchiveError::Filesystem {
            archive: container.name.to_string(),
            sample: top_level
                .iter()
                .take(4)
                .map(|name| format!("{name}/"))
                .collect::<Vec<_>>()
                .join(", "),
        };
    }
    let reason = "it has neither manifest.json (docker) nor index.json (OCI)";
    ArchiveError::NotAnArchive {
        archive: container.name.to_string(),
        reason: reason.to_string(),
    }
}
