//! Reading an image config: its platform and its layers' diff_ids (`rootfs.diff_ids`).

use serde::Deserialize;

use super::error::ArchiveError;
use super::input::members::Container;
use crate::image::digest::Digest;
use crate::image::go_json::null_as_empty;
use crate::image::oci::Platform;

/// The parts of an image config this tool uses.
#[derive(Debug, Clone)]
pub(crate) struct ConfigFacts {
    pub platform: Platform,
    pub diff_ids: Vec<Digest>,
}

#[derive(Deserialize)]
struct ConfigJson {
    os: Option<String>,
    architecture: Option<String>,
    variant: Option<String>,
    rootfs: RootFs,
}

#[derive(Deserialize)]
struct RootFs {
    #[serde(default, deserialize_with = "null_as_empty")]
    diff_ids: Vec<Digest>,
}

impl ConfigFacts {
    pub(crate) fn parse(
        container: &Container,
        bytes: &[u8],
        member: &str,
    ) -> Result<Self, ArchiveError> {
        let config: ConfigJson = container.parse_json(bytes, member, "image config")?;
        Ok(Self::of(config))
    }

    /// A config read from elsewhere than an archive (an engine's store).
    pub(crate) fn from_bytes(bytes: &[u8]) -> serde_json::Result<Self> {
        serde_json::from_slice(bytes).map(Self::of)
    }

    fn of(config: ConfigJson) -> Self {
        Self {
            platform: Platform::from_parts(
                config.os.as_deref(),
                config.architecture.as_deref(),
                config.variant.as_deref(),
            ),
            diff_ids: config.rootfs.diff_ids,
        }
    }

    /// The config must name one diff_id per layer, in order.
    pub(crate) fn check_layer_count(
        &self,
        container: &Container,
        member: &str,
        layers: usize,
    ) -> Result<(), ArchiveError> {
        if self.diff_ids.len() == layers {
            return Ok(());
        }
        Err(ArchiveError::invalid(
            &container.name,
            member,
            format!(
                "the config lists {} diff_ids but the image has {layers} layers",
                self.diff_ids.len()
            ),
        ))
    }
}
