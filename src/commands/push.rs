//! `kubectl registry push`: push an archive or an engine's image to the cluster's registry (or load it
//! into the nodes) and print the ref a pod spec must use.

mod rollout;
mod watch;

use std::path::Path;
use std::time::Instant;

use crate::cli::PushArgs;
use crate::cluster::ClusterOptions;
use crate::cluster::client::Cluster;
use crate::cluster::discovery;
use crate::delivery::push::{Landing, PushOptions, PushReport, Run, from_archive, from_engine};
use crate::error::{Context, ExitCode, Result};
use crate::image::archive;
use crate::image::engine::Source;
use crate::interrupt;
use crate::nodes::{ARCHIVE_PLACEHOLDER, LoadPlan};
use crate::output::OutputFormat;
use crate::output::Printer;
use crate::settings::Settings;

pub async fn run(
    args: &PushArgs,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    if args.watch {
        return watch::run(args, cluster_args, settings, printer).await;
    }
    round(args, cluster_args, settings, printer, &mut None).await
}

/// One push (and its rollouts): the whole command, or one round of `--watch`, which keeps its
/// cluster client in `kept` from one round to the next.
async fn round(
    args: &PushArgs,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
    kept: &mut Option<Cluster>,
) -> Result<()> {
    let started = Instant::now();
    if let Some(template) = &args.load_command {
        // A bad flag fails before any work, whether or not the load would have been needed.
        LoadPlan::from_template(template, Path::new(ARCHIVE_PLACEHOLDER))?;
    }
    let rollouts = match args.rollout.is_empty() {
        true => None,
        false => {
            interrupt::doing("reading the workloads", "nothing was pushed");
            let setting = rollout::Setting {
                access: &args.access,
                settings,
                printer,
                timeout: args.timeout,
            };
            Some(rollout::Rollouts::read(&args.rollout, cluster_args, setting, kept).await?)
        }
    };
    // A --watch round without rollouts reads the cluster here, to keep the client.
    let watched = match (&rollouts, args.watch) {
        (None, true) => {
            Some(discovery::discover_with(cluster_args, settings, printer, kept).await?)
        }
        _ => None,
    };
    let gate = |landing: Landing<'_>| rollouts.as_ref().map_or(Ok(()), |r| r.check(landing));
    interrupt::doing("reading the image and the cluster", "nothing was pushed");
    // Removed however the run ends: the future that owns it is dropped on a signal too.
    let scratch = tempfile::Builder::new()
        .prefix("kubectl-registry-")
        .tempdir()
        .context(ExitCode::Failure, || "creating a temporary directory")?;
    let options = options(args);
    let run = Run {
        args: &options,
        cluster_args,
        settings,
        scratch: scratch.path(),
        printer,
        before_push: Some(&gate),
        // The rollouts read the cluster first; the push takes what they found.
        discovered: rollouts
            .as_ref()
            .map(rollout::Rollouts::discovered)
            .or(watched.as_ref()),
    };
    let report = match Source::classify(&args.source) {
        Source::EngineImage(image) => from_engine(&run, &image).await?,
        Source::Stdin => from_archive(&run, archive::Source::Stdin).await?,
        Source::Path(path) => from_archive(&run, archive::Source::Path(path)).await?,
    };
    let seconds = started.elapsed().as_secs_f64();
    let done = match &rollouts {
        None => report.print(args.output.output, printer, seconds),
        Some(rollouts) => roll(rollouts, &report, args.output.output, printer, seconds).await,
    };
    *kept = match (rollouts, watched) {
        (Some(rollouts), _) => rollouts.into_cluster(),
        (None, Some(discovered)) => discovered.cluster,
        (None, None) => None,
    };
    done
}

/// The ref first (text), then the rollouts; `-o json` prints the push with their outcomes.
async fn roll(
    rollouts: &rollout::Rollouts<'_>,
    report: &PushReport,
    format: OutputFormat,
    printer: &Printer,
    seconds: f64,
) -> Result<()> {
    if format == OutputFormat::Text {
        report.print(format, printer, seconds)?;
    }
    interrupt::doing(
        format!("rolling out {}", report.reference),
        "the image is pushed; a workload may be patched and rolling out",
    );
    let outcomes = rollouts.apply(report).await?;
    if format == OutputFormat::Json {
        let mut json = serde_json::to_value(report)
            .context(ExitCode::Failure, || "writing the report as JSON")?;
        json["rollout"] = serde_json::to_value(&outcomes)
            .context(ExitCode::Failure, || "writing the report as JSON")?;
        let text = serde_json::to_string_pretty(&json)
            .context(ExitCode::Failure, || "writing the report as JSON")?;
        printer.result(&text)?;
    }
    match outcomes.into_iter().find_map(|outcome| outcome.error) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// The flags as the push pipeline takes them.
fn options(args: &PushArgs) -> PushOptions {
    PushOptions {
        tag: args.tag.clone(),
        image: args.image.clone(),
        platform: args.platform.clone(),
        compression: args.compression,
        jobs: usize::from(args.jobs),
        insecure: args.access.insecure,
        ca_file: args.access.ca_file.clone(),
        no_load: args.no_load,
        load_command: args.load_command.clone(),
    }
}
