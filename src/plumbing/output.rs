//! The Printer: the result on stdout; progress, warnings and errors on stderr, drawn around any
//! progress bars, with control characters from remote text escaped.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

use indicatif::MultiProgress;

use crate::plumbing::error::{Error, ExitCode};

/// How a command's result is printed on stdout (`-o`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

/// Where everything the user sees goes, and how much of it: the one owner of the quiet, verbose,
/// colour and progress decisions. stdout carries only results.
#[derive(Debug, Clone)]
pub struct Printer {
    verbose: u8,
    quiet: bool,
    stderr_is_terminal: bool,
    color: bool,
    stdout_color: bool,
    /// The progress bars on screen, which lines on stderr are drawn around.
    bars: Arc<Mutex<Option<MultiProgress>>>,
}

impl Printer {
    /// `color_allowed` is false under `NO_COLOR`; colour also needs stderr to be a terminal.
    pub fn new(verbose: u8, quiet: bool, color_allowed: bool) -> Self {
        let stderr_is_terminal = std::io::stderr().is_terminal();
        Self {
            verbose: if quiet { 0 } else { verbose },
            quiet,
            stderr_is_terminal,
            color: stderr_is_terminal && color_allowed,
            stdout_color: std::io::stdout().is_terminal() && color_allowed,
            bars: Arc::new(Mutex::new(None)),
        }
    }

    /// True when progress bars and the summary line should be drawn.
    pub fn interactive(&self) -> bool {
        self.stderr_is_terminal && !self.quiet
    }

    /// True when a result may be coloured: stdout is a terminal and `NO_COLOR` is unset.
    pub fn stdout_color(&self) -> bool {
        self.stdout_color
    }

    pub fn verbose(&self) -> u8 {
        self.verbose
    }

    /// Lines printed from now on are drawn around `bars` (hidden, printed, redrawn), not through them.
    pub fn attach_bars(&self, bars: &MultiProgress) {
        *self.lock_bars() = Some(bars.clone());
    }

    pub fn detach_bars(&self) {
        *self.lock_bars() = None;
    }

    /// The command's result, alone on stdout. Failing to write it (a full disk, a closed pipe)
    /// fails the command: a script must not take an empty answer for success.
    pub fn result(&self, text: &str) -> Result<(), Error> {
        self.write_result(&escape_control(text))
    }

    /// A result coloured by its caller (when [`stdout_color`](Self::stdout_color) allows):
    /// colour sequences (SGR, `ESC [ ... m`) stay; every other control character is escaped.
    pub fn styled_result(&self, text: &str) -> Result<(), Error> {
        self.write_result(&escape_keeping_colors(text))
    }

    fn write_result(&self, text: &str) -> Result<(), Error> {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{text}")
            .and_then(|()| out.flush())
            .map_err(|err| {
                Error::new(ExitCode::Failure, "writing the result to standard output")
                    .with_source(err)
            })
    }

    pub fn warn(&self, text: &str) {
        if !self.quiet {
            self.labelled("warning", "33", text);
        }
    }

    /// Progress notes: shown at a terminal, or with -v; never with -q.
    pub fn status(&self, text: &str) {
        if (self.stderr_is_terminal && !self.quiet) || self.verbose > 0 {
            self.line(text);
        }
    }

    /// A line the user is to see whatever stderr is (a terminal or a log): never with -q.
    pub fn note(&self, text: &str) {
        if !self.quiet {
            self.line(text);
        }
    }

    /// Detail shown only with -v.
    pub fn debug(&self, text: &str) {
        if self.verbose > 0 {
            self.line(text);
        }
    }

    /// Where the time went, shown only with -vv.
    pub fn timing(&self, text: &str) {
        if self.verbose > 1 {
            self.line(text);
        }
    }

    pub fn error(&self, err: &Error) {
        if err.is_quiet() {
            return;
        }
        self.labelled("error", "31", err.message());
        for cause in err.causes() {
            self.labelled("caused by", "2", &cause);
        }
        for hint in err.hints() {
            self.labelled("hint", "36", hint);
        }
    }

    fn labelled(&self, label: &str, ansi: &str, text: &str) {
        let label = if self.color {
            format!("\x1b[1;{ansi}m{label}\x1b[0m")
        } else {
            label.to_string()
        };
        self.emit(&format!("{label}: {}", escape_control(text)));
    }

    /// One line of text on stderr, escaped.
    fn line(&self, text: &str) {
        self.emit(&escape_control(text));
    }

    /// One line on stderr as it is, drawn around the progress bars when there are any.
    fn emit(&self, line: &str) {
        let print = || eprintln!("{line}");
        match self.lock_bars().as_ref() {
            Some(bars) => bars.suspend(print),
            None => print(),
        }
    }

    fn lock_bars(&self) -> std::sync::MutexGuard<'_, Option<MultiProgress>> {
        // One assignment per write: a poisoned value is still whole.
        self.bars
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Text from outside (registry bodies, API server messages, loader output, ConfigMap values)
/// made safe for a terminal: control characters (all but newline and tab), DEL, the C1 controls
/// and the bidirectional-text overrides are shown as `\uXXXX`, never sent to the terminal to act
/// on. The same escape is valid inside a JSON string, so JSON output may pass through it too.
pub fn escape_control(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if needs_escape(c) {
            escaped.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

/// The most characters of one value from outside that a message quotes.
pub const SHOWN_CHARS: usize = 120;

/// A value from outside (a host, a tag, a header, a ConfigMap field, a name in an archive) as a
/// message quotes it: in double quotes, every character but printable ASCII escaped (`\u{43e}`,
/// so a control, a look-alike letter or a bidi character is seen for what it is), and cut after
/// [`SHOWN_CHARS`] characters, saying how many more there were. A 10 MB value is a line, not 10 MB.
pub fn shown(text: &str) -> String {
    let (escaped, more) = escaped_start(text);
    format!("\"{escaped}\"{}", more_text(more))
}

/// [`shown`] without the quotes, for a value inside words of its own (`it has a path (/v2)`).
pub fn shown_bare(text: &str) -> String {
    let (escaped, more) = escaped_start(text);
    format!("{escaped}{}", more_text(more))
}

/// The first [`SHOWN_CHARS`] characters escaped, and how many characters follow them.
fn escaped_start(text: &str) -> (String, usize) {
    let mut escaped = String::with_capacity(text.len().min(SHOWN_CHARS) + 8);
    let mut chars = text.chars();
    for c in chars.by_ref().take(SHOWN_CHARS) {
        match c {
            ' '..='~' if c != '"' && c != '\\' => escaped.push(c),
            _ => escaped.extend(c.escape_default()),
        }
    }
    (escaped, chars.count())
}

/// The most characters of a message from outside that an error quotes as a paragraph.
pub const PARAGRAPH_CHARS: usize = 800;

/// A message from outside of several lines (a policy engine's refusal, as the API server relays
/// it) as one paragraph of an error: each run of whitespace one space, cut after
/// [`PARAGRAPH_CHARS`] characters, saying how many more there were. The printer escapes its
/// controls, as for every line.
pub fn paragraph(text: &str) -> String {
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut chars = words.chars();
    let start: String = chars.by_ref().take(PARAGRAPH_CHARS).collect();
    format!("{start}{}", more_text(chars.count()))
}

fn more_text(more: usize) -> String {
    match more {
        0 => String::new(),
        more => format!("... ({more} more characters)"),
    }
}

/// [`escape_control`], except that colour sequences (`ESC [` digits and `;`, then `m`) pass:
/// they change only colours, never the cursor, the screen or the title.
pub fn escape_keeping_colors(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(sgr) = sgr_prefix(rest) {
            escaped.push_str(sgr);
            rest = &rest[sgr.len()..];
            continue;
        }
        if needs_escape(c) {
            escaped.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            escaped.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(escaped)
}

/// The SGR sequence `text` starts with, if any.
fn sgr_prefix(text: &str) -> Option<&str> {
    let params = text.strip_prefix("\x1b[")?;
    let length = params
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    params[length..]
        .starts_with('m')
        .then(|| &text[.."\x1b[".len() + length + 1])
}

fn needs_escape(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        // C0 controls (ESC, BEL, CR, backspace...), DEL and the C1 controls (CSI as one byte).
        c if c.is_control() => true,
        // Bidirectional embeddings, overrides and isolates, and the marks: they reorder what is shown.
        '\u{200e}' | '\u{200f}' | '\u{061c}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        // Zero-width characters: invisible, they make two different texts look the same.
        '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{feff}' => true,
        _ => false,
    }
}

/// `1.2 MB`, `640 kB`, `312 B` (decimal units, as docker prints sizes).
pub fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000_000 => format!("{:.1} GB", b as f64 / 1e9),
        b if b >= 1_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        b if b >= 1_000 => format!("{:.0} kB", b as f64 / 1e3),
        b => format!("{b} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "the registry answered 400 Bad Request: größe\n\tline two";
        assert!(matches!(escape_control(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn terminal_controls_and_bidi_overrides_are_escaped() {
        assert_eq!(
            escape_control("a\x1b]0;title\x07b\rc\u{9b}31m"),
            "a\\u001b]0;title\\u0007b\\u000dc\\u009b31m"
        );
        assert_eq!(
            escape_control("safe\u{202e}txt.exe\u{2066}x\u{2069}\x7f"),
            "safe\\u202etxt.exe\\u2066x\\u2069\\u007f"
        );
        assert_eq!(
            escape_control("https://docs.\u{200b}example.com/\u{feff}x\u{2060}"),
            "https://docs.\\u200bexample.com/\\ufeffx\\u2060"
        );
    }

    #[test]
    fn colours_can_be_kept_and_nothing_else() {
        assert_eq!(
            escape_keeping_colors("\x1b[1;32mok\x1b[0m \x1b[2J\x1b]0;t\x07 \x1b[31"),
            "\x1b[1;32mok\x1b[0m \\u001b[2J\\u001b]0;t\\u0007 \\u001b[31"
        );
    }

    #[test]
    fn shown_values_are_quoted_escaped_and_cut() {
        assert_eq!(shown("kind-registry:5000"), r#""kind-registry:5000""#);
        assert_eq!(
            shown("a\"b\\c\x1b[2J\u{43e}"),
            r#""a\"b\\c\u{1b}[2J\u{43e}""#
        );
        let long = "x".repeat(10_000_000);
        let quoted = shown(&long);
        assert!(quoted.len() < 200, "{} bytes", quoted.len());
        assert!(quoted.ends_with(&format!(
            "... ({} more characters)",
            10_000_000 - SHOWN_CHARS
        )));
        assert_eq!(shown(&"y".repeat(SHOWN_CHARS)).len(), SHOWN_CHARS + 2);
    }

    #[test]
    fn escaped_json_stays_json_with_the_same_value() {
        let value = serde_json::json!({"help": "see\u{202e}\u{85}here"});
        let text = serde_json::to_string(&value).unwrap();
        let escaped = escape_control(&text);
        assert!(!escaped.contains('\u{202e}'));
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn sizes_read_in_decimal_units_as_docker_prints_them() {
        assert_eq!(human_size(999), "999 B");
        assert_eq!(human_size(640_000), "640 kB");
        assert_eq!(human_size(1_234_567), "1.2 MB");
        assert_eq!(human_size(3_000_000_000), "3.0 GB");
    }

    #[test]
    fn a_message_of_several_lines_is_one_paragraph_cut_at_its_bound() {
        assert_eq!(
            paragraph(
                "denied the request: \n\nresource Deployment/default/web was blocked\n  rule x\n"
            ),
            "denied the request: resource Deployment/default/web was blocked rule x"
        );
        let long = "word ".repeat(PARAGRAPH_CHARS);
        let cut = paragraph(&long);
        assert!(
            cut.ends_with(&format!(
                "... ({} more characters)",
                5 * PARAGRAPH_CHARS - 1 - PARAGRAPH_CHARS
            )),
            "{cut}"
        );
    }
}
