//! Where and how a push goes to the cluster's registry: the host from where we run, the name it
//! lands under (OpenShift's project, `latest` said, a foreign host kept in the repository), the
//! login and transport, the layers' encoding; and the report of what landed.

use crate::cluster::discovery::Discovered;
use crate::cluster::hosting::{INGRESS_CA_HINT, LocalRegistry, RegistrySource};
use crate::cluster::network::Network;
use crate::cluster::openshift;
use crate::cluster::reach::Reach;
use crate::image::digest::Digest;
use crate::image::reference::{ImageName, RegistryHost, Target};
use crate::image::registry::{self, ClusterLogin, TransportOptions};
use crate::plumbing::error::{Error, Result};
use crate::plumbing::interrupt;
use crate::plumbing::output::Printer;
use crate::settings::Settings;

use crate::delivery::push::options::{LayerCompression, PushOptions};
use crate::delivery::push::pipeline::stream::Encoding;
use crate::delivery::push::pipeline::to_registry;
use crate::delivery::push::summary::{self, Method, PushReport};

/// Where and how to push, decided from the registry and where we run.
pub(crate) struct RegistryPlan<'a> {
    pub registry: &'a LocalRegistry,
    /// The host this run reaches the registry at (one that lives only as long as this run is
    /// neither printed nor recorded).
    pub reach: Reach,
    network: Network,
    cluster_login: Option<ClusterLogin>,
}

impl RegistryPlan<'_> {
    fn push_host(&self) -> &RegistryHost {
        &self.reach.host
    }

    fn host_is_this_runs(&self) -> bool {
        self.reach.lives_with_this_run()
    }
}

/// The host to push to from where we run, how to log in there, and where the name goes (in the
/// project on OpenShift); a name without a tag is `latest`, with a warning.
pub(crate) fn registry_plan<'a>(
    name: &ImageName,
    named_by_tag: bool,
    registry: &'a LocalRegistry,
    reach: Reach,
    discovered: &Discovered,
    printer: &Printer,
) -> Result<(RegistryPlan<'a>, Target)> {
    let push_host = &reach.host;
    if name.tag.is_none() {
        // After a node-load the printed content tag is never `latest`: no warning there.
        printer.warn(
            "no tag given, so the image is tagged `latest`, which makes pods pull it \
             Always (imagePullPolicy); pass --tag NAME:TAG",
        );
    }
    let mut hosts = vec![
        &registry.host,
        &registry.host_from_container_runtime,
        push_host,
    ];
    hosts.extend(registry.host_from_cluster_network.as_ref());
    let (target, foreign) = Target::placed(name, &hosts);
    let target = Target {
        repository: openshift::repository_in_project(registry, discovered, &target.repository)?,
        tag: target.tag,
    };
    if let (true, Some(domain)) = (named_by_tag, foreign) {
        printer.warn(&foreign_host_note(&domain, registry, &target));
    }
    interrupt::doing(
        format!("pushing to {}", target.tagged(push_host)),
        "nothing was tagged",
    );
    let plan = RegistryPlan {
        registry,
        network: reach.network(discovered.vantage.network),
        cluster_login: openshift::cluster_login(registry, push_host, discovered, printer),
        reach,
    };
    Ok((plan, target))
}

/// `--tag` named a host that is not the cluster's registry under any spelling: where it lands.
fn foreign_host_note(domain: &str, registry: &LocalRegistry, target: &Target) -> String {
    format!(
        "--tag names the registry {domain}, which is not this cluster's ({}); as any other \
         registry's name, it keeps its host in the repository: {}",
        registry.host,
        target.tagged(&registry.host)
    )
}

/// An OpenShift route whose certificate we do not trust: say how to get its CA.
pub(crate) fn with_ingress_hint(err: Error, registry: &LocalRegistry) -> Error {
    // A route-less registry is reached through the API server: its certificate is the service
    // CA's, not ingress's.
    let openshift_route =
        registry.source == RegistrySource::Openshift && registry.service.is_none();
    if openshift_route && registry::is_untrusted_certificate(&err) {
        err.with_hint(INGRESS_CA_HINT)
    } else {
        err
    }
}

pub(crate) fn registry_push<'a>(
    args: &PushOptions,
    settings: &'a Settings,
    plan: &'a RegistryPlan<'_>,
    target: &'a Target,
) -> to_registry::RegistryPush<'a> {
    let registry = plan.registry;
    to_registry::RegistryPush {
        host: plan.push_host(),
        target,
        encoding: encoding_for(args.compression, registry),
        jobs: args.jobs,
        transport: plan.reach.transport(TransportOptions {
            insecure: args.insecure,
            ca_file: args.ca_file.clone(),
            help: registry.help.clone(),
            cluster_login: plan.cluster_login.clone(),
            ..settings.transport_options()
        }),
        cache_dir: settings
            .cache_dir
            .as_deref()
            .filter(|_| !plan.host_is_this_runs()),
    }
}

pub(crate) fn registry_report(
    plan: &RegistryPlan<'_>,
    target: &Target,
    digest: Digest,
    platforms: Vec<String>,
    transfer: summary::Transfer,
) -> PushReport {
    let registry = plan.registry;
    PushReport {
        reference: target.pinned(&registry.host_from_container_runtime, &digest),
        push_ref: (!plan.host_is_this_runs()).then(|| target.pinned(plan.push_host(), &digest)),
        cluster_network_ref: registry
            .host_from_cluster_network
            .as_ref()
            .map(|host| target.pinned(host, &digest)),
        digest,
        repository: target.repository.clone(),
        tag: target.tag.clone(),
        method: Method::Registry,
        network: Some(plan.network),
        platforms,
        transfer,
    }
}

/// `auto` sends layers as stored to registries on loopback or advertised by the cluster (local:
/// compression would cost more CPU than the wire saves, and the node's pull skips decompression).
fn encoding_for(compression: LayerCompression, registry: &LocalRegistry) -> Encoding {
    match compression {
        LayerCompression::None => Encoding::AsStored,
        LayerCompression::Gzip => Encoding::Gzip,
        LayerCompression::Zstd => Encoding::Zstd,
        LayerCompression::Auto => {
            let advertised = !matches!(registry.source, RegistrySource::Flag | RegistrySource::Env);
            if advertised || registry.host.is_loopback() {
                Encoding::AsStored
            } else {
                Encoding::Gzip
            }
        }
    }
}
