//! The node loader push would run where no registry is advertised: found on PATH, and its version.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::plumbing::process::{Argv, Bound, Out, Run};

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
    let argv = Argv::of(path, version_args);
    let output = Run::new(&argv, Bound::Within(VERSION_TIMEOUT))
        .stderr(Out::Null)
        .succeed()
        .await
        .ok()?;
    let text = output.stdout_text();
    let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    // Printed text from another program: no control characters reach the terminal.
    Some(line.chars().filter(|c| !c.is_control()).collect())
}
