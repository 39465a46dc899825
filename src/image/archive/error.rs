//! What can go wrong reading or writing an image archive, and how that becomes the CLI's error.

use std::io;
use std::path::PathBuf;

use crate::image::digest::Digest;
use crate::plumbing::error::{Cause, Error, ExitCode};

/// Every archive failure names the archive (its path, or "standard input") and, where one is
/// involved, the member or layer.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("cannot read {archive}")]
    Open {
        archive: String,
        #[source]
        source: io::Error,
    },

    #[error("{archive} is empty, not an image archive")]
    Empty { archive: String },

    #[error("{archive} is not an image archive: {reason}")]
    NotAnArchive { archive: String, reason: String },

    #[error(
        "{archive} is a filesystem, not an image: it holds files ({sample}) but neither manifest.json nor index.json, as a `docker export` or a single layer does"
    )]
    Filesystem { archive: String, sample: String },

    #[error("decompressing {archive} ({compression})")]
    Decompress {
        archive: String,
        compression: &'static str,
        #[source]
        source: io::Error,
    },

    #[error("copying {archive} to a temporary file")]
    Spool {
        archive: String,
        #[source]
        source: io::Error,
    },

    #[error("reading the tar structure of {archive}")]
    Tar {
        archive: String,
        #[source]
        source: io::Error,
    },

    #[error(
        "{archive} is truncated: member {member} ends at byte {end} but the file has {len} bytes"
    )]
    Truncated {
        archive: String,
        member: String,
        end: u64,
        len: u64,
    },

    #[error("{archive}: {listed_by} names {member}, which is not in the archive{}", truncation_note(*.looks_truncated))]
    MissingMember {
        archive: String,
        member: String,
        listed_by: String,
        looks_truncated: bool,
    },

    #[error("{archive} ends before its manifest.json or index.json: it looks truncated")]
    TruncatedBeforeMetadata { archive: String },

    #[error("reading {member} in {archive}")]
    Read {
        archive: String,
        member: String,
        #[source]
        source: io::Error,
    },

    #[error("{archive}: {member} is not a valid {what}")]
    Json {
        archive: String,
        member: String,
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },

    #[error("{archive}: {member} is {size} bytes, more than the {limit} bytes allowed for {what}")]
    TooLarge {
        archive: String,
        member: String,
        what: &'static str,
        size: u64,
        limit: u64,
    },

    #[error("{archive}: {member}: {reason}")]
    BrokenLink {
        archive: String,
        member: String,
        reason: String,
    },

    #[error("{archive}: {member}: {reason}")]
    Invalid {
        archive: String,
        member: String,
        reason: String,
    },

    #[error(
        "{archive}: {member} is {found}, not an image index: an OCI layout's index.json lists manifests by digest"
    )]
    ManifestForIndex {
        archive: String,
        member: String,
        /// `an image manifest (application/vnd.oci.image.manifest.v1+json), with a config and 1 layer`
        found: String,
    },

    #[error("{archive} holds no image{}{}", only_others(.others), truncation_note(*.looks_truncated))]
    NoImages {
        archive: String,
        looks_truncated: bool,
        /// Labels of the entries that are not images (artifacts, unreadable entries).
        others: Vec<String>,
    },

    #[error(
        "{archive} holds {}; say which one with --image: {}{}",
        counts(.images.len(), *.artifacts, *.unreadable),
        .images.join(", "),
        also_there(.others)
    )]
    Ambiguous {
        archive: String,
        images: Vec<String>,
        artifacts: usize,
        unreadable: usize,
        others: Vec<String>,
    },

    #[error("{archive} has no image named {wanted}; it holds{}{}", holds(.images), also_there(.others))]
    NoSuchImage {
        archive: String,
        wanted: String,
        images: Vec<String>,
        others: Vec<String>,
    },

    #[error("{entry} in {archive} is not a container image but an artifact: {kind}")]
    NotAnImage {
        archive: String,
        entry: String,
        kind: String,
    },

    #[error("{image} in {archive} has no platform {wanted}; it has: {}", .platforms.join(", "))]
    NoSuchPlatform {
        archive: String,
        image: String,
        wanted: String,
        platforms: Vec<String>,
    },

    #[error(transparent)]
    BadPlatform(#[from] crate::image::oci::BadPlatform),

    #[error("{image} in {archive} has none of its platforms' blobs in the archive ({})", .absent.join("; "))]
    NoPlatformPresent {
        archive: String,
        image: String,
        absent: Vec<String>,
    },

    #[error("{what} of {member} in {archive} does not match: expected {expected}, got {actual}")]
    Mismatch {
        archive: String,
        member: String,
        what: &'static str,
        expected: String,
        actual: String,
    },

    #[error(
        "layer {member} in {archive} has no known digest yet: hash it first (Archive::resolve_digests)"
    )]
    UnresolvedDigest { archive: String, member: String },

    #[error("writing {}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// `2 images, 3 artifacts, 1 unreadable entry`
fn counts(images: usize, artifacts: usize, unreadable: usize) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut parts = vec![plural(images, "image", "images")];
    if artifacts > 0 {
        parts.push(plural(artifacts, "artifact", "artifacts"));
    }
    if unreadable > 0 {
        parts.push(plural(unreadable, "unreadable entry", "unreadable entries"));
    }
    parts.join(", ")
}

/// `: myimg:dev, other:1`, or ` no image` when there is none.
fn holds(images: &[String]) -> String {
    if images.is_empty() {
        " no image".to_string()
    } else {
        format!(": {}", images.join(", "))
    }
}

fn also_there(others: &[String]) -> String {
    if others.is_empty() {
        String::new()
    } else {
        format!(" (not images: {})", others.join(", "))
    }
}

fn only_others(others: &[String]) -> String {
    if others.is_empty() {
        String::new()
    } else {
        format!(", only {}", others.join(", "))
    }
}

fn truncation_note(looks_truncated: bool) -> &'static str {
    if looks_truncated {
        " (the archive ends without a tar end marker: it looks truncated)"
    } else {
        ""
    }
}

impl ArchiveError {
    /// A blob whose bytes do not hash to the digest the archive promised.
    pub(crate) fn digest_mismatch(
        archive: &str,
        member: &str,
        what: &'static str,
        expected: &Digest,
        actual: &Digest,
    ) -> Self {
        Self::Mismatch {
            archive: archive.to_string(),
            member: member.to_string(),
            what,
            expected: expected.to_string(),
            actual: actual.to_string(),
        }
    }

    pub(crate) fn invalid(archive: &str, member: &str, reason: impl Into<String>) -> Self {
        Self::Invalid {
            archive: archive.to_string(),
            member: member.to_string(),
            reason: reason.into(),
        }
    }

    /// This error as an `io::Error` of kind `InvalidData`, for readers that verify as bytes flow.
    pub(crate) fn into_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self)
    }

    /// What the user can do about it, if there is something specific to say.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Self::Ambiguous { .. } | Self::NoSuchImage { .. } => {
                Some("pick one with --image NAME[:TAG] or --image DIGEST (a unique prefix will do)")
            }
            Self::NoSuchPlatform { .. } => Some("pick one with --platform OS/ARCH[/VARIANT]"),
            Self::Filesystem { .. } => Some(
                "make it an image first: `docker import FILE myimg:dev` (or `podman import`), then push myimg:dev",
            ),
            Self::NotAnImage { .. } => Some(
                "push artifacts with their own tools (oras, cosign); name an image with --image NAME[:TAG] or a digest",
            ),
            Self::NotAnArchive { .. } | Self::Empty { .. } => Some(
                "expected the output of docker save, podman save, skopeo copy (docker-archive: or \
                 oci-archive:), or an OCI layout directory, optionally gzip, zstd, bzip2 or xz compressed",
            ),
            Self::Truncated { .. }
            | Self::Tar { .. }
            | Self::Decompress { .. }
            | Self::Mismatch { .. }
            | Self::TruncatedBeforeMetadata { .. }
            | Self::MissingMember { .. } => Some(
                "the archive is damaged or incomplete; write it again (e.g. docker save -o FILE IMAGE)",
            ),
            Self::Spool { .. } => Some(
                "the archive is copied (decompressed) to a temporary file first: free space there, or point TMPDIR at a disk with room",
            ),
            Self::BrokenLink { .. } => Some(
                "point the link at the file it stands for, or write the archive again (e.g. docker save -o FILE IMAGE)",
            ),
            Self::ManifestForIndex { .. } => Some(
                "store the manifest as blobs/sha256/<its sha256> and write an index.json naming it \
                 ({\"schemaVersion\":2,\"manifests\":[{\"mediaType\":...,\"digest\":...,\"size\":...}]}), \
                 or write the layout again with the tool that made it (skopeo copy ... oci:DIR:TAG)",
            ),
            Self::NoPlatformPresent { .. } => Some(
                "export the image with its blobs, e.g. docker save --platform OS/ARCH or ctr export --platform OS/ARCH",
            ),
            _ => None,
        }
    }

    /// The underlying cause, moved out so that the CLI error does not repeat this message.
    fn into_cause(self) -> Option<Cause> {
        match self {
            Self::Open { source, .. }
            | Self::Decompress { source, .. }
            | Self::Spool { source, .. }
            | Self::Tar { source, .. }
            | Self::Read { source, .. }
            | Self::Write { source, .. } => Some(Box::new(source)),
            Self::Json { source, .. } => Some(Box::new(source)),
            _ => None,
        }
    }
}

/// Archive errors are input errors (exit code 4), except a malformed `--platform` (usage) and
/// a failure to write our own output file.
impl From<ArchiveError> for Error {
    fn from(err: ArchiveError) -> Self {
        let message = err.to_string();
        let hint = err.hint();
        let exit = match err {
            ArchiveError::BadPlatform(_) => ExitCode::Usage,
            ArchiveError::Write { .. } => ExitCode::Failure,
            _ => ExitCode::Input,
        };
        let mut error = Error::new(exit, message);
        if let Some(hint) = hint {
            error = error.with_hint(hint);
        }
        match err.into_cause() {
            Some(cause) => error.with_source(cause),
            None => error,
        }
    }
}

/// Finds the `ArchiveError` inside an `io::Error`, as verifying readers report mismatches.
pub fn archive_error_in(err: &io::Error) -> Option<&ArchiveError> {
    err.get_ref()?.downcast_ref::<ArchiveError>()
}

/// The `ArchiveError` an `io::Error` carries, or `otherwise(err)` for a plain I/O failure.
pub(crate) fn unwrap_io(
    err: io::Error,
    otherwise: impl FnOnce(io::Error) -> ArchiveError,
) -> ArchiveError {
    if archive_error_in(&err).is_none() {
        return otherwise(err);
    }
    match err
        .into_inner()
        .map(|inner| inner.downcast::<ArchiveError>())
    {
        Some(Ok(archive_error)) => *archive_error,
        Some(Err(other)) => otherwise(io::Error::other(other)),
        None => otherwise(io::Error::other("unknown I/O failure")),
    }
}
