//! The inventory the commands share, below them: what the cluster's registry holds (`registry`:
//! every tag's manifest, size, created time and references), what belongs to what (`attached`:
//! signatures, attestations, referrers), which workloads use which image (`usage`, from the
//! pods and workloads read here), and the registry opened for reading. `ls`, `prune` and `why`
//! read it; `pruning` decides what `prune` keeps and deletes (pure), `gc` reclaims the
//! registry's disk after it. The nodes' content tags are `nodes::tags`.

mod attached;
pub(crate) mod gc;
pub(crate) mod meanwhile;
pub(crate) mod pruning;
mod registry;
mod usage;

use std::path::PathBuf;

use crate::cluster::client::{ImageUse, ImageUses, usage_forbidden};
use crate::cluster::discovery::Discovered;
use crate::cluster::hosting::LocalRegistry;
use crate::cluster::openshift;
use crate::cluster::reach::Reach;
use crate::cluster::session::Session;
use crate::image::reference::RegistryHost;
use crate::image::registry::{RegistryClient, TransportOptions};
use crate::plumbing::error::Result;
use crate::plumbing::output::Printer;
use crate::settings::Settings;

#[cfg(test)]
pub(crate) use attached::attached;
pub(crate) use attached::{attestation_kind, root_subject};
pub(crate) use registry::{Reader, TagEntry, read, subjects};
pub(crate) use usage::Usage;

/// How to speak to the registry beyond what it advertises (`--insecure`, `--ca-file`).
#[derive(Debug, Clone, Default)]
pub struct RegistryAccess {
    /// Plain HTTP to a registry that is not on loopback.
    pub insecure: bool,
    /// A PEM CA bundle trusted for its TLS certificate.
    pub ca_file: Option<PathBuf>,
}

/// Every name the registry is known by: where we push, what the nodes pull, what pods use.
pub(crate) fn hosts(registry: &LocalRegistry) -> Vec<&RegistryHost> {
    let mut hosts = vec![&registry.host, &registry.host_from_container_runtime];
    hosts.extend(registry.host_from_cluster_network.as_ref());
    hosts
}

/// A client for the host this run reaches the registry at, answering its ping, and the way it
/// is reached (kept open while it lives).
pub(crate) async fn open_registry(
    session: &Session<'_>,
    discovered: &Discovered,
    registry: &LocalRegistry,
    access: &RegistryAccess,
    settings: &Settings,
    printer: &Printer,
) -> Result<(RegistryClient, Reach)> {
    let reach = session.reach(discovered, registry).await?;
    let host = &reach.host;
    let options = reach.transport(TransportOptions {
        insecure: access.insecure,
        ca_file: access.ca_file.clone(),
        help: registry.help.clone(),
        cluster_login: openshift::cluster_login(registry, host, discovered, printer),
        ..settings.transport_options()
    });
    let client = RegistryClient::new(host, &options)?;
    client.ping().await.map_err(|err| reach.explain(err))?;
    Ok((client, reach))
}

/// Whether a run may go on without knowing which images are in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UsageNeed {
    /// `ls`: say so and show no users.
    Optional,
    /// `prune`: refuse (exit 3) when the workloads cannot be read.
    Required { command: &'static str },
    /// `prune --ignore-usage`: not read at all.
    Ignored,
}

/// Every image the cluster's pods and workloads name; `None` when they could not be read and
/// the run may go on without them.
pub(crate) async fn read_uses(
    session: &Session<'_>,
    printer: &Printer,
    need: UsageNeed,
) -> Result<Option<Vec<ImageUse>>> {
    if need == UsageNeed::Ignored {
        printer.warn("--ignore-usage: the workloads are not read; images they use may be removed");
        return Ok(None);
    }
    let cluster = match session.cluster().await {
        Ok(cluster) => cluster,
        Err(err) => {
            return match need {
                UsageNeed::Required { .. } => Err(err.with_hint(
                    "the workloads tell what is in use; pass --ignore-usage to go on without them",
                )),
                _ => {
                    printer.warn(&format!(
                        "which workloads use the images is not shown: {}",
                        err.message()
                    ));
                    Ok(None)
                }
            };
        }
    };
    match cluster.image_uses().await? {
        ImageUses::Listed(uses) => {
            printer.debug(&format!("{} image uses in pods and workloads", uses.len()));
            Ok(Some(uses))
        }
        ImageUses::Forbidden { resource, message } => match need {
            UsageNeed::Required { command } => Err(usage_forbidden(&resource, &message, command)),
            _ => {
                printer.warn(&format!(
                    "which workloads use the images is not shown: listing {resource} in all namespaces is forbidden"
                ));
                Ok(None)
            }
        },
    }
}
