//! The store's layer lock, held for reading as podman holds it while a layer is read:
//! containers-storage's writers (`podman rmi`, a build committing a layer) take `layers.lock`
//! for writing, so while we hold it for reading no layer we read is removed under us.

use std::fs::File;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a writer (a build committing a layer, an `rmi`) may keep us waiting.
const WAIT_LIMIT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(20);

/// A read lock on one `layers.lock`, released when dropped (the file is closed).
#[derive(Debug)]
pub(crate) struct ReadLock {
    _file: File,
}

impl ReadLock {
    /// Locks `path` for reading, waiting at most a minute for a writer. `None` where there is no
    /// lock file we may open (a read-only additional store: nobody writes there).
    pub(crate) fn take(path: &Path) -> io::Result<Option<Self>> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(_) => return Ok(None),
        };
        let deadline = Instant::now() + WAIT_LIMIT;
        loop {
            match try_read_lock(&file) {
                Ok(()) => return Ok(Some(Self { _file: file })),
                Err(err) if is_busy(&err) && Instant::now() < deadline => {
                    std::thread::sleep(POLL);
                }
                Err(err) if is_busy(&err) => {
                    return Err(io::Error::other(format!(
                        "{} stayed locked for writing for over {} s: another podman or buildah is changing the store",
                        path.display(),
                        WAIT_LIMIT.as_secs()
                    )));
                }
                Err(err) => {
                    return Err(io::Error::other(format!(
                        "{} cannot be locked for reading: {err}",
                        path.display()
                    )));
                }
            }
        }
    }
}

fn is_busy(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(code) if code == libc::EAGAIN || code == libc::EACCES)
}

/// An open-file-description lock: it conflicts with containers-storage's fcntl locks, and, unlike
/// a process-wide POSIX lock, closing another descriptor of the file does not release it.
#[cfg(target_os = "linux")]
fn try_read_lock(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: `flock` is plain data; all-zero is a valid value, then filled in.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_RDLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    // l_start 0, l_len 0: the whole file, as containers-storage locks it.
    // SAFETY: the descriptor is open for as long as `file` lives; `lock` outlives the call.
    let done = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) };
    if done == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// containers-storage runs on Linux only: elsewhere there is no local store to lock.
#[cfg(not(target_os = "linux"))]
fn try_read_lock(_file: &File) -> io::Result<()> {
    Ok(())
}
