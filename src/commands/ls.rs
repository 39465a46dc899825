//! `kubectl registry ls`: every repository and tag in the cluster's registry with its digest,
//! size, created time and the workloads that use it; without a registry, the content tags this
//! tool loaded into each node. A table, or `-o json`.

pub(crate) mod attached;
pub(crate) mod created;
pub(crate) mod inventory;
pub(crate) mod node_tags;
pub(crate) mod rows;
pub(crate) mod table;
pub(crate) mod usage;

use serde::Serialize;

use crate::cli::{LsArgs, OutputFormat, RegistryAccessArgs};
use crate::cluster::ClusterOptions;
use crate::cluster::client::{Cluster, ImageUse, ImageUses, usage_forbidden};
use crate::cluster::discovery::{self, Discovered};
use crate::cluster::hosting::LocalRegistry;
use crate::cluster::openshift;
use crate::cluster::product::{self, Product};
use crate::cluster::reach::{self, Reach};
use crate::error::{Context, ExitCode, Result};
use crate::image::reference::RegistryHost;
use crate::image::registry::{RegistryClient, TransportOptions};
use crate::output::Printer;
use crate::settings::Settings;
use usage::Usage;

pub async fn run(
    args: &LsArgs,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    let discovered = discovery::discover(cluster_args, settings, printer).await?;
    let uses = read_uses(
        &discovered,
        cluster_args,
        settings,
        printer,
        UsageNeed::Optional,
    )
    .await?;
    let rows = match &discovered.registry {
        Some(registry) => {
            let (client, _tunnel) =
                open_registry(&discovered, registry, &args.access, settings, printer).await?;
            let entries = inventory::read(
                &client,
                &args.repositories,
                inventory::Reader("ls"),
                printer,
            )
            .await?;
            let usage = Usage::new(uses.as_deref().unwrap_or_default(), &hosts(registry));
            rows::registry_rows(entries, |entry| {
                let mut digests = vec![entry.digest.as_str()];
                digests.extend(entry.children.iter().map(|d| d.as_str()));
                uses.as_ref()
                    .map(|_| usage.users_of(&entry.repository, &entry.tag, &digests))
            })
        }
        None => {
            let (cluster, product) = nodes_product(&discovered).await?;
            let nodes = cluster.nodes().await?;
            let node_cluster =
                node_tags::node_cluster(&product, &nodes, settings.limits.node_timeout)?;
            let tags = node_tags::read(&node_cluster, printer).await?;
            let usage = Usage::new(uses.as_deref().unwrap_or_default(), &[]);
            tags.into_iter()
                .filter(|tag| {
                    args.repositories.is_empty() || args.repositories.contains(&tag.repository)
                })
                .map(|tag| Row {
                    in_use_by: uses.as_ref().map(|_| usage.users_of_name(&tag.name)),
                    node: Some(tag.node),
                    repository: tag.repository,
                    tag: tag.tag,
                    digest: tag.digest.to_string(),
                    size: None,
                    created: tag.created,
                    attachments: None,
                    attached_to: None,
                    kind: None,
                })
                .collect()
        }
    };
    let text = match args.output.output {
        OutputFormat::Json => serde_json::to_string_pretty(&rows)
            .context(ExitCode::Failure, || "writing the list as JSON")?,
        OutputFormat::Text => table::render(&rows, discovered.registry.is_none()),
    };
    printer.result(&text)
}

/// One line of `ls`: the `-o json` shape (see docs/reference.md).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Row {
    /// Only without a registry: the node holding the content tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub repository: String,
    pub tag: String,
    pub digest: String,
    /// Only with a registry: config and layers (an index: its platforms summed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    pub created: Option<String>,
    /// `KIND/NAMESPACE/NAME`; null when the workloads could not be read.
    pub in_use_by: Option<Vec<String>>,
    /// Only with a registry: what belongs to this tag's manifest (signatures, attestations,
    /// referrers), shown under it rather than as images of their own; left out when nothing does.
    #[serde(skip_serializing_if = "nothing_attached")]
    pub attachments: Option<Vec<rows::AttachmentRow>>,
    /// Only for a tag that belongs to a manifest no tag here names: that manifest's digest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attached_to: Option<String>,
    /// With `attached_to`: what the tag is (`cosign signature`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

fn nothing_attached(attachments: &Option<Vec<rows::AttachmentRow>>) -> bool {
    attachments.as_ref().is_none_or(Vec::is_empty)
}

/// Every name the registry is known by: where we push, what the nodes pull, what pods use.
pub(crate) fn hosts(registry: &LocalRegistry) -> Vec<&RegistryHost> {
    let mut hosts = vec![&registry.host, &registry.host_from_container_runtime];
    hosts.extend(registry.host_from_cluster_network.as_ref());
    hosts
}

/// A client for the host this run reaches the registry at, answering its ping, and the way it
/// is reached (a tunnel through the API server stays open while that lives).
pub(crate) async fn open_registry(
    discovered: &Discovered,
    registry: &LocalRegistry,
    access: &RegistryAccessArgs,
    settings: &Settings,
    printer: &Printer,
) -> Result<(RegistryClient, Reach)> {
    let reach = reach::reach(discovered, registry, printer).await?;
    let host = &reach.host;
    let options = TransportOptions {
        insecure: access.insecure,
        ca_file: access.ca_file.clone(),
        help: registry.help.clone(),
        cluster_login: openshift::cluster_login(registry, host, discovered, printer),
        tunnel: reach.endpoint(),
        ..settings.transport_options()
    };
    let client = RegistryClient::new(host, &options)?;
    client.ping().await.map_err(|err| reach.explain(err))?;
    Ok((client, reach))
}

/// Whether a run may go on without knowing which images are in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UsageNeed {
    /// `ls`: say so and show no users.
    Optional,
    /// `prune`: refuse (exit 3) when the workloads cannot be read.
    Required { command: &'static str },
    /// `prune --ignore-usage`: not read at all.
    Ignored,
}

/// Every image the cluster's pods and workloads name; `None` when they could not be read and
/// the run may go on without them.
pub(crate) async fn read_uses(
    discovered: &Discovered,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
    need: UsageNeed,
) -> Result<Option<Vec<ImageUse>>> {
    if need == UsageNeed::Ignored {
        printer.warn("--ignore-usage: the workloads are not read; images they use may be removed");
        return Ok(None);
    }
    let connected;
    let cluster = match &discovered.cluster {
        Some(cluster) => cluster,
        None => match Cluster::connect(cluster_args, settings, printer).await {
            Ok(cluster) => {
                connected = cluster;
                &connected
            }
            Err(err) => {
                return match need {
                    UsageNeed::Required { .. } => Err(err.with_hint(
                        "the workloads tell what is in use; pass --ignore-usage to go on without them",
                    )),
                    _ => {
                        printer.warn(&format!(
                            "which workloads use the images is not shown: {}",
                            err.message()
                        ));
                        Ok(None)
                    }
                };
            }
        },
    };
    match cluster.image_uses().await? {
        ImageUses::Listed(uses) => {
            printer.debug(&format!("{} image uses in pods and workloads", uses.len()));
            Ok(Some(uses))
        }
        ImageUses::Forbidden { resource, message } => match need {
            UsageNeed::Required { command } => Err(usage_forbidden(&resource, &message, command)),
            _ => {
                printer.warn(&format!(
                    "which workloads use the images is not shown: listing {resource} in all namespaces is forbidden"
                ));
                Ok(None)
            }
        },
    }
}

/// The cluster and its product, for the nodes' content tags.
pub(crate) async fn nodes_product(discovered: &Discovered) -> Result<(&Cluster, Product)> {
    let cluster = discovered.cluster.as_ref().ok_or_else(|| {
        crate::error::Error::new(
            ExitCode::Load,
            "no registry and no cluster to read the nodes of",
        )
    })?;
    let nodes = cluster.nodes().await?;
    Ok((cluster, product::detect(cluster.facts(), &nodes)))
}
