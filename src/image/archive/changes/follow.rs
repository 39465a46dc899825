//! What `push --watch` watches for one path, through `notify`, and what each event means: the
//! path's folder (or, while that is missing, the nearest folder that exists and the next name
//! down) and, when the path is a symlink, the same for where it points. A name on the way made,
//! removed or moved, or a watched folder gone, arms the watch afresh for the path as it is now.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self as std_mpsc, RecvTimeoutError};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{
    Config, Event, EventKind, PollWatcher, RecommendedWatcher, RecursiveMode, Watcher, WatcherKind,
};
use tokio::sync::mpsc;

/// How often the thread, while nothing happens, checks that its `FileWatch` is still there.
const CHECK: Duration = Duration::from_secs(1);
/// The first pause before watching afresh when a folder went as it was being watched (doubled
/// up to [`CHECK`] while that goes on).
const REARM_FIRST: Duration = Duration::from_millis(10);

/// A folder watched, and the name in it that matters.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Spot {
    dir: PathBuf,
    name: OsString,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// The name we watch was written.
    Name,
    /// A name on the way was made, removed or moved, or a watched folder went: watch afresh.
    Layout,
}

/// Watches `path` on a thread of its own, sending on `sender` at each change, until `sender`'s
/// receiver is dropped: with the system's watcher, or with notify's look every `poll`. Returns
/// how, for `-v` (`inotify on /home/me/build`).
pub(super) fn start(
    path: &Path,
    sender: mpsc::UnboundedSender<()>,
    poll: Option<Duration>,
) -> Result<String, String> {
    let (events, received) = std_mpsc::channel();
    let handler = move |event: notify::Result<Event>| {
        let _ = events.send(event);
    };
    let (mut watcher, kind): (Box<dyn Watcher + Send>, _) = match poll {
        None => (
            Box::new(RecommendedWatcher::new(handler, Config::default()).map_err(text)?),
            RecommendedWatcher::kind(),
        ),
        Some(every) => (
            Box::new(
                PollWatcher::new(handler, Config::default().with_poll_interval(every))
                    .map_err(text)?,
            ),
            PollWatcher::kind(),
        ),
    };
    let mut spots = arm(watcher.as_mut(), path)?;
    let how = match kind {
        WatcherKind::PollWatcher => format!("a look at {} each second", spots[0].dir.display()),
        kind => format!("{} on {}", kind_name(kind), spots[0].dir.display()),
    };
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        loop {
            let change = match received.recv_timeout(CHECK) {
                Ok(Ok(event)) => classify(&event, &spots),
                // The watcher lost events or a watch: look afresh.
                Ok(Err(_)) => Some(Change::Layout),
                Err(RecvTimeoutError::Timeout) if sender.is_closed() => return,
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            let Some(change) = change else {
                continue;
            };
            if change == Change::Layout {
                for spot in &spots {
                    let _ = watcher.unwatch(&spot.dir);
                }
                match rearm(watcher.as_mut(), &path, &sender) {
                    Some(again) => spots = again,
                    None => return,
                }
            }
            if sender.send(()).is_err() {
                return;
            }
        }
    });
    Ok(how)
}

fn text(err: notify::Error) -> String {
    err.to_string()
}

fn kind_name(kind: WatcherKind) -> &'static str {
    match kind {
        WatcherKind::Inotify => "inotify",
        WatcherKind::Fsevent => "FSEvents",
        WatcherKind::Kqueue => "kqueue",
        WatcherKind::ReadDirectoryChangesWatcher => "ReadDirectoryChangesW",
        _ => "notify",
    }
}

/// Watches the folders `path` goes through now.
fn arm(watcher: &mut dyn Watcher, path: &Path) -> Result<Vec<Spot>, String> {
    let spots = spots(path);
    for spot in &spots {
        watcher
            .watch(&spot.dir, RecursiveMode::NonRecursive)
            .map_err(|err| format!("watching {}: {err}", spot.dir.display()))?;
    }
    Ok(spots)
}

/// Watches the folders `path` goes through now, again and again while that fails: a folder can
/// go between being found and being watched (`rm -rf build` under way), and the next look finds
/// its parent. A failure that lasts (no inotify watch left, a folder that may not be read) does
/// not leave the watch deaf: each try a [`CHECK`] apart also tells the receiver to look at the
/// file itself, as a poll would. `None` once the `FileWatch` is dropped.
fn rearm(
    watcher: &mut dyn Watcher,
    path: &Path,
    sender: &mpsc::UnboundedSender<()>,
) -> Option<Vec<Spot>> {
    let mut pause = REARM_FIRST;
    loop {
        match arm(watcher, path) {
            Ok(spots) => return Some(spots),
            Err(_) if sender.is_closed() => return None,
            Err(_) => {
                std::thread::sleep(pause);
                if pause == CHECK && sender.send(()).is_err() {
                    return None;
                }
                pause = (pause * 2).min(CHECK);
            }
        }
    }
}

/// What `event` means for the spots watched; `None`: nothing of ours.
fn classify(event: &Event, spots: &[Spot]) -> Option<Change> {
    if event.need_rescan() {
        return Some(Change::Layout);
    }
    let moved_or_gone = matches!(
        event.kind,
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
    );
    let written = matches!(
        event.kind,
        EventKind::Modify(_) | EventKind::Access(AccessKind::Close(AccessMode::Write))
    );
    let mut change = None;
    for path in &event.paths {
        for spot in spots {
            if *path == spot.dir {
                if moved_or_gone {
                    return Some(Change::Layout);
                }
            } else if path.parent() == Some(spot.dir.as_path())
                && path.file_name() == Some(spot.name.as_os_str())
            {
                if moved_or_gone {
                    return Some(Change::Layout);
                }
                if written {
                    change = Some(Change::Name);
                }
            }
        }
    }
    change
}

/// The folders to watch, each with the name in it that matters: the path's own folder, or while
/// that is missing the nearest folder that exists and the next name down; and, when the path is
/// a symlink, the same for where it points (resolved to the end).
fn spots(path: &Path) -> Vec<Spot> {
    let mut spots = vec![nearest(path)];
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
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

/// The path's folder and its name; while the folder is missing, the nearest one that exists and
/// the name under it on the way down. The folder is named as the system's watcher names it in
/// its events (resolved on unix: FSEvents reports `/private/var` for `/var`).
fn nearest(path: &Path) -> Spot {
    let mut name = path.file_name().map(OsString::from).unwrap_or_default();
    let mut dir = super::parent(path);
    while !dir.is_dir() {
        name = dir.file_name().map(OsString::from).unwrap_or_default();
        dir = match dir.parent() {
            Some(up) if !up.as_os_str().is_empty() => up.to_path_buf(),
            _ if dir.is_absolute() => dir
                .ancestors()
                .last()
                .map_or(dir.clone(), Path::to_path_buf),
            _ => PathBuf::from("."),
        };
        if dir.parent().is_none() || dir == Path::new(".") {
            break;
        }
    }
    // Windows' watcher names events by the folder as given; the others by the folder resolved.
    #[cfg(not(windows))]
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    Spot { dir, name }
}

#[cfg(test)]
mod tests;
