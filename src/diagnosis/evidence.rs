//! The evidence a diagnosis weighs: the pod a target names, the node's architecture, what the
//! cluster's registry holds of each failing container's image, and, without a registry, what
//! the pod's node holds (asked as `ls` asks it).

use super::causes::{InRegistry, OnNode, on_registry};
use super::target::Target;
use crate::cluster::client::{Cluster, ContainerState, Lookup, PodFacts};
use crate::cluster::discovery::Discovered;
use crate::cluster::product;
use crate::cluster::session::Session;
use crate::image::oci::parse_manifest;
use crate::image::reference::ImageName;
use crate::inventory::{RegistryAccess, open_registry};
use crate::nodes::{self, node_cluster};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::{Printer, paragraph};
use crate::settings::Settings;

const ARCH_LABEL: &str = "kubernetes.io/arch";

/// The pod a target names, and for a deployment its other pods that finalizers keep and why
/// its controller could not create more.
pub(crate) struct Examined {
    pub pod: PodFacts,
    /// The deployment's other pods, deleted and kept by finalizers.
    pub held: Vec<PodFacts>,
    /// The deployment's `ReplicaFailure` condition.
    pub not_created: Option<String>,
}

/// The pod `target` names: the pod itself, or the deployment's pod `examined_of` picks.
pub(crate) async fn read_pod(
    cluster: &Cluster,
    namespace: &str,
    target: &Target,
) -> Result<Examined> {
    let not_found = |what: &str, name: &str| {
        Error::new(
            ExitCode::Cluster,
            format!("{what} {namespace}/{name} not found"),
        )
        .with_hint(format!(
            "name the namespace with -n NAMESPACE; `kubectl get {what}s -n {namespace}` lists them"
        ))
    };
    let forbidden = |what: &str, name: &str| {
        Error::new(
            ExitCode::Cluster,
            format!("reading {what} {namespace}/{name} is not allowed for these credentials"),
        )
        .with_hint(format!(
            "why needs get on {what}s (and list on pods and events) in {namespace}"
        ))
    };
    match target {
        Target::Pod(name) => match cluster.pod(namespace, name).await? {
            Lookup::Found(pod) => Ok(Examined {
                pod,
                held: Vec::new(),
                not_created: None,
            }),
            Lookup::NotFound => Err(not_found("pod", name)),
            Lookup::Forbidden => Err(forbidden("pod", name)),
        },
        Target::Deployment(name) => match cluster.deployment_pods(namespace, name).await? {
            Lookup::Found(found) => {
                let not_created = found.replica_failure;
                match examined_of(found.pods) {
                    Some(examined) => Ok(Examined {
                        not_created,
                        ..examined
                    }),
                    None => Err(no_pod(namespace, name, not_created.as_deref())),
                }
            }
            Lookup::NotFound => Err(not_found("deployment", name)),
            Lookup::Forbidden => Err(forbidden("deployment", name)),
        },
        Target::Workload(kind, _) => Err(Error::new(
            ExitCode::Usage,
            format!("why reads pods and deployments, not {}", kind.plural()),
        )),
    }
}

/// A deployment without a pod: why its controller could not create one, when it said.
fn no_pod(namespace: &str, name: &str, not_created: Option<&str>) -> Error {
    let error = Error::new(
        ExitCode::Cluster,
        format!("deployment {namespace}/{name} has no pod"),
    );
    match not_created {
        Some(message) => error.with_hint(format!(
            "its controller could not create one: {}",
            paragraph(message)
        )),
        None => error.with_hint(format!(
            "`kubectl describe deployment {name} -n {namespace}` shows why none was created"
        )),
    }
}

/// Of a deployment's pods (newest first), the one `why` examines: the newest with a container
/// waiting on its image, else the newest; a pod being deleted only when all are. The others
/// that finalizers keep are said beside it.
fn examined_of(mut pods: Vec<PodFacts>) -> Option<Examined> {
    let at = pods
        .iter()
        .position(|pod| !pod.deleted && pod.failing())
        .or_else(|| pods.iter().position(|pod| !pod.deleted))
        .or((!pods.is_empty()).then_some(0))?;
    let pod = pods.remove(at);
    let held = pods
        .into_iter()
        .filter(|pod| !pod.held_by.is_empty())
        .collect();
    Some(Examined {
        pod,
        held,
        not_created: None,
    })
}

/// The node's architecture label, when the node list may be read.
pub(super) async fn node_arch(
    cluster: &Cluster,
    node: Option<&str>,
    printer: &Printer,
) -> Option<String> {
    let node = node?;
    match cluster.nodes().await {
        Ok(nodes) => nodes
            .into_iter()
            .find(|facts| facts.name == node)
            .and_then(|facts| facts.labels.get(ARCH_LABEL).cloned()),
        Err(err) => {
            printer.debug(&format!(
                "the node list could not be read: {}",
                err.message()
            ));
            None
        }
    }
}

/// For each container, what the cluster's registry holds of its image (asked only for a
/// failing container whose image is on that registry).
pub(super) async fn registry_answers(
    session: &Session<'_>,
    discovered: &Discovered,
    pod: &PodFacts,
    access: &RegistryAccess,
    settings: &Settings,
    printer: &Printer,
) -> Vec<InRegistry> {
    let mut answers = vec![InRegistry::NotAsked; pod.containers.len()];
    let Some(registry) = &discovered.registry else {
        return answers;
    };
    let wanted: Vec<usize> = pod
        .containers
        .iter()
        .enumerate()
        .filter(|(_, container)| matches!(container.state, ContainerState::Waiting { .. }))
        .filter(|(_, container)| on_registry(&container.image, registry))
        .map(|(at, _)| at)
        .collect();
    if wanted.is_empty() {
        return answers;
    }
    let (client, _reach) =
        match open_registry(session, discovered, registry, access, settings, printer).await {
            Ok(opened) => opened,
            Err(err) => {
                for at in wanted {
                    answers[at] = InRegistry::Unknown(err.with_causes());
                }
                return answers;
            }
        };
    for at in wanted {
        let Ok(name) = ImageName::parse(&pod.containers[at].image) else {
            continue;
        };
        let reference = name
            .digest
            .clone()
            .unwrap_or_else(|| name.tag_or_default().to_string());
        answers[at] = match client.manifest(&name.path, &reference).await {
            Ok(None) => InRegistry::Absent,
            Ok(Some(manifest)) => InRegistry::Present {
                platforms: platforms_of(&manifest.bytes),
            },
            Err(err) => InRegistry::Unknown(err.with_causes()),
        };
    }
    answers
}

/// Without a registry, for each failing container named by a tag: whether the pod's node holds
/// it, asked as ls asks (`ctr images ls` in each node of a kind, k3d or minikube cluster, or
/// through microk8s's and k3s's own `ctr` on their local node).
pub(super) async fn node_answers(
    discovered: &Discovered,
    cluster: &Cluster,
    pod: &PodFacts,
    bound: std::time::Duration,
) -> Vec<OnNode> {
    let mut answers = vec![OnNode::NotAsked; pod.containers.len()];
    let Some(node) = pod
        .node
        .as_deref()
        .filter(|_| discovered.registry.is_none())
    else {
        return answers;
    };
    let wanted: Vec<(usize, String)> = pod
        .containers
        .iter()
        .enumerate()
        .filter(|(_, container)| matches!(container.state, ContainerState::Waiting { .. }))
        .filter_map(|(at, container)| {
            let name = ImageName::parse(&container.image).ok()?;
            name.digest.is_none().then(|| (at, name.normalized()))
        })
        .collect();
    if wanted.is_empty() {
        return answers;
    }
    let held = match what_the_node_holds(cluster, node, bound).await {
        Ok(held) => held,
        Err(why) => {
            for (at, _) in wanted {
                answers[at] = OnNode::Unknown(why.clone());
            }
            return answers;
        }
    };
    for (at, normalized) in wanted {
        answers[at] = if held.contains(&normalized) {
            OnNode::Holds
        } else {
            OnNode::Lacks(normalized)
        };
    }
    answers
}

/// The image names in `node`'s containerd.
async fn what_the_node_holds(
    cluster: &Cluster,
    node: &str,
    bound: std::time::Duration,
) -> std::result::Result<Vec<String>, String> {
    let nodes = cluster
        .nodes()
        .await
        .map_err(|err| err.message().to_string())?;
    let product = product::detect(cluster.facts(), &nodes);
    let access = node_cluster(&product, &nodes, bound).map_err(|err| err.message().to_string())?;
    let listed = nodes::node_names(&access).await?;
    listed
        .into_iter()
        .find(|(name, _)| name == node)
        .map(|(_, names)| names)
        .ok_or_else(|| {
            format!(
                "node {node} is not among the nodes {} lists",
                product.target_phrase()
            )
        })
}

/// The platforms an index lists (`linux/arm64`); empty for a single manifest.
fn platforms_of(bytes: &[u8]) -> Vec<String> {
    let Ok(parsed) = parse_manifest(bytes) else {
        return Vec::new();
    };
    if !parsed.is_index() {
        return Vec::new();
    }
    parsed
        .children()
        .iter()
        .filter(|child| !child.is_attachment())
        .filter_map(|child| child.platform())
        .map(|platform| platform.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, failing: bool, deleted: bool, held_by: &[&str]) -> PodFacts {
        let state = match failing {
            true => ContainerState::Waiting {
                reason: "ImagePullBackOff".into(),
                message: String::new(),
            },
            false => ContainerState::Running,
        };
        PodFacts {
            name: name.into(),
            namespace: "default".into(),
            node: None,
            containers: vec![crate::cluster::client::ContainerFacts {
                name: "web".into(),
                image: "r/web:dev".into(),
                pull_policy: None,
                state,
                ready: !failing,
            }],
            created: None,
            unscheduled: None,
            deleted,
            held_by: held_by.iter().map(|f| f.to_string()).collect(),
        }
    }

    fn names(examined: Option<Examined>) -> (String, Vec<String>) {
        let examined = examined.expect("a pod");
        let held = examined.held.into_iter().map(|pod| pod.name).collect();
        (examined.pod.name, held)
    }

    #[test]
    fn a_deployment_without_a_pod_says_why_its_controller_made_none_when_it_said() {
        let refused = no_pod(
            "default",
            "web",
            Some("pods \"web-5f02-\" is forbidden:\n exceeded quota"),
        );
        assert_eq!(
            refused.hints(),
            [
                "its controller could not create one: pods \"web-5f02-\" is forbidden: exceeded quota"
            ]
        );
        let silent = no_pod("default", "web", None);
        assert_eq!(
            silent.hints(),
            ["`kubectl describe deployment web -n default` shows why none was created"]
        );
    }

    #[test]
    fn the_newest_failing_pod_not_deleted_is_examined_and_the_held_ones_said_beside_it() {
        let hold = ["example.com/hold"];
        let pods = vec![
            pod("deleted-failing", true, true, &[]),
            pod("runs", false, false, &[]),
            pod("failing", true, false, &[]),
            pod("held", false, true, &hold),
            pod("stopping", false, true, &[]),
        ];
        assert_eq!(
            names(examined_of(pods)),
            ("failing".into(), vec!["held".into()])
        );
        let pods = vec![
            pod("runs", false, false, &[]),
            pod("held", false, true, &hold),
        ];
        assert_eq!(
            names(examined_of(pods)),
            ("runs".into(), vec!["held".into()])
        );
        let all_deleted = vec![
            pod("held-1", false, true, &hold),
            pod("held-2", true, true, &hold),
        ];
        assert_eq!(
            names(examined_of(all_deleted)),
            ("held-1".into(), vec!["held-2".into()])
        );
        assert!(examined_of(Vec::new()).is_none());
    }
}
