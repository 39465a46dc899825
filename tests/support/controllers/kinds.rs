//! One look of a workload's controller at its pods, per kind, as the real controllers act:
//! a Deployment's ReplicaSets count only active pods (a terminating pod is no replica), a
//! StatefulSet waits for a terminating pod of an ordinal to be gone before it makes that
//! ordinal again, a DaemonSet makes no pod on a node whose pod is still terminating.

use serde_json::{Value, json};

use super::state::{Key, State, ready};
use super::steps::{int, scaled};
use super::terminating::terminating;

/// A controller's look at workload `key`, whose template's revision is `current`; new pods go
/// to `node` (or are unschedulable with its message).
pub(super) struct Look<'a> {
    pub key: &'a Key,
    pub current: &'a str,
    pub node: Result<String, String>,
    /// Admission's refusal of a pod of the template, when it refuses them.
    pub refused: Option<String>,
}

/// (the look changed something, the pod it made)
type Acted = (bool, Option<String>);

impl Look<'_> {
    fn label(&self) -> &'static str {
        if self.key.1 == "deployments" {
            "pod-template-hash"
        } else {
            "controller-revision-hash"
        }
    }

    fn is_new(&self, pod: &Value) -> bool {
        pod["metadata"]["labels"][self.label()] == self.current
    }

    /// A ReplicaSet's pod, or the refusal its controller got, written as the Deployment's
    /// `ReplicaFailure` condition (FailedCreate, the API server's message) and cleared once a
    /// pod is made again.
    fn replica(&self, state: &mut State) -> Acted {
        let mut object = state.workloads[self.key].clone();
        let conditions = object["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut kept: Vec<Value> = conditions
            .iter()
            .filter(|c| c["type"] != "ReplicaFailure")
            .cloned()
            .collect();
        if let Some(message) = &self.refused {
            kept.push(
                json!({"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                             "message": message}),
            );
        }
        if kept != conditions {
            object["status"]["conditions"] = Value::Array(kept);
            state.put_workload(self.key, object);
        }
        match self.refused {
            Some(_) => (false, None),
            None => (true, Some(self.create(state, None))),
        }
    }

    fn create(&self, state: &mut State, name: Option<String>) -> String {
        let node = self.node.as_deref().map_err(String::as_str);
        state.create_pod(self.key, name, self.current, node)
    }

    /// The active pods (those not terminating) as a ReplicaSet counts them.
    pub(super) fn deployment(&self, state: &mut State, object: &Value) -> Acted {
        let pods: Vec<(String, Value)> = state
            .pods_of(self.key)
            .into_iter()
            .filter(|(_, pod)| !terminating(pod))
            .collect();
        let replicas = int(&object["spec"]["replicas"], 1);
        let (new, old): (Vec<_>, Vec<_>) = pods.iter().partition(|(_, pod)| self.is_new(pod));
        let available = pods.iter().filter(|(_, pod)| ready(pod)).count() as i64;
        let strategy = &object["spec"]["strategy"];
        let total = pods.len() as i64;
        if strategy["type"] == "Recreate" {
            if !old.is_empty() {
                for (name, _) in &old {
                    state.delete_pod_gracefully(&self.key.0, name, None);
                }
                return (true, None);
            }
            if (new.len() as i64) < replicas {
                return self.replica(state);
            }
            return (false, None);
        }
        let rolling = &strategy["rollingUpdate"];
        let surge = scaled(&rolling["maxSurge"], replicas, "25%", true);
        let mut unavailable = scaled(&rolling["maxUnavailable"], replicas, "25%", false);
        if surge == 0 && unavailable == 0 {
            unavailable = 1;
        }
        if (new.len() as i64) < replicas && total < replicas + surge {
            return self.replica(state);
        }
        if let Some((name, pod)) = old
            .iter()
            .find(|(_, pod)| !ready(pod))
            .or_else(|| old.first())
        {
            let after = available - i64::from(ready(pod));
            if after >= replicas - unavailable {
                state.delete_pod_gracefully(&self.key.0, name, None);
                return (true, None);
            }
        }
        (false, None)
    }

    /// Ordinal by ordinal: a missing one made, a terminating one waited for; then, all ready,
    /// the highest stale ordinal down to the partition deleted and made again once gone.
    pub(super) fn statefulset(&self, state: &mut State, object: &Value) -> Acted {
        let pods = state.pods_of(self.key);
        let replicas = int(&object["spec"]["replicas"], 1);
        let named = |ordinal: i64| format!("{}-{ordinal}", self.key.2);
        let pod_of = |ordinal: i64| pods.iter().find(|(n, _)| *n == named(ordinal));
        for ordinal in 0..replicas {
            match pod_of(ordinal) {
                None => return (true, Some(self.create(state, Some(named(ordinal))))),
                Some((_, pod)) if terminating(pod) => return (false, None),
                Some(_) => {}
            }
        }
        let strategy = &object["spec"]["updateStrategy"];
        let partition = int(&strategy["rollingUpdate"]["partition"], 0);
        if strategy["type"] == "OnDelete" || !pods.iter().all(|(_, pod)| ready(pod)) {
            return (false, None);
        }
        let stale = (partition..replicas)
            .rev()
            .find(|ordinal| pod_of(*ordinal).is_some_and(|(_, pod)| !self.is_new(pod)));
        let Some(ordinal) = stale else {
            return (false, None);
        };
        let name = named(ordinal);
        if state.delete_pod_gracefully(&self.key.0, &name, None) {
            return (true, Some(self.create(state, Some(name))));
        }
        (true, None)
    }

    /// Node by node: a node without a pod gets one; then, every active pod ready, the next
    /// node's old pod deleted and made again once gone.
    pub(super) fn daemonset(&self, state: &mut State) -> Acted {
        let pods = state.pods_of(self.key);
        let on = |node: &str| {
            pods.iter()
                .filter(|(_, pod)| pod["spec"]["nodeName"] == node)
                .count()
        };
        if let Some(node) = state.node_names().into_iter().find(|node| on(node) == 0) {
            return (
                true,
                Some(state.create_pod(self.key, None, self.current, Ok(&node))),
            );
        }
        let active: Vec<&(String, Value)> =
            pods.iter().filter(|(_, pod)| !terminating(pod)).collect();
        if !active.iter().all(|(_, pod)| ready(pod)) {
            return (false, None);
        }
        let Some((name, pod)) = active.into_iter().find(|(_, pod)| !self.is_new(pod)) else {
            return (false, None);
        };
        let node = pod["spec"]["nodeName"]
            .as_str()
            .unwrap_or("stand-in-node")
            .to_string();
        if state.delete_pod_gracefully(&self.key.0, name, None) {
            return (
                true,
                Some(state.create_pod(self.key, None, self.current, Ok(&node))),
            );
        }
        (true, None)
    }
}
