//! Which way an engine's image goes to a registry, the fastest that moves only what the registry
//! lacks: the Docker daemon's own push; else nerdctl's image read from containerd's content
//! store; else podman's store (containers-storage) read directly; else podman's own push where
//! its store is not here; else the engine's export. The way taken, and why another was not, is
//! said with -v.

use super::by_daemon;
use super::by_podman;
use super::from_containerd;
use super::from_engine::{self, Pushed, Selection};
use super::from_store;
use super::stream::Encoding;
use super::to_registry::RegistryPush;
use crate::cli::Compression;
use crate::error::Result;
use crate::image::engine::{Engine, Found};
use crate::output::Printer;

pub(super) async fn push(
    plan: &RegistryPush<'_>,
    found: &Found,
    selection: &Selection<'_>,
    compression: Compression,
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
    if let Some(content) = found.content_image() {
        let reason = if selection.image.is_some() || selection.platform.is_some() {
            "--image and --platform choose inside an export"
        } else if plan.encoding != Encoding::AsStored && content.has_uncompressed_layers() {
            "its uncompressed layers are to be compressed"
        } else {
            return from_containerd::push(plan, found, content, printer).await;
        };
        printer.debug(&format!(
            "not reading containerd's content store: {reason}; exporting"
        ));
    } else if found.engine != Engine::Nerdctl {
        if selection.image.is_some() || selection.platform.is_some() {
            printer.debug(
                "not reading podman's store: --image and --platform choose inside an export",
            );
        } else {
            match found.store_image() {
                Ok(store) => {
                    let err = match from_store::push(plan, found, &store, printer).await {
                        Err(err) => err,
                        pushed => return pushed,
                    };
                    let Some(fault) = from_store::denied(&err) else {
                        return Err(err);
                    };
                    printer.debug(&from_store::left_to_the_export(fault));
                }
                Err(reason) if found.engine == Engine::Podman && reason.elsewhere => {
                    printer.debug(&format!("not reading podman's store: {reason}"));
                    if let Some(pushed) =
                        by_podman::push(plan, found, selection, compression, printer).await?
                    {
                        return Ok(pushed);
                    }
                }
                Err(reason) => {
                    printer.debug(&format!("not reading podman's store: {reason}; exporting"));
                }
            }
        }
    }
    from_engine::push(plan, found, selection, printer).await
}
