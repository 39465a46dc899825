//! nerdctl's images, read from containerd's content store over its socket (found as nerdctl finds
//! it: `address`): the image by name, what to push of it (`resolve`), and each blob streamed by
//! digest, into an upload or a node writer's blocking reads.

mod address;
mod grpc;
mod proto;
mod resolve;

use std::fmt;
use std::io::{self, Read};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use super::endpoint::EngineEnv;
use super::facts::ImageFacts;
use crate::image::archive::{Compression, OpenBlob};
use crate::image::digest::Digest;
use crate::image::oci::is_layer_type;
use crate::image::reference::ImageName;
use crate::plumbing::limits::Limits;
#[cfg(fuzzing)]
pub(crate) use address::read_nerdctl_toml;
use grpc::{Answers, Failure, Grpc, NOT_FOUND, PERMISSION_DENIED};
#[cfg(fuzzing)]
pub(crate) use grpc::{next_message, status as grpc_status};
#[cfg(fuzzing)]
pub(crate) use proto::{get_image_response, info_response, read_response};
use resolve::Store;

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

/// The image nerdctl would call `image`, read from containerd: its facts and what to push.
pub(super) async fn find(
    env: &EngineEnv,
    image: &str,
    limits: &Limits,
) -> Result<(ContentImage, ImageFacts), ContentMiss> {
    let (socket, namespace) = address::address(env);
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
        size: None,
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

/// `docker.io/library/myimg:dev` as nerdctl prints it: `myimg:dev`.
fn familiar(name: &str) -> String {
    ImageName::parse(name).map_or_else(|_| name.to_string(), |n| n.familiar())
}
