//! Pruning the nodes: per node and name, the content tags push loaded (`NAME:TAG-<12 hex>`)
//! beyond the N newest by their image's `created` (ties and missing times kept) are removed with
//! `ctr -n k8s.io images rm`, never one a pod or workload uses; containerd's own garbage
//! collector frees the content no name holds any more.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cli::{OutputFormat, PruneArgs};
use crate::cluster::client::ImageUse;
use crate::cluster::discovery::Discovered;
use crate::image::created;
use crate::inventory::Usage;
use crate::inventory::pruning::{Dated, Why, newest_threshold};
use crate::nodes::{self, ImageStore};
use crate::nodes::{NodeTag, reach_nodes, read_node_tags};
use crate::plumbing::error::{Context, Error, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::settings::Settings;

/// One content tag in the report.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    node: String,
    name: String,
    repository: String,
    tag: String,
    digest: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<Why>,
    #[serde(skip_serializing_if = "Option::is_none")]
    in_use_by: Option<Vec<String>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    dry_run: bool,
    removed: Vec<Line>,
    kept: Vec<Line>,
}

impl Dated for &NodeTag {
    fn digest(&self) -> &crate::image::digest::Digest {
        &self.digest
    }

    fn created_at(&self) -> Option<created::Instant> {
        self.created.as_deref().and_then(created::parse)
    }
}

pub(super) async fn prune(
    args: &PruneArgs,
    discovered: &Discovered,
    uses: Option<&[ImageUse]>,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    let node_cluster = reach_nodes(discovered, settings.limits.node_timeout).await?;
    let tags: Vec<NodeTag> = read_node_tags(&node_cluster, printer)
        .await?
        .into_iter()
        .filter(|tag| args.repositories.is_empty() || args.repositories.contains(&tag.repository))
        .collect();
    let usage = uses.map(|uses| Usage::new(uses, &[]));
    let keep = usize::try_from(args.keep).unwrap_or(usize::MAX);
    let mut groups: BTreeMap<(&str, &str), Vec<&NodeTag>> = BTreeMap::new();
    for tag in &tags {
        groups
            .entry((tag.node.as_str(), tag.repository.as_str()))
            .or_default()
            .push(tag);
    }
    let mut report = Report {
        dry_run: args.dry_run,
        removed: Vec::new(),
        kept: Vec::new(),
    };
    for group in groups.values() {
        let newest = newest_threshold(group, keep);
        for tag in group {
            let users = usage
                .as_ref()
                .map(|usage| usage.users_of_name(&tag.name))
                .unwrap_or_default();
            let created_at = tag.created_at();
            let why = Why::kept(!users.is_empty(), created_at, newest);
            let line = Line {
                node: tag.node.clone(),
                name: tag.name.clone(),
                repository: tag.repository.clone(),
                tag: tag.tag.clone(),
                digest: tag.digest.to_string(),
                in_use_by: why.map(|_| users),
                reason: why,
            };
            match why {
                Some(_) => report.kept.push(line),
                None => report.removed.push(line),
            }
        }
    }
    if !args.dry_run {
        let mut by_node: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for line in &report.removed {
            by_node
                .entry(&line.node)
                .or_default()
                .push(line.name.clone());
        }
        for (node, names) in by_node {
            nodes::remove_node_images(&node_cluster, node, &names)
                .await
                .map_err(|why| {
                    Error::new(
                        ExitCode::Load,
                        format!("removing old content tags from node {node}"),
                    )
                    .with_source(why)
                })?;
            printer.debug(&format!("{node}: removed {}", names.join(", ")));
        }
    }
    let text = match args.output.output {
        OutputFormat::Json => serde_json::to_string_pretty(&report)
            .context(ExitCode::Failure, || "writing the report as JSON")?,
        OutputFormat::Text => text(&report, node_cluster.store()),
    };
    printer.result(&text)
}

fn text(report: &Report, store: ImageStore) -> String {
    let verb = if report.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let mut lines: Vec<String> = report
        .removed
        .iter()
        .map(|line| format!("{verb} {} from {}", line.name, line.node))
        .collect();
    let in_use = report
        .kept
        .iter()
        .filter(|line| line.reason == Some(Why::InUse))
        .count();
    lines.push(format!(
        "{verb} {} content tags, kept {} ({in_use} in use); {}",
        report.removed.len(),
        report.kept.len(),
        match store {
            ImageStore::Containerd => "each node's containerd frees what no image names",
            ImageStore::Docker => "each node's dockerd removes an image with its last name",
        }
    ));
    lines.join("\n")
}
