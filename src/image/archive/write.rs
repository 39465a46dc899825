//! Writing one platform of an image as a tar that `ctr images import` (kind, k3d, minikube load)
//! names correctly: an OCI layout whose index names the image the way docker 25+ does, plus
//! docker's `manifest.json`. Blobs are copied by streaming, layers verified on the way.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use serde::Serialize;

use super::error::{ArchiveError, unwrap_io};
use super::formats::oci::{IMAGE_NAME, REF_NAME};
use super::formats::{docker, oci};
use super::image::{PlatformImage, RawBlob};
use super::{Archive, Format};
use crate::image::digest::Digest;
use crate::image::oci::MediaType;
use crate::image::reference::{ImageName, same_image};

const WRITE_BUFFER: usize = 1 << 20;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IndexOut<'a> {
    schema_version: u32,
    media_type: MediaType,
    manifests: Vec<ManifestDescriptorOut<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ManifestDescriptorOut<'a> {
    media_type: &'a str,
    digest: &'a Digest,
    size: u64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<&'static str, String>,
    platform: PlatformOut<'a>,
}

#[derive(Serialize)]
struct PlatformOut<'a> {
    architecture: &'a str,
    os: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    variant: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct DockerManifestOut {
    config: String,
    repo_tags: Vec<String>,
    layers: Vec<String>,
}

impl Archive {
    /// Writes `image` as a single-platform archive at `out`, named `names` (full references,
    /// e.g. `kind-registry:5000/myimg:dev`). The manifest inside is the one `manifest()` gives,
    /// so what the nodes import is what a push would send. On failure `out` is removed.
    pub fn write_docker_archive(
        &self,
        image: &PlatformImage,
        names: &[String],
        out: &Path,
    ) -> Result<(), ArchiveError> {
        let references = self.references(names)?;
        if self.is_read_from(out) {
            return Err(ArchiveError::Write {
                path: out.to_path_buf(),
                source: io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "this is the archive being read",
                ),
            });
        }
        let mut image = image.clone();
        self.resolve_digests(&mut image)?;
        let manifest = self.manifest(&image)?;

        let written = File::create(out).and_then(|file| {
            let mut builder = tar::Builder::new(BufWriter::with_capacity(WRITE_BUFFER, file));
            let everything = Contents {
                leave_out: &BTreeSet::new(),
                docker_manifest: true,
            };
            self.append_all(&mut builder, &image, &manifest, &references, everything)?;
            builder.into_inner()?.flush()
        });
        written.map_err(|err| {
            let _ = std::fs::remove_file(out);
            unwrap_io(err, |source| ArchiveError::Write {
                path: out.to_path_buf(),
                source,
            })
        })
    }

    /// Streams `image` to `out` as the OCI layout `write_docker_archive` writes, without the
    /// layers in `leave_out` (a node already holds them) and without docker's `manifest.json`
    /// (whose importer wants every layer in the tar; containerd's OCI importer takes the rest
    /// from its content store). The config and manifest always go: they are small, and the
    /// import names the image from them. Call `resolve_digests` first.
    pub fn write_layout_without(
        &self,
        image: &PlatformImage,
        names: &[String],
        leave_out: &BTreeSet<Digest>,
        out: impl Write,
    ) -> io::Result<()> {
        let references = self.references(names).map_err(io::Error::other)?;
        let manifest = self.manifest(image).map_err(io::Error::other)?;
        let mut builder = tar::Builder::new(out);
        let contents = Contents {
            leave_out,
            docker_manifest: false,
        };
        self.append_all(&mut builder, image, &manifest, &references, contents)?;
        builder.into_inner()?.flush()
    }

    fn append_all(
        &self,
        builder: &mut tar::Builder<impl Write>,
        image: &PlatformImage,
        manifest: &RawBlob,
        references: &[ImageName],
        contents: Contents<'_>,
    ) -> io::Result<()> {
        append(
            builder,
            "oci-layout",
            br#"{"imageLayoutVersion":"1.0.0"}"#.as_slice(),
            31,
        )?;
        append_bytes(builder, &image.config.digest, &image.config.bytes)?;
        let mut written: Vec<&Digest> = vec![&image.config.digest];
        let mut layer_paths = Vec::with_capacity(image.layers.len());
        for layer in &image.layers {
            let digest = layer.digest.as_ref().ok_or_else(|| {
                io::Error::other(ArchiveError::UnresolvedDigest {
                    archive: self.name().to_string(),
                    member: layer.location.member.clone(),
                })
            })?;
            layer_paths.push(blob_path(digest));
            if written.contains(&digest) || contents.leave_out.contains(digest) {
                continue;
            }
            let reader = self.layer_reader(layer)?;
            append(builder, &blob_path(digest), reader, layer.size())?;
            written.push(digest);
        }
        append_bytes(builder, &manifest.digest, &manifest.bytes)?;

        let index = index_json(image, manifest, references);
        append(
            builder,
            oci::INDEX_JSON,
            index.as_slice(),
            index.len() as u64,
        )?;
        if !contents.docker_manifest {
            return builder.finish();
        }
        let docker_manifest = serde_json::to_vec(&[DockerManifestOut {
            config: blob_path(&image.config.digest),
            repo_tags: references.iter().map(ImageName::familiar).collect(),
            layers: layer_paths,
        }])?;
        append(
            builder,
            "manifest.json",
            docker_manifest.as_slice(),
            docker_manifest.len() as u64,
        )?;
        builder.finish()
    }

    /// The tar to hand a node loader unchanged, when the input already is what
    /// `write_docker_archive` would write for `names`: a tar file on disk (not compressed, not
    /// piped) holding an OCI layout with exactly one image of one platform, all blobs present,
    /// whose index names it every one of `names` as containerd will (the normalised name in
    /// `io.containerd.image.name`) and whose `manifest.json` tags it so for `docker load`.
    /// Otherwise `None`: write a copy.
    pub fn loadable_as_is(&self, names: &[String]) -> Option<&Path> {
        let path = self.in_place.as_deref()?;
        if self.format != Format::OciLayout || self.container.find(oci::OCI_LAYOUT).is_none() {
            return None;
        }
        let [image] = self.images.as_slice() else {
            return None;
        };
        let [platform] = image.platforms.as_slice() else {
            return None;
        };
        let manifest = platform.manifest.as_ref()?;
        if !image.absent_platforms.is_empty() {
            return None;
        }
        let entries = oci::named_entries(&self.container).ok()?;
        let all_this_manifest = entries.iter().all(|(digest, _)| *digest == manifest.digest);
        let recorded: Vec<&String> = entries.iter().flat_map(|(_, names)| names).collect();
        let all_named = names.iter().all(|wanted| {
            ImageName::parse(wanted).is_ok_and(|wanted| recorded.contains(&&wanted.normalized()))
        });
        let repo_tags = match docker::read_manifest_json(&self.container).ok()?.as_slice() {
            [entry] => entry.repo_tags.clone().unwrap_or_default(),
            _ => return None,
        };
        let all_tagged = names
            .iter()
            .all(|wanted| repo_tags.iter().any(|tag| same_image(tag, wanted)));
        (all_this_manifest && all_named && all_tagged).then_some(path)
    }
}

/// What a written archive holds beside the config, manifest and index.
#[derive(Clone, Copy)]
struct Contents<'a> {
    leave_out: &'a BTreeSet<Digest>,
    docker_manifest: bool,
}

impl Archive {
    fn references(&self, names: &[String]) -> Result<Vec<ImageName>, ArchiveError> {
        names
            .iter()
            .map(|name| {
                ImageName::parse(name)
                    .map_err(|err| ArchiveError::invalid(self.name(), name, err.to_string()))
            })
            .collect()
    }

    /// Whether `path` is the file this archive reads in place (writing there would destroy it).
    fn is_read_from(&self, path: &Path) -> bool {
        let Some(input) = &self.in_place else {
            return false;
        };
        match (std::fs::canonicalize(input), std::fs::canonicalize(path)) {
            (Ok(input), Ok(path)) => input == path,
            _ => false,
        }
    }
}

/// The name containerd records for `name` when it imports an archive this module wrote
/// (`myimg:dev` is `docker.io/library/myimg:dev`); `None` when it is no valid image name.
pub fn containerd_name(name: &str) -> Option<String> {
    ImageName::parse(name)
        .ok()
        .map(|reference| reference.normalized())
}

fn blob_path(digest: &Digest) -> String {
    format!("blobs/sha256/{}", digest.hex())
}

/// The index docker 25+ writes: one manifest entry per name, with the full name for containerd
/// and the tag as the OCI ref name.
fn index_json(image: &PlatformImage, manifest: &RawBlob, references: &[ImageName]) -> Vec<u8> {
    let descriptor = |annotations| ManifestDescriptorOut {
        media_type: &manifest.media_type,
        digest: &manifest.digest,
        size: manifest.size(),
        annotations,
        platform: PlatformOut {
            architecture: &image.platform.architecture,
            os: &image.platform.os,
            variant: image.platform.variant.as_deref(),
        },
    };
    let manifests = if references.is_empty() {
        vec![descriptor(BTreeMap::new())]
    } else {
        references
            .iter()
            .map(|reference| {
                descriptor(BTreeMap::from([
                    (IMAGE_NAME, reference.normalized()),
                    (REF_NAME, reference.tag_or_default().to_string()),
                ]))
            })
            .collect()
    };
    let index = IndexOut {
        schema_version: 2,
        media_type: MediaType::OciIndex,
        manifests,
    };
    serde_json::to_vec(&index).expect("an index of strings and numbers serialises")
}

fn append_bytes(
    builder: &mut tar::Builder<impl Write>,
    digest: &Digest,
    bytes: &[u8],
) -> io::Result<()> {
    append(builder, &blob_path(digest), bytes, bytes.len() as u64)
}

fn append(
    builder: &mut tar::Builder<impl Write>,
    path: &str,
    data: impl Read,
    size: u64,
) -> io::Result<()> {
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_mode(0o644);
    header.set_size(size);
    header.set_mtime(0);
    builder.append_data(&mut header, path, data)
}
