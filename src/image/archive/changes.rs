//! Noticing that an archive at a path was written or replaced, for `push --watch`: inotify on
//! its directory (a `mv` over it is a move into the directory, a rewrite a close after writing),
//! followed as `tail -F` follows a path: a folder removed and made again (`rm -rf build`), a
//! symlink whose target is replaced (Bazel's `bazel-bin`, Nix's `result`), a file not there yet.
//! It costs nothing while nothing happens; where inotify is not there, a look at the file's
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
    use std::ffi::{CString, OsString};
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};

    use tokio::sync::mpsc;

    /// What is watched for one name: a file or folder named `name` in `dir`.
    struct Spot {
        wd: i32,
        name: OsString,
    }

    /// Watches, on a thread of its own, every folder the path goes through that can change what
    /// it names: its folder (or, while that is missing, the nearest one that exists), and where
    /// a symlink at the path points. After any change to those, it watches them afresh.
    pub(super) fn start(path: &Path, sender: mpsc::UnboundedSender<()>) -> Result<(), String> {
        let path = path.to_path_buf();
        // The first arming is checked here, so that a system without inotify falls back.
        let armed = Armed::new(&path)?;
        std::thread::spawn(move || {
            let mut armed = armed;
            loop {
                match armed.next_change() {
                    Change::Name => {}
                    Change::Layout => match Armed::new(&path) {
                        Ok(again) => armed = again,
                        Err(_) => return,
                    },
                    Change::Ended => return,
                }
                if sender.send(()).is_err() {
                    return;
                }
            }
        });
        Ok(())
    }

    enum Change {
        /// A name we watch was written, moved in, made or removed.
        Name,
        /// A watched folder went, or a name on the way to the file changed: watch afresh.
        Layout,
        Ended,
    }

    struct Armed {
        fd: i32,
        spots: Vec<Spot>,
        buffer: Vec<u8>,
    }

    impl Drop for Armed {
        fn drop(&mut self) {
            // SAFETY: the descriptor is ours and used no more.
            unsafe { libc::close(self.fd) };
        }
    }

    impl Armed {
        fn new(path: &Path) -> Result<Self, String> {
            // SAFETY: a plain system call; the descriptor is owned by the value returned.
            let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
            if fd < 0 {
                return Err(format!("inotify: {}", std::io::Error::last_os_error()));
            }
            let mut armed = Self {
                fd,
                spots: Vec::new(),
                buffer: vec![0u8; 64 * 1024],
            };
            let mask = libc::IN_CLOSE_WRITE
                | libc::IN_MOVED_TO
                | libc::IN_MOVED_FROM
                | libc::IN_CREATE
                | libc::IN_DELETE
                | libc::IN_DELETE_SELF
                | libc::IN_MOVE_SELF;
            for (dir, name) in spots(path) {
                let dir = CString::new(dir.as_os_str().as_bytes())
                    .map_err(|_| "the path holds a NUL byte".to_string())?;
                // SAFETY: `dir` is a NUL-terminated path; `fd` is ours.
                let wd = unsafe { libc::inotify_add_watch(fd, dir.as_ptr(), mask) };
                if wd < 0 {
                    return Err(format!("inotify: {}", std::io::Error::last_os_error()));
                }
                armed.spots.push(Spot { wd, name });
            }
            Ok(armed)
        }

        /// Blocks until something we watch changes.
        fn next_change(&mut self) -> Change {
            const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
            loop {
                // SAFETY: reading into a buffer we own, of its length.
                let read = unsafe {
                    libc::read(self.fd, self.buffer.as_mut_ptr().cast(), self.buffer.len())
                };
                let Ok(read) = usize::try_from(read) else {
                    return Change::Ended;
                };
                if read == 0 {
                    return Change::Ended;
                }
                let mut change = None;
                let mut at = 0usize;
                while at + HEADER <= read {
                    let field = |offset: usize| {
                        u32::from_ne_bytes(
                            self.buffer[at + offset..at + offset + 4]
                                .try_into()
                                .unwrap_or_default(),
                        )
                    };
                    // struct inotify_event { int wd; u32 mask; u32 cookie; u32 len; char name[]; }
                    let (wd, mask, len) = (field(0) as i32, field(4), field(12) as usize);
                    let raw = &self.buffer[at + HEADER..(at + HEADER + len).min(read)];
                    let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
                    let name = &raw[..end];
                    at += HEADER + len;
                    if mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_IGNORED) != 0 {
                        change = Some(Change::Layout);
                        continue;
                    }
                    let Some(spot) = self.spots.iter().find(|spot| spot.wd == wd) else {
                        continue;
                    };
                    if name != spot.name.as_bytes() {
                        continue;
                    }
                    // The name itself written: the file changed. Made, removed or moved: the
                    // way to it (a folder, a link's target) may have changed too.
                    let layout = mask
                        & (libc::IN_CREATE
                            | libc::IN_DELETE
                            | libc::IN_MOVED_TO
                            | libc::IN_MOVED_FROM)
                        != 0;
                    change = match (change, layout) {
                        (Some(Change::Layout), _) | (_, true) => Some(Change::Layout),
                        _ => Some(Change::Name),
                    };
                }
                if let Some(change) = change {
                    return change;
                }
            }
        }
    }

    /// The folders to watch, each with the name in it that matters: the path's own folder, or
    /// while that is missing the nearest folder that exists and the next name down; and, when
    /// the path is a symlink, the same for where it points (resolved to the end).
    fn spots(path: &Path) -> Vec<(PathBuf, OsString)> {
        let mut spots = vec![nearest(path)];
        let is_link =
            std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
        if is_link {
            let target = std::fs::canonicalize(path).ok().or_else(|| {
                let link = std::fs::read_link(path).ok()?;
                Some(super::parent(path).join(link))
            });
            if let Some(target) = target {
                spots.push(nearest(&target));
            }
        }
        spots
    }

    /// The path's folder and its name; while the folder is missing, the nearest one that exists
    /// and the name under it on the way down.
    fn nearest(path: &Path) -> (PathBuf, OsString) {
        let mut name = path.file_name().map(OsString::from).unwrap_or_default();
        let mut dir = super::parent(path);
        while !dir.is_dir() {
            name = dir.file_name().map(OsString::from).unwrap_or_default();
            dir = match dir.parent() {
                Some(up) if !up.as_os_str().is_empty() => up.to_path_buf(),
                _ if dir.is_absolute() => PathBuf::from("/"),
                _ => PathBuf::from("."),
            };
            if dir == Path::new("/") || dir == Path::new(".") {
                break;
            }
        }
        (dir, name)
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
