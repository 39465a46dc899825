//! nerdctl: the image pushed straight from containerd's content store, as `nerdctl push` does.
//! Each blob the registry lacks is streamed by digest, as stored (the registry checks the
//! digest); then the manifests, byte for byte, so the pushed digest is containerd's own. A tag
//! that already names those bytes costs one HEAD.

use std::sync::Arc;

use futures_util::{StreamExt, TryStreamExt};

use super::from_engine::Pushed;
use super::layer_upload::Outcome;
use super::progress::Progress;
use super::summary::Transfer;
use super::to_registry::RegistryPush;
use crate::error::{Error, ExitCode, Result};
use crate::image::archive::{Archive, AssembledLayer};
use crate::image::engine::{ContentBlob, ContentImage, Found};
use crate::image::registry::RegistryClient;
use crate::interrupt;
use crate::limits::seconds_text;
use crate::output::Printer;

pub(super) async fn push(
    plan: &RegistryPush<'_>,
    found: &Found,
    content: &ContentImage,
    printer: &Printer,
) -> Result<Pushed> {
    let client = RegistryClient::new(plan.host, &plan.transport)?;
    client.ping().await?;
    let repo = plan.target.repository.as_str();
    let tag = plan.target.tag.as_str();
    let (top, children) = content
        .manifests
        .split_last()
        .ok_or_else(|| Error::new(ExitCode::Failure, "containerd's image has no manifest"))?;
    let platforms = found.facts.platform.iter().cloned().collect();
    let mut transfer = Transfer::default();
    if client.manifest_digest(repo, tag).await?.as_deref() == Some(top.digest.as_str()) {
        printer.debug(&format!(
            "{}/{repo}:{tag} already is {}: nothing sent",
            client.host(),
            top.digest
        ));
        for blob in &content.blobs {
            transfer.count(Outcome::AlreadyThere, blob.size);
        }
        return Ok(Pushed {
            digest: top.digest.clone(),
            transfer,
            platforms,
        });
    }
    printer.status(&format!(
        "reading {} from {}",
        found.image, content.describe
    ));
    let progress = Arc::new(Progress::new(printer));
    let mut order: Vec<&ContentBlob> = content.blobs.iter().collect();
    // The longest upload sets the wall time: start it first.
    order.sort_by_key(|blob| std::cmp::Reverse(blob.size));
    let sent: Vec<(Outcome, u64)> = futures_util::stream::iter(order.into_iter().map(|blob| {
        let (client, progress) = (&client, &progress);
        async move {
            let outcome = send(client, repo, content, blob, progress, printer).await?;
            Ok::<_, Error>((outcome, blob.size))
        }
    }))
    .buffer_unordered(plan.jobs.max(1))
    .try_collect()
    .await?;
    for (outcome, size) in sent {
        transfer.count(outcome, size);
    }
    for child in children {
        client
            .put_manifest(
                repo,
                child.digest.as_str(),
                &child.media_type,
                child.bytes.clone(),
            )
            .await?;
    }
    interrupt::doing(
        format!("tagging {}/{repo}:{tag}", client.host()),
        "the tag may or may not have been set",
    );
    let digest = client
        .put_manifest(repo, tag, &top.media_type, top.bytes.clone())
        .await?;
    Ok(Pushed {
        digest,
        transfer,
        platforms,
    })
}

/// Already there (not read at all), else streamed from containerd; a transient registry failure
/// reads it again from the start, within the client's attempts.
async fn send(
    client: &RegistryClient,
    repo: &str,
    content: &ContentImage,
    blob: &ContentBlob,
    progress: &Progress,
    printer: &Printer,
) -> Result<Outcome> {
    let bar = progress.blob(format!("blob {}", blob.digest.short()), blob.size);
    if client.blob_exists(repo, &blob.digest).await? == Some(blob.size) {
        bar.finish("exists");
        return Ok(Outcome::AlreadyThere);
    }
    let watchdog = client.upload_watchdog();
    let mut tried = 1;
    loop {
        let counted = bar.clone();
        let body = content.read(blob).inspect(move |chunk| {
            if let Ok(chunk) = chunk {
                counted.advance(chunk.len() as u64);
            }
        });
        let err = match client
            .push_blob_within(repo, &blob.digest, blob.size, body, &watchdog)
            .await
        {
            Ok(()) => {
                bar.finish("pushed");
                return Ok(Outcome::Pushed);
            }
            Err(err) => err,
        };
        let Some(delay) = client.retry_delay(&err, tried, &watchdog) else {
            bar.abandon();
            return Err(err);
        };
        printer.status(&format!(
            "the registry failed mid-blob ({}); reading it again in {} (attempt {} of {})",
            err.message(),
            seconds_text(delay),
            tried + 1,
            client.attempts()
        ));
        bar.rewind();
        tokio::time::sleep(delay).await;
        tried += 1;
    }
}

/// The image as an archive whose layers are read from containerd when a node lacks them, for
/// the node loaders: nothing exported, nerdctl not run.
pub(super) fn archive_for_nodes(
    found: &Found,
    content: &ContentImage,
    printer: &Printer,
) -> Result<Arc<Archive>> {
    let name = format!("{} in {}", found.image, content.describe);
    printer.debug(&format!("reading {name} for the nodes: nothing exported"));
    let layers = content
        .platform
        .layers
        .iter()
        .zip(&found.facts.diff_ids)
        .map(|(blob, diff_id)| AssembledLayer {
            diff_id: diff_id.clone(),
            size: blob.size,
            digest: blob.digest.clone(),
            media_type: blob.media_type.clone(),
            compression: blob.compression(),
            open: content.opener(blob),
        })
        .collect();
    let archive = Archive::assembled(
        &name,
        found.facts.repo_tags.clone(),
        content.platform.config.to_vec(),
        layers,
    )?;
    Ok(Arc::new(archive))
}
