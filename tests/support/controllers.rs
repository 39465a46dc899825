//! The stand-in API server's controllers and kubelet for rollouts: Deployments, StatefulSets and
//! DaemonSets in `default` that a strategic-merge patch of the pod template rolls (a new
//! generation, new pods; the kubelet pulls each container's image with the test's real
//! containerd, then the container runs, crash-loops or waits with the runtime's pull error),
//! their status written as the controllers write it, watched as a real server streams a watch
//! (what `kubectl rollout status` reads), the pods' logs, and SelfSubjectAccessReviews answered
//! from what the test forbids. Served ahead of the rest of the stand-in by one hook.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

mod state;
mod wire;

use state::ready;
use wire::{
    api_groups, apps_group, apps_resources, authorization_resources, is_workload, kind_names,
    named_in, query_value, respond_json, respond_text, status, strategic_merge,
};

type PullFn = dyn Fn(&str) -> Result<(), String> + Send + Sync;
type RunFn = dyn Fn(&str) -> Runs + Send + Sync;

/// What a container does once its image is on the node.
#[derive(Debug, Clone)]
pub(crate) enum Runs {
    Ready,
    /// Exits at once, over and over: the kubelet's CrashLoopBackOff, this reason and code last,
    /// and this log from the previous run.
    Crashes {
        reason: String,
        exit_code: i32,
        log: String,
    },
}

/// One container of a template: its name, image and whether it is an init container.
pub(crate) struct Container<'a>(pub &'a str, pub &'a str, pub bool);

#[derive(Clone)]
pub(crate) struct Controllers(Arc<Shared>);

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    pull: Box<PullFn>,
    runs: Mutex<Box<RunFn>>,
    forbidden: Mutex<BTreeSet<(String, String)>>,
    unschedulable: Mutex<Option<String>>,
}

#[derive(Default)]
struct State {
    version: u64,
    /// (resource, name) -> object
    workloads: BTreeMap<(String, String), Value>,
    pods: BTreeMap<String, Value>,
    events: Vec<Value>,
    /// (pod, container) -> the previous run's log
    logs: BTreeMap<(String, String), String>,
    /// Patches stored (dry runs aside), as sent.
    patches: Vec<Value>,
}

impl std::fmt::Debug for Controllers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Controllers")
    }
}

impl Controllers {
    /// Controllers whose kubelet pulls with `pull` (the runtime's own words on failure); every
    /// container runs and is Ready unless [`Controllers::runs`] says otherwise.
    pub(crate) fn new(pull: impl Fn(&str) -> Result<(), String> + Send + Sync + 'static) -> Self {
        Self(Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            pull: Box::new(pull),
            runs: Mutex::new(Box::new(|_| Runs::Ready)),
            forbidden: Mutex::new(BTreeSet::new()),
            unschedulable: Mutex::new(None),
        }))
    }

    /// What each image's container does once pulled.
    pub(crate) fn runs(self, runs: impl Fn(&str) -> Runs + Send + Sync + 'static) -> Self {
        *self.0.runs.lock().unwrap() = Box::new(runs);
        self
    }

    /// RBAC forbids `verb` on `resource` (`deployments`, `pods`, `pods/log`): the access review
    /// says so and the request is answered 403.
    pub(crate) fn forbid(self, verb: &str, resource: &str) -> Self {
        self.0
            .forbidden
            .lock()
            .unwrap()
            .insert((verb.to_string(), resource.to_string()));
        self
    }

    /// New pods get no node: the scheduler's `Unschedulable` condition with `message`.
    pub(crate) fn unschedulable(self, message: &str) -> Self {
        *self.0.unschedulable.lock().unwrap() = Some(message.to_string());
        self
    }

    /// A workload of `kind` named `name` with `replicas` (one per node for a DaemonSet), rolled
    /// out: its pods run its template's images (never pulled: they ran before the test).
    pub(crate) fn workload(
        self,
        kind: &str,
        name: &str,
        containers: &[Container<'_>],
        replicas: i64,
    ) -> Self {
        self.add_workload(kind, name, containers, replicas);
        self
    }

    /// [`Controllers::workload`] on running controllers.
    pub(crate) fn add_workload(
        &self,
        kind: &str,
        name: &str,
        containers: &[Container<'_>],
        replicas: i64,
    ) {
        let (resource, api_kind) = kind_names(kind);
        let list = |init: bool| -> Vec<Value> {
            containers
                .iter()
                .filter(|c| c.2 == init)
                .map(|c| json!({"name": c.0, "image": c.1, "imagePullPolicy": "IfNotPresent"}))
                .collect()
        };
        let mut template_spec = json!({"containers": list(false), "restartPolicy": "Always"});
        if containers.iter().any(|c| c.2) {
            template_spec["initContainers"] = json!(list(true));
        }
        let mut spec = json!({
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": template_spec},
        });
        match api_kind {
            "Deployment" => {
                spec["replicas"] = json!(replicas);
                spec["strategy"] = json!({"type": "RollingUpdate"});
            }
            "StatefulSet" => {
                spec["replicas"] = json!(replicas);
                spec["serviceName"] = json!(name);
                spec["updateStrategy"] = json!({"type": "RollingUpdate"});
            }
            _ => spec["updateStrategy"] = json!({"type": "RollingUpdate"}),
        }
        let object = json!({
            "apiVersion": "apps/v1",
            "kind": api_kind,
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                         "generation": 1, "creationTimestamp": "2025-01-01T00:00:00Z"},
            "spec": spec,
        });
        {
            let mut state = self.0.state.lock().unwrap();
            state
                .workloads
                .insert((resource.to_string(), name.to_string()), object);
            let count = if api_kind == "DaemonSet" { 1 } else { replicas };
            let pods: Vec<String> = (0..count)
                .map(|_| state.create_pod(resource, name, None))
                .collect();
            for pod in &pods {
                state.run_pod(pod, &|_| Runs::Ready);
            }
            state.settle(resource, name, &pods, true);
        }
        self.0.changed.notify_all();
    }

    /// Every patch stored so far (dry runs aside), as sent.
    pub(crate) fn patches(&self) -> Vec<Value> {
        self.0.state.lock().unwrap().patches.clone()
    }

    /// The images of `kind`/`name`'s template, by container name.
    pub(crate) fn images(&self, kind: &str, name: &str) -> BTreeMap<String, String> {
        let state = self.0.state.lock().unwrap();
        let object = &state.workloads[&(kind_names(kind).0.to_string(), name.to_string())];
        let spec = &object["spec"]["template"]["spec"];
        ["initContainers", "containers"]
            .iter()
            .flat_map(|key| spec[key].as_array().cloned().unwrap_or_default())
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["image"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    /// The names of the pods that run now, and whether each is Ready.
    pub(crate) fn pods(&self) -> Vec<(String, bool)> {
        let state = self.0.state.lock().unwrap();
        state
            .pods
            .iter()
            .map(|(name, pod)| (name.clone(), ready(pod)))
            .collect()
    }

    /// Answers the request when it is the controllers'; false to leave it to the rest.
    pub(crate) fn serve(
        &self,
        method: &str,
        target: &str,
        body: &[u8],
        stream: &mut dyn Write,
    ) -> bool {
        let path = target.split('?').next().unwrap_or("");
        let query = target.split_once('?').map_or("", |(_, q)| q);
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let answer = match (method, segments.as_slice()) {
            ("GET", ["apis"]) => (200, api_groups()),
            ("GET", ["apis", "apps"]) => (200, apps_group()),
            ("GET", ["apis", "apps", "v1"]) => (200, apps_resources()),
            ("GET", ["apis", "authorization.k8s.io", "v1"]) => (200, authorization_resources()),
            (
                "POST",
                [
                    "apis",
                    "authorization.k8s.io",
                    "v1",
                    "selfsubjectaccessreviews",
                ],
            ) => self.review(body),
            ("GET", ["apis", "apps", "v1", "namespaces", "default", resource])
                if is_workload(resource) =>
            {
                if query_value(query, "watch").is_some_and(|w| w == "true" || w == "1") {
                    self.watch(resource, query, stream);
                    return true;
                }
                self.list(resource, query)
            }
            (
                "GET",
                [
                    "apis",
                    "apps",
                    "v1",
                    "namespaces",
                    "default",
                    resource,
                    name,
                ],
            ) if is_workload(resource) => self
                .refused("get", resource)
                .unwrap_or_else(|| self.get(resource, name)),
            (
                "PATCH",
                [
                    "apis",
                    "apps",
                    "v1",
                    "namespaces",
                    "default",
                    resource,
                    name,
                ],
            ) if is_workload(resource) => self
                .refused("patch", resource)
                .unwrap_or_else(|| self.patch(resource, name, query, body)),
            ("GET", ["api", "v1", "namespaces", "default", "pods"]) => self
                .refused("list", "pods")
                .unwrap_or_else(|| self.pod_list(query)),
            ("GET", ["api", "v1", "namespaces", "default", "pods", name]) if self.has_pod(name) => {
                let state = self.0.state.lock().unwrap();
                (200, state.pods[*name].clone())
            }
            _ => return self.serve_pods(method, &segments, query, stream),
        };
        respond_json(stream, answer.0, &answer.1);
        true
    }

    /// A pod's log and events, when the pod is the controllers'.
    fn serve_pods(
        &self,
        method: &str,
        segments: &[&str],
        query: &str,
        stream: &mut dyn Write,
    ) -> bool {
        let answer = match (method, segments) {
            ("GET", ["api", "v1", "namespaces", "default", "pods", name, "log"])
                if self.has_pod(name) =>
            {
                if let Some(refused) = self.refused("get", "pods/log") {
                    refused
                } else {
                    let container = query_value(query, "container").unwrap_or_default();
                    let state = self.0.state.lock().unwrap();
                    let log = state
                        .logs
                        .get(&(name.to_string(), container))
                        .cloned()
                        .unwrap_or_default();
                    respond_text(stream, 200, &log);
                    return true;
                }
            }
            ("GET", ["api", "v1", "namespaces", "default", "events"]) => {
                let wanted = query_value(query, "fieldSelector").and_then(|s| {
                    s.split(',')
                        .find_map(|t| t.strip_prefix("involvedObject.name=").map(str::to_string))
                });
                match wanted {
                    Some(pod) if self.has_pod(&pod) => {
                        let state = self.0.state.lock().unwrap();
                        let items: Vec<Value> = state
                            .events
                            .iter()
                            .filter(|e| e["involvedObject"]["name"] == pod.as_str())
                            .cloned()
                            .collect();
                        (
                            200,
                            json!({"kind": "EventList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}),
                        )
                    }
                    _ => return false,
                }
            }
            _ => return false,
        };
        respond_json(stream, answer.0, &answer.1);
        true
    }

    fn has_pod(&self, name: &str) -> bool {
        self.0.state.lock().unwrap().pods.contains_key(name)
    }

    fn refused(&self, verb: &str, resource: &str) -> Option<(u16, Value)> {
        let forbidden = self.0.forbidden.lock().unwrap();
        forbidden.contains(&(verb.to_string(), resource.to_string())).then(|| {
            let message = format!(
                "{resource} is forbidden: User \"system:serviceaccount:default:dev\" cannot {verb} resource {resource:?} in the namespace \"default\""
            );
            (403, status(403, "Forbidden", &message))
        })
    }

    fn review(&self, body: &[u8]) -> (u16, Value) {
        let mut review: Value = serde_json::from_slice(body).unwrap_or_default();
        let attributes = &review["spec"]["resourceAttributes"];
        let mut resource = attributes["resource"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if let Some(sub) = attributes["subresource"].as_str().filter(|s| !s.is_empty()) {
            resource = format!("{resource}/{sub}");
        }
        let verb = attributes["verb"].as_str().unwrap_or_default().to_string();
        let allowed = !self.0.forbidden.lock().unwrap().contains(&(verb, resource));
        review["status"] = json!({"allowed": allowed});
        review["apiVersion"] = json!("authorization.k8s.io/v1");
        review["kind"] = json!("SelfSubjectAccessReview");
        (201, review)
    }

    fn get(&self, resource: &str, name: &str) -> (u16, Value) {
        let state = self.0.state.lock().unwrap();
        match state
            .workloads
            .get(&(resource.to_string(), name.to_string()))
        {
            Some(object) => (200, object.clone()),
            None => (
                404,
                status(
                    404,
                    "NotFound",
                    &format!("{resource}.apps {name:?} not found"),
                ),
            ),
        }
    }

    fn list(&self, resource: &str, query: &str) -> (u16, Value) {
        let state = self.0.state.lock().unwrap();
        let (_, kind) = kind_names(resource);
        let name = named_in(query);
        let items: Vec<Value> = state
            .workloads
            .iter()
            .filter(|((r, n), _)| r == resource && name.as_ref().is_none_or(|name| name == n))
            .map(|(_, object)| object.clone())
            .collect();
        (
            200,
            json!({"kind": format!("{kind}List"), "apiVersion": "apps/v1",
                     "metadata": {"resourceVersion": state.version.to_string()}, "items": items}),
        )
    }

    fn pod_list(&self, query: &str) -> (u16, Value) {
        let selector: Vec<(String, String)> = query_value(query, "labelSelector")
            .unwrap_or_default()
            .split(',')
            .filter_map(|t| {
                t.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect();
        let state = self.0.state.lock().unwrap();
        let items: Vec<Value> = state
            .pods
            .values()
            .filter(|pod| {
                selector
                    .iter()
                    .all(|(k, v)| pod["metadata"]["labels"][k] == v.as_str())
            })
            .cloned()
            .collect();
        (
            200,
            json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": state.version.to_string()}, "items": items}),
        )
    }

    /// A strategic-merge patch of the template: a new generation, rolled on another thread.
    fn patch(&self, resource: &str, name: &str, query: &str, body: &[u8]) -> (u16, Value) {
        let patch: Value = serde_json::from_slice(body).unwrap_or_default();
        let dry_run = query_value(query, "dryRun").is_some();
        let mut state = self.0.state.lock().unwrap();
        let key = (resource.to_string(), name.to_string());
        let Some(current) = state.workloads.get(&key).cloned() else {
            return (
                404,
                status(
                    404,
                    "NotFound",
                    &format!("{resource}.apps {name:?} not found"),
                ),
            );
        };
        let mut updated = current.clone();
        strategic_merge(&mut updated, &patch);
        if dry_run {
            return (200, updated);
        }
        state.patches.push(patch);
        if updated["spec"]["template"] != current["spec"]["template"] {
            updated["metadata"]["generation"] =
                json!(current["metadata"]["generation"].as_i64().unwrap_or(1) + 1);
        }
        let version = state.bump();
        updated["metadata"]["resourceVersion"] = json!(version);
        let rolls = updated["metadata"]["generation"] != current["metadata"]["generation"];
        state.workloads.insert(key, updated.clone());
        drop(state);
        self.0.changed.notify_all();
        if rolls {
            let controllers = self.clone();
            let (resource, name) = (resource.to_string(), name.to_string());
            std::thread::spawn(move || controllers.roll(&resource, &name));
        }
        (200, updated)
    }

    /// The controller and kubelet: observe, create the new pods, pull, run, retire the old.
    fn roll(&self, resource: &str, name: &str) {
        let shared = &self.0;
        let unschedulable = shared.unschedulable.lock().unwrap().clone();
        let (new_pods, old_pods) = {
            let mut state = shared.state.lock().unwrap();
            let object = &state.workloads[&(resource.to_string(), name.to_string())];
            let replicas = if resource == "daemonsets" {
                1
            } else {
                object["spec"]["replicas"].as_i64().unwrap_or(1)
            };
            let old: Vec<String> = state.pods_of(name);
            let new: Vec<String> = (0..replicas)
                .map(|_| state.create_pod(resource, name, unschedulable.as_deref()))
                .collect();
            state.observe(resource, name, &old, &new);
            (new, old)
        };
        shared.changed.notify_all();
        if unschedulable.is_some() {
            return;
        }
        let mut all_ready = true;
        for pod in &new_pods {
            let images = shared.state.lock().unwrap().pod_images(pod);
            let pulled: Vec<(String, Result<(), String>)> = images
                .iter()
                .map(|image| (image.clone(), (shared.pull)(image)))
                .collect();
            let mut state = shared.state.lock().unwrap();
            match pulled.iter().find(|(_, pulled)| pulled.is_err()) {
                Some((image, Err(said))) => {
                    state.pull_failed(pod, image, said);
                    all_ready = false;
                }
                _ => {
                    let runs = shared.runs.lock().unwrap();
                    all_ready &= state.run_pod(pod, &**runs);
                }
            }
            drop(state);
            shared.changed.notify_all();
        }
        let mut state = shared.state.lock().unwrap();
        if all_ready {
            for pod in &old_pods {
                state.pods.remove(pod);
            }
        }
        let pods = if all_ready {
            new_pods
        } else {
            [old_pods, new_pods].concat()
        };
        state.settle(resource, name, &pods, all_ready);
        drop(state);
        shared.changed.notify_all();
    }

    /// A watch on `resource` (one named by fieldSelector): ADDED then MODIFIED events as its
    /// resourceVersion moves, chunked, until timeoutSeconds or the client goes.
    fn watch(&self, resource: &str, query: &str, stream: &mut dyn Write) {
        let name = named_in(query);
        let seconds: u64 = query_value(query, "timeoutSeconds")
            .and_then(|s| s.parse().ok())
            .unwrap_or(300);
        let deadline = std::time::Instant::now() + Duration::from_secs(seconds.min(600));
        let header = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nCache-Control: no-cache, private\r\n\r\n";
        if stream
            .write_all(header.as_bytes())
            .and_then(|()| stream.flush())
            .is_err()
        {
            return;
        }
        let mut sent: BTreeMap<String, String> = BTreeMap::new();
        let mut state = self.0.state.lock().unwrap();
        loop {
            let mut events = Vec::new();
            for ((r, n), object) in &state.workloads {
                if r != resource || name.as_ref().is_some_and(|name| name != n) {
                    continue;
                }
                let version = object["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let kind = if sent.contains_key(n) {
                    "MODIFIED"
                } else {
                    "ADDED"
                };
                if sent.get(n) != Some(&version) {
                    sent.insert(n.clone(), version);
                    events.push(json!({"type": kind, "object": object}).to_string() + "\n");
                }
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
            let now = std::time::Instant::now();
            if now >= deadline {
                let _ = stream.write_all(b"0\r\n\r\n");
                return;
            }
            // Woken by every change; the bound only notices the deadline.
            state = self
                .0
                .changed
                .wait_timeout(state, (deadline - now).min(Duration::from_secs(1)))
                .unwrap()
                .0;
        }
    }
}
