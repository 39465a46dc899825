//! The manifest to push for one platform: the archive's own, byte for byte, or an OCI manifest
//! built from the config and layers once every layer digest is known.

use std::io::{self, Read};

use super::Archive;
use super::error::{ArchiveError, unwrap_io};
use super::image::{Layer, PlatformImage, RawBlob, oci_manifest};
use crate::image::digest::Digest;

/// Buffer used when hashing a layer nobody consumes.
const HASH_BUFFER: usize = 1 << 20;

impl Archive {
    /// The manifest to push for `image`: the archive's own when it carried one (so digests
    /// docker or containerd reported stay valid), else an OCI manifest. Building one needs
    /// every layer's digest: call `resolve_digests` first for jib and crane archives.
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

    /// Hashes every layer whose stored digest is not known yet (compressed layers of docker
    /// archives: jib, crane), verifying its diff_id on the way.
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
        let read_error = |err: io::Error| {
            unwrap_io(err, |source| ArchiveError::Read {
                archive: self.name().to_string(),
                member: layer.location.member.clone(),
                source,
            })
        };
        let mut reader = self.layer_reader(layer).map_err(read_error)?;
        let mut buffer = vec![0u8; HASH_BUFFER];
        loop {
            match reader.read(&mut buffer) {
                Ok(0) => break,
                Ok(_) => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(read_error(err)),
            }
        }
        reader.digest().cloned().ok_or_else(|| {
            ArchiveError::invalid(
                self.name(),
                &layer.describe(),
                "the layer ended before it was verified",
            )
        })
    }
}
