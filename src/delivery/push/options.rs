//! What the user asked of one push, as plain data the commands make from the flags.

use std::path::PathBuf;

/// How layers stored uncompressed go to the registry (`--compression`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LayerCompression {
    /// No compression for loopback and cluster-advertised registries, gzip elsewhere.
    Auto,
    /// Send uncompressed layers as they are.
    None,
    /// Compress uncompressed layers with gzip.
    Gzip,
    /// Compress uncompressed layers with zstd.
    Zstd,
}

/// One push's choices.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// `--tag`: the name to push as, else the image's own.
    pub tag: Option<String>,
    /// `--image`: which image of a multi-image archive.
    pub image: Option<String>,
    /// `--platform`: one platform of a multi-platform image.
    pub platform: Option<String>,
    pub compression: LayerCompression,
    /// Uploads at once.
    pub jobs: usize,
    /// Plain HTTP allowed to a registry off loopback.
    pub insecure: bool,
    /// A PEM CA bundle trusted for the registry.
    pub ca_file: Option<PathBuf>,
    /// Fail rather than load the nodes when no registry is advertised.
    pub no_load: bool,
    /// The user's own load command, `{archive}` standing for the archive.
    pub load_command: Option<String>,
}

impl PushOptions {
    /// Whether the user picked something inside the image (`--image`, `--platform`).
    pub fn selects(&self) -> bool {
        self.image.is_some() || self.platform.is_some()
    }
}
