//! `doctor`'s checkup: every hop a push takes (kubeconfig, API server, discovery, the tunnel, the
//! registry, a probe round trip, what the nodes pull, the node loader), one check each, never
//! stopping early; the report's verdict is an error unless push would work.

mod loader;
mod pod;
mod probe;
mod report;
mod tunnel;

use std::path::Path;
use std::time::Instant;

use crate::cluster::ClusterOptions;
use crate::cluster::client::{Cluster, Lookup};
use crate::cluster::discovery::Discovered;
use crate::cluster::hosting::{
    HOSTING_CONFIGMAP, HOSTING_NAMESPACE, LocalRegistry, RegistrySource,
};
use crate::cluster::kubeconfig::{self, Choice};
use crate::cluster::network::{self, Network, Vantage};
use crate::cluster::openshift;
use crate::cluster::product;
use crate::cluster::session::Session;
use crate::cluster::tunnel::Tunnel;
use crate::image::reference::RegistryHost;
use crate::image::registry::{
    ClusterLogin, Deletion, RegistryClient, TransportOptions, TunnelEndpoint,
};
use crate::inventory::RegistryAccess;
use crate::nodes::{self, LoadPlan};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::settings::{REGISTRY_HOST_ENV, Settings};
pub(crate) use report::Report;
use report::{Check, CheckId};

/// Stands for the archive in the loader command shown.
const ARCHIVE_SHOWN: &str = "<archive>";

/// What the checkup is asked for beyond the defaults.
pub(crate) struct Checkup {
    /// Check 8: start a pod that pulls the probe image.
    pub pod: bool,
    pub access: RegistryAccess,
}

/// Every check, in the order push meets them; discovery first, exactly as push runs it, then
/// the checks that explain what it found.
pub(crate) async fn checkup(
    args: &Checkup,
    session: &Session<'_>,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Report {
    let mut report = Report::default();
    let discovered = session.discover().await;
    let overridden = matches!(&discovered, Ok(found) if found.cluster.is_none());
    let cluster = check_cluster(cluster_args, settings, overridden, printer, &mut report).await;
    let finding = check_discovery(&discovered, cluster.as_ref(), &mut report).await;
    match finding {
        Finding::Registry(found, registry) => {
            let checks = RegistryChecks {
                args,
                settings,
                printer,
                cluster: cluster.as_ref(),
            };
            checks.run(found, registry, &mut report).await;
        }
        Finding::Nothing => {
            let none = "no registry is advertised";
            report.add(Check::skipped(
                CheckId::Registry,
                format!("{none}, so there is none to reach"),
            ));
            report.add(Check::skipped(
                CheckId::RoundTrip,
                format!("{none}, so there is none to push the probe image to"),
            ));
            report.add(Check::skipped(
                CheckId::Nodes,
                "push loads images into the nodes instead of a registry",
            ));
            report.add(match (&discovered, cluster.as_ref()) {
                (Ok(found), Some(cluster)) => loader_check(found, cluster, settings).await,
                _ => Check::skipped(CheckId::NodeLoad, "skipped: the cluster could not be read"),
            });
        }
        Finding::Unknown => {
            for name in [
                CheckId::Registry,
                CheckId::RoundTrip,
                CheckId::Nodes,
                CheckId::NodeLoad,
            ] {
                report.add(Check::skipped(
                    name,
                    "skipped: what the cluster advertises is not known",
                ));
            }
        }
    }
    if args.pod && !matches!(finding, Finding::Registry(..)) {
        report.add(Check::skipped(
            CheckId::Pod,
            "skipped: no registry to pull the probe image from",
        ));
    }
    report
}

/// The checks of an advertised registry: the tunnel push would take, the registry, the probe's
/// round trip, the nodes' host, and (with `--pod`) the pod's pull, shown last.
struct RegistryChecks<'a> {
    args: &'a Checkup,
    settings: &'a Settings,
    printer: &'a Printer,
    cluster: Option<&'a Cluster>,
}

impl RegistryChecks<'_> {
    async fn run(&self, found: &Discovered, registry: &LocalRegistry, report: &mut Report) {
        let tunnel = match tunnel::check(found, registry, self.printer).await {
            Some((check, tunnel)) => {
                report.add(check);
                Some(tunnel)
            }
            None => None,
        };
        let target = ProbeTarget::new(found, registry, tunnel.as_ref(), self.printer);
        let pod = check_registry(self.args, self.settings, &target, self.cluster, report).await;
        report.add(nodes_check(registry, &target, self.args.pod));
        report.add(Check::skipped(
            CheckId::NodeLoad,
            "not needed: push uses the registry",
        ));
        if let Some(pod) = pod {
            report.add(pod);
        }
    }
}

/// Checks 1 and 2: which kubeconfig and context, and whether the API server answers. The
/// connected cluster, when it answers.
async fn check_cluster(
    cluster_args: &ClusterOptions,
    settings: &Settings,
    overridden: bool,
    printer: &Printer,
    report: &mut Report,
) -> Option<Cluster> {
    let not_needed =
        "not needed to push: the registry is named by --registry or KUBECTL_REGISTRY_HOST";
    match kubeconfig::choose(cluster_args, settings, printer) {
        Ok(Choice::Context(selected)) => report.add(Check::passed(
            CheckId::Kubeconfig,
            format!("{}, context {}", selected.source, selected.context),
        )),
        Ok(Choice::InCluster) => report.add(Check::passed(
            CheckId::Kubeconfig,
            "none: in a pod, with its service account (in-cluster config)",
        )),
        Err(error) if overridden => {
            report.add(Check::skipped(
                CheckId::Kubeconfig,
                format!("{}; {not_needed}", error.message()),
            ));
            report.add(Check::skipped(CheckId::ApiServer, "skipped: no kubeconfig"));
            return None;
        }
        Err(error) => {
            report.add(Check::from_error(CheckId::Kubeconfig, &error));
            report.add(Check::skipped(CheckId::ApiServer, "skipped: no kubeconfig"));
            return None;
        }
    }
    let started = Instant::now();
    let answered = match Cluster::connect(cluster_args, settings, printer).await {
        Ok(cluster) => cluster
            .server_version()
            .await
            .map(|version| (cluster, version)),
        Err(error) => Err(error),
    };
    match answered {
        Ok((cluster, version)) => {
            let server = cluster.facts().server.clone().unwrap_or_default();
            report.add(Check::passed(
                CheckId::ApiServer,
                format!(
                    "{server} answered in {} ms (Kubernetes {version})",
                    started.elapsed().as_millis()
                ),
            ));
            Some(cluster)
        }
        Err(error) if overridden => {
            let mut skipped = Check::from_error(CheckId::ApiServer, &error);
            skipped.ok = None;
            skipped.exit = None;
            skipped.detail = format!("{}; {not_needed}", skipped.detail);
            report.add(skipped);
            None
        }
        Err(error) => {
            report.add(Check::from_error(CheckId::ApiServer, &error));
            None
        }
    }
}

/// What discovery came to.
enum Finding<'a> {
    Registry(&'a Discovered, &'a LocalRegistry),
    Nothing,
    /// Discovery failed: whether there is a registry is not known.
    Unknown,
}

/// Check 3: where the registry was found and every field of it, or why none was.
async fn check_discovery<'a>(
    discovered: &'a Result<Discovered>,
    cluster: Option<&Cluster>,
    report: &mut Report,
) -> Finding<'a> {
    let found = match discovered {
        Ok(found) => found,
        Err(_) if cluster.is_none() => {
            report.add(Check::skipped(
                CheckId::Discovery,
                "skipped: the cluster could not be read",
            ));
            return Finding::Unknown;
        }
        Err(error) => {
            report.add(Check::from_error(CheckId::Discovery, error));
            return Finding::Unknown;
        }
    };
    let Some(registry) = &found.registry else {
        report.add(nothing_advertised(cluster).await);
        return Finding::Nothing;
    };
    report.add(Check::passed(
        CheckId::Discovery,
        format!(
            "{}: host {}, hostFromContainerRuntime {}, hostFromClusterNetwork {}, help {}",
            source_phrase(registry.source),
            registry.host,
            registry.host_from_container_runtime,
            registry
                .host_from_cluster_network
                .as_ref()
                .map_or("(not advertised)".to_string(), ToString::to_string),
            registry.help.as_deref().unwrap_or("(none)")
        ),
    ));
    Finding::Registry(found, registry)
}

/// Why discovery found nothing, as far as the ConfigMap tells.
async fn nothing_advertised(cluster: Option<&Cluster>) -> Check {
    let elsewhere = "and neither OpenShift's image config, a node annotation nor a microk8s registry Service names one";
    let lookup = match cluster {
        Some(cluster) => cluster.hosting_configmap().await,
        None => return Check::skipped(CheckId::Discovery, "nothing advertised"),
    };
    match lookup {
        Ok(Lookup::Forbidden) => Check::skipped(
            CheckId::Discovery,
            format!(
                "nothing advertised: reading ConfigMap {HOSTING_CONFIGMAP} is forbidden for these credentials, so it counts as absent, {elsewhere}"
            ),
        )
        .with_hint(format!(
            "if the cluster has a registry, push needs get on configmaps in {HOSTING_NAMESPACE}: `kubectl auth can-i get configmaps -n {HOSTING_NAMESPACE}` checks it"
        )),
        Ok(Lookup::Found(_)) => Check::skipped(
            CheckId::Discovery,
            format!(
                "nothing advertised: ConfigMap {HOSTING_CONFIGMAP} names no registry this version reads (see the warning above), {elsewhere}"
            ),
        ),
        Ok(Lookup::NotFound) | Err(_) => Check::skipped(
            CheckId::Discovery,
            format!("nothing advertised: no ConfigMap {HOSTING_CONFIGMAP}, {elsewhere}"),
        ),
    }
}

fn source_phrase(source: RegistrySource) -> String {
    match source {
        RegistrySource::Flag => "--registry".to_string(),
        RegistrySource::Env => REGISTRY_HOST_ENV.to_string(),
        RegistrySource::Configmap => format!("ConfigMap {HOSTING_CONFIGMAP}"),
        RegistrySource::Openshift => "OpenShift's images.config.openshift.io/cluster".to_string(),
        RegistrySource::Annotation => "the first node's annotations".to_string(),
        RegistrySource::Microk8sService => {
            "microk8s's Service container-registry/registry".to_string()
        }
        RegistrySource::MinikubeAddon => {
            "minikube's registry addon (Service kube-system/registry)".to_string()
        }
    }
}

/// Where the probe goes, as push would send an image: the host for the network we are on,
/// the repository in the project (OpenShift), the cluster's login (OpenShift).
struct ProbeTarget<'a> {
    registry: &'a LocalRegistry,
    /// The host push uploads to from here (the tunnel's, when it tunnels), or why there is none.
    host: Result<RegistryHost>,
    tunnelled: bool,
    /// The opened tunnel's Service name, which TLS is tried with first.
    endpoint: Option<TunnelEndpoint>,
    vantage: Vantage,
    repository: Result<String>,
    cluster_login: Option<ClusterLogin>,
}

impl<'a> ProbeTarget<'a> {
    fn new(
        found: &'a Discovered,
        registry: &'a LocalRegistry,
        tunnel: Option<&Option<Tunnel>>,
        printer: &Printer,
    ) -> Self {
        let endpoint = tunnel
            .and_then(Option::as_ref)
            .map(|tunnel| tunnel.endpoint().clone());
        let host = match tunnel {
            Some(Some(tunnel)) => Ok(tunnel.host().clone()),
            Some(None) => Err(Error::new(
                ExitCode::Cluster,
                "the tunnel through the API server did not open (see the tunnel check)",
            )),
            None => network::push_host(registry, found.vantage).map(|push| push.host.clone()),
        };
        let cluster_login = host
            .as_ref()
            .ok()
            .and_then(|host| openshift::cluster_login(registry, host, found, printer));
        Self {
            registry,
            host,
            tunnelled: tunnel.is_some(),
            endpoint,
            vantage: found.vantage,
            repository: openshift::repository_in_project(registry, found, probe::PROBE_REPOSITORY),
            cluster_login,
        }
    }

    /// `HOST answers GET /v2/ over http`, and which network picked the host when it is not the
    /// laptop's.
    fn answered(&self, host: &RegistryHost, client: &RegistryClient) -> String {
        let answered = format!("{host} answers GET /v2/ over {}", client.scheme_name());
        if self.tunnelled {
            let how = match (client.checked_tls_name(), &self.endpoint) {
                (Some(name), _) => format!(" (TLS to {name}, the Service's name)"),
                (None, Some(endpoint)) => format!(
                    " (it answered TLS to {} in plain HTTP)",
                    endpoint.dns_name()
                ),
                (None, None) => String::new(),
            };
            return format!("{answered}{how}: the registry, through the tunnel");
        }
        match self.vantage.network {
            Network::Host | Network::Tunnel => answered,
            Network::Cluster => format!(
                "{answered}, the host push uses from the cluster network ({})",
                self.vantage.why()
            ),
        }
    }
}

/// Checks 4 and 5: `GET /v2/` from here to the host push would use, then the probe's round
/// trip; with `--pod`, the pod's pull of the probe (check 8, returned to be shown last) runs
/// before the probe is deleted.
async fn check_registry(
    args: &Checkup,
    settings: &Settings,
    target: &ProbeTarget<'_>,
    cluster: Option<&Cluster>,
    report: &mut Report,
) -> Option<Check> {
    let pod_skipped = |why: &str| {
        args.pod
            .then(|| Check::skipped(CheckId::Pod, format!("skipped: {why}")))
    };
    let registry = target.registry;
    let client = match answering_client(args, settings, target, report).await {
        Ok(client) => client,
        Err(why) => {
            report.add(Check::skipped(
                CheckId::RoundTrip,
                format!("skipped: {why}"),
            ));
            return pod_skipped(why);
        }
    };
    let repository = match &target.repository {
        Ok(repository) => repository.as_str(),
        Err(error) => {
            report.add(Check::from_error(CheckId::RoundTrip, error));
            return pod_skipped("the probe image could not be pushed");
        }
    };
    let pushed = match probe::ProbeImage::build() {
        Ok(image) => probe::push_and_read_back(&client, repository, &image)
            .await
            .map(|digest| (digest, image.size())),
        Err(error) => Err(error),
    };
    let (digest, size) = match pushed {
        Ok(pushed) => pushed,
        Err(error) => {
            report.add(Check::from_error(CheckId::RoundTrip, &error));
            return pod_skipped("the probe image could not be pushed");
        }
    };
    let pod = match (args.pod, cluster) {
        (false, _) => None,
        (true, Some(cluster)) => {
            let image = format!(
                "{}/{repository}@{digest}",
                registry.host_from_container_runtime
            );
            Some(pod::check(cluster, registry, &image).await)
        }
        (true, None) => pod_skipped("the cluster could not be read"),
    };
    let probe = format!("{}/{repository}", client.host());
    let cleanup = match probe::remove(&client, repository, &digest).await {
        Ok(Deletion::Deleted) => "then deleted".to_string(),
        Ok(Deletion::Refused(_)) => format!(
            "left in place: the registry does not allow deletes, so {probe}:{} stays",
            probe::PROBE_TAG
        ),
        Err(error) => format!("left in place: deleting it failed ({})", error.message()),
    };
    report.add(Check::passed(
        CheckId::RoundTrip,
        format!(
            "pushed the probe image ({size} bytes) to {probe}:{}, read it back by digest {}, {cleanup}",
            probe::PROBE_TAG,
            digest.short()
        ),
    ));
    pod
}

/// Check 4: a client of the host push would use, that has answered `GET /v2/`; else the failed
/// check is added and what the checks after it are skipped for is returned.
async fn answering_client(
    args: &Checkup,
    settings: &Settings,
    target: &ProbeTarget<'_>,
    report: &mut Report,
) -> Result<RegistryClient, &'static str> {
    let host = match &target.host {
        Ok(host) => host,
        Err(error) => {
            report.add(Check::from_error(CheckId::Registry, error));
            return Err("no host to reach the registry at from here");
        }
    };
    let options = TransportOptions {
        insecure: args.access.insecure,
        ca_file: args.access.ca_file.clone(),
        help: target.registry.help.clone(),
        cluster_login: target.cluster_login.clone(),
        tunnel: target.endpoint.clone(),
        ..settings.transport_options()
    };
    let client = RegistryClient::new(host, &options).map_err(|error| {
        report.add(Check::from_error(CheckId::Registry, &error));
        "no client for the registry"
    })?;
    if let Err(error) = client.ping().await {
        report.add(Check::from_error(CheckId::Registry, &error));
        return Err("the registry does not answer");
    }
    report.add(Check::passed(
        CheckId::Registry,
        target.answered(host, &client),
    ));
    Ok(client)
}

/// Check 6: the host pods name, and the reminder that the nodes must reach it by that name.
fn nodes_check(registry: &LocalRegistry, target: &ProbeTarget, pod: bool) -> Check {
    let runtime = &registry.host_from_container_runtime;
    let pushed_to = target.host.as_ref().unwrap_or(&registry.host);
    let checked = if pod {
        "the pod below pulls it from a node"
    } else {
        "not checked from a node"
    };
    let check = if registry.source == RegistrySource::Openshift {
        Check::skipped(
            CheckId::Nodes,
            format!(
                "pods will pull from {runtime}, the registry's service name, which OpenShift's nodes resolve themselves; {checked}"
            ),
        )
    } else if runtime == pushed_to {
        Check::skipped(
            CheckId::Nodes,
            format!("pods will pull from {runtime}, the host pushed to; {checked}"),
        )
    } else {
        Check::skipped(
            CheckId::Nodes,
            format!(
                "pods will pull from {runtime}, not {pushed_to}: each node's containerd must map {runtime} to the registry (kind: /etc/containerd/certs.d/{runtime}/hosts.toml); {checked}"
            ),
        )
    };
    let check = match &registry.help {
        Some(help) => check.with_hint(format!("this cluster's registry guide: {help}")),
        None => check,
    };
    if pod {
        check
    } else {
        check.with_hint("`kubectl registry doctor --pod` pulls the probe image from a node")
    }
}

/// Check 7: without a registry, the product and its loader CLI on PATH.
async fn loader_check(found: &Discovered, cluster: &Cluster, settings: &Settings) -> Check {
    let nodes = match cluster.nodes().await {
        Ok(nodes) => nodes,
        Err(error) => return Check::from_error(CheckId::NodeLoad, &error),
    };
    let product = product::detect(&found.kubeconfig, &nodes);
    let Some(plan) = LoadPlan::for_product(&product, Path::new(ARCHIVE_SHOWN)) else {
        let error = nodes::nothing_advertised(found.kubeconfig.context.as_deref());
        return Check::from_error(CheckId::NodeLoad, &error);
    };
    let program = plan.command().program().to_string_lossy().into_owned();
    let Some(path) = loader::find_on_path(Path::new(&program), settings.path.as_deref()) else {
        let check = Check::failed(
            CheckId::NodeLoad,
            ExitCode::Load,
            format!(
                "{} needs `{program}` to load images into its nodes, and it is not on PATH",
                product.target_phrase()
            ),
        );
        let check = match product.kind.loader_cli() {
            Some(cli) => check.with_hint(format!("install {program}: {}", cli.install_url)),
            None => check,
        };
        return check.with_hint(format!(
            "or give the cluster a registry: {}",
            product.registry_guide()
        ));
    };
    // The product's own loader says its version its way; a --load-command program as most do.
    let version_args = product
        .kind
        .loader_cli()
        .filter(|cli| cli.program == program)
        .map_or(&["--version"][..], |cli| cli.version_args);
    let version = loader::version(&path, version_args).await.map_or_else(
        || "version unknown".to_string(),
        |v| format!("version {v:?}"),
    );
    Check::passed(
        CheckId::NodeLoad,
        format!(
            "{}: `{program}` is on PATH ({}, {version})",
            product.target_phrase(),
            path.display()
        ),
    )
}
