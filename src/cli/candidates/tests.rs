//! Completion candidates for the words kubectl hands its plugin helper.

use clap::CommandFactory;

use super::*;
use crate::cli::Cli;

fn command() -> Command {
    let mut command = Cli::command();
    command.build();
    command
}

fn complete_with_images(words: &[&str], images: &[&str]) -> Completions {
    let words: Vec<String> = words.iter().map(|word| word.to_string()).collect();
    let images: Vec<String> = images.iter().map(|image| image.to_string()).collect();
    complete(&command(), &words, &mut || images.clone())
}

fn complete_words(words: &[&str]) -> Completions {
    let words: Vec<String> = words.iter().map(|word| word.to_string()).collect();
    complete(&command(), &words, &mut || {
        panic!("local images asked for {words:?}")
    })
}

fn values_of(completions: &Completions) -> Vec<&str> {
    completions
        .candidates
        .iter()
        .map(|candidate| candidate.value.as_str())
        .collect()
}

#[test]
fn first_word_offers_the_visible_subcommands_with_their_about() {
    let completions = complete_words(&[""]);
    assert_eq!(
        values_of(&completions),
        [
            "push",
            "info",
            "advertise",
            "doctor",
            "ls",
            "prune",
            "why",
            "version",
            "completion"
        ]
    );
    assert_eq!(completions.directive, Directive::NO_FILE_COMP);
    assert_eq!(
        completions.candidates[0].description.as_deref(),
        Some(
            "Push an image archive (or a local engine's image) into the cluster and print its ref"
        )
    );
    assert_eq!(values_of(&complete_words(&["pu"])), ["push"]);
    assert_eq!(values_of(&complete_words(&["nope"])), Vec::<&str>::new());
}

#[test]
fn global_flags_before_the_subcommand_are_skipped_with_their_values() {
    let completions = complete_words(&["--context", "kind-dev", "-v", "in"]);
    assert_eq!(values_of(&completions), ["info"]);
}

#[test]
fn dash_dash_offers_the_subcommands_flags_including_globals() {
    let completions = complete_words(&["push", "--"]);
    let offered = values_of(&completions);
    for flag in ["--compression", "--tag", "--output", "--context", "--help"] {
        assert!(offered.contains(&flag), "{flag} missing from {offered:?}");
    }
    assert!(!offered.contains(&"-o"), "shorts only after a lone dash");
    let compression = completions
        .candidates
        .iter()
        .find(|candidate| candidate.value == "--compression");
    assert_eq!(
        compression.and_then(|candidate| candidate.description.as_deref()),
        Some("How to send uncompressed layers")
    );
}

#[test]
fn a_lone_dash_offers_short_forms_too() {
    let offered = complete_words(&["push", "-"]);
    let offered = values_of(&offered);
    assert!(offered.contains(&"-o") && offered.contains(&"-t") && offered.contains(&"--tag"));
}

#[test]
fn flags_already_given_are_not_offered_again_unless_repeatable() {
    let completions = complete_words(&["push", "--tag", "x:1", "-v", "--"]);
    let offered = values_of(&completions);
    assert!(!offered.contains(&"--tag"), "{offered:?}");
    assert!(offered.contains(&"--verbose"), "{offered:?}");
    assert!(offered.contains(&"--image"), "{offered:?}");
}

#[test]
fn enum_flag_values_come_from_clap_with_their_help() {
    let completions = complete_words(&["push", "--compression", ""]);
    assert_eq!(values_of(&completions), ["auto", "none", "gzip", "zstd"]);
    assert_eq!(
        completions.candidates[2].description.as_deref(),
        Some("Compress uncompressed layers with gzip")
    );
    assert_eq!(completions.directive, Directive::NO_FILE_COMP);
    assert_eq!(values_of(&complete_words(&["info", "-o", "j"])), ["json"]);
    assert_eq!(
        values_of(&complete_words(&["push", "x.tar", "--output=t"])),
        ["text"]
    );
}

#[test]
fn path_flags_let_the_shell_complete_files_and_free_text_flags_do_not() {
    assert_eq!(
        complete_words(&["push", "--ca-file", ""]),
        Completions::files()
    );
    assert_eq!(
        complete_words(&["--kubeconfig", "~/.ku"]),
        Completions::files()
    );
    assert_eq!(
        complete_words(&["push", "--tag", ""]),
        Completions::nothing()
    );
}

#[test]
fn completion_offers_its_shells() {
    assert_eq!(
        values_of(&complete_words(&["completion", ""])),
        ["bash", "elvish", "fish", "powershell", "zsh"]
    );
    assert_eq!(
        complete_words(&["completion", "bash", ""]),
        Completions::nothing()
    );
}

#[test]
fn push_source_is_files_when_the_engine_has_nothing() {
    assert_eq!(
        complete_with_images(&["push", ""], &[]),
        Completions::files()
    );
    assert_eq!(
        complete_with_images(&["push", "my"], &["other:1"]),
        Completions::files()
    );
}

#[test]
fn push_source_paths_never_ask_the_engine() {
    assert_eq!(complete_words(&["push", "./my"]), Completions::files());
    assert_eq!(complete_words(&["push", "dist/my"]), Completions::files());
}

#[test]
fn push_source_offers_matching_engine_images() {
    let completions =
        complete_with_images(&["push", "zz-test-my"], &["zz-test-myimg:dev", "other:1"]);
    assert_eq!(values_of(&completions), ["zz-test-myimg:dev"]);
    assert_eq!(completions.directive, Directive::NO_FILE_COMP);
}

#[test]
fn after_push_source_flags_still_complete_and_words_do_not() {
    assert_eq!(
        complete_words(&["push", "img.tar", ""]),
        Completions::nothing()
    );
    assert!(values_of(&complete_words(&["push", "img.tar", "--no"])).contains(&"--no-load"));
}

#[test]
fn words_after_double_dash_are_positionals() {
    assert_eq!(
        complete_with_images(&["push", "--", "-"], &[]),
        Completions::files()
    );
}

#[test]
fn wire_format_is_cobras() {
    let completions = Completions {
        candidates: vec![
            Candidate::new("push", Some("Push it".to_string())),
            Candidate::new("img:dev", None),
        ],
        directive: Directive::NO_FILE_COMP.with(Directive::NO_SPACE),
    };
    assert_eq!(completions.to_cobra(), "push\tPush it\nimg:dev\n:6\n");
}

#[test]
fn advertise_offers_its_flags_and_no_file_names_for_hosts() {
    assert_eq!(
        values_of(&complete_words(&["advertise", "--fr"])),
        ["--from-runtime", "--from-cluster-network"]
    );
    let host = complete_words(&["advertise", ""]);
    assert_eq!(values_of(&host), Vec::<&str>::new());
    assert_eq!(host.directive, Directive::NO_FILE_COMP);
}
