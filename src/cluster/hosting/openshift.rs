//! OpenShift's integrated registry, which no KEP-1755 ConfigMap advertises: read from
//! `images.config.openshift.io/cluster` (the route users push to, the service name nodes pull
//! from), and its rule that a repository is `<namespace>/<image stream>`.

use super::{LocalRegistry, Note, RegistrySource, ServiceRef};
use crate::image::reference::RegistryHost;
use crate::plumbing::error::{Error, ExitCode};

/// OpenShift's guide to exposing its registry with a route and pushing to it.
pub const OPENSHIFT_REGISTRY_GUIDE: &str = "https://docs.redhat.com/en/documentation/openshift_container_platform/latest/html/registry/securing-exposing-registry";
/// How a user gets the CA that signs the registry's route, for an untrusted certificate.
pub const INGRESS_CA_HINT: &str = "OpenShift's routes are signed by the cluster's ingress CA: save it with `oc get configmap -n openshift-config-managed default-ingress-cert -o jsonpath='{.data.ca-bundle\\.crt}' > ingress-ca.crt` and pass --ca-file ingress-ca.crt";

const IMAGE_CONFIG: &str = "images.config.openshift.io/cluster";

/// The registry `images.config.openshift.io/cluster` describes: push to the first external
/// hostname (the route), and name the internal one in pod specs and from the cluster network.
/// `Ok(None)`: no registry (OpenShift's image registry operator has it removed).
pub fn registry_from_openshift(
    internal: Option<&str>,
    external: &[String],
    notes: &mut Vec<Note>,
) -> Result<Option<LocalRegistry>, Error> {
    let Some(internal) = internal else {
        notes.push(Note::Debug(format!(
            "{IMAGE_CONFIG} names no status.internalRegistryHostname: the integrated registry is not running"
        )));
        return Ok(None);
    };
    let parse = |field: &str, raw: &str| {
        RegistryHost::parse(raw).map_err(|bad| {
            Error::new(
                ExitCode::Cluster,
                format!("{IMAGE_CONFIG}: {field} is not a registry host"),
            )
            .with_source(bad)
            .with_hint(format!(
                "check `oc get {IMAGE_CONFIG} -o yaml`, or skip discovery with --registry HOST[:PORT]"
            ))
        })
    };
    let internal = parse("status.internalRegistryHostname", internal)?;
    // Without a route, the service name is all there is: from outside the cluster, push
    // tunnels to that Service through the API server (TLS, its certificate from the service CA).
    let (host, service) = match external.first() {
        Some(route) => (parse("status.externalRegistryHostnames", route)?, None),
        None => {
            notes.push(Note::Debug(format!(
                "{IMAGE_CONFIG} names no external hostname: the registry has no route, so only the cluster network reaches it (from outside, through a tunnel to its Service)"
            )));
            (internal.clone(), ServiceRef::from_cluster_host(&internal))
        }
    };
    Ok(Some(LocalRegistry {
        host,
        host_from_container_runtime: internal.clone(),
        host_from_cluster_network: Some(internal),
        host_advertised: service.is_none(),
        service,
        help: Some(OPENSHIFT_REGISTRY_GUIDE.to_string()),
        source: RegistrySource::Openshift,
    }))
}

/// `<namespace>/<name>`: OpenShift keeps an image stream per name in each project, so only the
/// last component of `repository` names it.
pub fn openshift_repository(namespace: &str, repository: &str) -> Result<String, Error> {
    let is_project_name = !namespace.is_empty()
        && namespace.len() <= 63
        && namespace
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !namespace.starts_with('-')
        && !namespace.ends_with('-');
    if !is_project_name {
        return Err(Error::new(
            ExitCode::Usage,
            format!("namespace {namespace:?} is not an OpenShift project name"),
        )
        .with_hint("pass the project to push into with --namespace NAME (`oc project -q` prints the current one)"));
    }
    let name = repository.rsplit('/').next().unwrap_or(repository);
    Ok(format!("{namespace}/{name}"))
}
