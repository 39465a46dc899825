//! From one container's facts (its image, its waiting state, the kubelet's events, what the
//! cluster advertises and what the registry holds) to one cause, its evidence and its fix. Pure.

use serde::Serialize;

use crate::cluster::client::PULL_FAILURES;
use crate::cluster::hosting::LocalRegistry;
use crate::error::ExitCode;
use crate::image::reference::{ImageName, RegistryHost};

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
    /// `None` when it runs (or ran); else the waiting reason and message.
    pub waiting: Option<(String, String)>,
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

/// Whether `image` names the cluster's registry by any of its advertised hosts.
pub(crate) fn on_registry(image: &str, registry: &LocalRegistry) -> bool {
    let Some(Some(host)) = image_host(image) else {
        return false;
    };
    host == registry.host
        || host == registry.host_from_container_runtime
        || registry.host_from_cluster_network.as_ref() == Some(&host)
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
    let Some((reason, message)) = &container.waiting else {
        return finding(None, "it runs".to_string(), None);
    };
    if !PULL_FAILURES.contains(&reason.as_str()) {
        return finding(
            None,
            format!("its image was pulled; it waits for another reason: {reason}: {message}"),
            None,
        );
    }
    let said = kubelet_said(message, facts.events, &container.image);
    let parsed = ImageName::parse(&container.image);
    if reason == "InvalidImageName" || parsed.is_err() {
        let why = parsed
            .err()
            .map_or_else(|| said.clone(), |err| err.to_string());
        return finding(
            Some(Cause::InvalidName),
            format!("the image reference does not parse: {why}"),
            Some(
                "write it as HOST[:PORT]/NAME[:TAG][@sha256:DIGEST], e.g. the ref `kubectl registry push` prints"
                    .to_string(),
            ),
        );
    }
    let Ok(name) = parsed else {
        unreachable!("an unparsable name returned above")
    };
    match facts.registry {
        Some(registry) => with_registry(container, &name, registry, facts, &said, &finding),
        None => without_registry(container, &name, facts, &said, &finding),
    }
}

type MakeFinding<'a> = dyn Fn(Option<Cause>, String, Option<String>) -> Finding + 'a;

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
    if &host != runtime {
        let right = with_host(name, runtime);
        return finding(
            Some(Cause::WrongHost),
            format!(
                "the image names the registry as {host}, which is where it is reached from {}; \
                 the nodes' container runtime reaches it as {runtime}",
                if host == registry.host {
                    "this machine"
                } else {
                    "the cluster network"
                }
            ),
            Some(format!("use image {right} in the pod spec")),
        );
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
        let what = name
            .digest
            .clone()
            .unwrap_or_else(|| format!("tag {}", name.tag_or_default()));
        return finding(
            Some(Cause::NotInRegistry),
            format!("the registry has no {what} in repository {}", name.path),
            Some(format!(
                "push it: kubectl registry push IMAGE --tag {}:{}",
                name.path,
                name.tag_or_default()
            )),
        );
    }
    if let Some(symptom) = unreachable_symptom(said) {
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
        return finding(
            Some(Cause::RegistryNotMapped),
            format!("the node's container runtime cannot {symptom} {runtime}: {said}"),
            Some(fix),
        );
    }
    match facts.in_registry {
        InRegistry::Present { platforms } if is_platform_mismatch(said) => {
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
        InRegistry::Unknown(why) => other(
            said,
            &format!("the registry could not be asked whether it holds the image ({why})"),
            finding,
        ),
        _ => other(said, "the registry holds the image", finding),
    }
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

/// The most telling thing the kubelet said: the event naming the image's pull failure, else
/// the container's waiting message.
fn kubelet_said(message: &str, events: &[String], image: &str) -> String {
    let quoted = format!("{image:?}");
    events
        .iter()
        .rev()
        .find(|event| event.contains("Failed to pull image") && event.contains(&quoted))
        .cloned()
        .or_else(|| (!message.trim().is_empty()).then(|| message.trim().to_string()))
        .unwrap_or_else(|| "nothing".to_string())
}

/// containerd's words for a registry refusing it (`pull access denied`, `401 Unauthorized`,
/// `403 Forbidden`, `authorization failed`, `insufficient_scope`).
fn is_unauthorized(said: &str) -> bool {
    let lower = said.to_ascii_lowercase();
    [
        "401 unauthorized",
        "403 forbidden",
        "authorization failed",
        "pull access denied",
        "insufficient_scope",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// The symptom of a registry whose TLS certificate the node does not trust.
const UNTRUSTED: &str = "verify the TLS certificate of";

/// What the node's runtime failed to do with the runtime host, from containerd's and Go's words.
fn unreachable_symptom(said: &str) -> Option<&'static str> {
    let lower = said.to_ascii_lowercase();
    if lower.contains("server gave http response to https client") {
        return Some("talk HTTPS to the plain HTTP registry at");
    }
    if lower.contains("no such host") || lower.contains("server misbehaving") {
        return Some("resolve the name");
    }
    if lower.contains("connection refused") {
        return Some("connect to");
    }
    if lower.contains("i/o timeout") || lower.contains("no route to host") {
        return Some("reach");
    }
    if lower.contains("x509:") || lower.contains("tls: ") {
        return Some(UNTRUSTED);
    }
    None
}

fn is_platform_mismatch(said: &str) -> bool {
    said.contains("no match for platform in manifest")
}
