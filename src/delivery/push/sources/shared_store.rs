//! Clusters whose nodes run on the local docker engine's own image store (Docker Desktop,
//! OrbStack, colima, Rancher Desktop with dockerd): there is nothing to move. The image is named
//! in the engine by its content tag, and that name is the ref a pod spec uses.

use crate::cluster::product::Product;
use crate::delivery::push::summary::{Method, PushReport, Transfer};
use crate::image::digest::Digest;
use crate::image::engine::Found;
use crate::image::reference::{DEFAULT_TAG, ImageName};
use crate::nodes::node_load_tag;
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;

/// The content tag set in the engine; `None` when the nodes do not share this engine's store
/// (or the engine is not a Docker daemon we can speak to), so a load is needed.
pub(crate) async fn tag_in_engine(
    product: &Product,
    found: &Found,
    name: &ImageName,
    printer: &Printer,
) -> Result<Option<PushReport>> {
    if !product.kind.shares_local_docker_store() {
        return Ok(None);
    }
    let Some(daemon) = found.docker_daemon().await else {
        printer.debug(&format!(
            "{} runs on a docker engine's store, but {} is not a Docker daemon we can speak to: loading",
            product.kind,
            found.describe()
        ));
        return Ok(None);
    };
    let id: Digest = found.facts.id.parse().map_err(|_| {
        Error::new(
            ExitCode::Input,
            format!("the engine's image ID {} is not a digest", found.facts.id),
        )
    })?;
    let repository = name.familiar_repository();
    let tag = name.tag.as_deref().unwrap_or(DEFAULT_TAG);
    let content_tag = node_load_tag(tag, &id);
    for tag in [tag, content_tag.as_str()] {
        let named = daemon
            .tag(id.as_str(), &repository, tag)
            .await
            .map_err(|said| {
                Error::new(
                    ExitCode::Input,
                    format!(
                        "naming {} {repository}:{tag} in {}",
                        found.image,
                        found.describe()
                    ),
                )
                .with_source(Error::new(ExitCode::Input, said))
            })?;
        named.keep();
    }
    printer.debug(&format!(
        "{} runs on the store of {}: named {repository}:{content_tag} there, nothing exported or loaded",
        product.kind,
        found.describe()
    ));
    Ok(Some(PushReport {
        reference: format!("{repository}:{content_tag}"),
        push_ref: None,
        cluster_network_ref: None,
        digest: id,
        repository,
        tag: content_tag,
        method: Method::EngineStore,
        network: None,
        platforms: found.facts.platform.iter().cloned().collect(),
        transfer: Transfer::default(),
    }))
}
