//! Node commands (`docker exec NODE ctr ...`, `kind get nodes`, `minikube ssh`, `microk8s ctr`)
//! on the process runner: bounded by the node bound, an archive optionally streamed into their
//! stdin, and why one failed in one sentence for `-v` and errors.

use std::io::{self, Write};
use std::time::Duration;

use crate::plumbing::limits::seconds_text;
use crate::plumbing::process::{Argv, Bound, Output, ProcessError, Run, Stdin};

/// Once the whole archive is in, an import has this many times its bound to finish: the
/// node unpacks every layer after reading the stream.
pub(crate) const FINISH_FACTOR: u32 = 10;

/// Why a node command did not do its job, in one sentence for `-v` and errors.
pub(crate) type Failure = String;

/// Runs `command` with no stdin for at most `bound`.
pub(crate) async fn capture(command: &Argv, bound: Duration) -> Result<Output, Failure> {
    Run::new(command, Bound::Within(bound))
        .succeed()
        .await
        .map_err(|err| err.to_string())
}

/// Runs `command`, `write` streaming the archive into its stdin: it must take the archive
/// with no pause longer than `bound`, then finish within `FINISH_FACTOR` times it. The outer
/// error is ours (reading the input archive failed: no node is to blame); the inner one is
/// the command's.
pub(crate) async fn stream_into<W>(
    command: &Argv,
    bound: Duration,
    write: W,
) -> io::Result<Result<Output, Failure>>
where
    W: FnOnce(&mut dyn Write) -> io::Result<()> + Send + 'static,
{
    let streaming = Bound::Streaming {
        stall: bound,
        finish: bound * FINISH_FACTOR,
    };
    match Run::new(command, streaming)
        .stdin(Stdin::Writer(Box::new(write)))
        .succeed()
        .await
    {
        Ok(ran) => Ok(Ok(ran)),
        Err(ProcessError::Input { source, .. }) => Err(source),
        Err(ProcessError::Stalled { written, .. }) => Ok(Err(format!(
            "`{command}` took no byte of the archive for {} (after {written} bytes); it was stopped",
            seconds_text(bound)
        ))),
        Err(err) => Ok(Err(err.to_string())),
    }
}
