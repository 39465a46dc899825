//! From one container's facts (its image, its waiting state, the kubelet's events, what the
//! cluster advertises and what the registry holds) to one cause, its evidence and its fix. Pure.

use serde::Serialize;

use crate::cluster::client::PULL_FAILURES;
use crate::cluster::hosting::LocalRegistry;
use crate::image::reference::{ImageName, NameError, RegistryHost, corrected, same_registry};
use crate::plumbing::error::ExitCode;

use super::kubelet_words::{
    UNTRUSTED, is_platform_mismatch, is_unauthorized, kubelet_said, unreachable_symptom,
    waiting_otherwise,
};

/// Why a container's image does not start (`-o json`'s `cause`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Cause {
    WrongHost,
    NotInRegistry,
    RegistryNotMapped,
    PlatformMismatch,
    Unauthorized,
    DigestAfterLoad,
    NotOnNode,
    PullPolicy,
    InvalidName,
    Other,
}

impl Cause {
    /// The exit code of the cause's area: the pod spec and cluster 3, the registry 5, the nodes 6.
    pub(crate) fn exit_code(self) -> ExitCode {
        match self {
            Cause::WrongHost | Cause::PullPolicy | Cause::InvalidName | Cause::Other => {
                ExitCode::Cluster
            }
            Cause::NotInRegistry | Cause::PlatformMismatch | Cause::Unauthorized => {
                ExitCode::Registry
            }
            Cause::RegistryNotMapped | Cause::DigestAfterLoad | Cause::NotOnNode => ExitCode::Load,
        }
    }
}

/// A container as the pod's status shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContainerView {
    pub name: String,
    pub image: String,
    pub pull_policy: Option<String>,
    pub state: Shown,
}

/// What the container's status shows, and nothing more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shown {
    /// It runs: its image was there. `Some` when it is not ready: the latest readiness
    /// or startup probe failure the kubelet recorded for it, or why nothing is said.
    Runs { not_ready: Option<String> },
    /// It ran and ended: the kubelet's reason and the exit code.
    Ended { reason: String, exit_code: i32 },
    /// The kubelet's waiting reason and message.
    Waiting { reason: String, message: String },
    /// No status at all: the kubelet has said nothing of it (or the pod has no node).
    NoStatus,
}

/// What the registry holds of the image, when we asked it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InRegistry {
    /// Not asked: the image is not on the cluster's registry, or there is none.
    NotAsked,
    /// The tag or digest is there; the platforms it has (empty for a single-platform image
    /// whose platform was not read).
    Present {
        platforms: Vec<String>,
    },
    Absent,
    /// Asking failed: why.
    Unknown(String),
}

/// Without a registry: whether the pod's node holds the image by name, asked as node-load asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OnNode {
    NotAsked,
    Holds,
    /// The name containerd would record (`docker.io/library/myimg:dev`), which the node lacks.
    Lacks(String),
    /// Asking failed: why.
    Unknown(String),
}

/// One container's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Finding {
    pub name: String,
    pub image: String,
    /// `null` for a container that runs.
    pub cause: Option<Cause>,
    pub explanation: String,
    pub fix: Option<String>,
}

/// What the run knows around one container.
pub(crate) struct Facts<'a> {
    pub registry: Option<&'a LocalRegistry>,
    /// The kubelet's messages about this pod, oldest first.
    pub events: &'a [String],
    pub in_registry: &'a InRegistry,
    pub on_node: &'a OnNode,
    /// The node's `kubernetes.io/arch`, when known.
    pub node_arch: Option<&'a str>,
    pub node: Option<&'a str>,
    /// The scheduler's word when the pod is not scheduled (`Unschedulable: ...`).
    pub unscheduled: Option<&'a str>,
}

/// Where the image names a registry: `None` for an unparsable name.
pub(crate) fn image_host(image: &str) -> Option<Option<RegistryHost>> {
    let name = ImageName::parse(image).ok()?;
    Some(
        name.domain
            .as_deref()
            .and_then(|domain| RegistryHost::parse(domain).ok()),
    )
}

/// Whether `image` names the cluster's registry by any of its advertised hosts, under any of
/// their spellings (`127.0.0.1:PORT` for `localhost:PORT`).
pub(crate) fn on_registry(image: &str, registry: &LocalRegistry) -> bool {
    let Some(Some(host)) = image_host(image) else {
        return false;
    };
    std::iter::once(&registry.host)
        .chain([&registry.host_from_container_runtime])
        .chain(&registry.host_from_cluster_network)
        .any(|known| same_registry(host.as_str(), known))
}

/// The verdict for one container.
pub(crate) fn diagnose(container: &ContainerView, facts: &Facts) -> Finding {
    let finding = |cause, explanation: String, fix: Option<String>| Finding {
        name: container.name.clone(),
        image: container.image.clone(),
        cause,
        explanation,
        fix,
    };
    let (reason, message) = match &container.state {
        Shown::Runs { not_ready: None } => return finding(None, "it runs".to_string(), None),
        Shown::Runs {
            not_ready: Some(why),
        } => return finding(None, format!("it runs but is not ready: {why}"), None),
        Shown::Ended { reason, exit_code } => {
            let ended = format!("it ran and ended: {reason}, exit code {exit_code}");
            return finding(None, ended, None);
        }
        Shown::NoStatus => return finding(None, no_status(facts), None),
        Shown::Waiting { reason, message } => (reason, message),
    };
    if !PULL_FAILURES.contains(&reason.as_str()) {
        let waits = waiting_otherwise(reason, message, facts.events, &container.image);
        return finding(None, waits, None);
    }
    let said = kubelet_said(message, facts.events, &container.image);
    let name = match ImageName::parse(&container.image) {
        Ok(name) if reason != "InvalidImageName" => name,
        parsed => return invalid_name(&container.image, parsed.err(), &said, &finding),
    };
    if reason == "ErrImageNeverPull" {
        return never_pulled(container, &name, facts, &said, &finding);
    }
    match facts.registry {
        Some(registry) => with_registry(container, &name, registry, facts, &said, &finding),
        None => without_registry(container, &name, facts, &said, &finding),
    }
}

type MakeFinding<'a> = dyn Fn(Option<Cause>, String, Option<String>) -> Finding + 'a;

/// A container the kubelet has said nothing of: nothing is claimed of its image.
fn no_status(facts: &Facts) -> String {
    match (facts.unscheduled, facts.node) {
        (Some(scheduler), _) => format!(
            "the pod is not scheduled on a node yet, so no node has asked for its image; \
             the scheduler says: {scheduler}"
        ),
        (None, None) => "the pod is on no node yet, so no node has asked for its image".to_string(),
        (None, Some(node)) => format!(
            "node {node}'s kubelet has not reported on this container yet; nothing shows \
             whether its image was pulled"
        ),
    }
}

/// A reference the kubelet (or we) cannot parse: the corrected one, when there is one.
fn invalid_name(
    image: &str,
    error: Option<NameError>,
    said: &str,
    finding: &MakeFinding,
) -> Finding {
    let why = error.map_or_else(|| said.to_string(), |err| err.to_string());
    let fix = match corrected(image) {
        Some(fixed) => format!(
            "use image {fixed} in the pod spec (repository names are lower case; the tag is kept)"
        ),
        None => "write it as HOST[:PORT]/NAME[:TAG][@sha256:DIGEST], e.g. the ref \
                 `kubectl registry push` prints"
            .to_string(),
    };
    finding(
        Some(Cause::InvalidName),
        format!("the image reference does not parse: {why}"),
        Some(fix),
    )
}

/// `imagePullPolicy: Never` and a node without the image (ErrImageNeverPull): the kubelet never
/// asks a registry, whatever it holds.
fn never_pulled(
    container: &ContainerView,
    name: &ImageName,
    facts: &Facts,
    said: &str,
    finding: &MakeFinding,
) -> Finding {
    let node = facts.node.unwrap_or("?");
    let push = |repository: &str| {
        format!(
            "kubectl registry push IMAGE --tag {repository}:{}",
            name.tag_or_default()
        )
    };
    let (evidence, fix) = match facts.registry {
        Some(registry) if on_registry(&container.image, registry) => {
            let held = match facts.in_registry {
                InRegistry::Present { .. } => "the registry holds it".to_string(),
                InRegistry::Absent => "the registry does not hold it either".to_string(),
                InRegistry::Unknown(why) => {
                    format!("whether the registry holds it is unknown ({why})")
                }
                InRegistry::NotAsked => "the registry was not asked".to_string(),
            };
            let push_first = if facts.in_registry == &InRegistry::Absent {
                format!("push it ({}), then ", push(&name.path))
            } else {
                String::new()
            };
            (
                format!("node {node} does not hold it, and {held}"),
                format!(
                    "{push_first}set imagePullPolicy: IfNotPresent in the pod spec (or leave it out), \
                     so that the node pulls it from the registry"
                ),
            )
        }
        Some(_) => (
            format!("node {node} does not hold it, and it is not on the cluster's registry"),
            format!(
                "push it to the cluster's registry ({}), use the ref it prints, and set \
                 imagePullPolicy: IfNotPresent",
                push(&name.familiar_repository())
            ),
        ),
        None => (
            format!("the cluster has no registry, and {}", node_holds(facts)),
            format!(
                "load it into the nodes: {} (with no registry, push loads the nodes), then use \
                 the ref it prints; imagePullPolicy: Never finds a loaded image",
                push(&name.familiar_repository())
            ),
        ),
    };
    finding(
        Some(Cause::PullPolicy),
        format!(
            "its imagePullPolicy is Never, so the kubelet uses only an image the node holds: \
             {evidence}: {said}"
        ),
        Some(fix),
    )
}

/// What the node was found to hold of the image, for a sentence.
fn node_holds(facts: &Facts) -> String {
    let node = facts.node.unwrap_or("?");
    match facts.on_node {
        OnNode::Lacks(normalized) => format!("node {node}'s containerd holds no {normalized}"),
        OnNode::Holds => format!("node {node}'s containerd holds an image by that name"),
        OnNode::Unknown(why) => format!("what node {node} holds could not be read ({why})"),
        OnNode::NotAsked => format!("node {node} does not hold it"),
    }
}

fn with_registry(
    container: &ContainerView,
    name: &ImageName,
    registry: &LocalRegistry,
    facts: &Facts,
    said: &str,
    finding: &MakeFinding,
) -> Finding {
    let runtime = &registry.host_from_container_runtime;
    let host = name
        .domain
        .as_deref()
        .and_then(|domain| RegistryHost::parse(domain).ok());
    let Some(host) = host.filter(|_| on_registry(&container.image, registry)) else {
        return other(said, "the image is not on the cluster's registry", finding);
    };
    if !same_registry(host.as_str(), runtime) {
        return wrong_host(name, &host, registry, finding);
    }
    if is_unauthorized(said) {
        return finding(
            Some(Cause::Unauthorized),
            format!("the registry refused the node's pull: {said}"),
            Some(format!(
                "give the pod an imagePullSecret for {runtime} (kubectl create secret docker-registry), \
                 or let the registry serve pulls without credentials"
            )),
        );
    }
    // What the registry holds settles it first: a missing tag fails any node, mapped or not.
    if facts.in_registry == &InRegistry::Absent {
        return not_in_registry(name, finding);
    }
    if let Some(symptom) = unreachable_symptom(said) {
        return not_mapped(registry, symptom, said, finding);
    }
    match facts.in_registry {
        InRegistry::Present { platforms } if is_platform_mismatch(said) => {
            platform_mismatch(platforms, facts, finding)
        }
        InRegistry::Unknown(why) => other(
            said,
            &format!("the registry could not be asked whether it holds the image ({why})"),
            finding,
        ),
        _ => other(said, "the registry holds the image", finding),
    }
}

/// The image names the registry by a host the nodes do not reach it at.
fn wrong_host(
    name: &ImageName,
    host: &RegistryHost,
    registry: &LocalRegistry,
    finding: &MakeFinding,
) -> Finding {
    let runtime = &registry.host_from_container_runtime;
    let right = with_host(name, runtime);
    let from = if registry
        .host_from_cluster_network
        .as_ref()
        .is_some_and(|network| same_registry(host.as_str(), network))
        && !same_registry(host.as_str(), &registry.host)
    {
        "the cluster network"
    } else {
        "this machine"
    };
    finding(
        Some(Cause::WrongHost),
        format!(
            "the image names the registry as {host}, which is where it is reached from {from}; \
             the nodes' container runtime reaches it as {runtime}"
        ),
        Some(format!("use image {right} in the pod spec")),
    )
}

fn not_in_registry(name: &ImageName, finding: &MakeFinding) -> Finding {
    let what = name
        .digest
        .clone()
        .unwrap_or_else(|| format!("tag {}", name.tag_or_default()));
    finding(
        Some(Cause::NotInRegistry),
        format!("the registry has no {what} in repository {}", name.path),
        Some(format!(
            "push it: kubectl registry push IMAGE --tag {}:{}",
            name.path,
            name.tag_or_default()
        )),
    )
}

/// The node's runtime cannot reach or talk to the runtime host: the `hosts.toml` that maps it.
fn not_mapped(
    registry: &LocalRegistry,
    symptom: &str,
    said: &str,
    finding: &MakeFinding,
) -> Finding {
    let runtime = &registry.host_from_container_runtime;
    let reached = registry
        .host_from_cluster_network
        .as_ref()
        .unwrap_or(runtime);
    let certs_d = format!("/etc/containerd/certs.d/{runtime}");
    let fix = if symptom == UNTRUSTED {
        // The registry speaks TLS: the node needs its CA, not plain HTTP.
        format!(
            "give each node's containerd the CA that signed the registry's certificate, beside \
             its mapping (kind: {certs_d}/ca.crt and {certs_d}/hosts.toml):\n\
             server = \"https://{runtime}\"\n\
             [host.\"https://{reached}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  \
             ca = \"{certs_d}/ca.crt\""
        )
    } else {
        format!(
            "map {runtime} on each node's containerd to the registry (kind: {certs_d}/hosts.toml):\n\
             server = \"http://{runtime}\"\n\
             [host.\"http://{reached}\"]\n  capabilities = [\"pull\", \"resolve\"]"
        )
    };
    finding(
        Some(Cause::RegistryNotMapped),
        format!("the node's container runtime cannot {symptom} {runtime}: {said}"),
        Some(fix),
    )
}

fn platform_mismatch(platforms: &[String], facts: &Facts, finding: &MakeFinding) -> Finding {
    let arch = facts.node_arch.unwrap_or("its architecture");
    finding(
        Some(Cause::PlatformMismatch),
        format!(
            "the image has no build for node {}'s architecture {arch}{}",
            facts.node.unwrap_or("?"),
            if platforms.is_empty() {
                String::new()
            } else {
                format!(" (it has: {})", platforms.join(", "))
            }
        ),
        Some(format!(
            "build it for linux/{arch} (docker buildx build --platform linux/{arch}) and push it again"
        )),
    )
}

fn without_registry(
    container: &ContainerView,
    name: &ImageName,
    facts: &Facts,
    said: &str,
    finding: &MakeFinding,
) -> Finding {
    if name.digest.is_some() {
        let example = match &name.tag {
            Some(tag) => format!(", e.g. {}:{tag}", name.familiar_repository()),
            None => String::new(),
        };
        return finding(
            Some(Cause::DigestAfterLoad),
            "the cluster has no registry, and an image loaded into the nodes is found by its name: \
             a digest ref is looked up in a registry, which the nodes do not have"
                .to_string(),
            Some(format!(
                "use the ref `kubectl registry push` printed (a content tag, NAME:TAG-<12 hex>), \
                 or the name the image was loaded under{example}, not a digest"
            )),
        );
    }
    let always = container.pull_policy.as_deref() == Some("Always");
    let latest = name.tag_or_default() == "latest";
    if always || (latest && container.pull_policy.as_deref() != Some("IfNotPresent")) {
        return finding(
            Some(Cause::PullPolicy),
            format!(
                "the cluster has no registry, and the kubelet pulls this image instead of using the loaded one: {}",
                if always {
                    "its imagePullPolicy is Always"
                } else {
                    "its tag is latest, whose default imagePullPolicy is Always"
                }
            ),
            Some(
                "set imagePullPolicy: IfNotPresent (or Never), and use the content tag `kubectl registry push` printed"
                    .to_string(),
            ),
        );
    }
    match facts.on_node {
        OnNode::Lacks(normalized) => finding(
            Some(Cause::NotOnNode),
            format!(
                "the cluster has no registry, and node {}'s containerd holds no {normalized} \
                 (asked with ctr images ls, as node-load asks): the kubelet looked for it elsewhere: {said}",
                facts.node.unwrap_or("?")
            ),
            Some(format!(
                "load it into the nodes: kubectl registry push IMAGE --tag {}:{} (with no registry, push \
                 loads the nodes), then use the ref it prints",
                name.familiar_repository(),
                name.tag_or_default()
            )),
        ),
        OnNode::Unknown(why) => other(
            said,
            &format!("the cluster has no registry; what the node holds could not be read: {why}"),
            finding,
        ),
        OnNode::Holds => other(
            said,
            "the cluster has no registry; the node holds the image by that name",
            finding,
        ),
        OnNode::NotAsked => other(said, "the cluster has no registry", finding),
    }
}

fn other(said: &str, checked: &str, finding: &MakeFinding) -> Finding {
    finding(
        Some(Cause::Other),
        format!("the kubelet says: {said} ({checked})"),
        None,
    )
}

/// `name` with `host` as its registry.
fn with_host(name: &ImageName, host: &RegistryHost) -> String {
    let mut text = format!("{host}/{}", name.path);
    if let Some(tag) = &name.tag {
        text = format!("{text}:{tag}");
    }
    if let Some(digest) = &name.digest {
        text = format!("{text}@{digest}");
    }
    text
}
