//! What the kubelet's and containerd's words tell about a container: the message that names the
//! image's pull failure, a registry refusing the node, a runtime that cannot reach or trust the
//! registry, a missing platform, and whether a waiting container's image was pulled. Pure.

/// Waiting reasons the kubelet gives only once the image is on the node.
const AFTER_THE_PULL: &[&str] = &[
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "PreStartHookError",
    "PostStartHookError",
];

/// A container waiting for something other than its image: whether the image was pulled is
/// said only when the reason or the kubelet's events show it.
pub(crate) fn waiting_otherwise(
    reason: &str,
    message: &str,
    events: &[String],
    image: &str,
) -> String {
    let quoted = format!("{image:?}");
    let pulled = AFTER_THE_PULL.contains(&reason)
        || events
            .iter()
            .any(|event| event.starts_with("Pulled: ") && event.contains(&quoted));
    let waits = if message.trim().is_empty() {
        reason.to_string()
    } else {
        format!("{reason}: {}", message.trim())
    };
    if pulled {
        format!("its image was pulled; it waits for another reason: {waits}")
    } else {
        format!("it waits: {waits}; nothing shows whether its image was pulled yet")
    }
}

/// The most telling thing the kubelet said: the event naming the image's pull failure, else
/// the container's waiting message.
pub(crate) fn kubelet_said(message: &str, events: &[String], image: &str) -> String {
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
pub(crate) fn is_unauthorized(said: &str) -> bool {
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
pub(crate) const UNTRUSTED: &str = "verify the TLS certificate of";

/// What the node's runtime failed to do with the runtime host, from containerd's and Go's words.
pub(crate) fn unreachable_symptom(said: &str) -> Option<&'static str> {
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

pub(crate) fn is_platform_mismatch(said: &str) -> bool {
    said.contains("no match for platform in manifest")
}
