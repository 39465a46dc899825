//! An image assembled from blobs kept elsewhere (podman's store: its config bytes, and each layer
//! rebuilt when it is read): the node loaders write from it as from any archive, and read only
//! the layers a node lacks. No export.

use std::sync::Arc;

use super::config::ConfigFacts;
use super::input::blob::{BlobFile, BlobLocation, OpenBlob};
use super::input::members::{Container, Members};
use super::{
    Archive, ArchiveError, Compression, Format, Image, Layer, PlatformImage, RawBlob, Wrapping,
};
use crate::image::digest::Digest;
use crate::image::oci::MediaType;

/// One layer: its diff_id, its bytes as stored (size, digest, media type, compression), and how
/// to read them.
pub struct AssembledLayer {
    pub diff_id: Digest,
    pub size: u64,
    pub digest: Digest,
    pub media_type: String,
    pub compression: Compression,
    pub open: OpenBlob,
}

impl AssembledLayer {
    /// A layer stored as its uncompressed tar (podman's store rebuilds them so).
    pub fn uncompressed(diff_id: Digest, size: u64, open: OpenBlob) -> Self {
        Self {
            digest: diff_id.clone(),
            diff_id,
            size,
            media_type: MediaType::OciLayer.as_str().to_string(),
            compression: Compression::None,
            open,
        }
    }
}

impl Archive {
    /// One single-platform image named `names`, of `config` (whose platform and diff_ids it must
    /// match) over `layers`, base first. `name` says where it comes from in messages.
    pub fn assembled(
        name: &str,
        names: Vec<String>,
        config: Vec<u8>,
        layers: Vec<AssembledLayer>,
    ) -> Result<Self, ArchiveError> {
        let container = Container {
            name: Arc::from(name),
            members: Members::Nothing,
        };
        let facts = ConfigFacts::parse(&container, &config, "config")?;
        facts.check_layer_count(&container, "config", layers.len())?;
        if let Some(at) = (0..layers.len()).find(|&at| facts.diff_ids[at] != layers[at].diff_id) {
            return Err(ArchiveError::invalid(
                name,
                "config",
                format!(
                    "layer {at} is {}, but the config names {}",
                    layers[at].diff_id, facts.diff_ids[at]
                ),
            ));
        }
        let layers = layers
            .into_iter()
            .map(|layer| Layer {
                location: BlobLocation {
                    archive: Arc::clone(&container.name),
                    member: format!("layer {}", layer.diff_id.short()),
                    offset: 0,
                    len: layer.size,
                    file: BlobFile::Stream(layer.open),
                },
                media_type: Some(layer.media_type),
                compression: layer.compression,
                digest: Some(layer.digest),
                diff_id: layer.diff_id,
            })
            .collect();
        let platform = PlatformImage {
            platform: facts.platform,
            manifest: None,
            config: RawBlob::new(MediaType::OciConfig.as_str(), config),
            layers,
        };
        Ok(Self {
            container,
            format: Format::OciLayout,
            wrapping: Wrapping::None,
            in_place: None,
            images: vec![Image {
                names,
                bare_tags: Vec::new(),
                index: None,
                platforms: vec![platform],
                absent_platforms: Vec::new(),
                attachments: Vec::new(),
                dropped: Vec::new(),
            }],
            others: Vec::new(),
        })
    }
}
