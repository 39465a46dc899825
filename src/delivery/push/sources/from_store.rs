//! podman, buildah: the image read straight from containers-storage. Each layer the registry
//! lacks is rebuilt from its tar-split record and files, hashed against its diff_id on the way,
//! and streamed into an upload; a layer the registry has is not read at all. Then the config (the
//! bytes whose digest is the image ID), an OCI manifest over the layers as sent, and the tag.

use std::io;
use std::sync::Arc;

use crate::delivery::push::pipeline::progress::BlobProgress;
use crate::delivery::push::pipeline::to_registry::{self, RegistryPush};
use crate::delivery::push::pipeline::upload::{Blob, BlobSource, Opened};
use crate::delivery::push::sources::from_engine::{Pushed, record_manifest, repush_unchanged};
use crate::image::archive::{Archive, AssembledLayer, Layer};
use crate::image::engine::{Found, ReadLock, StoreFault, StoreImage, store_fault};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;

pub(crate) async fn push(
    plan: &RegistryPush<'_>,
    found: &Found,
    store: &StoreImage,
    printer: &Printer,
) -> Result<Pushed> {
    let client = plan.client().await?;
    if let Some(pushed) = repush_unchanged(plan, &client, found, plan.encoding, printer).await? {
        return Ok(pushed);
    }
    let reading = format!("{} from {}", found.image, store.describe);
    printer.status(&format!("reading {reading}"));
    let (archive, _locks) = store_archive(found, store.clone(), &reading).await?;
    let image = archive.select(None, None).map_err(Error::from)?;
    let source = StoreSource { archive, reading };
    let committed =
        to_registry::push(plan, &client, &source.archive, &source, image, printer).await?;
    if let [manifest] = committed.manifests.as_slice() {
        record_manifest(plan, &client, found, plan.encoding, manifest, printer);
    }
    Ok(Pushed {
        digest: committed.digest,
        transfer: committed.transfer,
        platforms: found.facts.platform.iter().cloned().collect(),
    })
}

/// The store as an archive, its layers rebuilt as they are read; a failure of the store is
/// named as reading the image from it.
pub(crate) struct StoreSource {
    pub archive: Arc<Archive>,
    /// `myimg:dev from the overlay store at ...`
    reading: String,
}

impl BlobSource for StoreSource {
    type Item = Layer;

    fn open(&self, layer: &Layer, blob: &Blob, bar: &BlobProgress) -> Result<Opened> {
        self.archive.open(layer, blob, bar)
    }

    fn fault(&self, _layer: &Layer, err: io::Error) -> Error {
        let error = Error::new(ExitCode::Input, format!("reading {}", self.reading));
        match store_fault(&err) {
            Some(fault) => error.with_source(fault.clone()),
            None => error.with_source(err),
        }
    }
}

/// Why the store is left for the export when a file in it may not be read, for -v.
pub(crate) fn left_to_the_export(fault: &StoreFault) -> String {
    format!(
        "not reading podman's store: {fault}; podman reads such files in its user namespace: exporting"
    )
}

/// The image as an archive for the node loaders, read as `store_archive` says.
pub(crate) async fn archive_for_nodes(
    found: &Found,
    store: StoreImage,
    printer: &Printer,
) -> Result<(Arc<Archive>, Vec<ReadLock>)> {
    let name = format!("{} in {}", found.image, store.describe);
    printer.debug(&format!("reading {name} for the nodes: nothing exported"));
    store_archive(found, store, &name).await
}

/// The image as an archive whose layers are rebuilt from the store when read: a registry or a
/// node that lacks one layer gets that one read, nothing exported. Held with the store's layer
/// locks, which the caller keeps until the push or load is done.
async fn store_archive(
    found: &Found,
    store: StoreImage,
    reading: &str,
) -> Result<(Arc<Archive>, Vec<ReadLock>)> {
    let name = format!("{} in {}", found.image, store.describe);
    let names = found.facts.repo_tags.clone();
    let reading = reading.to_string();
    tokio::task::spawn_blocking(move || {
        let locks = store.read_lock().map_err(|err| {
            Error::new(ExitCode::Input, format!("reading {reading}")).with_source(err)
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
pub(crate) fn denied(err: &Error) -> Option<&StoreFault> {
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
