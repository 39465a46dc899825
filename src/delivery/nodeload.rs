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

use std::collections::VecDeque;
use std::fmt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::cluster::hosting::{HOSTING_CONFIGMAP, KEP_URL};
use crate::cluster::product::{Product, ProductKind};
use crate::error::{Error, ExitCode, Result};
use crate::image::digest::Digest;
use crate::output::Printer;

pub use deliver::{Delivered, Delivery, NodeReport, deliver};
pub use exec::run_tool;
pub use images::{
    DockerImage, ImageStore, NodeAccess, NodeImage, content as node_content, docker_images,
    node_images, node_names, remove as remove_node_images,
};
pub use nodes::NodeCluster;
pub use plan::{ARCHIVE_PLACEHOLDER, Fallback, LoadCommand, LoadPlan, PlanSource};
pub use survey::{NodeHoldings, NodeSurvey, survey};

/// Lines of a failed command's output kept for the error.
const TAIL_LINES: usize = 20;
/// Longer lines are cut: a tool printing megabytes without a newline must not grow our memory.
const MAX_LINE_BYTES: usize = 2048;

/// Runs the plan: its output is captured (never on our stdout), a spinner shows at a terminal,
/// and on success one status line on stderr says what was done.
pub async fn run(plan: &LoadPlan, printer: &Printer) -> Result<()> {
    let progress = Progress::start(printer, format!("loading the image into {}", plan.target()));
    let watch = plan.fallback().map(|f| f.when_output_contains);
    let mut ran = plan.command();
    let mut finished = execute(plan, ran, watch, &progress, printer).await?;
    if let Some(fallback) = plan.fallback()
        && !finished.status.success()
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
        finished = execute(plan, ran, None, &progress, printer).await?;
    }
    drop(progress);
    if !finished.status.success() {
        return Err(failed(plan, ran, finished));
    }
    printer.status(&format!(
        "loaded the image into {} with `{ran}`",
        plan.target()
    ));
    Ok(())
}

/// How a command ended, with the ends of what it printed.
struct Finished {
    status: ExitStatus,
    stdout: Tail,
    stderr: Tail,
    saw_watched_text: bool,
}

async fn execute(
    plan: &LoadPlan,
    command: &LoadCommand,
    watch: Option<&str>,
    progress: &Progress,
    printer: &Printer,
) -> Result<Finished> {
    let mut child = tokio::process::Command::new(command.program())
        .args(command.args())
        .envs(plan.env().iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| not_started(plan, command, err))?;
    let program = command.program().to_string_lossy();
    let on_line = |line: &str| progress.show_line(printer, &program, line);
    let (stdout, stderr, status) = tokio::join!(
        drain(child.stdout.take(), watch, &on_line),
        drain(child.stderr.take(), watch, &on_line),
        child.wait(),
    );
    let reading = |err: std::io::Error| {
        Error::new(ExitCode::Load, format!("running `{command}`")).with_source(err)
    };
    let (stdout, stderr, status) = (
        stdout.map_err(reading)?,
        stderr.map_err(reading)?,
        status.map_err(reading)?,
    );
    Ok(Finished {
        status,
        saw_watched_text: stdout.saw_watched_text || stderr.saw_watched_text,
        stdout,
        stderr,
    })
}

/// Reads a child's pipe to its end, keeping only its last lines.
async fn drain(
    pipe: Option<impl AsyncRead + Unpin>,
    watch: Option<&str>,
    on_line: &impl Fn(&str),
) -> std::io::Result<Tail> {
    let mut tail = Tail::new(watch);
    let Some(mut pipe) = pipe else {
        return Ok(tail);
    };
    let mut buf = [0u8; 8192];
    loop {
        let read = pipe.read(&mut buf).await?;
        if read == 0 {
            break;
        }
        tail.push(&buf[..read], on_line);
    }
    tail.end_line(on_line);
    Ok(tail)
}

/// The last lines of a stream, each cut to a bounded length; notes whether a watched text passed.
#[derive(Debug, Default)]
struct Tail {
    lines: VecDeque<String>,
    partial: Vec<u8>,
    watch: Option<String>,
    saw_watched_text: bool,
}

impl Tail {
    fn new(watch: Option<&str>) -> Self {
        Self {
            watch: watch.map(str::to_string),
            ..Self::default()
        }
    }

    /// Progress bars redraw with `\r`, so it ends a line too.
    fn push(&mut self, bytes: &[u8], on_line: &impl Fn(&str)) {
        for &byte in bytes {
            if byte == b'\n' || byte == b'\r' {
                self.end_line(on_line);
            } else if self.partial.len() < MAX_LINE_BYTES {
                self.partial.push(byte);
            }
        }
    }

    fn end_line(&mut self, on_line: &impl Fn(&str)) {
        let line = String::from_utf8_lossy(&self.partial)
            .trim_end()
            .to_string();
        self.partial.clear();
        if line.is_empty() {
            return;
        }
        if self
            .watch
            .as_deref()
            .is_some_and(|text| line.contains(text))
        {
            self.saw_watched_text = true;
        }
        on_line(&line);
        self.lines.push_back(line);
        if self.lines.len() > TAIL_LINES {
            self.lines.pop_front();
        }
    }
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

/// The command could not be started: most often, it is not installed.
fn not_started(plan: &LoadPlan, command: &LoadCommand, err: std::io::Error) -> Error {
    let program = command.program().to_string_lossy();
    let missing = err.kind() == std::io::ErrorKind::NotFound;
    match plan.source() {
        PlanSource::Product(product) if missing => {
            let mut error = Error::new(
                ExitCode::Load,
                format!(
                    "loading the image into {}: `{program}` is not installed (not found on PATH)",
                    plan.target()
                ),
            )
            .with_source(err);
            if let Some(cli) = product.loader_cli() {
                error = error.with_hint(format!("install {program}: {}", cli.install_url));
            }
            product_hints(error, product)
        }
        PlanSource::LoadCommandFlag if missing => Error::new(
            ExitCode::Load,
            format!("running your --load-command `{command}`: `{program}` was not found"),
        )
        .with_source(err)
        .with_hint("name a program on PATH, or give its path"),
        _ => Error::new(
            ExitCode::Load,
            format!(
                "loading the image into {}: could not start `{command}`",
                plan.target()
            ),
        )
        .with_source(err),
    }
}

/// The command ran and failed: its exit status, and the end of what it said.
fn failed(plan: &LoadPlan, command: &LoadCommand, finished: Finished) -> Error {
    let said = if finished.stderr.lines.is_empty() {
        finished.stdout.lines
    } else {
        finished.stderr.lines
    };
    let error = Error::new(
        ExitCode::Load,
        format!(
            "loading the image into {}: `{command}` failed ({})",
            plan.target(),
            finished.status
        ),
    )
    .with_source(ToolOutput {
        program: command.program().to_string_lossy().into_owned(),
        lines: said.into(),
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
    fn tail_keeps_the_last_lines_cut_to_length_and_sees_watched_text() {
        let seen = std::cell::RefCell::new(Vec::new());
        let on_line = |line: &str| seen.borrow_mut().push(line.to_string());
        let mut tail = Tail::new(Some("not valid"));
        tail.push(b"'images' is not valid\r\n", &on_line);
        for i in 0..30 {
            tail.push(format!("line {i}\n").as_bytes(), &on_line);
        }
        tail.push(&vec![b'x'; MAX_LINE_BYTES * 3], &on_line);
        tail.end_line(&on_line);
        assert!(tail.saw_watched_text);
        assert_eq!(tail.lines.len(), TAIL_LINES);
        assert_eq!(tail.lines[0], "line 11");
        assert_eq!(tail.lines[TAIL_LINES - 1].len(), MAX_LINE_BYTES);
        assert_eq!(seen.borrow().len(), 32);
    }

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
