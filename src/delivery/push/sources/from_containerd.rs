//! nerdctl: the image pushed straight from containerd's content store, as `nerdctl push` does.
//! Each blob the registry lacks is streamed by digest, as stored (the registry checks the
//! digest); then the manifests, byte for byte, so the pushed digest is containerd's own. A tag
//! that already names those bytes costs one HEAD.

use std::io;
use std::sync::Arc;

use futures_util::StreamExt;

use crate::delivery::push::pipeline::commit::tag_last;
use crate::delivery::push::pipeline::manifest::Descriptor;
use crate::delivery::push::pipeline::progress::BlobProgress;
use crate::delivery::push::pipeline::stream::Encoding;
use crate::delivery::push::pipeline::to_registry::RegistryPush;
use crate::delivery::push::pipeline::upload::{Blob, BlobSource, Opened, Outcome};
use crate::delivery::push::sources::from_engine::Pushed;
use crate::delivery::push::summary::Transfer;
use crate::image::archive::{Archive, AssembledLayer};
use crate::image::engine::{ContentBlob, ContentImage, Found};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;

pub(crate) async fn push(
    plan: &RegistryPush<'_>,
    found: &Found,
    content: &ContentImage,
    printer: &Printer,
) -> Result<Pushed> {
    let client = plan.client().await?;
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
    // As stored: the registry checks each digest, and the manifests stay containerd's bytes.
    let uploader = plan.uploader(&client, printer);
    let blobs = content
        .blobs
        .iter()
        .map(|blob| (content_blob(blob), blob))
        .collect();
    let sent = uploader.send_all(content, blobs, plan.jobs).await?;
    for blob in &sent {
        transfer.count(blob.outcome, blob.descriptor.size);
    }
    let digest = tag_last(&client, repo, tag, children, top).await?;
    Ok(Pushed {
        digest,
        transfer,
        platforms,
    })
}

fn content_blob(blob: &ContentBlob) -> Blob {
    Blob {
        label: format!("blob {}", blob.digest.short()),
        record_key: blob.digest.clone(),
        stored: Descriptor::new(&blob.media_type, blob.digest.clone(), blob.size),
        encoding: Encoding::AsStored,
    }
}

impl BlobSource for ContentImage {
    type Item = ContentBlob;

    fn open(&self, item: &ContentBlob, _blob: &Blob, bar: &BlobProgress) -> Result<Opened> {
        let counted = bar.clone();
        let body = self.read(item).inspect(move |chunk| {
            if let Ok(chunk) = chunk {
                counted.advance(chunk.len() as u64);
            }
        });
        // containerd's read failures end the body: the upload fails with them, and is retried.
        Ok(Opened {
            body: body.boxed(),
            source_failure: None,
        })
    }

    fn fault(&self, item: &ContentBlob, err: io::Error) -> Error {
        let what = format!("reading {} from {}", item.digest.short(), self.describe);
        Error::new(ExitCode::Input, what).with_source(err)
    }
}

/// The image as an archive whose layers are read from containerd when a node lacks them, for
/// the node loaders: nothing exported, nerdctl not run.
pub(crate) fn archive_for_nodes(
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
