//! What keeps a rollout's pods from ready, said one line per pod in the kubelet's and the
//! scheduler's words shortened (a probe failure, a missing Secret key, no node, a finalizer, a
//! pod the API server refused to create), and the same facts as `-o json`'s `notReady`. Pure.

use serde::Serialize;

use crate::cluster::client::PodEvent;
use crate::cluster::rollout::{Holds, Stuck, probe_failure};
use crate::plumbing::output::{paragraph, shown_bare};

/// `-o json`'s `rollout[].notReady[]`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NotReady {
    /// `null` for pods that could not be created.
    pub pod: Option<String>,
    /// A pod of the new template (else an old one a finalizer keeps).
    pub new: bool,
    pub container: Option<String>,
    /// `Unhealthy` (a probe), the kubelet's waiting reason (`CreateContainerConfigError`),
    /// `Unschedulable`, `NotReady` (nothing recorded why), `Terminating` (finalizers),
    /// `FailedCreate` (the pod could not be created).
    pub reason: String,
    /// The kubelet's, the scheduler's or (for `FailedCreate`) the API server's message, shortened.
    pub message: String,
    /// How many readiness or startup probe failures of the container the kubelet recorded
    /// (its `Unhealthy` events' `count` or `series.count`, summed over their messages).
    pub count: Option<i32>,
}

impl From<&Stuck> for NotReady {
    fn from(stuck: &Stuck) -> Self {
        let (container, reason, message, count) = match &stuck.holds {
            Holds::Unscheduled(message) => {
                (None, "Unschedulable".into(), scheduler_short(message), None)
            }
            Holds::Waiting {
                container,
                reason,
                message,
            } => (Some(container), reason.clone(), short(message), None),
            Holds::Probe {
                container,
                message,
                count,
            } => (
                Some(container),
                "Unhealthy".into(),
                short(message),
                Some(*count),
            ),
            Holds::NotReady { container } => (
                Some(container),
                "NotReady".into(),
                "runs but is not ready; the kubelet recorded no probe failure".into(),
                None,
            ),
            Holds::Finalizers(finalizers) => {
                (None, "Terminating".into(), kept_by(finalizers), None)
            }
            Holds::NotCreated(message) => (None, "FailedCreate".into(), paragraph(message), None),
        };
        Self {
            pod: stuck.pod.clone(),
            new: stuck.new,
            container: container.cloned(),
            reason,
            message,
            count,
        }
    }
}

/// `deleted, kept by finalizer example.com/hold`: a deleted pod that is still there.
pub(crate) fn kept_by(finalizers: &[String]) -> String {
    let noun = match finalizers.len() {
        1 => "finalizer",
        _ => "finalizers",
    };
    format!("deleted, kept by {noun} {}", short(&finalizers.join(", ")))
}

/// For `why`: a running container that is not ready, in the kubelet's words when it recorded
/// a readiness or startup probe failure, else saying that it did not.
pub(crate) fn probe_said(container: &str, events: &[PodEvent]) -> String {
    match probe_failure(container, events) {
        Some(Holds::Probe { message, count, .. }) if count > 1 => {
            format!("{} ({count} times)", short(&message))
        }
        Some(Holds::Probe { message, .. }) => short(&message),
        _ => "the kubelet recorded no probe failure".to_string(),
    }
}

/// The first line of an outside message, escaped and cut.
fn short(message: &str) -> String {
    shown_bare(message.lines().next().unwrap_or_default().trim())
}

/// The scheduler's message without its preemption tail (`... preemption: 0/1 nodes are
/// available: 1 Preemption is not helpful for scheduling.`), which says again that no node fits.
fn scheduler_short(message: &str) -> String {
    let cut = message
        .find(" preemption: ")
        .map_or(message, |at| &message[..at]);
    short(cut)
}

/// One line for the pod: `the new pod web-1 is not ready: container web: Readiness probe
/// failed: HTTP probe failed with statuscode: 503 (12 times)`.
pub(crate) fn line(stuck: &NotReady) -> String {
    let age = if stuck.new { "new" } else { "old" };
    let Some(pod) = &stuck.pod else {
        return format!("no new pod could be created: {}", stuck.message);
    };
    match (stuck.reason.as_str(), &stuck.container) {
        ("Unschedulable", _) => format!("the new pod {pod} was never scheduled: {}", stuck.message),
        ("Terminating", _) => format!("the old pod {pod} is not gone: {}", stuck.message),
        ("Unhealthy", Some(container)) => {
            let times = match stuck.count {
                Some(count) if count > 1 => format!(" ({count} times)"),
                _ => String::new(),
            };
            format!(
                "the {age} pod {pod} is not ready: container {container}: {}{times}",
                stuck.message
            )
        }
        ("NotReady", Some(container)) => {
            format!(
                "the {age} pod {pod} is not ready: container {container} {}",
                stuck.message
            )
        }
        (reason, Some(container)) => format!(
            "the {age} pod {pod} is not ready: container {container} waits: {reason}: {}",
            stuck.message
        ),
        (reason, None) => format!(
            "the {age} pod {pod} is not ready: {reason}: {}",
            stuck.message
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(pod: &str, new: bool, holds: Holds) -> String {
        line(&NotReady::from(&Stuck {
            pod: Some(pod.into()),
            new,
            holds,
        }))
    }

    #[test]
    fn the_schedulers_preemption_tail_is_left_out() {
        let message = "Unschedulable: 0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.";
        assert_eq!(
            said("web-1", true, Holds::Unscheduled(message.into())),
            "the new pod web-1 was never scheduled: Unschedulable: 0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."
        );
    }

    #[test]
    fn each_cause_is_one_line_in_the_kubelets_words() {
        let probe = Holds::Probe {
            container: "web".into(),
            message: "Readiness probe failed: HTTP probe failed with statuscode: 503".into(),
            count: 12,
        };
        assert_eq!(
            said("web-1", true, probe),
            "the new pod web-1 is not ready: container web: Readiness probe failed: HTTP probe failed with statuscode: 503 (12 times)"
        );
        let waiting = Holds::Waiting {
            container: "web".into(),
            reason: "CreateContainerConfigError".into(),
            message: "couldn't find key password in Secret default/db".into(),
        };
        assert_eq!(
            said("web-2", true, waiting),
            "the new pod web-2 is not ready: container web waits: CreateContainerConfigError: couldn't find key password in Secret default/db"
        );
        let held = Holds::Finalizers(vec!["example.com/drain".into()]);
        assert_eq!(
            said("web-0", false, held),
            "the old pod web-0 is not gone: deleted, kept by finalizer example.com/drain"
        );
        let refused = Holds::NotCreated(
            "pods \"web-5f02-\" is forbidden: exceeded quota: compute,\n requested: limits.memory=2Gi".into(),
        );
        assert_eq!(
            line(&NotReady::from(&Stuck {
                pod: None,
                new: true,
                holds: refused
            })),
            "no new pod could be created: pods \"web-5f02-\" is forbidden: exceeded quota: compute, requested: limits.memory=2Gi"
        );
        let quiet = Holds::NotReady {
            container: "web".into(),
        };
        assert_eq!(
            said("web-3", true, quiet),
            "the new pod web-3 is not ready: container web runs but is not ready; the kubelet recorded no probe failure"
        );
    }
}
