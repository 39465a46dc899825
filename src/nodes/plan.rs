//! A node-load plan: the argv that loads an archive (a product's CLI or the user's
//! `--load-command`, split like shell words), what it is for, and how to say it.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use crate::cluster::product::ProductKind;
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::process::Argv;
use crate::plumbing::process::shell_quote;

/// Where `--load-command` puts the archive's path.
pub const ARCHIVE_PLACEHOLDER: &str = "{archive}";

/// A second command to try when the first one says its subcommand does not exist (older CLIs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    pub command: Argv,
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
    command: Argv,
    fallback: Option<Fallback>,
    description: String,
    target: String,
    source: PlanSource,
    env: Vec<(OsString, OsString)>,
}

impl LoadPlan {
    /// `target` names where the image goes, for sentences (`kind cluster "dev"`).
    pub fn new(
        command: Argv,
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
        let command = Argv::new(program, argv);
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

    pub fn command(&self) -> &Argv {
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

    /// Where the image goes, for sentences: `kind cluster "dev"`.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Environment variables set for the command, beside ours.
    pub fn env(&self) -> &[(OsString, OsString)] {
        &self.env
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
        let command = Argv::new(
            "kind",
            ["load", "it's here", "--name", "a=b:c/d.e"].map(OsString::from),
        );
        assert_eq!(
            command.to_string(),
            r"kind load 'it'\''s here' --name a=b:c/d.e"
        );
    }
}
