//! The OCI image vocabulary, one home for it: the media types (OCI's and docker's schema 2), the
//! manifest, index and descriptor shapes every reader parses, and platforms.

mod manifest;
mod platform;

use serde::{Serialize, Serializer};

pub(crate) use manifest::{
    Descriptor, ManifestOrIndex, describe_artifact, is_image_config, parse_index_json,
    parse_manifest,
};
pub use platform::{BadPlatform, Platform};

/// The media types we read and write; anything else stays the string its document declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaType {
    OciManifest,
    OciIndex,
    OciConfig,
    OciLayer,
    OciLayerGzip,
    OciLayerZstd,
    DockerManifest,
    DockerManifestList,
    DockerConfig,
}

impl MediaType {
    /// Every known type, for parsing.
    const ALL: [Self; 9] = [
        Self::OciManifest,
        Self::OciIndex,
        Self::OciConfig,
        Self::OciLayer,
        Self::OciLayerGzip,
        Self::OciLayerZstd,
        Self::DockerManifest,
        Self::DockerManifestList,
        Self::DockerConfig,
    ];

    /// What a manifest GET accepts: the image manifests and indexes, OCI's and docker's.
    pub const MANIFESTS: [Self; 4] = [
        Self::OciManifest,
        Self::OciIndex,
        Self::DockerManifest,
        Self::DockerManifestList,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::OciManifest => "application/vnd.oci.image.manifest.v1+json",
            Self::OciIndex => "application/vnd.oci.image.index.v1+json",
            Self::OciConfig => "application/vnd.oci.image.config.v1+json",
            Self::OciLayer => "application/vnd.oci.image.layer.v1.tar",
            Self::OciLayerGzip => "application/vnd.oci.image.layer.v1.tar+gzip",
            Self::OciLayerZstd => "application/vnd.oci.image.layer.v1.tar+zstd",
            Self::DockerManifest => "application/vnd.docker.distribution.manifest.v2+json",
            Self::DockerManifestList => "application/vnd.docker.distribution.manifest.list.v2+json",
            Self::DockerConfig => "application/vnd.docker.container.image.v1+json",
        }
    }

    /// The known type a document declares, if it is one.
    pub fn parse(declared: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|known| known.as_str() == declared)
    }

    pub fn is_index(self) -> bool {
        matches!(self, Self::OciIndex | Self::DockerManifestList)
    }

    pub fn is_image_manifest(self) -> bool {
        matches!(self, Self::OciManifest | Self::DockerManifest)
    }

    pub fn is_image_config(self) -> bool {
        matches!(self, Self::OciConfig | Self::DockerConfig)
    }

    /// The `Accept` header of a manifest GET or HEAD.
    pub fn manifests_accept() -> String {
        Self::MANIFESTS.map(Self::as_str).join(", ")
    }
}

impl std::fmt::Display for MediaType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for MediaType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Whether a declared type is a filesystem layer: OCI's (plain, gzip, zstd, non-distributable)
/// and docker's rootfs diffs.
pub fn is_layer_type(media_type: &str) -> bool {
    media_type.starts_with("application/vnd.oci.image.layer.")
        || media_type.starts_with("application/vnd.docker.image.rootfs.")
}

#[cfg(test)]
mod tests {
    use super::MediaType;

    #[test]
    fn every_known_type_parses_back_to_itself() {
        for known in MediaType::ALL {
            assert_eq!(MediaType::parse(known.as_str()), Some(known));
        }
        assert_eq!(
            MediaType::parse("application/vnd.dev.cosign.simplesigning.v1+json"),
            None
        );
    }

    #[test]
    fn the_manifest_accept_header_names_all_four_image_manifest_types() {
        assert_eq!(
            MediaType::manifests_accept(),
            "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, \
             application/vnd.docker.distribution.manifest.v2+json, \
             application/vnd.docker.distribution.manifest.list.v2+json"
        );
    }
}
