//! Ctrl-C and SIGTERM: waiting for them, what the command was doing when one came (so the
//! message can say what stopped), and the error that ends the run with 130 or 143.

use std::sync::Mutex;

use crate::plumbing::error::{Error, ExitCode};

/// What the command is doing, for the message if a signal stops it. A process runs one
/// command, and the signal's handler cannot reach into the future it cancels: hence a global.
static DOING: Mutex<Option<Doing>> = Mutex::new(None);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Interrupt,
    Terminate,
}

impl Signal {
    fn name(self) -> &'static str {
        match self {
            // Windows has no signals to name: its console sends CTRL_C_EVENT for the keys.
            Signal::Interrupt if cfg!(windows) => "Ctrl-C",
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
        }
    }

    fn exit_code(self) -> ExitCode {
        match self {
            Signal::Interrupt => ExitCode::Interrupted,
            Signal::Terminate => ExitCode::Terminated,
        }
    }
}

#[derive(Debug, Clone)]
struct Doing {
    what: String,
    /// What is true of the result if we stop now.
    if_stopped: &'static str,
}

/// Notes that the command is between pieces of work (`push --watch` waiting for a change): a
/// signal now stops nothing, and ends the run without a word.
pub fn idle() {
    *lock() = Some(Doing {
        what: String::new(),
        if_stopped: "",
    });
}

/// Notes what the command is doing now, and what stopping now would leave.
pub fn doing(what: impl Into<String>, if_stopped: &'static str) {
    *lock() = Some(Doing {
        what: what.into(),
        if_stopped,
    });
}

/// Waits for SIGINT or SIGTERM (on Windows, the console's Ctrl-C: `SetConsoleCtrlHandler`).
/// Installs the handlers on first poll: from then on these signals no longer kill the process
/// at once, so that temp files and uploads are cleaned up.
pub async fn signalled() -> Signal {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut interrupt), Ok(mut terminate)) => tokio::select! {
                _ = interrupt.recv() => Signal::Interrupt,
                _ = terminate.recv() => Signal::Terminate,
            },
            // Without handlers the default action (exit) still applies.
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        match tokio::signal::ctrl_c().await {
            Ok(()) => Signal::Interrupt,
            Err(_) => std::future::pending().await,
        }
    }
}

/// The error for a run stopped by `signal`: what was interrupted and what that leaves.
pub fn stopped_by(signal: Signal) -> Error {
    let message = match lock().clone() {
        Some(doing) if doing.what.is_empty() => return Error::new(signal.exit_code(), "").quiet(),
        Some(doing) => format!(
            "interrupted by {} while {}; {}",
            signal.name(),
            doing.what,
            doing.if_stopped
        ),
        None => format!("interrupted by {}", signal.name()),
    };
    Error::new(signal.exit_code(), message)
}

fn lock() -> std::sync::MutexGuard<'static, Option<Doing>> {
    // One assignment per write: a poisoned value is still whole.
    DOING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_says_what_stopped_and_what_it_leaves() {
        doing(
            "pushing myimg:dev to 127.0.0.1:5000/myimg",
            "nothing was tagged",
        );
        let err = stopped_by(Signal::Terminate);
        assert_eq!(err.exit_code(), ExitCode::Terminated);
        assert_eq!(
            err.message(),
            "interrupted by SIGTERM while pushing myimg:dev to 127.0.0.1:5000/myimg; nothing was tagged"
        );
        assert_eq!(stopped_by(Signal::Interrupt).exit_code() as u8, 130);
    }
}
