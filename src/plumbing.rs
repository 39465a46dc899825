//! Plumbing every layer stands on: the one process runner, the bounds on waiting, the printer, Ctrl-C,
//! the environment's variables, the system's CA roots, the error type, where a run's time went (`laps`).

pub mod environment;
pub mod error;
pub mod interrupt;
pub mod laps;
pub mod limits;
pub mod output;
pub mod process;
pub mod tls_roots;
