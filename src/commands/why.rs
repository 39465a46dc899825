//! `kubectl registry why pod/NAME` (or `deploy/NAME`): for each container whose image does not
//! start, the cause, its evidence and the fix, from the pod's status and events, what the cluster
//! advertises, what the registry holds and what the node is.

use crate::cli::{OutputFormat, WhyArgs};
use crate::cluster::ClusterOptions;
use crate::cluster::session::Session;
use crate::diagnosis::{Terminating, examine, parse_target, read_pod};
use crate::plumbing::error::{Context, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::settings::Settings;

pub async fn run(
    args: &WhyArgs,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    let target = parse_target(&args.target)?;
    let session = Session::new(cluster_args, settings, printer);
    let discovered = session.discover().await?;
    let cluster = session.cluster().await?;
    let namespace = cluster.namespace().to_string();
    let examined = read_pod(&cluster, &namespace, &target).await?;
    let mut report = examine(
        &session,
        &discovered,
        &cluster,
        examined.pod,
        &(&args.access).into(),
        settings,
        printer,
    )
    .await?;
    report
        .terminating
        .extend(examined.held.iter().filter_map(Terminating::of));
    report.not_created = examined.not_created;
    let text = match args.output.output {
        OutputFormat::Json => serde_json::to_string_pretty(&report)
            .context(ExitCode::Failure, || "writing the report as JSON")?,
        OutputFormat::Text => report.render(),
    };
    printer.result(&text)?;
    report.verdict().map_or(Ok(()), Err)
}
