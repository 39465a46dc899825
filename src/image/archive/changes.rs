//! Noticing that an archive at a path was written or replaced, for `push --watch`: the `notify`
//! crate (inotify on Linux, FSEvents on macOS, ReadDirectoryChangesW on Windows) on the archive's
//! folder, followed as `tail -F` follows a path: a folder removed and made again (`rm -rf build`),
//! a symlink whose target is replaced (Bazel's `bazel-bin`, Nix's `result`), a file not there
//! yet. It costs nothing while nothing happens; where the system's watcher cannot start (no
//! inotify instance left), notify's own look at the folders once a second, and where no watch
//! can be set up at all, or set up again, a look at the file once a second. Either way the caller
//! compares [`identity`] once the file has settled before pushing again.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;

mod follow;

/// What changes when the file is replaced or rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
}

/// The file's identity now; `None` while it is not there.
pub fn identity(path: &Path) -> Option<Identity> {
    let metadata = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&metadata);
    // Windows' file index is not in std's stable metadata: a replacement shows in its length or
    // its time of writing, which a `move` keeps but a build's output changes.
    #[cfg(not(unix))]
    let inode = 0;
    Some(Identity {
        inode,
        len: metadata.len(),
        modified: metadata.modified().ok(),
    })
}

/// Notices on the archive's path.
pub struct FileWatch {
    changes: mpsc::UnboundedReceiver<()>,
    /// How changes are noticed, for `-v`.
    pub how: String,
}

/// notify's look at the folders when the system's watcher cannot start.
const POLL: Duration = Duration::from_secs(1);

impl FileWatch {
    /// Starts watching `path` (on a thread of its own, ended once this is dropped).
    pub fn new(path: &Path) -> Self {
        let (sender, changes) = mpsc::unbounded_channel();
        let how = match follow::start(path, sender.clone(), None) {
            Ok(how) => how,
            Err(why) => match follow::start(path, sender, Some(POLL)) {
                Ok(how) => format!("{how} ({why})"),
                // Nothing to watch with at all: `changed` returns each second, and the caller
                // compares the file's identity, as a poll does; `-v` says why.
                Err(also) => format!("a look at the file each second ({why}; {also})"),
            },
        };
        Self { changes, how }
    }

    /// Returns at the next write or replacement of the file, or each second when no watcher
    /// could start.
    pub async fn changed(&mut self) {
        if self.changes.recv().await.is_none() {
            tokio::time::sleep(POLL).await;
        }
    }
}

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
