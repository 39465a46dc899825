//! What a diagnosis says of one pod: each container's finding, as `why` prints it (text or
//! `-o json`), and the error its first cause is coded after; beside them, the deleted pods that
//! finalizers keep and why a Deployment's controller could not create new pods.

use serde::Serialize;

use super::causes::{Cause, Finding};
use super::not_ready::kept_by;
use crate::cluster::client::PodFacts;
use crate::plumbing::error::{Error, ExitCode};
use crate::plumbing::output::{paragraph, shown_bare};

/// `-o json`: see docs/reference.md.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Report {
    pub pod: String,
    pub namespace: String,
    pub node: Option<String>,
    pub containers: Vec<Finding>,
    /// The pod, or the deployment's other pods, deleted and kept by finalizers.
    pub terminating: Vec<Terminating>,
    /// Why the deployment's controller could not create new pods (its `ReplicaFailure`
    /// condition); null otherwise.
    pub not_created: Option<String>,
}

/// A deleted pod that finalizers keep: said beside the containers, not a cause of theirs.
#[derive(Debug, Serialize)]
pub(crate) struct Terminating {
    pub pod: String,
    pub finalizers: Vec<String>,
    pub explanation: String,
    pub fix: String,
}

impl Terminating {
    /// `None` for a pod that is not deleted, or that nothing keeps.
    pub(crate) fn of(pod: &PodFacts) -> Option<Self> {
        if pod.held_by.is_empty() {
            return None;
        }
        let them = match pod.held_by.len() {
            1 => "it",
            _ => "them",
        };
        Some(Self {
            pod: pod.name.clone(),
            finalizers: pod.held_by.clone(),
            explanation: kept_by(&pod.held_by),
            fix: format!(
                "whatever added {} removes {them} when its work is done; if nothing will, \
                 `kubectl patch pod {} -n {} --type=merge -p '{{\"metadata\":{{\"finalizers\":null}}}}'` \
                 lets the pod go",
                shown_bare(&pod.held_by.join(", ")),
                pod.name,
                pod.namespace
            ),
        })
    }
}

impl Report {
    /// What `why` prints: the pod, then each container with its cause, why and fix.
    pub(crate) fn render(&self) -> String {
        let mut lines = vec![format!(
            "pod {}/{}{}",
            self.namespace,
            self.pod,
            self.node
                .as_deref()
                .map(|node| format!(" on node {node}"))
                .unwrap_or_default()
        )];
        for finding in &self.containers {
            match finding.cause {
                None => lines.push(format!(
                    "✓ {} ({}): {}",
                    finding.name, finding.image, finding.explanation
                )),
                Some(cause) => {
                    let cause = serde_json::to_value(cause)
                        .ok()
                        .and_then(|value| value.as_str().map(str::to_string))
                        .unwrap_or_default();
                    lines.push(format!("✗ {} ({}): {cause}", finding.name, finding.image));
                    lines.push(format!("    why: {}", finding.explanation));
                    if let Some(fix) = &finding.fix {
                        for (at, line) in fix.lines().enumerate() {
                            let label = if at == 0 { "    fix: " } else { "         " };
                            lines.push(format!("{label}{line}"));
                        }
                    }
                }
            }
        }
        if let Some(message) = &self.not_created {
            lines.push(format!(
                "! no new pod could be created: {}",
                paragraph(message)
            ));
        }
        for held in &self.terminating {
            lines.push(format!(
                "! pod {} is not gone: {}",
                held.pod, held.explanation
            ));
            lines.push(format!("    fix: {}", held.fix));
        }
        lines.join("\n")
    }

    /// `None` when every container runs; else the error coded after the first cause.
    pub(crate) fn verdict(&self) -> Option<Error> {
        let failing: Vec<&Finding> = self
            .containers
            .iter()
            .filter(|finding| finding.cause.is_some())
            .collect();
        let first = failing.first()?;
        let code = first.cause.map_or(ExitCode::Failure, Cause::exit_code);
        let names: Vec<&str> = failing
            .iter()
            .map(|finding| finding.name.as_str())
            .collect();
        Some(Error::new(
            code,
            format!(
                "pod {}/{}: {} cannot start {} image ({})",
                self.namespace,
                self.pod,
                if failing.len() == 1 {
                    "1 container".to_string()
                } else {
                    format!("{} containers", failing.len())
                },
                if failing.len() == 1 { "its" } else { "their" },
                names.join(", ")
            ),
        ))
    }
}
