//! Which way an engine's image goes to a registry, the fastest that moves only what the registry
//! lacks: the Docker daemon's own push; else nerdctl's image read from containerd's content
//! store; else podman's store (containers-storage) read directly; else podman's own push where
//! its store is not here; else the engine's export. The way taken, and why another was not, is
//! said with -v.

use crate::delivery::push::options::LayerCompression;
use crate::delivery::push::pipeline::stream::Encoding;
use crate::delivery::push::pipeline::to_registry::RegistryPush;
use crate::delivery::push::sources::by_daemon;
use crate::delivery::push::sources::by_podman;
use crate::delivery::push::sources::from_containerd;
use crate::delivery::push::sources::from_engine::{self, Pushed, Selection};
use crate::delivery::push::sources::from_store;
use crate::image::engine::{Engine, Found};
use crate::plumbing::error::Result;
use crate::plumbing::output::Printer;

pub(crate) async fn push(
    plan: &RegistryPush<'_>,
    found: &Found,
    selection: &Selection<'_>,
    compression: LayerCompression,
    printer: &Printer,
) -> Result<Pushed> {
    if let Some(daemon) = found.docker_daemon().await {
        if let Some(pushed) =
            by_daemon::push(plan, found, &daemon, selection, compression, printer).await?
        {
            return Ok(pushed);
        }
        // A Docker daemon's store is its own: only its export remains.
        return from_engine::push(plan, found, selection, printer).await;
    }
    let pushed = match found.engine {
        Engine::Nerdctl => from_content_store(plan, found, selection, printer).await?,
        // Not a Docker daemon: podman, or docker's CLI talking to podman's Engine API.
        Engine::Podman | Engine::Docker => {
            from_podman_store(plan, found, selection, compression, printer).await?
        }
    };
    match pushed {
        Some(pushed) => Ok(pushed),
        None => from_engine::push(plan, found, selection, printer).await,
    }
}

/// nerdctl's image from containerd's content store; `None`: the export, said with -v.
async fn from_content_store(
    plan: &RegistryPush<'_>,
    found: &Found,
    selection: &Selection<'_>,
    printer: &Printer,
) -> Result<Option<Pushed>> {
    let Some(content) = found.content_image() else {
        return Ok(None);
    };
    let reason = if selection.chooses() {
        "--image and --platform choose inside an export"
    } else if plan.encoding != Encoding::AsStored && content.has_uncompressed_layers() {
        "its uncompressed layers are to be compressed"
    } else {
        return from_containerd::push(plan, found, content, printer)
            .await
            .map(Some);
    };
    printer.debug(&format!(
        "not reading containerd's content store: {reason}; exporting"
    ));
    Ok(None)
}

/// podman's store read directly, else podman's own push where its store is elsewhere; `None`:
/// the export, said with -v.
async fn from_podman_store(
    plan: &RegistryPush<'_>,
    found: &Found,
    selection: &Selection<'_>,
    compression: LayerCompression,
    printer: &Printer,
) -> Result<Option<Pushed>> {
    if selection.chooses() {
        printer.debug("not reading podman's store: --image and --platform choose inside an export");
        return Ok(None);
    }
    match found.store_image() {
        Ok(store) => {
            let err = match from_store::push(plan, found, &store, printer).await {
                Err(err) => err,
                pushed => return pushed.map(Some),
            };
            let Some(fault) = from_store::denied(&err) else {
                return Err(err);
            };
            printer.debug(&from_store::left_to_the_export(fault));
            Ok(None)
        }
        Err(reason) if found.engine == Engine::Podman && reason.elsewhere => {
            printer.debug(&format!("not reading podman's store: {reason}"));
            by_podman::push(plan, found, selection, compression, printer).await
        }
        Err(reason) => {
            printer.debug(&format!("not reading podman's store: {reason}; exporting"));
            Ok(None)
        }
    }
}
