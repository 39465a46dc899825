//! The node-load target: the image into each node that could be asked what it holds
//! (`deliver`), or the whole archive handed to the product's CLI (`run`: its output kept off
//! our stdout, its lines as progress), and the errors when the image cannot get in that way.
//! What a node holds and how to reach it is `crate::nodes`'.

mod check;
mod deliver;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::cluster::product::ProductKind;
use crate::nodes::{FINISH_FACTOR, LoadPlan, PlanSource};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::limits::NODE_TIMEOUT_ENV;
use crate::plumbing::output::Printer;
use crate::plumbing::process::{Argv, Bound, Out, Output, ProcessError, Run};

pub use deliver::{Delivered, Delivery, NodeReport, deliver};

/// Runs the plan: its output is captured (never on our stdout), a spinner shows at a terminal,
/// and on success one status line on stderr says what was done. `bound` is the node bound: the
/// product's CLI is stopped when it prints nothing for `FINISH_FACTOR` times it.
pub async fn run(plan: &LoadPlan, bound: Duration, printer: &Printer) -> Result<()> {
    let progress = Progress::start(printer, format!("loading the image into {}", plan.target()));
    let watch = plan.fallback().map(|f| f.when_output_contains);
    let quiet = bound * FINISH_FACTOR;
    let mut ran = plan.command();
    let mut finished = execute(plan, ran, watch, quiet, &progress, printer).await?;
    if let Some(fallback) = plan.fallback()
        && !finished.output.status.success()
        && finished.saw_watched_text
    {
        progress.note(
            printer,
            &format!(
                "`{ran}` says it has no such subcommand; trying `{}`",
                fallback.command
            ),
        );
        ran = &fallback.command;
        finished = execute(plan, ran, None, quiet, &progress, printer).await?;
    }
    drop(progress);
    if !finished.output.status.success() {
        return Err(failed(plan, ran, &finished.output));
    }
    printer.status(&format!(
        "loaded the image into {} with `{ran}`",
        plan.target()
    ));
    Ok(())
}

/// How a command ended, with the last lines of what it printed.
struct Finished {
    output: Output,
    saw_watched_text: bool,
}

async fn execute(
    plan: &LoadPlan,
    command: &Argv,
    watch: Option<&str>,
    quiet: Duration,
    progress: &Progress,
    printer: &Printer,
) -> Result<Finished> {
    let mut run = Run::new(command, Bound::Quiet(quiet))
        .stdout(Out::Lines)
        .stderr(Out::Lines);
    for (key, value) in plan.env() {
        run = run.env(key, value);
    }
    let program = command.program().to_string_lossy();
    let saw_watched_text = AtomicBool::new(false);
    let on_line = |line: &str| {
        if watch.is_some_and(|text| line.contains(text)) {
            saw_watched_text.store(true, Ordering::Relaxed);
        }
        progress.show_line(printer, &program, line);
    };
    let output = run
        .output_lines(&on_line)
        .await
        .map_err(|err| not_run(plan, command, err))?;
    Ok(Finished {
        output,
        saw_watched_text: saw_watched_text.into_inner(),
    })
}

/// A spinner at a terminal naming what runs, with the command's latest line; `-v` echoes every line.
struct Progress {
    bar: ProgressBar,
    message: String,
}

impl Progress {
    fn start(printer: &Printer, message: String) -> Self {
        let bar = if printer.interactive() {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}") {
                bar.set_style(style);
            }
            bar.set_message(message.clone());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        } else {
            ProgressBar::hidden()
        };
        Self { bar, message }
    }

    fn show_line(&self, printer: &Printer, program: &str, line: &str) {
        if !self.bar.is_hidden() {
            let short: String = crate::plumbing::output::escape_control(line)
                .chars()
                .take(60)
                .collect();
            self.bar.set_message(format!("{}: {short}", self.message));
        }
        self.note(printer, &format!("  {program}: {line}"));
    }

    /// A `-v` line, drawn around the spinner.
    fn note(&self, printer: &Printer, text: &str) {
        if printer.verbose() > 0 {
            self.bar.suspend(|| printer.debug(text));
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// The command could not be started (most often, it is not installed), or was stopped.
fn not_run(plan: &LoadPlan, command: &Argv, err: ProcessError) -> Error {
    let program = command.program().to_string_lossy();
    match (plan.source(), err) {
        (PlanSource::Product(product), ProcessError::NotFound { source, .. }) => {
            let mut error = Error::new(
                ExitCode::Load,
                format!(
                    "loading the image into {}: `{program}` is not installed (not found on PATH)",
                    plan.target()
                ),
            )
            .with_source(source);
            if let Some(cli) = product.loader_cli() {
                error = error.with_hint(format!("install {program}: {}", cli.install_url));
            }
            product_hints(error, product)
        }
        (PlanSource::LoadCommandFlag, ProcessError::NotFound { source, .. }) => Error::new(
            ExitCode::Load,
            format!("running your --load-command `{command}`: `{program}` was not found"),
        )
        .with_source(source)
        .with_hint("name a program on PATH, or give its path"),
        (_, ProcessError::Start { source, .. }) => Error::new(
            ExitCode::Load,
            format!(
                "loading the image into {}: could not start `{command}`",
                plan.target()
            ),
        )
        .with_source(source),
        (_, err @ (ProcessError::Silent { .. } | ProcessError::LeftOpen { .. })) => Error::new(
            ExitCode::Load,
            format!("loading the image into {}", plan.target()),
        )
        .with_source(err)
        .with_hint(format!(
            "run `{command}` yourself to see what it waits for; {NODE_TIMEOUT_ENV} sets the bound (it may print nothing for ten times it)"
        )),
        (_, err) => Error::new(ExitCode::Load, format!("running `{command}`")).with_source(err),
    }
}

/// The command ran and failed: its exit status, and the end of what it said.
fn failed(plan: &LoadPlan, command: &Argv, output: &Output) -> Error {
    let said = if output.stderr.is_empty() {
        output.stdout_text()
    } else {
        output.stderr_text()
    };
    let error = Error::new(
        ExitCode::Load,
        format!(
            "loading the image into {}: `{command}` failed ({})",
            plan.target(),
            output.status
        ),
    )
    .with_source(ToolOutput {
        program: command.program().to_string_lossy().into_owned(),
        lines: said.lines().map(str::to_string).collect(),
    });
    match plan.source() {
        PlanSource::Product(product) => product_hints(error, product),
        PlanSource::LoadCommandFlag => error,
    }
}

/// The product's own hint on a failed load (k3s needs root, ...), then its registry guide.
fn product_hints(mut error: Error, product: ProductKind) -> Error {
    if let Some(hint) = product.loader_cli().and_then(|cli| cli.failure_hint) {
        error = error.with_hint(hint);
    }
    error.with_hint(format!(
        "or give the cluster a registry to push to instead: {}",
        product.registry_guide()
    ))
}

/// The last lines a failed tool printed, kept as the error's cause.
#[derive(Debug)]
struct ToolOutput {
    program: String,
    lines: Vec<String>,
}

impl fmt::Display for ToolOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lines.is_empty() {
            return write!(f, "`{}` printed nothing", self.program);
        }
        write!(f, "`{}` said:", self.program)?;
        for line in &self.lines {
            write!(f, "\n    {line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ToolOutput {}
