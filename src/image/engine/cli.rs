//! An engine's CLI (`docker`, `podman`, `nerdctl`) where its API is not reachable directly:
//! `image inspect NAME` for the facts, `image save NAME` streaming the archive to our pipe.

use std::io;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use super::export::Export;
use super::facts::ImageFacts;
use crate::image::registry::Watchdog;
use crate::limits::{REQUEST_TIMEOUT_ENV, seconds_text};

/// What running an engine's CLI gave.
pub(super) enum Outcome<T> {
    Found(T),
    /// The CLI is not on PATH.
    NotInstalled,
    /// It ran and failed; its own words.
    Failed(String),
}

/// `PROGRAM image inspect IMAGE`, killed when it takes longer than `limit`.
pub(super) async fn inspect(program: &str, image: &str, limit: Duration) -> Outcome<ImageFacts> {
    let run = tokio::process::Command::new(program)
        .args(["image", "inspect", image])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(limit, run).await {
        Ok(output) => output,
        Err(_) => {
            return Outcome::Failed(format!(
                "`{program} image inspect` did not answer within {} ({REQUEST_TIMEOUT_ENV})",
                seconds_text(limit)
            ));
        }
    };
    match output {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Outcome::NotInstalled,
        Err(err) => Outcome::Failed(err.to_string()),
        Ok(out) if !out.status.success() => {
            Outcome::Failed(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
        Ok(out) => match ImageFacts::parse(&out.stdout) {
            Ok(facts) => Outcome::Found(facts),
            Err(err) => {
                Outcome::Failed(format!("`{program} image inspect` printed no image: {err}"))
            }
        },
    }
}

/// Starts `PROGRAM image save IMAGE` with its stdout as the export. Its TMPDIR is a directory of
/// ours under `big_files_dir` (where it would spool anyway): podman writes each layer there
/// before sending it, and leaves those files behind when it is stopped, so we remove them.
pub(super) fn export(
    program: &str,
    image: &str,
    big_files_dir: &Path,
    watchdog: Watchdog,
) -> io::Result<Export> {
    let scratch = tempfile::Builder::new()
        .prefix("kubectl-registry-export-")
        .tempdir_in(big_files_dir)?;
    let stderr = tempfile::tempfile()?;
    let child = std::process::Command::new(program)
        .args(["image", "save", image])
        .env("TMPDIR", scratch.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr.try_clone()?)
        .spawn()?;
    Export::from_cli(program, child, stderr, scratch, watchdog)
}
