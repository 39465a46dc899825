//! `why -o json`'s report on a one-container pod, pinned whole: the envelope (the pod, its
//! namespace and node, the container named as the pod) written once here, the container's
//! finding (image, cause, explanation, fix) the caller's snapshot.

use snapbox::IntoData;

use crate::support::run::{Outcome, assert_redacted};

/// What `why POD -o json` printed, with what the report must be: exit `code`, pod `pod` in
/// `default` on node `node` (`None`: not scheduled, JSON `null`), one container named `pod`.
pub(crate) struct Report<'a> {
    run: &'a Outcome,
    code: i32,
    pod: &'a str,
    node: Option<&'a str>,
}

/// The report `run` must have printed; [`Report::finding`] checks it.
pub(crate) fn report<'a>(
    run: &'a Outcome,
    code: i32,
    pod: &'a str,
    node: Option<&'a str>,
) -> Report<'a> {
    Report {
        run,
        code,
        pod,
        node,
    }
}

impl Report<'_> {
    /// Asserts the exit code and the whole report: the envelope as [`report`] was told, the
    /// container's finding (its lines after its name: image, cause, explanation, fix) `finding`.
    #[track_caller]
    pub(crate) fn finding(self, finding: impl IntoData) {
        let Self {
            run,
            code,
            pod,
            node,
        } = self;
        assert_eq!(run.code, code, "{run:?}");
        let node = node.map_or_else(|| "null".to_string(), |node| format!("\"{node}\""));
        let head = format!(
            "{{\n  \"pod\": \"{pod}\",\n  \"namespace\": \"default\",\n  \"node\": {node},\n  \
             \"containers\": [\n    {{\n      \"name\": \"{pod}\",\n"
        );
        let tail = "\n    }\n  ],\n  \"terminating\": [],\n  \"notCreated\": null\n}\n";
        let container = run
            .stdout
            .strip_prefix(&head)
            .and_then(|rest| rest.strip_suffix(tail))
            .unwrap_or_else(|| panic!("not the report on one container {pod}:\n{}", run.stdout));
        let lines: Vec<&str> = container
            .lines()
            .map(|line| {
                line.strip_prefix("      ")
                    .unwrap_or_else(|| panic!("a finding's line, indented: {line:?}"))
            })
            .collect();
        assert_redacted(&(lines.join("\n") + "\n"), finding);
    }
}
