//! `doctor --pod`: a short-lived pod pulls the probe image by the name pods use, the definitive
//! check of what the nodes can pull; the kubelet's events when it cannot; the pod removed after.

use std::time::Duration;

use futures_util::StreamExt;

use super::report::{Check, CheckId};
use crate::cluster::client::{Change, Cluster, ProbePod, ProbePods, PullState};
use crate::cluster::hosting::LocalRegistry;
use crate::plumbing::error::ExitCode;

/// How long the node may take to pull a few hundred bytes before we call it stuck.
const WAIT: Duration = Duration::from_secs(60);
/// Between two reads where watching the pod is refused.
const POLL_EVERY: Duration = Duration::from_millis(500);

/// The pod watched until its pull is done or failed (read twice a second where the watch is
/// refused); unbounded: the caller bounds it.
async fn pulled(cluster: &Cluster, pod: &ProbePod) -> crate::plumbing::error::Result<PullState> {
    let mut follow = ProbePods::new(cluster).follow_probe_pod(pod);
    while let Some(change) = follow.next().await {
        let now = match change {
            Change::All(states) => states.into_iter().next(),
            Change::Applied(state) => Some(state),
            Change::Deleted(_) | Change::Trouble(_) => None,
            Change::Forbidden(_) => break,
        };
        if let Some(state) = now.filter(|state| *state != PullState::Pending) {
            return Ok(state);
        }
    }
    drop(follow);
    loop {
        let state = ProbePods::new(cluster).probe_pull_state(pod).await?;
        if state != PullState::Pending {
            return Ok(state);
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Runs the pod, waits for its pull, and removes it whatever happened.
pub(super) async fn check(cluster: &Cluster, registry: &LocalRegistry, image: &str) -> Check {
    let pod = match ProbePods::new(cluster).start_probe_pod(image).await {
        Ok(pod) => pod,
        Err(error) => return Check::from_error(CheckId::Pod, &error),
    };
    let state = tokio::time::timeout(WAIT, pulled(cluster, &pod))
        .await
        .unwrap_or(Ok(PullState::Pending));
    let events = ProbePods::new(cluster)
        .probe_events(&pod)
        .await
        .unwrap_or_default();
    let removed = ProbePods::new(cluster).remove_probe_pod(&pod).await;
    let named = format!("pod {}/{}", pod.namespace, pod.name);
    let check = match state {
        Ok(PullState::Pulled) => {
            return match removed {
                Ok(()) => Check::passed(
                    CheckId::Pod,
                    format!("{named} pulled {image} on its node, and was deleted"),
                ),
                Err(error) => Check::passed(
                    CheckId::Pod,
                    format!(
                        "{named} pulled {image} on its node, but deleting it failed: {}",
                        error.message()
                    ),
                )
                .with_hint(format!(
                    "delete it yourself: kubectl delete pod -n {} {}",
                    pod.namespace, pod.name
                )),
            };
        }
        Ok(PullState::Failed { reason, message }) => Check::failed(
            CheckId::Pod,
            ExitCode::Registry,
            format!(
                "{named} could not pull {image}: {reason}: {message}{}",
                kubelet_said(&events)
            ),
        ),
        Ok(PullState::Pending) => Check::failed(
            CheckId::Pod,
            ExitCode::Registry,
            format!(
                "{named} had not pulled {image} after {} s{}",
                WAIT.as_secs(),
                kubelet_said(&events)
            ),
        ),
        Err(error) => return Check::from_error(CheckId::Pod, &error),
    };
    let runtime = &registry.host_from_container_runtime;
    let check = check
        .with_hint(format!(
            "each node's container runtime must reach the registry as {runtime} (kind: /etc/containerd/certs.d/{runtime}/hosts.toml)"
        ))
        .with_hint(
            "for a pod of your own that cannot pull, `kubectl registry why pod/NAME` names the cause and the fix",
        );
    match &registry.help {
        Some(help) => check.with_hint(format!("this cluster's registry guide: {help}")),
        None => check,
    }
}

/// `; the kubelet said: Pulling: ...; Failed: ...`, or nothing when it said nothing.
fn kubelet_said(events: &[String]) -> String {
    if events.is_empty() {
        return String::new();
    }
    format!("; the kubelet said: {}", events.join("; "))
}
