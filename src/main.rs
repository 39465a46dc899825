//! Entry point: parse the command line, run it, render any error, exit with its code.

use clap::Parser;
use kubectl_registry::{cli::Cli, plumbing::output::Printer, settings::Settings};

fn main() -> std::process::ExitCode {
    // kubectl runs the same binary as `kubectl_complete-registry` to complete plugin arguments.
    if let Some(words) =
        kubectl_registry::commands::completion::kubectl_helper_words(std::env::args_os())
    {
        return kubectl_registry::commands::completion::run_kubectl_helper(&words);
    }
    let cli = Cli::parse();
    let settings = Settings::from_env();
    let no_color = settings.as_ref().is_ok_and(|settings| settings.no_color);
    let printer = Printer::new(cli.verbose, cli.quiet, !no_color);
    match settings.and_then(|settings| kubectl_registry::run(cli, &settings, &printer)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            printer.error(&err);
            std::process::ExitCode::from(err.exit_code() as u8)
        }
    }
}
