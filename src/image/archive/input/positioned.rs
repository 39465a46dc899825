//! Reads at an offset of a file without a shared cursor, so blob readers on several threads can share
//! one handle: `pread` on Unix, `seek_read` on Windows. The only platform-specific file I/O we do.
//!
//! Windows' `seek_read`, unlike `pread`, moves the handle's cursor as it reads. So no reader of an
//! archive uses that cursor at all: a sequential reader over a shared file is an [`At`], which keeps a
//! position of its own and reads through [`read_at`] (the tar index, the decompression spool).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

/// Reads up to `buf.len()` bytes at `offset`; 0 means the file ends there.
pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        std::os::windows::fs::FileExt::seek_read(file, buf, offset)
    }
}

/// Fills `buf` from `offset`, or fails with `UnexpectedEof` where the file ends first.
pub(crate) fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match read_at(file, buf, offset) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file ends before the bytes wanted",
                ));
            }
            Ok(read) => {
                buf = &mut buf[read..];
                offset += read as u64;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// A sequential reader over `file` with a cursor of its own: reading or seeking it never reads or
/// moves the handle's cursor, and no other read of the handle moves it.
pub(crate) struct At<'a> {
    file: &'a File,
    position: u64,
}

impl<'a> At<'a> {
    /// Reads `file` from its first byte, wherever the handle's cursor is.
    pub(crate) fn start(file: &'a File) -> Self {
        Self { file, position: 0 }
    }
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = read_at(self.file, buf, self.position)?;
        self.position += read as u64;
        Ok(read)
    }
}

impl Seek for At<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let base = match to {
            SeekFrom::Start(offset) => {
                self.position = offset;
                return Ok(offset);
            }
            SeekFrom::Current(delta) => (self.position, delta),
            SeekFrom::End(delta) => (self.file.metadata()?.len(), delta),
        };
        self.position = base.0.checked_add_signed(base.1).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a seek before the start of the file",
            )
        })?;
        Ok(self.position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_at_offsets_and_reports_the_end() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"0123456789").unwrap();
        let mut four = [0u8; 4];
        read_exact_at(&file, &mut four, 3).unwrap();
        assert_eq!(&four, b"3456");
        // The cursor is not shared: the same read again gives the same bytes.
        read_exact_at(&file, &mut four, 3).unwrap();
        assert_eq!(&four, b"3456");
        assert_eq!(read_at(&file, &mut four, 8).unwrap(), 2);
        assert_eq!(read_at(&file, &mut four, 10).unwrap(), 0);
        let err = read_exact_at(&file, &mut four, 8).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn a_sequential_reader_keeps_its_own_cursor_wherever_the_handle_is() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"0123456789").unwrap();
        // The handle's cursor is at the end (as Windows' `seek_read` leaves it after a read).
        let mut reader = At::start(&file);
        let mut three = [0u8; 3];
        reader.read_exact(&mut three).unwrap();
        assert_eq!(&three, b"012");
        // A positioned read between two sequential ones does not move the reader.
        (&file).seek(SeekFrom::Start(7)).unwrap();
        read_exact_at(&file, &mut three, 5).unwrap();
        reader.read_exact(&mut three).unwrap();
        assert_eq!(&three, b"345");
        assert_eq!(reader.seek(SeekFrom::Current(2)).unwrap(), 8);
        assert_eq!(reader.seek(SeekFrom::End(-1)).unwrap(), 9);
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, b"9");
        assert!(reader.seek(SeekFrom::Current(-20)).is_err());
        // The handle's own cursor was never read from nor moved by the reader.
        assert_eq!((&file).stream_position().unwrap(), 7);
    }
}
