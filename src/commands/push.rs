//! `kubectl registry push`: push an archive or an engine's image to the cluster's registry (or load it
//! into the nodes) and print the ref a pod spec must use.

mod rollout;
mod watch;

use std::path::Path;

use crate::cli::PushArgs;
use crate::cluster::ClusterOptions;
use crate::cluster::session::Session;
use crate::delivery::push::{self, Opened, PushOptions, PushReport};
use crate::image::engine::{self, Source};
use crate::nodes::{ARCHIVE_PLACEHOLDER, LoadPlan};
use crate::plumbing::error::{Context, ExitCode, Result};
use crate::plumbing::interrupt;
use crate::plumbing::laps::Laps;
use crate::plumbing::output::OutputFormat;
use crate::plumbing::output::Printer;
use crate::settings::Settings;

pub async fn run(
    args: &PushArgs,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    let session = Session::new(cluster_args, settings, printer);
    if args.watch {
        return watch::run(args, &session, settings, printer).await;
    }
    round(args, &session, settings, printer, None, Laps::start()).await
}

/// One push (and its rollouts): the whole command, or one round of `--watch` (the cluster kept
/// in the session; the engine's image as the watch found it, not asked again). `laps` started
/// when the round's change was noticed: `-vv` says where the round's time went.
async fn round(
    args: &PushArgs,
    session: &Session<'_>,
    settings: &Settings,
    printer: &Printer,
    found: Option<engine::Found>,
    mut laps: Laps,
) -> Result<()> {
    if let Some(template) = &args.load_command {
        // A bad flag fails before any work, whether or not the load would have been needed.
        LoadPlan::from_template(template, Path::new(ARCHIVE_PLACEHOLDER))?;
    }
    interrupt::doing("reading the image and the cluster", "nothing was pushed");
    // Removed however the run ends: the future that owns it is dropped on a signal too.
    let scratch = tempfile::Builder::new()
        .prefix("kubectl-registry-")
        .tempdir()
        .context(ExitCode::Failure, || "creating a temporary directory")?;
    let options = options(args);
    let run = push::Run {
        args: &options,
        settings,
        scratch: scratch.path(),
        printer,
    };
    let opened = async {
        match found {
            Some(found) => Ok(Opened::Engine(Box::new(found))),
            None => push::open(Source::classify(&args.source), settings, printer).await,
        }
    };
    let (opened, discovered) = tokio::try_join!(opened, session.discover())?;
    laps.lap("open and discover");
    let rollouts = match args.rollout.is_empty() {
        true => None,
        false => {
            let setting = rollout::Setting {
                access: &args.access,
                settings,
                printer,
                timeout: args.timeout,
            };
            let rollouts = rollout::Rollouts::read(&args.rollout, session, &discovered, setting);
            let rollouts = rollouts.await?;
            laps.lap("read the rollouts");
            Some(rollouts)
        }
    };
    let plan = push::plan(&run, opened, &discovered, session).await?;
    if let Some(rollouts) = &rollouts {
        rollouts.check(plan.landing())?;
    }
    laps.lap("plan");
    let report = push::carry_out(&run, plan).await?;
    laps.lap("carry out");
    printer.timing(&format!("push round: {laps}"));
    let seconds = laps.total().as_secs_f64();
    match &rollouts {
        None => report.print(args.output.output, printer, seconds),
        Some(rollouts) => roll(rollouts, &report, args.output.output, printer, laps).await,
    }
}

/// The ref first (text), then the rollouts; `-o json` prints the push with their outcomes.
async fn roll(
    rollouts: &rollout::Rollouts<'_>,
    report: &PushReport,
    format: OutputFormat,
    printer: &Printer,
    mut laps: Laps,
) -> Result<()> {
    if format == OutputFormat::Text {
        report.print(format, printer, laps.total().as_secs_f64())?;
    }
    interrupt::doing(
        format!("rolling out {}", report.reference),
        "the image is pushed; a workload may be patched and rolling out",
    );
    let outcomes = match rollouts.apply(report).await {
        Ok(outcomes) => outcomes,
        Err(error) => {
            // Refused or gone after the push: the pushed ref is said all the same, as in text.
            if format == OutputFormat::Json {
                print_json(report, None, printer)?;
            }
            return Err(error);
        }
    };
    laps.lap("roll out");
    printer.timing(&format!("push round and its rollouts: {laps}"));
    if format == OutputFormat::Json {
        print_json(report, Some(&outcomes), printer)?;
    }
    match outcomes.into_iter().find_map(|outcome| outcome.error) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// The push's object, with `rollout` when the rollouts were waited for.
fn print_json(
    report: &PushReport,
    outcomes: Option<&[rollout::Outcome]>,
    printer: &Printer,
) -> Result<()> {
    let written = || "writing the report as JSON";
    let mut json = serde_json::to_value(report).context(ExitCode::Failure, written)?;
    if let Some(outcomes) = outcomes {
        json["rollout"] = serde_json::to_value(outcomes).context(ExitCode::Failure, written)?;
    }
    let text = serde_json::to_string_pretty(&json).context(ExitCode::Failure, written)?;
    printer.result(&text)
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
