//! nerdctl's images, read from containerd's content store over its socket, found as nerdctl finds
//! it (`CONTAINERD_ADDRESS`, nerdctl.toml's `address`, `/run/containerd/containerd.sock`; the
//! namespace from `CONTAINERD_NAMESPACE`, nerdctl.toml, else `default`): the image by name, the
//! manifests to push (the whole index when containerd holds all of it, else this platform's),
//! and each blob streamed by digest.

mod grpc;
mod proto;

use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use super::config_file::{is_root, top_level_strings};
use super::endpoint::EngineEnv;
use super::facts::ImageFacts;
use crate::image::archive::{Compression, ConfigFacts, OpenBlob};
use crate::image::digest::Digest;
use crate::image::oci::{
    Descriptor as OciDescriptor, ManifestOrIndex, MediaType, Platform, is_layer_type,
    parse_manifest,
};
use crate::image::reference::ImageName;
use crate::limits::Limits;
use grpc::{Answers, Failure, Grpc, NOT_FOUND, PERMISSION_DENIED};

const DEFAULT_SOCKET: &str = "/run/containerd/containerd.sock";
const DEFAULT_NAMESPACE: &str = "default";
const SYSTEM_NERDCTL_TOML: &str = "/etc/nerdctl/nerdctl.toml";
/// Manifests, indexes and configs are small; anything bigger is not one.
const SMALL_BLOB_LIMIT: u64 = 4 << 20;

const IMAGES_GET: &str = "containerd.services.images.v1.Images/Get";
const CONTENT_INFO: &str = "containerd.services.content.v1.Content/Info";
const CONTENT_READ: &str = "containerd.services.content.v1.Content/Read";

/// A blob the manifests name: a layer or a config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentBlob {
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
}

impl ContentBlob {
    /// A layer's compression, as its media type declares it.
    pub fn compression(&self) -> Compression {
        if self.media_type.contains("gzip") {
            Compression::Gzip
        } else if self.media_type.contains("zstd") {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

/// A manifest or index, its bytes exactly as containerd holds them (so its digest is kept).
#[derive(Debug, Clone)]
pub struct ContentManifest {
    pub media_type: String,
    pub digest: Digest,
    pub bytes: Bytes,
}

/// An image in containerd's content store, ready to be pushed as it is.
#[derive(Debug, Clone)]
pub struct ContentImage {
    /// `containerd at unix://SOCKET (namespace NS)`, for `-v` and errors.
    pub describe: String,
    /// Every blob the manifests name, each once, in manifest order.
    pub blobs: Vec<ContentBlob>,
    /// Children first; the last one is what the tag names.
    pub manifests: Vec<ContentManifest>,
    /// The image of this machine's platform (or the only one): what the nodes are loaded with.
    pub platform: ContentPlatform,
    grpc: Grpc,
}

/// One platform's image as containerd holds it: its config's bytes and its layers, base first.
#[derive(Debug, Clone)]
pub struct ContentPlatform {
    pub config: Bytes,
    pub layers: Vec<ContentBlob>,
}

/// Why containerd's store is not read, for `-v`: nerdctl's CLI is asked instead.
#[derive(Debug)]
pub(super) struct ContentMiss(String);

impl fmt::Display for ContentMiss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where nerdctl's containerd listens, and in which namespace it keeps its images.
fn address(env: &EngineEnv) -> (PathBuf, String) {
    let toml = env.nerdctl_toml.clone().or_else(|| {
        if is_root() {
            Some(PathBuf::from(SYSTEM_NERDCTL_TOML))
        } else {
            env.config_home
                .clone()
                .or_else(|| env.home.as_ref().map(|home| home.join(".config")))
                .map(|dir| dir.join("nerdctl/nerdctl.toml"))
        }
    });
    let from_file = toml
        .and_then(|file| std::fs::read_to_string(file).ok())
        .map(|text| top_level_strings(&text, ["address", "namespace"]))
        .unwrap_or_default();
    let [file_address, file_namespace] = from_file;
    let socket = env
        .containerd_address
        .clone()
        .or(file_address)
        .unwrap_or_else(|| DEFAULT_SOCKET.to_string());
    let socket = socket
        .strip_prefix("unix://")
        .unwrap_or(&socket)
        .to_string();
    let namespace = env
        .containerd_namespace
        .clone()
        .or(file_namespace)
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string());
    (PathBuf::from(socket), namespace)
}

/// The image nerdctl would call `image`, read from containerd: its facts and what to push.
pub(super) async fn find(
    env: &EngineEnv,
    image: &str,
    limits: &Limits,
) -> Result<(ContentImage, ImageFacts), ContentMiss> {
    let (socket, namespace) = address(env);
    let describe = format!(
        "containerd at unix://{} (namespace {namespace})",
        socket.display()
    );
    if !Path::new(&socket).exists() {
        return Err(ContentMiss(format!("{describe}: no such socket")));
    }
    let name = ImageName::parse(image)
        .map_err(|err| ContentMiss(err.to_string()))?
        .normalized();
    let grpc = Grpc::new(
        &socket,
        &namespace,
        limits.request_timeout,
        limits.stall_timeout,
    )
    .map_err(|failure| ContentMiss(format!("{describe}: {}", failure.message)))?;
    let missed = |failure: Failure| {
        ContentMiss(match failure.code {
            Some(NOT_FOUND) => format!("{describe} has no image {name}"),
            Some(PERMISSION_DENIED) => format!("{describe} refused us: {}", failure.message),
            _ => format!("{describe}: {}", failure.message),
        })
    };
    let answer = tokio::time::timeout(
        limits.request_timeout,
        grpc.unary(IMAGES_GET, proto::get_image_request(&name)),
    )
    .await
    .map_err(|_| ContentMiss(format!("{describe} did not answer")))?
    .map_err(missed)?;
    let target = proto::get_image_response(&answer)
        .map_err(|said| ContentMiss(format!("{describe}: {said}")))?;
    let store = Store {
        grpc: &grpc,
        describe: &describe,
    };
    let (blobs, manifests, image) = store.resolve(&name, &target).await?;
    let facts = ImageFacts {
        id: target.digest,
        repo_tags: vec![familiar(&name)],
        diff_ids: image.facts.diff_ids,
        platform: Some(image.facts.platform.to_string()),
    };
    Ok((
        ContentImage {
            describe,
            blobs,
            manifests,
            platform: ContentPlatform {
                config: image.config,
                layers: image.layers,
            },
            grpc,
        },
        facts,
    ))
}

impl ContentImage {
    /// Whether a layer is a plain tar (`nerdctl load` of a `docker save` keeps them so).
    pub fn has_uncompressed_layers(&self) -> bool {
        self.blobs
            .iter()
            .any(|blob| is_layer_type(&blob.media_type) && blob.compression() == Compression::None)
    }

    /// `blob` as a blocking reader, for the node writers' threads (outside the async runtime,
    /// whose handle is taken here): each read waits for containerd's next chunk.
    pub fn opener(&self, blob: &ContentBlob) -> OpenBlob {
        let (image, blob) = (self.clone(), blob.clone());
        let handle = tokio::runtime::Handle::current();
        Arc::new(move || {
            Ok(Box::new(BlockingRead {
                handle: handle.clone(),
                chunks: Box::pin(image.read(&blob)),
                chunk: Bytes::new(),
            }) as Box<dyn Read + Send>)
        })
    }

    /// The blob's bytes as containerd streams them; an error ends the stream (and the upload).
    pub fn read(
        &self,
        blob: &ContentBlob,
    ) -> impl Stream<Item = io::Result<Bytes>> + Send + 'static {
        let grpc = self.grpc.clone();
        let request = proto::read_request(blob.digest.as_str(), 0);
        let what = format!("reading {} from {}", blob.digest.short(), self.describe);
        let failed = move |said: String| io::Error::other(format!("{what}: {said}"));
        // The call starts with the first poll; each answer must carry the next offset.
        futures_util::stream::try_unfold((None, 0u64), move |(answers, at)| {
            let (grpc, request, failed) = (grpc.clone(), request.clone(), failed.clone());
            async move {
                let mut answers: Answers = match answers {
                    Some(answers) => answers,
                    None => grpc
                        .call(CONTENT_READ, request)
                        .await
                        .map_err(|failure| failed(failure.message))?,
                };
                let Some(message) = answers
                    .next()
                    .await
                    .map_err(|failure| failed(failure.message))?
                else {
                    return Ok(None);
                };
                let (offset, data) = proto::read_response(&message).map_err(&failed)?;
                if offset != at {
                    return Err(failed(format!(
                        "it sent offset {offset} where {at} was due"
                    )));
                }
                let next = at + data.len() as u64;
                Ok(Some((data, (Some(answers), next))))
            }
        })
    }
}

struct BlockingRead<S> {
    handle: tokio::runtime::Handle,
    chunks: Pin<Box<S>>,
    chunk: Bytes,
}

impl<S: Stream<Item = io::Result<Bytes>>> Read for BlockingRead<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.chunk.is_empty() {
            match self.handle.block_on(self.chunks.next()) {
                Some(chunk) => self.chunk = chunk?,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk.split_to(n));
        Ok(n)
    }
}

fn blob_of(descriptor: &OciDescriptor) -> ContentBlob {
    ContentBlob {
        media_type: descriptor.media_type.clone().unwrap_or_default(),
        digest: descriptor.digest.clone(),
        size: descriptor.size,
    }
}

/// `docker.io/library/myimg:dev` as nerdctl prints it: `myimg:dev`.
fn familiar(name: &str) -> String {
    ImageName::parse(name).map_or_else(|_| name.to_string(), |n| n.familiar())
}

/// One image manifest and what it names, all of it present in containerd.
#[derive(Debug, Clone)]
struct ImageContent {
    manifest: ContentManifest,
    config_blob: ContentBlob,
    config: Bytes,
    facts: ConfigFacts,
    layers: Vec<ContentBlob>,
}

impl ImageContent {
    fn blobs(&self) -> impl Iterator<Item = &ContentBlob> {
        self.layers.iter().chain([&self.config_blob])
    }
}

struct Store<'a> {
    grpc: &'a Grpc,
    describe: &'a str,
}

impl Store<'_> {
    /// What to push for `target`: every blob (each once), the manifests (children first), and
    /// the image of this machine's platform (or the only one).
    async fn resolve(
        &self,
        name: &str,
        target: &proto::Descriptor,
    ) -> Result<(Vec<ContentBlob>, Vec<ContentManifest>, ImageContent), ContentMiss> {
        let top = self.manifest(&target.media_type, &target.digest).await?;
        let parsed = self.parse(&top)?;
        if !parsed.is_index() {
            let image = self.image(top, &parsed).await?;
            let blobs = image.blobs().cloned().collect();
            return Ok((blobs, vec![image.manifest.clone()], image));
        }
        let host = Platform::host();
        let mut children = Vec::new();
        let mut whole = true;
        let mut for_host = None;
        for child in parsed.children() {
            let Some(image) = self.complete_child(child).await? else {
                whole = false;
                continue;
            };
            if for_host.is_none()
                && !child.is_attachment()
                && child.platform().is_none_or(|p| p.satisfies(&host))
            {
                for_host = Some(image.clone());
            }
            children.push(image);
        }
        let for_host = for_host.ok_or_else(|| {
            ContentMiss(format!(
                "{} holds no complete {host} image under {name}",
                self.describe
            ))
        })?;
        if !whole {
            let blobs = for_host.blobs().cloned().collect();
            return Ok((blobs, vec![for_host.manifest.clone()], for_host));
        }
        let mut blobs: Vec<ContentBlob> = Vec::new();
        for blob in children.iter().flat_map(ImageContent::blobs) {
            if !blobs.contains(blob) {
                blobs.push(blob.clone());
            }
        }
        let mut manifests: Vec<ContentManifest> =
            children.into_iter().map(|child| child.manifest).collect();
        manifests.push(top);
        Ok((blobs, manifests, for_host))
    }

    /// A child of an index, when containerd holds all of it (nerdctl pulls only its own
    /// platform's).
    async fn complete_child(
        &self,
        child: &OciDescriptor,
    ) -> Result<Option<ImageContent>, ContentMiss> {
        if self.size(&child.digest).await?.is_none() {
            return Ok(None);
        }
        let media_type = child.media_type.as_deref().unwrap_or_default();
        let manifest = self.manifest(media_type, child.digest.as_str()).await?;
        let parsed = self.parse(&manifest)?;
        if parsed.is_index() {
            return Ok(None);
        }
        Ok(self.image(manifest, &parsed).await.ok())
    }

    /// One image manifest's config and layers, each checked present.
    async fn image(
        &self,
        manifest: ContentManifest,
        parsed: &ManifestOrIndex,
    ) -> Result<ImageContent, ContentMiss> {
        let config = parsed.config.as_ref().ok_or_else(|| {
            ContentMiss(format!(
                "manifest {} in {} has no config",
                manifest.digest.short(),
                self.describe
            ))
        })?;
        let config_bytes = self.small_blob(config.digest.as_str()).await?;
        let facts = ConfigFacts::from_bytes(&config_bytes).map_err(|err| {
            ContentMiss(format!(
                "config {} in {} is not an image config: {err}",
                config.digest.short(),
                self.describe
            ))
        })?;
        let mut layers = Vec::new();
        for descriptor in parsed.layers() {
            if self.size(&descriptor.digest).await? != Some(descriptor.size) {
                return Err(ContentMiss(format!(
                    "{} lacks blob {} of manifest {} (a lazy pull, or layers discarded after unpacking)",
                    self.describe,
                    descriptor.digest.short(),
                    manifest.digest.short()
                )));
            }
            layers.push(blob_of(descriptor));
        }
        Ok(ImageContent {
            manifest,
            config_blob: blob_of(config),
            config: config_bytes,
            facts,
            layers,
        })
    }

    fn parse(&self, manifest: &ContentManifest) -> Result<ManifestOrIndex, ContentMiss> {
        parse_manifest(&manifest.bytes).map_err(|err| {
            ContentMiss(format!(
                "{} in {} is not a manifest: {err}",
                manifest.digest.short(),
                self.describe
            ))
        })
    }

    async fn manifest(
        &self,
        media_type: &str,
        digest: &str,
    ) -> Result<ContentManifest, ContentMiss> {
        let bytes = self.small_blob(digest).await?;
        let digest = Digest::of_bytes(&bytes);
        let media_type = match media_type {
            "" => parse_manifest(&bytes)
                .ok()
                .and_then(|m| m.own_media_type().ok().map(str::to_string))
                .unwrap_or_else(|| MediaType::OciManifest.as_str().to_string()),
            declared => declared.to_string(),
        };
        Ok(ContentManifest {
            media_type,
            digest,
            bytes,
        })
    }

    /// The size containerd holds for `digest`, `None` when it holds none.
    async fn size(&self, digest: &Digest) -> Result<Option<u64>, ContentMiss> {
        match self
            .grpc
            .unary(CONTENT_INFO, proto::info_request(digest.as_str()))
            .await
        {
            Ok(answer) => proto::info_response(&answer)
                .map(Some)
                .map_err(|said| ContentMiss(format!("{}: {said}", self.describe))),
            Err(Failure {
                code: Some(NOT_FOUND),
                ..
            }) => Ok(None),
            Err(failure) => Err(ContentMiss(format!(
                "{}: {}",
                self.describe, failure.message
            ))),
        }
    }

    /// A manifest, index or config (at most `SMALL_BLOB_LIMIT`), whose sha256 must be `digest`.
    async fn small_blob(&self, digest: &str) -> Result<Bytes, ContentMiss> {
        let failed =
            |said: String| ContentMiss(format!("reading {digest} from {}: {said}", self.describe));
        let mut answers = self
            .grpc
            .call(CONTENT_READ, proto::read_request(digest, 0))
            .await
            .map_err(|failure| failed(failure.message))?;
        let mut bytes = Vec::new();
        while let Some(message) = answers
            .next()
            .await
            .map_err(|failure| failed(failure.message))?
        {
            let (_, data) = proto::read_response(&message).map_err(failed)?;
            bytes.extend_from_slice(&data);
            if bytes.len() as u64 > SMALL_BLOB_LIMIT {
                return Err(failed(format!(
                    "it is larger than {SMALL_BLOB_LIMIT} bytes"
                )));
            }
        }
        if Digest::of_bytes(&bytes).as_str() != digest {
            return Err(failed("its bytes do not have that digest".to_string()));
        }
        Ok(Bytes::from(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_and_namespace_are_found_as_nerdctl_finds_them() {
        let dir = tempfile::tempdir().unwrap();
        let toml = dir.path().join("nerdctl.toml");
        std::fs::write(
            &toml,
            "address = \"unix:///run/k3s/containerd/containerd.sock\"\nnamespace = \"k8s.io\"\n",
        )
        .unwrap();
        let mut env = EngineEnv {
            nerdctl_toml: Some(toml),
            ..EngineEnv::default()
        };
        assert_eq!(
            address(&env),
            (
                PathBuf::from("/run/k3s/containerd/containerd.sock"),
                "k8s.io".to_string()
            )
        );
        env.containerd_address = Some("/tmp/c.sock".into());
        env.containerd_namespace = Some("buildkit".into());
        assert_eq!(
            address(&env),
            (PathBuf::from("/tmp/c.sock"), "buildkit".to_string())
        );
        env.nerdctl_toml = Some(dir.path().join("absent.toml"));
        env.containerd_address = None;
        env.containerd_namespace = None;
        assert_eq!(
            address(&env),
            (PathBuf::from(DEFAULT_SOCKET), DEFAULT_NAMESPACE.to_string())
        );
    }
}
