//! The table of programs we started and have not yet waited for: how one is killed (its process
//! group, when it leads one), and the reaping at exit, so that when the tool exits nothing it
//! started is still running.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a killed program is given to be gone. SIGKILL cannot be caught; a program that
/// outlives this is stuck in the kernel (uninterruptible I/O: a hung NFS or FUSE mount).
pub const BOUND: Duration = Duration::from_secs(5);

/// A program started and not yet waited for, by pid.
struct Entry {
    command: String,
    own_group: bool,
    /// What may go only once the program is gone (the scratch folder it writes into).
    _kept: Vec<Kept>,
}

/// Something a run keeps until its program is gone.
pub(super) type Kept = Box<dyn Send>;

static STARTED: Mutex<BTreeMap<u32, Entry>> = Mutex::new(BTreeMap::new());

fn table() -> MutexGuard<'static, BTreeMap<u32, Entry>> {
    STARTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One started program's entry in the table. While it is there, its pid (and its group's id)
/// is still ours: an unreaped child's pid is never given to another process.
#[derive(Debug)]
pub(super) struct Started {
    pid: u32,
}

/// Notes a program just started; `own_group`: it leads a process group of its own; `kept` is
/// dropped once it is gone.
pub(super) fn started(pid: u32, own_group: bool, command: &str, kept: Vec<Kept>) -> Started {
    table().insert(
        pid,
        Entry {
            command: command.to_string(),
            own_group,
            _kept: kept,
        },
    );
    Started { pid }
}

impl Started {
    /// Sends SIGKILL to the program and, when it leads a group, to everything in that group.
    pub(super) fn kill(&self) {
        let own_group = table().get(&self.pid).is_some_and(|entry| entry.own_group);
        kill(self.pid, own_group);
    }

    /// It has been waited for: what it kept goes now (outside the table's lock).
    pub(super) fn reaped(self) {
        let entry = table().remove(&self.pid);
        drop(entry);
    }
}

/// Kills every program still in the table (a run dropped mid-way left it) and waits, at most
/// [`BOUND`] in all, until each is gone. Returns the commands of those still there after it.
pub(super) async fn all() -> Vec<String> {
    let pids: Vec<(u32, bool)> = table()
        .iter()
        .map(|(pid, entry)| (*pid, entry.own_group))
        .collect();
    for (pid, own_group) in &pids {
        kill(*pid, *own_group);
    }
    let deadline = Instant::now() + BOUND;
    loop {
        let left: Vec<u32> = table().keys().copied().collect();
        for pid in left {
            if gone(pid) {
                let entry = table().remove(&pid);
                drop(entry);
            }
        }
        if table().is_empty() || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    table()
        .iter()
        .map(|(pid, entry)| format!("`{}` (pid {pid})", entry.command))
        .collect()
}

#[cfg(unix)]
fn kill(pid: u32, own_group: bool) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    let target = if own_group { -pid } else { pid };
    // SAFETY: kill(2) with a pid (or a group id) we own: the child is not yet reaped, so its
    // pid, and the group it leads, belong to no other process.
    unsafe {
        libc::kill(target, libc::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill(_: u32, _: bool) {
    // Elsewhere tokio's `kill_on_drop` and `start_kill` stop the program itself.
}

/// Reaps `pid` if it has ended; true when it is no longer ours to wait for (reaped here, or
/// already by its owner).
#[cfg(unix)]
fn gone(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    let mut status = 0;
    // SAFETY: waitpid(2) on a child of ours, without blocking.
    let waited = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    waited != 0
}

#[cfg(not(unix))]
fn gone(_: u32) -> bool {
    true
}
