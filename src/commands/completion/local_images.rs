//! Image names in the local docker engine, for completion: best effort, bounded in time.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// More output than this is not a list of names worth reading at a prompt.
const MAX_OUTPUT_BYTES: u64 = 1 << 20;

/// `NAME:TAG` of each tagged image. Empty when docker is missing, fails (no daemon), or takes
/// longer than `timeout`: completion must never hang or complain at a prompt.
pub(super) fn list(timeout: Duration) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    let Ok(mut child) = Command::new("docker")
        .args(["image", "ls", "--format", "{{.Repository}}:{{.Tag}}"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return Vec::new();
    };
    let output = read_stdout_until(&mut child, deadline);
    let status = wait_until(&mut child, deadline);
    match (output, status) {
        (Some(text), Some(status)) if status.success() => parse(&text),
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            Vec::new()
        }
    }
}

/// Reads on a thread so that a silent, hanging docker cannot hold the prompt past `deadline`.
fn read_stdout_until(child: &mut Child, deadline: Instant) -> Option<String> {
    let stdout = child.stdout.take()?;
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let read = stdout.take(MAX_OUTPUT_BYTES).read_to_string(&mut text);
        let _ = sender.send(read.map(|_| text));
    });
    let left = deadline.saturating_duration_since(Instant::now());
    receiver.recv_timeout(left).ok()?.ok()
}

fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        if let Some(status) = child.try_wait().ok()? {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
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
