//! `kubectl registry advertise`: check the hosts, ask the registry, then write (or print, or
//! remove) the KEP-1755 ConfigMap.

use crate::cli::AdvertiseArgs;
use crate::cluster::ClusterOptions;
use crate::cluster::client::{Cluster, HostingWrites, Written};
use crate::cluster::hosting::{
    Advertisement, HOSTING_CONFIGMAP, HOSTING_NAME, HelpUrl, hosting_v1_key,
};
use crate::image::reference::RegistryHost;
use crate::image::registry::RegistryClient;
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::settings::Settings;

pub async fn run(
    args: &AdvertiseArgs,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    if args.delete {
        let cluster = Cluster::connect(cluster_args, settings, printer).await?;
        let written = HostingWrites::new(&cluster)
            .remove_hosting_key(&hosting_v1_key())
            .await?;
        return printer.result(&outcome_line(written));
    }
    let advertisement = advertisement_from(args)?;
    if !args.no_verify {
        verify(&advertisement, settings, printer).await;
    }
    if args.dry_run {
        // The YAML ends with its own newline.
        return printer.result(advertisement.configmap_yaml().trim_end());
    }
    let cluster = Cluster::connect(cluster_args, settings, printer).await?;
    let written = HostingWrites::new(&cluster)
        .set_hosting_key(&hosting_v1_key(), &advertisement.v1_value())
        .await?;
    printer.result(&outcome_line(written))
}

/// `configmap/local-registry-hosting created`, as kubectl says it.
fn outcome_line(written: Written) -> String {
    format!("configmap/{HOSTING_NAME} {}", written.as_str())
}

/// The flags, checked with the rules discovery reads the ConfigMap with; a bad one is a usage error.
fn advertisement_from(args: &AdvertiseArgs) -> Result<Advertisement> {
    let Some(raw_host) = args.host.as_deref() else {
        return Err(Error::new(
            ExitCode::Usage,
            "advertise needs the registry's HOST[:PORT] (or --delete)",
        ));
    };
    let host = |what: &str, raw: &str| {
        RegistryHost::parse(raw).map_err(|bad| {
            Error::new(ExitCode::Usage, format!("{what} is not usable"))
                .with_source(bad)
                .with_hint("give host[:port] alone, e.g. localhost:5001 or registry:5000")
        })
    };
    let help = args
        .help_url
        .as_deref()
        .map(|raw| {
            HelpUrl::parse(raw).map_err(|bad| {
                Error::new(ExitCode::Usage, "--help-url is not usable")
                    .with_source(bad)
                    .with_hint("give a web page users can open, e.g. https://kind.sigs.k8s.io/docs/user/local-registry/")
            })
        })
        .transpose()?;
    Ok(Advertisement {
        host: host("HOST", raw_host)?,
        host_from_container_runtime: args
            .from_runtime
            .as_deref()
            .map(|raw| host("--from-runtime", raw))
            .transpose()?,
        host_from_cluster_network: args
            .from_cluster_network
            .as_deref()
            .map(|raw| host("--from-cluster-network", raw))
            .transpose()?,
        help,
    })
}

/// `GET /v2/` at `host`: a warning, never a refusal, when it does not answer like a registry
/// (the registry may start after the cluster, or be reachable only from where users push).
async fn verify(advertisement: &Advertisement, settings: &Settings, printer: &Printer) {
    let host = &advertisement.host;
    let transport = settings.transport_options();
    let answered = match RegistryClient::new(host, &transport) {
        Ok(client) => client.ping().await,
        Err(err) => Err(err),
    };
    match answered {
        Ok(()) => printer.debug(&format!("{host} answers GET /v2/ like a registry")),
        Err(err) => {
            let why = match err.causes() {
                causes if causes.is_empty() => err.message().to_string(),
                causes => causes.join(": "),
            };
            printer.warn(&format!(
                "{host} does not answer GET /v2/ like a registry from here ({why}); advertising it in ConfigMap {HOSTING_CONFIGMAP} anyway (--no-verify skips this check)"
            ));
        }
    }
}
