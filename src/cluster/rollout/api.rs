//! A workload's rollout as `kubectl set image` and `kubectl rollout status` read and write it,
//! through kube's `Api<K>` in one namespace: the typed workload, a strategic-merge patch of its
//! containers' images (server-side dry run first when asked) answered with the object it made,
//! the pods its selector matches, those two followed by list-then-watch (`follow`), a
//! container's previous log.

use futures_util::stream::BoxStream;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use kube::Resource;
use kube::api::{Api, ListParams, LogParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::workload::{Workload, WorkloadKind};
use crate::cluster::client::{Change, Cluster, Lookup, PodFacts, follow, watch_config};
use crate::plumbing::error::Result;

/// The manager our image patches are recorded under in the workload's managedFields.
const FIELD_MANAGER: &str = "kubectl-registry";

/// A pod of a workload while it rolls out: why's view of it, and whether it is Ready.
#[derive(Debug, Clone)]
pub struct RolloutPod {
    pub facts: PodFacts,
    pub ready: bool,
    /// Containers in CrashLoopBackOff: name, restarts, and how the last run ended.
    pub crashing: Vec<Crash>,
}

/// The API server's answer to an image patch.
#[derive(Debug)]
pub enum Patched {
    /// The object as stored (or as it would be, for a dry run).
    Stored(Box<Workload>),
    NotFound,
    /// RBAC forbids the patch.
    Forbidden,
    /// Admission or validation refused it (a ValidatingAdmissionPolicy, a webhook such as
    /// Kyverno's or Gatekeeper's): the API server's message, in the policy's words.
    Refused(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crash {
    pub container: String,
    pub restarts: i32,
    /// `OOMKilled`, `Error`, `Completed`...
    pub reason: String,
    pub exit_code: i32,
}

/// A rollout's objects in one namespace: its workload, the workload's pods, their logs.
pub struct RolloutApi<'a> {
    cluster: &'a Cluster,
    namespace: &'a str,
}

impl<'a> RolloutApi<'a> {
    pub fn new(cluster: &'a Cluster, namespace: &'a str) -> Self {
        Self { cluster, namespace }
    }

    /// The workload, or why it cannot be read.
    pub async fn workload(&self, kind: WorkloadKind, name: &str) -> Result<Lookup<Workload>> {
        let namespace = self.namespace;
        let doing = || format!("reading {} {namespace}/{name}", kind.singular());
        Ok(match kind {
            WorkloadKind::Deployment => self
                .cluster
                .lookup(self.api::<Deployment>().get(name).await, doing)?
                .map(Workload::Deployment),
            WorkloadKind::StatefulSet => self
                .cluster
                .lookup(self.api::<StatefulSet>().get(name).await, doing)?
                .map(Workload::StatefulSet),
            WorkloadKind::DaemonSet => self
                .cluster
                .lookup(self.api::<DaemonSet>().get(name).await, doing)?
                .map(Workload::DaemonSet),
        })
    }

    fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as Resource>::DynamicType: Default,
    {
        Api::namespaced(self.cluster.client.clone(), self.namespace)
    }

    /// Sets each `(container, image, init)` as `kubectl set image` does: a strategic-merge patch
    /// of the pod template's containers by name, nothing else. `dry_run` asks the server to
    /// check (admission, RBAC) and store nothing. The answer is the object as stored: its
    /// generation is the one the controller must observe.
    pub async fn set_images(
        &self,
        kind: WorkloadKind,
        name: &str,
        images: &[(String, String, bool)],
        dry_run: bool,
    ) -> Result<Patched> {
        let namespace = self.namespace;
        let params = PatchParams {
            dry_run,
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..PatchParams::default()
        };
        let patch = Patch::Strategic(image_patch(images));
        let doing = || format!("patching {} {namespace}/{name}", kind.singular());
        let answer = match kind {
            WorkloadKind::Deployment => self
                .api::<Deployment>()
                .patch(name, &params, &patch)
                .await
                .map(Workload::Deployment),
            WorkloadKind::StatefulSet => self
                .api::<StatefulSet>()
                .patch(name, &params, &patch)
                .await
                .map(Workload::StatefulSet),
            WorkloadKind::DaemonSet => self
                .api::<DaemonSet>()
                .patch(name, &params, &patch)
                .await
                .map(Workload::DaemonSet),
        };
        if let Err(kube::Error::Api(status)) = &answer
            && refused_by_admission(status.code, &status.message)
        {
            return Ok(Patched::Refused(status.message.clone()));
        }
        Ok(match self.cluster.lookup(answer, doing)? {
            Lookup::Found(stored) => Patched::Stored(Box::new(stored)),
            Lookup::NotFound => Patched::NotFound,
            Lookup::Forbidden => Patched::Forbidden,
        })
    }

    /// The pods `selector` matches.
    pub async fn rollout_pods(&self, selector: &str) -> Result<Lookup<Vec<RolloutPod>>> {
        let namespace = self.namespace;
        let listed = self
            .api::<Pod>()
            .list(&ListParams::default().labels(selector).limit(500))
            .await;
        let lookup = self.cluster.lookup(listed, || {
            format!("listing the pods {selector} in {namespace}")
        })?;
        Ok(match lookup {
            Lookup::Found(list) => Lookup::Found(list.items.into_iter().map(rollout_pod).collect()),
            Lookup::NotFound => Lookup::Found(Vec::new()),
            Lookup::Forbidden => Lookup::Forbidden,
        })
    }

    /// The workload, listed then watched from the list's resourceVersion, by name.
    pub fn follow_workload(
        &self,
        kind: WorkloadKind,
        name: &str,
    ) -> BoxStream<'static, Change<Workload>> {
        let config = watch_config().fields(&format!("metadata.name={name}"));
        match kind {
            WorkloadKind::Deployment => {
                follow(self.api::<Deployment>(), config, Workload::Deployment)
            }
            WorkloadKind::StatefulSet => {
                follow(self.api::<StatefulSet>(), config, Workload::StatefulSet)
            }
            WorkloadKind::DaemonSet => follow(self.api::<DaemonSet>(), config, Workload::DaemonSet),
        }
    }

    /// The pods `selector` matches, listed then watched.
    pub fn follow_pods(&self, selector: &str) -> BoxStream<'static, Change<RolloutPod>> {
        let config = watch_config().labels(selector);
        follow(self.api::<Pod>(), config, rollout_pod)
    }

    /// The last `lines` lines of the previous run of `container` in pod `name`.
    pub async fn previous_log(
        &self,
        name: &str,
        container: &str,
        lines: i64,
    ) -> Result<Lookup<String>> {
        let namespace = self.namespace;
        let params = LogParams {
            container: Some(container.to_string()),
            previous: true,
            tail_lines: Some(lines),
            ..LogParams::default()
        };
        let answer = self.api::<Pod>().logs(name, &params).await;
        self.cluster.lookup(answer, || {
            format!("reading the log of pod {namespace}/{name}")
        })
    }
}

/// `{"spec":{"template":{"spec":{"containers":[{"name":..,"image":..}],"initContainers":[..]}}}}`
fn image_patch(images: &[(String, String, bool)]) -> Value {
    let list = |init: bool| -> Vec<Value> {
        images
            .iter()
            .filter(|(_, _, is_init)| *is_init == init)
            .map(|(name, image, _)| json!({"name": name, "image": image}))
            .collect()
    };
    let mut spec = serde_json::Map::new();
    for (key, init) in [("initContainers", true), ("containers", false)] {
        let containers = list(init);
        if !containers.is_empty() {
            spec.insert(key.to_string(), Value::Array(containers));
        }
    }
    json!({"spec": {"template": {"spec": spec}}})
}

fn rollout_pod(pod: Pod) -> RolloutPod {
    let status = pod.status.clone().unwrap_or_default();
    let ready = status
        .conditions
        .iter()
        .flatten()
        .any(|condition| condition.type_ == "Ready" && condition.status == "True");
    let crashing = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .filter(|container| {
            container
                .state
                .as_ref()
                .and_then(|state| state.waiting.as_ref())
                .and_then(|waiting| waiting.reason.as_deref())
                == Some("CrashLoopBackOff")
        })
        .map(|container| {
            let ended = container
                .last_state
                .as_ref()
                .and_then(|state| state.terminated.as_ref());
            Crash {
                container: container.name.clone(),
                restarts: container.restart_count,
                reason: ended
                    .and_then(|ended| ended.reason.clone())
                    .unwrap_or_else(|| "Error".to_string()),
                exit_code: ended.map_or(0, |ended| ended.exit_code),
            }
        })
        .collect();
    RolloutPod {
        facts: PodFacts::of(pod),
        ready,
        crashing,
    }
}

/// Whether a refused patch was refused by admission or validation rather than RBAC: they answer
/// 400, 422 or 403 in their own words, where RBAC's 403 says `User "..." cannot patch resource`.
fn refused_by_admission(code: u16, message: &str) -> bool {
    match code {
        400 | 422 => true,
        403 => !message.contains(" cannot patch resource "),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rbacs_refusal_is_told_from_admissions() {
        let rbac = r#"deployments.apps "web" is forbidden: User "system:serviceaccount:default:dev" cannot patch resource "deployments" in API group "apps" in the namespace "default""#;
        assert!(!refused_by_admission(403, rbac));
        let policy = "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'allowed-registries' with binding 'b' denied request: failed expression: x";
        assert!(refused_by_admission(403, policy));
        assert!(refused_by_admission(
            400,
            "admission webhook \"validate.kyverno.svc-fail\" denied the request: "
        ));
        assert!(refused_by_admission(
            422,
            "Deployment.apps \"web\" is invalid"
        ));
        assert!(!refused_by_admission(404, "not found"));
        assert!(!refused_by_admission(500, "etcd"));
    }

    #[test]
    fn the_patch_names_containers_and_init_containers_by_name_and_nothing_else() {
        let patch = image_patch(&[
            ("app".into(), "r/app:1@sha256:ab".into(), false),
            ("setup".into(), "r/app:1@sha256:ab".into(), true),
        ]);
        assert_eq!(
            patch,
            json!({"spec": {"template": {"spec": {
                "initContainers": [{"name": "setup", "image": "r/app:1@sha256:ab"}],
                "containers": [{"name": "app", "image": "r/app:1@sha256:ab"}],
            }}}})
        );
        let only = image_patch(&[("app".into(), "x".into(), false)]);
        assert!(only["spec"]["template"]["spec"]["initContainers"].is_null());
    }
}
