//! An engine's CLI (`docker`, `podman`, `nerdctl`) where its API is not reachable directly:
//! `image inspect NAME` for the facts, `image save NAME` streaming the archive to our pipe, and
//! `push` where podman pushes from its own store.

use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::time::Duration;

use super::daemon::{EnginePushFailure, is_unreachable};
use super::export::Export;
use super::facts::ImageFacts;
use crate::image::digest::Digest;
use crate::image::registry::Watchdog;
use crate::plumbing::limits::{REQUEST_TIMEOUT_ENV, STALL_TIMEOUT_ENV, seconds_text};
use crate::plumbing::process::{Argv, Bound, Out, ProcessError, Run};

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
    let argv = Argv::of(program, ["image", "inspect", image]);
    let output = match Run::new(&argv, Bound::Within(limit))
        .stderr(Out::Keep { cap: STDERR_LIMIT })
        .output()
        .await
    {
        Ok(output) => output,
        Err(err) if err.not_found() => return Outcome::NotInstalled,
        Err(ProcessError::TimedOut { .. } | ProcessError::LeftOpen { .. }) => {
            return Outcome::Failed(format!(
                "`{program} image inspect` did not answer within {} ({REQUEST_TIMEOUT_ENV})",
                seconds_text(limit)
            ));
        }
        Err(err) => return Outcome::Failed(err.to_string()),
    };
    if !output.status.success() {
        return Outcome::Failed(output.stderr_text().trim().to_string());
    }
    match ImageFacts::parse(&output.stdout) {
        Ok(facts) => Outcome::Found(facts),
        Err(err) => Outcome::Failed(format!("`{program} image inspect` printed no image: {err}")),
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
    let argv = Argv::of(program, ["image", "save", image]);
    // The export is bounded by the watchdog while it streams; its exit, by as much after.
    let running = Run::new(&argv, Bound::AfterStream(watchdog.limit()))
        .env("TMPDIR", scratch.path())
        .keep_until_gone(scratch)
        .stdout(Out::Stream)
        .stderr(Out::Keep { cap: STDERR_LIMIT })
        .spawn()
        .map_err(io::Error::other)?;
    Export::from_cli(program, running, watchdog)
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

/// What an engine's own words say about its error: we keep at most this much of them.
const STDERR_LIMIT: usize = 64 << 10;
/// A digest is 71 bytes; more than this in the digest file is not one.
const DIGEST_FILE_LIMIT: u64 = 128;
/// The engine's own push may take this many times the stall bound: its progress is its own.
const PUSH_FACTOR: u32 = 10;

/// `PROGRAM push --digestfile F IMAGE DESTINATION`: the engine pushes from its own store (where
/// it runs: a podman machine, a remote service). Returns the digest it pushed, when it wrote one
/// (podman's remote client does not). Killed if dropped.
pub(super) async fn push(
    program: &str,
    image: &str,
    destination: &str,
    how: &CliPush<'_>,
    big_files_dir: &Path,
    stall_timeout: Duration,
) -> Result<Option<Digest>, EnginePushFailure> {
    let failed =
        |err: io::Error| EnginePushFailure::Failed(format!("running `{program} push`: {err}"));
    // Shared with the run: removed once both we and the program are done with it.
    let scratch = std::sync::Arc::new(
        tempfile::Builder::new()
            .prefix("kubectl-registry-push-")
            .tempdir_in(big_files_dir)
            .map_err(failed)?,
    );
    let digest_file = scratch.path().join("digest");
    let mut args: Vec<OsString> = vec![
        "push".into(),
        "--quiet".into(),
        "--digestfile".into(),
        digest_file.clone().into(),
        "--authfile".into(),
        how.authfile.into(),
        format!("--tls-verify={}", how.tls_verify).into(),
    ];
    if how.zstd {
        args.extend(["--compression-format".into(), "zstd".into()]);
    }
    args.extend([image.into(), destination.into()]);
    let argv = Argv::new(program, args);
    let bound = stall_timeout * PUSH_FACTOR;
    let output = Run::new(&argv, Bound::Within(bound))
        .env("TMPDIR", scratch.path())
        .keep_until_gone(std::sync::Arc::clone(&scratch))
        .stdout(Out::Null)
        .stderr(Out::Keep { cap: STDERR_LIMIT })
        .output()
        .await;
    let output = match output {
        Ok(output) => output,
        Err(ProcessError::TimedOut { .. } | ProcessError::LeftOpen { .. }) => {
            return Err(EnginePushFailure::Failed(format!(
                "`{program} push` did not finish within {} (ten times {STALL_TIMEOUT_ENV}); it was stopped",
                seconds_text(bound)
            )));
        }
        Err(err) => return Err(EnginePushFailure::Failed(err.to_string())),
    };
    if !output.status.success() {
        let said = format!(
            "`{program} push` failed ({}): {}",
            output.status,
            output.stderr_text().trim()
        );
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

/// The first `limit` bytes of `file` as text.
fn read_start(file: std::fs::File, limit: u64) -> String {
    use std::io::Read;
    let mut bytes = Vec::new();
    let _ = file.take(limit).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}
