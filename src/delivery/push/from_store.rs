//! podman, buildah: the image read straight from containers-storage. Each layer the registry
//! lacks is rebuilt from its tar-split record and files, hashed against its diff_id on the way,
//! and streamed into an upload; a layer the registry has is not read at all. Then the config (the
//! bytes whose digest is the image ID), an OCI manifest over the layers as sent, and the tag.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};

use super::cache::{SentBlob, SentBlobs};
use super::export_upload::ExportUploader;
use super::from_engine::{Pushed, repush_unchanged};
use super::layer_upload::Outcome;
use super::layer_upload::send_small_blob;
use super::manifest::Descriptor;
use super::manifest_record::{SentManifest, SentManifests};
use super::progress::Progress;
use super::stream::Encoding;
use super::summary::Transfer;
use super::to_registry::RegistryPush;
use crate::error::{Error, ExitCode, Result};
use crate::image::archive::{
    self, Archive, AssembledLayer, Compression, LargeMember, MemberSink, RawBlob,
};
use crate::image::engine::{Found, ReadLock, StoreFault, StoreImage, StoreLayer, store_fault};
use crate::image::oci::MediaType;
use crate::image::registry::RegistryClient;
use crate::limits::seconds_text;
use crate::output::Printer;

/// What every layer's upload shares.
struct Context<'a> {
    client: &'a RegistryClient,
    repo: &'a str,
    encoding: Encoding,
    sent_before: Arc<Mutex<SentBlobs>>,
    progress: Arc<Progress>,
    printer: &'a Printer,
    found: &'a Found,
    store: &'a StoreImage,
}

pub(super) async fn push(
    plan: &RegistryPush<'_>,
    found: &Found,
    store: &StoreImage,
    printer: &Printer,
) -> Result<Pushed> {
    let client = RegistryClient::new(plan.host, &plan.transport)?;
    client.ping().await?;
    let repo = plan.target.repository.as_str();
    if let Some(pushed) = repush_unchanged(plan, &client, found, plan.encoding, printer).await? {
        return Ok(pushed);
    }
    printer.status(&format!("reading {} from {}", found.image, store.describe));
    let held = store.clone();
    let _locks = tokio::task::spawn_blocking(move || held.read_lock())
        .await
        .map_err(|err| Error::new(ExitCode::Failure, "locking the store").with_source(err))?
        .map_err(|err| {
            Error::new(
                ExitCode::Input,
                format!("reading {} from {}", found.image, store.describe),
            )
            .with_source(err)
        })?;
    let context = Context {
        client: &client,
        repo,
        encoding: plan.encoding,
        sent_before: Arc::new(Mutex::new(SentBlobs::load_in(plan.cache_dir))),
        progress: Arc::new(Progress::new(printer)),
        printer,
        found,
        store,
    };
    let context = &context;
    let mut unique = Vec::new();
    for layer in &store.layers {
        if !unique
            .iter()
            .any(|l: &&StoreLayer| l.diff_id == layer.diff_id)
        {
            unique.push(layer);
        }
    }
    let mut order: Vec<(usize, &StoreLayer)> = unique.iter().copied().enumerate().collect();
    // The longest upload sets the wall time: start it first.
    order.sort_by_key(|(_, layer)| std::cmp::Reverse(layer.size));
    let mut sent: Vec<(usize, Descriptor, Outcome)> =
        futures_util::stream::iter(order.into_iter().map(|(index, layer)| async move {
            let (descriptor, outcome) = context.send(index, layer).await?;
            Ok::<_, Error>((index, descriptor, outcome))
        }))
        .buffer_unordered(plan.jobs.max(1))
        .try_collect()
        .await?;
    sent.sort_by_key(|(index, _, _)| *index);
    remember(context, &unique, &sent);

    let mut transfer = Transfer::default();
    for (_, descriptor, outcome) in &sent {
        transfer.count(*outcome, descriptor.size);
    }
    let config = RawBlob::new(MediaType::OciConfig.as_str(), store.config.clone());
    let outcome = send_small_blob(&client, printer, repo, &config.digest, &config.bytes).await?;
    transfer.count(outcome, config.bytes.len() as u64);
    let by_diff_id = |layer: &StoreLayer| {
        let at = unique.iter().position(|u| u.diff_id == layer.diff_id)?;
        sent.get(at).map(|(_, descriptor, _)| descriptor)
    };
    let descriptors = store
        .layers
        .iter()
        .map(|layer| {
            by_diff_id(layer).ok_or_else(|| {
                Error::new(
                    ExitCode::Failure,
                    format!("layer {} was not sent before its manifest", layer.id),
                )
            })
        })
        .collect::<Result<Vec<&Descriptor>>>()?;
    let layers: Vec<(&str, &crate::image::digest::Digest, u64)> = descriptors
        .iter()
        .map(|d| (d.media_type.as_str(), &d.digest, d.size))
        .collect();
    let manifest = archive::oci_manifest(&config, &layers);
    crate::interrupt::doing(
        format!("tagging {}/{repo}:{}", client.host(), plan.target.tag),
        "the tag may or may not have been set",
    );
    let digest = client
        .put_manifest(
            repo,
            &plan.target.tag,
            &manifest.media_type,
            Bytes::from(manifest.bytes.clone()),
        )
        .await?;
    if let Ok(text) = String::from_utf8(manifest.bytes) {
        let mut manifests = SentManifests::load_in(plan.cache_dir);
        manifests.record(
            client.host(),
            &found.facts.id,
            plan.encoding,
            SentManifest {
                media_type: manifest.media_type,
                manifest: text,
                repository: repo.to_string(),
            },
        );
        if let Err(err) = manifests.save() {
            printer.debug(&format!(
                "could not save the record of sent manifests: {err}"
            ));
        }
    }
    Ok(Pushed {
        digest,
        transfer,
        platforms: found.facts.platform.iter().cloned().collect(),
    })
}

/// Why the store is left for the export when a file in it may not be read, for -v.
pub(super) fn left_to_the_export(fault: &StoreFault) -> String {
    format!(
        "not reading podman's store: {fault}; podman reads such files in its user namespace: exporting"
    )
}

/// The image as an archive whose layers are rebuilt from the store when read, for the node
/// loaders: a node that lacks one layer gets that one read, nothing exported. Held with the
/// store's layer locks, which the caller keeps until the load is done.
pub(super) async fn archive_for_nodes(
    found: &Found,
    store: StoreImage,
    printer: &Printer,
) -> Result<(Arc<Archive>, Vec<ReadLock>)> {
    let name = format!("{} in {}", found.image, store.describe);
    printer.debug(&format!("reading {name} for the nodes: nothing exported"));
    let names = found.facts.repo_tags.clone();
    tokio::task::spawn_blocking(move || {
        let locks = store.read_lock().map_err(|err| {
            Error::new(ExitCode::Input, format!("reading {name}")).with_source(err)
        })?;
        let layers = store
            .layers
            .iter()
            .map(|layer| {
                let layer = layer.clone();
                AssembledLayer::uncompressed(
                    layer.diff_id.clone(),
                    layer.size,
                    Arc::new(move || Ok(Box::new(layer.open()?) as Box<dyn std::io::Read + Send>)),
                )
            })
            .collect();
        let archive = Archive::assembled(&name, names, store.config, layers)?;
        Ok((Arc::new(archive), locks))
    })
    .await
    .map_err(|err| Error::new(ExitCode::Failure, "reading the store").with_source(err))?
}

/// The store's file that `err` says we may not read, when that is why the push (or node load)
/// failed: podman reads it in its user namespace, so its export still can.
pub(super) fn denied(err: &Error) -> Option<&StoreFault> {
    let mut next = std::error::Error::source(err);
    while let Some(cause) = next {
        let fault = cause
            .downcast_ref::<StoreFault>()
            .or_else(|| cause.downcast_ref::<std::io::Error>().and_then(store_fault));
        if let Some(fault) = fault {
            return fault.denied.then_some(fault);
        }
        next = cause.source();
    }
    None
}

/// Each layer as sent, recorded for the next push (a re-encoded digest, a repository to mount from).
fn remember(context: &Context<'_>, unique: &[&StoreLayer], sent: &[(usize, Descriptor, Outcome)]) {
    let mut record = context
        .sent_before
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for (index, descriptor, _) in sent {
        if let Some(layer) = unique.get(*index) {
            record.record(
                context.client.host(),
                &layer.diff_id,
                context.encoding,
                SentBlob {
                    digest: descriptor.digest.clone(),
                    size: descriptor.size,
                    media_type: descriptor.media_type.clone(),
                    repository: context.repo.to_string(),
                },
            );
        }
    }
    if let Err(err) = record.save() {
        context
            .printer
            .debug(&format!("could not save the record of sent blobs: {err}"));
    }
}

impl Context<'_> {
    /// The blob the registry would hold for this layer, when known without reading it.
    fn known(&self, layer: &StoreLayer) -> Option<Descriptor> {
        match self.encoding {
            Encoding::AsStored => Some(Descriptor::new(
                MediaType::OciLayer.as_str(),
                layer.diff_id.clone(),
                layer.size,
            )),
            Encoding::Gzip | Encoding::Zstd => self
                .sent_before
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .get(self.client.host(), &layer.diff_id, self.encoding)
                .map(|r| Descriptor::new(&r.media_type, r.digest.clone(), r.size)),
        }
    }

    /// Already there (not read at all), else read from the store into an upload; a transient
    /// registry failure reads it again from the start, within the client's attempts.
    async fn send(&self, index: usize, layer: &StoreLayer) -> Result<(Descriptor, Outcome)> {
        if let Some(known) = self.known(layer)
            && self.client.blob_exists(self.repo, &known.digest).await? == Some(known.size)
        {
            let bar = self
                .progress
                .blob(format!("layer {}", layer.diff_id.short()), known.size);
            bar.finish("exists");
            return Ok((known, Outcome::AlreadyThere));
        }
        let mut tried = 1;
        loop {
            let err = match self.upload(index, layer).await {
                Ok(done) => return Ok(done),
                Err(err) => err,
            };
            let Some(delay) = self
                .client
                .retry_delay(&err, tried, &self.client.upload_watchdog())
            else {
                return Err(err);
            };
            self.printer.status(&format!(
                "the registry failed mid-layer ({}); reading it again in {} (attempt {} of {})",
                err.message(),
                seconds_text(delay),
                tried + 1,
                self.client.attempts()
            ));
            tokio::time::sleep(delay).await;
            tried += 1;
        }
    }

    async fn upload(&self, index: usize, layer: &StoreLayer) -> Result<(Descriptor, Outcome)> {
        let mut uploader = ExportUploader::new(
            self.client.clone(),
            self.repo,
            self.encoding,
            Arc::clone(&self.sent_before),
            Arc::clone(&self.progress),
            self.printer,
        );
        let owned = layer.clone();
        let offset = index as u64;
        let (uploader, pumped, fault) = tokio::task::spawn_blocking(move || {
            let member = LargeMember {
                offset,
                path: &owned.id,
                len: owned.size,
                named_digest: Some(owned.diff_id.clone()),
                compression: Compression::None,
            };
            match owned.open() {
                Ok(mut reader) => {
                    let pumped = uploader.large_member(&member, &mut reader);
                    let fault = reader.failure().cloned();
                    (uploader, pumped, fault)
                }
                Err(err) => {
                    let fault = store_fault(&err).cloned();
                    (uploader, Err(err), fault)
                }
            }
        })
        .await
        .map_err(|err| Error::new(ExitCode::Failure, "reading a layer").with_source(err))?;
        if let Some(fault) = fault {
            // The store's failure is the reason, whatever became of the upload it fed.
            drop(uploader);
            return Err(Error::new(
                ExitCode::Input,
                format!("reading {} from {}", self.found.image, self.store.describe),
            )
            .with_source(fault));
        }
        let mut done = uploader.finish().await?;
        pumped.map_err(|err| {
            Error::new(ExitCode::Registry, format!("sending layer {}", layer.id)).with_source(err)
        })?;
        let streamed = done.remove(&offset).ok_or_else(|| {
            Error::new(
                ExitCode::Failure,
                format!("layer {} was read but not sent", layer.id),
            )
        })?;
        let descriptor = streamed.re_encoded.unwrap_or_else(|| {
            Descriptor::new(
                MediaType::OciLayer.as_str(),
                layer.diff_id.clone(),
                layer.size,
            )
        });
        Ok((descriptor, streamed.outcome))
    }
}
