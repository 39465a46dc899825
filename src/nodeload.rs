//! The node-load target: a plan (the argv a product's CLI or `--load-command` runs on the
//! archive) and running it without a shell, its output kept off our stdout.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::digest::Digest;
use crate::error::{Error, ExitCode, Result};
use crate::output::Printer;
use crate::product::{KEP_1755_URL, ProductKind};

/// Where `--load-command` puts the archive's path.
pub const ARCHIVE_PLACEHOLDER: &str = "{archive}";

/// Lines of a failed command's output kept for the error.
const TAIL_LINES: usize = 20;
/// Longer lines are cut: a tool printing megabytes without a newline must not grow our memory.
const MAX_LINE_BYTES: usize = 2048;

/// One program and its arguments, run directly (never through a shell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadCommand {
    program: OsString,
    args: Vec<OsString>,
}

impl LoadCommand {
    pub fn new(program: impl Into<OsString>, args: impl IntoIterator<Item = OsString>) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().collect(),
        }
    }

    pub fn program(&self) -> &OsStr {
        &self.program
    }

    pub fn args(&self) -> &[OsString] {
        &self.args
    }

    /// Program and arguments as text (lossy for non-UTF-8 paths), for JSON and tests.
    pub fn argv(&self) -> Vec<String> {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }
}

/// Shell-quoted, so that a user can paste it.
impl fmt::Display for LoadCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<String> = self.argv().iter().map(|word| shell_quote(word)).collect();
        f.write_str(&words.join(" "))
    }
}

fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@%+=:,./_-".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A second command to try when the first one says its subcommand does not exist (older CLIs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    pub command: LoadCommand,
    /// Text in the first command's output that means "unknown subcommand".
    pub when_output_contains: &'static str,
}

/// Who wrote the plan: the detected product, or the user's `--load-command`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanSource {
    Product(ProductKind),
    LoadCommandFlag,
}

/// What push would run to load an archive into the nodes, and how to say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadPlan {
    command: LoadCommand,
    fallback: Option<Fallback>,
    description: String,
    target: String,
    source: PlanSource,
    env: Vec<(OsString, OsString)>,
}

impl LoadPlan {
    /// `target` names where the image goes, for sentences (`kind cluster "dev"`).
    pub fn new(
        command: LoadCommand,
        fallback: Option<Fallback>,
        description: String,
        target: String,
        source: PlanSource,
    ) -> Self {
        Self {
            command,
            fallback,
            description,
            target,
            source,
            env: Vec::new(),
        }
    }

    /// The user's `--load-command`: split into words as a shell would (quotes and backslashes
    /// honoured, nothing expanded), `{archive}` replaced by the archive's path in any word.
    pub fn from_template(template: &str, archive: &Path) -> Result<Self> {
        let words = split_words(template).map_err(|problem| template_error(template, problem))?;
        if !words.iter().any(|word| word.contains(ARCHIVE_PLACEHOLDER)) {
            return Err(template_error(template, TemplateProblem::NoPlaceholder));
        }
        let mut argv = words
            .iter()
            .map(|word| substitute(word, archive.as_os_str()));
        let program = argv
            .next()
            .ok_or_else(|| template_error(template, TemplateProblem::Empty))?;
        let command = LoadCommand::new(program, argv);
        let description = format!("load the image with your --load-command: `{command}`");
        Ok(Self::new(
            command,
            None,
            description,
            "the cluster".to_string(),
            PlanSource::LoadCommandFlag,
        ))
    }

    /// Sets an environment variable for the command (`PATH` decides where the program is found).
    pub fn with_env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn command(&self) -> &LoadCommand {
        &self.command
    }

    pub fn fallback(&self) -> Option<&Fallback> {
        self.fallback.as_ref()
    }

    /// What push would do, for `info`.
    pub fn description(&self) -> &str {
        &self.description
    }

    pub fn source(&self) -> PlanSource {
        self.source
    }
}

#[derive(Debug, PartialEq, Eq)]
enum TemplateProblem {
    Empty,
    UnclosedQuote(char),
    TrailingBackslash,
    NoPlaceholder,
}

fn template_error(template: &str, problem: TemplateProblem) -> Error {
    let what = match problem {
        TemplateProblem::Empty => "it names no program".to_string(),
        TemplateProblem::UnclosedQuote(quote) => format!("a {quote} quote is never closed"),
        TemplateProblem::TrailingBackslash => "it ends with a lone backslash".to_string(),
        TemplateProblem::NoPlaceholder => {
            format!("it has no {ARCHIVE_PLACEHOLDER} to put the archive's path in")
        }
    };
    Error::new(
        ExitCode::Usage,
        format!("reading --load-command {}: {what}", shell_quote(template)),
    )
    .with_hint(format!(
        "write the command as you would in a shell, with {ARCHIVE_PLACEHOLDER} where the archive goes: --load-command 'mycluster load {ARCHIVE_PLACEHOLDER}'"
    ))
}

/// POSIX shell word splitting without expansion: `'...'` is literal, `"..."` honours `\"`,
/// `\\`, `\$` and `` \` ``, a backslash outside quotes escapes the next character.
fn split_words(text: &str) -> Result<Vec<String>, TemplateProblem> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(TemplateProblem::UnclosedQuote('\'')),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(TemplateProblem::UnclosedQuote('"')),
                        },
                        Some(c) => word.push(c),
                        None => return Err(TemplateProblem::UnclosedQuote('"')),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => {
                    in_word = true;
                    word.push(c);
                }
                None => return Err(TemplateProblem::TrailingBackslash),
            },
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(TemplateProblem::Empty);
    }
    Ok(words)
}

/// `word` with every `{archive}` replaced by `archive`, kept as an OsString: paths need not be UTF-8.
fn substitute(word: &str, archive: &OsStr) -> OsString {
    let mut out = OsString::new();
    let mut pieces = word.split(ARCHIVE_PLACEHOLDER);
    if let Some(first) = pieces.next() {
        out.push(first);
    }
    for piece in pieces {
        out.push(archive);
        out.push(piece);
    }
    out
}

/// Runs the plan: its output is captured (never on our stdout), a spinner shows at a terminal,
/// and on success one status line on stderr says what was done.
pub async fn run(plan: &LoadPlan, printer: &Printer) -> Result<()> {
    let progress = Progress::start(printer, format!("loading the image into {}", plan.target));
    let watch = plan.fallback.as_ref().map(|f| f.when_output_contains);
    let mut ran = &plan.command;
    let mut finished = execute(plan, ran, watch, &progress, printer).await?;
    if let Some(fallback) = &plan.fallback
        && !finished.status.success()
        && finished.saw_watched_text
    {
        printer.debug(&format!(
            "`{ran}` is not supported here; trying `{}`",
            fallback.command
        ));
        ran = &fallback.command;
        finished = execute(plan, ran, None, &progress, printer).await?;
    }
    drop(progress);
    if !finished.status.success() {
        return Err(failed(plan, ran, finished));
    }
    printer.status(&format!(
        "loaded the image into {} with `{ran}`",
        plan.target
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
    let mut child = tokio::process::Command::new(&command.program)
        .args(&command.args)
        .envs(plan.env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| not_started(plan, command, err))?;
    let program = command.program.to_string_lossy();
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
struct Progress(ProgressBar);

impl Progress {
    fn start(printer: &Printer, message: String) -> Self {
        if !printer.interactive() {
            return Self(ProgressBar::hidden());
        }
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}") {
            bar.set_style(style);
        }
        bar.set_message(message.clone());
        bar.set_prefix(message);
        bar.enable_steady_tick(Duration::from_millis(120));
        Self(bar)
    }

    fn show_line(&self, printer: &Printer, program: &str, line: &str) {
        if !self.0.is_hidden() {
            let short: String = line.chars().take(60).collect();
            self.0.set_message(format!("{}: {short}", self.0.prefix()));
        }
        if printer.verbose() > 0 {
            self.0
                .suspend(|| printer.debug(&format!("  {program}: {line}")));
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// The command could not be started: most often, it is not installed.
fn not_started(plan: &LoadPlan, command: &LoadCommand, err: std::io::Error) -> Error {
    let program = command.program.to_string_lossy();
    let missing = err.kind() == std::io::ErrorKind::NotFound;
    match plan.source {
        PlanSource::Product(product) if missing => {
            let mut error = Error::new(
                ExitCode::Load,
                format!(
                    "loading the image into {}: `{program}` is not installed (not found on PATH)",
                    plan.target
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
                plan.target
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
            plan.target, finished.status
        ),
    )
    .with_source(ToolOutput {
        program: command.program.to_string_lossy().into_owned(),
        lines: said.into(),
    });
    match plan.source {
        PlanSource::Product(ProductKind::K3s) => product_hints(
            error.with_hint(format!(
                "k3s ctr needs root on the node: run as root, or --load-command 'sudo k3s ctr -n k8s.io images import {ARCHIVE_PLACEHOLDER}'"
            )),
            ProductKind::K3s,
        ),
        PlanSource::Product(product) => product_hints(error, product),
        PlanSource::LoadCommandFlag => error,
    }
}

fn product_hints(mut error: Error, product: ProductKind) -> Error {
    if matches!(product, ProductKind::RancherDesktop | ProductKind::Colima) {
        error = error.with_hint(format!(
            "on the containerd runtime, load with --load-command 'nerdctl -n k8s.io load -i {ARCHIVE_PLACEHOLDER}'"
        ));
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
    let cluster = context.map_or("the current cluster".to_string(), |c| {
        format!("cluster \"{c}\"")
    });
    Error::new(
        ExitCode::Load,
        format!(
            "no way to get the image into {cluster}: it advertises no local registry (no ConfigMap kube-public/local-registry-hosting) and is no product whose nodes we know how to load into"
        ),
    )
    .with_hint(format!(
        "give the cluster a registry and advertise it in kube-public/local-registry-hosting (KEP-1755): {KEP_1755_URL}"
    ))
    .with_hint("or push to a registry its nodes can pull from: --registry HOST[:PORT]")
    .with_hint(format!(
        "or load the image your own way: --load-command 'PROGRAM ARGS... {ARCHIVE_PLACEHOLDER}'"
    ))
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

    fn words(text: &str) -> Vec<String> {
        split_words(text).unwrap()
    }

    #[test]
    fn splits_words_like_a_shell_without_expanding() {
        assert_eq!(words("  load  {archive} "), vec!["load", "{archive}"]);
        assert_eq!(
            words(r#"my\ tool 'a b' "c \"d\" \$HOME \x" e'f'"g" '' $HOME"#),
            vec!["my tool", "a b", r#"c "d" $HOME \x"#, "efg", "", "$HOME"]
        );
        assert_eq!(words("a\\\nb"), vec!["ab"]);
    }

    #[test]
    fn reports_unclosed_quotes_and_lone_backslashes() {
        assert_eq!(
            split_words("a 'b"),
            Err(TemplateProblem::UnclosedQuote('\''))
        );
        assert_eq!(
            split_words("a \"b"),
            Err(TemplateProblem::UnclosedQuote('"'))
        );
        assert_eq!(split_words("a \\"), Err(TemplateProblem::TrailingBackslash));
        assert_eq!(split_words("   "), Err(TemplateProblem::Empty));
    }

    #[test]
    fn template_puts_the_archive_path_in_place_as_one_argument() {
        let archive = Path::new("/tmp/my images/img.tar");
        let plan = LoadPlan::from_template(
            r#"mycluster load --file={archive} --name "dev cluster" 'x{archive}y'"#,
            archive,
        )
        .unwrap();
        assert_eq!(
            plan.command().argv(),
            vec![
                "mycluster",
                "load",
                "--file=/tmp/my images/img.tar",
                "--name",
                "dev cluster",
                "x/tmp/my images/img.tary",
            ]
        );
        assert_eq!(plan.source(), PlanSource::LoadCommandFlag);
        assert_eq!(
            plan.description(),
            "load the image with your --load-command: `mycluster load '--file=/tmp/my images/img.tar' --name 'dev cluster' 'x/tmp/my images/img.tary'`"
        );
    }

    #[test]
    fn template_without_the_placeholder_is_a_usage_error_that_shows_how() {
        let err = LoadPlan::from_template("mycluster load", Path::new("/a.tar")).unwrap_err();
        assert_eq!(err.exit_code(), ExitCode::Usage);
        assert_eq!(
            err.message(),
            "reading --load-command 'mycluster load': it has no {archive} to put the archive's path in"
        );
        assert!(err.hints()[0].contains("--load-command 'mycluster load {archive}'"));

        let err = LoadPlan::from_template("load '{archive}", Path::new("/a.tar")).unwrap_err();
        assert_eq!(
            err.message(),
            "reading --load-command 'load '\\''{archive}': a ' quote is never closed"
        );
    }

    #[test]
    fn display_quotes_only_what_a_shell_would_split() {
        let command = LoadCommand::new(
            "kind",
            ["load", "it's here", "--name", "a=b:c/d.e"].map(OsString::from),
        );
        assert_eq!(
            command.to_string(),
            r"kind load 'it'\''s here' --name a=b:c/d.e"
        );
    }

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
        assert!(hints.contains(KEP_1755_URL));
        assert!(hints.contains("--registry HOST[:PORT]"));
        assert!(hints.contains("--load-command 'PROGRAM ARGS... {archive}'"));
    }
}
