//! A started [`Run`]: its stdin fed and its output read in tasks of their own (so the pipes
//! drain while the input streams, and a grandchild holding a pipe open cannot keep us past the
//! bound), driven to its end under its [`Bound`], stopped (its process group killed, then waited
//! for) when the bound is over, and killed when it is dropped (reaped at exit by [`super::reap`]).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::reap::{self, Started};
use super::{
    Bound, MAX_LINE_BYTES, Out, Output, ProcessError, Run, Stdin, StdinWriter, TAIL_LINES,
};

/// A child's pipe we own, in blocking mode, as a file: its descriptor (its handle on Windows).
macro_rules! pipe_file {
    ($pipe:expr) => {{
        #[cfg(unix)]
        let owned = $pipe.into_owned_fd();
        #[cfg(windows)]
        let owned = $pipe.into_owned_handle();
        owned.map(File::from)
    }};
}

/// Pipe buffer for a streamed stdin.
const STREAM_BUFFER: usize = 1 << 20;

/// A program that runs. Dropping it kills the program (and its process group); the tool reaps
/// it before it exits ([`super::reap_all`]).
pub struct Running {
    command: String,
    child: Child,
    /// Its entry in the table of started programs; `None` once it is reaped.
    started: Option<Started>,
    bound: Bound,
    clock: Arc<Clock>,
    feeding: Option<JoinHandle<Fed>>,
    stdout: Reader,
    stderr: Reader,
    lines: mpsc::UnboundedReceiver<String>,
    stream: Option<ChildStdout>,
}

pub(super) fn spawn(run: Run<'_>) -> Result<Running, ProcessError> {
    let command = run.argv.to_string();
    let mut spawning = tokio::process::Command::new(run.argv.program());
    spawning.args(run.argv.args()).kill_on_drop(true);
    // A program of ours that starts its own (a shell script plugin, a loader's `docker exec`)
    // is stopped with everything it started: it leads a process group of its own. A program a
    // person may answer (our stdin inherited: an exec plugin in interactiveMode) stays in the
    // terminal's foreground group, where it can read the terminal.
    let own_group = !matches!(run.stdin, Stdin::Inherit);
    #[cfg(unix)]
    if own_group {
        spawning.process_group(0);
    }
    for (key, value) in &run.env {
        match value {
            Some(value) => spawning.env(key, value),
            None => spawning.env_remove(key),
        };
    }
    spawning
        .stdin(match run.stdin {
            Stdin::Null => Stdio::null(),
            Stdin::Inherit => Stdio::inherit(),
            Stdin::Bytes(_) | Stdin::Writer(_) => Stdio::piped(),
        })
        .stdout(stdio(run.stdout))
        .stderr(stdio(run.stderr));
    let mut child = spawning.spawn().map_err(|source| {
        if source.kind() == io::ErrorKind::NotFound {
            ProcessError::NotFound {
                command: command.clone(),
                source,
            }
        } else {
            ProcessError::Start {
                command: command.clone(),
                source,
            }
        }
    })?;
    let started = child
        .id()
        .map(|pid| reap::started(pid, own_group, &command, run.kept));
    let clock = Arc::new(Clock::new());
    let (sender, lines) = mpsc::unbounded_channel();
    let stdout_pipe = child.stdout.take();
    let (stdout, stream) = match run.stdout {
        Out::Stream => (Reader(None), stdout_pipe),
        out => (Reader::spawn(stdout_pipe, out, &clock, &sender), None),
    };
    let stderr = Reader::spawn(child.stderr.take(), run.stderr, &clock, &sender);
    let feeding = match (run.stdin, child.stdin.take()) {
        (Stdin::Bytes(bytes), Some(pipe)) => Some(tokio::spawn(feed_bytes(pipe, bytes))),
        (Stdin::Writer(write), Some(pipe)) => {
            let pipe = pipe_file!(pipe).map_err(|source| ProcessError::Io {
                command: command.clone(),
                source,
            })?;
            let clock = Arc::clone(&clock);
            Some(tokio::task::spawn_blocking(move || {
                feed(pipe, write, &clock)
            }))
        }
        _ => None,
    };
    Ok(Running {
        command,
        child,
        started,
        bound: run.bound,
        clock,
        feeding,
        stdout,
        stderr,
        lines,
        stream,
    })
}

fn stdio(out: Out) -> Stdio {
    match out {
        Out::Keep { .. } | Out::Lines | Out::Stream => Stdio::piped(),
        Out::Null => Stdio::null(),
        Out::Inherit => Stdio::inherit(),
    }
}

impl Running {
    /// The program's stdout as a blocking byte stream, for [`Out::Stream`]: read it on a thread
    /// of its own, under a bound of the caller's, then [`wait`](Self::wait).
    pub fn take_stdout(&mut self) -> io::Result<Option<File>> {
        match self.stream.take() {
            Some(stdout) => pipe_file!(stdout).map(Some),
            None => Ok(None),
        }
    }

    /// Waits for the program's end under its bound; `on_line` is handed each line of an
    /// [`Out::Lines`] stream as it comes. Past its bound the program is stopped (killed and
    /// waited for) and named.
    pub async fn wait(mut self, on_line: &(dyn Fn(&str) + Sync)) -> Result<Output, ProcessError> {
        let waited = self.drive(on_line).await;
        match waited {
            Ok(_) => self.reaped(),
            // Whatever ended the wait, the program (and what it started) is gone before we go
            // on.
            Err(_) => self.stop().await,
        }
        waited
    }

    async fn drive(&mut self, on_line: &(dyn Fn(&str) + Sync)) -> Result<Output, ProcessError> {
        let waited = Instant::now();
        let mut fed = match self.feeding {
            Some(_) => None,
            None => Some((Fed::default(), waited)),
        };
        let mut feeding = self.feeding.take();
        let (mut status, mut lines_open) = (None, true);
        // Still `Reader`s, so that an early return stops them.
        let mut stdout = std::mem::replace(&mut self.stdout, Reader(None));
        let mut stderr = std::mem::replace(&mut self.stderr, Reader(None));
        let (mut stdout_bytes, mut stderr_bytes) = (Vec::new(), Vec::new());
        loop {
            if status.is_some()
                && fed.is_some()
                && !lines_open
                && stdout.0.is_none()
                && stderr.0.is_none()
            {
                break;
            }
            let deadline = self.deadline(waited, fed.as_ref().map(|(_, at)| *at));
            tokio::select! {
                done = async { feeding.as_mut().expect("feeding").await }, if fed.is_none() => {
                    feeding = None;
                    match done.unwrap_or_else(|err| Fed::failed(io::Error::other(err))) {
                        // Our input failed: the program is killed on drop.
                        Fed { result: Err(source), broke: false, .. } => {
                            return Err(ProcessError::Input { command: self.command.clone(), source });
                        }
                        done => fed = Some((done, Instant::now())),
                    }
                }
                exited = self.child.wait(), if status.is_none() => {
                    status = Some(exited.map_err(|source| ProcessError::Io {
                        command: self.command.clone(),
                        source,
                    })?);
                }
                line = self.lines.recv(), if lines_open => match line {
                    Some(line) => on_line(&line),
                    None => lines_open = false,
                },
                read = async { stdout.0.as_mut().expect("stdout").await }, if stdout.0.is_some() => {
                    stdout.0 = None;
                    stdout_bytes = read.unwrap_or_default();
                }
                read = async { stderr.0.as_mut().expect("stderr").await }, if stderr.0.is_some() => {
                    stderr.0 = None;
                    stderr_bytes = read.unwrap_or_default();
                }
                () = tokio::time::sleep_until(deadline.0.into()) => {
                    // Progress may have moved the deadline while we slept.
                    let (at, _) = self.deadline(waited, fed.as_ref().map(|(_, at)| *at));
                    if at <= Instant::now() {
                        return Err(self.overdue(deadline.1, status));
                    }
                }
            }
        }
        let fed = fed.map(|(fed, _)| fed).unwrap_or_default();
        Ok(Output {
            status: status.expect("the program exited"),
            stdout: stdout_bytes,
            stderr: stderr_bytes,
            bytes_in: fed.written,
            stdin_broke: fed.broke,
        })
    }

    /// When the bound is over, and which bound that is.
    fn deadline(&self, waited: Instant, fed: Option<Instant>) -> (Instant, Overdue) {
        match (self.bound, fed) {
            (Bound::Within(bound), _) => (self.clock.started + bound, Overdue::Total(bound)),
            (Bound::Streaming { stall, .. }, None) => (
                self.clock.at(&self.clock.input) + stall,
                Overdue::Stalled(stall),
            ),
            (Bound::Streaming { finish, .. }, Some(fed)) => (fed + finish, Overdue::Total(finish)),
            (Bound::Quiet(bound), _) => (
                self.clock.at(&self.clock.output) + bound,
                Overdue::Silent(bound),
            ),
            (Bound::AfterStream(bound), _) => (waited + bound, Overdue::Total(bound)),
        }
    }

    fn overdue(&self, overdue: Overdue, status: Option<std::process::ExitStatus>) -> ProcessError {
        let command = self.command.clone();
        match (overdue, status) {
            (Overdue::Total(bound) | Overdue::Silent(bound), Some(status)) => {
                ProcessError::LeftOpen {
                    command,
                    status,
                    bound,
                }
            }
            (Overdue::Total(bound), None) => ProcessError::TimedOut { command, bound },
            (Overdue::Silent(bound), None) => ProcessError::Silent { command, bound },
            (Overdue::Stalled(bound), _) => ProcessError::Stalled {
                command,
                bound,
                written: self.clock.written.load(Ordering::Relaxed),
            },
        }
    }

    /// Kills the program now, with every process of its group, and waits (a few seconds at
    /// most) until it is gone. One that outlives the bound (stuck in the kernel) is left to the
    /// reaping at exit, which names it.
    pub async fn stop(&mut self) {
        let Some(started) = &self.started else {
            return;
        };
        started.kill();
        if let Ok(Ok(_)) = tokio::time::timeout(reap::BOUND, self.child.wait()).await {
            self.reaped();
        }
    }

    /// It has been waited for: its pid is no longer ours to signal, and what the run kept goes.
    fn reaped(&mut self) {
        if let Some(started) = self.started.take() {
            started.reaped();
        }
    }
}

impl Drop for Running {
    /// A run dropped mid-way (a signal, a failure elsewhere): killed now, reaped at exit.
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            self.reaped();
        } else if let Some(started) = &self.started {
            started.kill();
        }
    }
}

/// Which bound ran out.
#[derive(Debug, Clone, Copy)]
enum Overdue {
    Total(Duration),
    Stalled(Duration),
    Silent(Duration),
}

/// When the input and the output last moved, and how much input went in.
struct Clock {
    started: Instant,
    /// Nanoseconds from `started` to the last byte the program took.
    input: AtomicU64,
    /// Nanoseconds from `started` to the last byte the program printed.
    output: AtomicU64,
    written: AtomicU64,
}

impl Clock {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            input: AtomicU64::new(0),
            output: AtomicU64::new(0),
            written: AtomicU64::new(0),
        }
    }

    fn mark(&self, what: &AtomicU64) {
        let now = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        what.fetch_max(now, Ordering::Relaxed);
    }

    fn at(&self, what: &AtomicU64) -> Instant {
        self.started + Duration::from_nanos(what.load(Ordering::Relaxed))
    }
}

/// How feeding the stdin ended.
#[derive(Debug)]
struct Fed {
    written: u64,
    /// The program stopped reading (it ended, or failed).
    broke: bool,
    result: io::Result<()>,
}

impl Default for Fed {
    fn default() -> Self {
        Self {
            written: 0,
            broke: false,
            result: Ok(()),
        }
    }
}

impl Fed {
    fn failed(err: io::Error) -> Self {
        Self {
            result: Err(err),
            ..Self::default()
        }
    }
}

/// Bytes, then the end; a program that exits without reading them is fine.
async fn feed_bytes(mut pipe: ChildStdin, bytes: Vec<u8>) -> Fed {
    let written = match pipe.write_all(&bytes).await {
        Ok(()) => bytes.len() as u64,
        Err(_) => 0,
    };
    drop(pipe);
    Fed {
        written,
        ..Fed::default()
    }
}

/// Runs the writer (blocking, on its own thread) into the program's stdin, counting what it
/// takes.
fn feed(file: File, write: StdinWriter, clock: &Clock) -> Fed {
    let pipe = Pipe {
        file,
        broke: false,
        clock,
    };
    let mut sink = BufWriter::with_capacity(STREAM_BUFFER, pipe);
    let result = write(&mut sink).and_then(|()| sink.flush());
    let broke = sink.get_ref().broke;
    // Dropping the sink closes the program's stdin: it sees the end of its input.
    drop(sink);
    Fed {
        written: clock.written.load(Ordering::Relaxed),
        broke,
        result,
    }
}

/// The program's stdin, counting what it took, noting when it stopped reading.
struct Pipe<'a> {
    file: File,
    broke: bool,
    clock: &'a Clock,
}

impl Write for Pipe<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.file.write(buf).inspect_err(|_| self.broke = true)?;
        self.clock
            .written
            .fetch_add(written as u64, Ordering::Relaxed);
        self.clock.mark(&self.clock.input);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush().inspect_err(|_| self.broke = true)
    }
}

/// One output stream read to its end in a task of its own.
struct Reader(Option<JoinHandle<Vec<u8>>>);

impl Reader {
    fn spawn(
        pipe: Option<impl AsyncRead + Unpin + Send + 'static>,
        out: Out,
        clock: &Arc<Clock>,
        lines: &mpsc::UnboundedSender<String>,
    ) -> Self {
        let Some(pipe) = pipe else {
            return Self(None);
        };
        let clock = Arc::clone(clock);
        Self(Some(match out {
            Out::Lines => {
                let lines = lines.clone();
                tokio::spawn(async move {
                    let mut tail = Tail::default();
                    read(pipe, &clock, |bytes| tail.push(bytes, &lines)).await;
                    tail.end_line(&lines);
                    tail.into_bytes()
                })
            }
            Out::Keep { cap } => tokio::spawn(async move {
                let mut kept = Vec::new();
                read(pipe, &clock, |bytes| {
                    let room = cap.saturating_sub(kept.len()).min(bytes.len());
                    kept.extend_from_slice(&bytes[..room]);
                })
                .await;
                kept
            }),
            Out::Null | Out::Inherit | Out::Stream => return Self(None),
        }))
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

/// Reads `pipe` to its end (so the program never blocks on a full pipe), each read marked as
/// output.
async fn read(mut pipe: impl AsyncRead + Unpin, clock: &Clock, mut take: impl FnMut(&[u8])) {
    let mut buf = [0u8; 8192];
    while let Ok(read) = pipe.read(&mut buf).await {
        if read == 0 {
            break;
        }
        clock.mark(&clock.output);
        take(&buf[..read]);
    }
}

/// The last lines of a stream, each cut to a bounded length.
#[derive(Debug, Default)]
pub(super) struct Tail {
    pub(super) lines: std::collections::VecDeque<String>,
    partial: Vec<u8>,
}

impl Tail {
    /// Progress bars redraw with `\r`, so it ends a line too.
    pub(super) fn push(&mut self, bytes: &[u8], on_line: &mpsc::UnboundedSender<String>) {
        for &byte in bytes {
            if byte == b'\n' || byte == b'\r' {
                self.end_line(on_line);
            } else if self.partial.len() < MAX_LINE_BYTES {
                self.partial.push(byte);
            }
        }
    }

    pub(super) fn end_line(&mut self, on_line: &mpsc::UnboundedSender<String>) {
        let line = String::from_utf8_lossy(&self.partial)
            .trim_end()
            .to_string();
        self.partial.clear();
        if line.is_empty() {
            return;
        }
        let _ = on_line.send(line.clone());
        self.lines.push_back(line);
        if self.lines.len() > TAIL_LINES {
            self.lines.pop_front();
        }
    }

    fn into_bytes(self) -> Vec<u8> {
        Vec::from(self.lines).join("\n").into_bytes()
    }
}
