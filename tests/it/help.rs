//! Help text: every command shows kubectl-style examples that are valid command lines, fit an
//! 80-column terminal, and the top-level help documents every exit code.

use std::collections::BTreeSet;

use clap::Parser;
use kubectl_registry::cli::Cli;
use kubectl_registry::plumbing::error::ExitCode;

use crate::support::run::Run;

fn help(args: &[&str]) -> String {
    let home = tempfile::tempdir().unwrap();
    let run = Run::plugin(home.path()).args(args).output();
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (0, ""),
        "{args:?}: {run:?}"
    );
    run.stdout
}

/// The lines of a help section, from its heading to the next blank-line-separated heading.
fn section<'h>(help: &'h str, heading: &str) -> Vec<&'h str> {
    help.lines()
        .skip_while(|line| *line != heading)
        .skip(1)
        .take_while(|line| line.is_empty() || line.starts_with("  "))
        .collect()
}

/// The plugin's arguments in each example, e.g. `kubectl set image ... $(kubectl registry push
/// myimg:dev)` gives `push myimg:dev`.
fn example_invocations(examples: &[&str]) -> Vec<Vec<String>> {
    examples
        .iter()
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| line.split_once("kubectl registry ").map(|(_, rest)| rest))
        .map(|rest| {
            let command = rest.split([')', '|', '>', ';', '&']).next().unwrap_or(rest);
            command
                .split_whitespace()
                .map(|word| word.trim_matches(['"', '\'']).to_string())
                .collect()
        })
        .collect()
}

#[test]
fn every_command_shows_examples_that_parse_as_that_command() {
    for command in [
        "push",
        "info",
        "advertise",
        "doctor",
        "version",
        "completion",
    ] {
        for flag in ["-h", "--help"] {
            let text = help(&[command, flag]);
            let examples = section(&text, "Examples:");
            let invocations = example_invocations(&examples);
            assert!(
                !invocations.is_empty(),
                "{command} {flag} shows no examples:\n{text}"
            );
            for words in &invocations {
                assert_eq!(words[0], command, "{command}'s example runs {words:?}");
                let argv = std::iter::once("kubectl-registry".to_string()).chain(words.clone());
                if let Err(err) = Cli::try_parse_from(argv) {
                    panic!(
                        "example `kubectl registry {}` does not parse:\n{err}",
                        words.join(" ")
                    );
                }
            }
        }
    }
}

#[test]
fn top_level_examples_parse_and_comments_come_first() {
    let text = help(&["--help"]);
    let examples = section(&text, "Examples:");
    assert!(
        examples[0].starts_with("  # "),
        "kubectl style: a comment, then the command"
    );
    for words in example_invocations(&examples) {
        let argv = std::iter::once("kubectl-registry".to_string()).chain(words.clone());
        assert!(Cli::try_parse_from(argv).is_ok(), "{words:?}");
    }
}

#[test]
fn examples_fit_an_80_column_terminal() {
    for command in [
        &[][..],
        &["push"],
        &["info"],
        &["advertise"],
        &["doctor"],
        &["version"],
        &["completion"],
    ] {
        let args: Vec<&str> = command.iter().copied().chain(["--help"]).collect();
        let text = help(&args);
        for line in section(&text, "Examples:") {
            assert!(line.len() <= 80, "{args:?}: too wide to copy: {line:?}");
        }
    }
}

/// Every exit code; the match has no wildcard, so a new code stops this file compiling until
/// it is listed here, and then the help must document it.
fn all_exit_codes() -> Vec<ExitCode> {
    use ExitCode::*;
    let all = [
        Failure,
        Usage,
        Cluster,
        Input,
        Registry,
        Load,
        Interrupted,
        Terminated,
    ];
    for code in all {
        match code {
            Failure | Usage | Cluster | Input | Registry | Load | Interrupted | Terminated => {}
        }
    }
    all.to_vec()
}

#[test]
fn top_level_help_documents_every_exit_code() {
    let text = help(&["--help"]);
    let documented: BTreeSet<i32> = section(&text, "Exit codes:")
        .iter()
        .filter_map(|line| {
            let (code, meaning) = line.trim_start().split_once("  ")?;
            assert!(
                !meaning.trim().is_empty(),
                "exit code {code} has no meaning"
            );
            code.parse().ok()
        })
        .collect();
    let expected: BTreeSet<i32> = std::iter::once(0)
        .chain(all_exit_codes().into_iter().map(|code| code as i32))
        .collect();
    assert_eq!(documented, expected, "{text}");
}
