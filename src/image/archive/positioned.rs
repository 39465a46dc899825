//! Reads at an offset of a file without a shared cursor, so blob readers on several threads can share
//! one handle: `pread` on Unix, `seek_read` on Windows. The only platform-specific file I/O we do.

use std::fs::File;
use std::io;

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
}
