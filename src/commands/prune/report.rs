//! What prune did (or would do), as text lines or the `-o json` object (docs/reference.md).

use serde::Serialize;

use crate::cli::OutputFormat;
use crate::inventory::gc::Collected;
use crate::inventory::pruning::{Doomed, Kept, Plan};
use crate::plumbing::error::{Context, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::plumbing::output::human_size;

pub(super) struct Report {
    pub dry_run: bool,
    /// Only some repositories were read: the unreferenced bytes are counted among them.
    pub filtered: bool,
    pub plan: Plan,
    pub gc: Option<Collected>,
    /// How to reclaim the space without `--gc`.
    pub gc_hint: String,
}

/// The `-o json` shape.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Json<'a> {
    dry_run: bool,
    deleted: &'a [Doomed],
    kept: &'a [Kept],
    unreferenced_bytes: u64,
    garbage_collect: Option<&'a Collected>,
}

impl Report {
    pub(super) fn new(dry_run: bool, filtered: bool, plan: Plan) -> Self {
        Self {
            dry_run,
            filtered,
            plan,
            gc: None,
            gc_hint: String::new(),
        }
    }

    pub(super) fn print(&self, format: OutputFormat, printer: &Printer) -> Result<()> {
        let text = match format {
            OutputFormat::Json => serde_json::to_string_pretty(&Json {
                dry_run: self.dry_run,
                deleted: &self.plan.deletions,
                kept: &self.plan.kept,
                unreferenced_bytes: self.plan.unreferenced_bytes,
                garbage_collect: self.gc.as_ref(),
            })
            .context(ExitCode::Failure, || "writing the report as JSON")?,
            OutputFormat::Text => self.text(),
        };
        printer.result(&text)
    }

    fn text(&self) -> String {
        let verb = if self.dry_run {
            "would delete"
        } else {
            "deleted"
        };
        let mut lines: Vec<String> = self
            .plan
            .deletions
            .iter()
            .map(|doomed| match doomed.tags.as_slice() {
                [] if doomed.untagged_meanwhile => format!(
                    "{verb} {}@{} (its tags were moved or deleted since the registry was read)",
                    doomed.repository, doomed.digest
                ),
                // A referrer listed by a deleted referrers index, pushed by digest alone.
                [] => format!(
                    "{verb} {}@{} (a referrer of a deleted image)",
                    doomed.repository, doomed.digest
                ),
                tags => format!(
                    "{verb} {}:{} ({}, {})",
                    doomed.repository,
                    tags.join(","),
                    doomed.digest,
                    human_size(doomed.size)
                ),
            })
            .collect();
        let in_use = self
            .plan
            .kept
            .iter()
            .filter(|kept| !kept.in_use_by.is_empty())
            .count();
        let among = if self.filtered {
            " (among the repositories named)"
        } else {
            ""
        };
        lines.push(format!(
            "{} {} manifests, kept {} tags ({in_use} in use); {} no longer referenced{among}",
            if self.dry_run {
                "would delete"
            } else {
                "deleted"
            },
            self.plan.deletions.len(),
            self.plan.kept.len(),
            human_size(self.plan.unreferenced_bytes),
        ));
        match &self.gc {
            Some(collected) => lines.push(collected.summary()),
            None if !self.dry_run && !self.plan.deletions.is_empty() => {
                lines.push(self.gc_hint.clone());
            }
            None => {}
        }
        lines.join("\n")
    }
}
