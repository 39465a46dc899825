//! A workload's rollout as `kubectl set image` and `kubectl rollout status` read and write it:
//! its pod template's containers, a strategic-merge patch of their images (server-side dry run
//! first when asked), its status, the pods its selector matches, a container's previous log, and
//! whether these credentials may do each of those (SelfSubjectAccessReview).

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, LogParams, Patch, PatchParams,
    PostParams,
};
use serde_json::{Value, json};

use super::pod_status::PodFacts;
use super::{Cluster, Lookup};
use crate::error::Result;

/// The kinds a rollout is waited for, as `kubectl rollout status` knows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum WorkloadKind {
    Deployment,
    StatefulSet,
    DaemonSet,
}

impl WorkloadKind {
    /// `Deployment`
    pub fn kind(self) -> &'static str {
        match self {
            Self::Deployment => "Deployment",
            Self::StatefulSet => "StatefulSet",
            Self::DaemonSet => "DaemonSet",
        }
    }

    /// `deployments`
    pub fn plural(self) -> &'static str {
        match self {
            Self::Deployment => "deployments",
            Self::StatefulSet => "statefulsets",
            Self::DaemonSet => "daemonsets",
        }
    }

    /// `deployment` (as kubectl prints `deployment.apps/NAME`).
    pub fn singular(self) -> &'static str {
        match self {
            Self::Deployment => "deployment",
            Self::StatefulSet => "statefulset",
            Self::DaemonSet => "daemonset",
        }
    }

    fn resource(self) -> ApiResource {
        let gvk = GroupVersionKind::gvk("apps", "v1", self.kind());
        ApiResource::from_gvk_with_plural(&gvk, self.plural())
    }
}

/// One container of a pod template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateContainer {
    pub name: String,
    pub image: String,
    /// An init container (`spec.template.spec.initContainers`).
    pub init: bool,
}

/// A workload as read: its template's containers (init first), its label selector and the
/// fields its kind's rollout status reads, as the API server wrote them.
#[derive(Debug, Clone)]
pub struct WorkloadFacts {
    pub containers: Vec<TemplateContainer>,
    /// `app=web,tier=front`, from `spec.selector.matchLabels`.
    pub selector: String,
    pub object: Value,
}

/// A pod of a workload while it rolls out: why's view of it, and whether it is Ready.
#[derive(Debug, Clone)]
pub struct RolloutPod {
    pub facts: PodFacts,
    pub ready: bool,
    /// Containers in CrashLoopBackOff: name, restarts, and how the last run ended.
    pub crashing: Vec<Crash>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crash {
    pub container: String,
    pub restarts: i32,
    /// `OOMKilled`, `Error`, `Completed`...
    pub reason: String,
    pub exit_code: i32,
}

impl Cluster {
    fn workload_api(&self, kind: WorkloadKind, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &kind.resource())
    }

    /// The workload, or why it cannot be read.
    pub async fn workload(
        &self,
        kind: WorkloadKind,
        namespace: &str,
        name: &str,
    ) -> Result<Lookup<WorkloadFacts>> {
        let api = self.workload_api(kind, namespace);
        let lookup = self.lookup(api.get(name).await, || {
            format!("reading {} {namespace}/{name}", kind.singular())
        })?;
        Ok(match lookup {
            Lookup::Found(object) => Lookup::Found(workload_facts(object.data)),
            Lookup::NotFound => Lookup::NotFound,
            Lookup::Forbidden => Lookup::Forbidden,
        })
    }

    /// Sets each `(container, image, init)` as `kubectl set image` does: a strategic-merge patch
    /// of the pod template's containers by name, nothing else. `dry_run` asks the server to
    /// check (admission, RBAC) and store nothing.
    pub async fn set_images(
        &self,
        kind: WorkloadKind,
        namespace: &str,
        name: &str,
        images: &[(String, String, bool)],
        dry_run: bool,
    ) -> Result<Lookup<()>> {
        let api = self.workload_api(kind, namespace);
        let params = PatchParams {
            dry_run,
            ..PatchParams::default()
        };
        let answer = api
            .patch(name, &params, &Patch::Strategic(image_patch(images)))
            .await
            .map(|_| ());
        self.lookup(answer, || {
            format!("patching {} {namespace}/{name}", kind.singular())
        })
    }

    /// The pods `selector` matches in `namespace`.
    pub async fn rollout_pods(
        &self,
        namespace: &str,
        selector: &str,
    ) -> Result<Lookup<Vec<RolloutPod>>> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let listed = api
            .list(&ListParams::default().labels(selector).limit(500))
            .await;
        let lookup = self.lookup(listed, || {
            format!("listing the pods {selector} in {namespace}")
        })?;
        Ok(match lookup {
            Lookup::Found(list) => Lookup::Found(list.items.into_iter().map(rollout_pod).collect()),
            Lookup::NotFound => Lookup::Found(Vec::new()),
            Lookup::Forbidden => Lookup::Forbidden,
        })
    }

    /// The last `lines` lines of the previous run of `container` in pod `name`.
    pub async fn previous_log(
        &self,
        namespace: &str,
        name: &str,
        container: &str,
        lines: i64,
    ) -> Result<Lookup<String>> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let params = LogParams {
            container: Some(container.to_string()),
            previous: true,
            tail_lines: Some(lines),
            ..LogParams::default()
        };
        let answer = api.logs(name, &params).await;
        self.lookup(answer, || {
            format!("reading the log of pod {namespace}/{name}")
        })
    }

    /// Whether these credentials may `verb` `resource` (`deployments`, `pods/log`) of `group`
    /// in `namespace`: the API server's own authorizer, asked (SelfSubjectAccessReview).
    pub async fn may(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
    ) -> Result<bool> {
        let (resource, subresource) = match resource.split_once('/') {
            Some((resource, sub)) => (resource, Some(sub.to_string())),
            None => (resource, None),
        };
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(verb.to_string()),
                    group: Some(group.to_string()),
                    resource: Some(resource.to_string()),
                    subresource,
                    namespace: Some(namespace.to_string()),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let api: Api<SelfSubjectAccessReview> = Api::all(self.client.clone());
        let answer = api.create(&PostParams::default(), &review).await;
        match self.lookup(answer, || {
            format!("asking whether we may {verb} {resource}")
        })? {
            Lookup::Found(review) => Ok(review.status.is_some_and(|status| status.allowed)),
            // No authorization API, or not allowed to ask: the request itself will tell.
            Lookup::NotFound | Lookup::Forbidden => Ok(true),
        }
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

fn workload_facts(object: Value) -> WorkloadFacts {
    let template = &object["spec"]["template"]["spec"];
    let containers = [("initContainers", true), ("containers", false)]
        .into_iter()
        .flat_map(|(key, init)| {
            template[key]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |container| TemplateContainer {
                    name: text(&container["name"]),
                    image: text(&container["image"]),
                    init,
                })
        })
        .collect();
    let selector = object["spec"]["selector"]["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join(",");
    WorkloadFacts {
        containers,
        selector,
        object,
    }
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_templates_containers_are_read_init_first_with_the_selector() {
        let facts = workload_facts(json!({"spec": {
            "selector": {"matchLabels": {"app": "web", "tier": "front"}},
            "template": {"spec": {
                "initContainers": [{"name": "setup", "image": "a"}],
                "containers": [{"name": "web", "image": "b"}, {"name": "side", "image": "c"}],
            }},
        }}));
        let names: Vec<(&str, bool)> = facts
            .containers
            .iter()
            .map(|c| (c.name.as_str(), c.init))
            .collect();
        assert_eq!(names, [("setup", true), ("web", false), ("side", false)]);
        assert_eq!(facts.selector, "app=web,tier=front");
    }
}
