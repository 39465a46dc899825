//! kubectl-registry: find a cluster's local registry (KEP-1755), push images to it or load them
//! into the nodes, and name the ref a pod spec must use.

pub mod cli;
pub mod cluster;
pub mod digest;
pub mod error;
pub mod hosting;
pub mod output;
pub mod registry;

use cli::{Cli, Command};
use error::{Context, ExitCode, Result};
use output::Printer;

/// Runs one command to completion.
pub fn run(cli: Cli, printer: &Printer) -> Result<()> {
    // kube and reqwest share rustls; pick its crypto provider once, before either builds a client.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context(ExitCode::Failure, || "starting the async runtime")?;
    runtime.block_on(async move {
        match cli.command {
            Command::Version(args) => {
                let _ = args;
                printer.result(env!("CARGO_PKG_VERSION"));
                Ok(())
            }
            Command::Info(_) | Command::Push(_) | Command::Completion(_) => {
                Err(error::Error::new(ExitCode::Failure, "not built yet"))
            }
        }
    })
}
