//! podman's and buildah's image store (containers-storage) read directly, so that only the layers
//! a registry lacks are read at all: `<driver>-images/images.json` gives the image's top layer,
//! `<driver>-layers/layers.json` each layer's parent, diff_id and size, the image's directory its
//! config (named by the image ID), and each layer's tar-split record with its directory (overlay's
//! `overlay/<id>/diff`, vfs's `vfs/dir/<id>`) rebuilds its exact tar. What cannot be found or
//! trusted here is a reason to export instead, in words for -v.

mod conf;
mod lock;
mod tar_split;

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::Deserialize;

#[cfg(fuzzing)]
pub(crate) use conf::parse as parse_storage_conf;
pub(crate) use lock::ReadLock;
pub(crate) use tar_split::{LayerReader, StoreFault, store_fault};

use super::endpoint::EngineEnv;
use super::facts::ImageFacts;
use crate::image::digest::Digest;
use crate::image::reference::ImageName;

/// `images.json` and `layers.json` list every image and layer: bounded all the same.
const INDEX_LIMIT: u64 = 256 << 20;
/// Image configs are a few KiB.
const CONFIG_LIMIT: u64 = 8 << 20;

/// An image found in the store, its layers base first.
#[derive(Debug, Clone)]
pub struct StoreImage {
    pub config: Vec<u8>,
    pub layers: Vec<StoreLayer>,
    /// `the overlay store at /var/lib/containers/storage (the system's storage.conf: ...)`.
    pub describe: String,
    /// The `layers.lock` of each store root a layer is in.
    lock_files: Vec<PathBuf>,
}

impl StoreImage {
    /// The store's layer locks, held for reading (as podman holds them while it reads a layer)
    /// until dropped: no layer is removed while we read it.
    pub(crate) fn read_lock(&self) -> std::io::Result<Vec<ReadLock>> {
        self.lock_files
            .iter()
            .filter_map(|path| ReadLock::take(path).transpose())
            .collect()
    }
}

/// One layer and where its bytes are.
#[derive(Debug, Clone)]
pub struct StoreLayer {
    pub id: String,
    pub diff_id: Digest,
    pub size: u64,
    tar_split: PathBuf,
    files: PathBuf,
}

impl StoreLayer {
    /// Its exact tar, verified against its diff_id at the end.
    pub fn open(&self) -> std::io::Result<LayerReader> {
        let short: String = self.id.chars().take(12).collect();
        LayerReader::open(
            &self.tar_split,
            &self.files,
            format!("layer {short} in the store"),
            self.diff_id.clone(),
            self.size,
        )
    }
}

#[derive(Deserialize)]
struct ImageJson {
    id: String,
    #[serde(default)]
    layer: Option<String>,
    #[serde(default)]
    names: Vec<String>,
}

#[derive(Deserialize)]
struct ConfigJson {
    os: Option<String>,
    architecture: Option<String>,
    variant: Option<String>,
}

#[derive(Deserialize)]
struct LayerJson {
    id: String,
    #[serde(default)]
    parent: Option<String>,
    #[serde(rename = "diff-digest", default)]
    diff_digest: Option<Digest>,
    #[serde(rename = "diff-size", default)]
    diff_size: Option<i64>,
}

/// One store root with its driver.
struct Root {
    path: PathBuf,
    driver: String,
}

/// Why an image is not read from the store, in words for -v.
#[derive(Debug)]
pub struct StoreMiss {
    pub reason: String,
    /// The image is not in a store we can read at all (podman runs elsewhere: a podman machine,
    /// a remote service; or its driver's layers are not plain directories), as opposed to a
    /// defect of one of its layers here.
    pub elsewhere: bool,
}

impl std::fmt::Display for StoreMiss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// Finds the image `facts` describes in the store podman would use; its layers must be the ones
/// the engine names, in order.
pub(super) fn find_image(env: &EngineEnv, facts: &ImageFacts) -> Result<StoreImage, StoreMiss> {
    let defect = |reason: String| StoreMiss {
        reason,
        elsewhere: false,
    };
    let elsewhere = |reason: String| StoreMiss {
        reason,
        elsewhere: true,
    };
    let conf = conf::locate(env);
    let hex = facts
        .id
        .strip_prefix("sha256:")
        .ok_or_else(|| elsewhere(format!("the image ID {} is not a sha256 digest", facts.id)))?;
    let roots = roots(&conf);
    let main = format!(
        "the store at {} ({})",
        conf.graphroot.display(),
        conf.origin
    );
    let Some(first) = roots.first() else {
        return Err(elsewhere(format!(
            "{main} has no image store podman could use"
        )));
    };
    if !conf::READABLE_DRIVERS.contains(&first.driver.as_str()) {
        return Err(elsewhere(format!(
            "{main} uses the {} driver, whose layers are not plain directories",
            first.driver
        )));
    }
    for root in &roots {
        let index = root.index("images", "images.json");
        if !index.exists() {
            continue;
        }
        let images: Vec<ImageJson> = match read_json(&index) {
            Ok(images) => images,
            Err(said) if root.path == conf.graphroot => {
                return Err(defect(format!("{main}: {said}")));
            }
            Err(_) => continue,
        };
        let Some(image) = images.into_iter().find(|image| image.id == hex) else {
            continue;
        };
        let config = root.config(hex).map_err(defect)?;
        let (layers, lock_files) = layer_chain(&roots, image.layer.as_deref()).map_err(defect)?;
        let diff_ids: Vec<&Digest> = layers.iter().map(|layer| &layer.diff_id).collect();
        if diff_ids != facts.diff_ids.iter().collect::<Vec<_>>() {
            return Err(defect(format!(
                "its layers in {} are not the ones the engine names",
                root.path.display()
            )));
        }
        return Ok(StoreImage {
            config,
            layers,
            lock_files,
            describe: format!(
                "the {} store at {} ({})",
                root.driver,
                root.path.display(),
                conf.origin
            ),
        });
    }
    Err(elsewhere(format!(
        "{main} does not hold image {}",
        facts.id
    )))
}

/// The image `name` picks in podman's store, described as `podman image inspect` would without
/// running podman: `localhost/NAME`, else the one image whose name ends in `/NAME`, for a short
/// name; the name itself for a full one. `None` when that is not exactly one readable image, so
/// that podman decides.
pub(super) fn inspect(env: &EngineEnv, name: &str) -> Option<ImageFacts> {
    let parsed = ImageName::parse(name).ok()?;
    if parsed.digest.is_some() {
        return None;
    }
    let tagged = format!("{}:{}", parsed.path, parsed.tag_or_default());
    let conf = conf::locate(env);
    let roots = roots(&conf);
    let mut exact = Vec::new();
    let mut suffix = Vec::new();
    for (at, root) in roots.iter().enumerate() {
        let index = root.index("images", "images.json");
        if !index.exists() {
            continue;
        }
        let images: Vec<ImageJson> = read_json(&index).ok()?;
        for image in images {
            let wanted = |n: &String| match &parsed.domain {
                Some(domain) => *n == format!("{domain}/{tagged}"),
                None => *n == format!("localhost/{tagged}"),
            };
            if image.names.iter().any(wanted) {
                exact.push((at, image));
            } else if parsed.domain.is_none()
                && image
                    .names
                    .iter()
                    .any(|n| n.ends_with(&format!("/{tagged}")))
            {
                suffix.push((at, image));
            }
        }
    }
    let (at, image) = match (exact.len(), suffix.len()) {
        (1, _) => exact.pop()?,
        (0, 1) => suffix.pop()?,
        _ => return None,
    };
    let root = &roots[at];
    let config = root.config(&image.id).ok()?;
    let (layers, _) = layer_chain(&roots, image.layer.as_deref()).ok()?;
    let platform: ConfigJson = serde_json::from_slice(&config).ok()?;
    let platform = match (platform.os, platform.architecture) {
        (Some(os), Some(arch)) if !os.is_empty() && !arch.is_empty() => {
            Some(match platform.variant.filter(|v| !v.is_empty()) {
                Some(variant) => format!("{os}/{arch}/{variant}"),
                None => format!("{os}/{arch}"),
            })
        }
        _ => None,
    };
    Some(ImageFacts {
        id: format!("sha256:{}", image.id),
        repo_tags: image.names,
        diff_ids: layers.into_iter().map(|layer| layer.diff_id).collect(),
        platform,
        size: None,
    })
}

/// The main store's `images.json`, rewritten (by podman and buildah alike) whenever an image
/// is made, named or removed: what `push --watch` watches for podman.
pub(super) fn images_index(env: &EngineEnv) -> Option<PathBuf> {
    let conf = conf::locate(env);
    roots(&conf)
        .first()
        .map(|root| root.index("images", "images.json"))
}

/// The store roots to look in, main one first, each with the driver it uses.
fn roots(conf: &conf::StoreConf) -> Vec<Root> {
    std::iter::once(&conf.graphroot)
        .chain(&conf.additional)
        .filter_map(|path| {
            let driver = match &conf.driver {
                Some(driver) => driver.clone(),
                None => conf::READABLE_DRIVERS
                    .iter()
                    .find(|driver| path.join(format!("{driver}-images")).is_dir())?
                    .to_string(),
            };
            Some(Root {
                path: path.clone(),
                driver,
            })
        })
        .collect()
}

impl Root {
    fn index(&self, kind: &str, file: &str) -> PathBuf {
        self.path.join(format!("{}-{kind}", self.driver)).join(file)
    }

    /// The image's config: the big-data item named by its ID, which must hash to it.
    fn config(&self, hex: &str) -> Result<Vec<u8>, String> {
        let key = format!("sha256:{hex}");
        let name = format!(
            "={}",
            base64::engine::general_purpose::STANDARD.encode(&key)
        );
        let path = self.index("images", hex).join(name);
        let bytes = read_bounded(&path, CONFIG_LIMIT)?;
        if Digest::of_bytes(&bytes).as_str() != key {
            return Err(format!(
                "the config at {} is not the image {key}",
                path.display()
            ));
        }
        Ok(bytes)
    }

    /// Where a layer's files are, by driver.
    fn files(&self, id: &str) -> PathBuf {
        match self.driver.as_str() {
            "vfs" => self.path.join("vfs/dir").join(id),
            driver => self.path.join(driver).join(id).join("diff"),
        }
    }
}

/// The layers under `top`, base first, each found in the first store that lists it, and the
/// `layers.lock` of each store they are in.
fn layer_chain(
    roots: &[Root],
    top: Option<&str>,
) -> Result<(Vec<StoreLayer>, Vec<PathBuf>), String> {
    let listed: Vec<(usize, Vec<LayerJson>)> = roots
        .iter()
        .enumerate()
        .filter_map(|(at, root)| {
            read_json::<Vec<LayerJson>>(&root.index("layers", "layers.json"))
                .ok()
                .map(|layers| (at, layers))
        })
        .collect();
    let mut chain = Vec::new();
    let mut lock_files = Vec::new();
    let mut next = top.map(str::to_string);
    while let Some(id) = next.take() {
        if chain.len() > 1_000 {
            return Err("the store's layers form a chain over 1000 long".to_string());
        }
        let Some((at, layer)) = listed
            .iter()
            .find_map(|(at, layers)| layers.iter().find(|l| l.id == id).map(|l| (*at, l)))
        else {
            return Err(format!("layer {id} is not listed in the store"));
        };
        let root = &roots[at];
        let lock_file = root.index("layers", "layers.lock");
        if !lock_files.contains(&lock_file) {
            lock_files.push(lock_file);
        }
        let (Some(diff_id), Some(size)) = (&layer.diff_digest, layer.diff_size) else {
            return Err(format!("layer {id} has no recorded diff digest and size"));
        };
        let size = u64::try_from(size).map_err(|_| format!("layer {id} has a negative size"))?;
        let tar_split = root.index("layers", &format!("{id}.tar-split.gz"));
        if let Err(err) = std::fs::File::open(&tar_split) {
            return Err(format!(
                "layer {id}'s tar-split record cannot be read ({}: {err})",
                tar_split.display()
            ));
        }
        let files = root.files(&id);
        if let Err(err) = std::fs::read_dir(&files) {
            return Err(format!(
                "layer {id}'s files cannot be read ({}: {err})",
                files.display()
            ));
        }
        chain.push(StoreLayer {
            id: id.clone(),
            diff_id: diff_id.clone(),
            size,
            tar_split,
            files,
        });
        next = layer.parent.clone().filter(|parent| !parent.is_empty());
    }
    chain.reverse();
    Ok((chain, lock_files))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, String> {
    let bytes = read_bounded(path, INDEX_LIMIT)?;
    serde_json::from_slice(&bytes)
        .map_err(|err| format!("{} is not readable: {err}", path.display()))
}

fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = std::fs::File::open(path)
        .map_err(|err| format!("{} cannot be read: {err}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("{} cannot be read: {err}", path.display()))?;
    if bytes.len() as u64 > limit {
        return Err(format!("{} is over {limit} bytes", path.display()));
    }
    Ok(bytes)
}
