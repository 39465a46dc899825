//! The registry's Service as the tunnel reads it, through kube's `Api<K>`: the Service resolved
//! to one ready pod and the port its registry listens on, and the service CA a cluster
//! publishes for the certificates of its Services (OpenShift).

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service, ServicePort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, ListParams};

use crate::cluster::client::{Cluster, Lookup};
use crate::cluster::hosting::ServiceRef;
use crate::plumbing::error::{Error, ExitCode, Result};

/// Pods listed per request when looking for a Service's ready pod.
const POD_PAGE: u32 = 100;

/// One ready pod behind a Service, and the container port the Service sends to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Backend {
    pub(super) namespace: String,
    pub(super) pod: String,
    pub(super) port: u16,
}

/// The Services a tunnel goes to, read through `Api<Service>`, `Api<Pod>` and `Api<ConfigMap>`.
pub(super) struct Services<'a> {
    cluster: &'a Cluster,
}

impl<'a> Services<'a> {
    pub(super) fn new(cluster: &'a Cluster) -> Self {
        Self { cluster }
    }

    /// A ready pod of `service` (by its selector) and the target port of the port named.
    pub(super) async fn backend(&self, service: &ServiceRef) -> Result<Backend> {
        let services: Api<Service> =
            Api::namespaced(self.cluster.client.clone(), &service.namespace);
        let what = || format!("reading {service}");
        let found = match self
            .cluster
            .lookup(services.get(&service.name).await, what)?
        {
            Lookup::Found(found) => found,
            Lookup::NotFound => {
                return Err(Error::new(
                    ExitCode::Cluster,
                    format!("{service} does not exist, so there is no registry pod to tunnel to"),
                )
                .with_hint(
                    "check hostFromClusterNetwork in the cluster's advertisement, or name a registry reachable from here with --registry HOST[:PORT]",
                ));
            }
            Lookup::Forbidden => return Err(forbidden("get", "services", &service.namespace)),
        };
        let spec = found.spec.unwrap_or_default();
        let selector = spec.selector.unwrap_or_default();
        let selector_text = selector
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(",");
        let port = pick_port(spec.ports.as_deref().unwrap_or_default(), service)?;
        if selector.is_empty() {
            return Err(no_ready_pod(service, "it has no selector"));
        }
        let pods: Api<Pod> = Api::namespaced(self.cluster.client.clone(), &service.namespace);
        let params = ListParams::default().labels(&selector_text).limit(POD_PAGE);
        let listed = match self.cluster.lookup(pods.list(&params).await, || {
            format!("listing the pods of {service}")
        })? {
            Lookup::Found(list) => list.items,
            Lookup::NotFound => Vec::new(),
            Lookup::Forbidden => return Err(forbidden("list", "pods", &service.namespace)),
        };
        let Some(pod) = listed.into_iter().find(is_ready) else {
            return Err(no_ready_pod(
                service,
                &format!("no pod matching its selector {selector_text} is ready"),
            ));
        };
        let target = target_port(&pod, port).ok_or_else(|| {
            no_ready_pod(
                service,
                "its target port names no port of the pod's containers",
            )
        })?;
        Ok(Backend {
            namespace: service.namespace.clone(),
            pod: pod.metadata.name.unwrap_or_default(),
            port: target,
        })
    }
}

/// The ConfigMap OpenShift's service CA operator puts in every namespace, and its key: the CA
/// that signs the serving certificates of Services (`service.beta.openshift.io/serving-cert-*`).
const SERVICE_CA_CONFIGMAP: &str = "openshift-service-ca.crt";
const SERVICE_CA_KEY: &str = "service-ca.crt";

impl Services<'_> {
    /// The cluster's service CA (PEM) as published in `namespace`, when it publishes one; a
    /// ConfigMap we may not read, or cannot, is the same as none (said with -v).
    pub(super) async fn service_ca(&self, namespace: &str) -> Option<String> {
        let api: Api<ConfigMap> = Api::namespaced(self.cluster.client.clone(), namespace);
        let what = || format!("reading ConfigMap {namespace}/{SERVICE_CA_CONFIGMAP}");
        let said = match self
            .cluster
            .lookup(api.get(SERVICE_CA_CONFIGMAP).await, what)
        {
            Ok(Lookup::Found(configmap)) => {
                let pem = configmap
                    .data
                    .and_then(|mut data| data.remove(SERVICE_CA_KEY))
                    .filter(|pem| !pem.trim().is_empty());
                if pem.is_some() {
                    return pem;
                }
                format!("it has no {SERVICE_CA_KEY}")
            }
            Ok(Lookup::NotFound) => "the cluster publishes none there".to_string(),
            Ok(Lookup::Forbidden) => "we may not read it".to_string(),
            Err(error) => error.message().to_string(),
        };
        self.cluster.printer.debug(&format!(
            "no service CA from ConfigMap {namespace}/{SERVICE_CA_CONFIGMAP}: {said}"
        ));
        None
    }
}

/// The Service port named, else its first.
fn pick_port<'a>(ports: &'a [ServicePort], service: &ServiceRef) -> Result<&'a ServicePort> {
    let chosen = match service.port {
        Some(wanted) => ports.iter().find(|port| port.port == i32::from(wanted)),
        None => ports.first(),
    };
    chosen.ok_or_else(|| {
        let offered: Vec<String> = ports.iter().map(|port| port.port.to_string()).collect();
        Error::new(
            ExitCode::Cluster,
            format!(
                "{service} has no such port (it has: {})",
                if offered.is_empty() {
                    "none".to_string()
                } else {
                    offered.join(", ")
                }
            ),
        )
        .with_hint("fix the port of hostFromClusterNetwork in the cluster's advertisement")
    })
}

/// Running, and its Ready condition true; not being deleted.
fn is_ready(pod: &Pod) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let Some(status) = &pod.status else {
        return false;
    };
    status.phase.as_deref() == Some("Running")
        && status
            .conditions
            .as_deref()
            .unwrap_or_default()
            .iter()
            .any(|condition| condition.type_ == "Ready" && condition.status == "True")
}

/// The container port a Service port sends to: its `targetPort` as a number, or the container
/// port of that name; no `targetPort`: the Service port itself.
fn target_port(pod: &Pod, port: &ServicePort) -> Option<u16> {
    let number = match &port.target_port {
        None => port.port,
        Some(IntOrString::Int(number)) => *number,
        Some(IntOrString::String(name)) => {
            pod.spec
                .as_ref()?
                .containers
                .iter()
                .flat_map(|container| container.ports.as_deref().unwrap_or_default())
                .find(|candidate| candidate.name.as_deref() == Some(name.as_str()))?
                .container_port
        }
    };
    u16::try_from(number).ok().filter(|port| *port != 0)
}

fn no_ready_pod(service: &ServiceRef, why: &str) -> Error {
    Error::new(
        ExitCode::Cluster,
        format!("no registry pod to tunnel to behind {service}: {why}"),
    )
    .with_hint(format!(
        "`kubectl -n {} get pods` shows why its pods are not ready; or name a registry reachable from here with --registry HOST[:PORT]",
        service.namespace
    ))
}

/// RBAC refused what the tunnel needs: exit 3, the verb and resource, and the way around it.
pub(super) fn forbidden(verb: &str, resource: &str, namespace: &str) -> Error {
    Error::new(
        ExitCode::Cluster,
        format!(
            "the cluster does not allow us to {verb} {resource} in namespace {namespace}, which the tunnel to the registry through the API server needs"
        ),
    )
    .with_hint(format!(
        "ask for RBAC permission to {verb} {resource} in {namespace} (`kubectl auth can-i {verb} {resource} -n {namespace}` checks), or push to a registry reachable from here with --registry HOST[:PORT]"
    ))
}
