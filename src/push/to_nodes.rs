//! The node-load target: no registry advertised, so hand a single-platform, already-named
//! archive to the cluster's own CLI and name the image by a content-derived tag.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::summary::{Method, PushReport, Transfer};
use crate::archive::{Archive, Image, Platform, PlatformImage, RawBlob};
use crate::cluster::NodeFacts;
use crate::error::{Error, ExitCode, Result};
use crate::nodeload::{self, LoadPlan};
use crate::output::Printer;
use crate::product::Product;

const OS_LABEL: &str = "kubernetes.io/os";
const ARCH_LABEL: &str = "kubernetes.io/arch";

/// What the user asked for, resolved: the repository as the runtime names it and the tag.
pub struct NodeLoad<'a> {
    pub product: &'a Product,
    pub nodes: &'a [NodeFacts],
    /// `myimg`, `someone/app`, `gcr.io/proj/app`: how a pod spec writes it.
    pub repository: &'a str,
    pub tag: &'a str,
    pub load_command: Option<&'a str>,
    pub context: Option<&'a str>,
}

pub async fn load(
    plan: &NodeLoad<'_>,
    archive: Arc<Archive>,
    image: Image,
    scratch: &Path,
    printer: &Printer,
) -> Result<PushReport> {
    let platform = platform_for_nodes(image, plan.nodes, printer)?;
    let content_tag = nodeload::node_load_tag(plan.tag, &platform.config.digest);
    let names = vec![
        format!("{}:{}", plan.repository, plan.tag),
        format!("{}:{content_tag}", plan.repository),
    ];
    let (path, manifest) =
        single_platform_archive(Arc::clone(&archive), platform.clone(), names, scratch).await?;
    let load_plan = match plan.load_command {
        Some(template) => LoadPlan::from_template(template, &path)?,
        None => plan
            .product
            .load_plan(&path)
            .ok_or_else(|| nodeload::nothing_advertised(plan.context))?,
    };
    printer.debug(&format!("node-load plan: {}", load_plan.description()));
    nodeload::run(&load_plan, printer).await?;
    Ok(PushReport {
        reference: format!("{}:{content_tag}", plan.repository),
        push_ref: None,
        cluster_network_ref: None,
        digest: manifest.digest,
        repository: plan.repository.to_string(),
        tag: content_tag,
        method: Method::NodeLoad,
        platforms: vec![platform.platform.to_string()],
        transfer: Transfer::default(),
    })
}

/// Nodes import one platform (a multi-platform index fails `ctr import`, kind#3795): the one
/// the nodes run, else the only one there is.
fn platform_for_nodes(
    image: Image,
    nodes: &[NodeFacts],
    printer: &Printer,
) -> Result<PlatformImage> {
    if let [only] = image.platforms.as_slice() {
        return Ok(only.clone());
    }
    let node_platform = nodes.first().and_then(|node| {
        Some(Platform {
            os: node.labels.get(OS_LABEL)?.clone(),
            architecture: node.labels.get(ARCH_LABEL)?.clone(),
            variant: None,
        })
    });
    let wanted = node_platform.unwrap_or_else(host_platform);
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
    printer.status(&format!(
        "loading the {wanted} platform, the one the nodes run"
    ));
    Ok(chosen)
}

fn host_platform() -> Platform {
    let architecture = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    Platform {
        os: "linux".to_string(),
        architecture: architecture.to_string(),
        variant: None,
    }
}

/// The archive itself when it already is single-platform and so named; else a written copy.
/// Also the manifest the nodes get, for the report.
async fn single_platform_archive(
    archive: Arc<Archive>,
    mut platform: PlatformImage,
    names: Vec<String>,
    scratch: &Path,
) -> Result<(PathBuf, RawBlob)> {
    if let Some(path) = archive.loadable_as_is(&names) {
        let manifest = archive.manifest(&platform).map_err(Error::from)?;
        return Ok((path.to_path_buf(), manifest));
    }
    let out = scratch.join("image.tar");
    let written = out.clone();
    let manifest = tokio::task::spawn_blocking(move || {
        // Compressed layers of docker archives (jib, crane) have no digest until hashed, and
        // the manifest names every layer by digest.
        archive.resolve_digests(&mut platform)?;
        archive.write_docker_archive(&platform, &names, &written)?;
        archive.manifest(&platform)
    })
    .await
    .map_err(|err| {
        Error::new(ExitCode::Failure, "writing the archive for the nodes").with_source(err)
    })?
    .map_err(Error::from)?;
    Ok((out, manifest))
}
