//! A program and its arguments, run directly (never through a shell), and how to say it so a
//! user can paste it.

use std::ffi::{OsStr, OsString};
use std::fmt;

/// One program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argv {
    program: OsString,
    args: Vec<OsString>,
}

impl Argv {
    pub fn new(program: impl Into<OsString>, args: impl IntoIterator<Item = OsString>) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().collect(),
        }
    }

    /// `program` with `args` given as text.
    pub fn of<S: AsRef<OsStr>>(
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = S>,
    ) -> Self {
        Self::new(
            program,
            args.into_iter().map(|arg| arg.as_ref().to_os_string()),
        )
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
impl fmt::Display for Argv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<String> = self.argv().iter().map(|word| shell_quote(word)).collect();
        f.write_str(&words.join(" "))
    }
}

/// `word` as a POSIX shell reads it back: as is when plain, else single-quoted.
pub(crate) fn shell_quote(word: &str) -> String {
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
