//! A local engine's image to the registry at the engine's own speed: ask the engine first, and
//! when the registry already has every blob of the manifest last pushed for that image, send only
//! that manifest; otherwise read the engine's export as it is produced, sending the layers the
//! registry lacks while the export still runs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};

use super::cache::SentBlobs;
use super::export_upload::{ExportUploader, StreamedLayer};
use super::layer_upload::{Outcome, SentLayer, Uploader};
use super::manifest::Descriptor;
use super::manifest_record::{SentManifest, SentManifests};
use super::progress::Progress;
use super::stream::Encoding;
use super::summary::Transfer;
use super::to_registry::{RegistryPush, commit, unique_layers};
use crate::error::{Error, Result};
use crate::image::archive::{Archive, Image, StreamedArchive};
use crate::image::digest::Digest;
use crate::image::engine::Found;
use crate::image::registry::{FetchedManifest, RegistryClient};
use crate::limits::seconds_text;
use crate::output::Printer;

/// What the user picked inside the image (`--image`, `--platform`).
pub(super) struct Selection<'a> {
    pub image: Option<&'a str>,
    pub platform: Option<&'a str>,
}

/// What a push of an engine's image did.
pub(super) struct Pushed {
    pub digest: Digest,
    pub transfer: Transfer,
    pub platforms: Vec<String>,
}

pub(super) async fn push(
    plan: &RegistryPush<'_>,
    found: &Found,
    selection: &Selection<'_>,
    printer: &Printer,
) -> Result<Pushed> {
    let client = RegistryClient::new(plan.host, &plan.transport)?;
    client.ping().await?;
    let repo = plan.target.repository.as_str();
    if let Some(pushed) = repush_unchanged(plan, &client, found, plan.encoding, printer).await? {
        return Ok(pushed);
    }
    let mut manifests = SentManifests::load_in(plan.cache_dir);

    let (streamed, sent) = export_until_sent(plan, &client, found, printer).await?;
    let image = streamed
        .archive
        .select(selection.image, selection.platform)
        .map_err(Error::from)?;
    let during_export = Exported {
        streamed: &streamed,
        layers: &sent.layers,
    };
    let layers = during_export
        .sent_layers(
            &client,
            repo,
            plan.encoding,
            &image,
            &sent.sent_before,
            printer,
        )
        .await?;
    let (digest, transfer, platform_manifests) = commit(
        &client,
        repo,
        &plan.target.tag,
        &streamed.archive,
        &image,
        &layers,
        printer,
    )
    .await?;
    if let [manifest] = platform_manifests.as_slice()
        && let Ok(text) = String::from_utf8(manifest.bytes.clone())
    {
        manifests.record(
            client.host(),
            &found.facts.id,
            plan.encoding,
            SentManifest {
                media_type: manifest.media_type.clone(),
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
        platforms: image.platform_names(),
    })
}

/// An image pushed before whose manifest's blobs are all still in place: that manifest again,
/// nothing read from the engine. `None`: something must be sent.
pub(super) async fn repush_unchanged(
    plan: &RegistryPush<'_>,
    client: &RegistryClient,
    found: &Found,
    encoding: Encoding,
    printer: &Printer,
) -> Result<Option<Pushed>> {
    let repo = plan.target.repository.as_str();
    let manifests = SentManifests::load_in(plan.cache_dir);
    let Some(sent) = manifests.get(client.host(), &found.facts.id, encoding) else {
        return Ok(None);
    };
    let Some(transfer) = blobs_in_place(client, repo, sent, plan.jobs, printer).await? else {
        return Ok(None);
    };
    let bytes = Bytes::from(sent.manifest.clone().into_bytes());
    let digest = client
        .put_manifest(repo, &plan.target.tag, &sent.media_type, bytes)
        .await?;
    printer.debug(&format!(
        "the registry has every blob of {}: sent only its manifest, nothing exported",
        found.facts.id
    ));
    Ok(Some(Pushed {
        digest,
        transfer,
        platforms: found.facts.platform.iter().cloned().collect(),
    }))
}

/// The manifest an engine pushed (by its digest), read back and recorded for the next push of
/// this image ID; `None` (said with -v) when it could not be read.
pub(super) async fn record_engine_push(
    plan: &RegistryPush<'_>,
    client: &RegistryClient,
    found: &Found,
    encoding: Encoding,
    digest: &Digest,
    printer: &Printer,
) -> Option<FetchedManifest> {
    let repo = plan.target.repository.as_str();
    let stored = match client.manifest_in_push(repo, digest.as_str()).await {
        Ok(Some(stored)) => stored,
        Ok(None) => {
            printer.debug(&format!(
                "not recorded for the next push: {}/{repo} has no manifest {digest}",
                client.host()
            ));
            return None;
        }
        Err(err) => {
            printer.debug(&format!("not recorded for the next push: {err}"));
            return None;
        }
    };
    record_manifest(plan, client, found, encoding, &stored, printer);
    Some(stored)
}

/// Records `stored`, the manifest an engine pushed, for the next push of this image ID.
pub(super) fn record_manifest(
    plan: &RegistryPush<'_>,
    client: &RegistryClient,
    found: &Found,
    encoding: Encoding,
    stored: &FetchedManifest,
    printer: &Printer,
) {
    let Ok(text) = std::str::from_utf8(&stored.bytes) else {
        return;
    };
    let mut manifests = SentManifests::load_in(plan.cache_dir);
    manifests.record(
        client.host(),
        &found.facts.id,
        encoding,
        SentManifest {
            media_type: stored.media_type.clone(),
            manifest: text.to_string(),
            repository: plan.target.repository.to_string(),
        },
    );
    if let Err(err) = manifests.save() {
        printer.debug(&format!(
            "could not save the record of sent manifests: {err}"
        ));
    }
}

/// True (with what was skipped) when every blob of `sent` is in `repo` at its size, mounting
/// from the repository it went to when that differs. `None` means an export is needed.
async fn blobs_in_place(
    client: &RegistryClient,
    repo: &str,
    sent: &SentManifest,
    jobs: usize,
    printer: &Printer,
) -> Result<Option<Transfer>> {
    let Some(blobs) = sent.blobs() else {
        return Ok(None);
    };
    let checks = futures_util::stream::iter(blobs.into_iter().map(|blob| async move {
        if client.blob_exists(repo, &blob.digest).await? == Some(blob.size) {
            return Ok::<_, Error>(Some(blob.size));
        }
        let mounted = sent.repository != repo
            && client
                .mount_blob(repo, &blob.digest, &sent.repository)
                .await?;
        Ok(mounted.then_some(blob.size))
    }))
    .buffer_unordered(jobs.max(1))
    .try_collect::<Vec<Option<u64>>>()
    .await?;
    let mut transfer = Transfer::default();
    for check in checks {
        match check {
            Some(size) => transfer.count(Outcome::AlreadyThere, size),
            None => {
                printer.debug("the registry lacks a blob of the last push: exporting");
                return Ok(None);
            }
        }
    }
    Ok(Some(transfer))
}

/// What the export's pass sent, and the record it consulted.
struct SentDuringExport {
    layers: HashMap<u64, StreamedLayer>,
    sent_before: Mutex<SentBlobs>,
}

/// Reads the export once, sending large layers as they pass. An engine that failed or stalled
/// on its own explains a stopped pass best, then a registry failure (an engine that died of
/// SIGPIPE only followed it), then what the pass itself met.
/// An export is read once, so a transient registry failure in it (a reset, a 503) is met by
/// exporting again, within the client's attempts: what landed is recorded as it landed and found
/// in place, so the next pass sends only the rest.
async fn export_until_sent(
    plan: &RegistryPush<'_>,
    client: &RegistryClient,
    found: &Found,
    printer: &Printer,
) -> Result<(StreamedArchive, SentDuringExport)> {
    let mut tried = 1;
    loop {
        let err = match stream_export(plan, client, found, printer).await {
            Ok(sent) => return Ok(sent),
            Err(err) => err,
        };
        let Some(delay) = client.retry_delay(&err, tried, &client.upload_watchdog()) else {
            return Err(err);
        };
        printer.status(&format!(
            "the registry failed mid-export ({}); exporting again in {} (attempt {} of {})",
            err.message(),
            seconds_text(delay),
            tried + 1,
            client.attempts()
        ));
        tokio::time::sleep(delay).await;
        tried += 1;
    }
}

async fn stream_export(
    plan: &RegistryPush<'_>,
    client: &RegistryClient,
    found: &Found,
    printer: &Printer,
) -> Result<(StreamedArchive, SentDuringExport)> {
    printer.status(&format!(
        "exporting {} from {}",
        found.image,
        found.describe()
    ));
    let sent_before = Arc::new(Mutex::new(SentBlobs::load_in(plan.cache_dir)));
    let mut uploader = ExportUploader::new(
        client.clone(),
        &plan.target.repository,
        plan.encoding,
        Arc::clone(&sent_before),
        Arc::new(Progress::new(printer)),
        printer,
    );
    let name = format!("{}'s export of {}", found.engine, found.image);
    let ((read, uploader), engine) = found
        .read_export(move |export| {
            let read = Archive::read_stream(export, &name, &mut uploader);
            (read, uploader)
        })
        .await?;
    let layers = match (uploader.finish().await, engine) {
        // The engine died because we stopped reading: the registry's failure is why.
        (Err(registry), Err(engine)) if engine.cut_off => return Err(registry),
        // It failed or stalled on its own: what the registry and the pass met follows from that.
        (_, Err(engine)) => return Err(engine.error),
        (uploaded, Ok(())) => uploaded?,
    };
    let streamed = read.map_err(Error::from)?;
    let sent_before = Arc::try_unwrap(sent_before)
        .unwrap_or_else(|_| Mutex::new(SentBlobs::load_in(plan.cache_dir)));
    Ok((
        streamed,
        SentDuringExport {
            layers,
            sent_before,
        },
    ))
}

/// The pass's skeleton archive and what became of each large member.
struct Exported<'a> {
    streamed: &'a StreamedArchive,
    layers: &'a HashMap<u64, StreamedLayer>,
}

impl Exported<'_> {
    /// Every layer of `image` as it now is in the registry: those that streamed past as the
    /// pass left them, the small ones (kept whole in the skeleton) sent now.
    async fn sent_layers(
        &self,
        client: &RegistryClient,
        repo: &str,
        encoding: Encoding,
        image: &Image,
        sent_before: &Mutex<SentBlobs>,
        printer: &Printer,
    ) -> Result<Vec<SentLayer>> {
        let progress = Progress::new(printer);
        let uploader = Uploader {
            client,
            repo,
            archive: &self.streamed.archive,
            encoding,
            sent_before,
            printer,
        };
        let mut sent = Vec::new();
        for layer in unique_layers(image) {
            let key = layer.stored_digest().clone();
            let passed = self
                .layers
                .get(&layer.location.offset)
                .filter(|_| self.streamed.streamed(&layer));
            match passed {
                Some(passed) => {
                    let descriptor = passed.re_encoded.clone().unwrap_or_else(|| {
                        Descriptor::new(layer.media_type_or_default(), key.clone(), layer.size())
                    });
                    uploader.remember(&layer.diff_id, passed.encoding, &descriptor);
                    sent.push(SentLayer {
                        key,
                        descriptor,
                        outcome: passed.outcome,
                    });
                }
                None => {
                    let bar = progress.blob(layer.describe(), layer.size());
                    sent.push(uploader.send(layer, bar).await?);
                }
            }
        }
        Ok(sent)
    }
}
