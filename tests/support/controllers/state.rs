//! The stand-in controllers' store: workloads and pods by namespace, every write given the next
//! resourceVersion and kept in a history that watches replay (until compacted), pods made from
//! a workload's template, what the kubelet writes of them (running, crash-looping, a failed
//! pull) and their events.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{Value, json};

use super::Runs;

/// (namespace, resource, name) of a workload.
pub(super) type Key = (String, String, String);

/// One write, as a watch streams it.
pub(super) struct Written {
    pub version: u64,
    /// `pods`, `deployments`...
    pub resource: String,
    pub namespace: String,
    /// `ADDED`, `MODIFIED`, `DELETED`
    pub kind: &'static str,
    pub object: Value,
}

#[derive(Default)]
pub(super) struct State {
    pub version: u64,
    pub workloads: BTreeMap<Key, Value>,
    /// (namespace, name) -> pod
    pub pods: BTreeMap<(String, String), Value>,
    pub events: Vec<Value>,
    /// (namespace, pod, container) -> the previous run's log
    pub logs: BTreeMap<(String, String, String), String>,
    /// Patches stored (dry runs aside), as sent.
    pub patches: Vec<Value>,
    pub history: Vec<Written>,
    /// Versions up to this one are gone: a watch from one of them is answered 410.
    pub compacted: u64,
    /// Bumped to end every open watch.
    pub cut: u64,
    /// When the controller next looks at a workload, and the kubelet at a pod.
    pub due_workloads: BTreeMap<Key, Instant>,
    pub due_pods: BTreeMap<(String, String), Instant>,
    /// When the kubelet next probes a running pod whose readiness probe fails.
    pub due_probes: BTreeMap<(String, String), Instant>,
    /// The readiness probe's period (periodSeconds: 10 unless the test says otherwise).
    pub probe_period: Option<std::time::Duration>,
    /// A Deployment's last progress (for progressDeadlineSeconds).
    pub progress: BTreeMap<Key, Instant>,
    pub serial: u64,
    /// The nodes a DaemonSet runs on (one, `stand-in-node`, unless the test says more).
    pub nodes: Vec<String>,
}

impl State {
    pub(super) fn node_names(&self) -> Vec<String> {
        if self.nodes.is_empty() {
            vec!["stand-in-node".to_string()]
        } else {
            self.nodes.clone()
        }
    }

    fn bump(&mut self) -> u64 {
        self.version += 1;
        self.version
    }

    /// Stores `object` under the next resourceVersion and records the write.
    pub(super) fn put_workload(&mut self, key: &Key, mut object: Value) {
        let version = self.bump();
        object["metadata"]["resourceVersion"] = json!(version.to_string());
        let kind = if self.workloads.contains_key(key) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        self.history.push(Written {
            version,
            resource: key.1.clone(),
            namespace: key.0.clone(),
            kind,
            object: object.clone(),
        });
        self.workloads.insert(key.clone(), object);
    }

    pub(super) fn put_pod(&mut self, namespace: &str, mut pod: Value) {
        let version = self.bump();
        pod["metadata"]["resourceVersion"] = json!(version.to_string());
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let key = (namespace.to_string(), name);
        let kind = if self.pods.contains_key(&key) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        self.history.push(Written {
            version,
            resource: "pods".into(),
            namespace: namespace.into(),
            kind,
            object: pod.clone(),
        });
        self.pods.insert(key, pod);
    }

    pub(super) fn delete_pod(&mut self, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        let Some(mut pod) = self.pods.remove(&key) else {
            return;
        };
        self.due_pods.remove(&key);
        self.due_probes.remove(&key);
        let version = self.bump();
        pod["metadata"]["resourceVersion"] = json!(version.to_string());
        self.history.push(Written {
            version,
            resource: "pods".into(),
            namespace: namespace.into(),
            kind: "DELETED",
            object: pod,
        });
    }

    /// The pods of workload `key`, by name.
    pub(super) fn pods_of(&self, key: &Key) -> Vec<(String, Value)> {
        let owner = format!("{}/{}", key.1, key.2);
        self.pods
            .iter()
            .filter(|((namespace, _), pod)| {
                *namespace == key.0
                    && pod["metadata"]["annotations"]["stand-in/owner"] == owner.as_str()
            })
            .map(|((_, name), pod)| (name.clone(), pod.clone()))
            .collect()
    }

    /// A Pending pod of workload `key`'s template as it stands, labelled with `revision`, on
    /// `node` (or with the scheduler's Unschedulable condition).
    pub(super) fn create_pod(
        &mut self,
        key: &Key,
        name: Option<String>,
        revision: &str,
        node: Result<&str, &str>,
    ) -> String {
        self.serial += 1;
        let object = &self.workloads[key];
        let (namespace, resource, workload) = key;
        let name =
            name.unwrap_or_else(|| format!("{workload}-{revision}-{:05x}", self.serial * 7919));
        let mut labels = object["spec"]["template"]["metadata"]["labels"].clone();
        let label = if resource == "deployments" {
            "pod-template-hash"
        } else {
            "controller-revision-hash"
        };
        labels[label] = json!(revision);
        let mut pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}-{}", self.serial),
                         "labels": labels, "annotations": {"stand-in/owner": format!("{resource}/{workload}")},
                         "creationTimestamp": format!("2025-01-01T{:02}:{:02}:{:02}Z", (self.serial / 3600) % 24, (self.serial / 60) % 60, self.serial % 60)},
            "spec": object["spec"]["template"]["spec"].clone(),
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]},
        });
        match node {
            Err(message) => {
                pod["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False",
                    "reason": "Unschedulable", "message": message}]);
                self.scheduler_event(namespace, &name, message);
            }
            Ok(node) => {
                pod["spec"]["nodeName"] = json!(node);
                self.event(
                    namespace,
                    &name,
                    "Normal",
                    "Scheduled",
                    &format!("Successfully assigned {namespace}/{name} to {node}"),
                );
            }
        }
        let namespace = namespace.clone();
        self.put_pod(&namespace, pod);
        name
    }

    fn pod(&self, namespace: &str, name: &str) -> Option<Value> {
        let key = (namespace.to_string(), name.to_string());
        self.pods.get(&key).cloned()
    }

    pub(super) fn pod_images(&self, namespace: &str, pod: &str) -> Vec<String> {
        let spec = &self.pods[&(namespace.to_string(), pod.to_string())]["spec"];
        let mut images: Vec<String> = ["initContainers", "containers"]
            .iter()
            .flat_map(|key| spec[key].as_array().cloned().unwrap_or_default())
            .map(|c| c["image"].as_str().unwrap_or_default().to_string())
            .collect();
        images.dedup();
        images
    }

    /// The kubelet after its pulls: each container running (Ready) or crash-looping.
    pub(super) fn run_pod(&mut self, namespace: &str, name: &str, runs: &dyn Fn(&str) -> Runs) {
        let Some(mut pod) = self.pod(namespace, name) else {
            return;
        };
        let mut ready = true;
        let mut statuses = Vec::new();
        for c in pod["spec"]["containers"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let (container, image) = (
                c["name"].as_str().unwrap_or_default(),
                c["image"].as_str().unwrap_or_default(),
            );
            statuses.push(match runs(image) {
                Runs::Ready => json!({"name": container, "image": image, "imageID": "", "ready": true, "started": true,
                                      "restartCount": 0, "state": {"running": {"startedAt": "2025-01-01T00:00:01Z"}}}),
                Runs::NeverReady => {
                    ready = false;
                    let probe = "Readiness probe failed: HTTP probe failed with statuscode: 503";
                    self.kubelet_event(namespace, name, container, "Unhealthy", probe);
                    let period = self.probe_period.unwrap_or(std::time::Duration::from_secs(10));
                    let key = (namespace.to_string(), name.to_string());
                    self.due_probes.insert(key, Instant::now() + period);
                    json!({"name": container, "image": image, "imageID": "", "ready": false, "started": true,
                           "restartCount": 0, "state": {"running": {"startedAt": "2025-01-01T00:00:01Z"}}})
                }
                Runs::ConfigError(message) => {
                    ready = false;
                    self.kubelet_event(namespace, name, container, "Failed", &format!("Error: {message}"));
                    json!({"name": container, "image": image, "imageID": "", "ready": false, "started": false, "restartCount": 0,
                           "state": {"waiting": {"reason": "CreateContainerConfigError", "message": message}}})
                }
                Runs::Crashes { reason, exit_code, log } => {
                    ready = false;
                    self.logs.insert((namespace.into(), name.into(), container.into()), log);
                    json!({"name": container, "image": image, "imageID": "", "ready": false, "started": false, "restartCount": 2,
                           "state": {"waiting": {"reason": "CrashLoopBackOff",
                               "message": format!("back-off 20s restarting failed container={container} pod={name}")}},
                           "lastState": {"terminated": {"reason": reason, "exitCode": exit_code,
                               "startedAt": "2025-01-01T00:00:01Z", "finishedAt": "2025-01-01T00:00:02Z"}}})
                }
            });
        }
        let init: Vec<Value> = pod["spec"]["initContainers"].as_array().cloned().unwrap_or_default().iter().map(|c| {
            json!({"name": c["name"], "image": c["image"], "imageID": "", "ready": true, "restartCount": 0,
                   "state": {"terminated": {"reason": "Completed", "exitCode": 0}}})
        }).collect();
        let condition = if ready { "True" } else { "False" };
        pod["status"] = json!({
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": condition},
                           {"type": "ContainersReady", "status": condition}],
            "containerStatuses": statuses,
            "initContainerStatuses": init,
        });
        self.put_pod(namespace, pod);
    }

    /// The kubelet's pull failed: ErrImagePull with the runtime's last words, and its events.
    pub(super) fn pull_failed(&mut self, namespace: &str, name: &str, image: &str, said: &str) {
        let said = said
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .unwrap_or_default()
            .trim()
            .trim_start_matches("ctr: ")
            .to_string();
        self.event(
            namespace,
            name,
            "Normal",
            "Pulling",
            &format!("Pulling image {image:?}"),
        );
        self.event(
            namespace,
            name,
            "Warning",
            "Failed",
            &format!("Failed to pull image {image:?}: {said}"),
        );
        self.event(namespace, name, "Warning", "Failed", "Error: ErrImagePull");
        let Some(mut pod) = self.pod(namespace, name) else {
            return;
        };
        let spec = pod["spec"].clone();
        let statuses: Vec<Value> = ["initContainers", "containers"]
            .iter()
            .flat_map(|key| spec[key].as_array().cloned().unwrap_or_default())
            .map(|c| {
                let state = if c["image"] == image {
                    json!({"waiting": {"reason": "ErrImagePull", "message": said}})
                } else {
                    json!({"waiting": {"reason": "PodInitializing"}})
                };
                json!({"name": c["name"], "image": c["image"], "imageID": "", "ready": false, "restartCount": 0, "state": state})
            })
            .collect();
        pod["status"]["phase"] = json!("Pending");
        pod["status"]["containerStatuses"] = json!(statuses);
        self.put_pod(namespace, pod);
    }

    pub(super) fn event(
        &mut self,
        namespace: &str,
        pod: &str,
        kind: &str,
        reason: &str,
        message: &str,
    ) {
        self.serial += 1;
        let serial = self.serial;
        self.events.push(json!({
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": format!("{pod}.{serial}"), "namespace": namespace, "resourceVersion": serial.to_string()},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod, "apiVersion": "v1"},
            "reason": reason, "message": message, "type": kind, "count": 1,
            "source": {"component": if reason == "FailedScheduling" || reason == "Scheduled" { "default-scheduler" } else { "kubelet" }},
            "firstTimestamp": "2025-01-01T00:00:00Z", "lastTimestamp": "2025-01-01T00:00:00Z",
        }));
    }
}

impl State {
    /// A Warning the kubelet records about one container, as its event recorder writes it
    /// (core/v1: `involvedObject.fieldPath`, `count`, `firstTimestamp`/`lastTimestamp`).
    fn kubelet_event(
        &mut self,
        namespace: &str,
        pod: &str,
        container: &str,
        reason: &str,
        message: &str,
    ) {
        self.serial += 1;
        let serial = self.serial;
        let now = super::managed::now();
        self.events.push(json!({
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": format!("{pod}.{serial:x}"), "namespace": namespace, "resourceVersion": serial.to_string()},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod, "apiVersion": "v1",
                               "fieldPath": format!("spec.containers{{{container}}}")},
            "reason": reason, "message": message, "type": "Warning", "count": 1,
            "source": {"component": "kubelet", "host": "stand-in-node"},
            "firstTimestamp": now, "lastTimestamp": now, "eventTime": null,
            "reportingComponent": "kubelet", "reportingInstance": "stand-in-node",
        }));
    }

    /// The scheduler's FailedScheduling, written through events.k8s.io/v1 as kube-scheduler
    /// writes it, read back through core/v1: `eventTime`, `action`, `reportingComponent`, no
    /// `source`, `count` or timestamps.
    fn scheduler_event(&mut self, namespace: &str, pod: &str, message: &str) {
        self.serial += 1;
        let serial = self.serial;
        self.events.push(json!({
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": format!("{pod}.{serial:x}"), "namespace": namespace, "resourceVersion": serial.to_string()},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod, "apiVersion": "v1"},
            "reason": "FailedScheduling", "message": message, "type": "Warning",
            "source": {}, "firstTimestamp": null, "lastTimestamp": null,
            "eventTime": format!("{}", super::managed::now().replace('Z', ".000000Z")),
            "action": "Scheduling", "reportingComponent": "default-scheduler",
            "reportingInstance": "default-scheduler-stand-in-node",
        }));
    }
}

pub(super) fn ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// The kubelet has not written the pod yet: scheduled, no container status.
pub(super) fn waiting_for_kubelet(pod: &Value) -> bool {
    pod["spec"]["nodeName"].is_string() && pod["status"]["containerStatuses"].is_null()
}
