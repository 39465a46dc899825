//! Image archives users hand us: recognise the format by content, index the tar once, list and
//! select images and platforms, stream verified blobs, write a single-platform archive.
//!
//! Synchronous (std I/O): the push pipeline runs it on blocking threads.
//!
//! ```no_run
//! # use kubectl_registry::image::archive::{Archive, Source};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let archive = Archive::open(&Source::from_arg("myimg.tar"))?;
//! let image = archive.select(Some("myimg:dev"), None)?;
//! for platform in &image.platforms {
//!     for layer in &platform.layers {
//!         let mut reader = archive.layer_reader(layer)?; // fails at the end on a bad digest
//!         std::io::copy(&mut reader, &mut std::io::sink())?; // upload instead
//!     }
//!     let manifest = archive.manifest(platform)?; // push last
//! #   let _ = manifest;
//! }
//! # Ok(()) }
//! ```

mod assembled;
pub mod changes;
mod config;
mod error;
mod formats;
mod image;
mod input;
mod layer;
mod manifest;
mod select;
mod verify;
mod write;

use std::io;
use std::path::PathBuf;

pub use crate::image::oci::Platform;
pub use assembled::AssembledLayer;
pub(crate) use config::ConfigFacts;
pub use error::{ArchiveError, archive_error_in};
pub(crate) use image::oci_manifest;
pub use image::{
    AbsentPlatform, Attachment, Compression, DropReason, Dropped, Image, Layer, OtherEntry,
    OtherKind, PlatformImage, RawBlob, oci_layer_type,
};
pub use input::blob::{BlobLocation, BlobReader, OpenBlob};
pub use input::one_pass::{LargeMember, MemberSink, StreamedArchive};
pub use verify::{VerifyingReader, is_verification_failure};
pub use write::containerd_name;

use input::members::Container;

/// Where an archive comes from: a file or directory, or standard input (`-`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Path(PathBuf),
    Stdin,
}

impl Source {
    /// The command-line argument: `-` is standard input, anything else a path.
    pub fn from_arg(arg: &str) -> Self {
        if arg == "-" {
            Self::Stdin
        } else {
            Self::Path(PathBuf::from(arg))
        }
    }
}

/// How the archive lays out its images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `manifest.json` only: docker save up to 24, podman, skopeo, nix, jib, crane.
    Docker,
    /// An OCI layout (`index.json`), possibly with docker's `manifest.json` beside it
    /// (docker 25+, containerd exports).
    OciLayout,
    /// The containers/image `dir:` transport: skopeo `dir:`, podman save --format docker-dir.
    DirTransport,
}

/// What the input was wrapped in before we could read the tar inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrapping {
    /// A tar file read in place.
    None,
    /// A layout directory.
    Directory,
    Gzip,
    Zstd,
    Bzip2,
    Xz,
    /// An uncompressed tar from a pipe (standard input, `<(docker save ..)`), copied to a
    /// temporary file.
    Piped,
}

/// An opened archive: its members indexed, its images resolved.
pub struct Archive {
    container: Container,
    format: Format,
    wrapping: Wrapping,
    /// The tar file on disk when it is read in place (not spooled, not a directory).
    in_place: Option<PathBuf>,
    images: Vec<Image>,
    /// Layout entries that are not images: artifacts, and entries that cannot be read.
    others: Vec<OtherEntry>,
}

impl std::fmt::Debug for Archive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archive")
            .field("name", &self.container.name)
            .field("format", &self.format)
            .field("wrapping", &self.wrapping)
            .field("images", &self.images.len())
            .finish()
    }
}

impl Archive {
    /// The archive's display name: its path, or "standard input".
    pub fn name(&self) -> &str {
        &self.container.name
    }

    pub fn format(&self) -> Format {
        self.format
    }

    pub fn wrapping(&self) -> Wrapping {
        self.wrapping
    }

    /// Every image in the archive, in the order the archive lists them.
    pub fn images(&self) -> &[Image] {
        &self.images
    }

    /// What else an OCI layout lists: artifacts (signatures, SBOMs, charts) and entries that
    /// cannot be read, whose problem is told only when one is asked for by `--image`.
    pub fn other_entries(&self) -> &[OtherEntry] {
        &self.others
    }

    /// A reader over a blob's stored bytes, unverified. Readers share the open file through
    /// positioned reads, so several can run in parallel on blocking threads.
    pub fn blob_reader(&self, location: &BlobLocation) -> io::Result<BlobReader> {
        location.open()
    }
}
