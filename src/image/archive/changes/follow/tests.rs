use notify::event::{CreateKind, DataChange, RemoveKind, RenameMode};

use super::*;

fn spot(dir: &Path, name: &str) -> Spot {
    Spot {
        dir: std::fs::canonicalize(dir).unwrap(),
        name: name.into(),
    }
}

fn event(kind: EventKind, path: PathBuf) -> Event {
    Event::new(kind).add_path(path)
}

#[test]
fn a_missing_folder_is_watched_from_the_nearest_one_that_exists() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        spots(&dir.path().join("dist/img.tar")),
        [spot(dir.path(), "dist")]
    );
    std::fs::create_dir(dir.path().join("dist")).unwrap();
    assert_eq!(
        spots(&dir.path().join("dist/img.tar")),
        [spot(&dir.path().join("dist"), "img.tar")]
    );
}

#[test]
fn a_symlink_is_watched_where_it_is_and_where_it_points() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    std::fs::write(dir.path().join("out/v1.tar"), b"x").unwrap();
    std::os::unix::fs::symlink("out/v1.tar", dir.path().join("img.tar")).unwrap();
    assert_eq!(
        spots(&dir.path().join("img.tar")),
        [
            spot(dir.path(), "img.tar"),
            spot(&dir.path().join("out"), "v1.tar")
        ]
    );
}

#[test]
fn events_on_the_name_and_the_way_to_it_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let spots = [spot(dir.path(), "img.tar")];
    let watched = &spots[0].dir;
    let ours = watched.join("img.tar");
    let written = [
        EventKind::Modify(ModifyKind::Data(DataChange::Any)),
        EventKind::Access(AccessKind::Close(AccessMode::Write)),
    ];
    for kind in written {
        assert_eq!(
            classify(&event(kind, ours.clone()), &spots),
            Some(Change::Name)
        );
    }
    let moved = [
        EventKind::Create(CreateKind::File),
        EventKind::Remove(RemoveKind::File),
        EventKind::Modify(ModifyKind::Name(RenameMode::To)),
    ];
    for kind in moved {
        assert_eq!(
            classify(&event(kind, ours.clone()), &spots),
            Some(Change::Layout)
        );
    }
    // The watched folder itself removed: watch afresh.
    let gone = event(EventKind::Remove(RemoveKind::Folder), watched.clone());
    assert_eq!(classify(&gone, &spots), Some(Change::Layout));
    // Another file in the folder, or our own reading of the archive: nothing.
    let other = event(EventKind::Create(CreateKind::File), watched.join("other"));
    assert_eq!(classify(&other, &spots), None);
    let read = event(EventKind::Access(AccessKind::Open(AccessMode::Read)), ours);
    assert_eq!(classify(&read, &spots), None);
    let rescan = Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan);
    assert_eq!(classify(&rescan, &spots), Some(Change::Layout));
}

/// A watcher that refuses every watch, as inotify does once no watch is left (ENOSPC).
struct Exhausted;

impl Watcher for Exhausted {
    fn new<F: notify::EventHandler>(_: F, _: Config) -> notify::Result<Self> {
        Ok(Self)
    }
    fn watch(&mut self, _: &Path, _: RecursiveMode) -> notify::Result<()> {
        Err(notify::Error::new(notify::ErrorKind::MaxFilesWatch))
    }
    fn unwatch(&mut self, _: &Path) -> notify::Result<()> {
        Ok(())
    }
    fn kind() -> WatcherKind {
        WatcherKind::NullWatcher
    }
}

#[test]
fn a_watch_that_cannot_be_armed_again_has_the_file_looked_at_each_second() {
    let dir = tempfile::tempdir().unwrap();
    let (sender, mut nudges) = mpsc::unbounded_channel();
    let path = dir.path().join("img.tar");
    let trying = std::thread::spawn(move || rearm(&mut Exhausted, &path, &sender));
    // Doubling from 10 ms reaches the full second after 1.27 s of tries; then each second.
    let started = std::time::Instant::now();
    let mut told = 0;
    while told < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "told {told} times"
        );
        match nudges.try_recv() {
            Ok(()) => told += 1,
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    // Once the watch is dropped, the tries end.
    drop(nudges);
    assert_eq!(trying.join().unwrap(), None);
}
