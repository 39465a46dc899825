//! Finding the cluster's local registry, first hit wins: flags, environment, the KEP-1755
//! ConfigMap, minikube's registry addon, OpenShift's image config, the older node annotations, microk8s's registry
//! Service; and which network the pusher is on.

use crate::cluster::ClusterOptions;
use crate::cluster::client::{Cluster, Lookup, OPENSHIFT_IMAGE_CONFIG};
use crate::cluster::hosting::{
    self, HOSTING_CONFIGMAP, HostingConfigMap, LocalRegistry, MINIKUBE_NAMESPACE,
    MINIKUBE_PROXY_DAEMONSET, MINIKUBE_SERVICE, Note, RegistrySource,
};
use crate::cluster::kubeconfig;
use crate::cluster::kubeconfig::KubeconfigFacts;
use crate::cluster::network::Vantage;
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::settings::{REGISTRY_HOST_ENV, REGISTRY_RUNTIME_HOST_ENV, Settings};

/// What discovery found.
pub struct Discovered {
    pub kubeconfig: KubeconfigFacts,
    pub registry: Option<LocalRegistry>,
    /// The hosting ConfigMap's `help` link, also when it advertises no registry (microk8s's
    /// ConfigMap while its registry addon is off): the guide to give the cluster one.
    pub help: Option<String>,
    /// The connected cluster; `None` when flags or environment named the registry (no contact made).
    pub cluster: Option<Cluster>,
    /// Where the pusher runs, which picks the host push uses.
    pub vantage: Vantage,
}

/// Finds the registry, through the client `connect` gives (only asked when the cluster is: with
/// `--registry` or `KUBECTL_REGISTRY_HOST` it is not contacted and no kubeconfig is needed).
/// A run discovers through its session (`session::Session::discover`).
pub(crate) async fn discover(
    args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
    connect: impl Future<Output = Result<Cluster>>,
) -> Result<Discovered> {
    let mut notes = Vec::new();
    let env = |name: &str| env_value(settings, name);
    let overridden = registry_from_flags_or_env(args, &env, &mut notes);
    show(&notes, printer);
    if let Some(registry) = overridden? {
        printer.debug(&format!(
            "registry {} from {}; not asking the cluster",
            registry.host,
            origin(registry.source)
        ));
        return Ok(Discovered {
            kubeconfig: kubeconfig::facts_if_available(args, settings, printer),
            help: registry.help.clone(),
            registry: Some(registry),
            cluster: None,
            vantage: Vantage::choose(args.network, None),
        });
    }
    let cluster = connect.await?;
    let (registry, help) = registry_from_cluster(&cluster, printer).await?;
    Ok(Discovered {
        kubeconfig: cluster.facts().clone(),
        registry,
        help,
        vantage: Vantage::choose(args.network, Some(cluster.in_cluster())),
        cluster: Some(cluster),
    })
}

/// One of the two registry variables, as read at start; a value that is not UTF-8 is a usage error.
fn env_value(settings: &Settings, name: &str) -> Result<Option<String>> {
    let raw = match name {
        REGISTRY_HOST_ENV => &settings.registry_host,
        _ => &settings.registry_runtime_host,
    };
    raw.clone()
        .map(|value| {
            value.into_string().map_err(|value| {
                Error::new(
                    ExitCode::Usage,
                    format!("reading {name}: {value:?} is not UTF-8"),
                )
            })
        })
        .transpose()
}

fn show(notes: &[Note], printer: &Printer) {
    for note in notes {
        match note {
            Note::Debug(text) => printer.debug(text),
            Note::Warning(text) => printer.warn(text),
        }
    }
}

/// How messages name where an override came from.
fn origin(source: RegistrySource) -> &'static str {
    match source {
        RegistrySource::Env => REGISTRY_HOST_ENV,
        _ => "--registry",
    }
}

/// `--registry` (with `--registry-from-runtime`), else the two environment variables. Each pair is
/// taken whole: a flag never mixes with a variable.
fn registry_from_flags_or_env(
    args: &ClusterOptions,
    env: &dyn Fn(&str) -> Result<Option<String>>,
    notes: &mut Vec<Note>,
) -> Result<Option<LocalRegistry>> {
    if let Some(host) = &args.registry {
        let registry = hosting::registry_from_override(
            host,
            args.registry_from_runtime.as_deref(),
            RegistrySource::Flag,
            ("--registry", "--registry-from-runtime"),
            notes,
        )?;
        return Ok(Some(registry));
    }
    if args.registry_from_runtime.is_some() {
        return Err(
            Error::new(ExitCode::Usage, "--registry-from-runtime needs --registry")
                .with_hint("name the registry you push to with --registry HOST[:PORT]"),
        );
    }
    let runtime = env(REGISTRY_RUNTIME_HOST_ENV)?;
    let Some(host) = env(REGISTRY_HOST_ENV)? else {
        if runtime.is_some() {
            return Err(Error::new(
                ExitCode::Usage,
                format!("{REGISTRY_RUNTIME_HOST_ENV} is set but {REGISTRY_HOST_ENV} is not"),
            )
            .with_hint(format!("set {REGISTRY_HOST_ENV} to the registry you push to, or unset {REGISTRY_RUNTIME_HOST_ENV}")));
        }
        return Ok(None);
    };
    let registry = hosting::registry_from_override(
        &host,
        runtime.as_deref(),
        RegistrySource::Env,
        (REGISTRY_HOST_ENV, REGISTRY_RUNTIME_HOST_ENV),
        notes,
    )?;
    Ok(Some(registry))
}

/// What the cluster advertises (ConfigMap, then OpenShift's image config, then node
/// annotations, then microk8s's Service), and the ConfigMap's help link.
async fn registry_from_cluster(
    cluster: &Cluster,
    printer: &Printer,
) -> Result<(Option<LocalRegistry>, Option<String>)> {
    let mut notes = Vec::new();
    let from_configmap = match cluster.hosting_configmap().await? {
        Lookup::Found(data) => hosting::registry_from_configmap(&data, &mut notes),
        Lookup::NotFound => {
            printer.debug(&format!("ConfigMap {HOSTING_CONFIGMAP} not found"));
            Ok(HostingConfigMap::default())
        }
        Lookup::Forbidden => {
            printer.debug(&format!(
                "reading ConfigMap {HOSTING_CONFIGMAP} is forbidden; taken as not advertised"
            ));
            Ok(HostingConfigMap::default())
        }
    };
    show(&notes, printer);
    let HostingConfigMap { registry, help } = from_configmap?;
    if registry.is_some() {
        return Ok((registry, help));
    }
    if let Some(registry) = minikube_addon(cluster, printer).await? {
        return Ok((Some(registry), help));
    }
    if let Some(registry) = openshift_registry(cluster, printer).await? {
        return Ok((Some(registry), help));
    }
    // The ConfigMap's guide still applies to a registry an older convention names.
    let registry = older_conventions(cluster, printer)
        .await?
        .map(|registry| LocalRegistry {
            help: registry.help.or_else(|| help.clone()),
            ..registry
        });
    Ok((registry, help))
}

/// minikube's registry addon, which writes no ConfigMap: its Service and registry-proxy.
async fn minikube_addon(cluster: &Cluster, printer: &Printer) -> Result<Option<LocalRegistry>> {
    match cluster.minikube_registry_addon().await? {
        Lookup::Found(addon) => {
            if !addon.proxy {
                printer.debug(&format!(
                    "minikube's registry addon has no DaemonSet {MINIKUBE_NAMESPACE}/{MINIKUBE_PROXY_DAEMONSET}; the nodes pull from its Service's address"
                ));
            }
            Ok(Some(hosting::registry_from_minikube_addon(&addon)))
        }
        Lookup::NotFound | Lookup::Forbidden => {
            printer.debug(&format!(
                "no readable Service {MINIKUBE_NAMESPACE}/{MINIKUBE_SERVICE} of minikube's registry addon"
            ));
            Ok(None)
        }
    }
}

/// OpenShift's integrated registry, from `images.config.openshift.io/cluster`.
async fn openshift_registry(cluster: &Cluster, printer: &Printer) -> Result<Option<LocalRegistry>> {
    let mut notes = Vec::new();
    let from_openshift = match cluster.openshift_image_config().await? {
        Lookup::Found(config) => hosting::registry_from_openshift(
            config.internal_registry_hostname.as_deref(),
            &config.external_registry_hostnames,
            &mut notes,
        ),
        Lookup::NotFound | Lookup::Forbidden => {
            printer.debug(&format!(
                "no readable {OPENSHIFT_IMAGE_CONFIG} (not OpenShift)"
            ));
            Ok(None)
        }
    };
    show(&notes, printer);
    from_openshift
}

/// The node annotations, then microk8s's registry Service.
async fn older_conventions(cluster: &Cluster, printer: &Printer) -> Result<Option<LocalRegistry>> {
    let mut notes = Vec::new();
    let nodes = cluster.nodes().await?;
    let from_annotations = match nodes.first() {
        Some(node) => {
            hosting::registry_from_node_annotations(&node.name, &node.annotations, &mut notes)
        }
        None => Ok(None),
    };
    show(&notes, printer);
    if let Some(registry) = from_annotations? {
        return Ok(Some(registry));
    }

    match cluster.microk8s_registry_node_port().await? {
        Lookup::Found(Some(port)) => hosting::registry_from_microk8s_node_port(port).map(Some),
        Lookup::Found(None) => {
            printer.debug("Service container-registry/registry has no NodePort");
            Ok(None)
        }
        Lookup::NotFound | Lookup::Forbidden => {
            printer
                .debug("no readable Service container-registry/registry (microk8s registry addon)");
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn args(registry: Option<&str>, runtime: Option<&str>) -> ClusterOptions {
        ClusterOptions {
            registry: registry.map(str::to_string),
            registry_from_runtime: runtime.map(str::to_string),
            ..ClusterOptions::default()
        }
    }

    fn overridden(args: &ClusterOptions, vars: &[(&str, &str)]) -> Result<Option<LocalRegistry>> {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env = move |name: &str| Ok(vars.get(name).cloned());
        registry_from_flags_or_env(args, &env, &mut Vec::new())
    }

    fn hosts(registry: Option<LocalRegistry>) -> Option<(String, String, RegistrySource)> {
        registry.map(|r| {
            (
                r.host.to_string(),
                r.host_from_container_runtime.to_string(),
                r.source,
            )
        })
    }

    #[test]
    fn the_flag_pair_beats_the_environment_pair_whole() {
        let env = [
            (REGISTRY_HOST_ENV, "env-host:1"),
            (REGISTRY_RUNTIME_HOST_ENV, "env-runtime:2"),
        ];
        let found = overridden(&args(Some("flag-host:3"), None), &env).unwrap();
        assert_eq!(
            hosts(found),
            Some((
                "flag-host:3".into(),
                "flag-host:3".into(),
                RegistrySource::Flag
            ))
        );
        let found = overridden(&args(Some("flag-host:3"), Some("flag-runtime:4")), &env).unwrap();
        assert_eq!(
            hosts(found),
            Some((
                "flag-host:3".into(),
                "flag-runtime:4".into(),
                RegistrySource::Flag
            ))
        );
    }

    #[test]
    fn the_environment_names_the_registry_when_no_flag_does() {
        let env = [
            (REGISTRY_HOST_ENV, "env-host:1"),
            (REGISTRY_RUNTIME_HOST_ENV, "env-runtime:2"),
        ];
        let found = overridden(&args(None, None), &env).unwrap();
        assert_eq!(
            hosts(found),
            Some((
                "env-host:1".into(),
                "env-runtime:2".into(),
                RegistrySource::Env
            ))
        );
        assert_eq!(hosts(overridden(&args(None, None), &[]).unwrap()), None);
    }

    #[test]
    fn a_runtime_host_alone_is_a_usage_error() {
        let err = overridden(&args(None, Some("registry:5000")), &[]).unwrap_err();
        assert_eq!(err.message(), "--registry-from-runtime needs --registry");
        assert_eq!(err.exit_code(), ExitCode::Usage);
        let err = overridden(
            &args(None, None),
            &[(REGISTRY_RUNTIME_HOST_ENV, "registry:5000")],
        )
        .unwrap_err();
        assert_eq!(
            err.message(),
            "KUBECTL_REGISTRY_RUNTIME_HOST is set but KUBECTL_REGISTRY_HOST is not"
        );
    }
}
