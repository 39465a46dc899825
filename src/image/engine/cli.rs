//! An engine's CLI (`docker`, `podman`, `nerdctl`) where its API is not reachable directly:
//! `image inspect NAME` for the facts, `image save NAME` streaming the archive to our pipe, and
//! `push` where podman pushes from its own store.

use std::io;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use super::daemon::{EnginePushFailure, is_unreachable};
use super::export::Export;
use super::facts::ImageFacts;
use crate::image::digest::Digest;
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

/// How a `PROGRAM push` goes: credentials in a containers auth file, TLS checked or not, the
/// layers' compression.
#[derive(Debug)]
pub struct CliPush<'a> {
    pub authfile: &'a Path,
    pub tls_verify: bool,
    /// `zstd` where asked for; gzip (podman's default) otherwise.
    pub zstd: bool,
}

/// What podman's own words say about its error: we keep at most this much of them.
const STDERR_LIMIT: u64 = 64 << 10;
/// A digest is 71 bytes; more than this in the digest file is not one.
const DIGEST_FILE_LIMIT: u64 = 128;

/// `PROGRAM push --digestfile F IMAGE DESTINATION`: the engine pushes from its own store (where
/// it runs: a podman machine, a remote service). Returns the digest it pushed, when it wrote one
/// (podman's remote client does not). Killed if dropped.
pub(super) async fn push(
    program: &str,
    image: &str,
    destination: &str,
    how: &CliPush<'_>,
    big_files_dir: &Path,
) -> Result<Option<Digest>, EnginePushFailure> {
    let failed =
        |err: io::Error| EnginePushFailure::Failed(format!("running `{program} push`: {err}"));
    let scratch = tempfile::Builder::new()
        .prefix("kubectl-registry-push-")
        .tempdir_in(big_files_dir)
        .map_err(failed)?;
    let digest_file = scratch.path().join("digest");
    let stderr = tempfile::tempfile().map_err(failed)?;
    let mut command = tokio::process::Command::new(program);
    command
        .arg("push")
        .arg("--quiet")
        .arg("--digestfile")
        .arg(&digest_file)
        .arg("--authfile")
        .arg(how.authfile)
        .arg(format!("--tls-verify={}", how.tls_verify));
    if how.zstd {
        command.args(["--compression-format", "zstd"]);
    }
    let status = command
        .args([image, destination])
        .env("TMPDIR", scratch.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr.try_clone().map_err(failed)?)
        .kill_on_drop(true)
        .status()
        .await
        .map_err(failed)?;
    if !status.success() {
        let said = read_start(stderr, STDERR_LIMIT);
        let said = format!("`{program} push` failed ({status}): {}", said.trim());
        return Err(if is_unreachable(&said) {
            EnginePushFailure::Unreachable(said)
        } else {
            EnginePushFailure::Failed(said)
        });
    }
    let written = match std::fs::File::open(&digest_file) {
        Ok(file) => read_start(file, DIGEST_FILE_LIMIT),
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(failed(err)),
    };
    written.trim().parse::<Digest>().map(Some).map_err(|err| {
        EnginePushFailure::Failed(format!("`{program} push` wrote in its --digestfile: {err}"))
    })
}

/// The first `limit` bytes of `file`, from its start, as text.
fn read_start(mut file: std::fs::File, limit: u64) -> String {
    use std::io::{Read, Seek};
    let mut bytes = Vec::new();
    let _ = file.seek(io::SeekFrom::Start(0));
    let _ = file.take(limit).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}
