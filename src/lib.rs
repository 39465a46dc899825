//! kubectl-registry: find a cluster's local registry (KEP-1755), push images to it or load them
//! into the nodes, and name the ref a pod spec must use.

pub mod cli;
pub mod cluster;
pub mod commands;
pub mod delivery;
pub mod diagnosis;
#[cfg(fuzzing)]
pub mod fuzz_entry;
pub mod image;
pub mod inventory;
pub mod nodes;
pub mod plumbing;
pub mod settings;

use cli::{Cli, Command};
use plumbing::error::{Context, ExitCode, Result};
use plumbing::output::Printer;
use plumbing::{interrupt, limits, process, tls_roots};
use settings::Settings;

/// How long a stopped run spends asking the registry to drop its unfinished uploads.
const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Runs one command to completion, or until SIGINT or SIGTERM stops it.
pub fn run(cli: Cli, settings: &Settings, printer: &Printer) -> Result<()> {
    // kube and reqwest share rustls; pick its crypto provider once, before either builds a client.
    let _ = rustls::crypto::ring::default_provider().install_default();
    tls_roots::read_ahead();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context(ExitCode::Failure, || "starting the async runtime")?;
    let result = runtime.block_on(async move {
        let command = async move {
            let cluster = cluster::ClusterOptions::from(&cli.cluster);
            match cli.command {
                Command::Version(args) => {
                    let version = env!("CARGO_PKG_VERSION");
                    printer.result(&match args.output {
                        cli::OutputFormat::Text => version.to_string(),
                        cli::OutputFormat::Json => {
                            serde_json::json!({ "version": version }).to_string()
                        }
                    })
                }
                Command::Advertise(args) => {
                    commands::advertise::run(&args, &cluster, settings, printer).await
                }
                Command::Doctor(args) => {
                    commands::doctor::run(&args, &cluster, settings, printer).await
                }
                Command::Info(args) => {
                    commands::info::run(&args, &cluster, settings, printer).await
                }
                Command::Ls(args) => commands::ls::run(&args, &cluster, settings, printer).await,
                Command::Prune(args) => {
                    commands::prune::run(&args, &cluster, settings, printer).await
                }
                Command::Why(args) => commands::why::run(&args, &cluster, settings, printer).await,
                Command::Completion(args) => commands::completion::print_script(args.shell),
                Command::Push(args) => {
                    commands::push::run(&args, &cluster, settings, printer).await
                }
            }
        };
        // A signal drops the command's future: its temp dir goes, its child processes are
        // killed, its connections close.
        let outcome = tokio::select! {
            outcome = command => outcome,
            signal = interrupt::signalled() => Err(interrupt::stopped_by(signal)),
        };
        if outcome.is_err() {
            // Uploads the failure or the signal cut off are dropped at the registry too; a
            // second signal does not wait for that.
            tokio::select! {
                () = image::registry::cancel_open_uploads(CANCEL_WAIT) => {}
                _ = interrupt::signalled() => {}
            }
        }
        // Reap here, not in a drop: the runtime is shut down in the background below, so a
        // drop still pending then may never run.
        for stuck in process::reap_all().await {
            printer.warn(&format!(
                "{stuck} did not end within {} of SIGKILL (stuck in the kernel?); it is left to the system",
                limits::seconds_text(process::REAP_BOUND)
            ));
        }
        outcome
    });
    // A failed push must not wait for a blocking read it abandoned (stdin still being spooled).
    runtime.shutdown_background();
    result
}
