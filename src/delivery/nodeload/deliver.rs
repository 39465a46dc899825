//! Loading one platform of an image into each node that could be asked what it holds, with only
//! the layers it lacks: an OCI layout streamed into the node's `ctr images import`, checked
//! with `ctr images check` afterwards, and the whole image sent again where that check fails.

use std::collections::BTreeSet;
use std::io;
use std::sync::Arc;

use futures_util::future::join_all;

use super::Progress;
use super::check::image_ready;
use crate::image::archive::{Archive, ArchiveError, PlatformImage, containerd_name};
use crate::image::digest::Digest;
use crate::nodes::{self, Failure, NodeCluster, NodeHoldings};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::plumbing::process::{Output, printable};

/// The image to deliver, with every layer digest resolved.
pub struct Delivery<'a> {
    pub cluster: &'a NodeCluster,
    pub archive: Arc<Archive>,
    pub image: PlatformImage,
    /// The names the nodes get (`myimg:dev`, `myimg:dev-<id>`).
    pub names: Vec<String>,
    /// The manifest the names point at.
    pub manifest: Digest,
    /// Where the image goes, for sentences: `kind cluster "dev"`.
    pub target: String,
}

/// What a node got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    /// It already held the whole image under both names: nothing sent.
    AlreadyThere,
    /// The layers it lacked, with the config and manifest.
    Lacking { layers: usize, bytes: u64 },
    /// The whole image, sending only what it lacked having left it incomplete.
    WholeAfterCheck { bytes: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeReport {
    pub node: String,
    pub delivered: Delivered,
}

/// Delivers the image to every node in `nodes` at once; fails when a node still lacks the
/// image after its whole archive.
pub async fn deliver(
    delivery: &Delivery<'_>,
    nodes: Vec<NodeHoldings>,
    printer: &Printer,
) -> Result<Vec<NodeReport>> {
    let progress = Progress::start(
        printer,
        format!("loading the image into the nodes of {}", delivery.target),
    );
    let delivered = join_all(
        nodes
            .into_iter()
            .map(|holdings| deliver_to_node(delivery, holdings, &progress, printer)),
    )
    .await;
    delivered.into_iter().collect()
}

async fn deliver_to_node(
    delivery: &Delivery<'_>,
    holdings: NodeHoldings,
    progress: &Progress,
    printer: &Printer,
) -> Result<NodeReport> {
    let node = holdings.node.clone();
    let report = |delivered| NodeReport {
        node: node.clone(),
        delivered,
    };
    let layers: Vec<&Digest> = delivery
        .image
        .layers
        .iter()
        .flat_map(|l| &l.digest)
        .collect();
    let small = [&delivery.image.config.digest, &delivery.manifest];
    let lacking_layers = holdings.lacks(layers.iter().copied());
    let lacks_anything = !lacking_layers.is_empty() || !holdings.lacks(small).is_empty();
    if !lacks_anything && check(delivery, &holdings).await.is_ok() {
        return Ok(report(Delivered::AlreadyThere));
    }
    let held: BTreeSet<Digest> = layers
        .iter()
        .filter(|digest| holdings.blobs.contains(**digest))
        .map(|digest| (*digest).clone())
        .collect();
    let first = import_and_check(delivery, &holdings, held.clone(), progress, printer).await?;
    let why = match first {
        Ok(sent) => {
            return Ok(report(Delivered::Lacking {
                layers: lacking_layers.len(),
                bytes: sent.bytes_in,
            }));
        }
        Err(why) if held.is_empty() => return Err(node_failed(delivery, &node, why)),
        Err(why) => why,
    };
    progress.note(
        printer,
        &format!(
            "{node}: still incomplete after loading only the {} layer(s) it lacked ({why}); loading the whole image into it",
            lacking_layers.len()
        ),
    );
    match import_and_check(delivery, &holdings, BTreeSet::new(), progress, printer).await? {
        Ok(sent) => Ok(report(Delivered::WholeAfterCheck {
            bytes: sent.bytes_in,
        })),
        Err(why) => Err(node_failed(delivery, &node, why)),
    }
}

/// Streams the image without the layers in `leave_out` into the node's import, then checks
/// the node holds it complete and unpacked under every name.
async fn import_and_check(
    delivery: &Delivery<'_>,
    holdings: &NodeHoldings,
    leave_out: BTreeSet<Digest>,
    progress: &Progress,
    printer: &Printer,
) -> Result<Result<Output, Failure>> {
    let mut args = vec!["images", "import", "--all-platforms", "--digests"];
    let snapshotter = holdings
        .snapshotter
        .as_ref()
        .map(|s| format!("--snapshotter={s}"));
    args.extend(snapshotter.as_deref());
    args.push("-");
    let import = delivery.cluster.ctr(&holdings.node, true, &args);
    let archive = Arc::clone(&delivery.archive);
    let image = delivery.image.clone();
    let names = delivery.names.clone();
    let streamed = nodes::stream_into(&import, delivery.cluster.bound(), move |out| {
        archive.write_layout_without(&image, &names, &leave_out, out)
    })
    .await
    .map_err(|err| archive_failure(&delivery.archive, err))?;
    let imported = match streamed {
        Ok(imported) => imported,
        Err(why) => return Ok(Err(why)),
    };
    for line in imported
        .stdout_text()
        .lines()
        .filter(|line| !line.trim().is_empty())
    {
        progress.show_line(printer, &holdings.node, &printable(line));
    }
    Ok(check(delivery, holdings).await.map(|()| imported))
}

/// `ctr images check` on the node: every name complete, unpacked, pointing at the manifest.
async fn check(delivery: &Delivery<'_>, holdings: &NodeHoldings) -> Result<(), Failure> {
    let names: Vec<String> = delivery
        .names
        .iter()
        .map(|name| containerd_name(name).unwrap_or_else(|| name.clone()))
        .collect();
    let mut args = vec!["images".to_string(), "check".to_string()];
    args.extend(
        holdings
            .snapshotter
            .iter()
            .map(|s| format!("--snapshotter={s}")),
    );
    args.extend(names.iter().map(|name| format!("name=={name}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let command = delivery.cluster.ctr(&holdings.node, false, &args);
    let checked = nodes::capture(&command, delivery.cluster.bound()).await?;
    if image_ready(&checked.stdout_text(), &names, &delivery.manifest) {
        Ok(())
    } else {
        Err(format!(
            "`{command}` does not report {} complete and unpacked",
            names.join(" and ")
        ))
    }
}

fn node_failed(delivery: &Delivery<'_>, node: &str, why: Failure) -> Error {
    Error::new(
        ExitCode::Load,
        format!("loading the image into node {node} of {}", delivery.target),
    )
    .with_source(why)
    .with_hint(format!(
        "or give the cluster a registry to push to instead: {}",
        delivery.cluster.registry_guide()
    ))
}

/// Reading the input archive failed while streaming it: the input's fault, not the node's.
fn archive_failure(archive: &Archive, err: io::Error) -> Error {
    let reading = || {
        Error::new(
            ExitCode::Input,
            format!("reading {} to load it into the nodes", archive.name()),
        )
    };
    if crate::image::archive::archive_error_in(&err).is_none() {
        return reading().with_source(err);
    }
    match err
        .into_inner()
        .map(|inner| inner.downcast::<ArchiveError>())
    {
        Some(Ok(inner)) => Error::from(*inner),
        _ => reading(),
    }
}
