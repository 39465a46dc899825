//! Noticing that an archive at a path was written or replaced, for `push --watch`: inotify on
//! its directory (a `mv` over it is a move into the directory, a rewrite a close after writing),
//! which costs nothing while nothing happens; where inotify is not there, a look at the file's
//! metadata once a second. Either way the caller compares [`identity`] before pushing again.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;

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

impl FileWatch {
    /// Starts watching `path` (on a thread of its own, ended when this is dropped).
    pub fn new(path: &Path) -> Self {
        let (sender, changes) = mpsc::unbounded_channel();
        let how = match inotify::start(path, sender.clone()) {
            Ok(()) => format!("inotify on {}", parent(path).display()),
            Err(why) => {
                poll(path.to_path_buf(), sender);
                format!("a look at {} each second ({why})", path.display())
            }
        };
        Self { changes, how }
    }

    /// Returns at the next write or replacement of the file (or the next look, polling).
    pub async fn changed(&mut self) {
        if self.changes.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
}

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn poll(path: PathBuf, sender: mpsc::UnboundedSender<()>) {
    std::thread::spawn(move || {
        let mut last = identity(&path);
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let now = identity(&path);
            if now != last {
                last = now;
                if sender.send(()).is_err() {
                    return;
                }
            }
        }
    });
}

#[cfg(target_os = "linux")]
mod inotify {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    use tokio::sync::mpsc;

    /// Watches the directory for the file's name being closed after a write or moved in.
    pub(super) fn start(path: &Path, sender: mpsc::UnboundedSender<()>) -> Result<(), String> {
        let name = path
            .file_name()
            .ok_or_else(|| format!("{} names no file", path.display()))?
            .to_os_string();
        let dir = CString::new(super::parent(path).as_os_str().as_bytes())
            .map_err(|_| "the path holds a NUL byte".to_string())?;
        // SAFETY: plain system calls on a descriptor this function owns.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(format!("inotify: {}", std::io::Error::last_os_error()));
        }
        let mask = libc::IN_CLOSE_WRITE | libc::IN_MOVED_TO;
        // SAFETY: `dir` is a NUL-terminated path; `fd` is ours.
        if unsafe { libc::inotify_add_watch(fd, dir.as_ptr(), mask) } < 0 {
            let err = std::io::Error::last_os_error();
            // SAFETY: closing the descriptor opened above.
            unsafe { libc::close(fd) };
            return Err(format!("inotify: {err}"));
        }
        std::thread::spawn(move || read_events(fd, name.as_bytes(), &sender));
        Ok(())
    }

    fn read_events(fd: i32, name: &[u8], sender: &mpsc::UnboundedSender<()>) {
        const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: reading into a buffer we own, of its length.
            let read = unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
            if read <= 0 {
                break;
            }
            let mut at = 0usize;
            let mut ours = false;
            while at + HEADER <= read as usize {
                // The name's length is the header's last field: a u32 at offset 12.
                let len =
                    u32::from_ne_bytes(buffer[at + 12..at + 16].try_into().unwrap_or_default())
                        as usize;
                let raw = &buffer[at + HEADER..(at + HEADER + len).min(read as usize)];
                let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
                ours |= &raw[..end] == name;
                at += HEADER + len;
            }
            if ours && sender.send(()).is_err() {
                break;
            }
        }
        // SAFETY: the descriptor is ours and used no more.
        unsafe { libc::close(fd) };
    }
}

#[cfg(not(target_os = "linux"))]
mod inotify {
    pub(super) fn start(
        _: &std::path::Path,
        _: tokio::sync::mpsc::UnboundedSender<()>,
    ) -> Result<(), String> {
        Err("this system has no inotify".to_string())
    }
}
