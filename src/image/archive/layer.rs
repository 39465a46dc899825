//! Assembling a `Layer` from where its bytes are: the compression is read from its magic bytes,
//! never from its name or media type.

use super::error::ArchiveError;
use super::image::{Compression, Layer};
use super::input::blob::BlobLocation;
use super::input::spool::{Magic, sniff};
use crate::image::digest::Digest;

/// Builds a layer, sniffing its compression. `digest` is the stored bytes' digest when the
/// archive names it; an uncompressed layer's digest is its diff_id in any case.
pub(crate) fn layer_at(
    location: BlobLocation,
    media_type: Option<String>,
    diff_id: Digest,
    digest: Option<Digest>,
) -> Result<Layer, ArchiveError> {
    let prefix = location
        .read_prefix(6)
        .map_err(|source| ArchiveError::Read {
            archive: location.archive.to_string(),
            member: location.member.clone(),
            source,
        })?;
    let compression = match sniff(&prefix) {
        Magic::Gzip => Compression::Gzip,
        Magic::Zstd => Compression::Zstd,
        Magic::Bzip2 | Magic::Xz => {
            return Err(ArchiveError::invalid(
                &location.archive,
                &location.member,
                "the layer is bzip2 or xz compressed, which is not supported (only gzip, zstd or none)",
            ));
        }
        Magic::Empty | Magic::Tar | Magic::Unknown => Compression::None,
    };
    let digest = match (digest, compression) {
        (Some(digest), _) => Some(digest),
        (None, Compression::None) => Some(diff_id.clone()),
        (None, _) => None,
    };
    Ok(Layer {
        location,
        media_type,
        compression,
        diff_id,
        digest,
    })
}
