//! Blob bytes from the archive's blocking readers to an async upload body: read, optionally
//! compress, and hand over in bounded chunks so memory stays flat whatever the blob size.

use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use tokio::sync::mpsc;

use crate::delivery::push::pipeline::progress::BlobProgress;

/// Bytes read per chunk; with `CHANNEL_DEPTH` this bounds the memory of one upload.
const CHUNK: usize = 256 * 1024;
const CHANNEL_DEPTH: usize = 4;

/// How uncompressed layer bytes are re-encoded on the way out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    AsStored,
    Gzip,
    Zstd,
}

/// Where an upload body's own failure is kept: a failed upload whose source failed is the
/// archive's fault, whatever the HTTP client made of the aborted request.
#[derive(Debug, Clone, Default)]
pub(crate) struct SourceFailure(Arc<Mutex<Option<io::Error>>>);

impl SourceFailure {
    /// The error the source ended with, if it failed.
    pub(crate) fn take(&self) -> Option<io::Error> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }

    /// Keeps `err` and returns a copy of it for the HTTP client.
    fn keep(&self, err: io::Error) -> io::Error {
        let copy = io::Error::new(err.kind(), err.to_string());
        *self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(err);
        copy
    }
}

/// Streams `reader` (run on a blocking thread) as upload chunks, encoded per `encoding`.
/// A read error (a failed verification, a truncated archive) ends the stream with that error,
/// which aborts the upload before the registry commits it, and is kept in the returned
/// `SourceFailure`.
pub(crate) fn body(
    reader: impl Read + Send + 'static,
    encoding: Encoding,
    progress: BlobProgress,
) -> (
    impl Stream<Item = io::Result<Bytes>> + Send + 'static,
    SourceFailure,
) {
    let (sink, body) = channel();
    let failure = SourceFailure::default();
    let kept = failure.clone();
    tokio::task::spawn_blocking(move || encode_into(reader, sink, encoding, &progress, &kept));
    (body, failure)
}

/// Copies `reader` into `sink`, encoded per `encoding`, and flushes the last chunk. A read error
/// ends the body with that error (kept in `failure`), which aborts the upload before the
/// registry commits it; the caller gets its text. An upload that stops reading (the connection
/// was reset, the registry went away) is not the source's failure and is not kept: the
/// request's own error says what happened, and whether to try again.
pub(crate) fn encode_into(
    reader: impl Read,
    mut sink: ChannelWriter,
    encoding: Encoding,
    progress: &BlobProgress,
    failure: &SourceFailure,
) -> io::Result<()> {
    let sender = sink.sender.clone();
    let reader = Watched {
        inner: reader,
        failure,
    };
    // An encoder's `finish` writes its last block and trailer into the sink without flushing
    // it: the sink is flushed last, by hand, or the blob goes out truncated.
    let result = match encoding {
        Encoding::AsStored => pump(reader, &mut sink, progress).and_then(|()| sink.flush()),
        Encoding::Gzip => {
            // Level 1: on loopback the wire is never the bottleneck; level 6 costs 3x the CPU.
            let mut encoder = flate2::write::GzEncoder::new(sink, flate2::Compression::fast());
            pump(reader, &mut encoder, progress).and_then(|()| encoder.finish()?.flush())
        }
        Encoding::Zstd => zstd::stream::write::Encoder::new(sink, 1).and_then(|mut encoder| {
            pump(reader, &mut encoder, progress)?;
            encoder.finish()?.flush()
        }),
    };
    result.map_err(|err| {
        let told = io::Error::new(err.kind(), err.to_string());
        // The receiver may be gone (the upload failed first); nothing more to tell then.
        let _ = sender.blocking_send(Err(io::Error::new(err.kind(), err.to_string())));
        told
    })
}

/// The source reader, whose failures (and only those) are kept in `failure`.
struct Watched<'a, R> {
    inner: R,
    failure: &'a SourceFailure,
}

impl<R: Read> Read for Watched<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Err(err) if err.kind() != io::ErrorKind::Interrupted => Err(self.failure.keep(err)),
            read => read,
        }
    }
}

/// A writer whose bytes become an upload body, for content pushed at us (an engine's export)
/// rather than pulled from a reader. Dropping the writer ends the body.
pub(crate) fn channel() -> (
    ChannelWriter,
    impl Stream<Item = io::Result<Bytes>> + Send + 'static,
) {
    let (sender, receiver) = mpsc::channel(CHANNEL_DEPTH);
    let writer = ChannelWriter {
        sender,
        buffer: BytesMut::with_capacity(CHUNK),
    };
    let body = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|item| (item, receiver))
    });
    (writer, body)
}

/// Copies `reader` into `out`, counting source bytes on the progress bar. Does not flush: a
/// flushed encoder would end a block early for nothing.
fn pump(mut reader: impl Read, out: &mut impl Write, progress: &BlobProgress) -> io::Result<()> {
    let mut buffer = vec![0; CHUNK];
    loop {
        let read = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        out.write_all(&buffer[..read])?;
        progress.advance(read as u64);
    }
    Ok(())
}

/// A `Write` that sends full chunks down the channel (blocking when the upload lags).
pub(crate) struct ChannelWriter {
    sender: mpsc::Sender<io::Result<Bytes>>,
    buffer: BytesMut,
}

impl ChannelWriter {
    fn send_buffer(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = self.buffer.split().freeze();
        self.buffer.reserve(CHUNK);
        self.sender
            .blocking_send(Ok(chunk))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the upload stopped reading"))
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = CHUNK - self.buffer.len();
        let taken = data.len().min(room);
        self.buffer.extend_from_slice(&data[..taken]);
        if self.buffer.len() >= CHUNK {
            self.send_buffer()?;
        }
        Ok(taken)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send_buffer()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use std::io::Cursor;

    async fn collect(stream: impl Stream<Item = io::Result<Bytes>>) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut stream = std::pin::pin!(stream);
        while let Some(chunk) = stream.next().await {
            out.extend_from_slice(&chunk?);
        }
        Ok(out)
    }

    fn sample() -> Vec<u8> {
        (0..1_000_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect()
    }

    /// Bytes no encoder can shrink (xorshift64).
    fn noise(len: usize) -> Vec<u8> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        (0..len / 8)
            .flat_map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()
            })
            .collect()
    }

    fn no_progress() -> BlobProgress {
        super::super::progress::Progress::hidden().blob(String::new(), 0)
    }

    #[tokio::test]
    async fn as_stored_passes_bytes_through() {
        let data = sample();
        let out =
            collect(body(Cursor::new(data.clone()), Encoding::AsStored, no_progress()).0).await;
        assert_eq!(out.unwrap(), data);
    }

    #[tokio::test]
    async fn gzip_and_zstd_round_trip() {
        let data = sample();
        let gz = collect(body(Cursor::new(data.clone()), Encoding::Gzip, no_progress()).0).await;
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(&gz.unwrap()[..])
            .read_to_end(&mut unzipped)
            .unwrap();
        assert_eq!(unzipped, data);
        let zst = collect(body(Cursor::new(data.clone()), Encoding::Zstd, no_progress()).0).await;
        assert_eq!(zstd::decode_all(&zst.unwrap()[..]).unwrap(), data);
    }

    #[tokio::test]
    async fn a_read_error_ends_the_stream_with_that_error_and_is_kept() {
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "diff_id mismatch",
                ))
            }
        }
        let (stream, failure) = body(Failing, Encoding::Gzip, no_progress());
        let err = collect(stream).await.unwrap_err();
        assert_eq!(err.to_string(), "diff_id mismatch");
        let kept = failure.take().expect("the source's failure is kept");
        assert_eq!(kept.kind(), io::ErrorKind::InvalidData);
        assert_eq!(kept.to_string(), "diff_id mismatch");
    }

    #[tokio::test]
    async fn an_upload_that_stops_reading_is_not_kept_as_the_source_failing() {
        for encoding in [Encoding::AsStored, Encoding::Gzip, Encoding::Zstd] {
            // Far more than the channel holds, even compressed: the writer is still sending
            // when the body goes.
            let (stream, failure) = body(Cursor::new(noise(8 << 20)), encoding, no_progress());
            let mut stream = Box::pin(stream);
            stream.next().await.expect("a first chunk").unwrap();
            drop(stream);
            // The writer thread ends once it meets the closed channel; wait for it to.
            let done = tokio::time::timeout(std::time::Duration::from_secs(30), async {
                while Arc::strong_count(&failure.0) > 1 {
                    tokio::task::yield_now().await;
                }
            })
            .await;
            assert!(done.is_ok(), "{encoding:?}: the writer did not end");
            assert!(failure.take().is_none(), "{encoding:?}");
        }
    }
}
