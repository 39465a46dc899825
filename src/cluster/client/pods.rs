//! A short-lived pod that pulls one image, what its kubelet said about the pull, and its removal:
//! `doctor --pod`'s check of what the nodes can pull.

use k8s_openapi::api::core::v1::{Container, Event, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, PostParams};

use futures_util::stream::BoxStream;

use super::Cluster;
use super::follow::{Change, follow, watch_config};
use crate::plumbing::error::{Error, ExitCode, Result};

const POD_NAME_PREFIX: &str = "kubectl-registry-doctor-";
/// The pod is deleted by us; this bounds its life should we be killed first.
const POD_DEADLINE_SECONDS: i64 = 300;

/// Container waiting reasons that mean the image could not be pulled.
pub(crate) const PULL_FAILURES: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "RegistryUnavailable",
];

/// How far the pod's pull got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullState {
    /// Not scheduled yet, or still pulling.
    Pending,
    /// The image is on the node (the container may still fail: the probe has nothing to run).
    Pulled,
    /// The kubelet could not pull: its reason and message.
    Failed { reason: String, message: String },
}

/// One pod, in the namespace of the context.
pub struct ProbePod {
    api: Api<Pod>,
    pub name: String,
    pub namespace: String,
}

/// doctor's probe pods, through `Api<Pod>` in the context's namespace.
pub struct ProbePods<'a> {
    cluster: &'a Cluster,
}

impl<'a> ProbePods<'a> {
    pub fn new(cluster: &'a Cluster) -> Self {
        Self { cluster }
    }

    /// Creates a pod that pulls `image` (`imagePullPolicy: Always`) and runs nothing of note.
    pub async fn start_probe_pod(&self, image: &str) -> Result<ProbePod> {
        let api: Api<Pod> = Api::default_namespaced(self.cluster.client.clone());
        let namespace = self.cluster.client.default_namespace().to_string();
        let pod = Pod {
            metadata: ObjectMeta {
                generate_name: Some(POD_NAME_PREFIX.to_string()),
                labels: Some(
                    [(
                        "app.kubernetes.io/managed-by".to_string(),
                        "kubectl-registry".to_string(),
                    )]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "probe".to_string(),
                    image: Some(image.to_string()),
                    image_pull_policy: Some("Always".to_string()),
                    ..Container::default()
                }],
                restart_policy: Some("Never".to_string()),
                automount_service_account_token: Some(false),
                termination_grace_period_seconds: Some(0),
                active_deadline_seconds: Some(POD_DEADLINE_SECONDS),
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        let created = api
            .create(&PostParams::default(), &pod)
            .await
            .map_err(|err| self.pod_error("creating", &namespace, err))?;
        let name = created.metadata.name.unwrap_or_default();
        Ok(ProbePod {
            api,
            name,
            namespace,
        })
    }

    /// Where the pod's pull stands now.
    pub async fn probe_pull_state(&self, pod: &ProbePod) -> Result<PullState> {
        let current = pod
            .api
            .get(&pod.name)
            .await
            .map_err(|err| self.pod_error("reading", &pod.namespace, err))?;
        Ok(pull_state(&current))
    }

    /// How the pod's pull goes, listed then watched.
    pub fn follow_probe_pod(&self, pod: &ProbePod) -> BoxStream<'static, Change<PullState>> {
        let config = watch_config().fields(&format!("metadata.name={}", pod.name));
        follow(pod.api.clone(), config, |pod| pull_state(&pod))
    }

    /// The kubelet's events about the pod, oldest first, as `Reason: message`.
    pub async fn probe_events(&self, pod: &ProbePod) -> Result<Vec<String>> {
        let api: Api<Event> = Api::namespaced(self.cluster.client.clone(), &pod.namespace);
        let params = ListParams::default().fields(&format!(
            "involvedObject.kind=Pod,involvedObject.name={}",
            pod.name
        ));
        let events = api
            .list(&params)
            .await
            .map_err(|err| self.pod_error("listing the events of", &pod.namespace, err))?;
        Ok(events
            .items
            .into_iter()
            .map(|event| {
                let said = format!(
                    "{}: {}",
                    event.reason.unwrap_or_default(),
                    event.message.unwrap_or_default().trim()
                );
                // Text from the cluster: no control character reaches the terminal as it is.
                said.chars()
                    .flat_map(|c| {
                        let escaped: Vec<char> = if c.is_control() {
                            c.escape_default().collect()
                        } else {
                            vec![c]
                        };
                        escaped
                    })
                    .collect()
            })
            .collect())
    }

    /// Deletes the pod at once.
    pub async fn remove_probe_pod(&self, pod: &ProbePod) -> Result<()> {
        match pod
            .api
            .delete(&pod.name, &DeleteParams::default().grace_period(0))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
            Err(err) => Err(self.pod_error("deleting", &pod.namespace, err)),
        }
    }

    fn pod_error(&self, doing: &str, namespace: &str, err: kube::Error) -> Error {
        match err {
            kube::Error::Api(status) if status.is_forbidden() => Error::new(
                ExitCode::Cluster,
                format!(
                    "{doing} a probe pod in namespace {namespace}: not allowed for the credentials of {}",
                    self.cluster.target.describe()
                ),
            )
            .with_source(status.message.clone())
            .with_hint(format!(
                "--pod needs create, get and delete on pods and list on events in {namespace}; run doctor without --pod, or in a namespace where you may"
            )),
            other => self.cluster.request_error(format!("{doing} a probe pod in namespace {namespace}"), other),
        }
    }
}

/// Reads the container's state: a pull failure, a pull done, or still waiting.
fn pull_state(pod: &Pod) -> PullState {
    let Some(container) = pod
        .status
        .as_ref()
        .and_then(|status| status.container_statuses.as_ref())
        .and_then(|statuses| statuses.first())
    else {
        return PullState::Pending;
    };
    let Some(state) = &container.state else {
        return PullState::Pending;
    };
    if state.running.is_some() || state.terminated.is_some() {
        return PullState::Pulled;
    }
    let Some(waiting) = &state.waiting else {
        return PullState::Pending;
    };
    let reason = waiting.reason.clone().unwrap_or_default();
    if PULL_FAILURES.contains(&reason.as_str()) {
        return PullState::Failed {
            reason,
            message: waiting.message.clone().unwrap_or_default(),
        };
    }
    // Waiting for any other reason after the image is there (no command to run, ...).
    if matches!(
        reason.as_str(),
        "ContainerCreating" | "PodInitializing" | ""
    ) {
        PullState::Pending
    } else {
        PullState::Pulled
    }
}
