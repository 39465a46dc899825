//! Which images the cluster's workloads name: pods (with the digests their nodes resolved) and
//! the pod templates of Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs,
//! in every namespace, listed page by page. A list RBAC forbids is said, naming the permission.

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::Resource as _;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams};
use serde::de::DeserializeOwned;

use super::Cluster;
use crate::plumbing::error::{Error, ExitCode, Result};

/// Objects asked for per page.
const PAGE_SIZE: u32 = 500;
/// Pages followed per kind: 500 x 400 objects is more than any local cluster holds.
const MAX_PAGES: usize = 400;

/// One image named by one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageUse {
    /// `Pod`, `Deployment`, `StatefulSet`, `DaemonSet`, `ReplicaSet`, `Job`, `CronJob`.
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    /// As the object writes it (`kind-registry:5000/app:dev`), or a pod's resolved `imageID`.
    pub image: String,
    /// The node a pod runs on.
    pub node: Option<String>,
}

impl ImageUse {
    /// `Deployment/default/app`: how `-o json`'s `inUseBy` names it.
    pub fn user(&self) -> String {
        format!("{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// What reading the workloads gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageUses {
    Listed(Vec<ImageUse>),
    /// RBAC forbids listing this resource (`pods`, `deployments.apps`, ...): the server's words.
    Forbidden {
        resource: String,
        message: String,
    },
}

impl Cluster {
    /// Every image every pod and workload template names, in all namespaces.
    pub async fn image_uses(&self) -> Result<ImageUses> {
        let listed = async {
            let mut uses = self.pod_uses().await?;
            uses.extend(self.template_uses::<Deployment>().await?);
            uses.extend(self.template_uses::<StatefulSet>().await?);
            uses.extend(self.template_uses::<DaemonSet>().await?);
            uses.extend(self.template_uses::<ReplicaSet>().await?);
            uses.extend(self.template_uses::<Job>().await?);
            uses.extend(self.template_uses::<CronJob>().await?);
            Ok(uses)
        };
        match listed.await {
            Ok(uses) => Ok(ImageUses::Listed(uses)),
            Err(ListFailure {
                resource,
                error: kube::Error::Api(status),
            }) if status.is_forbidden() || status.code == 403 => Ok(ImageUses::Forbidden {
                resource,
                message: status.message.clone(),
            }),
            Err(ListFailure { resource, error }) => {
                Err(self.request_error(format!("listing {resource} in all namespaces"), error))
            }
        }
    }

    /// Every pod's images, with the digests their nodes resolved.
    async fn pod_uses(&self) -> Result<Vec<ImageUse>, ListFailure> {
        let pods: Vec<Pod> = list_all(self).await?;
        Ok(pods
            .iter()
            .flat_map(|pod| {
                let spec = pod.spec.as_ref();
                let mut images = spec.map(spec_images).unwrap_or_default();
                // What the node resolved the name to: the digest a running pod holds on to,
                // whatever its tag names since.
                if let Some(status) = &pod.status {
                    let statuses = status
                        .container_statuses
                        .iter()
                        .flatten()
                        .chain(status.init_container_statuses.iter().flatten());
                    images.extend(statuses.map(|s| s.image_id.clone()));
                }
                let node = spec.and_then(|s| s.node_name.clone());
                uses_of(Pod::KIND, &pod.metadata, images, node)
            })
            .collect())
    }

    /// The images of every `K`'s pod template.
    async fn template_uses<K: Templated>(&self) -> Result<Vec<ImageUse>, ListFailure> {
        let objects: Vec<K> = list_all(self).await?;
        Ok(objects
            .iter()
            .flat_map(|object| {
                let images = object.pod_spec().map(spec_images).unwrap_or_default();
                uses_of(K::KIND, object.metadata(), images, None)
            })
            .collect())
    }
}

/// A listing that failed: the resource (`pods`, `deployments.apps`) and why.
struct ListFailure {
    resource: String,
    error: kube::Error,
}

/// A namespaced kind we list, as the API names it.
trait Listed:
    k8s_openapi::Resource<Scope = NamespaceResourceScope>
    + k8s_openapi::Metadata<Ty = ObjectMeta>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
{
    /// `pods`, `deployments.apps`: the resource RBAC names.
    fn resource() -> String {
        match Self::GROUP {
            "" => Self::URL_PATH_SEGMENT.to_string(),
            group => format!("{}.{group}", Self::URL_PATH_SEGMENT),
        }
    }
}

impl<K> Listed for K where
    K: k8s_openapi::Resource<Scope = NamespaceResourceScope>
        + k8s_openapi::Metadata<Ty = ObjectMeta>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
{
}

/// A workload whose pod template names images.
trait Templated: Listed {
    fn pod_spec(&self) -> Option<&PodSpec>;
}

impl Templated for Deployment {
    fn pod_spec(&self) -> Option<&PodSpec> {
        self.spec.as_ref()?.template.spec.as_ref()
    }
}

impl Templated for StatefulSet {
    fn pod_spec(&self) -> Option<&PodSpec> {
        self.spec.as_ref()?.template.spec.as_ref()
    }
}

impl Templated for DaemonSet {
    fn pod_spec(&self) -> Option<&PodSpec> {
        self.spec.as_ref()?.template.spec.as_ref()
    }
}

impl Templated for ReplicaSet {
    fn pod_spec(&self) -> Option<&PodSpec> {
        self.spec.as_ref()?.template.as_ref()?.spec.as_ref()
    }
}

impl Templated for Job {
    fn pod_spec(&self) -> Option<&PodSpec> {
        self.spec.as_ref()?.template.spec.as_ref()
    }
}

impl Templated for CronJob {
    fn pod_spec(&self) -> Option<&PodSpec> {
        self.spec
            .as_ref()?
            .job_template
            .spec
            .as_ref()?
            .template
            .spec
            .as_ref()
    }
}

/// Every object of one kind in all namespaces, page by page.
async fn list_all<K: Listed>(cluster: &Cluster) -> Result<Vec<K>, ListFailure> {
    let api: Api<K> = Api::all(cluster.client.clone());
    let mut objects = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut params = ListParams::default().limit(PAGE_SIZE);
        if let Some(token) = &token {
            params = params.continue_token(token);
        }
        let page = api.list(&params).await.map_err(|error| ListFailure {
            resource: K::resource(),
            error,
        })?;
        token = page.metadata.continue_.clone().filter(|t| !t.is_empty());
        objects.extend(page.items);
        if token.is_none() {
            break;
        }
    }
    Ok(objects)
}

fn meta_of(meta: &ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// The images of a pod spec: containers, init containers and ephemeral containers.
fn spec_images(spec: &PodSpec) -> Vec<String> {
    let mut images: Vec<String> = spec
        .containers
        .iter()
        .filter_map(|c| c.image.clone())
        .collect();
    images.extend(
        spec.init_containers
            .iter()
            .flatten()
            .filter_map(|c| c.image.clone()),
    );
    images.extend(
        spec.ephemeral_containers
            .iter()
            .flatten()
            .filter_map(|c| c.image.clone()),
    );
    images
}

fn uses_of(
    kind: &'static str,
    meta: &ObjectMeta,
    images: Vec<String>,
    node: Option<String>,
) -> Vec<ImageUse> {
    let (namespace, name) = meta_of(meta);
    let mut images = images;
    images.sort();
    images.dedup();
    images
        .into_iter()
        .filter(|image| !image.is_empty())
        .map(|image| ImageUse {
            kind,
            namespace: namespace.clone(),
            name: name.clone(),
            image,
            node: node.clone(),
        })
        .collect()
}

/// The error for a forbidden listing: exit 3, naming the permission, and the way past it.
pub fn usage_forbidden(resource: &str, message: &str, command: &str) -> Error {
    Error::new(
        ExitCode::Cluster,
        format!(
            "{command} must know which images the cluster's workloads use, but listing {resource} in all namespaces is forbidden"
        ),
    )
    .with_source(message.to_string())
    .with_hint(format!(
        "ask for `list` on pods and on deployments, statefulsets, daemonsets, replicasets (apps) and jobs, cronjobs (batch) in all namespaces (`kubectl auth can-i list {resource} --all-namespaces`), or pass --ignore-usage to go on without knowing"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_named_as_rbac_names_it() {
        assert_eq!(Pod::resource(), "pods");
        assert_eq!(Deployment::resource(), "deployments.apps");
        assert_eq!(StatefulSet::resource(), "statefulsets.apps");
        assert_eq!(DaemonSet::resource(), "daemonsets.apps");
        assert_eq!(ReplicaSet::resource(), "replicasets.apps");
        assert_eq!(Job::resource(), "jobs.batch");
        assert_eq!(CronJob::resource(), "cronjobs.batch");
    }

    /// The images a `K` as the API serves it names, its pod template at `path`.
    fn images_of<K: Templated>(path: &[&str]) -> Vec<String> {
        let mut value = serde_json::json!({
            "containers": [{"name": "c", "image": "app:1"}],
            "initContainers": [{"name": "i", "image": "init:1"}]
        });
        for key in path.iter().rev() {
            value = serde_json::json!({ *key: value });
        }
        let object: K = serde_json::from_value(value).unwrap();
        object.pod_spec().map(spec_images).unwrap_or_default()
    }

    #[test]
    fn each_kinds_pod_template_is_read() {
        let template = ["spec", "template", "spec"];
        let want = ["app:1", "init:1"];
        assert_eq!(images_of::<Deployment>(&template), want);
        assert_eq!(images_of::<StatefulSet>(&template), want);
        assert_eq!(images_of::<DaemonSet>(&template), want);
        assert_eq!(images_of::<ReplicaSet>(&template), want);
        assert_eq!(images_of::<Job>(&template), want);
        assert_eq!(
            images_of::<CronJob>(&["spec", "jobTemplate", "spec", "template", "spec"]),
            want
        );
    }
}
