//! `kubectl registry info`: what discovery found and where from, as text or JSON.

use serde::Serialize;

use crate::cli::{ClusterArgs, InfoArgs, OutputFormat};
use crate::cluster::KubeconfigFacts;
use crate::discovery::{self, REGISTRY_HOST_ENV};
use crate::error::{Context, ExitCode, Result};
use crate::hosting::{HOSTING_CONFIGMAP, KEP_URL, LocalRegistry, RegistryHost, RegistrySource};
use crate::output::Printer;

/// Prints what discovery found. Finding no registry is a result, not a failure.
pub async fn run(args: &InfoArgs, cluster_args: &ClusterArgs, printer: &Printer) -> Result<()> {
    let discovered = discovery::discover(cluster_args, printer).await?;
    let report = Report::new(&discovered.kubeconfig, discovered.registry.as_ref());
    let text = match args.output.output {
        OutputFormat::Text => report.text(),
        OutputFormat::Json => serde_json::to_string_pretty(&report)
            .context(ExitCode::Failure, || "writing the report as JSON")?,
    };
    printer.result(&text);
    Ok(())
}

/// The `-o json` shape; field names are a public interface for scripts.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report<'a> {
    pub context: Option<&'a str>,
    pub cluster: Option<&'a str>,
    pub server: Option<&'a str>,
    /// Which product the cluster is (kind, k3d, ...); filled in once product detection exists.
    pub product: Option<String>,
    pub registry: Option<RegistryReport<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistryReport<'a> {
    pub host: &'a RegistryHost,
    pub host_from_container_runtime: &'a RegistryHost,
    pub host_from_cluster_network: Option<&'a RegistryHost>,
    pub help: Option<&'a str>,
    pub source: RegistrySource,
}

impl<'a> Report<'a> {
    pub fn new(kubeconfig: &'a KubeconfigFacts, registry: Option<&'a LocalRegistry>) -> Self {
        Self {
            context: kubeconfig.context.as_deref(),
            cluster: kubeconfig.cluster.as_deref(),
            server: kubeconfig.server.as_deref(),
            product: None,
            registry: registry.map(|r| RegistryReport {
                host: &r.host,
                host_from_container_runtime: &r.host_from_container_runtime,
                host_from_cluster_network: r.host_from_cluster_network.as_ref(),
                help: r.help.as_deref(),
                source: r.source,
            }),
        }
    }

    /// Aligned `label: value` lines for a terminal.
    pub fn text(&self) -> String {
        let in_cluster = self.context.is_none() && self.server.is_some();
        let mut lines = vec![
            (
                "context",
                self.context
                    .unwrap_or(if in_cluster { "(in-cluster)" } else { "(none)" })
                    .to_string(),
            ),
            ("cluster", self.cluster.unwrap_or("(none)").to_string()),
            ("server", self.server.unwrap_or("(none)").to_string()),
        ];
        let Some(registry) = &self.registry else {
            lines.push(("registry", "none advertised".to_string()));
            return format!("{}\n\n{}", aligned(&lines), none_advertised());
        };
        lines.extend([
            ("registry host", registry.host.to_string()),
            (
                "runtime host",
                registry.host_from_container_runtime.to_string(),
            ),
            (
                "cluster-network host",
                registry
                    .host_from_cluster_network
                    .map_or_else(|| "(not advertised)".to_string(), ToString::to_string),
            ),
            ("help", registry.help.unwrap_or("(none)").to_string()),
            ("source", describe(registry.source).to_string()),
        ]);
        aligned(&lines)
    }
}

fn none_advertised() -> String {
    format!(
        "No local registry advertised: nothing in ConfigMap {HOSTING_CONFIGMAP},\n\
         node annotations or a microk8s registry Service names one.\n\
         Ways out:\n  \
         - run a registry that advertises itself in that ConfigMap (KEP-1755):\n    \
         {KEP_URL}\n  \
         - or name one: --registry HOST[:PORT] (or {REGISTRY_HOST_ENV})"
    )
}

fn describe(source: RegistrySource) -> String {
    match source {
        RegistrySource::Flag => "--registry flag".to_string(),
        RegistrySource::Env => format!("{REGISTRY_HOST_ENV} environment variable"),
        RegistrySource::Configmap => format!("ConfigMap {HOSTING_CONFIGMAP} (KEP-1755)"),
        RegistrySource::Annotation => {
            "first node's annotation (tilt.dev/registry or kind.x-k8s.io/registry)".to_string()
        }
        RegistrySource::Microk8sService => {
            "Service container-registry/registry (microk8s registry addon)".to_string()
        }
    }
}

/// The widest label, so found and not-found reports line up the same way.
const LABEL_WIDTH: usize = "cluster-network host:".len();

fn aligned(lines: &[(&str, String)]) -> String {
    lines
        .iter()
        .map(|(label, value)| format!("{:<LABEL_WIDTH$} {value}", format!("{label}:")))
        .collect::<Vec<_>>()
        .join("\n")
}
