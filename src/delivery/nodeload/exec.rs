//! The one runner of node and product commands (`docker exec NODE ctr ...`, `kind get nodes`,
//! `minikube ssh`, `microk8s ctr`, the registry container's garbage-collect): no shell, stdout
//! kept up to a cap, the last line of stderr kept to say why it failed, an archive optionally
//! streamed into its stdin as it is written, and a bound in time: the command is killed and
//! named when it outlasts its bound, or when the run is dropped.

use std::io::{self, BufWriter, Write};
use std::os::fd::OwnedFd;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::plan::LoadCommand;
use crate::limits::seconds_text;

/// Pipe buffer for the archive stream.
const STREAM_BUFFER: usize = 1 << 20;
/// Bytes of a command's output kept: ctr prints a line per image, a digest per blob; one
/// manifest or config.
const MAX_OUTPUT: usize = 16 << 20;
/// Once the whole archive is in, an import has this many times its bound to finish: the
/// node unpacks every layer after reading the stream.
pub(crate) const FINISH_FACTOR: u32 = 10;

/// What a command that ran and succeeded printed on stdout.
#[derive(Debug)]
pub(crate) struct Succeeded {
    pub stdout: Vec<u8>,
    /// Bytes written to its stdin.
    pub bytes_in: u64,
}

impl Succeeded {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Why a node command did not do its job, in one sentence for `-v` and errors.
pub(crate) type Failure = String;

/// Runs `command` with no stdin for at most `bound`.
pub(crate) async fn capture(command: &LoadCommand, bound: Duration) -> Result<Succeeded, Failure> {
    match run(command, bound, None::<fn(&mut dyn Write) -> io::Result<()>>).await {
        Ok(ran) => ran,
        Err(ours) => Err(format!("running `{command}`: {ours}")),
    }
}

/// Runs `command` with no stdin for at most `timeout`; its stdout, or why it failed.
pub async fn run_tool(command: &LoadCommand, timeout: Duration) -> Result<Vec<u8>, String> {
    capture(command, timeout).await.map(|ran| ran.stdout)
}

/// Runs `command`, `write` streaming the archive into its stdin: it must take the archive
/// with no pause longer than `bound`, then finish within `FINISH_FACTOR` times it. The outer
/// error is ours (reading the input archive failed: no node is to blame); the inner one is
/// the command's.
pub(crate) async fn stream_into<W>(
    command: &LoadCommand,
    bound: Duration,
    write: W,
) -> io::Result<Result<Succeeded, Failure>>
where
    W: FnOnce(&mut dyn Write) -> io::Result<()> + Send + 'static,
{
    run(command, bound, Some(write)).await
}

async fn run<W>(
    command: &LoadCommand,
    bound: Duration,
    write: Option<W>,
) -> io::Result<Result<Succeeded, Failure>>
where
    W: FnOnce(&mut dyn Write) -> io::Result<()> + Send + 'static,
{
    let mut child = match tokio::process::Command::new(command.program())
        .args(command.args())
        .stdin(if write.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(err) => return Ok(Err(format!("could not start `{command}`: {err}"))),
    };
    // Read in tasks of their own, so that the pipes drain while the archive streams, and so
    // that a grandchild holding a pipe open cannot keep us waiting once the bound is over.
    let stdout = Reader::spawn(child.stdout.take());
    let stderr = Reader::spawn(child.stderr.take());
    let mut finish_bound = bound;
    let mut bytes_in = 0;
    let mut sink_broke = false;
    if let Some(write) = write {
        let Some(stdin) = child.stdin.take() else {
            return Ok(Err(format!("`{command}` has no stdin to stream into")));
        };
        let stdin = stdin.into_owned_fd()?;
        match stream(stdin, bound, write).await {
            Streamed::Done {
                written,
                broke,
                result,
            } => {
                bytes_in = written;
                sink_broke = broke;
                if let Err(err) = result
                    && !broke
                {
                    // Our archive failed: the command is killed on drop.
                    return Err(err);
                }
            }
            Streamed::Stalled { written } => {
                return Ok(Err(format!(
                    "`{command}` took no byte of the archive for {} (after {written} bytes); it was stopped",
                    seconds_text(bound)
                )));
            }
        }
        finish_bound = bound * FINISH_FACTOR;
    }
    let Ok(status) = tokio::time::timeout(finish_bound, child.wait()).await else {
        return Ok(Err(format!(
            "`{command}` did not finish within {}; it was stopped",
            seconds_text(finish_bound)
        )));
    };
    let status = match status {
        Ok(status) => status,
        Err(err) => return Ok(Err(format!("waiting for `{command}`: {err}"))),
    };
    // The command has ended: its pipes close, unless it left a process holding them.
    let (stdout, stderr) = match tokio::time::timeout(bound, async {
        tokio::join!(stdout.finish(), stderr.finish())
    })
    .await
    {
        Ok(both) => both,
        Err(_) => {
            return Ok(Err(format!(
                "`{command}` ended ({status}) but left its output open for {}",
                seconds_text(bound)
            )));
        }
    };
    if status.success() && !sink_broke {
        return Ok(Ok(Succeeded { stdout, bytes_in }));
    }
    Ok(Err(failed(command, status, &stdout, &stderr)))
}

/// How streaming the archive ended.
enum Streamed {
    Done {
        written: u64,
        /// The command stopped reading (it ended, or failed).
        broke: bool,
        result: io::Result<()>,
    },
    /// The command took no byte for the bound.
    Stalled { written: u64 },
}

/// Writes the archive (blocking, on its own thread) into the command's stdin, as long as the
/// command keeps taking bytes.
async fn stream<W>(stdin: OwnedFd, bound: Duration, write: W) -> Streamed
where
    W: FnOnce(&mut dyn Write) -> io::Result<()> + Send + 'static,
{
    let (moved, mut progress) = watch::channel(0u64);
    let mut writer = tokio::task::spawn_blocking(move || {
        let pipe = Pipe {
            file: std::fs::File::from(stdin),
            written: 0,
            broke: false,
            moved,
        };
        let mut sink = BufWriter::with_capacity(STREAM_BUFFER, pipe);
        let result = write(&mut sink).and_then(|()| sink.flush());
        let (written, broke) = (sink.get_ref().written, sink.get_ref().broke);
        // Dropping the sink closes the command's stdin: it sees the end of the archive.
        drop(sink);
        (written, broke, result)
    });
    loop {
        tokio::select! {
            done = &mut writer => {
                return match done {
                    Ok((written, broke, result)) => Streamed::Done { written, broke, result },
                    Err(err) => Streamed::Done { written: 0, broke: false, result: Err(io::Error::other(err)) },
                };
            }
            moved = tokio::time::timeout(bound, progress.changed()) => match moved {
                Ok(Ok(())) => {}
                // The writer is done with the sink; its result is next.
                Ok(Err(_)) => {
                    let done = (&mut writer).await;
                    return match done {
                        Ok((written, broke, result)) => Streamed::Done { written, broke, result },
                        Err(err) => Streamed::Done { written: 0, broke: false, result: Err(io::Error::other(err)) },
                    };
                }
                Err(_) => {
                    let written = *progress.borrow();
                    // The writer thread is blocked on the full pipe: killing the command
                    // (when `run` returns) breaks it, and it ends.
                    return Streamed::Stalled { written };
                }
            },
        }
    }
}

/// A pipe read to its end in a task of its own, the first `MAX_OUTPUT` bytes kept.
struct Reader(Option<JoinHandle<Vec<u8>>>);

impl Reader {
    fn spawn(pipe: Option<impl AsyncRead + Unpin + Send + 'static>) -> Self {
        Self(pipe.map(|pipe| tokio::spawn(read_bounded(pipe))))
    }

    async fn finish(mut self) -> Vec<u8> {
        match self.0.take() {
            Some(task) => task.await.unwrap_or_default(),
            None => Vec::new(),
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

async fn read_bounded(mut pipe: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    // Read to the end so the child never blocks on a full pipe; keep only the first MAX_OUTPUT.
    while let Ok(read) = pipe.read(&mut buf).await {
        if read == 0 {
            break;
        }
        let room = MAX_OUTPUT.saturating_sub(kept.len()).min(read);
        kept.extend_from_slice(&buf[..room]);
    }
    kept
}

/// `` `docker exec ...` failed (exit status: 1): <its last line> ``
fn failed(command: &LoadCommand, status: ExitStatus, stdout: &[u8], stderr: &[u8]) -> Failure {
    let stderr = String::from_utf8_lossy(stderr);
    let stdout = String::from_utf8_lossy(stdout);
    let said = last_line(&stderr)
        .or_else(|| last_line(&stdout))
        .or_else(|| lines(&stderr).next_back());
    match said {
        Some(line) => format!("`{command}` failed ({status}): {}", printable(line)),
        None => format!("`{command}` failed ({status})"),
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

/// Text from a tool, with control characters escaped so it cannot drive the terminal.
pub(crate) fn printable(text: &str) -> String {
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

/// The child's stdin, counting what it took, telling each move to the watch, and noting
/// when the child stopped reading.
struct Pipe {
    file: std::fs::File,
    written: u64,
    broke: bool,
    moved: watch::Sender<u64>,
}

impl Write for Pipe {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.file.write(buf).inspect_err(|_| self.broke = true)?;
        self.written += written as u64;
        self.moved.send_replace(self.written);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush().inspect_err(|_| self.broke = true)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    #[test]
    fn a_failure_is_told_by_its_last_line_not_minikubes_ssh_wrapper() {
        let command = LoadCommand::new("minikube", ["ssh".into()]);
        let status = std::process::ExitStatus::from_raw(1 << 8);
        assert_eq!(
            failed(
                &command,
                status,
                b"ctr: image \"x\": not found\r\n",
                b"ssh: Process exited with status 1\n"
            ),
            "`minikube ssh` failed (exit status: 1): ctr: image \"x\": not found"
        );
        assert_eq!(
            failed(
                &command,
                status,
                b"",
                b"ssh: Process exited with status 1\n"
            ),
            "`minikube ssh` failed (exit status: 1): ssh: Process exited with status 1"
        );
        assert_eq!(
            failed(&command, status, b"out\n", b"a\n\n  b  \n\n"),
            "`minikube ssh` failed (exit status: 1): b"
        );
        assert_eq!(
            failed(&command, status, b"", b"\n"),
            "`minikube ssh` failed (exit status: 1)"
        );
    }
}
