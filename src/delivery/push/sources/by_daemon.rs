//! docker: the daemon pushes its own image. Its store is root's and its API has no per-layer
//! export, but it remembers which layers each registry holds and gzips only the new ones, so a
//! rebuild costs what its changed layer costs. We tag the image in the engine for the registry,
//! have the daemon push with our credentials, put the engine's tag back, and print the ref pinned
//! by the digest it pushed. Where the daemon cannot reach the registry (its own network, a VM,
//! its TLS rules) or cannot do what was asked, the export path goes instead, saying why with -v.

use std::collections::HashMap;

use crate::delivery::push::options::LayerCompression;
use crate::delivery::push::pipeline::progress::{BlobProgress, Progress};
use crate::delivery::push::pipeline::stream::Encoding;
use crate::delivery::push::pipeline::to_registry::RegistryPush;
use crate::delivery::push::pipeline::upload::Outcome;
use crate::delivery::push::sources::from_engine::{
    Pushed, Selection, record_engine_push, repush_unchanged,
};
use crate::delivery::push::summary::Transfer;
use crate::image::digest::Digest;
use crate::image::engine::{Daemon, DaemonPushed, EnginePushFailure, Found, LayerEnd, PushEvent};
use crate::image::registry::{FetchedManifest, RegistryClient};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::interrupt;
use crate::plumbing::output::Printer;

/// The daemon gzips every layer it sends: its pushes are recorded under that encoding.
const DAEMON_ENCODING: Encoding = Encoding::Gzip;

/// The daemon's own push of `found`; `None` (the reason said with -v) when the export must go.
pub(crate) async fn push(
    plan: &RegistryPush<'_>,
    found: &Found,
    daemon: &Daemon,
    selection: &Selection<'_>,
    compression: LayerCompression,
    printer: &Printer,
) -> Result<Option<Pushed>> {
    if let Some(reason) = why_not_the_daemon(found, selection, compression) {
        printer.debug(&format!("not the daemon's own push: {reason}"));
        return Ok(None);
    }
    by_daemon(plan, found, daemon, printer).await
}

/// What rules out the daemon's push before asking it.
fn why_not_the_daemon(
    found: &Found,
    selection: &Selection<'_>,
    compression: LayerCompression,
) -> Option<String> {
    if selection.chooses() {
        return Some("--image and --platform choose inside an export".to_string());
    }
    let asked = match compression {
        LayerCompression::Auto | LayerCompression::Gzip => None,
        LayerCompression::None => Some("none"),
        LayerCompression::Zstd => Some("zstd"),
    };
    if let Some(asked) = asked {
        return Some(format!(
            "the daemon sends gzip layers, and --compression {asked} was asked for"
        ));
    }
    if found.facts.repo_tags.is_empty() {
        // The engine deletes an image whose last name is removed: our temporary one must not be.
        return Some(format!(
            "{} has no name in the engine, so a temporary one could not be removed safely",
            found.image
        ));
    }
    None
}

/// `None` (with the reason said under -v) when the daemon cannot reach the registry.
async fn by_daemon(
    plan: &RegistryPush<'_>,
    found: &Found,
    daemon: &Daemon,
    printer: &Printer,
) -> Result<Option<Pushed>> {
    let client = RegistryClient::new(plan.host, &plan.transport)?;
    client.ping().await?;
    if let Some(name) = client.checked_tls_name() {
        printer.debug(&format!(
            "not the daemon's own push: the registry is reached through the API server, its certificate checked for {name}, which a push to {} would not check",
            client.host()
        ));
        return Ok(None);
    }
    let repo = plan.target.repository.as_str();
    let tag = plan.target.tag.as_str();
    let id = found.facts.id.as_str();
    if let Some(pushed) = repush_unchanged(plan, &client, found, DAEMON_ENCODING, printer).await? {
        return Ok(Some(pushed));
    }
    let engine_repo = format!("{}/{repo}", client.host());
    let engine_ref = format!("{engine_repo}:{tag}");
    // The registry's side (our credentials, whether it has the config) and the engine's tag
    // are asked at once; a failure of the first drops the tag, which puts the name back.
    let registry_side = async {
        let auth = client.engine_auth().await?;
        let config_there = match id.parse::<Digest>() {
            Ok(config) => client.blob_exists(repo, &config).await?.is_some(),
            Err(_) => false,
        };
        Ok::<_, Error>((auth, config_there))
    };
    let (registry_side, tagged) = tokio::join!(registry_side, daemon.tag(id, &engine_repo, tag));
    let (auth, config_there) = registry_side?;
    let mut engine_tag = match tagged {
        Ok(engine_tag) => engine_tag,
        Err(said) => {
            printer.debug(&format!(
                "the daemon could not tag {id} as {engine_ref} ({said}): exporting instead"
            ));
            return Ok(None);
        }
    };
    printer.status(&format!(
        "the docker daemon pushes {} to {engine_ref}",
        found.image
    ));
    interrupt::doing(
        format!(
            "the docker daemon was pushing {} to {engine_ref}",
            found.image
        ),
        "its push was cancelled and the engine's temporary tag removed; the registry's tag may or may not have been set",
    );
    let outcome = followed(daemon, &engine_repo, tag, &auth, printer).await;
    // The name is put back while the manifest the daemon pushed is read back for the record.
    let restoring = tokio::task::spawn_blocking(move || engine_tag.restore());
    let done = match outcome {
        Ok(done) => done,
        Err(failure) => {
            say_if_it_stays(restoring.await, printer);
            return refused(failure, &client, found, &engine_ref, printer);
        }
    };
    let recorded = record_engine_push(plan, &client, found, DAEMON_ENCODING, &done.digest, printer);
    let (stored, restored) = tokio::join!(recorded, restoring);
    say_if_it_stays(restored, printer);
    let transfer = transfer_of(found, &done, stored.as_ref(), config_there);
    Ok(Some(pushed(found, done.digest, transfer)))
}

/// The daemon's push failed: `None` (the export takes over) when it could not reach the
/// registry, else the error in the daemon's words.
fn refused(
    failure: EnginePushFailure,
    client: &RegistryClient,
    found: &Found,
    engine_ref: &str,
    printer: &Printer,
) -> Result<Option<Pushed>> {
    match failure {
        EnginePushFailure::Unreachable(said) => {
            printer.debug(&format!(
                "the docker daemon cannot reach {} ({}): exporting instead",
                client.host(),
                crate::plumbing::output::escape_control(&said)
            ));
            Ok(None)
        }
        EnginePushFailure::Failed(said) => Err(Error::new(
            ExitCode::Registry,
            format!(
                "the docker daemon's push of {} to {engine_ref}",
                found.image
            ),
        )
        .with_source(Error::new(
            ExitCode::Registry,
            crate::plumbing::output::escape_control(&said).into_owned(),
        ))),
    }
}

/// The daemon's push, its layers shown as progress bars (and said with -v as each ends).
async fn followed(
    daemon: &Daemon,
    engine_repo: &str,
    tag: &str,
    auth: &str,
    printer: &Printer,
) -> std::result::Result<DaemonPushed, EnginePushFailure> {
    let progress = Progress::new(printer);
    let mut bars: HashMap<String, (BlobProgress, u64)> = HashMap::new();
    let mut on_event = |event: PushEvent<'_>| match event {
        PushEvent::Sending { id, current, total } => {
            let (bar, sent) = bars
                .entry(id.to_string())
                .or_insert_with(|| (progress.blob(format!("layer {id}"), total), 0));
            bar.advance(current.saturating_sub(*sent));
            *sent = (*sent).max(current);
        }
        PushEvent::Ended { id, end } => {
            let word = match end {
                LayerEnd::Pushed => "pushed",
                LayerEnd::AlreadyThere => "exists",
                LayerEnd::Mounted => "mounted",
            };
            if let Some((bar, _)) = bars.get(id) {
                bar.finish(word);
            }
            printer.debug(&format!("the daemon: layer {id} {word}"));
        }
    };
    daemon.push(engine_repo, tag, auth, &mut on_event).await
}

/// Warns when the engine's temporary name could not be put back (its request is a blocking one,
/// so that a signal's drop can make it too: it runs on a thread of its own).
fn say_if_it_stays(
    restored: std::result::Result<std::result::Result<(), String>, tokio::task::JoinError>,
    printer: &Printer,
) {
    let said = match restored {
        Ok(Ok(())) => return,
        Ok(Err(said)) => said,
        Err(failed) => failed.to_string(),
    };
    printer.warn(&format!("the engine's temporary tag stays: {said}"));
}

fn pushed(found: &Found, digest: Digest, transfer: Transfer) -> Pushed {
    Pushed {
        digest,
        transfer,
        platforms: found.facts.platform.iter().cloned().collect(),
    }
}

/// What moved, from the daemon's word per layer (by the first 12 hex of its diff_id) and the
/// sizes in the manifest it pushed (layers in the image's order).
fn transfer_of(
    found: &Found,
    done: &DaemonPushed,
    stored: Option<&FetchedManifest>,
    config_there: bool,
) -> Transfer {
    #[derive(serde::Deserialize)]
    struct Shape {
        config: Sized_,
        #[serde(default)]
        layers: Vec<Sized_>,
    }
    #[derive(serde::Deserialize)]
    struct Sized_ {
        size: u64,
    }
    let shape = stored.and_then(|stored| serde_json::from_slice::<Shape>(&stored.bytes).ok());
    let mut transfer = Transfer::default();
    let config_size = shape.as_ref().map_or(0, |shape| shape.config.size);
    let config_outcome = if config_there {
        Outcome::AlreadyThere
    } else {
        Outcome::Pushed
    };
    transfer.count(config_outcome, config_size);
    let mut seen = std::collections::HashSet::new();
    for (index, diff_id) in found.facts.diff_ids.iter().enumerate() {
        if !seen.insert(diff_id) {
            continue;
        }
        let short: String = diff_id.hex().chars().take(12).collect();
        let size = shape
            .as_ref()
            .and_then(|shape| shape.layers.get(index))
            .map_or(0, |layer| layer.size);
        let outcome = match done.layers.get(&short) {
            Some(LayerEnd::Pushed) | None => Outcome::Pushed,
            Some(LayerEnd::AlreadyThere) => Outcome::AlreadyThere,
            Some(LayerEnd::Mounted) => Outcome::Mounted,
        };
        transfer.count(outcome, size);
    }
    transfer
}
