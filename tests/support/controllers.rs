//! The stand-in API server's controllers and kubelet for rollouts, as late and forgetful as a
//! real cluster: Deployments, StatefulSets and DaemonSets in any namespace that a
//! strategic-merge patch of the pod template rolls, not at once but on the controllers' own
//! loop after a seeded random delay (controllers/steps.rs: the steps a real controller takes;
//! the kubelet pulls each new pod's images with the test's real containerd, then the container
//! runs, crash-loops or waits with the runtime's pull error); every write versioned and
//! watchable from a resourceVersion (controllers/watch.rs: watches end after timeoutSeconds,
//! a compacted version is answered 410); pods deleted gracefully, kept while finalizers hold
//! them (controllers/terminating.rs) and written by the test's kubectl (pod_writes.rs); the
//! pods' logs, SelfSubjectAccessReviews answered from what the test forbids, and admission's
//! refusal of images a policy does not allow (controllers/admission.rs). Served ahead of the rest of the stand-in by one hook.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod admission;
mod kinds;
mod managed;
mod pod_writes;
mod serve;
mod state;
mod steps;
mod terminating;
mod watch;
mod wire;

pub(crate) use admission::{Engine, Policy};
use state::{Key, State, ready};
use wire::kind_names;

type PullFn = dyn Fn(&str) -> Result<(), String> + Send + Sync;
type RunFn = dyn Fn(&str) -> Runs + Send + Sync;

/// What a container does once its image is on the node.
#[derive(Debug, Clone)]
pub(crate) enum Runs {
    Ready,
    /// Runs, but its readiness probe never passes: the kubelet's `Unhealthy` event
    /// (`Readiness probe failed: HTTP probe failed with statuscode: 503`).
    NeverReady,
    /// Never created: the kubelet's CreateContainerConfigError with this message (`couldn't
    /// find key password in Secret default/db`), and its `Failed` event.
    ConfigError(String),
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
    /// Refused with 403 though the access review says yes (an authorizer SSAR does not reflect).
    refused: Mutex<BTreeSet<(String, String)>>,
    unschedulable: Mutex<Option<String>>,
    /// Admission's policy on the images workloads run.
    admission: Mutex<Option<Policy>>,
    timing: Mutex<Timing>,
    /// Every watch ends after this, whatever its timeoutSeconds.
    watch_cap: Mutex<Option<Duration>>,
}

/// How late the controllers and the kubelet act: a seeded random delay in [min, max]; a patch
/// is noticed after `fixed` when set.
struct Timing {
    min: Duration,
    max: Duration,
    fixed: Option<Duration>,
    seed: u64,
}

impl std::fmt::Debug for Controllers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Controllers")
    }
}

/// The seed of the controllers' delays: `STAND_IN_SEED` to replay a run, else one per process,
/// printed so that a failure can be replayed.
fn seed() -> u64 {
    if let Some(seed) = std::env::var("STAND_IN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return seed;
    }
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    eprintln!("stand-in controllers: STAND_IN_SEED={seed}");
    seed
}

impl Controllers {
    /// Controllers whose kubelet pulls with `pull` (the runtime's own words on failure); every
    /// container runs and is Ready unless [`Controllers::runs`] says otherwise. They act 20-300
    /// ms after each change, on a loop of their own.
    pub(crate) fn new(pull: impl Fn(&str) -> Result<(), String> + Send + Sync + 'static) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            pull: Box::new(pull),
            runs: Mutex::new(Box::new(|_| Runs::Ready)),
            forbidden: Mutex::new(BTreeSet::new()),
            refused: Mutex::new(BTreeSet::new()),
            unschedulable: Mutex::new(None),
            admission: Mutex::new(None),
            timing: Mutex::new(Timing {
                min: Duration::from_millis(20),
                max: Duration::from_millis(300),
                fixed: None,
                seed: seed(),
            }),
            watch_cap: Mutex::new(None),
        });
        let weak = Arc::downgrade(&shared);
        std::thread::spawn(move || steps::run(weak));
        Self(shared)
    }

    /// What each image's container does once pulled.
    pub(crate) fn runs(self, runs: impl Fn(&str) -> Runs + Send + Sync + 'static) -> Self {
        *self.0.runs.lock().unwrap() = Box::new(runs);
        self
    }

    /// The kubelet probes readiness every `period` (not 10 s): a pod that is never ready has
    /// its Unhealthy event's count go up that often.
    pub(crate) fn probes_every(self, period: Duration) -> Self {
        self.0.state.lock().unwrap().probe_period = Some(period);
        self
    }

    /// The controller does not notice patches until [`Controllers::release`].
    pub(crate) fn hold(self) -> Self {
        self.notices_after(Duration::from_secs(3600))
    }

    /// The controller notices the patches held so far, now.
    pub(crate) fn release(&self) {
        self.0.timing.lock().unwrap().fixed = None;
        let mut state = self.0.state.lock().unwrap();
        let now = Instant::now();
        for due in state.due_workloads.values_mut() {
            *due = now;
        }
        drop(state);
        self.0.changed.notify_all();
    }

    /// The controller notices a patch `delay` after it (its later steps as late as ever).
    pub(crate) fn notices_after(self, delay: Duration) -> Self {
        self.0.timing.lock().unwrap().fixed = Some(delay);
        self
    }

    /// Every watch is ended by the server after `cap` (the client must reopen it).
    pub(crate) fn watch_cap(self, cap: Duration) -> Self {
        *self.0.watch_cap.lock().unwrap() = Some(cap);
        self
    }

    /// The history so far is compacted and every open watch ended: a watch reopened from a
    /// resourceVersion older than now is answered 410 Gone, as etcd's compaction makes a real
    /// API server answer.
    pub(crate) fn compact(&self) {
        let mut state = self.0.state.lock().unwrap();
        // Past every version handed out: only a list made from now on is current.
        state.version += 1;
        state.compacted = state.version;
        state.cut += 1;
        drop(state);
        self.0.changed.notify_all();
    }

    /// Waits (bounded: 60 s) until `done` holds of the state.
    fn wait_until(&self, done: impl Fn(&State) -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut state = self.0.state.lock().unwrap();
        while !done(&state) {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            state = self
                .0
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap()
                .0;
        }
        true
    }

    /// Waits (bounded) until `done` holds of the pods' (name, Ready) list.
    pub(crate) fn wait_for_pods(&self, done: impl Fn(&[(String, bool)]) -> bool) -> bool {
        self.wait_until(|state| {
            let pods: Vec<(String, bool)> = state
                .pods
                .iter()
                .map(|((_, n), p)| (n.clone(), ready(p)))
                .collect();
            done(&pods)
        })
    }

    /// Waits (bounded) until pod `name` (in `default`) is terminating: deleted, a finalizer
    /// keeping it.
    pub(crate) fn wait_for_terminating(&self, name: &str) -> bool {
        let key = ("default".to_string(), name.to_string());
        self.wait_until(|state| state.pods.get(&key).is_some_and(terminating::terminating))
    }

    /// Waits (bounded) until `count` patches were stored; false when none came in time.
    pub(crate) fn wait_for_patches(&self, count: usize) -> bool {
        self.wait_until(|state| state.patches.len() >= count)
    }

    /// The managedFields of `kind`/`name` (in `default`) as stored.
    pub(crate) fn managed_fields(&self, kind: &str, name: &str) -> Value {
        let state = self.0.state.lock().unwrap();
        let key = (
            "default".to_string(),
            kind_names(kind).0.to_string(),
            name.to_string(),
        );
        state.workloads[&key]["metadata"]["managedFields"].clone()
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

    /// RBAC stops allowing `verb` on `resource`: a role taken away while a command runs.
    pub(crate) fn revoke(&self, verb: &str, resource: &str) {
        self.0
            .forbidden
            .lock()
            .unwrap()
            .insert((verb.to_string(), resource.to_string()));
    }

    /// RBAC allows `verb` on `resource` again: a fix made while a command runs.
    pub(crate) fn permit(&self, verb: &str, resource: &str) {
        self.0
            .forbidden
            .lock()
            .unwrap()
            .remove(&(verb.to_string(), resource.to_string()));
    }

    /// `count` nodes for DaemonSets (`stand-in-node`, `stand-in-node-2`, ...), before any
    /// workload is added.
    pub(crate) fn nodes(self, count: usize) -> Self {
        self.0.state.lock().unwrap().nodes = (1..=count)
            .map(|n| match n {
                1 => "stand-in-node".to_string(),
                n => format!("stand-in-node-{n}"),
            })
            .collect();
        self
    }

    /// `verb` on `resource` is answered 403, though the access review says it is allowed.
    pub(crate) fn refuse(self, verb: &str, resource: &str) -> Self {
        self.0
            .refused
            .lock()
            .unwrap()
            .insert((verb.to_string(), resource.to_string()));
        self
    }

    /// Admission refuses every write of a workload whose template runs an image `policy` does
    /// not allow, as its engine answers.
    pub(crate) fn admit(self, policy: Policy) -> Self {
        *self.0.admission.lock().unwrap() = Some(policy);
        self
    }

    /// New pods get no node: the scheduler's `Unschedulable` condition with `message`.
    pub(crate) fn unschedulable(self, message: &str) -> Self {
        *self.0.unschedulable.lock().unwrap() = Some(message.to_string());
        self
    }

    /// A workload of `kind` named `name` in `default` with `replicas` (one per node for a
    /// DaemonSet), rolled out: its pods run its template's images (never pulled: they ran
    /// before the test).
    pub(crate) fn workload(
        self,
        kind: &str,
        name: &str,
        containers: &[Container<'_>],
        replicas: i64,
    ) -> Self {
        self.workload_in("default", kind, name, containers, replicas, |_| {})
    }

    /// [`Controllers::workload`] on running controllers.
    pub(crate) fn add_workload(
        &self,
        kind: &str,
        name: &str,
        containers: &[Container<'_>],
        replicas: i64,
    ) {
        self.clone().workload(kind, name, containers, replicas);
    }

    /// [`Controllers::workload`] in `namespace`, its spec changed by `edit` (a strategy, a
    /// progress deadline, paused).
    pub(crate) fn workload_in(
        self,
        namespace: &str,
        kind: &str,
        name: &str,
        containers: &[Container<'_>],
        replicas: i64,
        edit: impl FnOnce(&mut Value),
    ) -> Self {
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
                spec["strategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}});
                spec["progressDeadlineSeconds"] = json!(600);
            }
            "StatefulSet" => {
                spec["replicas"] = json!(replicas);
                spec["serviceName"] = json!(name);
                spec["updateStrategy"] = json!({"type": "RollingUpdate"});
            }
            _ => spec["updateStrategy"] = json!({"type": "RollingUpdate"}),
        }
        edit(&mut spec);
        let mut object = json!({
            "apiVersion": "apps/v1",
            "kind": api_kind,
            "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}"),
                         "generation": 1, "creationTimestamp": "2025-01-01T00:00:00Z"},
            "spec": spec,
            "status": {"observedGeneration": 1},
        });
        // Created by `kubectl apply` (client-side), its status written by the controller.
        let time = managed::now();
        for (manager, subresource, part) in [
            ("kubectl-client-side-apply", None, "spec"),
            ("kube-controller-manager", Some("status"), "status"),
        ] {
            let write = managed::Write {
                manager,
                operation: "Update",
                subresource,
                set: managed::fields_of(&json!({part: object[part].clone()})),
                time: &time,
            };
            managed::record(&json!({}), &mut object, &write);
        }
        let key: Key = (
            namespace.to_string(),
            resource.to_string(),
            name.to_string(),
        );
        {
            let mut state = self.0.state.lock().unwrap();
            state.put_workload(&key, object);
            let revision = steps::revision(&key, 1);
            let nodes = state.node_names();
            let count = if api_kind == "DaemonSet" {
                nodes.len() as i64
            } else {
                replicas
            };
            for ordinal in 0..count {
                let pod_name = (api_kind == "StatefulSet").then(|| format!("{name}-{ordinal}"));
                let node = match api_kind {
                    "DaemonSet" => nodes[ordinal as usize].as_str(),
                    _ => "stand-in-node",
                };
                let pod = state.create_pod(&key, pod_name, &revision, Ok(node));
                state.run_pod(namespace, &pod, &|_| Runs::Ready);
            }
            let now = Instant::now();
            state.due_workloads.insert(key, now);
        }
        self.0.changed.notify_all();
        // Its status is written by the controllers' first look, at once: wait for it.
        let done = |state: &State| state.due_workloads.is_empty();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut state = self.0.state.lock().unwrap();
        while !done(&state) && Instant::now() < deadline {
            state = self
                .0
                .changed
                .wait_timeout(state, Duration::from_millis(20))
                .unwrap()
                .0;
        }
        drop(state);
        self
    }

    /// Every patch stored so far (dry runs aside), as sent.
    pub(crate) fn patches(&self) -> Vec<Value> {
        self.0.state.lock().unwrap().patches.clone()
    }

    /// The images of `kind`/`name`'s template (in `default`), by container name.
    pub(crate) fn images(&self, kind: &str, name: &str) -> BTreeMap<String, String> {
        self.images_in("default", kind, name)
    }

    pub(crate) fn images_in(
        &self,
        namespace: &str,
        kind: &str,
        name: &str,
    ) -> BTreeMap<String, String> {
        let state = self.0.state.lock().unwrap();
        let key = (
            namespace.to_string(),
            kind_names(kind).0.to_string(),
            name.to_string(),
        );
        let spec = &state.workloads[&key]["spec"]["template"]["spec"];
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
            .map(|((_, name), pod)| (name.clone(), ready(pod)))
            .collect()
    }
}
