//! What pushing to OpenShift's integrated registry takes beyond its host, for push and doctor
//! alike: the project's repository, and the cluster's own token as the registry login.

use secrecy::ExposeSecret;

use crate::cluster::discovery::Discovered;
use crate::cluster::hosting::{LocalRegistry, RegistrySource, openshift_repository};
use crate::image::reference::RegistryHost;
use crate::image::registry::ClusterLogin;
use crate::plumbing::error::Result;
use crate::plumbing::output::Printer;

/// `repository` as the registry keeps it: OpenShift's in the cluster's namespace (its project),
/// any other registry's as it is.
pub fn repository_in_project(
    registry: &LocalRegistry,
    discovered: &Discovered,
    repository: &str,
) -> Result<String> {
    match (&discovered.cluster, registry.source) {
        (Some(cluster), RegistrySource::Openshift) => {
            openshift_repository(cluster.namespace(), repository)
        }
        _ => Ok(repository.to_string()),
    }
}

/// The cluster's bearer token for OpenShift's registry at `push_host`, which takes it as `oc
/// registry login` does. Other registries never see it.
pub fn cluster_login(
    registry: &LocalRegistry,
    push_host: &RegistryHost,
    discovered: &Discovered,
    printer: &Printer,
) -> Option<ClusterLogin> {
    if registry.source != RegistrySource::Openshift {
        return None;
    }
    let cluster = discovered.cluster.as_ref()?;
    let Some(token) = cluster.bearer_token() else {
        printer.debug(
            "the kubeconfig user has no bearer token to log in to OpenShift's registry with; \
             only docker or podman credentials can",
        );
        return None;
    };
    let origin = match &discovered.kubeconfig.context {
        Some(context) => format!("the token of kubeconfig context {context:?}"),
        None => "the pod's service account token".to_string(),
    };
    Some(ClusterLogin {
        token: token.expose_secret().to_string(),
        origin,
        refused_hint: format!(
            "log in again with `oc login` (the registry takes the same token), or run `docker login {push_host}` with an account allowed to push to project {}",
            cluster.namespace()
        ),
    })
}
