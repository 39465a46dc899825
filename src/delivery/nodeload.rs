//! The node-load target: running a plan's command without a shell, its output kept off our
//! stdout, and the errors when the image cannot get into the nodes that way.

mod check;
mod deliver;
mod exec;
mod images;
mod nodes;
mod plan;
mod product_plan;
mod survey;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::cluster::hosting::{HOSTING_CONFIGMAP, KEP_URL};
use crate::cluster::product::{Product, ProductKind};
use crate::error::{Error, ExitCode, Result};
use crate::image::digest::Digest;
use crate::limits::NODE_TIMEOUT_ENV;
use crate::output::Printer;
use crate::process::{Argv, Bound, Out, Output, ProcessError, Run};

pub use deliver::{Delivered, Delivery, NodeReport, deliver};
pub use exec::run_tool;
pub use images::{
    DockerImage, ImageStore, NodeAccess, NodeImage, content as node_content, docker_images,
    node_images, node_names, remove as remove_node_images,
};
pub use nodes::NodeCluster;
pub use plan::{ARCHIVE_PLACEHOLDER, Fallback, LoadPlan, PlanSource};
pub use survey::{NodeHoldings, NodeSurvey, survey};

/// Runs the plan: its output is captured (never on our stdout), a spinner shows at a terminal,
/// and on success one status line on stderr says what was done. `bound` is the node bound: the
/// product's CLI is stopped when it prints nothing for `FINISH_FACTOR` times it.
pub async fn run(plan: &LoadPlan, bound: Duration, printer: &Printer) -> Result<()> {
    let progress = Progress::start(printer, format!("loading the image into {}", plan.target()));
    let watch = plan.fallback().map(|f| f.when_output_contains);
    let quiet = bound * exec::FINISH_FACTOR;
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
            let short: String = crate::output::escape_control(line)
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

/// No registry advertised and no product we can load into: the ways out.
pub fn nothing_advertised(context: Option<&str>) -> Error {
    Error::new(
        ExitCode::Load,
        format!(
            "no way to get the image into {}: it advertises no local registry (no ConfigMap {HOSTING_CONFIGMAP}) and is no product whose nodes we know how to load into",
            cluster_phrase(context)
        ),
    )
    .with_hint(format!(
        "give the cluster a registry and advertise it in {HOSTING_CONFIGMAP} (KEP-1755): {KEP_URL}"
    ))
    .with_hint("or push to a registry its nodes can pull from: --registry HOST[:PORT]")
    .with_hint(format!(
        "or load the image your own way: --load-command 'PROGRAM ARGS... {ARCHIVE_PLACEHOLDER}'"
    ))
}

/// No registry advertised and `--no-load` given: the ways out, with this product's guide.
pub fn loading_refused(context: Option<&str>, product: &Product) -> Error {
    let error = Error::new(
        ExitCode::Load,
        format!(
            "no way to get the image into {}: it advertises no local registry (no ConfigMap {HOSTING_CONFIGMAP}), and --no-load forbids loading it into the nodes",
            cluster_phrase(context)
        ),
    )
    .with_hint(format!(
        "give the cluster a registry and advertise it in {HOSTING_CONFIGMAP}: {}",
        product.registry_guide()
    ))
    .with_hint("or push to a registry its nodes can pull from: --registry HOST[:PORT]");
    match product.kind.loader_cli() {
        Some(cli) => error.with_hint(format!(
            "or drop --no-load to load it into {} with `{}`",
            product.target_phrase(),
            cli.program
        )),
        None => error.with_hint(format!(
            "or drop --no-load and load it your own way: --load-command 'PROGRAM ARGS... {ARCHIVE_PLACEHOLDER}'"
        )),
    }
}

fn cluster_phrase(context: Option<&str>) -> String {
    context.map_or("the current cluster".to_string(), |c| {
        format!("cluster \"{c}\"")
    })
}

/// The tag a node-loaded image gets beside the user's: `TAG-<first 12 hex of the image ID>`.
///
/// The image ID (the config's digest) changes when and only when the content (config and
/// layer diff_ids) changes, whatever the compression; a new tag rolls pods where a reused one
/// does not; it is never `latest` (which means pull Always); and a tag resolves on the node,
/// where a digest ref of a loaded image does not (kind#2394). Tags are at most 128 characters.
pub fn node_load_tag(tag: &str, image_id: &Digest) -> String {
    const HEX: usize = 12;
    let keep = tag.len().min(128 - HEX - 1);
    // Tags are ASCII ([A-Za-z0-9_.-]), so any byte index is a char boundary; be safe anyway.
    let base = tag.get(..keep).unwrap_or(tag);
    format!("{base}-{}", &image_id.hex()[..HEX])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_load_tag_appends_the_image_id_and_stays_a_valid_tag() {
        let id: Digest = format!("sha256:{}", "0123456789ab".repeat(5) + "cdef")
            .parse()
            .unwrap();
        assert_eq!(node_load_tag("dev", &id), "dev-0123456789ab");
        assert_eq!(node_load_tag("latest", &id), "latest-0123456789ab");
        let long = "t".repeat(128);
        let tag = node_load_tag(&long, &id);
        assert_eq!(tag.len(), 128);
        assert!(tag.ends_with("-0123456789ab"));
    }

    #[test]
    fn nothing_advertised_names_the_configmap_and_every_way_out() {
        let err = nothing_advertised(Some("prod-like"));
        assert_eq!(err.exit_code(), ExitCode::Load);
        assert!(err.message().contains("cluster \"prod-like\""));
        assert!(err.message().contains("kube-public/local-registry-hosting"));
        let hints = err.hints().join("\n");
        assert!(hints.contains(KEP_URL));
        assert!(hints.contains("--registry HOST[:PORT]"));
        assert!(hints.contains("--load-command 'PROGRAM ARGS... {archive}'"));
    }
}
