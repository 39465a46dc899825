//! The stand-in controllers' store: pods made from a workload's template, what the kubelet
//! writes of them (running, crash-looping, a failed pull), their events, and each kind's status.

use serde_json::{Value, json};

use super::{RunFn, Runs, State};

impl State {
    pub(super) fn bump(&mut self) -> String {
        self.version += 1;
        self.version.to_string()
    }

    pub(super) fn pods_of(&self, workload: &str) -> Vec<String> {
        self.pods
            .iter()
            .filter(|(_, pod)| pod["metadata"]["labels"]["app"] == workload)
            .map(|(name, _)| name.clone())
            .collect()
    }

    pub(super) fn pod_images(&self, pod: &str) -> Vec<String> {
        let spec = &self.pods[pod]["spec"];
        ["initContainers", "containers"]
            .iter()
            .flat_map(|key| spec[key].as_array().cloned().unwrap_or_default())
            .map(|c| c["image"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// A pod of the workload's template as it stands, Pending (or with no node).
    pub(super) fn create_pod(
        &mut self,
        resource: &str,
        workload: &str,
        unschedulable: Option<&str>,
    ) -> String {
        let version = self.bump();
        let object = &self.workloads[&(resource.to_string(), workload.to_string())];
        let generation = object["metadata"]["generation"].as_i64().unwrap_or(1);
        let hash = format!("{:x}", 0x5f00 + generation);
        let name = match resource {
            "statefulsets" => format!("{workload}-{}", self.pods_of(workload).len()),
            "daemonsets" => format!("{workload}-{hash}{version}"),
            _ => format!("{workload}-{hash}-{version}"),
        };
        let mut labels = object["spec"]["template"]["metadata"]["labels"].clone();
        labels["pod-template-hash"] = json!(hash);
        let mut pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                         "labels": labels, "resourceVersion": version,
                         "creationTimestamp": format!("2025-01-01T00:{:02}:{:02}Z", (self.version / 60) % 60, self.version % 60)},
            "spec": object["spec"]["template"]["spec"].clone(),
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]},
        });
        match unschedulable {
            Some(message) => {
                pod["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False",
                    "reason": "Unschedulable", "message": message}]);
                self.event(&name, "Warning", "FailedScheduling", message);
            }
            None => {
                pod["spec"]["nodeName"] = json!("stand-in-node");
                self.event(
                    &name,
                    "Normal",
                    "Scheduled",
                    &format!("Successfully assigned default/{name} to stand-in-node"),
                );
            }
        }
        self.pods.insert(name.clone(), pod);
        name
    }

    /// The kubelet after its pulls: each container running (Ready) or crash-looping.
    pub(super) fn run_pod(&mut self, name: &str, runs: &RunFn) -> bool {
        let version = self.bump();
        let Some(pod) = self.pods.get(name).cloned() else {
            return false;
        };
        let mut ready = true;
        let mut statuses = Vec::new();
        let mut logs = Vec::new();
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
                Runs::Crashes { reason, exit_code, log } => {
                    ready = false;
                    logs.push((container.to_string(), log));
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
        for (container, log) in logs {
            self.logs.insert((name.to_string(), container), log);
        }
        let condition = if ready { "True" } else { "False" };
        let stored = self.pods.get_mut(name).expect("the pod");
        stored["metadata"]["resourceVersion"] = json!(version);
        stored["status"] = json!({
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": condition},
                           {"type": "ContainersReady", "status": condition}],
            "containerStatuses": statuses,
            "initContainerStatuses": init,
        });
        ready
    }

    /// The kubelet's pull failed: ErrImagePull with the runtime's last words, and its events.
    pub(super) fn pull_failed(&mut self, name: &str, image: &str, said: &str) {
        let said = said
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .unwrap_or_default()
            .trim()
            .trim_start_matches("ctr: ")
            .to_string();
        self.event(
            name,
            "Normal",
            "Pulling",
            &format!("Pulling image {image:?}"),
        );
        self.event(
            name,
            "Warning",
            "Failed",
            &format!("Failed to pull image {image:?}: {said}"),
        );
        self.event(name, "Warning", "Failed", "Error: ErrImagePull");
        let version = self.bump();
        let stored = self.pods.get_mut(name).expect("the pod");
        let spec = stored["spec"].clone();
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
        stored["metadata"]["resourceVersion"] = json!(version);
        stored["status"]["phase"] = json!("Pending");
        stored["status"]["containerStatuses"] = json!(statuses);
    }

    pub(super) fn event(&mut self, pod: &str, kind: &str, reason: &str, message: &str) {
        let version = self.bump();
        self.events.push(json!({
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": format!("{pod}.{version}"), "namespace": "default", "resourceVersion": version},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": pod, "apiVersion": "v1"},
            "reason": reason, "message": message, "type": kind, "count": 1,
            "source": {"component": if reason == "FailedScheduling" || reason == "Scheduled" { "default-scheduler" } else { "kubelet" }},
            "firstTimestamp": "2025-01-01T00:00:00Z", "lastTimestamp": "2025-01-01T00:00:00Z",
        }));
    }

    /// The controller saw the new generation: old pods still counted, none updated yet.
    pub(super) fn observe(&mut self, resource: &str, name: &str, old: &[String], new: &[String]) {
        let version = self.bump();
        let object = self
            .workloads
            .get_mut(&(resource.to_string(), name.to_string()))
            .expect("the workload");
        let generation = object["metadata"]["generation"].clone();
        let total = (old.len() + new.len()) as i64;
        let status = &mut object["status"];
        status["observedGeneration"] = generation.clone();
        match resource {
            "deployments" => {
                status["replicas"] = json!(total);
                status["updatedReplicas"] = json!(new.len());
                status["unavailableReplicas"] = json!(new.len());
            }
            "statefulsets" => {
                status["updateRevision"] = json!(format!("{name}-{generation}"));
                status["updatedReplicas"] = json!(0);
            }
            _ => {
                status["updatedNumberScheduled"] = json!(0);
            }
        }
        object["metadata"]["resourceVersion"] = json!(version);
    }

    /// The status once the pods are as they will stay: all Ready (rolled out) or not.
    pub(super) fn settle(&mut self, resource: &str, name: &str, pods: &[String], rolled: bool) {
        let version = self.bump();
        let ready_count = pods
            .iter()
            .filter(|pod| self.pods.get(*pod).is_some_and(ready))
            .count() as i64;
        let object = self
            .workloads
            .get_mut(&(resource.to_string(), name.to_string()))
            .expect("the workload");
        let generation = object["metadata"]["generation"].clone();
        let count = pods.len() as i64;
        let revision = format!("{name}-{generation}");
        let status = &mut object["status"];
        status["observedGeneration"] = generation;
        match resource {
            "deployments" => {
                status["replicas"] = json!(count);
                status["readyReplicas"] = json!(ready_count);
                status["availableReplicas"] = json!(ready_count);
                status["unavailableReplicas"] = json!(count - ready_count);
                if rolled {
                    status["updatedReplicas"] = json!(count);
                }
            }
            "statefulsets" => {
                status["replicas"] = json!(count);
                status["readyReplicas"] = json!(ready_count);
                status["updateRevision"] = json!(revision);
                if rolled {
                    status["currentRevision"] = json!(revision);
                    status["currentReplicas"] = json!(count);
                    status["updatedReplicas"] = json!(count);
                }
            }
            _ => {
                status["desiredNumberScheduled"] = json!(1);
                status["currentNumberScheduled"] = json!(1);
                status["numberReady"] = json!(ready_count.min(1));
                if rolled {
                    status["updatedNumberScheduled"] = json!(1);
                    status["numberAvailable"] = json!(1);
                }
            }
        }
        object["metadata"]["resourceVersion"] = json!(version);
    }
}

pub(super) fn ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}
