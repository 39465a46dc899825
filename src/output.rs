//! The Printer: the result on stdout; progress, warnings and errors on stderr.

use std::io::{IsTerminal, Write};

use crate::error::Error;

/// Where everything the user sees goes, and how much of it: the one owner of the quiet, verbose,
/// colour and progress decisions. stdout carries only results.
#[derive(Debug, Clone)]
pub struct Printer {
    verbose: u8,
    quiet: bool,
    stderr_is_terminal: bool,
    color: bool,
    stdout_color: bool,
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

    /// The command's result, alone on stdout.
    pub fn result(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        // A closed pipe (`| head`) is not worth a panic.
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }

    pub fn warn(&self, text: &str) {
        if !self.quiet {
            self.labelled("warning", "33", text);
        }
    }

    /// Progress notes: shown at a terminal, or with -v; never with -q.
    pub fn status(&self, text: &str) {
        if (self.stderr_is_terminal && !self.quiet) || self.verbose > 0 {
            eprintln!("{text}");
        }
    }

    /// Detail shown only with -v.
    pub fn debug(&self, text: &str) {
        if self.verbose > 0 {
            eprintln!("{text}");
        }
    }

    pub fn error(&self, err: &Error) {
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
        eprintln!("{label}: {text}");
    }
}
