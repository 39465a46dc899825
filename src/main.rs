//! Entry point: parse the command line, run it, render any error, exit with its code.

use clap::Parser;
use kubectl_registry::{cli::Cli, output::Printer};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let printer = Printer::new(cli.verbose);
    match kubectl_registry::run(cli, &printer) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            printer.error(&err);
            std::process::ExitCode::from(err.exit_code() as u8)
        }
    }
}
