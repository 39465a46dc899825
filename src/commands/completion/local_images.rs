//! Image names in the local docker engine, for completion: best effort, bounded in time.

use std::time::Duration;

use crate::plumbing::process::{self, Argv, Bound, Out, Run};

/// More output than this is not a list of names worth reading at a prompt.
const MAX_OUTPUT_BYTES: usize = 1 << 20;

/// `NAME:TAG` of each tagged image. Empty when docker is missing, fails (no daemon), or takes
/// longer than `timeout`: completion must never hang or complain at a prompt.
pub(super) fn list(timeout: Duration) -> Vec<String> {
    let argv = Argv::of(
        "docker",
        ["image", "ls", "--format", "{{.Repository}}:{{.Tag}}"],
    );
    let run = Run::new(&argv, Bound::Within(timeout))
        .stdout(Out::Keep {
            cap: MAX_OUTPUT_BYTES,
        })
        .stderr(Out::Null);
    match process::output_blocking(run) {
        Ok(output) if output.status.success() => parse(&output.stdout_text()),
        _ => Vec::new(),
    }
}

fn parse(text: &str) -> Vec<String> {
    let mut images: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.contains("<none>"))
        .map(str::to_string)
        .collect();
    images.sort();
    images.dedup();
    images
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untagged_and_blank_lines_are_dropped_and_repeats_merged() {
        let text = "myimg:dev\n<none>:<none>\nbase:<none>\n\nmyimg:dev\nalpine:3.20\n";
        assert_eq!(parse(text), ["alpine:3.20", "myimg:dev"]);
    }
}
