//! One pod as `why` reads it: its node, each container's image, pull policy and state (the
//! kubelet's events about it are `events`'), whether it is deleted and what keeps it; a
//! Deployment's pods.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use super::{Cluster, Lookup};
use crate::plumbing::error::Result;

/// A container's state, as the kubelet last reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContainerState {
    /// Running: its image was there.
    Running,
    /// Ran and ended (a finished run, or stopped by the pod's deletion): the kubelet's reason
    /// (`Completed`, `Error`, `OOMKilled`) and the exit code.
    Ended { reason: String, exit_code: i32 },
    /// Waiting: the kubelet's reason (`ErrImagePull`, `ImagePullBackOff`...) and message.
    Waiting { reason: String, message: String },
    /// No status yet (not scheduled, or just created).
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerFacts {
    pub name: String,
    pub image: String,
    pub pull_policy: Option<String>,
    pub state: ContainerState,
    /// The kubelet's `ready` for it (its readiness probe passes, or it has none and runs).
    pub ready: bool,
}

/// What `why` needs of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodFacts {
    pub name: String,
    pub namespace: String,
    pub node: Option<String>,
    /// Init containers first, then the containers, as the kubelet starts them.
    pub containers: Vec<ContainerFacts>,
    pub created: Option<String>,
    /// Not scheduled yet: the scheduler's `PodScheduled` condition, `Unschedulable: 0/3 nodes
    /// are available: 3 Insufficient cpu.` (its reason, and its message when it has one).
    pub unscheduled: Option<String>,
    /// Deleted (`deletionTimestamp` set) and still there: stopping, or kept by finalizers.
    pub deleted: bool,
    /// The finalizers that keep it, when deleted; empty when not.
    pub held_by: Vec<String>,
}

impl PodFacts {
    pub(in crate::cluster) fn of(pod: Pod) -> Self {
        let deleted = pod.metadata.deletion_timestamp.is_some();
        let held_by = match deleted {
            true => pod.metadata.finalizers.clone().unwrap_or_default(),
            false => Vec::new(),
        };
        let spec = pod.spec.unwrap_or_default();
        let status = pod.status.unwrap_or_default();
        let unscheduled = status
            .conditions
            .iter()
            .flatten()
            .find(|condition| condition.type_ == "PodScheduled" && condition.status == "False")
            .map(|condition| {
                let reason = condition.reason.as_deref().unwrap_or("not scheduled");
                match condition.message.as_deref().map(str::trim) {
                    Some(message) if !message.is_empty() => format!("{reason}: {message}"),
                    _ => reason.to_string(),
                }
            });
        let statuses: Vec<_> = status
            .init_container_statuses
            .unwrap_or_default()
            .into_iter()
            .chain(status.container_statuses.unwrap_or_default())
            .collect();
        let containers = spec
            .init_containers
            .unwrap_or_default()
            .into_iter()
            .chain(spec.containers)
            .map(|container| {
                let status = statuses.iter().find(|status| status.name == container.name);
                let ready = status.is_some_and(|status| status.ready);
                let state = status.and_then(|status| status.state.as_ref()).map_or(
                    ContainerState::Unknown,
                    |state| match (&state.running, &state.terminated, &state.waiting) {
                        (Some(_), _, _) => ContainerState::Running,
                        (_, Some(ended), _) => ContainerState::Ended {
                            reason: ended.reason.clone().unwrap_or_else(|| "Error".into()),
                            exit_code: ended.exit_code,
                        },
                        (_, _, Some(waiting)) => ContainerState::Waiting {
                            reason: waiting.reason.clone().unwrap_or_default(),
                            message: waiting.message.clone().unwrap_or_default(),
                        },
                        _ => ContainerState::Unknown,
                    },
                );
                ContainerFacts {
                    name: container.name,
                    image: container.image.unwrap_or_default(),
                    pull_policy: container.image_pull_policy,
                    state,
                    ready,
                }
            })
            .collect();
        Self {
            name: pod.metadata.name.unwrap_or_default(),
            namespace: pod.metadata.namespace.unwrap_or_default(),
            node: spec.node_name,
            containers,
            created: pod
                .metadata
                .creation_timestamp
                .map(|time| time.0.to_string()),
            unscheduled,
            deleted,
            held_by,
        }
    }

    /// True when some container waits on its image (ErrImagePull, ImagePullBackOff...).
    pub fn failing(&self) -> bool {
        self.containers.iter().any(|container| {
            matches!(&container.state, ContainerState::Waiting { reason, .. }
                if super::PULL_FAILURES.contains(&reason.as_str()))
        })
    }
}

impl Cluster {
    /// Pod `name` in `namespace`.
    pub async fn pod(&self, namespace: &str, name: &str) -> Result<Lookup<PodFacts>> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let lookup = self.lookup(api.get(name).await, || {
            format!("reading pod {namespace}/{name}")
        })?;
        Ok(match lookup {
            Lookup::Found(pod) => Lookup::Found(PodFacts::of(pod)),
            Lookup::NotFound => Lookup::NotFound,
            Lookup::Forbidden => Lookup::Forbidden,
        })
    }

    /// Deployment `name`'s pods, newest first, and why its controller could not create more.
    pub async fn deployment_pods(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Lookup<DeploymentPods>> {
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), namespace);
        let deployment = match self.lookup(api.get(name).await, || {
            format!("reading deployment {namespace}/{name}")
        })? {
            Lookup::Found(deployment) => deployment,
            Lookup::NotFound => return Ok(Lookup::NotFound),
            Lookup::Forbidden => return Ok(Lookup::Forbidden),
        };
        let replica_failure = replica_failure(&deployment);
        let selector = deployment
            .spec
            .and_then(|spec| spec.selector.match_labels)
            .unwrap_or_default()
            .into_iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(",");
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let listed = pods
            .list(&ListParams::default().labels(&selector).limit(500))
            .await;
        let list = match self.lookup(listed, || {
            format!("listing the pods of deployment {namespace}/{name}")
        })? {
            Lookup::Found(list) => list.items,
            Lookup::NotFound => Vec::new(),
            Lookup::Forbidden => return Ok(Lookup::Forbidden),
        };
        let mut pods: Vec<PodFacts> = list.into_iter().map(PodFacts::of).collect();
        // RFC 3339 times in UTC sort as text.
        pods.sort_by(|a, b| b.created.cmp(&a.created));
        Ok(Lookup::Found(DeploymentPods {
            pods,
            replica_failure,
        }))
    }
}

/// A Deployment's pods, and why its controller could not create more.
#[derive(Debug, Clone)]
pub struct DeploymentPods {
    /// Newest first.
    pub pods: Vec<PodFacts>,
    /// Its `ReplicaFailure` condition's message: see [`replica_failure`].
    pub replica_failure: Option<String>,
}

/// A Deployment's `ReplicaFailure` condition, when true: its controller could not create pods
/// (`FailedCreate`: admission refused them, a quota is used up), in the API server's words as
/// the ReplicaSet controller got them.
pub fn replica_failure(deployment: &Deployment) -> Option<String> {
    deployment
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "ReplicaFailure" && c.status == "True")
        .map(|c| {
            c.message
                .clone()
                .unwrap_or_else(|| c.reason.clone().unwrap_or_default())
        })
}
