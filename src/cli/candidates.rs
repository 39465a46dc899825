//! What to offer for the words typed after `kubectl registry`, read from clap's own description
//! of the command line, in the shape kubectl's (cobra's) completion expects.

use std::fmt::Write as _;

use clap::{Arg, ArgAction, Command, ValueHint};

/// cobra's `ShellCompDirective`: how the shell treats the candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Directive(u8);

impl Directive {
    /// The shell completes file names when no candidate is given.
    pub const DEFAULT: Self = Self(0);
    /// No space after the completed word.
    pub const NO_SPACE: Self = Self(2);
    /// No file names, even when no candidate is given.
    pub const NO_FILE_COMP: Self = Self(4);
    /// Directory names only.
    pub const FILTER_DIRS: Self = Self(16);

    pub fn bits(self) -> u8 {
        self.0
    }

    pub fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// One completion: the word, and what it is (shown by zsh, fish and PowerShell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub value: String,
    pub description: Option<String>,
}

impl Candidate {
    fn new(value: impl Into<String>, description: Option<String>) -> Self {
        Self {
            value: value.into(),
            description,
        }
    }
}

/// The answer to one completion request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completions {
    pub candidates: Vec<Candidate>,
    pub directive: Directive,
}

impl Completions {
    fn offer(candidates: Vec<Candidate>) -> Self {
        Self {
            candidates,
            directive: Directive::NO_FILE_COMP,
        }
    }

    /// Nothing to offer, and file names would be wrong.
    fn nothing() -> Self {
        Self::offer(Vec::new())
    }

    /// Let the shell complete file names.
    fn files() -> Self {
        Self {
            candidates: Vec::new(),
            directive: Directive::DEFAULT,
        }
    }

    /// cobra's wire format: `value\tdescription` lines, then `:directive`.
    pub fn to_cobra(&self) -> String {
        let mut text = String::new();
        for candidate in &self.candidates {
            text.push_str(&candidate.value);
            if let Some(description) = &candidate.description {
                let _ = write!(text, "\t{description}");
            }
            text.push('\n');
        }
        let _ = writeln!(text, ":{}", self.directive.bits());
        text
    }
}

/// Completes `words`, the words after `kubectl registry`; the last one is the word being typed
/// (empty after a space). `local_images` is asked only when image names are worth offering.
pub fn complete(
    root: &Command,
    words: &[String],
    local_images: &mut dyn FnMut() -> Vec<String>,
) -> Completions {
    let (partial, typed) = match words.split_last() {
        Some((last, typed)) => (last.as_str(), typed),
        None => ("", words),
    };
    let at = Position::after(root, typed);

    if let Some(arg) = at.awaiting_value {
        return values(arg, partial);
    }
    if !at.after_double_dash && partial.starts_with('-') {
        if let Some((flag, value)) = partial.split_once('=') {
            return match find_flag(at.command, flag) {
                Some(arg) if takes_value(arg) => values(arg, value),
                _ => Completions::nothing(),
            };
        }
        return flags(&at, partial);
    }
    if !at.after_double_dash && at.positionals_seen == 0 && at.command.has_subcommands() {
        return subcommands(at.command, partial);
    }
    match positional(at.command, at.positionals_seen) {
        Some(arg) if is_image_source(at.command, arg) => image_or_archive(partial, local_images),
        Some(arg) => values(arg, partial),
        None => Completions::nothing(),
    }
}

/// Where the typed words leave us: which command, which of its arguments are spent.
struct Position<'c> {
    command: &'c Command,
    positionals_seen: usize,
    flags_used: Vec<&'c Arg>,
    awaiting_value: Option<&'c Arg>,
    after_double_dash: bool,
}

impl<'c> Position<'c> {
    fn at(command: &'c Command) -> Self {
        Self {
            command,
            positionals_seen: 0,
            flags_used: Vec::new(),
            awaiting_value: None,
            after_double_dash: false,
        }
    }

    fn after(root: &'c Command, typed: &[String]) -> Self {
        let mut at = Self::at(root);
        for word in typed {
            if at.awaiting_value.take().is_some() {
                continue;
            }
            if at.after_double_dash || word == "-" || !word.starts_with('-') {
                match at.command.find_subcommand(word) {
                    Some(sub) if !at.after_double_dash && at.positionals_seen == 0 => {
                        at = Self::at(sub);
                    }
                    _ => at.positionals_seen += 1,
                }
            } else if word == "--" {
                at.after_double_dash = true;
            } else {
                at.read_flag(word);
            }
        }
        at
    }

    /// `--name`, `--name=value`, `-x`, `-xyz`, `-ovalue`: notes the flags, and whether the next
    /// word is a flag's value.
    fn read_flag(&mut self, word: &str) {
        if let Some(long) = word.strip_prefix("--") {
            let (name, inline_value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            if let Some(arg) = find_long(self.command, name) {
                self.flags_used.push(arg);
                if takes_value(arg) && inline_value.is_none() {
                    self.awaiting_value = Some(arg);
                }
            }
            return;
        }
        let shorts = word.trim_start_matches('-');
        for (at, short) in shorts.char_indices() {
            let Some(arg) = find_short(self.command, short) else {
                return;
            };
            self.flags_used.push(arg);
            if takes_value(arg) {
                if at + short.len_utf8() == shorts.len() {
                    self.awaiting_value = Some(arg);
                }
                return;
            }
        }
    }

    fn used(&self, arg: &Arg) -> bool {
        self.flags_used
            .iter()
            .any(|used| used.get_id() == arg.get_id())
    }
}

fn flags(at: &Position<'_>, partial: &str) -> Completions {
    let mut candidates = Vec::new();
    let offer_shorts = !partial.starts_with("--");
    for arg in at.command.get_arguments() {
        if arg.is_positional() || arg.is_hide_set() || (at.used(arg) && !repeatable(arg)) {
            continue;
        }
        let description = summary(arg.get_help());
        if let Some(long) = arg.get_long().map(|long| format!("--{long}"))
            && long.starts_with(partial)
        {
            candidates.push(Candidate::new(long, description.clone()));
        }
        if let Some(short) = arg.get_short().map(|short| format!("-{short}"))
            && offer_shorts
            && short.starts_with(partial)
        {
            candidates.push(Candidate::new(short, description));
        }
    }
    Completions::offer(candidates)
}

fn subcommands(command: &Command, partial: &str) -> Completions {
    Completions::offer(
        command
            .get_subcommands()
            .filter(|sub| !sub.is_hide_set() && sub.get_name().starts_with(partial))
            .map(|sub| Candidate::new(sub.get_name(), summary(sub.get_about())))
            .collect(),
    )
}

/// A flag's or positional's values: its fixed choices, or what its value hint says.
fn values(arg: &Arg, partial: &str) -> Completions {
    let choices = arg.get_possible_values();
    if !choices.is_empty() {
        return Completions::offer(
            choices
                .iter()
                .filter(|choice| !choice.is_hide_set() && choice.get_name().starts_with(partial))
                .map(|choice| Candidate::new(choice.get_name(), summary(choice.get_help())))
                .collect(),
        );
    }
    match arg.get_value_hint() {
        ValueHint::AnyPath | ValueHint::FilePath | ValueHint::ExecutablePath => {
            Completions::files()
        }
        ValueHint::DirPath => Completions {
            candidates: Vec::new(),
            directive: Directive::FILTER_DIRS,
        },
        _ => Completions::nothing(),
    }
}

/// `push`'s source: an archive or layout on disk, or an image in the local engine.
fn is_image_source(command: &Command, arg: &Arg) -> bool {
    command.get_name() == "push" && arg.get_id() == "source"
}

/// Image names only when the word can be one and the engine has some that fit; file names from
/// the shell otherwise, so a path is never worse off than without this plugin.
fn image_or_archive(partial: &str, local_images: &mut dyn FnMut() -> Vec<String>) -> Completions {
    if looks_like_path(partial) {
        return Completions::files();
    }
    let mut candidates: Vec<Candidate> = local_images()
        .into_iter()
        .filter(|image| image.starts_with(partial))
        .map(|image| Candidate::new(image, Some("local image".to_string())))
        .collect();
    if candidates.is_empty() {
        return Completions::files();
    }
    // Candidates replace the shell's file names, so the files here are offered alongside.
    candidates.extend(
        entries_in_current_dir(partial)
            .into_iter()
            .map(|name| Candidate::new(name, None)),
    );
    Completions::offer(candidates)
}

fn looks_like_path(partial: &str) -> bool {
    partial.contains(['/', '\\']) || partial.starts_with(['.', '~'])
}

/// Names in the current directory starting with `prefix`, directories with a trailing `/`.
fn entries_in_current_dir(prefix: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(".") else {
        return Vec::new();
    };
    let mut entries: Vec<String> = dir
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            if !name.starts_with(prefix) || name.starts_with('.') {
                return None;
            }
            Some(if entry.path().is_dir() {
                format!("{name}/")
            } else {
                name
            })
        })
        .collect();
    entries.sort();
    entries
}

fn positional(command: &Command, index: usize) -> Option<&Arg> {
    let mut positionals: Vec<&Arg> = command.get_positionals().collect();
    positionals.sort_by_key(|arg| arg.get_index());
    positionals.into_iter().nth(index)
}

fn find_flag<'c>(command: &'c Command, flag: &str) -> Option<&'c Arg> {
    match flag.strip_prefix("--") {
        Some(long) => find_long(command, long),
        // cobra completes `-abo=` as the value of its last short flag.
        None => flag
            .chars()
            .last()
            .and_then(|short| find_short(command, short)),
    }
}

fn find_long<'c>(command: &'c Command, name: &str) -> Option<&'c Arg> {
    command.get_arguments().find(|arg| {
        arg.get_long() == Some(name)
            || arg
                .get_all_aliases()
                .is_some_and(|aliases| aliases.contains(&name))
    })
}

fn find_short(command: &Command, short: char) -> Option<&Arg> {
    command.get_arguments().find(|arg| {
        arg.get_short() == Some(short)
            || arg
                .get_all_short_aliases()
                .is_some_and(|aliases| aliases.contains(&short))
    })
}

fn takes_value(arg: &Arg) -> bool {
    !arg.is_positional() && arg.get_action().takes_values()
}

fn repeatable(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Append | ArgAction::Count)
}

/// The first line of a help text: cobra shows one line per candidate.
fn summary(help: Option<&clap::builder::StyledStr>) -> Option<String> {
    let help = help?.to_string();
    let line = help.lines().next()?.trim();
    (!line.is_empty()).then(|| line.to_string())
}

#[cfg(test)]
mod tests;
