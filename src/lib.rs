//! kubectl-registry: find a cluster's local registry (KEP-1755), push images to it or load them
//! into the nodes, and name the ref a pod spec must use.

pub mod advertise;
pub mod archive;
pub mod cli;
pub mod cluster;
pub mod completion;
pub mod digest;
pub mod discovery;
pub mod doctor;
pub mod engine;
pub mod error;
pub mod hosting;
pub mod info;
pub mod kubeconfig;
pub mod nodeload;
pub mod output;
pub mod product;
pub mod push;
pub mod reference;
pub mod registry;
pub mod settings;

use cli::{Cli, Command};
use error::{Context, ExitCode, Result};
use output::Printer;
use settings::Settings;

/// Runs one command to completion.
pub fn run(cli: Cli, settings: &Settings, printer: &Printer) -> Result<()> {
    // kube and reqwest share rustls; pick its crypto provider once, before either builds a client.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context(ExitCode::Failure, || "starting the async runtime")?;
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Version(args) => {
                let version = env!("CARGO_PKG_VERSION");
                printer.result(&match args.output {
                    cli::OutputFormat::Text => version.to_string(),
                    cli::OutputFormat::Json => {
                        serde_json::json!({ "version": version }).to_string()
                    }
                });
                Ok(())
            }
            Command::Advertise(args) => {
                advertise::run(&args, &cli.cluster, settings, printer).await
            }
            Command::Doctor(args) => doctor::run(&args, &cli.cluster, settings, printer).await,
            Command::Info(args) => info::run(&args, &cli.cluster, settings, printer).await,
            Command::Completion(args) => completion::print_script(args.shell),
            Command::Push(args) => push::run(&args, &cli.cluster, settings, printer).await,
        }
    });
    // A failed push must not wait for a blocking read it abandoned (stdin still being spooled).
    runtime.shutdown_background();
    result
}
