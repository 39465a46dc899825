//! Deterministic test images and writers for every archive format users hand us (docker save
//! old and new, containerd exports, OCI archives and layouts, podman, nix, jib, crane), built in
//! Rust from a seed, plus archives written by the real skopeo.
//!
//! ```ignore
//! let image = fixtures::Image::sample(1);
//! image.write(Format::DockerLegacy, &dir.join("img.tar"), &["myimg:dev"]);
//! assert_eq!(archive_layers_diff_ids, image.diff_ids());
//! ```

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use sha2::{Digest as _, Sha256};

mod archives;
mod big;

pub(crate) use archives::*;
pub(crate) use big::*;

pub(crate) const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub(crate) const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub(crate) const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
pub(crate) const OCI_LAYER: &str = "application/vnd.oci.image.layer.v1.tar";
pub(crate) const OCI_LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
pub(crate) const OCI_LAYER_ZSTD: &str = "application/vnd.oci.image.layer.v1.tar+zstd";
pub(crate) const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub(crate) const DOCKER_MANIFEST_LIST: &str =
    "application/vnd.docker.distribution.manifest.list.v2+json";
pub(crate) const DOCKER_CONFIG: &str = "application/vnd.docker.container.image.v1+json";
pub(crate) const DOCKER_LAYER_GZIP: &str = "application/vnd.docker.image.rootfs.diff.tar.gzip";

/// `sha256:<hex>` of some bytes.
pub(crate) fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn hex_of(digest: &str) -> &str {
    digest.trim_start_matches("sha256:")
}

/// splitmix64: a tiny seeded generator, so fixtures are the same on every run.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x1234_5678)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// How a layer is stored in an archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LayerCompression {
    None,
    Gzip,
    Zstd,
}

/// The archive formats the writers produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// docker save up to 24: `<id>/layer.tar`, `<hex>.json`, `repositories`; a repeated layer
    /// is a symlink to the first one's file.
    DockerLegacy,
    /// As `DockerLegacy`, but a repeated layer is a hardlink.
    DockerLegacyHardlinks,
    /// docker 25+: OCI layout + `manifest.json`, uncompressed layers named by diff_id.
    Docker25,
    /// `ctr export` / nerdctl / docker 29: OCI layout + `manifest.json`, compressed layers.
    /// Gzip uses docker media types (as pulled from Docker Hub), zstd and none OCI ones.
    ContainerdExport(LayerCompression),
    /// A tar of an OCI layout; each tag given becomes `org.opencontainers.image.ref.name` as is
    /// (`dev` as skopeo writes it, or `gcr.io/p/app:1` as jib and rules_oci do).
    OciArchive,
    /// podman save / skopeo docker-archive: `<diff_id hex>.tar` layers, `<hex>.json` config.
    Podman,
    /// nix dockerTools: a legacy docker archive wrapped in gzip.
    NixGzip,
    /// jib: `<digest hex>.tar.gz` layers, `config.json`.
    Jib,
    /// crane: `sha256:<hex>` config file, `<digest hex>.tar.gz` layers.
    Crane,
}

/// A test image: uncompressed layer tars and a config naming their diff_ids.
#[derive(Debug, Clone)]
pub(crate) struct Image {
    pub os: String,
    pub architecture: String,
    pub variant: Option<String>,
    layers: Vec<Vec<u8>>,
    config: Vec<u8>,
}

impl Image {
    /// linux/amd64, three layers of a few hundred KiB.
    pub(crate) fn sample(seed: u64) -> Self {
        Self::with_layers(seed, "linux/amd64", &[300 << 10, 200 << 10, 120 << 10])
    }

    /// Like `sample` for another platform (`os/arch[/variant]`).
    pub(crate) fn sample_for(seed: u64, platform: &str) -> Self {
        Self::with_layers(seed, platform, &[260 << 10, 150 << 10])
    }

    /// Four layers where the third repeats the first (same content, same diff_id), which
    /// docker save writes as a link.
    pub(crate) fn with_repeated_layer(seed: u64) -> Self {
        let mut image = Self::with_layers(seed, "linux/amd64", &[200 << 10, 100 << 10, 80 << 10]);
        let first = image.layers[0].clone();
        image.layers.insert(2, first);
        image.rebuild_config();
        image
    }

    /// Layers holding files of about these sizes, half random, half text (so they compress).
    pub(crate) fn with_layers(seed: u64, platform: &str, sizes: &[usize]) -> Self {
        let mut rng = Rng::new(seed);
        let layers = sizes
            .iter()
            .enumerate()
            .map(|(index, &size)| layer_tar(&mut rng, seed, index, size))
            .collect();
        let parts: Vec<&str> = platform.split('/').collect();
        let mut image = Self {
            os: parts[0].to_string(),
            architecture: parts[1].to_string(),
            variant: parts.get(2).map(|v| v.to_string()),
            layers,
            config: Vec::new(),
        };
        image.rebuild_config();
        image
    }

    /// The same image with its config's `created` set to `created` (RFC 3339), or removed.
    pub(crate) fn created(mut self, created: Option<&str>) -> Self {
        let mut config: serde_json::Value = serde_json::from_slice(&self.config).unwrap();
        match created {
            Some(created) => config["created"] = json!(created),
            None => {
                config.as_object_mut().unwrap().remove("created");
            }
        }
        self.config = serde_json::to_vec(&config).unwrap();
        self
    }

    /// The same image with its config written over several lines (indented JSON), as some
    /// builders write it: its bytes hold newlines.
    pub(crate) fn pretty_config(mut self) -> Self {
        let config: serde_json::Value = serde_json::from_slice(&self.config).unwrap();
        self.config = serde_json::to_vec_pretty(&config).unwrap();
        self
    }

    fn rebuild_config(&mut self) {
        let mut config = json!({
            "architecture": self.architecture,
            "os": self.os,
            "created": "1970-01-01T00:00:00Z",
            "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin"], "Cmd": ["/bin/fixture"]},
            "rootfs": {"type": "layers", "diff_ids": self.diff_ids()},
            "history": self.layers.iter().map(|_| json!({"created_by": "fixture"})).collect::<Vec<_>>(),
        });
        if let Some(variant) = &self.variant {
            config["variant"] = json!(variant);
        }
        self.config = serde_json::to_vec(&config).unwrap();
    }

    pub(crate) fn platform(&self) -> String {
        match &self.variant {
            Some(variant) => format!("{}/{}/{variant}", self.os, self.architecture),
            None => format!("{}/{}", self.os, self.architecture),
        }
    }

    pub(crate) fn config_bytes(&self) -> &[u8] {
        &self.config
    }

    pub(crate) fn config_digest(&self) -> String {
        sha256(&self.config)
    }

    pub(crate) fn layer_count(&self) -> usize {
        self.layers.len()
    }

    /// The uncompressed tar of layer `index`.
    pub(crate) fn layer(&self, index: usize) -> &[u8] {
        &self.layers[index]
    }

    pub(crate) fn diff_ids(&self) -> Vec<String> {
        self.layers.iter().map(|layer| sha256(layer)).collect()
    }

    /// What `docker image inspect NAME` (nerdctl's too) prints of this image, named `name`,
    /// its `Id` being `id` (docker's is the config's digest, nerdctl's the manifest's).
    pub(crate) fn engine_inspect(&self, id: &str, name: &str) -> String {
        json!([{
            "Id": id,
            "RepoTags": [name],
            "Os": "linux",
            "Architecture": "amd64",
            "RootFS": {"Type": "layers", "Layers": self.diff_ids()},
        }])
        .to_string()
    }

    /// Layer `index` as stored with `compression` (deterministic: gzip level 1, zstd level 1).
    pub(crate) fn stored_layer(&self, index: usize, compression: LayerCompression) -> Vec<u8> {
        compress(&self.layers[index], compression)
    }

    /// The digests of the layers as stored with `compression`.
    pub(crate) fn layer_digests(&self, compression: LayerCompression) -> Vec<String> {
        (0..self.layers.len())
            .map(|i| sha256(&self.stored_layer(i, compression)))
            .collect()
    }

    /// The manifest an OCI layout of this image holds with `compression` (docker media types
    /// for gzip, as `Format::ContainerdExport` writes; OCI ones otherwise).
    pub(crate) fn manifest(&self, compression: LayerCompression) -> Vec<u8> {
        let docker_types = compression == LayerCompression::Gzip;
        self.manifest_with(compression, docker_types)
    }

    fn manifest_with(&self, compression: LayerCompression, docker_types: bool) -> Vec<u8> {
        let layer_type = match (compression, docker_types) {
            (LayerCompression::Gzip, true) => DOCKER_LAYER_GZIP,
            (LayerCompression::Gzip, false) => OCI_LAYER_GZIP,
            (LayerCompression::Zstd, _) => OCI_LAYER_ZSTD,
            (LayerCompression::None, _) => OCI_LAYER,
        };
        let layers: Vec<_> = (0..self.layers.len())
            .map(|i| {
                let stored = self.stored_layer(i, compression);
                json!({"mediaType": layer_type, "digest": sha256(&stored), "size": stored.len()})
            })
            .collect();
        let (manifest_type, config_type) = if docker_types {
            (DOCKER_MANIFEST, DOCKER_CONFIG)
        } else {
            (OCI_MANIFEST, OCI_CONFIG)
        };
        serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": manifest_type,
            "config": {"mediaType": config_type, "digest": self.config_digest(), "size": self.config.len()},
            "layers": layers,
        }))
        .unwrap()
    }

    /// The manifest's media type in an OCI layout written with `compression`.
    pub(crate) fn manifest_media_type(&self, compression: LayerCompression) -> &'static str {
        if compression == LayerCompression::Gzip {
            DOCKER_MANIFEST
        } else {
            OCI_MANIFEST
        }
    }

    /// Writes this image alone in `format` at `path`, named `tags`.
    pub(crate) fn write(&self, format: Format, path: &Path, tags: &[&str]) {
        write_images(format, path, &[(self, tags)]);
    }

    /// Writes an OCI layout directory (uncompressed OCI layers); each tag becomes a `ref.name`.
    pub(crate) fn layout_dir(&self, dir: &Path, tags: &[&str]) {
        let entries = oci_layout_entries(
            &[(self, tags)],
            LayerCompression::None,
            false,
            RefNames::AsGiven,
        );
        for entry in entries {
            let target = dir.join(&entry.path);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            match entry.kind {
                Kind::File(bytes) => std::fs::write(target, bytes).unwrap(),
                Kind::Symlink(_) | Kind::Hardlink(_) => unreachable!("layouts have no links"),
            }
        }
    }
}

/// A layer tar: a folder and two files, one random, one text, about `size` bytes in all.
fn layer_tar(rng: &mut Rng, seed: u64, index: usize, size: usize) -> Vec<u8> {
    let mut random = vec![0u8; size / 2];
    rng.fill(&mut random);
    let line =
        format!("fixture seed {seed} layer {index}: the quick brown fox jumps over the lazy dog\n");
    let text: Vec<u8> = line
        .as_bytes()
        .iter()
        .copied()
        .cycle()
        .take(size - size / 2)
        .collect();
    let mut builder = tar::Builder::new(Vec::new());
    let mut dir = tar::Header::new_ustar();
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_mode(0o755);
    dir.set_size(0);
    dir.set_mtime(0);
    builder
        .append_data(&mut dir, format!("opt/layer{index}/"), io::empty())
        .unwrap();
    for (name, data) in [("random.bin", &random), ("notes.txt", &text)] {
        let mut header = tar::Header::new_ustar();
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        header.set_mtime(0);
        builder
            .append_data(
                &mut header,
                format!("opt/layer{index}/{name}"),
                data.as_slice(),
            )
            .unwrap();
    }
    builder.into_inner().unwrap()
}

pub(crate) fn compress(bytes: &[u8], compression: LayerCompression) -> Vec<u8> {
    match compression {
        LayerCompression::None => bytes.to_vec(),
        LayerCompression::Gzip => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(bytes).unwrap();
            encoder.finish().unwrap()
        }
        LayerCompression::Zstd => zstd::stream::encode_all(bytes, 1).unwrap(),
    }
}

/// The full name containerd records for a docker-style name: `myimg:dev` is
/// `docker.io/library/myimg:dev`.
pub(crate) fn full_name(name: &str) -> String {
    let (first, rest) = name.split_once('/').unwrap_or(("", name));
    let has_domain = first.contains(['.', ':']) || first == "localhost";
    let mut full = if has_domain {
        name.to_string()
    } else if first.is_empty() {
        format!("docker.io/library/{rest}")
    } else {
        format!("docker.io/{name}")
    };
    let last = full.rsplit('/').next().unwrap();
    if !last.contains(':') {
        full.push_str(":latest");
    }
    full
}

fn tag_of(name: &str) -> &str {
    let last = name.rsplit('/').next().unwrap();
    last.split_once(':').map_or("latest", |(_, tag)| tag)
}
