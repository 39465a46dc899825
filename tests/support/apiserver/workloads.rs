//! Pods, events and workloads in the stand-in API server: pods created (the kubelet's part done at
//! once, with the kubelet's own words), listed, watched and deleted; workload lists.

use super::*;

/// A watch of pods in `default` (by `metadata.name=` field selector): each as ADDED, then held
/// open until its timeoutSeconds as a real server holds it (these pods change no more once the
/// kubelet's part is done at their creation).
pub(super) fn watch_pods(state: &Served, query: &str, stream: &mut dyn Write) {
    let value = |key: &str| {
        query.split('&').find_map(|pair| {
            pair.strip_prefix(key)
                .and_then(|rest| rest.strip_prefix('='))
                .map(|value| value.replace("%3D", "=").replace("%2C", ","))
        })
    };
    let name = value("fieldSelector").and_then(|selector| {
        selector
            .split(',')
            .find_map(|term| term.strip_prefix("metadata.name=").map(str::to_string))
    });
    let seconds: u64 = value("timeoutSeconds")
        .and_then(|s| s.parse().ok())
        .unwrap_or(10)
        .min(60);
    let events: Vec<String> = {
        let store = state.store.lock().expect("store");
        store
            .pods
            .values()
            .filter(|pod| {
                name.as_deref()
                    .is_none_or(|name| pod["metadata"]["name"] == name)
            })
            .map(|pod| json!({"type": "ADDED", "object": pod}).to_string() + "\n")
            .collect()
    };
    let header =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    if stream.write_all(header.as_bytes()).is_err() {
        return;
    }
    for event in events {
        let chunk = format!("{:x}\r\n{event}\r\n", event.len());
        if stream
            .write_all(chunk.as_bytes())
            .and_then(|()| stream.flush())
            .is_err()
        {
            return;
        }
    }
    // Held open until its time is up: the client goes long before.
    std::thread::sleep(std::time::Duration::from_secs(seconds));
    let _ = stream.write_all(b"0\r\n\r\n");
}

/// Every object of `resource` in all namespaces, as a List (403 when forbidden).
pub(super) fn workload_list(spec: &ApiServerBuilder, group: &str, resource: &str) -> (u16, Value) {
    let (api_version, kind) = match (group, resource) {
        ("", "pods") => ("v1", "Pod"),
        ("apps", "deployments") => ("apps/v1", "Deployment"),
        ("apps", "statefulsets") => ("apps/v1", "StatefulSet"),
        ("apps", "daemonsets") => ("apps/v1", "DaemonSet"),
        ("apps", "replicasets") => ("apps/v1", "ReplicaSet"),
        ("batch", "jobs") => ("batch/v1", "Job"),
        ("batch", "cronjobs") => ("batch/v1", "CronJob"),
        _ => return (404, Value::Null),
    };
    if let Some(refusal) = refusal(spec, resource, "list", None, None) {
        return refusal;
    }
    let items: Vec<Value> = spec
        .workloads
        .iter()
        .filter(|(r, _)| r == resource)
        .map(|(_, object)| {
            let mut object = object.clone();
            object["kind"] = json!(kind);
            object["apiVersion"] = json!(api_version);
            object
        })
        .collect();
    (
        200,
        json!({"kind": format!("{kind}List"), "apiVersion": api_version,
               "metadata": {"resourceVersion": "1"}, "items": items}),
    )
}

/// Whether `image`'s repository path is lower case, as docker's reference grammar requires (the
/// registry part, with a `.`, a `:` or `localhost`, may have capitals).
pub(super) fn is_lower_case_repository(image: &str) -> bool {
    let path = match image.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => rest,
        _ => image,
    };
    let path = path.split(['@', ':']).next().unwrap_or(path);
    !path.chars().any(|c| c.is_ascii_uppercase())
}

/// Pods and events in namespace `default`: create (the kubelet pulls at once), get, delete, and
/// the event list `kubectl describe` and `doctor --pod` read. `None` for any other path.
pub(super) fn respond_for_pods(
    state: &Served,
    method: &str,
    path: &str,
    query: &str,
    body: &[u8],
) -> Option<(u16, Value)> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (resource, name) = match segments.as_slice() {
        ["api", "v1", "namespaces", "default", resource] => (*resource, None),
        ["api", "v1", "namespaces", "default", resource, name] => (*resource, Some(*name)),
        _ => return None,
    };
    let verb = match (method, name) {
        ("POST", None) => "create",
        ("GET", None) => "list",
        ("GET", Some(_)) => "get",
        ("DELETE", Some(_)) => "delete",
        _ => return None,
    };
    if !matches!(
        (resource, verb),
        ("pods", "create" | "get" | "delete" | "list") | ("events", "list")
    ) {
        return None;
    }
    if let Some(refusal) = refusal(&state.spec, resource, verb, Some("default"), name) {
        return Some(refusal);
    }
    let mut store = state.store.lock().expect("store");
    Some(match (verb, name) {
        ("create", _) => {
            let pod: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            if let Some(message) = &state.spec.unschedulable {
                return Some((201, store.create_unschedulable_pod(pod, message)));
            }
            let created = store.create_pod(pod);
            let name = created["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let image = created
                .pointer("/spec/containers/0/image")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let never =
                created.pointer("/spec/containers/0/imagePullPolicy") == Some(&json!("Never"));
            // The kubelet's part, done before answering: the client finds the outcome at once.
            match (&state.spec.kubelet, never) {
                (Some(_), _) if !is_lower_case_repository(&image) => {
                    store.kubelet_refuses_name(&name, &image);
                }
                (Some(_), true) => {
                    let held = state
                        .spec
                        .node_holds
                        .as_ref()
                        .is_some_and(|Holds(holds)| holds(&image));
                    store.kubelet_never_pulls(&name, &image, held);
                }
                (Some(Kubelet(pull)), false) => {
                    let pulled = pull(&image);
                    store.kubelet_pulled(&name, &image, pulled);
                }
                (None, _) => {}
            }
            (201, created)
        }
        ("list", _) if resource == "pods" => {
            // `labelSelector=app%3Dweb,tier%3Dfront`: every term must match.
            let selector: Vec<(String, String)> = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("labelSelector="))
                .map(|selector| selector.replace("%3D", "=").replace("%2C", ","))
                .unwrap_or_default()
                .split(',')
                .filter_map(|term| term.split_once('='))
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect();
            let items: Vec<Value> = store
                .pods
                .values()
                .filter(|pod| {
                    selector
                        .iter()
                        .all(|(key, value)| pod["metadata"]["labels"][key] == value.as_str())
                })
                .cloned()
                .collect();
            (
                200,
                json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}),
            )
        }
        ("list", _) => {
            let wanted = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("fieldSelector="))
                .map(|selector| selector.replace("%3D", "=").replace("%2C", ","))
                .and_then(|selector| {
                    selector.split(',').find_map(|term| {
                        term.strip_prefix("involvedObject.name=")
                            .map(str::to_string)
                    })
                });
            let items: Vec<Value> = store
                .events
                .iter()
                .filter(|event| {
                    wanted
                        .as_deref()
                        .is_none_or(|name| event["involvedObject"]["name"] == name)
                })
                .cloned()
                .collect();
            (
                200,
                json!({"kind": "EventList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}),
            )
        }
        ("get", Some(name)) => match store.pods.get(name) {
            Some(pod) => (200, pod.clone()),
            // A running pod of the builder's, in `default`.
            None => match state.spec.workloads.iter().find(|(resource, pod)| {
                resource == "pods"
                    && pod["metadata"]["name"] == name
                    && pod["metadata"]["namespace"] == "default"
            }) {
                Some((_, pod)) => (200, pod.clone()),
                None => not_found("pods", name),
            },
        },
        (_, Some(name)) => match store.pods.remove(name) {
            Some(mut pod) => {
                pod["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:01Z");
                (200, pod)
            }
            None => not_found("pods", name),
        },
        _ => unreachable!("routed above"),
    })
}

impl Store {
    pub(super) fn next_version(&mut self) -> String {
        self.resource_version += 1;
        self.resource_version.to_string()
    }

    pub(super) fn create_pod(&mut self, mut pod: Value) -> Value {
        let version = self.next_version();
        let prefix = pod
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
            .unwrap_or("pod-")
            .to_string();
        let name = pod
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map_or_else(|| format!("{prefix}{version:0>5}"), str::to_string);
        let mut meta = metadata(&name, Some("default"));
        meta["resourceVersion"] = json!(version);
        if let Some(labels) = pod.pointer("/metadata/labels") {
            meta["labels"] = labels.clone();
        }
        pod["kind"] = json!("Pod");
        pod["apiVersion"] = json!("v1");
        pod["metadata"] = meta;
        pod["spec"]["nodeName"] = json!("stand-in-node");
        pod["status"] = json!({"phase": "Pending", "qosClass": "BestEffort",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                            "lastTransitionTime": "2025-01-01T00:00:00Z"}]});
        self.pods.insert(name, pod.clone());
        self.event(
            &pod,
            "Normal",
            "Scheduled",
            "default-scheduler",
            &format!(
                "Successfully assigned default/{} to stand-in-node",
                pod["metadata"]["name"].as_str().unwrap_or_default()
            ),
        );
        pod
    }

    /// A pod the scheduler cannot place: Pending, no node, no container statuses, and the
    /// scheduler's condition and event (kube-scheduler's words: `0/1 nodes are available: ...`).
    pub(super) fn create_unschedulable_pod(&mut self, pod: Value, message: &str) -> Value {
        let mut pod = self.create_pod(pod);
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        pod["spec"]
            .as_object_mut()
            .map(|spec| spec.remove("nodeName"));
        pod["status"] = json!({"phase": "Pending", "qosClass": "Burstable",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                            "message": message, "lastProbeTime": null,
                            "lastTransitionTime": "2025-01-01T00:00:00Z"}]});
        // What create_pod recorded as scheduled was not: the scheduler's word instead.
        self.events.retain(|event| {
            event["reason"] != "Scheduled" || event["involvedObject"]["name"] != name.as_str()
        });
        self.event(
            &pod,
            "Warning",
            "FailedScheduling",
            "default-scheduler",
            message,
        );
        self.pods.insert(name, pod.clone());
        pod
    }

    /// What a kubelet records for a reference it cannot parse (its `applyDefaultImageTag`:
    /// docker's reference grammar), before any pull: InvalidImageName.
    pub(super) fn kubelet_refuses_name(&mut self, name: &str, image: &str) {
        let Some(pod) = self.pods.get(name).cloned() else {
            return;
        };
        let said = format!(
            "Failed to apply default image tag {image:?}: couldn't parse image name {image:?}: \
             invalid reference format: repository name must be lowercase"
        );
        self.event(&pod, "Warning", "InspectFailed", "kubelet", &said);
        self.event(
            &pod,
            "Warning",
            "Failed",
            "kubelet",
            "Error: InvalidImageName",
        );
        self.set_waiting(name, image, "InvalidImageName", &said);
    }

    /// What a kubelet records for `imagePullPolicy: Never`: it asks the runtime whether it holds
    /// the image and never pulls (kubelet's image manager: ErrImageNeverPull).
    pub(super) fn kubelet_never_pulls(&mut self, name: &str, image: &str, held: bool) {
        let Some(pod) = self.pods.get(name).cloned() else {
            return;
        };
        let (reason, message) = if held {
            self.event(
                &pod,
                "Normal",
                "Pulled",
                "kubelet",
                &format!("Container image {image:?} already present on machine"),
            );
            self.container_cannot_start(&pod)
        } else {
            let said =
                format!("Container image {image:?} is not present with pull policy of Never");
            self.event(&pod, "Warning", "ErrImageNeverPull", "kubelet", &said);
            self.event(
                &pod,
                "Warning",
                "Failed",
                "kubelet",
                "Error: ErrImageNeverPull",
            );
            ("ErrImageNeverPull", said)
        };
        self.set_waiting(name, image, reason, &message);
    }

    /// The image is there but the stand-in's pods name no command: the kubelet's
    /// CreateContainerError, its event and its waiting reason.
    fn container_cannot_start(&mut self, pod: &Value) -> (&'static str, String) {
        let error = "failed to generate container spec: no command specified";
        self.event(
            pod,
            "Warning",
            "Failed",
            "kubelet",
            &format!("Error: {error}"),
        );
        ("CreateContainerError", error.to_string())
    }

    /// What a kubelet records after its runtime pulled (or failed to pull) the pod's image.
    pub(super) fn kubelet_pulled(&mut self, name: &str, image: &str, pulled: Result<(), String>) {
        let Some(pod) = self.pods.get(name).cloned() else {
            return;
        };
        self.event(
            &pod,
            "Normal",
            "Pulling",
            "kubelet",
            &format!("Pulling image {image:?}"),
        );
        let (reason, message) = match pulled {
            Ok(()) => {
                self.event(
                    &pod,
                    "Normal",
                    "Pulled",
                    "kubelet",
                    &format!("Successfully pulled image {image:?}"),
                );
                self.container_cannot_start(&pod)
            }
            Err(said) => {
                // ctr logs before its error; the kubelet reports the error alone.
                let last = said.lines().rev().find(|line| !line.trim().is_empty());
                let said = last
                    .unwrap_or_default()
                    .trim()
                    .trim_start_matches("ctr: ")
                    .to_string();
                self.event(
                    &pod,
                    "Warning",
                    "Failed",
                    "kubelet",
                    &format!("Failed to pull image {image:?}: {said}"),
                );
                self.event(&pod, "Warning", "Failed", "kubelet", "Error: ErrImagePull");
                ("ErrImagePull", said)
            }
        };
        self.set_waiting(name, image, reason, &message);
    }

    /// The pod's one container waiting with `reason` and `message`, as the kubelet reports it.
    pub(super) fn set_waiting(&mut self, name: &str, image: &str, reason: &str, message: &str) {
        let version = self.next_version();
        if let Some(stored) = self.pods.get_mut(name) {
            stored["metadata"]["resourceVersion"] = json!(version);
            stored["status"]["containerStatuses"] = json!([{
                "name": stored.pointer("/spec/containers/0/name").cloned().unwrap_or_default(),
                "image": image,
                "imageID": "",
                "ready": false,
                "restartCount": 0,
                "started": false,
                "state": {"waiting": {"reason": reason, "message": message}},
            }]);
        }
    }

    pub(super) fn event(
        &mut self,
        pod: &Value,
        kind: &str,
        reason: &str,
        component: &str,
        message: &str,
    ) {
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let mut meta = metadata(
            &format!("{name}.{:x}", self.events.len() + 1),
            Some("default"),
        );
        meta["resourceVersion"] = json!(self.next_version());
        self.events.push(json!({
            "kind": "Event",
            "apiVersion": "v1",
            "metadata": meta,
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": name, "uid": pod["metadata"]["uid"], "apiVersion": "v1"},
            "reason": reason,
            "message": message,
            "source": {"component": component, "host": "stand-in-node"},
            "firstTimestamp": "2025-01-01T00:00:00Z",
            "lastTimestamp": "2025-01-01T00:00:00Z",
            "count": 1,
            "type": kind,
        }));
    }
}
