//! The registry target: every blob present and verified (HEAD-skip, streamed uploads in
//! parallel), then the platform manifests, then the tag last: the one commit point.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};

use super::attachments;
use super::cache::SentBlobs;
use super::layer_upload::{SentLayer, Uploader, send_small_blob};
use super::manifest::{index_for, manifest_for};
use super::progress::Progress;
use super::stream::Encoding;
use super::summary::Transfer;
use crate::error::{Error, ExitCode, Result};
use crate::image::archive::{Archive, Image, Layer, PlatformImage, RawBlob};
use crate::image::digest::Digest;
use crate::image::reference::RegistryHost;
use crate::image::reference::Target;
use crate::image::registry::{RegistryClient, TransportOptions};
use crate::output::Printer;

/// How the push reaches the registry, resolved from flags and the registry's nature.
pub(super) struct RegistryPush<'a> {
    /// The host we upload to, as seen from where we run.
    pub host: &'a RegistryHost,
    pub target: &'a Target,
    pub encoding: Encoding,
    pub jobs: usize,
    pub transport: TransportOptions,
    /// Where the record of sent blobs is kept; `None`: none.
    pub cache_dir: Option<&'a Path>,
}

/// Pushes `image` and returns the digest the tag now points to, with what moved.
pub(super) async fn push(
    plan: &RegistryPush<'_>,
    archive: Arc<Archive>,
    mut image: Image,
    printer: &Printer,
) -> Result<(Digest, Transfer)> {
    let client = RegistryClient::new(plan.host, &plan.transport)?;
    client.ping().await?;
    let repo = plan.target.repository.as_str();
    resolve_unknown_digests(&archive, &mut image).await?;

    let progress = Progress::new(printer);
    let sent_before = Mutex::new(SentBlobs::load_in(plan.cache_dir));
    let uploader = Uploader {
        client: &client,
        repo,
        archive: &archive,
        encoding: plan.encoding,
        sent_before: &sent_before,
        printer,
    };
    let sent: Vec<SentLayer> =
        futures_util::stream::iter(largest_first(unique_layers(&image)).map(|(label, layer)| {
            let bar = progress.blob(label, layer.size());
            uploader.send(layer, bar)
        }))
        .buffer_unordered(plan.jobs)
        .try_collect()
        .await?;
    let (digest, transfer, _) = commit(
        &client,
        repo,
        &plan.target.tag,
        &archive,
        &image,
        &sent,
        printer,
    )
    .await?;
    Ok((digest, transfer))
}

/// Once every layer is in (each recorded as it landed): the configs, the manifests and the tag.
/// Returns the tagged digest, what moved, and each platform's manifest as sent.
pub(super) async fn commit(
    client: &RegistryClient,
    repo: &str,
    tag: &str,
    archive: &Archive,
    image: &Image,
    sent: &[SentLayer],
    printer: &Printer,
) -> Result<(Digest, Transfer, Vec<RawBlob>)> {
    let mut transfer = Transfer::default();
    let mut sent_layers = HashMap::new();
    for layer in sent {
        transfer.count(layer.outcome, layer.descriptor.size);
        sent_layers.insert(layer.key.clone(), layer.descriptor.clone());
    }

    let mut manifests = Vec::new();
    for platform in &image.platforms {
        let outcome = send_small_blob(
            client,
            printer,
            repo,
            &platform.config.digest,
            &platform.config.bytes,
        )
        .await?;
        transfer.count(outcome, platform.config.size());
        manifests.push(manifest_for(archive, platform, &sent_layers)?);
    }

    let digest = put_manifests(client, repo, tag, image, &manifests, printer).await?;
    Ok((digest, transfer, manifests))
}

/// Each platform's manifest by digest, then the tag: the one platform's manifest, or an index
/// over them. The tag goes last; it is what makes the push visible.
async fn put_manifests(
    client: &RegistryClient,
    repo: &str,
    tag: &str,
    image: &Image,
    manifests: &[RawBlob],
    printer: &Printer,
) -> Result<Digest> {
    // The archive's own index, when every manifest it names goes unchanged: then it is tagged
    // as it is, with the manifests it carries beside its platforms (attestations).
    let original_index = image
        .index
        .as_ref()
        .filter(|original| **original == index_for(image, manifests));
    let tagged = match (manifests, original_index) {
        ([single], None) => single.clone(),
        _ => {
            for manifest in manifests {
                put_by_digest(client, repo, manifest).await?;
            }
            if original_index.is_some() {
                attachments::push(client, printer, repo, &image.attachments).await?;
            } else if !image.attachments.is_empty() {
                printer.warn(&format!(
                    "leaving out the {} manifests attached to the archive's index (attestations, signatures): they describe manifests this push re-encoded",
                    image.attachments.len()
                ));
            }
            index_for(image, manifests)
        }
    };
    crate::interrupt::doing(
        format!("tagging {}/{repo}:{tag}", client.host()),
        "the tag may or may not have been set",
    );
    client
        .put_manifest(repo, tag, &tagged.media_type, Bytes::from(tagged.bytes))
        .await
}

async fn put_by_digest(client: &RegistryClient, repo: &str, manifest: &RawBlob) -> Result<Digest> {
    let bytes = Bytes::from(manifest.bytes.clone());
    client
        .put_manifest(repo, manifest.digest.as_str(), &manifest.media_type, bytes)
        .await
}

/// Layers to send, each once even when several platforms share it.
pub(super) fn unique_layers(image: &Image) -> Vec<Layer> {
    let mut seen = std::collections::HashSet::new();
    image
        .platforms
        .iter()
        .flat_map(|platform| &platform.layers)
        .filter(|layer| seen.insert(layer.stored_digest().clone()))
        .cloned()
        .collect()
}

/// Labels layers in manifest order, then starts the biggest first: the longest upload sets
/// the wall time, so it should not wait for a free slot.
fn largest_first(layers: Vec<Layer>) -> impl Iterator<Item = (String, Layer)> {
    let total = layers.len();
    let mut labelled: Vec<(String, Layer)> = layers
        .into_iter()
        .enumerate()
        .map(|(i, layer)| (format!("layer {}/{total}", i + 1), layer))
        .collect();
    labelled.sort_by_key(|(_, layer)| std::cmp::Reverse(layer.size()));
    labelled.into_iter()
}

/// Compressed layers of docker archives (jib, crane) are named by diff_id only: hash them first,
/// so that the registry can be asked whether it has them.
pub(super) async fn resolve_unknown_digests(
    archive: &Arc<Archive>,
    image: &mut Image,
) -> Result<()> {
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
