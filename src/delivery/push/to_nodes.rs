//! The node-load target: no registry advertised, so load a single-platform, already-named
//! image into the nodes, named by a content-derived tag: into each kind or k3d node only what
//! it lacks, else the whole archive through the cluster's own CLI.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::summary::{Method, PushReport, Transfer};
use crate::cluster::client::NodeFacts;
use crate::cluster::product::Product;
use crate::delivery::nodeload;
use crate::image::archive::{Archive, Image, Platform, PlatformImage, RawBlob};
use crate::image::digest::Digest;
use crate::nodes::{self, LoadPlan, NodeCluster};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;

mod by_node;

const OS_LABEL: &str = "kubernetes.io/os";
const ARCH_LABEL: &str = "kubernetes.io/arch";

/// What the user asked for, resolved: the repository as the runtime names it and the tag.
pub(super) struct NodeLoad<'a> {
    pub product: &'a Product,
    pub nodes: &'a [NodeFacts],
    /// `myimg`, `someone/app`, `gcr.io/proj/app`: how a pod spec writes it.
    pub repository: &'a str,
    pub tag: &'a str,
    pub load_command: Option<&'a str>,
    pub context: Option<&'a str>,
    /// How long each node command may take.
    pub node_timeout: std::time::Duration,
}

pub(super) async fn load(
    plan: &NodeLoad<'_>,
    archive: Arc<Archive>,
    image: Image,
    scratch: &Path,
    printer: &Printer,
) -> Result<PushReport> {
    let platform = platform_for_nodes(image, plan.nodes, printer)?;
    let content_tag = nodes::node_load_tag(plan.tag, &platform.config.digest);
    let names = vec![
        format!("{}:{}", plan.repository, plan.tag),
        format!("{}:{content_tag}", plan.repository),
    ];
    let platform_name = platform.platform.to_string();
    let by_node = match plan.load_command {
        Some(_) => None,
        None => NodeCluster::of(plan.product, plan.nodes).map(|c| c.bounded(plan.node_timeout)),
    };
    let surveyed = match &by_node {
        Some(cluster) => match nodes::survey(cluster).await {
            Ok(surveyed) => Some(surveyed),
            Err(why) => {
                printer.debug(&format!(
                    "cannot ask the nodes what they hold ({why}); loading the whole image"
                ));
                None
            }
        },
        None => None,
    };
    let manifest = match (&by_node, surveyed) {
        (Some(cluster), Some(surveyed)) => {
            let load = by_node::ByNode {
                plan,
                cluster,
                names,
                scratch,
            };
            load.run(archive, platform, surveyed, printer).await?
        }
        _ => load_whole(plan, archive, platform, names, scratch, printer).await?,
    };
    Ok(PushReport {
        reference: format!("{}:{content_tag}", plan.repository),
        push_ref: None,
        cluster_network_ref: None,
        digest: manifest,
        repository: plan.repository.to_string(),
        tag: content_tag,
        method: Method::NodeLoad,
        network: None,
        platforms: vec![platform_name],
        transfer: Transfer::default(),
    })
}

/// The whole archive to the product's CLI (or the user's --load-command), as one command.
async fn load_whole(
    plan: &NodeLoad<'_>,
    archive: Arc<Archive>,
    platform: PlatformImage,
    names: Vec<String>,
    scratch: &Path,
    printer: &Printer,
) -> Result<Digest> {
    // The plan comes before the copy: a bad --load-command or a cluster we cannot load into
    // fails at once, not after writing the whole image.
    let as_is = archive.loadable_as_is(&names).map(Path::to_path_buf);
    let path = as_is.clone().unwrap_or_else(|| scratch.join("image.tar"));
    let load_plan = match plan.load_command {
        Some(template) => LoadPlan::from_template(template, &path)?,
        None => LoadPlan::for_product(plan.product, &path)
            .ok_or_else(|| nodes::nothing_advertised(plan.context))?,
    };
    let manifest = match as_is {
        Some(_) => archive.manifest(&platform).map_err(Error::from)?,
        None => write_single_platform(Arc::clone(&archive), platform, names, path).await?,
    };
    printer.debug(&format!("node-load plan: {}", load_plan.description()));
    nodeload::run(&load_plan, plan.node_timeout, printer).await?;
    Ok(manifest.digest)
}

/// Nodes import one platform (a multi-platform index fails `ctr import`, kind#3795): the one
/// the nodes run (this machine's when their labels don't say), else the only one there is,
/// with a warning when the nodes run another.
fn platform_for_nodes(
    image: Image,
    nodes: &[NodeFacts],
    printer: &Printer,
) -> Result<PlatformImage> {
    let node_platform = nodes.first().and_then(|node| {
        Some(Platform {
            os: node.labels.get(OS_LABEL)?.clone(),
            architecture: node.labels.get(ARCH_LABEL)?.clone(),
            variant: None,
        })
    });
    if let [only] = image.platforms.as_slice() {
        if let Some(nodes) = node_platform.filter(|nodes| !only.platform.satisfies(nodes)) {
            printer.warn(&format!(
                "the image is for {image} but the nodes run {nodes}: its containers will not start there (exec format error) unless the nodes emulate {image}",
                image = only.platform
            ));
        }
        return Ok(only.clone());
    }
    let (wanted, whose) = match node_platform {
        Some(platform) => (platform, "the one the nodes run"),
        None => (
            Platform::host(),
            "this machine's, as the nodes do not say theirs",
        ),
    };
    let available = image.platform_names().join(", ");
    let chosen = image
        .platforms
        .into_iter()
        .find(|p| p.platform.satisfies(&wanted))
        .ok_or_else(|| {
            Error::new(
                ExitCode::Input,
                format!("the image has no {wanted} platform for the nodes (it has {available})"),
            )
            .with_hint(
                "pick one with --platform OS/ARCH, or build the image for the nodes' platform",
            )
        })?;
    printer.status(&format!("loading the {wanted} platform, {whose}"));
    Ok(chosen)
}

/// Writes `platform` as a single-platform archive at `out` carrying `names`; returns the
/// manifest the nodes get.
async fn write_single_platform(
    archive: Arc<Archive>,
    mut platform: PlatformImage,
    names: Vec<String>,
    out: PathBuf,
) -> Result<RawBlob> {
    tokio::task::spawn_blocking(move || {
        // Compressed layers of docker archives (jib, crane) have no digest until hashed, and
        // the manifest names every layer by digest.
        archive.resolve_digests(&mut platform)?;
        archive.write_docker_archive(&platform, &names, &out)?;
        archive.manifest(&platform)
    })
    .await
    .map_err(|err| {
        Error::new(ExitCode::Failure, "writing the archive for the nodes").with_source(err)
    })?
    .map_err(Error::from)
}
