//! The registry target for an archive (and what adapts to one: podman's store): every blob
//! present and verified (HEAD-skip, streamed uploads in parallel, largest first), then the
//! platform manifests, then the tag last: the one commit point.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::Arc;

use futures_util::StreamExt;

use crate::delivery::push::pipeline::attachments;
use crate::delivery::push::pipeline::commit::{put_by_digest, tag_last};
use crate::delivery::push::pipeline::manifest::{Descriptor, index_for, manifest_for};
use crate::delivery::push::pipeline::progress::BlobProgress;
use crate::delivery::push::pipeline::stream::{self, Encoding};
use crate::delivery::push::pipeline::upload::{Blob, BlobSource, Opened, SentLayer, Uploader};
use crate::delivery::push::summary::Transfer;
use crate::image::archive::{self, Archive, Image, Layer, PlatformImage, RawBlob};
use crate::image::digest::Digest;
use crate::image::reference::RegistryHost;
use crate::image::reference::Target;
use crate::image::registry::{RegistryClient, TransportOptions};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;

/// How the push reaches the registry, resolved from flags and the registry's nature.
pub(crate) struct RegistryPush<'a> {
    /// The host we upload to, as seen from where we run.
    pub host: &'a RegistryHost,
    pub target: &'a Target,
    pub encoding: Encoding,
    pub jobs: usize,
    pub transport: TransportOptions,
    /// Where the record of sent blobs is kept; `None`: none.
    pub cache_dir: Option<&'a Path>,
}

impl RegistryPush<'_> {
    /// A client of the registry that has answered `/v2/`.
    pub(crate) async fn client(&self) -> Result<RegistryClient> {
        let client = RegistryClient::new(self.host, &self.transport)?;
        client.ping().await?;
        Ok(client)
    }

    pub(crate) fn uploader(&self, client: &RegistryClient, printer: &Printer) -> Uploader {
        let repo = self.target.repository.as_str();
        Uploader::new(client, repo, self.encoding, self.cache_dir, printer)
    }
}

/// What a commit put in the registry.
pub(crate) struct Committed {
    /// What the tag now names.
    pub digest: Digest,
    pub transfer: Transfer,
    /// Each platform's manifest as sent.
    pub manifests: Vec<RawBlob>,
}

/// Pushes `image` of `archive`, its layers read through `source`: the layers, then the
/// manifests and the tag.
pub(crate) async fn push<S: BlobSource<Item = Layer>>(
    plan: &RegistryPush<'_>,
    client: &RegistryClient,
    archive: &Arc<Archive>,
    source: &S,
    mut image: Image,
    printer: &Printer,
) -> Result<Committed> {
    resolve_unknown_digests(archive, &mut image).await?;
    let uploader = plan.uploader(client, printer);
    let layers = unique_layers(&image);
    let total = layers.len();
    let blobs = layers
        .iter()
        .enumerate()
        .map(|(i, layer)| {
            let label = format!("layer {}/{total}", i + 1);
            (layer_blob(&uploader, label, layer), layer)
        })
        .collect();
    let sent = uploader.send_all(source, blobs, plan.jobs).await?;
    commit(&uploader, &plan.target.tag, archive, &image, &sent).await
}

/// A layer of an archive, as the uploader sees it.
pub(crate) fn layer_blob(uploader: &Uploader, label: String, layer: &Layer) -> Blob {
    Blob {
        label,
        record_key: layer.diff_id.clone(),
        stored: Descriptor::new(
            layer.media_type_or_default(),
            layer.stored_digest().clone(),
            layer.size(),
        ),
        encoding: uploader.encoding_for(layer.compression),
    }
}

impl BlobSource for Archive {
    type Item = Layer;

    fn open(&self, layer: &Layer, blob: &Blob, bar: &BlobProgress) -> Result<Opened> {
        let reader = self
            .layer_reader(layer)
            .map_err(|err| reading(layer, err))?;
        let (body, source_failure) = stream::body(reader, blob.encoding, bar.clone());
        Ok(Opened {
            body: body.boxed(),
            source_failure: Some(source_failure),
        })
    }

    /// Corrupt (it does not hash to its digest) or unreadable.
    fn fault(&self, layer: &Layer, err: io::Error) -> Error {
        if !archive::is_verification_failure(&err) {
            return reading(layer, err);
        }
        Error::new(
            ExitCode::Input,
            format!("{} is corrupt; nothing was tagged", layer.describe()),
        )
        .with_source(err)
        .with_hint(
            "the archive was damaged after it was written: write it again (docker save, skopeo copy)",
        )
    }
}

fn reading(layer: &Layer, err: io::Error) -> Error {
    Error::new(
        ExitCode::Input,
        format!(
            "reading {} from {}",
            layer.describe(),
            layer.location.archive
        ),
    )
    .with_source(err)
}

/// Once every layer is in (each recorded as it landed): the configs, the manifests and the tag.
pub(crate) async fn commit(
    uploader: &Uploader,
    tag: &str,
    archive: &Archive,
    image: &Image,
    sent: &[SentLayer],
) -> Result<Committed> {
    let mut transfer = Transfer::default();
    let mut sent_layers = HashMap::new();
    for layer in sent {
        transfer.count(layer.outcome, layer.descriptor.size);
        sent_layers.insert(layer.key.clone(), layer.descriptor.clone());
    }
    let mut manifests = Vec::new();
    for platform in &image.platforms {
        let config = &platform.config;
        let outcome = uploader
            .send_small_blob(&config.digest, &config.bytes)
            .await?;
        transfer.count(outcome, config.size());
        manifests.push(manifest_for(archive, platform, &sent_layers)?);
    }
    let digest = put_manifests(uploader, tag, image, &manifests).await?;
    Ok(Committed {
        digest,
        transfer,
        manifests,
    })
}

/// Each platform's manifest by digest, then the tag: the one platform's manifest, or an index
/// over them.
async fn put_manifests(
    uploader: &Uploader,
    tag: &str,
    image: &Image,
    manifests: &[RawBlob],
) -> Result<Digest> {
    let (client, repo) = (&uploader.client, uploader.repo.as_str());
    // The archive's own index, when every manifest it names goes unchanged: then it is tagged
    // as it is, with the manifests it carries beside its platforms (attestations).
    let index = index_for(image, manifests);
    let original_index = image.index.as_ref().filter(|original| **original == index);
    if let ([single], None) = (manifests, original_index) {
        return tag_last(client, repo, tag, &[], single).await;
    }
    if original_index.is_some() {
        // Attachments name the platform manifests: those go first.
        for manifest in manifests {
            put_by_digest(client, repo, manifest).await?;
        }
        attachments::push(uploader, &image.attachments).await?;
        return tag_last(client, repo, tag, &[], &index).await;
    }
    if !image.attachments.is_empty() {
        uploader.printer.warn(&format!(
            "leaving out the {} manifests attached to the archive's index (attestations, signatures): they describe manifests this push re-encoded",
            image.attachments.len()
        ));
    }
    tag_last(client, repo, tag, manifests, &index).await
}

/// Layers to send, each once even when several platforms share it.
pub(crate) fn unique_layers(image: &Image) -> Vec<Layer> {
    let mut seen = std::collections::HashSet::new();
    image
        .platforms
        .iter()
        .flat_map(|platform| &platform.layers)
        .filter(|layer| seen.insert(layer.stored_digest().clone()))
        .cloned()
        .collect()
}

/// Compressed layers of docker archives (jib, crane) are named by diff_id only: hash them first,
/// so that the registry can be asked whether it has them.
async fn resolve_unknown_digests(archive: &Arc<Archive>, image: &mut Image) -> Result<()> {
    if image
        .platforms
        .iter()
        .all(|p| p.layers.iter().all(|l| l.digest.is_some()))
    {
        return Ok(());
    }
    let archive = Arc::clone(archive);
    let mut platforms = std::mem::take(&mut image.platforms);
    image.platforms = tokio::task::spawn_blocking(move || {
        platforms
            .iter_mut()
            .try_for_each(|platform: &mut PlatformImage| archive.resolve_digests(platform))
            .map(|()| platforms)
    })
    .await
    .map_err(|err| Error::new(ExitCode::Failure, "hashing layers").with_source(err))?
    .map_err(Error::from)?;
    Ok(())
}
