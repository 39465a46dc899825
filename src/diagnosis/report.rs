//! What a diagnosis says of one pod: each container's finding, as `why` prints it (text or
//! `-o json`), and the error its first cause is coded after.

use serde::Serialize;

use super::causes::{Cause, Finding};
use crate::plumbing::error::{Error, ExitCode};

/// `-o json`: see docs/reference.md.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub pod: String,
    pub namespace: String,
    pub node: Option<String>,
    pub containers: Vec<Finding>,
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
