//! Shell completion: the scripts `completion SHELL` prints, and the helper kubectl runs as
//! `kubectl_complete-registry` to complete `kubectl registry <TAB>`.

mod local_images;

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use clap::CommandFactory;
use clap_complete::Shell;

pub use crate::cli::candidates::{Candidate, Completions, Directive, complete};

use crate::cli::Cli;
use crate::plumbing::error::{Context, ExitCode, Result};

/// The command the generated shell scripts complete: the binary called directly. A script
/// registered for `kubectl` would replace kubectl's own completion; `kubectl registry <TAB>` is
/// served by [`KUBECTL_HELPER_NAME`] instead.
pub const SCRIPT_BIN_NAME: &str = "kubectl-registry";

/// The executable kubectl 1.26+ looks up on PATH to complete the `registry` plugin's arguments.
pub const KUBECTL_HELPER_NAME: &str = "kubectl_complete-registry";

/// How long listing the local engine's images may take before completion goes on without them.
const LOCAL_IMAGES_TIMEOUT: Duration = Duration::from_millis(1000);

/// The completion script for `shell`, completing `kubectl-registry` called directly.
pub fn script(shell: Shell) -> Vec<u8> {
    let mut script = Vec::new();
    let mut command = Cli::command();
    // Building runs the derive's deferred setup, which sets the bin name "kubectl registry";
    // only then can every level be renamed (clap_complete keys bash's states on these names).
    command.build();
    set_bin_names(&mut command, SCRIPT_BIN_NAME);
    clap_complete::generate(shell, &mut command, SCRIPT_BIN_NAME, &mut script);
    if shell == Shell::Bash {
        script = fix_bash_states(&script);
    }
    script
}

/// clap_complete's bash script names a subcommand's state `kubectl__registry__subcmd__push` in
/// its dispatch loop but `kubectl__subcmd__registry__subcmd__push` in the case arm that offers
/// the subcommand's flags, so no flag after a subcommand ever completes for a hyphenated
/// binary (clap-rs/clap#6421). Spell the arms the way the loop does; a no-op once fixed.
fn fix_bash_states(script: &[u8]) -> Vec<u8> {
    const CMD_SEP: &str = "__subcmd__";
    let arm = format!("{}{CMD_SEP}", SCRIPT_BIN_NAME.replace('-', CMD_SEP));
    let state = format!("{}{CMD_SEP}", SCRIPT_BIN_NAME.replace('-', "__"));
    String::from_utf8_lossy(script)
        .replace(&arm, &state)
        .into_bytes()
}

fn set_bin_names(command: &mut clap::Command, bin_name: &str) {
    command.set_bin_name(bin_name);
    for subcommand in command.get_subcommands_mut() {
        let name = format!("{bin_name} {}", subcommand.get_name());
        set_bin_names(subcommand, &name);
    }
}

/// `kubectl registry completion SHELL`: prints the script on stdout.
pub fn print_script(shell: Shell) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(&script(shell))
        .and_then(|()| stdout.flush())
    {
        // A closed pipe (`| head`) is the reader's choice, not a failure.
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context(ExitCode::Failure, || {
            format!("writing the {shell} completion script to stdout")
        }),
    }
}

/// The words to complete when this process was started as [`KUBECTL_HELPER_NAME`] (argv0's
/// file name, `.exe` allowed), `None` when it runs as the plugin itself.
pub fn kubectl_helper_words(mut args: impl Iterator<Item = OsString>) -> Option<Vec<String>> {
    let argv0 = args.next()?;
    let file_name = Path::new(&argv0).file_name()?.to_string_lossy();
    let stem = strip_suffix_ignore_case(&file_name, ".exe").unwrap_or(&file_name);
    (stem == KUBECTL_HELPER_NAME).then(|| {
        args.map(|word| word.to_string_lossy().into_owned())
            .collect()
    })
}

/// Answers kubectl's completion request for `words` (the last one is the word being typed) in
/// cobra's format: one `candidate\tdescription` per line, then `:DIRECTIVE`.
pub fn run_kubectl_helper(words: &[String]) -> std::process::ExitCode {
    let mut command = Cli::command();
    command.build();
    let completions = complete(&command, words, &mut || {
        local_images::list(LOCAL_IMAGES_TIMEOUT)
    });
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(completions.to_cobra().as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // kubectl offers nothing when its helper fails; there is no one to tell on stderr.
        Err(_) => std::process::ExitCode::FAILURE,
    }
}

fn strip_suffix_ignore_case<'a>(text: &'a str, suffix: &str) -> Option<&'a str> {
    let split = text.len().checked_sub(suffix.len())?;
    let (stem, tail) = (text.get(..split)?, text.get(split..)?);
    tail.eq_ignore_ascii_case(suffix).then_some(stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Option<Vec<String>> {
        kubectl_helper_words(args.iter().map(OsString::from))
    }

    #[test]
    fn helper_is_recognised_by_argv0_file_name_with_or_without_exe() {
        assert_eq!(
            words(&["/home/me/.krew/bin/kubectl_complete-registry", "pu"]),
            Some(vec!["pu".to_string()])
        );
        assert_eq!(
            words(&["kubectl_complete-registry.EXE", "push", ""]),
            Some(vec!["push".to_string(), String::new()])
        );
        assert_eq!(words(&["kubectl_complete-registry"]), Some(vec![]));
    }

    #[test]
    fn plugin_names_are_not_the_helper() {
        assert_eq!(words(&["/usr/local/bin/kubectl-registry", "push"]), None);
        assert_eq!(words(&["kubectl_complete-registry-old"]), None);
        assert_eq!(words(&[]), None);
    }

    #[test]
    fn scripts_complete_the_binary_called_directly() {
        let bash = String::from_utf8_lossy(&script(Shell::Bash)).into_owned();
        let registrations: Vec<&str> = bash
            .lines()
            .map(str::trim)
            .filter(|line| line.starts_with("complete "))
            .collect();
        assert!(!registrations.is_empty(), "{bash}");
        for line in registrations {
            assert!(line.ends_with(" kubectl-registry"), "{line}");
        }
        let zsh = String::from_utf8_lossy(&script(Shell::Zsh)).into_owned();
        assert!(zsh.starts_with("#compdef kubectl-registry\n"), "{zsh}");
    }
}
