//! Loading into a kind or k3d cluster node by node: each node that could be asked what it holds
//! gets only what it lacks; the others get the whole archive from the product's CLI.

use std::path::Path;
use std::sync::Arc;

use super::{NodeLoad, write_single_platform};
use crate::delivery::nodeload::{self, Delivered, Delivery, NodeReport};
use crate::image::archive::{Archive, PlatformImage, RawBlob};
use crate::image::digest::Digest;
use crate::nodes::{LoadPlan, NodeCluster, NodeSurvey, PlanSource};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;

/// Each node that could be asked gets only what it lacks; the others get the whole archive
/// from the product's CLI.
pub(super) struct ByNode<'a> {
    pub(super) plan: &'a NodeLoad<'a>,
    pub(super) cluster: &'a NodeCluster,
    pub(super) names: Vec<String>,
    pub(super) scratch: &'a Path,
}

impl ByNode<'_> {
    pub(super) async fn run(
        self,
        archive: Arc<Archive>,
        platform: PlatformImage,
        surveyed: Vec<NodeSurvey>,
        printer: &Printer,
    ) -> Result<Digest> {
        let (platform, manifest) = resolve(Arc::clone(&archive), platform).await?;
        let mut known = Vec::new();
        let mut unknown = Vec::new();
        for node in surveyed {
            match node {
                NodeSurvey::Known(holdings) => known.push(holdings),
                NodeSurvey::Unknown { node, why } => {
                    printer.debug(&format!(
                        "{node}: cannot be asked what it holds ({why}); it gets the whole image"
                    ));
                    unknown.push(node);
                }
            }
        }
        let target = self.plan.product.target_phrase();
        let delivery = Delivery {
            cluster: self.cluster,
            archive: Arc::clone(&archive),
            image: platform.clone(),
            names: self.names.clone(),
            manifest: manifest.digest.clone(),
            target: target.clone(),
        };
        let whole = self.whole_to(&unknown, archive, platform, printer);
        let (delivered, whole) = tokio::join!(nodeload::deliver(&delivery, known, printer), whole);
        let delivered = delivered?;
        whole?;
        let layers = delivery.image.layers.len();
        let mut told: Vec<String> = delivered
            .iter()
            .map(|report| tell(report, layers))
            .collect();
        told.extend(
            unknown
                .iter()
                .map(|node| format!("{node} got the whole image")),
        );
        printer.status(&format!(
            "loaded the image into {target}: {}",
            told.join(", ")
        ));
        Ok(manifest.digest)
    }

    /// The nodes that could not be asked: the whole archive, by the product's CLI.
    async fn whole_to(
        &self,
        nodes: &[String],
        archive: Arc<Archive>,
        platform: PlatformImage,
        printer: &Printer,
    ) -> Result<()> {
        if nodes.is_empty() {
            return Ok(());
        }
        let path = self.scratch.join("image.tar");
        let command = self.cluster.whole_archive_command(&path, nodes);
        let target = self.plan.product.target_phrase();
        let description = format!(
            "load the whole image into {}: `{command}`",
            nodes.join(", ")
        );
        let load_plan = LoadPlan::new(
            command,
            None,
            description,
            target,
            PlanSource::Product(self.plan.product.kind),
        );
        write_single_platform(archive, platform, self.names.clone(), path).await?;
        printer.debug(&format!("node-load plan: {}", load_plan.description()));
        nodeload::run(&load_plan, self.cluster.bound(), printer).await
    }
}

/// `dev-worker got 1 of 4 layers (1.2 MB)`, `dev-control-plane had it already`.
fn tell(report: &NodeReport, layers: usize) -> String {
    let node = &report.node;
    match report.delivered {
        Delivered::AlreadyThere => format!("{node} had it already"),
        Delivered::Lacking {
            layers: sent,
            bytes,
        } => {
            format!(
                "{node} got {sent} of {layers} layers ({})",
                megabytes(bytes)
            )
        }
        Delivered::WholeAfterCheck { bytes } => {
            format!("{node} got the whole image ({})", megabytes(bytes))
        }
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// Every layer digest known (compressed layers of docker archives are hashed), and the
/// manifest the nodes get.
async fn resolve(
    archive: Arc<Archive>,
    mut platform: PlatformImage,
) -> Result<(PlatformImage, RawBlob)> {
    tokio::task::spawn_blocking(move || {
        archive.resolve_digests(&mut platform)?;
        let manifest = archive.manifest(&platform)?;
        Ok::<_, crate::image::archive::ArchiveError>((platform, manifest))
    })
    .await
    .map_err(|err| {
        Error::new(ExitCode::Failure, "reading the image for the nodes").with_source(err)
    })?
    .map_err(Error::from)
}
