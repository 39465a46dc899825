//! A local engine's image to the registry at the engine's own speed: ask the engine first, and
//! when the registry already has every blob of the manifest last pushed for that image, send only
//! that manifest; otherwise read the engine's export as it is produced, sending the layers the
//! registry lacks while the export still runs.

use std::collections::HashMap;

use futures_util::{StreamExt, TryStreamExt};

use crate::delivery::push::pipeline::commit::{Manifest, tag_last};
use crate::delivery::push::pipeline::records::{SentManifest, SentManifests};
use crate::delivery::push::pipeline::stream::Encoding;
use crate::delivery::push::pipeline::to_registry::{
    RegistryPush, commit, layer_blob, unique_layers,
};
use crate::delivery::push::pipeline::upload::{Outcome, SentLayer, Uploader, retrying};
use crate::delivery::push::sources::export_upload::{ExportUploader, StreamedLayer};
use crate::delivery::push::summary::Transfer;
use crate::image::archive::{Archive, Image, RawBlob, StreamedArchive};
use crate::image::digest::Digest;
use crate::image::engine::Found;
use crate::image::registry::{FetchedManifest, RegistryClient};
use crate::plumbing::error::{Error, Result};
use crate::plumbing::output::Printer;

/// What the user picked inside the image (`--image`, `--platform`).
pub(crate) struct Selection<'a> {
    pub image: Option<&'a str>,
    pub platform: Option<&'a str>,
}

impl Selection<'_> {
    /// Whether anything is chosen inside the image: only an export offers that.
    pub(crate) fn chooses(&self) -> bool {
        self.image.is_some() || self.platform.is_some()
    }
}

/// What a push of an engine's image did.
pub(crate) struct Pushed {
    pub digest: Digest,
    pub transfer: Transfer,
    pub platforms: Vec<String>,
}

pub(crate) async fn push(
    plan: &RegistryPush<'_>,
    found: &Found,
    selection: &Selection<'_>,
    printer: &Printer,
) -> Result<Pushed> {
    let client = plan.client().await?;
    if let Some(pushed) = repush_unchanged(plan, &client, found, plan.encoding, printer).await? {
        return Ok(pushed);
    }
    let uploader = plan.uploader(&client, printer);
    let (streamed, layers) = export_until_sent(&uploader, found).await?;
    let image = streamed
        .archive
        .select(selection.image, selection.platform)
        .map_err(Error::from)?;
    let during_export = Exported {
        streamed: &streamed,
        layers: &layers,
    };
    let layers = during_export.sent_layers(&uploader, &image).await?;
    let committed = commit(
        &uploader,
        &plan.target.tag,
        &streamed.archive,
        &image,
        &layers,
    )
    .await?;
    if let [manifest] = committed.manifests.as_slice() {
        record_manifest(plan, &client, found, plan.encoding, manifest, printer);
    }
    Ok(Pushed {
        digest: committed.digest,
        transfer: committed.transfer,
        platforms: image.platform_names(),
    })
}

/// An image pushed before whose manifest's blobs are all still in place: that manifest again,
/// nothing read from the engine. `None`: something must be sent.
pub(crate) async fn repush_unchanged(
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
    let manifest = RawBlob::new(&sent.media_type, sent.manifest.clone().into_bytes());
    let tagged = tag_last(client, repo, &plan.target.tag, &[], &manifest).await?;
    printer.debug(&format!(
        "the registry has every blob of {}: sent only its manifest, nothing exported",
        found.facts.id
    ));
    Ok(Some(Pushed {
        digest: tagged,
        transfer,
        platforms: found.facts.platform.iter().cloned().collect(),
    }))
}

/// The manifest an engine pushed (by its digest), read back and recorded for the next push of
/// this image ID; `None` (said with -v) when it could not be read.
pub(crate) async fn record_engine_push(
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

/// Records `stored`, the manifest an image ID was tagged with, for its next push.
pub(crate) fn record_manifest(
    plan: &RegistryPush<'_>,
    client: &RegistryClient,
    found: &Found,
    encoding: Encoding,
    stored: &impl Manifest,
    printer: &Printer,
) {
    let (media_type, _, bytes) = stored.parts();
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return;
    };
    let mut manifests = SentManifests::load_in(plan.cache_dir);
    manifests.record(
        client.host(),
        &found.facts.id,
        encoding,
        SentManifest {
            media_type: media_type.to_string(),
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

/// Reads the export once, sending large layers as they pass. An engine that failed or stalled
/// on its own explains a stopped pass best, then a registry failure (an engine that died of
/// SIGPIPE only followed it), then what the pass itself met.
/// An export is read once, so a transient registry failure in it (a reset, a 503) is met by
/// exporting again, within the client's attempts: what landed is recorded as it landed and found
/// in place, so the next pass sends only the rest.
async fn export_until_sent(
    uploader: &Uploader,
    found: &Found,
) -> Result<(StreamedArchive, HashMap<u64, StreamedLayer>)> {
    let what = format!("the upload of {}'s export", found.engine);
    retrying(
        &uploader.client,
        &uploader.printer,
        &what,
        "exporting again",
        |watchdog| async move {
            let pass = stream_export(uploader, found).await;
            // A pass that ran is progress: the next one has the whole allowance again.
            watchdog.progressed();
            pass
        },
    )
    .await
}

async fn stream_export(
    uploader: &Uploader,
    found: &Found,
) -> Result<(StreamedArchive, HashMap<u64, StreamedLayer>)> {
    uploader.printer.status(&format!(
        "exporting {} from {}",
        found.image,
        found.describe()
    ));
    let mut sink = ExportUploader::new(uploader);
    let name = format!("{}'s export of {}", found.engine, found.image);
    let ((read, sink), engine) = found
        .read_export(move |export| {
            let read = Archive::read_stream(export, &name, &mut sink);
            (read, sink)
        })
        .await?;
    let layers = match (sink.finish().await, engine) {
        // The engine died because we stopped reading: the registry's failure is why.
        (Err(registry), Err(engine)) if engine.cut_off => return Err(registry),
        // We stopped reading first: the pass's reason, if it has one, is why.
        (Ok(_), Err(engine)) if engine.cut_off => {
            read.map_err(Error::from)?;
            return Err(engine.error);
        }
        // It failed or stalled on its own: what the registry and the pass met follows from that.
        (_, Err(engine)) => return Err(engine.error),
        (uploaded, Ok(())) => uploaded?,
    };
    let streamed = read.map_err(Error::from)?;
    Ok((streamed, layers))
}

/// The pass's skeleton archive and what became of each large member.
struct Exported<'a> {
    streamed: &'a StreamedArchive,
    layers: &'a HashMap<u64, StreamedLayer>,
}

impl Exported<'_> {
    /// Every layer of `image` as it now is in the registry: those that streamed past as the
    /// pass left them, the small ones (kept whole in the skeleton) sent now.
    async fn sent_layers(&self, uploader: &Uploader, image: &Image) -> Result<Vec<SentLayer>> {
        let mut sent = Vec::new();
        for layer in unique_layers(image) {
            let mut blob = layer_blob(uploader, layer.describe(), &layer);
            let passed = self
                .layers
                .get(&layer.location.offset)
                .filter(|_| self.streamed.streamed(&layer));
            match passed {
                Some(passed) => {
                    blob.encoding = passed.encoding;
                    let descriptor = passed
                        .re_encoded
                        .clone()
                        .unwrap_or_else(|| blob.stored.clone());
                    uploader.remember(&blob, &descriptor);
                    sent.push(SentLayer {
                        key: blob.stored.digest.clone(),
                        descriptor,
                        outcome: passed.outcome,
                    });
                }
                None => sent.push(uploader.send(&self.streamed.archive, &layer, &blob).await?),
            }
        }
        Ok(sent)
    }
}
