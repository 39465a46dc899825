//! One line per check (✓ passed, ✗ failed, – not applicable) as text or as a JSON list of
//! `{check, ok, detail, hint}`, and whether push would work.

use serde::Serialize;

use crate::plumbing::error::{Error, ExitCode};

/// Which check: the name it goes by on its line and in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum CheckId {
    Kubeconfig,
    ApiServer,
    Discovery,
    /// Where push tunnels through the API server: permission, a ready pod, the port-forward.
    Tunnel,
    Registry,
    RoundTrip,
    Nodes,
    NodeLoad,
    Pod,
}

impl CheckId {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Kubeconfig => "kubeconfig",
            Self::ApiServer => "api-server",
            Self::Discovery => "discovery",
            Self::Tunnel => "tunnel",
            Self::Registry => "registry",
            Self::RoundTrip => "round-trip",
            Self::Nodes => "nodes",
            Self::NodeLoad => "node-load",
            Self::Pod => "pod",
        }
    }
}

/// One check's outcome. `ok` is null in JSON for a check that does not apply or could not run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Check {
    pub check: CheckId,
    pub ok: Option<bool>,
    pub detail: String,
    /// What to do about it, one thing per hint (joined with "; " in JSON, null when none).
    #[serde(rename = "hint", serialize_with = "joined")]
    pub hints: Vec<String>,
    /// What a failure means for push (its exit code); only for failed checks.
    #[serde(skip)]
    pub exit: Option<ExitCode>,
}

impl Check {
    pub(crate) fn passed(check: CheckId, detail: impl Into<String>) -> Self {
        Self {
            check,
            ok: Some(true),
            detail: detail.into(),
            hints: Vec::new(),
            exit: None,
        }
    }

    /// A check that does not apply here, or that an earlier failure kept from running.
    pub(crate) fn skipped(check: CheckId, detail: impl Into<String>) -> Self {
        Self {
            check,
            ok: None,
            detail: detail.into(),
            hints: Vec::new(),
            exit: None,
        }
    }

    pub(crate) fn failed(check: CheckId, exit: ExitCode, detail: impl Into<String>) -> Self {
        Self {
            check,
            ok: Some(false),
            detail: detail.into(),
            hints: Vec::new(),
            exit: Some(exit),
        }
    }

    /// A failed check from an error: its message and causes as the detail, its hints as the hint.
    pub(crate) fn from_error(check: CheckId, error: &Error) -> Self {
        let failed = Self::failed(check, error.exit_code(), error.with_causes());
        failed.with_hints(error.hints().iter().map(|hint| hint.to_string()))
    }

    pub(crate) fn with_hint(self, hint: impl Into<String>) -> Self {
        self.with_hints([hint.into()])
    }

    fn with_hints(mut self, hints: impl IntoIterator<Item = String>) -> Self {
        self.hints.extend(hints);
        self
    }
}

fn joined<S: serde::Serializer>(hints: &[String], s: S) -> Result<S::Ok, S::Error> {
    if hints.is_empty() {
        s.serialize_none()
    } else {
        s.serialize_str(&hints.join("; "))
    }
}

/// Every check, in the order they ran.
#[derive(Debug, Default)]
pub(crate) struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    pub(crate) fn add(&mut self, check: Check) {
        self.checks.push(check);
    }

    /// `✓ kubeconfig: ...` lines, each hint on an indented line of its own.
    pub(crate) fn text(&self, color: bool) -> String {
        let mut lines = Vec::new();
        for check in &self.checks {
            let (mark, ansi) = match check.ok {
                Some(true) => ("✓", "32"),
                Some(false) => ("✗", "31"),
                None => ("–", "2"),
            };
            let mark = if color {
                format!("\x1b[1;{ansi}m{mark}\x1b[0m")
            } else {
                mark.to_string()
            };
            lines.push(format!("{mark} {}: {}", check.check.as_str(), check.detail));
            for hint in &check.hints {
                lines.push(format!("    hint: {hint}"));
            }
        }
        lines.join("\n")
    }

    /// `None` when push would work; else the error to exit with, coded after the first failure.
    pub(crate) fn verdict(&self) -> Option<Error> {
        let failed: Vec<&Check> = self
            .checks
            .iter()
            .filter(|check| check.ok == Some(false))
            .collect();
        let first = failed.first()?;
        let names: Vec<&str> = failed.iter().map(|check| check.check.as_str()).collect();
        Some(Error::new(
            first.exit.unwrap_or(ExitCode::Failure),
            format!(
                "push would not work: {} failed ({})",
                if failed.len() == 1 {
                    "1 check".to_string()
                } else {
                    format!("{} checks", failed.len())
                },
                names.join(", ")
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_marks_each_check_and_puts_each_hint_on_its_own_line() {
        let mut report = Report::default();
        report.add(Check::passed(
            CheckId::Kubeconfig,
            "/home/me/.kube/config, context kind-dev",
        ));
        report.add(Check::skipped(CheckId::NodeLoad, "not needed"));
        report.add(
            Check::failed(CheckId::Registry, ExitCode::Registry, "down")
                .with_hint("start it")
                .with_hint("see the guide"),
        );
        assert_eq!(
            report.text(false),
            "✓ kubeconfig: /home/me/.kube/config, context kind-dev\n– node-load: not needed\n✗ registry: down\n    hint: start it\n    hint: see the guide"
        );
        assert_eq!(
            report.text(true).lines().next(),
            Some("\x1b[1;32m✓\x1b[0m kubeconfig: /home/me/.kube/config, context kind-dev")
        );
    }

    #[test]
    fn the_verdict_takes_its_exit_code_from_the_first_failure() {
        let mut report = Report::default();
        report.add(Check::passed(CheckId::Kubeconfig, "fine"));
        assert!(report.verdict().is_none());
        report.add(Check::failed(CheckId::Registry, ExitCode::Registry, "down"));
        report.add(Check::failed(CheckId::RoundTrip, ExitCode::Load, "no"));
        let verdict = report.verdict().unwrap();
        assert_eq!(verdict.exit_code(), ExitCode::Registry);
        assert_eq!(
            verdict.message(),
            "push would not work: 2 checks failed (registry, round-trip)"
        );
    }
}
