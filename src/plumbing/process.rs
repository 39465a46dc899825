//! The one runner of other programs (engine CLIs, credential helpers, the exec credential plugin,
//! product loaders, node commands, doctor's probes): no shell, stdin optional (bytes, or a writer
//! streaming into it), stdout and stderr kept up to a cap or handed over line by line or as a
//! byte stream, a bound in time (the whole run, a stall of its input, or a silence of its
//! output), killed when it outlasts its bound or when the run is dropped, and a typed error
//! naming the program and the last line it said.

mod argv;
mod reap;
mod running;
#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::io::{self, Write};
use std::process::ExitStatus;
use std::time::Duration;

use crate::plumbing::limits::seconds_text;

pub use argv::Argv;
pub(crate) use argv::shell_quote;
pub use reap::BOUND as REAP_BOUND;
pub use running::Running;

/// Bytes of a stream kept by default: ctr prints a line per image, a digest per blob; one
/// manifest or config.
pub const DEFAULT_CAP: usize = 16 << 20;
/// Lines of a stream kept when it is handed over line by line.
pub const TAIL_LINES: usize = 20;
/// Longer lines are cut: a tool printing megabytes without a newline must not grow our memory.
pub const MAX_LINE_BYTES: usize = 2048;

/// A writer that streams the program's stdin; it runs on a thread of its own.
pub type StdinWriter = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + Send>;

/// What the program reads.
pub enum Stdin {
    /// Nothing: `/dev/null`.
    Null,
    /// Our own stdin (a person may be answering it).
    Inherit,
    /// These bytes, then the end. A program that exits without reading them is fine.
    Bytes(Vec<u8>),
    /// What the writer writes, as it writes it; the program must take it (see [`Bound::Streaming`]).
    Writer(StdinWriter),
}

/// What becomes of one of the program's output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Out {
    /// Read to its end, the first `cap` bytes kept.
    Keep { cap: usize },
    /// Read to its end line by line (`\r` ends a line too: progress bars), each line handed to
    /// the run's line callback, the last [`TAIL_LINES`] kept.
    Lines,
    /// Thrown away.
    Null,
    /// Ours: the program writes to our own stream (a person may be reading it).
    Inherit,
    /// Handed to the caller as a byte stream ([`Running::take_stdout`]); stdout only.
    Stream,
}

impl Out {
    /// Kept up to [`DEFAULT_CAP`].
    pub const KEEP: Out = Out::Keep { cap: DEFAULT_CAP };
}

/// How long the program may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The whole run, from its start to its exit with its output closed.
    Within(Duration),
    /// Its stdin streamed: it is stopped when it takes no byte for `stall`; once the input is
    /// all in, it has `finish` to end.
    Streaming { stall: Duration, finish: Duration },
    /// It is stopped when it prints nothing, on stdout or stderr, for this long.
    Quiet(Duration),
    /// Measured from [`Running::wait`]: the caller bounds the run before it (reading a streamed
    /// stdout under its own stall bound).
    AfterStream(Duration),
}

/// How a program ran to its end, successful or not.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    /// What it printed on stdout, as its [`Out`] keeps it (lines joined by `\n`).
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Bytes its stdin took.
    pub bytes_in: u64,
    /// It stopped reading its stdin before the writer was done.
    pub stdin_broke: bool,
}

impl Output {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// It exited 0 and took all its input.
    pub fn succeeded(&self) -> bool {
        self.status.success() && !self.stdin_broke
    }

    /// The last line that says why it failed: stderr's, else stdout's (minikube's `ssh` wrapper
    /// line only when nothing else was said).
    pub fn said(&self) -> Option<String> {
        let stderr = String::from_utf8_lossy(&self.stderr);
        let stdout = String::from_utf8_lossy(&self.stdout);
        last_line(&stderr)
            .or_else(|| last_line(&stdout))
            .or_else(|| lines(&stderr).next_back())
            .map(printable)
    }
}

/// Why a program did not do its job. Each names the program as a user could paste it.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// It is not installed: not found on PATH (or at the path given).
    #[error("could not start `{command}`: {source}")]
    NotFound {
        command: String,
        #[source]
        source: io::Error,
    },
    #[error("could not start `{command}`: {source}")]
    Start {
        command: String,
        #[source]
        source: io::Error,
    },
    #[error("`{command}` did not finish within {}; it was stopped", seconds_text(*bound))]
    TimedOut { command: String, bound: Duration },
    #[error("`{command}` took no byte of its input for {} (after {written} bytes); it was stopped", seconds_text(*bound))]
    Stalled {
        command: String,
        bound: Duration,
        written: u64,
    },
    #[error("`{command}` printed nothing for {}; it was stopped", seconds_text(*bound))]
    Silent { command: String, bound: Duration },
    #[error("`{command}` ended ({status}) but left its output open for {}", seconds_text(*bound))]
    LeftOpen {
        command: String,
        status: ExitStatus,
        bound: Duration,
    },
    /// It ran and failed: its exit status and the last line it said.
    #[error("`{command}` failed ({}){}", output.status, said.as_ref().map(|said| format!(": {said}")).unwrap_or_default())]
    Failed {
        command: String,
        said: Option<String>,
        output: Box<Output>,
    },
    /// Our own input failed while it streamed into the program: no fault of the program's.
    #[error("writing the input of `{command}`: {source}")]
    Input {
        command: String,
        #[source]
        source: io::Error,
    },
    #[error("running `{command}`: {source}")]
    Io {
        command: String,
        #[source]
        source: io::Error,
    },
}

impl ProcessError {
    /// The program was not found.
    pub fn not_found(&self) -> bool {
        matches!(self, ProcessError::NotFound { .. })
    }
}

/// One run of a program, built up then started: `Run::new(&argv).stdin(..).bound(..).output()`.
pub struct Run<'a> {
    argv: &'a Argv,
    env: Vec<(OsString, Option<OsString>)>,
    stdin: Stdin,
    stdout: Out,
    stderr: Out,
    bound: Bound,
    kept: Vec<reap::Kept>,
}

impl<'a> Run<'a> {
    /// No stdin, both outputs kept up to [`DEFAULT_CAP`], within `bound`.
    pub fn new(argv: &'a Argv, bound: Bound) -> Self {
        Self {
            argv,
            env: Vec::new(),
            stdin: Stdin::Null,
            stdout: Out::KEEP,
            stderr: Out::KEEP,
            bound,
            kept: Vec::new(),
        }
    }

    /// Keeps `thing` until the program is gone, however the run ends: a scratch folder the
    /// program writes into is removed only once nothing writes there any more.
    pub fn keep_until_gone(mut self, thing: impl Send + 'static) -> Self {
        self.kept.push(Box::new(thing));
        self
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), Some(value.into())));
        self
    }

    pub fn env_remove(mut self, key: impl Into<OsString>) -> Self {
        self.env.push((key.into(), None));
        self
    }

    pub fn stdin(mut self, stdin: Stdin) -> Self {
        self.stdin = stdin;
        self
    }

    pub fn stdout(mut self, out: Out) -> Self {
        self.stdout = out;
        self
    }

    pub fn stderr(mut self, out: Out) -> Self {
        self.stderr = out;
        self
    }

    /// Starts it: the input streams and the output is read at once, in tasks of their own.
    pub fn spawn(self) -> Result<Running, ProcessError> {
        running::spawn(self)
    }

    /// Runs it to its end: its [`Output`] whatever its exit status.
    pub async fn output(self) -> Result<Output, ProcessError> {
        self.spawn()?.wait(&|_| {}).await
    }

    /// Runs it to its end, each line of an [`Out::Lines`] stream handed to `on_line` as it comes.
    pub async fn output_lines(
        self,
        on_line: &(dyn Fn(&str) + Sync),
    ) -> Result<Output, ProcessError> {
        self.spawn()?.wait(on_line).await
    }

    /// Runs it to its end; [`ProcessError::Failed`] unless it exited 0 and took all its input.
    pub async fn succeed(self) -> Result<Output, ProcessError> {
        let command = self.argv.to_string();
        let output = self.output().await?;
        if output.succeeded() {
            Ok(output)
        } else {
            Err(failed(command, output))
        }
    }
}

/// Kills whatever we started and have not waited for (a run dropped mid-way: a signal, a failure
/// elsewhere) and waits until it is gone, a few seconds at most: when the tool exits, nothing it
/// started still runs. Returns the programs that outlived that (stuck in the kernel), named.
pub async fn reap_all() -> Vec<String> {
    reap::all().await
}

/// Runs `argv` with no stdin, outside any async runtime (completion at a prompt): its output, or
/// why it gave none.
pub fn output_blocking(run: Run<'_>) -> Result<Output, ProcessError> {
    let command = run.argv.to_string();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| ProcessError::Io {
            command: command.clone(),
            source,
        })?;
    runtime.block_on(run.output())
}

fn failed(command: String, output: Output) -> ProcessError {
    ProcessError::Failed {
        command,
        said: output.said(),
        output: Box::new(output),
    }
}

fn lines(text: &str) -> impl DoubleEndedIterator<Item = &str> {
    text.lines().map(str::trim).filter(|line| !line.is_empty())
}

/// The last line that says something. minikube's `ssh` ends a failed remote command with
/// `ssh: Process exited with status N` on its stderr, the command's own words having come
/// through the terminal it opens on the node (our stdout): that line says nothing of why.
fn last_line(text: &str) -> Option<&str> {
    lines(text).rfind(|line| !line.starts_with("ssh: Process exited with status"))
}

/// Text from a program, with control characters escaped so it cannot drive the terminal.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
