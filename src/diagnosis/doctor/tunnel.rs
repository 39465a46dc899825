//! Check 3b, where push would tunnel: that we may create `pods/portforward` (asked with a
//! SelfSubjectAccessReview), that the Service has a ready pod, and that a port-forward to it
//! opens; the tunnel is then where the registry checks go.

use super::report::{Check, CheckId};
use crate::cluster::client::Cluster;
use crate::cluster::discovery::Discovered;
use crate::cluster::hosting::LocalRegistry;
use crate::cluster::reach::{self, Decided};
use crate::cluster::tunnel::{Tunnel, may_port_forward};
use crate::plumbing::error::ExitCode;
use crate::plumbing::output::Printer;

/// The tunnel push would take, opened, and its check; `None` when push goes direct.
pub(super) async fn check(
    found: &Discovered,
    registry: &LocalRegistry,
    printer: &Printer,
) -> Option<(Check, Option<Tunnel>)> {
    let (service, why) = match reach::decide(found, registry, printer).await {
        Ok(Decided::Tunnel(service, why)) => (service, why),
        Ok(Decided::Direct(..)) | Err(_) => return None,
    };
    let Some(cluster) = &found.cluster else {
        return None;
    };
    let why = why.text(registry);
    Some(match opened(cluster, &service, registry, printer).await {
        Ok((tunnel, allowed)) => (
            Check::passed(
                CheckId::Tunnel,
                format!(
                    "push tunnels through the API server ({why}): {allowed}; {} opens",
                    tunnel.describe()
                ),
            ),
            Some(tunnel),
        ),
        Err(check) => (check, None),
    })
}

async fn opened(
    cluster: &Cluster,
    service: &crate::cluster::hosting::ServiceRef,
    registry: &LocalRegistry,
    printer: &Printer,
) -> Result<(Tunnel, String), Check> {
    let namespace = &service.namespace;
    let allowed = match may_port_forward(cluster, namespace).await {
        Ok(true) => format!("allowed to create pods/portforward in {namespace}"),
        Ok(false) => {
            return Err(Check::failed(
                CheckId::Tunnel,
                ExitCode::Cluster,
                format!("not allowed to create pods/portforward in namespace {namespace} (SelfSubjectAccessReview), which the tunnel to the registry needs"),
            )
            .with_hint(format!(
                "ask for RBAC permission to create pods/portforward in {namespace}, or push to a registry reachable from here with --registry HOST[:PORT]"
            )));
        }
        Err(error) => return Err(Check::from_error(CheckId::Tunnel, &error)),
    };
    match Tunnel::open(cluster, service, registry, printer).await {
        Ok(tunnel) => Ok((tunnel, allowed)),
        Err(error) => Err(Check::from_error(CheckId::Tunnel, &error)),
    }
}
