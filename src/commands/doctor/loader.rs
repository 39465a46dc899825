//! The node loader push would run where no registry is advertised: found on PATH, and its version.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// A loader that hangs must not hold the report.
const VERSION_TIMEOUT: Duration = Duration::from_secs(5);

/// Where `program` is on `path` (the settings' PATH), as the shell would find it.
pub(super) fn find_on_path(program: &Path, path: Option<&OsStr>) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return is_executable(program).then(|| program.to_path_buf());
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file() || path.with_extension("exe").is_file()
    }
}

/// The first line the loader prints for its version; `None` when it fails, hangs or says nothing.
pub(super) async fn version(path: &Path, version_args: &[&str]) -> Option<String> {
    let run = tokio::process::Command::new(path)
        .args(version_args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(VERSION_TIMEOUT, run)
        .await
        .ok()?
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    // Printed text from another program: no control characters reach the terminal.
    Some(line.chars().filter(|c| !c.is_control()).collect())
}
