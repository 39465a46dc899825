//! Which images the cluster's workloads name: pods (with the digests their nodes resolved) and
//! the pod templates of Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs,
//! in every namespace, listed page by page. A list RBAC forbids is said, naming the permission.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kube::api::{Api, ListParams};
use serde::de::DeserializeOwned;

use super::Cluster;
use crate::error::{Error, ExitCode, Result};

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
        let mut uses = Vec::new();
        let kinds: [(&str, Listing); 7] = [
            ("pods", list_pods),
            ("deployments.apps", list_deployments),
            ("statefulsets.apps", list_statefulsets),
            ("daemonsets.apps", list_daemonsets),
            ("replicasets.apps", list_replicasets),
            ("jobs.batch", list_jobs),
            ("cronjobs.batch", list_cronjobs),
        ];
        for (resource, list) in kinds {
            match list(self).await {
                Ok(found) => uses.extend(found),
                Err(kube::Error::Api(status)) if status.is_forbidden() || status.code == 403 => {
                    return Ok(ImageUses::Forbidden {
                        resource: resource.to_string(),
                        message: status.message.clone(),
                    });
                }
                Err(err) => {
                    return Err(
                        self.request_error(format!("listing {resource} in all namespaces"), err)
                    );
                }
            }
        }
        Ok(ImageUses::Listed(uses))
    }
}

type Listing =
    for<'a> fn(&'a Cluster) -> futures_util::future::BoxFuture<'a, kube::Result<Vec<ImageUse>>>;

/// Every object of one kind in all namespaces, page by page.
async fn list_all<K>(cluster: &Cluster) -> kube::Result<Vec<K>>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::all(cluster.client.clone());
    let mut objects = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut params = ListParams::default().limit(PAGE_SIZE);
        if let Some(token) = &token {
            params = params.continue_token(token);
        }
        let page = api.list(&params).await?;
        token = page.metadata.continue_.clone().filter(|t| !t.is_empty());
        objects.extend(page.items);
        if token.is_none() {
            break;
        }
    }
    Ok(objects)
}

fn meta_of(meta: &kube::api::ObjectMeta) -> (String, String) {
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
    meta: &kube::api::ObjectMeta,
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

fn list_pods(
    cluster: &Cluster,
) -> futures_util::future::BoxFuture<'_, kube::Result<Vec<ImageUse>>> {
    Box::pin(async move {
        let pods: Vec<Pod> = list_all(cluster).await?;
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
                uses_of("Pod", &pod.metadata, images, node)
            })
            .collect())
    })
}

macro_rules! template_lister {
    ($fn_name:ident, $kind:ty, $label:literal, $template:expr) => {
        fn $fn_name(
            cluster: &Cluster,
        ) -> futures_util::future::BoxFuture<'_, kube::Result<Vec<ImageUse>>> {
            Box::pin(async move {
                let objects: Vec<$kind> = list_all(cluster).await?;
                let template: fn(&$kind) -> Option<&PodSpec> = $template;
                Ok(objects
                    .iter()
                    .flat_map(|object| {
                        let images = template(object).map(spec_images).unwrap_or_default();
                        uses_of($label, &object.metadata, images, None)
                    })
                    .collect())
            })
        }
    };
}

template_lister!(list_deployments, Deployment, "Deployment", |o| o
    .spec
    .as_ref()
    .and_then(|s| s.template.spec.as_ref()));
template_lister!(list_statefulsets, StatefulSet, "StatefulSet", |o| o
    .spec
    .as_ref()
    .and_then(|s| s.template.spec.as_ref()));
template_lister!(list_daemonsets, DaemonSet, "DaemonSet", |o| o
    .spec
    .as_ref()
    .and_then(|s| s.template.spec.as_ref()));
template_lister!(list_replicasets, ReplicaSet, "ReplicaSet", |o| o
    .spec
    .as_ref()
    .and_then(|s| s.template.as_ref())
    .and_then(|t| t.spec.as_ref()));
template_lister!(list_jobs, Job, "Job", |o| o
    .spec
    .as_ref()
    .and_then(|s| s.template.spec.as_ref()));
template_lister!(list_cronjobs, CronJob, "CronJob", |o| o
    .spec
    .as_ref()
    .and_then(|s| s.job_template.spec.as_ref())
    .and_then(|j| j.template.spec.as_ref()));

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
