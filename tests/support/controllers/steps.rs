//! The stand-in controllers' loop, late as real ones are: each workload and each new pod is
//! looked at after a seeded random delay, and each look takes one step. The Deployment
//! controller observes a new generation, then creates new pods and removes old ones within
//! maxSurge/maxUnavailable (Recreate: old ones first), leaves a paused Deployment alone
//! (Progressing reason DeploymentPaused) and marks one stuck past progressDeadlineSeconds
//! (ProgressDeadlineExceeded); the StatefulSet controller replaces pods from the highest
//! ordinal down to the partition, one at a time once all are Ready; the DaemonSet controller
//! node by node (per kind: controllers/kinds.rs, a terminating pod counted as they count it). The kubelet pulls a new pod's images (the test's real containerd), then runs it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::kinds::Look;
use super::state::{Key, State, ready, waiting_for_kubelet};
use super::terminating::terminating;
use super::{Shared, Timing};

impl Timing {
    /// The next delay: uniform in [min, max] from the seeded generator.
    pub(super) fn next(&mut self) -> Duration {
        // splitmix64
        self.seed = self.seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let span = (self.max - self.min).as_millis() as u64 + 1;
        self.min + Duration::from_millis(z % span)
    }
}

/// The loop, until the controllers are dropped.
pub(super) fn run(shared: std::sync::Weak<Shared>) {
    loop {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let now = Instant::now();
        let mut state = shared.state.lock().unwrap();
        if let Some((namespace, name)) = take_due(&mut state.due_pods, now) {
            let images = state.pod_images(&namespace, &name);
            drop(state);
            let pulled: Vec<(String, Result<(), String>)> = images
                .iter()
                .map(|image| (image.clone(), (shared.pull)(image)))
                .collect();
            state = shared.state.lock().unwrap();
            match pulled.into_iter().find(|(_, pulled)| pulled.is_err()) {
                Some((image, Err(said))) => state.pull_failed(&namespace, &name, &image, &said),
                _ => {
                    let runs = shared.runs.lock().unwrap();
                    state.run_pod(&namespace, &name, &**runs);
                }
            }
            let owner = state.pods.get(&(namespace.clone(), name)).map(owner_of);
            if let Some(Some(key)) = owner {
                let delay = shared.timing.lock().unwrap().next();
                state.due_workloads.entry(key).or_insert(now + delay);
            }
        } else if let Some((namespace, name)) = take_due(&mut state.due_probes, now) {
            state.probe_again(&namespace, &name, now);
        } else if let Some(key) = take_due(&mut state.due_workloads, now) {
            let unschedulable = shared.unschedulable.lock().unwrap().clone();
            let admission = shared.admission.lock().unwrap().clone();
            let mut timing = shared.timing.lock().unwrap();
            let refuses = |template: &Value| {
                admission
                    .as_ref()
                    .and_then(|policy| policy.pod_refusal(template))
            };
            if step(
                &mut state,
                &key,
                unschedulable.as_deref(),
                &refuses,
                &mut timing,
                now,
            ) {
                state.due_workloads.insert(key, now + timing.next());
            }
        } else {
            let next = state
                .due_pods
                .values()
                .chain(state.due_workloads.values())
                .chain(state.due_probes.values())
                .min()
                .copied();
            let wait = next.map_or(Duration::from_millis(50), |next| {
                next.saturating_duration_since(now)
                    .min(Duration::from_millis(50))
            });
            drop(shared.changed.wait_timeout(state, wait).unwrap());
            continue;
        }
        drop(state);
        shared.changed.notify_all();
    }
}

/// Removes and returns the first entry that is due by `now`.
fn take_due<K: Ord + Clone>(
    due: &mut std::collections::BTreeMap<K, Instant>,
    now: Instant,
) -> Option<K> {
    let key = due.iter().find(|(_, at)| **at <= now)?.0.clone();
    due.remove(&key);
    Some(key)
}

/// `stand-in/owner` of a pod: its workload's key.
pub(super) fn owner_of(pod: &Value) -> Option<Key> {
    let owner = pod["metadata"]["annotations"]["stand-in/owner"].as_str()?;
    let (resource, name) = owner.split_once('/')?;
    let namespace = pod["metadata"]["namespace"].as_str()?;
    Some((namespace.into(), resource.into(), name.into()))
}

/// The revision a generation's pods carry.
pub(super) fn revision(key: &Key, generation: i64) -> String {
    match key.1.as_str() {
        "statefulsets" => format!("{}-{generation}", key.2),
        _ => format!("{:x}", 0x5f00 + generation),
    }
}

pub(super) fn int(value: &Value, or: i64) -> i64 {
    value.as_i64().unwrap_or(or)
}

/// `25%` of `of`, rounded up or down, or a plain count.
pub(super) fn scaled(value: &Value, of: i64, default: &str, up: bool) -> i64 {
    let text = match value {
        Value::Number(n) => return n.as_i64().unwrap_or(0),
        Value::String(s) => s.clone(),
        _ => default.to_string(),
    };
    let percent: i64 = text.trim_end_matches('%').parse().unwrap_or(25);
    if up {
        (of * percent + 99) / 100
    } else {
        of * percent / 100
    }
}

/// One look at workload `key`; true to look again later.
fn step(
    state: &mut State,
    key: &Key,
    unschedulable: Option<&str>,
    refuses: &dyn Fn(&Value) -> Option<String>,
    timing: &mut Timing,
    now: Instant,
) -> bool {
    let Some(object) = state.workloads.get(key).cloned() else {
        return false;
    };
    let generation = int(&object["metadata"]["generation"], 1);
    let observed = int(&object["status"]["observedGeneration"], 0);
    let node = |unschedulable: Option<&str>| match unschedulable {
        Some(message) => Err(message.to_string()),
        None => Ok("stand-in-node".to_string()),
    };
    let mut object = object;
    if key.1 == "deployments" && object["spec"]["paused"] == true {
        if observed < generation {
            object["status"]["observedGeneration"] = json!(generation);
            object["status"]["conditions"] = json!([{"type": "Progressing", "status": "Unknown",
                "reason": "DeploymentPaused", "message": "Deployment is paused"}]);
            state.put_workload(key, object);
        }
        return false;
    }
    if observed < generation {
        object["status"]["observedGeneration"] = json!(generation);
        if key.1 == "deployments" {
            let hash = revision(key, generation);
            let progressing = json!({"type": "Progressing", "status": "True",
                "reason": "ReplicaSetUpdated", "message": format!("ReplicaSet \"{}-{hash}\" is progressing.", key.2)});
            object["status"]["conditions"] = with_failure(&object, progressing);
            state.progress.insert(key.clone(), now);
        }
        if key.1 == "statefulsets" {
            object["status"]["updateRevision"] = json!(revision(key, generation));
        }
        // The same write counts the pods against the new revision (none updated yet).
        state.workloads.insert(key.clone(), object);
        write_status(state, key, &revision(key, generation), true);
        return true;
    }
    let current = revision(key, generation);
    let look = Look {
        key,
        current: &current,
        node: node(unschedulable),
        refused: refuses(&object["spec"]["template"]["spec"]),
    };
    let (acted, created) = match key.1.as_str() {
        "deployments" => look.deployment(state, &object),
        "statefulsets" => look.statefulset(state, &object),
        _ => look.daemonset(state),
    };
    if let Some(pod) = created {
        let pod_key = (key.0.clone(), pod);
        if state.pods.get(&pod_key).is_some_and(waiting_for_kubelet) {
            state.due_pods.insert(pod_key, now + timing.next());
        }
    }
    let (complete, moved) = write_status(state, key, &current, false);
    if moved {
        state.progress.insert(key.clone(), now);
    }
    if key.1 == "deployments" && !complete {
        deadline(state, key, now);
    }
    acted || !complete
}

/// The status the pods make now; (rolled out, counts moved).
fn write_status(state: &mut State, key: &Key, current: &str, observed: bool) -> (bool, bool) {
    // A ReplicaSet and a DaemonSet count no terminating pod; a StatefulSet counts each created
    // one in its replicas, and no terminating one as current or updated.
    let all = state.pods_of(key);
    let held = all.iter().filter(|(_, pod)| terminating(pod)).count() as i64;
    let pods: Vec<(String, Value)> = all
        .into_iter()
        .filter(|(_, pod)| !terminating(pod))
        .collect();
    let nodes = state.node_names().len() as i64;
    let mut object = state.workloads[key].clone();
    let before = object["status"].clone();
    let label = if key.1 == "deployments" {
        "pod-template-hash"
    } else {
        "controller-revision-hash"
    };
    let count = pods.len() as i64;
    let new = pods
        .iter()
        .filter(|(_, pod)| pod["metadata"]["labels"][label] == current)
        .count() as i64;
    let ready_count = pods.iter().filter(|(_, pod)| ready(pod)).count() as i64;
    let status = &mut object["status"];
    let complete = match key.1.as_str() {
        "deployments" => {
            let replicas = int(&object["spec"]["replicas"], 1);
            let status = &mut object["status"];
            status["replicas"] = json!(count);
            status["updatedReplicas"] = json!(new);
            status["readyReplicas"] = json!(ready_count);
            status["availableReplicas"] = json!(ready_count);
            status["unavailableReplicas"] = json!((replicas - ready_count).max(0));
            let done = new == replicas && count == replicas && ready_count == replicas;
            if done {
                status["conditions"] = json!([{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                    {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                     "message": format!("ReplicaSet \"{}-{current}\" has successfully progressed.", key.2)}]);
            }
            done
        }
        "statefulsets" => {
            let replicas = int(&object["spec"]["replicas"], 1);
            let status = &mut object["status"];
            status["replicas"] = json!(count + held);
            status["readyReplicas"] = json!(ready_count);
            status["availableReplicas"] = json!(ready_count);
            status["updatedReplicas"] = json!(new);
            status["updateRevision"] = json!(current);
            let old_revision = status["currentRevision"].clone();
            if new == replicas && ready_count == replicas {
                status["currentRevision"] = json!(current);
                status["currentReplicas"] = json!(new);
                true
            } else {
                status["currentRevision"] = old_revision;
                status["currentReplicas"] = json!(count - new);
                let partition = int(
                    &object["spec"]["updateStrategy"]["rollingUpdate"]["partition"],
                    0,
                );
                ready_count == replicas && new >= replicas - partition
            }
        }
        _ => {
            let desired = nodes;
            status["desiredNumberScheduled"] = json!(desired);
            status["currentNumberScheduled"] = json!(count.min(desired));
            status["numberMisscheduled"] = json!(0);
            status["numberReady"] = json!(ready_count);
            status["numberAvailable"] = json!(ready_count);
            status["numberUnavailable"] = json!((desired - ready_count).max(0));
            status["updatedNumberScheduled"] = json!(new);
            new == desired && ready_count == desired && count == desired
        }
    };
    let moved = object["status"] != before;
    if moved || observed {
        state.put_workload(key, object);
    }
    (complete, moved)
}

/// Progressing=False, ProgressDeadlineExceeded, once no progress for progressDeadlineSeconds.
fn deadline(state: &mut State, key: &Key, now: Instant) {
    let object = &state.workloads[key];
    let seconds = int(&object["spec"]["progressDeadlineSeconds"], 600);
    let since = state.progress.get(key).copied().unwrap_or(now);
    if now.duration_since(since) < Duration::from_secs(seconds as u64) {
        return;
    }
    let mut object = object.clone();
    let conditions = object["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if conditions
        .iter()
        .any(|c| c["reason"] == "ProgressDeadlineExceeded")
    {
        return;
    }
    let generation = int(&object["metadata"]["generation"], 1);
    let exceeded = json!({"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
        "message": format!("ReplicaSet \"{}-{}\" has timed out progressing.", key.2, revision(key, generation))});
    object["status"]["conditions"] = with_failure(&object, exceeded);
    state.put_workload(key, object);
}

/// `condition`, and the Deployment's `ReplicaFailure` condition when it has one: the controller
/// sets each condition type on its own.
fn with_failure(object: &Value, condition: Value) -> Value {
    let failure = object["status"]["conditions"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["type"] == "ReplicaFailure"))
        .cloned();
    Value::Array(std::iter::once(condition).chain(failure).collect())
}
