//! Running one command against a node: its stdout captured, the end of its stderr kept to say
//! why it failed, and optionally an archive streamed into its stdin as it is written.

use std::io::{self, BufWriter, Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;

use super::plan::LoadCommand;

/// Pipe buffer for the archive stream.
const STREAM_BUFFER: usize = 1 << 20;
/// Bytes of a command's output kept: ctr prints a line per image, a digest per blob.
const MAX_OUTPUT: usize = 16 << 20;

/// What a command that ran and succeeded printed on stdout.
#[derive(Debug)]
pub(super) struct Succeeded {
    pub stdout: String,
    /// Bytes written to its stdin.
    pub bytes_in: u64,
}

/// Why a node command did not do its job, in one sentence for `-v` and errors.
pub(super) type Failure = String;

/// Runs `command` with no stdin.
pub(super) async fn capture(command: &LoadCommand) -> Result<Succeeded, Failure> {
    let command = command.clone();
    let ran = tokio::task::spawn_blocking(move || run(&command, None::<fn(&mut dyn Write) -> _>))
        .await
        .map_err(|err| format!("running a node command: {err}"))?;
    ran.unwrap_or_else(|archive_error| Err(archive_error.to_string()))
}

/// Runs `command`, `write` streaming the archive into its stdin. The outer error is ours
/// (reading the input archive failed: no node is to blame); the inner one is the command's.
pub(super) async fn stream_into<W>(
    command: &LoadCommand,
    write: W,
) -> io::Result<Result<Succeeded, Failure>>
where
    W: FnOnce(&mut dyn Write) -> io::Result<()> + Send + 'static,
{
    let command = command.clone();
    tokio::task::spawn_blocking(move || run(&command, Some(write)))
        .await
        .map_err(io::Error::other)?
}

fn run<W>(command: &LoadCommand, write: Option<W>) -> io::Result<Result<Succeeded, Failure>>
where
    W: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    let mut child = match Command::new(command.program())
        .args(command.args())
        .stdin(if write.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(err) => return Ok(Err(format!("could not start `{command}`: {err}"))),
    };
    let stdout = child
        .stdout
        .take()
        .map(|pipe| thread::spawn(|| read_bounded(pipe)));
    let stderr = child
        .stderr
        .take()
        .map(|pipe| thread::spawn(|| read_bounded(pipe)));
    let mut bytes_in = 0;
    let mut sink_broke = false;
    if let (Some(write), Some(stdin)) = (write, child.stdin.take()) {
        let mut sink = CountingSink {
            inner: BufWriter::with_capacity(STREAM_BUFFER, stdin),
            written: 0,
            broke: false,
        };
        let written = write(&mut sink).and_then(|()| sink.flush());
        bytes_in = sink.written;
        sink_broke = sink.broke;
        drop(sink);
        if let Err(err) = written
            && !sink_broke
        {
            let _ = child.kill();
            let _ = child.wait();
            return Err(err);
        }
    }
    let status = child.wait();
    let stdout = stdout.map(join).unwrap_or_default();
    let stderr = stderr.map(join).unwrap_or_default();
    let status = match status {
        Ok(status) => status,
        Err(err) => return Ok(Err(format!("waiting for `{command}`: {err}"))),
    };
    if status.success() && !sink_broke {
        return Ok(Ok(Succeeded { stdout, bytes_in }));
    }
    Ok(Err(failed(command, status, &stdout, &stderr)))
}

fn join(reader: thread::JoinHandle<String>) -> String {
    reader.join().unwrap_or_default()
}

/// `` `docker exec ...` failed (exit status: 1): <its last line> ``
fn failed(command: &LoadCommand, status: ExitStatus, stdout: &str, stderr: &str) -> Failure {
    let said = last_line(stderr).or_else(|| last_line(stdout));
    match said {
        Some(line) => format!("`{command}` failed ({status}): {}", printable(line)),
        None => format!("`{command}` failed ({status})"),
    }
}

fn last_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).rfind(|line| !line.is_empty())
}

/// Text from a tool, with control characters escaped so it cannot drive the terminal.
pub(super) fn printable(text: &str) -> String {
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

fn read_bounded(pipe: impl Read) -> String {
    let mut kept = Vec::new();
    let mut pipe = pipe;
    let mut buf = [0u8; 8192];
    // Read to the end so the child never blocks on a full pipe; keep only the first MAX_OUTPUT.
    while let Ok(read) = pipe.read(&mut buf) {
        if read == 0 {
            break;
        }
        let room = MAX_OUTPUT.saturating_sub(kept.len()).min(read);
        kept.extend_from_slice(&buf[..room]);
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The child's stdin, counting what went in and noting when the child stopped reading.
struct CountingSink<W> {
    inner: W,
    written: u64,
    broke: bool,
}

impl<W: Write> Write for CountingSink<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buf).inspect_err(|_| self.broke = true)?;
        self.written += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().inspect_err(|_| self.broke = true)
    }
}
