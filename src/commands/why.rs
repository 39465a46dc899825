//! `kubectl registry why pod/NAME` (or `deploy/NAME`): for each container whose image does not
//! start, the cause, its evidence and the fix, from the pod's status and events, what the cluster
//! advertises, what the registry holds and what the node is.

mod diagnose;
mod kubelet_words;
mod target;

pub(crate) use diagnose::on_registry;
pub(crate) use target::parse_workload;

use serde::Serialize;

use crate::cli::{OutputFormat, RegistryAccessArgs, WhyArgs};
use crate::cluster::ClusterOptions;
use crate::cluster::client::{Cluster, ContainerState, Lookup, PodFacts};
use crate::cluster::discovery::{self, Discovered};
use crate::cluster::product;
use crate::commands::ls::node_tags;
use crate::commands::ls::open_registry;
use crate::error::{Context, Error, ExitCode, Result};
use crate::image::oci::parse_manifest;
use crate::image::reference::ImageName;
use crate::nodes;
use crate::output::Printer;
use crate::settings::Settings;
use diagnose::{ContainerView, Facts, Finding, InRegistry, OnNode, Shown};
use target::{Target, parse_target};

const ARCH_LABEL: &str = "kubernetes.io/arch";

/// `-o json`: see docs/reference.md.
#[derive(Debug, Serialize)]
struct Report {
    pod: String,
    namespace: String,
    node: Option<String>,
    containers: Vec<Finding>,
}

pub async fn run(
    args: &WhyArgs,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    let target = parse_target(&args.target)?;
    let discovered = discovery::discover(cluster_args, settings, printer).await?;
    let connected;
    let cluster = match &discovered.cluster {
        Some(cluster) => cluster,
        None => {
            connected = Cluster::connect(cluster_args, settings, printer).await?;
            &connected
        }
    };
    let namespace = cluster.namespace().to_string();
    let pod = read_pod(cluster, &namespace, &target).await?;
    let report = examine(&discovered, cluster, pod, &args.access, settings, printer).await?;
    let text = match args.output.output {
        OutputFormat::Json => serde_json::to_string_pretty(&report)
            .context(ExitCode::Failure, || "writing the report as JSON")?,
        OutputFormat::Text => render(&report),
    };
    printer.result(&text)?;
    verdict(&report).map_or(Ok(()), Err)
}

/// What `why` says of one pod: its text, its `-o json` object, and the error coded after the
/// first cause (`None` when every container runs).
pub(crate) struct Explained {
    pub text: String,
    pub json: serde_json::Value,
    pub verdict: Option<Error>,
}

/// `why` on a pod already read (push --rollout's new pod).
pub(crate) async fn explain(
    discovered: &Discovered,
    cluster: &Cluster,
    pod: PodFacts,
    access: &RegistryAccessArgs,
    settings: &Settings,
    printer: &Printer,
) -> Result<Explained> {
    let report = examine(discovered, cluster, pod, access, settings, printer).await?;
    Ok(Explained {
        text: render(&report),
        json: serde_json::to_value(&report).unwrap_or_default(),
        verdict: verdict(&report),
    })
}

/// Each container's finding, from the pod's status and events, the registry and the node.
async fn examine(
    discovered: &Discovered,
    cluster: &Cluster,
    pod: PodFacts,
    access: &RegistryAccessArgs,
    settings: &Settings,
    printer: &Printer,
) -> Result<Report> {
    let namespace = pod.namespace.clone();
    let events = cluster.pod_events(&namespace, &pod.name).await?;
    let node_arch = node_arch(cluster, pod.node.as_deref(), printer).await;
    let in_registry = registry_answers(discovered, &pod, access, settings, printer).await;
    let on_node = node_answers(discovered, cluster, &pod, settings.limits.node_timeout).await;
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
                    ContainerState::Started => Shown::Runs,
                    ContainerState::Waiting { reason, message } => Shown::Waiting {
                        reason: reason.clone(),
                        message: message.clone(),
                    },
                    ContainerState::Unknown => Shown::NoStatus,
                },
            };
            diagnose::diagnose(
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
    })
}

async fn read_pod(cluster: &Cluster, namespace: &str, target: &Target) -> Result<PodFacts> {
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
            Lookup::Found(pod) => Ok(pod),
            Lookup::NotFound => Err(not_found("pod", name)),
            Lookup::Forbidden => Err(forbidden("pod", name)),
        },
        Target::Deployment(name) => match cluster.deployment_pod(namespace, name).await? {
            Lookup::Found(Some(pod)) => Ok(pod),
            Lookup::Found(None) => Err(Error::new(
                ExitCode::Cluster,
                format!("deployment {namespace}/{name} has no pod"),
            )
            .with_hint(format!(
                "`kubectl describe deployment {name} -n {namespace}` shows why none was created"
            ))),
            Lookup::NotFound => Err(not_found("deployment", name)),
            Lookup::Forbidden => Err(forbidden("deployment", name)),
        },
        Target::Workload(kind, _) => Err(Error::new(
            ExitCode::Usage,
            format!("why reads pods and deployments, not {}", kind.plural()),
        )),
    }
}

/// The node's architecture label, when the node list may be read.
async fn node_arch(cluster: &Cluster, node: Option<&str>, printer: &Printer) -> Option<String> {
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
async fn registry_answers(
    discovered: &Discovered,
    pod: &PodFacts,
    access: &RegistryAccessArgs,
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
    let (client, _tunnel) =
        match open_registry(discovered, registry, access, settings, printer).await {
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
async fn node_answers(
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
    let access = node_tags::node_cluster(&product, &nodes, bound)
        .map_err(|err| err.message().to_string())?;
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

fn render(report: &Report) -> String {
    let mut lines = vec![format!(
        "pod {}/{}{}",
        report.namespace,
        report.pod,
        report
            .node
            .as_deref()
            .map(|node| format!(" on node {node}"))
            .unwrap_or_default()
    )];
    for finding in &report.containers {
        match finding.cause {
            None => lines.push(format!(
                "✓ {} ({}): {}",
                finding.name, finding.image, finding.explanation
            )),
            Some(cause) => {
                let cause = serde_json::to_value(cause)
                    .ok()
                    .and_then(|value| value.as_str().map(str::to_string))
                    .unwrap_or_default();
                lines.push(format!("✗ {} ({}): {cause}", finding.name, finding.image));
                lines.push(format!("    why: {}", finding.explanation));
                if let Some(fix) = &finding.fix {
                    for (at, line) in fix.lines().enumerate() {
                        let label = if at == 0 { "    fix: " } else { "         " };
                        lines.push(format!("{label}{line}"));
                    }
                }
            }
        }
    }
    lines.join("\n")
}

/// `None` when every container runs; else the error coded after the first cause.
fn verdict(report: &Report) -> Option<Error> {
    let failing: Vec<&Finding> = report
        .containers
        .iter()
        .filter(|finding| finding.cause.is_some())
        .collect();
    let first = failing.first()?;
    let code = first
        .cause
        .map_or(ExitCode::Failure, diagnose::Cause::exit_code);
    let names: Vec<&str> = failing
        .iter()
        .map(|finding| finding.name.as_str())
        .collect();
    Some(Error::new(
        code,
        format!(
            "pod {}/{}: {} cannot start {} image ({})",
            report.namespace,
            report.pod,
            if failing.len() == 1 {
                "1 container".to_string()
            } else {
                format!("{} containers", failing.len())
            },
            if failing.len() == 1 { "its" } else { "their" },
            names.join(", ")
        ),
    ))
}
