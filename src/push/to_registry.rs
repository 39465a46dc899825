//! The registry target: every blob present and verified (HEAD-skip, streamed uploads in
//! parallel), then the platform manifests, then the tag last: the one commit point.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};

use super::manifest::{Descriptor, index_for, manifest_for};
use super::progress::{BlobProgress, Progress};
use super::stream::{self, Encoding};
use super::summary::Transfer;
use crate::archive::{self, Archive, Compression, Image, Layer, PlatformImage};
use crate::digest::Digest;
use crate::error::{Error, ExitCode, Result};
use crate::hosting::LocalRegistry;
use crate::output::Printer;
use crate::reference::Target;
use crate::registry::{RegistryClient, TransportOptions};

/// How the push reaches the registry, resolved from flags and the registry's nature.
pub struct RegistryPush<'a> {
    pub registry: &'a LocalRegistry,
    pub target: &'a Target,
    pub encoding: Encoding,
    pub jobs: usize,
    pub transport: TransportOptions,
}

/// Pushes `image` and returns the digest the tag now points to, with what moved.
pub async fn push(
    plan: &RegistryPush<'_>,
    archive: Arc<Archive>,
    mut image: Image,
    printer: &Printer,
) -> Result<(Digest, Transfer)> {
    let client = RegistryClient::new(&plan.registry.host, &plan.transport)?;
    client.ping().await?;
    let repo = plan.target.repository.as_str();
    resolve_unknown_digests(&archive, &mut image).await?;

    let progress = Progress::new(printer);
    let mut transfer = Transfer::default();
    let layers = unique_layers(&image);
    let total = layers.len();
    let sent: Vec<(Digest, Descriptor, Outcome)> =
        futures_util::stream::iter(layers.into_iter().enumerate().map(|(i, layer)| {
            let bar = progress.blob(format!("layer {}/{total}", i + 1), layer.size());
            send_layer(&client, repo, &archive, layer, plan.encoding, bar)
        }))
        .buffer_unordered(plan.jobs)
        .try_collect()
        .await?;
    let mut sent_layers = HashMap::new();
    for (key, descriptor, outcome) in sent {
        transfer.count(outcome, descriptor.size);
        sent_layers.insert(key, descriptor);
    }

    let mut manifests = Vec::new();
    for platform in &image.platforms {
        let outcome = send_small_blob(
            &client,
            repo,
            &platform.config.digest,
            &platform.config.bytes,
        )
        .await?;
        transfer.count(outcome, platform.config.size());
        manifests.push(manifest_for(&archive, platform, &sent_layers)?);
    }

    let (media_type, bytes) = match manifests.as_slice() {
        [single] => (single.media_type.clone(), single.bytes.clone()),
        _ => {
            for manifest in &manifests {
                let reference = manifest.digest.to_string();
                client
                    .put_manifest(
                        repo,
                        &reference,
                        &manifest.media_type,
                        Bytes::from(manifest.bytes.clone()),
                    )
                    .await?;
            }
            let index = index_for(&image, &manifests);
            (index.media_type, index.bytes)
        }
    };
    let digest = client
        .put_manifest(repo, &plan.target.tag, &media_type, Bytes::from(bytes))
        .await?;
    Ok((digest, transfer))
}

/// What happened to one blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pushed,
    AlreadyThere,
}

/// Layers to send, each once even when several platforms share it.
fn unique_layers(image: &Image) -> Vec<Layer> {
    let mut seen = std::collections::HashSet::new();
    image
        .platforms
        .iter()
        .flat_map(|platform| &platform.layers)
        .filter(|layer| seen.insert(layer_key(layer).clone()))
        .cloned()
        .collect()
}

/// Identifies a layer across platforms: its stored digest, known for every layer by now.
fn layer_key(layer: &Layer) -> &Digest {
    layer.digest.as_ref().unwrap_or(&layer.diff_id)
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

/// Sends one layer unless the registry has it; returns its key, its descriptor in the pushed
/// manifest, and what happened.
async fn send_layer(
    client: &RegistryClient,
    repo: &str,
    archive: &Archive,
    layer: Layer,
    encoding: Encoding,
    bar: BlobProgress,
) -> Result<(Digest, Descriptor, Outcome)> {
    let key = layer_key(&layer).clone();
    let reencode = layer.compression == Compression::None && encoding != Encoding::AsStored;
    let result = if reencode {
        let reader = archive
            .layer_reader(&layer)
            .map_err(|err| reading(&layer, err))?;
        client
            .push_blob_unknown_digest(repo, stream::body(reader, encoding, bar.clone()))
            .await
            .map(|(digest, size)| {
                let media_type = archive::oci_layer_type(match encoding {
                    Encoding::Zstd => Compression::Zstd,
                    _ => Compression::Gzip,
                });
                (Descriptor::new(media_type, digest, size), Outcome::Pushed)
            })
    } else {
        let descriptor = Descriptor::new(layer.media_type_or_default(), key.clone(), layer.size());
        match client.blob_exists(repo, &key).await? {
            Some(_) => Ok((descriptor, Outcome::AlreadyThere)),
            None => {
                let reader = archive
                    .layer_reader(&layer)
                    .map_err(|err| reading(&layer, err))?;
                let body = stream::body(reader, Encoding::AsStored, bar.clone());
                client
                    .push_blob(repo, &key, layer.size(), body)
                    .await
                    .map(|()| (descriptor, Outcome::Pushed))
            }
        }
    };
    match result {
        Ok((descriptor, outcome)) => {
            bar.finish(match outcome {
                Outcome::Pushed => "pushed",
                Outcome::AlreadyThere => "exists",
            });
            Ok((key, descriptor, outcome))
        }
        Err(err) => {
            bar.abandon();
            Err(corrupt_input_or(err, &layer))
        }
    }
}

/// Configs are small and already in memory.
async fn send_small_blob(
    client: &RegistryClient,
    repo: &str,
    digest: &Digest,
    bytes: &[u8],
) -> Result<Outcome> {
    if client.blob_exists(repo, digest).await?.is_some() {
        return Ok(Outcome::AlreadyThere);
    }
    let body = futures_util::stream::once(std::future::ready(Ok(Bytes::copy_from_slice(bytes))));
    client
        .push_blob(repo, digest, bytes.len() as u64, body)
        .await?;
    Ok(Outcome::Pushed)
}

/// A layer that fails verification mid-upload is the archive's fault, not the registry's:
/// report it as bad input, keeping the upload error as the cause.
fn corrupt_input_or(err: Error, layer: &Layer) -> Error {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && archive::is_verification_failure(io)
        {
            return Error::new(ExitCode::Input, format!("{} is corrupt; nothing was tagged", layer.describe()))
                .with_source(err)
                .with_hint("the archive was damaged after it was written: write it again (docker save, skopeo copy)");
        }
        source = cause.source();
    }
    err
}

fn reading(layer: &Layer, err: std::io::Error) -> Error {
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
