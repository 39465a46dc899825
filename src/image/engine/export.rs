//! An engine's export as it is produced: a blocking reader over the CLI's stdout or the API's
//! streamed body, and the running export behind it, which the async side owns so that a stall,
//! a failure or a signal stops the engine: the CLI is killed, the API stream dropped, and the
//! CLI's own temporary files (podman spools each layer) go with the directory we gave it.

use std::fs::File;
use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::{Buf, Bytes};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::image::registry::{Stalled, Watchdog};
use crate::plumbing::process::{self, ProcessError};

/// Chunks of the API body in flight between the async reader and the blocking consumer.
const CHANNEL_DEPTH: usize = 8;

/// A started export: `reader` goes to a blocking thread, `running` stays with the caller.
pub(super) struct Export {
    pub reader: ExportReader,
    pub running: Running,
}

/// The export's bytes; every read that brings some is progress for the watchdog.
pub(super) struct ExportReader {
    source: ReaderSource,
    watchdog: Watchdog,
    waiting: Arc<AtomicBool>,
    read: u64,
    bound: Option<ExportBound>,
}

/// The most an export may bring, from what the engine said its image holds: an engine that
/// streams on past it (junk, forever) is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ExportBound {
    /// `Size` in the engine's `image inspect`.
    pub said: u64,
    pub most: u64,
}

impl ExportBound {
    /// Room for what an archive adds to an image's bytes (a tar header and padding per file,
    /// configs, manifests) and for what an engine counts differently (compressed or not).
    pub(super) fn of(said: u64) -> Self {
        Self {
            said,
            most: said.saturating_mul(4).saturating_add(256 << 20),
        }
    }
}

impl ExportReader {
    /// Bounds what the export may bring; without, only a stall stops it.
    pub(super) fn bound(&mut self, bound: Option<ExportBound>) {
        self.bound = bound;
    }
}

enum ReaderSource {
    Api(StreamReader),
    Cli(File),
}

impl Read for ExportReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.waiting.store(true, Ordering::Relaxed);
        let read = match &mut self.source {
            ReaderSource::Api(reader) => reader.read(buf),
            ReaderSource::Cli(stdout) => stdout.read(buf),
        };
        self.waiting.store(false, Ordering::Relaxed);
        if let Ok(n) = read
            && n > 0
        {
            self.watchdog.progressed();
            self.read += n as u64;
            if let Some(bound) = self.bound
                && self.read > bound.most
            {
                return Err(io::Error::other(format!(
                    "the engine's export went on past {} MiB, though its image inspect says the image holds {} MiB; it was stopped there",
                    bound.most >> 20,
                    bound.said >> 20
                )));
            }
        }
        read
    }
}

/// The engine's side of a running export. Dropping it stops the engine.
pub(super) struct Running {
    watchdog: Watchdog,
    /// The reader is waiting for the engine (not for the registry behind it).
    waiting: Arc<AtomicBool>,
    process: Option<SaveProcess>,
    body: Option<JoinHandle<()>>,
}

/// `ENGINE image save NAME` writing to our pipe.
struct SaveProcess {
    program: String,
    running: process::Running,
}

impl Export {
    pub(super) fn from_api(reader: StreamReader, body: JoinHandle<()>, watchdog: Watchdog) -> Self {
        let waiting = Arc::new(AtomicBool::new(false));
        Self {
            reader: ExportReader {
                source: ReaderSource::Api(reader),
                watchdog: watchdog.clone(),
                waiting: Arc::clone(&waiting),
                read: 0,
                bound: None,
            },
            running: Running {
                watchdog,
                waiting,
                process: None,
                body: Some(body),
            },
        }
    }

    pub(super) fn from_cli(
        program: &str,
        mut running: process::Running,
        watchdog: Watchdog,
    ) -> io::Result<Self> {
        let Some(stdout) = running.take_stdout()? else {
            return Err(io::Error::other("the engine's stdout was not captured"));
        };
        let waiting = Arc::new(AtomicBool::new(false));
        Ok(Self {
            reader: ExportReader {
                source: ReaderSource::Cli(stdout),
                watchdog: watchdog.clone(),
                waiting: Arc::clone(&waiting),
                read: 0,
                bound: None,
            },
            running: Running {
                watchdog,
                waiting,
                process: Some(SaveProcess {
                    program: program.to_string(),
                    running,
                }),
                body: None,
            },
        })
    }
}

impl Running {
    /// Runs `work` (the blocking pass over the reader) until it ends, or until the export
    /// brought no bytes for the stall bound while the pass waited for it. Time the pass spends
    /// waiting on the registry is the upload's to bound, not the engine's.
    pub(super) async fn bound<F: std::future::Future + Unpin>(
        &self,
        mut work: F,
    ) -> Result<F::Output, Stalled> {
        loop {
            match self.watchdog.bound(&mut work).await {
                Err(stalled) if self.waiting.load(Ordering::Relaxed) => return Err(stalled),
                Err(_) => self.watchdog.progressed(),
                Ok(done) => return Ok(done),
            }
        }
    }

    /// Stops the engine now, and waits until it is gone: the reader then meets the end of its
    /// input.
    pub(super) async fn stop(&mut self) {
        if let Some(body) = self.body.take() {
            body.abort();
        }
        if let Some(mut process) = self.process.take() {
            process.running.stop().await;
        }
    }

    /// After the reader met its end: a CLI that exits non-zero failed, whatever it printed, and
    /// what it said on stderr is the reason. The wait for its exit is bounded like the export.
    pub(super) async fn finish(mut self) -> Result<(), Ended> {
        let Some(SaveProcess { program, running }) = self.process.take() else {
            return Ok(());
        };
        let output = match running.wait(&|_| {}).await {
            Ok(output) => output,
            Err(ProcessError::TimedOut { .. } | ProcessError::LeftOpen { .. }) => {
                return Err(Ended::Failed(format!(
                    "`{program} image save` wrote its output but did not exit"
                )));
            }
            Err(err) => return Err(Ended::Failed(err.to_string())),
        };
        if output.status.success() {
            return Ok(());
        }
        let said = format!(
            "`{program} image save` failed ({}): {}",
            output.status,
            output.stderr_text().trim()
        );
        Err(if died_of_sigpipe(&output.status) {
            Ended::CutOff(said)
        } else {
            Ended::Failed(said)
        })
    }
}

/// How an engine's export ended when it did not end well.
#[derive(Debug)]
pub(super) enum Ended {
    /// It failed on its own (or stalled): the reason to tell.
    Failed(String),
    /// It died writing to a pipe we had stopped reading: whatever stopped us is the reason.
    CutOff(String),
}

#[cfg(unix)]
fn died_of_sigpipe(status: &std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(13)
}

#[cfg(not(unix))]
fn died_of_sigpipe(_: &std::process::ExitStatus) -> bool {
    false
}

impl Drop for Running {
    /// Dropped mid-way (a signal): the body stops, and the CLI is killed as its run drops
    /// (reaped at exit, its scratch folder removed once it is gone).
    fn drop(&mut self) {
        if let Some(body) = self.body.take() {
            body.abort();
        }
    }
}

/// A blocking `Read` over chunks an async task sends.
pub(super) struct StreamReader {
    receiver: mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
}

impl StreamReader {
    pub(super) fn new() -> (Self, mpsc::Sender<io::Result<Bytes>>) {
        let (sender, receiver) = mpsc::channel(CHANNEL_DEPTH);
        let reader = Self {
            receiver,
            current: Bytes::new(),
        };
        (reader, sender)
    }
}

impl Read for StreamReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.receiver.blocking_recv() {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(err)) => return Err(err),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current.advance(n);
        Ok(n)
    }
}
