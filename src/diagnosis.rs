//! The diagnosis the commands share, below them: why a pod's containers do not start. The
//! evidence (`evidence`: the pod's status and events, what the registry holds, what the node
//! holds and is) gathered, each container's cause found (`causes`, pure, in the kubelet's own
//! words: `kubelet_words`), and the report (`report`) that `why` prints and `push --rollout`
//! tells when its new pod cannot pull; `replaced`: a pushed ref another writer replaced, who
//! and what to do; `not_ready`: what keeps a rollout's pods from ready. `target` reads `why`'s and `--rollout`'s `TYPE/NAME`.

mod causes;
pub(crate) mod doctor;
mod evidence;
mod kubelet_words;
mod not_ready;
mod replaced;
mod report;
mod target;

use crate::cluster::client::{Cluster, ContainerState, PodFacts};
use crate::cluster::discovery::Discovered;
use crate::cluster::session::Session;
use crate::inventory::RegistryAccess;
use crate::plumbing::error::Result;
use crate::plumbing::output::Printer;
use crate::settings::Settings;
use causes::{ContainerView, Facts, Finding, Shown};

pub(crate) use causes::on_registry;
pub(crate) use evidence::read_pod;
pub(crate) use not_ready::{NotReady, line as not_ready_line};
pub(crate) use replaced::{ReplacedBy, replaced_error};
pub(crate) use report::{Report, Terminating};
pub(crate) use target::{parse_target, parse_workload};

/// Each container's finding, from the pod's status and events, the registry and the node.
pub(crate) async fn examine(
    session: &Session<'_>,
    discovered: &Discovered,
    cluster: &Cluster,
    pod: PodFacts,
    access: &RegistryAccess,
    settings: &Settings,
    printer: &Printer,
) -> Result<Report> {
    let namespace = pod.namespace.clone();
    let records = cluster.pod_event_records(&namespace, &pod.name).await?;
    let events: Vec<String> = records
        .iter()
        .map(|event| format!("{}: {}", event.reason, event.message))
        .collect();
    let node_arch = evidence::node_arch(cluster, pod.node.as_deref(), printer).await;
    let in_registry =
        evidence::registry_answers(session, discovered, &pod, access, settings, printer).await;
    let on_node =
        evidence::node_answers(discovered, cluster, &pod, settings.limits.node_timeout).await;
    let containers: Vec<Finding> = pod
        .containers
        .iter()
        .zip(in_registry.iter().zip(&on_node))
        .map(|(container, (in_registry, on_node))| {
            let view = ContainerView {
                name: container.name.clone(),
                image: container.image.clone(),
                pull_policy: container.pull_policy.clone(),
                state: match &container.state {
                    ContainerState::Ended { reason, exit_code } => Shown::Ended {
                        reason: reason.clone(),
                        exit_code: *exit_code,
                    },
                    ContainerState::Running => Shown::Runs {
                        not_ready: (!container.ready)
                            .then(|| not_ready::probe_said(&container.name, &records)),
                    },
                    ContainerState::Waiting { reason, message } => Shown::Waiting {
                        reason: reason.clone(),
                        message: message.clone(),
                    },
                    ContainerState::Unknown => Shown::NoStatus,
                },
            };
            causes::diagnose(
                &view,
                &Facts {
                    registry: discovered.registry.as_ref(),
                    events: &events,
                    in_registry,
                    on_node,
                    node_arch: node_arch.as_deref(),
                    node: pod.node.as_deref(),
                    unscheduled: pod.unscheduled.as_deref(),
                },
            )
        })
        .collect();
    Ok(Report {
        pod: pod.name.clone(),
        namespace: pod.namespace.clone(),
        node: pod.node.clone(),
        containers,
        terminating: Terminating::of(&pod).into_iter().collect(),
        not_created: None,
    })
}
