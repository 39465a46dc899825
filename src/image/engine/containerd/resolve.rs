//! What to push of an image containerd holds: its target read (a manifest as it is; an index held
//! whole goes whole, one whose other platforms were never pulled gives this platform's image),
//! every blob checked present, the config read for the image's facts.

use bytes::Bytes;

use super::grpc::{Failure, Grpc, NOT_FOUND};
use super::{CONTENT_INFO, CONTENT_READ, ContentBlob, ContentManifest, ContentMiss, proto};
use crate::image::archive::ConfigFacts;
use crate::image::digest::Digest;
use crate::image::oci::{
    Descriptor as OciDescriptor, ManifestOrIndex, MediaType, Platform, parse_manifest,
};

/// Manifests, indexes and configs are small; anything bigger is not one.
const SMALL_BLOB_LIMIT: u64 = 4 << 20;

/// One image manifest and what it names, all of it present in containerd.
#[derive(Debug, Clone)]
pub(super) struct ImageContent {
    pub manifest: ContentManifest,
    config_blob: ContentBlob,
    pub config: Bytes,
    pub facts: ConfigFacts,
    pub layers: Vec<ContentBlob>,
}

impl ImageContent {
    fn blobs(&self) -> impl Iterator<Item = &ContentBlob> {
        self.layers.iter().chain([&self.config_blob])
    }
}

pub(super) struct Store<'a> {
    pub grpc: &'a Grpc,
    pub describe: &'a str,
}

impl Store<'_> {
    /// What to push for `target`: every blob (each once), the manifests (children first), and
    /// the image of this machine's platform (or the only one).
    pub(super) async fn resolve(
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

fn blob_of(descriptor: &OciDescriptor) -> ContentBlob {
    ContentBlob {
        media_type: descriptor.media_type.clone().unwrap_or_default(),
        digest: descriptor.digest.clone(),
        size: descriptor.size,
    }
}
