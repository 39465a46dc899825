//! `kubectl registry why pod/NAME` (or `deploy/NAME`): for each container whose image does not
//! start, the cause, its evidence and the fix, from the pod's status and events, what the cluster
//! advertises, what the registry holds and what the node is.

use crate::cli::{OutputFormat, WhyArgs};
use crate::cluster::ClusterOptions;
use crate::cluster::client::Cluster;
use crate::cluster::discovery;
use crate::diagnosis::{examine, parse_target, read_pod};
use crate::error::{Context, ExitCode, Result};
use crate::output::Printer;
use crate::settings::Settings;

pub async fn run(
    args: &WhyArgs,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    let target = parse_target(&args.target)?;
    let discovered = discovery::discover(cluster_args, settings, printer).await?;
    let connected;
    let cluster = match &discovered.cluster {
        Some(cluster) => cluster,
        None => {
            connected = Cluster::connect(cluster_args, settings, printer).await?;
            &connected
        }
    };
    let namespace = cluster.namespace().to_string();
    let pod = read_pod(cluster, &namespace, &target).await?;
    let report = examine(
        &discovered,
        cluster,
        pod,
        &(&args.access).into(),
        settings,
        printer,
    )
    .await?;
    let text = match args.output.output {
        OutputFormat::Json => serde_json::to_string_pretty(&report)
            .context(ExitCode::Failure, || "writing the report as JSON")?,
        OutputFormat::Text => report.render(),
    };
    printer.result(&text)?;
    report.verdict().map_or(Ok(()), Err)
}
