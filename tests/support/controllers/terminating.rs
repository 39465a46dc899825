//! Pods deleted as kube-apiserver and the kubelet delete them: a graceful delete sets
//! `deletionTimestamp` (now + the grace period) and `deletionGracePeriodSeconds` (a MODIFIED
//! write), the kubelet stops the containers (terminated, not ready, phase Succeeded) and
//! confirms with a grace period of 0; the pod is gone then (DELETED) unless finalizers hold
//! it: kept, terminating, until a write empties `metadata.finalizers`. Also the kubelet's
//! probes of a running pod that is never ready, each folded into its Unhealthy event.

use serde_json::{Value, json};

use super::state::State;

/// A pod being deleted (terminating).
pub(super) fn terminating(pod: &Value) -> bool {
    !pod["metadata"]["deletionTimestamp"].is_null()
}

/// The finalizers a pod carries.
pub(super) fn finalizers(pod: &Value) -> Vec<String> {
    pod["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_string))
        .collect()
}

/// `now` plus `seconds`, as the API server writes a time.
fn in_seconds(seconds: i64) -> String {
    let later = k8s_openapi::jiff::Timestamp::now()
        + k8s_openapi::jiff::SignedDuration::from_secs(seconds.max(0));
    later.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl State {
    /// The kubelet probes a running pod again and it fails as before: its recorder folds the
    /// same event into the one it wrote (`count` + 1, `lastTimestamp` now), as client-go's
    /// event correlator does for an identical event; the next probe a period later.
    pub(super) fn probe_again(&mut self, namespace: &str, name: &str, now: std::time::Instant) {
        let key = (namespace.to_string(), name.to_string());
        if self.pods.get(&key).is_none_or(terminating) {
            return;
        }
        let time = super::managed::now();
        for event in self.events.iter_mut().filter(|e| {
            e["involvedObject"]["name"] == name
                && e["metadata"]["namespace"] == namespace
                && e["reason"] == "Unhealthy"
        }) {
            let count = event["count"].as_i64().unwrap_or(1) + 1;
            event["count"] = json!(count);
            event["lastTimestamp"] = json!(time);
        }
        let period = self
            .probe_period
            .unwrap_or(std::time::Duration::from_secs(10));
        self.due_probes.insert(key, now + period);
    }

    /// A graceful delete of `namespace/name` with `grace` seconds (the pod's
    /// `terminationGracePeriodSeconds` when `None`), the kubelet's part at once; true when the
    /// pod is gone, false when finalizers keep it (or it was never there).
    pub(super) fn delete_pod_gracefully(
        &mut self,
        namespace: &str,
        name: &str,
        grace: Option<i64>,
    ) -> bool {
        let key = (namespace.to_string(), name.to_string());
        let Some(mut pod) = self.pods.get(&key).cloned() else {
            return false;
        };
        if !terminating(&pod) {
            let grace = grace
                .or_else(|| pod["spec"]["terminationGracePeriodSeconds"].as_i64())
                .unwrap_or(30);
            pod["metadata"]["deletionTimestamp"] = json!(in_seconds(grace));
            pod["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
            self.put_pod(namespace, pod.clone());
            // The kubelet stops its containers and says so.
            pod = self.pods[&key].clone();
            stopped(&mut pod);
            self.put_pod(namespace, pod.clone());
            pod = self.pods[&key].clone();
        }
        // The kubelet's confirmation: a delete with a grace period of 0.
        if finalizers(&pod).is_empty() {
            self.delete_pod(namespace, name);
            return true;
        }
        if pod["metadata"]["deletionGracePeriodSeconds"] != 0 {
            pod["metadata"]["deletionTimestamp"] = json!(in_seconds(0));
            pod["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            self.put_pod(namespace, pod);
        }
        false
    }
}

/// The kubelet's status of a pod whose containers it stopped on its deletion: each container
/// terminated (exit 0 on SIGTERM), not ready, the pod in phase Succeeded.
fn stopped(pod: &mut Value) {
    let statuses: Vec<Value> = pod["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut status| {
            status["ready"] = json!(false);
            status["started"] = json!(false);
            status["state"] = json!({"terminated": {"reason": "Completed", "exitCode": 0,
                "startedAt": "2025-01-01T00:00:01Z", "finishedAt": in_seconds(0)}});
            status
        })
        .collect();
    pod["status"]["phase"] = json!("Succeeded");
    pod["status"]["containerStatuses"] = json!(statuses);
    pod["status"]["conditions"] = json!([
        {"type": "PodScheduled", "status": "True"},
        {"type": "Ready", "status": "False", "reason": "PodCompleted"},
        {"type": "ContainersReady", "status": "False", "reason": "PodCompleted"},
    ]);
}
