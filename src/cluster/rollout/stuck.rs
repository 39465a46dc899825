//! What keeps a rollout from finishing, pod by pod, when its wait ends without it: each new pod
//! that is not ready (the scheduler's message, a container waiting for something other than its
//! image, the latest readiness or startup probe failure the kubelet recorded, or nothing
//! recorded), each old pod a finalizer keeps, and for a Deployment the new pods its controller
//! could not create (its `ReplicaFailure` condition). Only what the pods' status and events and
//! the workload's conditions show.

use super::api::{RolloutApi, RolloutPod};
use super::wait::{Target, is_new};
use super::workload::WorkloadKind;
use crate::cluster::client::{Cluster, ContainerState, Lookup, PULL_FAILURES, PodEvent};
use crate::plumbing::error::Result;

/// New pods whose events are read at most (each one request).
const PODS_READ: usize = 5;

/// Waiting reasons that say nothing but "not yet": not a cause.
const UNDER_WAY: &[&str] = &["ContainerCreating", "PodInitializing", "CrashLoopBackOff"];

/// One pod that keeps the rollout from finishing, and what keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    /// `None` for pods that could not be created.
    pub pod: Option<String>,
    /// A pod of the new template (else an old one).
    pub new: bool,
    pub holds: Holds,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holds {
    /// No node takes it: the scheduler's word (`Unschedulable: 0/1 nodes are available: ...`).
    Unscheduled(String),
    /// A container waits for something other than its image (`CreateContainerConfigError`).
    Waiting {
        container: String,
        reason: String,
        message: String,
    },
    /// A container runs, and its readiness or startup probe fails: the latest `Unhealthy` event,
    /// and how many failures the kubelet recorded.
    Probe {
        container: String,
        message: String,
        count: i32,
    },
    /// A container runs, not ready, and the kubelet recorded no probe failure.
    NotReady { container: String },
    /// Deleted, kept by these finalizers.
    Finalizers(Vec<String>),
    /// No new pod could be created: the API server's words to the controller (a Deployment's
    /// `ReplicaFailure` condition: admission refused the pod, a quota is used up).
    NotCreated(String),
}

/// Each pod that keeps `target`'s rollout from finishing, of `pods` as the wait last saw them;
/// the events read of the first few new ones not ready.
pub async fn stuck(
    cluster: &Cluster,
    target: &Target<'_>,
    pods: &[RolloutPod],
) -> Result<Vec<Stuck>> {
    let namespace = target.namespace;
    let new = |pod: &RolloutPod| is_new(pod, target);
    let mut found = Vec::new();
    if target.kind == WorkloadKind::Deployment {
        let api = RolloutApi::new(cluster, namespace);
        if let Lookup::Found(workload) = api.workload(target.kind, target.name).await?
            && let Some(message) = workload.replica_failure()
        {
            found.push(Stuck {
                pod: None,
                new: true,
                holds: Holds::NotCreated(message),
            });
        }
    }
    for pod in pods
        .iter()
        .filter(|pod| new(pod) && !pod.ready)
        .take(PODS_READ)
    {
        let events = cluster
            .pod_event_records(namespace, &pod.facts.name)
            .await?;
        if let Some(holds) = holds(pod, &events) {
            found.push(Stuck {
                pod: Some(pod.facts.name.clone()),
                new: true,
                holds,
            });
        }
    }
    found.extend(
        pods.iter()
            .filter(|pod| !new(pod) && !pod.facts.held_by.is_empty())
            .map(|pod| Stuck {
                pod: Some(pod.facts.name.clone()),
                new: false,
                holds: Holds::Finalizers(pod.facts.held_by.clone()),
            }),
    );
    Ok(found)
}

/// What keeps a new pod from ready, from its status and its events (oldest first); `None` when
/// they show nothing (its image is still being pulled, its containers still created).
pub fn holds(pod: &RolloutPod, events: &[PodEvent]) -> Option<Holds> {
    if let Some(message) = &pod.facts.unscheduled {
        return Some(Holds::Unscheduled(message.clone()));
    }
    pod.facts
        .containers
        .iter()
        .filter(|c| !c.ready)
        .find_map(|container| {
            let name = container.name.clone();
            match &container.state {
                ContainerState::Waiting { reason, message }
                    if !PULL_FAILURES.contains(&reason.as_str())
                        && !UNDER_WAY.contains(&reason.as_str()) =>
                {
                    Some(Holds::Waiting {
                        container: name,
                        reason: reason.clone(),
                        message: message.clone(),
                    })
                }
                ContainerState::Running => Some(
                    probe_failure(&name, events).unwrap_or(Holds::NotReady { container: name }),
                ),
                _ => None,
            }
        })
}

/// What the kubelet's event correlator puts before the message of an event that stands for
/// several similar ones (same reason, other messages).
const COMBINED: &str = "(combined from similar events): ";

/// The latest readiness or startup probe failure of `container`, and how many the kubelet
/// recorded (each `Unhealthy` event's count summed: one event per distinct message, combined
/// ones too); liveness failures restart a container, they do not keep it from ready.
pub fn probe_failure(container: &str, events: &[PodEvent]) -> Option<Holds> {
    let failures: Vec<(&str, i32)> = events
        .iter()
        .filter(|event| event.reason == "Unhealthy")
        .filter(|event| event.container.as_deref().is_none_or(|c| c == container))
        .map(|event| {
            let message = event.message.as_str();
            (
                message.strip_prefix(COMBINED).unwrap_or(message),
                event.count,
            )
        })
        .filter(|(message, _)| {
            message.starts_with("Readiness probe") || message.starts_with("Startup probe")
        })
        .collect();
    let (latest, _) = failures.last()?;
    Some(Holds::Probe {
        container: container.to_string(),
        message: (*latest).to_string(),
        count: failures.iter().map(|(_, count)| count).sum(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::client::{ContainerFacts, PodFacts};

    fn pod(state: ContainerState, ready: bool) -> RolloutPod {
        RolloutPod {
            facts: PodFacts {
                name: "web-1".into(),
                namespace: "default".into(),
                node: Some("node-1".into()),
                containers: vec![ContainerFacts {
                    name: "web".into(),
                    image: "r/app:dev".into(),
                    pull_policy: None,
                    state,
                    ready,
                }],
                created: None,
                unscheduled: None,
                deleted: false,
                held_by: Vec::new(),
            },
            ready,
            crashing: Vec::new(),
        }
    }

    fn event(reason: &str, message: &str, container: Option<&str>, last: &str) -> PodEvent {
        PodEvent {
            reason: reason.into(),
            message: message.into(),
            container: container.map(str::to_string),
            count: 3,
            last: Some(last.into()),
        }
    }

    #[test]
    fn the_latest_readiness_or_startup_failure_of_that_container_is_the_cause() {
        let events = [
            event(
                "Unhealthy",
                "Startup probe failed: connection refused",
                Some("web"),
                "1",
            ),
            event(
                "Unhealthy",
                "Readiness probe failed: HTTP probe failed with statuscode: 503",
                Some("web"),
                "2",
            ),
            event(
                "Unhealthy",
                "Liveness probe failed: timeout",
                Some("web"),
                "3",
            ),
            event(
                "Unhealthy",
                "Readiness probe failed: other",
                Some("side"),
                "4",
            ),
        ];
        assert_eq!(
            holds(&pod(ContainerState::Running, false), &events),
            Some(Holds::Probe {
                container: "web".into(),
                message: "Readiness probe failed: HTTP probe failed with statuscode: 503".into(),
                count: 6,
            })
        );
        assert_eq!(
            holds(&pod(ContainerState::Running, false), &events[2..]),
            Some(Holds::NotReady {
                container: "web".into()
            })
        );
    }

    #[test]
    fn the_kubelets_combined_events_count_and_say_their_own_message() {
        // As `kubectl describe` shows a calico-node that never gets ready: one event per
        // message, the correlator's combined one last.
        let mut distinct = event(
            "Unhealthy",
            "Readiness probe failed: Error reaching apiserver: <nil> with http status code: 500",
            Some("web"),
            "1",
        );
        distinct.count = 63;
        let mut combined = event(
            "Unhealthy",
            "(combined from similar events): Readiness probe failed: Failed to read status file /status/status.json: unexpected end of JSON input",
            Some("web"),
            "2",
        );
        combined.count = 48;
        assert_eq!(
            probe_failure("web", &[distinct, combined]),
            Some(Holds::Probe {
                container: "web".into(),
                message: "Readiness probe failed: Failed to read status file /status/status.json: unexpected end of JSON input".into(),
                count: 111,
            })
        );
    }

    #[test]
    fn waiting_on_the_image_or_still_being_created_claims_nothing() {
        let waiting = |reason: &str| ContainerState::Waiting {
            reason: reason.into(),
            message: "m".into(),
        };
        for reason in ["ContainerCreating", "ImagePullBackOff", "ErrImagePull"] {
            assert_eq!(holds(&pod(waiting(reason), false), &[]), None, "{reason}");
        }
        assert!(matches!(
            holds(&pod(waiting("CreateContainerConfigError"), false), &[]),
            Some(Holds::Waiting { .. })
        ));
        assert_eq!(holds(&pod(ContainerState::Unknown, false), &[]), None);
        assert_eq!(holds(&pod(ContainerState::Running, true), &[]), None);
    }
}
