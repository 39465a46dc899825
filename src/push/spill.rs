//! A layer of an engine's export on its way to the registry: written to an anonymous file as fast
//! as the engine sends it, and read back by the upload a little behind. The engine (podman spools
//! each layer before it sends it) then goes on to its next layer while this one uploads, instead
//! of waiting on the registry. The file has no name, so nothing is left behind however we stop,
//! and the writer waits when it is `MAX_LAG` ahead, so the disk never holds a whole large image.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// How far the writer may run ahead of the upload.
const MAX_LAG: u64 = 256 << 20;

#[derive(Default)]
struct State {
    written: u64,
    read: u64,
    /// The writer is gone: at its end when `failed` is `None`.
    closed: bool,
    failed: Option<String>,
    /// The reader is gone: writing on is pointless.
    abandoned: bool,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed
            .wait(guard)
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Starts a spill in `dir`: the writer for the export's side, the reader for the upload's.
pub fn spill(dir: &Path) -> io::Result<(SpillWriter, SpillReader)> {
    let file = tempfile::tempfile_in(dir)?;
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
    });
    let reader = SpillReader {
        file: file.try_clone()?,
        shared: Arc::clone(&shared),
    };
    Ok((
        SpillWriter {
            file,
            shared,
            finished: false,
        },
        reader,
    ))
}

pub struct SpillWriter {
    file: File,
    shared: Arc<Shared>,
    finished: bool,
}

impl SpillWriter {
    /// The member ended: the reader reads to here and stops.
    pub fn finish(mut self) {
        self.finished = true;
    }
}

impl Write for SpillWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        {
            let mut state = self.shared.lock();
            while !state.abandoned && state.written - state.read >= MAX_LAG {
                state = self.shared.wait(state);
            }
            if state.abandoned {
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the upload stopped reading",
                ));
            }
        }
        let at = self.shared.lock().written;
        write_all_at(&self.file, data, at)?;
        self.shared.lock().written += data.len() as u64;
        self.shared.changed.notify_all();
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for SpillWriter {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.closed = true;
        if !self.finished {
            state.failed = Some("the export stopped in the middle of this layer".to_string());
        }
        drop(state);
        self.shared.changed.notify_all();
    }
}

pub struct SpillReader {
    file: File,
    shared: Arc<Shared>,
}

impl Read for SpillReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (offset, available) = {
            let mut state = self.shared.lock();
            while state.written == state.read && !state.closed {
                state = self.shared.wait(state);
            }
            if state.written == state.read {
                return match &state.failed {
                    Some(why) => Err(io::Error::new(io::ErrorKind::UnexpectedEof, why.clone())),
                    None => Ok(0),
                };
            }
            (state.read, state.written - state.read)
        };
        let wanted = buf
            .len()
            .min(usize::try_from(available).unwrap_or(usize::MAX));
        let read = read_at(&self.file, &mut buf[..wanted], offset)?;
        self.shared.lock().read += read as u64;
        self.shared.changed.notify_all();
        Ok(read)
    }
}

impl Drop for SpillReader {
    fn drop(&mut self) {
        self.shared.lock().abandoned = true;
        self.shared.changed.notify_all();
    }
}

// Positional reads and writes: the writer and the reader share one open file, not a cursor.
#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(unix)]
fn write_all_at(file: &File, data: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, data, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

#[cfg(windows)]
fn write_all_at(file: &File, mut data: &[u8], mut offset: u64) -> io::Result<()> {
    while !data.is_empty() {
        let written = std::os::windows::fs::FileExt::seek_write(file, data, offset)?;
        if written == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        data = &data[written..];
        offset += written as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_gets_every_byte_written_then_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let (mut writer, mut reader) = spill(dir.path()).unwrap();
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let expected = data.clone();
        let reading = std::thread::spawn(move || {
            let mut out = Vec::new();
            reader.read_to_end(&mut out).map(|_| out)
        });
        for chunk in data.chunks(70_000) {
            writer.write_all(chunk).unwrap();
        }
        writer.finish();
        assert_eq!(reading.join().unwrap().unwrap(), expected);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_writer_dropped_midway_is_an_error_for_the_reader() {
        let dir = tempfile::tempdir().unwrap();
        let (mut writer, mut reader) = spill(dir.path()).unwrap();
        writer.write_all(b"half a layer").unwrap();
        drop(writer);
        let mut out = Vec::new();
        let err = reader.read_to_end(&mut out).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(out, b"half a layer");
    }

    #[test]
    fn a_reader_that_goes_away_stops_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let (mut writer, reader) = spill(dir.path()).unwrap();
        drop(reader);
        let err = writer.write_all(b"nobody reads this").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
}
