//! `kubectl registry ls`: every repository and tag in the cluster's registry with its digest,
//! size, created time and the workloads that use it; without a registry, the content tags this
//! tool loaded into each node. A table, or `-o json`.

mod rows;
mod table;

use serde::Serialize;

use crate::cli::{LsArgs, OutputFormat};
use crate::cluster::ClusterOptions;
use crate::cluster::session::Session;
use crate::inventory::{self, Usage, UsageNeed, hosts, open_registry, read_uses};
use crate::nodes::{self, reach_nodes};
use crate::plumbing::error::{Context, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::settings::Settings;

pub async fn run(
    args: &LsArgs,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    let session = Session::new(cluster_args, settings, printer);
    let discovered = session.discover().await?;
    let uses = read_uses(&session, printer, UsageNeed::Optional).await?;
    let rows = match &discovered.registry {
        Some(registry) => {
            let (client, _reach) = open_registry(
                &session,
                &discovered,
                registry,
                &(&args.access).into(),
                settings,
                printer,
            )
            .await?;
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
            let node_cluster = reach_nodes(&discovered, settings.limits.node_timeout).await?;
            let tags = nodes::read_node_tags(&node_cluster, printer).await?;
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
