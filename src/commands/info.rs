//! `kubectl registry info`: what discovery found and where from, which product the cluster is,
//! which network we push from and so to which host, and what push would do, as text or JSON.

use std::path::Path;

use serde::Serialize;

use crate::cli::{InfoArgs, OutputFormat};
use crate::cluster::ClusterOptions;
use crate::cluster::client::{Cluster, OPENSHIFT_IMAGE_CONFIG};
use crate::cluster::hosting::{
    HOSTING_CONFIGMAP, KEP_URL, LocalRegistry, RegistrySource, openshift_repository,
};
use crate::cluster::kubeconfig::KubeconfigFacts;
use crate::cluster::network::{self, Network, Reason, Vantage};
use crate::cluster::product::{self, Product, ProductKind};
use crate::cluster::reach::{self, Decided};
use crate::cluster::route::TunnelWhy;
use crate::cluster::session::Session;
use crate::image::reference::RegistryHost;
use crate::nodes::{ARCHIVE_PLACEHOLDER, LoadPlan};
use crate::plumbing::error::{Context, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::settings::{REGISTRY_HOST_ENV, Settings};

/// Stands for the archive in the node-load command that `info` shows.
const ARCHIVE_SHOWN: &str = "<archive>";

/// Prints what discovery found. Finding no registry is a result, not a failure.
pub async fn run(
    args: &InfoArgs,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    let session = Session::new(cluster_args, settings, printer);
    let discovered = session.discover().await?;
    let product = match &discovered.cluster {
        Some(cluster) => {
            Some(detect_product(cluster, discovered.registry.as_ref(), printer).await?)
        }
        None => None,
    };
    let namespace = discovered.cluster.as_ref().map(Cluster::namespace);
    let decided = match &discovered.registry {
        Some(registry) => Some(reach::decide(&discovered, registry, printer).await),
        None => None,
    };
    let tunnel = match &decided {
        Some(Ok(Decided::Tunnel(service, why))) => Some(TunnelPreview {
            service: format!("{}/{}", service.namespace, service.name),
            port: service.port,
            why: *why,
            tls_name: service.dns_name(
                discovered
                    .registry
                    .as_ref()
                    .and_then(|registry| registry.host_from_cluster_network.as_ref()),
            ),
            said: format!("{service}"),
            because: discovered
                .registry
                .as_ref()
                .map(|registry| why.text(registry))
                .unwrap_or_default(),
        }),
        _ => None,
    };
    let report = Report::new(
        &discovered.kubeconfig,
        discovered.registry.as_ref(),
        discovered.help.as_deref(),
        product.as_ref(),
        Preview {
            vantage: discovered.vantage,
            namespace,
            tunnel: tunnel.as_ref(),
        },
    );
    let text = match args.output.output {
        OutputFormat::Text => report.text(),
        OutputFormat::Json => serde_json::to_string_pretty(&report)
            .context(ExitCode::Failure, || "writing the report as JSON")?,
    };
    printer.result(&text)
}

/// The product from the nodes (listed once, shared with discovery), the kubeconfig's names, and
/// whether the cluster serves OpenShift's image config.
async fn detect_product(
    cluster: &Cluster,
    registry: Option<&LocalRegistry>,
    printer: &Printer,
) -> Result<Product> {
    let nodes = cluster.nodes().await?;
    if nodes.is_empty() {
        printer.debug("no node facts, so the product is told from the kubeconfig's names alone");
    }
    let serves_openshift_config = registry.is_some_and(|r| r.source == RegistrySource::Openshift);
    Ok(product::detect(cluster.facts(), &nodes).on_openshift(serves_openshift_config))
}

/// The `-o json` shape; field names are a public interface for scripts:
///
/// - `context`, `cluster`, `server`: the kubeconfig's context, its cluster entry's name and that
///   cluster's server URL; null when absent (in a pod, `context` and `cluster` are null; with
///   `--registry` and no kubeconfig, all three are).
/// - `product`: `{"kind": "kind" | "k3d" | "minikube" | "microk8s" | "k3s" | "docker-desktop" |
///   "orbstack" | "colima" | "rancher-desktop" | "unknown", "clusterName": string | null}`
///   (`clusterName`: the kind or k3d cluster, the minikube or Colima profile); null only when
///   the cluster was not contacted because `--registry` or `KUBECTL_REGISTRY_HOST` named the
///   registry.
/// - `registry`: null when none is advertised, else `host` (where push sends the image),
///   `hostFromContainerRuntime` (what printed refs name), `hostFromClusterNetwork` (null when
///   not advertised), `help` (the registry's guide, or null), `source` (`flag`, `env`,
///   `configmap`, `minikube-addon`, `openshift`, `annotation` or `microk8s-service`).
/// - `registryGuide`: the hosting ConfigMap's `help` link, or null; set also when it advertises
///   no registry (microk8s's ConfigMap while its registry addon is off), as how to set one up.
/// - `push`: what `kubectl registry push` would do: `method` (`registry`, `node-load` or
///   `none`, which means push would fail), `network` (`host` or `cluster`: where push runs) and
///   `networkReason` (`flag`, `in-cluster`, `kubeconfig` or `registry-named`), `host` (the
///   registry host push would upload to, or null) and a one-line `description`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report<'a> {
    pub context: Option<&'a str>,
    pub cluster: Option<&'a str>,
    pub server: Option<&'a str>,
    pub product: Option<&'a Product>,
    pub registry: Option<RegistryReport<'a>>,
    pub registry_guide: Option<&'a str>,
    pub push: PushPreview,
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

/// How push would get an image into the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PushMethod {
    Registry,
    NodeLoad,
    /// No registry and no product to load into: push would fail.
    #[serde(rename = "none")]
    Unavailable,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushPreview {
    pub method: PushMethod,
    pub network: Network,
    pub network_reason: Reason,
    pub host: Option<RegistryHost>,
    pub description: String,
    /// Through a tunnel through the API server: to which Service, and why (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tunnel: Option<TunnelPreview>,
    #[serde(skip)]
    vantage: Vantage,
}

/// `push.tunnel` in `-o json`: `service` (`namespace/name`), its `port` (or null), `why`
/// (`flag`, `no-host`, `minikube-addon` or `host-silent`), `tlsName` (the Service's DNS name,
/// which TLS is tried with first and the certificate checked against).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TunnelPreview {
    pub service: String,
    pub port: Option<u16>,
    pub why: TunnelWhy,
    pub tls_name: String,
    #[serde(skip)]
    said: String,
    #[serde(skip)]
    because: String,
}

/// Where push would run from, and into which namespace.
#[derive(Debug, Clone, Copy)]
pub struct Preview<'a> {
    pub vantage: Vantage,
    /// The cluster's namespace; `None` when the cluster was not contacted.
    pub namespace: Option<&'a str>,
    /// The tunnel push would take.
    pub tunnel: Option<&'a TunnelPreview>,
}

impl PushPreview {
    /// A registry wins, as in push; else the product's node-load command.
    fn new(registry: Option<&LocalRegistry>, product: Option<&Product>, preview: Preview) -> Self {
        let vantage = preview.vantage;
        let preview_of = |method, host, description| Self {
            method,
            network: vantage.network,
            network_reason: vantage.reason,
            host,
            description,
            tunnel: None,
            vantage,
        };
        if let (Some(registry), Some(tunnel)) = (registry, preview.tunnel) {
            let description = format!(
                "push through a tunnel through the API server to {} ({}) and print refs on {}; \
                 TLS to {} first (its certificate checked for that name), plain HTTP if the registry answers in it",
                tunnel.said, tunnel.because, registry.host_from_container_runtime, tunnel.tls_name
            );
            return Self {
                network: Network::Tunnel,
                tunnel: Some(tunnel.clone()),
                ..preview_of(PushMethod::Registry, None, description)
            };
        }
        if let Some(registry) = registry {
            return match network::push_host(registry, vantage) {
                Ok(push) => {
                    let mut description = format!("push to {}", push.host);
                    if push.field == Some("hostFromClusterNetwork") {
                        description.push_str(" (hostFromClusterNetwork)");
                    }
                    if let (RegistrySource::Openshift, Some(namespace)) =
                        (registry.source, preview.namespace)
                    {
                        let repository = openshift_repository(namespace, "NAME")
                            .unwrap_or_else(|err| err.message().to_string());
                        description.push_str(&format!(" as {repository}"));
                    }
                    description.push_str(&format!(
                        " and print refs on {}",
                        registry.host_from_container_runtime
                    ));
                    preview_of(PushMethod::Registry, Some(push.host.clone()), description)
                }
                Err(err) => preview_of(
                    PushMethod::Unavailable,
                    None,
                    format!("fail: {}", err.message()),
                ),
            };
        }
        match product.and_then(|p| LoadPlan::for_product(p, Path::new(ARCHIVE_SHOWN))) {
            // The placeholder is a word for the reader, not a path: shown bare, as usage
            // texts show one, rather than shell-quoted for its angle brackets.
            Some(plan) => preview_of(
                PushMethod::NodeLoad,
                None,
                plan.description()
                    .replace(&format!("'{ARCHIVE_SHOWN}'"), ARCHIVE_SHOWN),
            ),
            None => preview_of(
                PushMethod::Unavailable,
                None,
                "fail: no registry is advertised and no way to load images into this cluster's nodes is known".to_string(),
            ),
        }
    }
}

impl<'a> Report<'a> {
    pub fn new(
        kubeconfig: &'a KubeconfigFacts,
        registry: Option<&'a LocalRegistry>,
        registry_guide: Option<&'a str>,
        product: Option<&'a Product>,
        preview: Preview,
    ) -> Self {
        Self {
            context: kubeconfig.context.as_deref(),
            cluster: kubeconfig.cluster.as_deref(),
            server: kubeconfig.server.as_deref(),
            product,
            registry: registry.map(|r| RegistryReport {
                host: &r.host,
                host_from_container_runtime: &r.host_from_container_runtime,
                host_from_cluster_network: r.host_from_cluster_network.as_ref(),
                help: r.help.as_deref(),
                source: r.source,
            }),
            registry_guide,
            push: PushPreview::new(registry, product, preview),
        }
    }

    /// Aligned `label: value` lines for a terminal; without a registry, why, and what to do.
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
            (
                "product",
                self.product.map_or_else(
                    || "(not detected: the cluster was not contacted)".to_string(),
                    describe_product,
                ),
            ),
        ];
        match &self.registry {
            Some(registry) => lines.extend([
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
                ("source", describe(registry.source)),
            ]),
            None => {
                lines.push(("registry", "none advertised".to_string()));
                if let Some(guide) = self.registry_guide {
                    lines.push(("set one up", guide.to_string()));
                }
            }
        }
        lines.push(("network", self.push.vantage.describe()));
        lines.push(("push", self.push.description.clone()));
        let table = aligned(&lines);
        if self.registry.is_some() {
            return table;
        }
        let after = match (self.push.method, self.product) {
            (PushMethod::NodeLoad, Some(product)) => format!(
                "tip: give the cluster a registry and push uses it instead: {}",
                self.registry_guide.unwrap_or(product.registry_guide())
            ),
            _ => ways_out(self.registry_guide),
        };
        format!(
            "{table}\n\n{}\n{after}",
            none_advertised(self.registry_guide.is_some())
        )
    }
}

fn none_advertised(help_only: bool) -> String {
    if help_only {
        return format!(
            "No local registry advertised: ConfigMap {HOSTING_CONFIGMAP} has a help link but no\n\
             host, and neither OpenShift's image config, a node annotation nor a microk8s registry\n\
             Service names one."
        );
    }
    format!(
        "No local registry advertised: nothing in ConfigMap {HOSTING_CONFIGMAP},\n\
         OpenShift's image config, node annotations or a microk8s registry Service names one."
    )
}

fn ways_out(guide: Option<&str>) -> String {
    let setup = match guide {
        Some(guide) => format!("set one up with this cluster's guide:\n    {guide}"),
        None => format!(
            "run a registry that advertises itself in that ConfigMap (KEP-1755):\n    {KEP_URL}"
        ),
    };
    format!(
        "Ways out:\n  \
         - {setup}\n  \
         - or name one: --registry HOST[:PORT] (or {REGISTRY_HOST_ENV})\n  \
         - or load the image your own way: push --load-command 'PROGRAM ARGS... {ARCHIVE_PLACEHOLDER}'"
    )
}

/// `kind (cluster "dev")`, `minikube (profile "dev")`, `MicroK8s`, `unknown`.
fn describe_product(product: &Product) -> String {
    let name = match product.kind {
        ProductKind::Unknown => return product.kind.as_str().to_string(),
        kind => kind.display_name(),
    };
    let noun = match product.kind {
        ProductKind::Minikube | ProductKind::Colima => "profile",
        _ => "cluster",
    };
    match &product.cluster_name {
        Some(cluster) => format!("{name} ({noun} \"{cluster}\")"),
        None => name.to_string(),
    }
}

fn describe(source: RegistrySource) -> String {
    match source {
        RegistrySource::Flag => "--registry flag".to_string(),
        RegistrySource::Env => format!("{REGISTRY_HOST_ENV} environment variable"),
        RegistrySource::Configmap => format!("ConfigMap {HOSTING_CONFIGMAP} (KEP-1755)"),
        RegistrySource::Openshift => format!("OpenShift's {OPENSHIFT_IMAGE_CONFIG}"),
        RegistrySource::Annotation => {
            "first node's annotation (tilt.dev/registry or kind.x-k8s.io/registry)".to_string()
        }
        RegistrySource::Microk8sService => {
            "Service container-registry/registry (microk8s registry addon)".to_string()
        }
        RegistrySource::MinikubeAddon => {
            "Service kube-system/registry (minikube registry addon)".to_string()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn product(kind: ProductKind, cluster_name: Option<&str>) -> Product {
        Product {
            kind,
            cluster_name: cluster_name.map(str::to_string),
        }
    }

    #[test]
    fn products_read_with_their_own_word_for_a_cluster() {
        let shown = [
            product(ProductKind::Kind, Some("dev")),
            product(ProductKind::Colima, Some("work")),
            product(ProductKind::RancherDesktop, None),
            product(ProductKind::Unknown, None),
        ]
        .iter()
        .map(describe_product)
        .collect::<Vec<_>>();
        assert_eq!(
            shown,
            [
                "kind (cluster \"dev\")",
                "Colima (profile \"work\")",
                "Rancher Desktop",
                "unknown"
            ]
        );
    }

    #[test]
    fn the_archive_placeholder_is_shown_bare_even_where_a_name_needs_quotes() {
        let preview = Preview {
            vantage: Vantage::choose(None, Some(false)),
            namespace: Some("default"),
            tunnel: None,
        };
        let push = PushPreview::new(
            None,
            Some(&product(ProductKind::Kind, Some("my dev"))),
            preview,
        );
        assert_eq!(push.method, PushMethod::NodeLoad);
        assert_eq!(
            push.description,
            "load the image into the nodes of kind cluster \"my dev\": `kind load image-archive <archive> --name 'my dev'`"
        );
        let none = PushPreview::new(None, None, preview);
        assert_eq!(none.method, PushMethod::Unavailable);
    }
}
