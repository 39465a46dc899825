//! `kubectl registry doctor`: walks every hop a push takes, one check each, never stopping early
//! (`diagnosis::doctor`); prints the checks, and exits 0 only when push would work.

use crate::cli::{DoctorArgs, OutputFormat};
use crate::cluster::ClusterOptions;
use crate::cluster::session::Session;
use crate::diagnosis::doctor::{self, Checkup};
use crate::plumbing::error::{Context, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::settings::Settings;

pub async fn run(
    args: &DoctorArgs,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    let session = Session::new(cluster_args, settings, printer);
    let asked = Checkup {
        pod: args.pod,
        access: (&args.access).into(),
    };
    let report = doctor::checkup(&asked, &session, cluster_args, settings, printer).await;
    match args.output.output {
        OutputFormat::Text => printer.styled_result(&report.text(printer.stdout_color()))?,
        OutputFormat::Json => printer.result(
            &serde_json::to_string_pretty(&report.checks)
                .context(ExitCode::Failure, || "writing the checks as JSON")?,
        )?,
    }
    report.verdict().map_or(Ok(()), Err)
}
