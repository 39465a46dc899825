//! A loopback stand-in for the Kubernetes API server: plain HTTP (or HTTPS with a test CA) on a
//! free port, std threads, serving the JSON a real one returns for discovery, the hosting
//! ConfigMap, nodes, microk8s's registry Service and OpenShift's image config; 401/403/404/409
//! as `Status` objects, and a bearer token required when asked. The hosting ConfigMap can be
//! created, updated, patched and deleted, with resourceVersion checks as a real server makes
//! them. Records what it served; stops on Drop.
//!
//! Here the builder, the running server and its record; by concern: `serve` (the wire and the
//! routing), `discovery` (the one set of discovery documents, the controllers' too), `objects`
//! (nodes, namespaces, the ConfigMap, Services), `workloads` (pods, events, workload lists),
//! `faults` (refusals as a real server words them); the port-forward is `support::portforward`,
//! the rolling workloads `support::controllers`, the other objects `support::cluster_objects`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::controllers::Controllers;

pub(crate) mod discovery;
mod faults;
mod objects;
mod serve;
mod workloads;

use discovery::*;
use faults::*;
pub(crate) use objects::StandInNode;
use objects::*;
pub(crate) use serve::tls_config;
use serve::*;
use workloads::*;

/// What the stand-in serves; build with [`ApiServer::builder`].
#[derive(Debug, Clone, Default)]
pub(crate) struct ApiServerBuilder {
    hosting_configmap: Option<BTreeMap<String, String>>,
    nodes: Vec<StandInNode>,
    microk8s_node_port: Option<i32>,
    forbidden: BTreeSet<String>,
    concurrent_writes: usize,
    kubelet: Option<Kubelet>,
    /// What the node's runtime holds, for `imagePullPolicy: Never` (by the name a pod writes).
    node_holds: Option<Holds>,
    /// The scheduler's `Unschedulable` message: pods created get no node.
    unschedulable: Option<String>,
    /// Resource -> (code, Status message) answered for every request on it.
    failing: BTreeMap<String, (u16, String)>,
    openshift: Option<OpenshiftImageConfig>,
    /// Pods and workloads listed in all namespaces: (resource, object).
    workloads: Vec<(String, Value)>,
    token: Option<String>,
    tls: Option<(PathBuf, PathBuf)>,
    /// Workloads that roll out (tests/support/controllers.rs), served ahead of the rest.
    controllers: Option<Controllers>,
    /// Objects, port-forwards and their faults (cluster_objects.rs, portforward.rs).
    pub(super) extra: super::cluster_objects::Extra,
}

/// OpenShift's `images.config.openshift.io/cluster` status.
#[derive(Debug, Clone)]
pub(crate) struct OpenshiftImageConfig {
    pub internal: String,
    pub external: Vec<String>,
}

/// What pulls a pod's image: the test's real containerd, as a node's kubelet would ask it.
/// `Err` carries the runtime's own words.
#[derive(Clone)]
pub(crate) struct Kubelet(Arc<PullFn>);

type PullFn = dyn Fn(&str) -> Result<(), String> + Send + Sync;

/// Whether the node's runtime holds an image by this name (the kubelet's image status).
#[derive(Clone)]
pub(crate) struct Holds(Arc<dyn Fn(&str) -> bool + Send + Sync>);

impl std::fmt::Debug for Holds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Holds")
    }
}

impl std::fmt::Debug for Kubelet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kubelet")
    }
}

impl ApiServerBuilder {
    /// ConfigMap `kube-public/local-registry-hosting` with this data (absent: 404).
    pub(crate) fn hosting_configmap(mut self, data: &[(&str, &str)]) -> Self {
        self.hosting_configmap = Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        self
    }

    /// The ConfigMap with one `localRegistryHosting.v1` key holding `yaml`.
    pub(crate) fn hosting_v1(self, yaml: &str) -> Self {
        self.hosting_configmap(&[("localRegistryHosting.v1", yaml)])
    }

    pub(crate) fn node(mut self, node: StandInNode) -> Self {
        self.nodes.push(node);
        self
    }

    /// microk8s's registry addon: Service `container-registry/registry` of type NodePort.
    pub(crate) fn microk8s_registry_service(mut self, node_port: i32) -> Self {
        self.microk8s_node_port = Some(node_port);
        self
    }

    /// Answer 403 Forbidden for every request on this resource (`configmaps`, `nodes`, `services`).
    pub(crate) fn forbid(mut self, resource: &str) -> Self {
        self.forbidden.insert(resource.to_string());
        self
    }

    /// Answer 403 Forbidden for this verb (`get`, `create`, `update`, `patch`, `delete`) only.
    pub(crate) fn forbid_verb(mut self, resource: &str, verb: &str) -> Self {
        self.forbidden.insert(format!("{resource}/{verb}"));
        self
    }

    /// Pods get their image from `pull` when created: their container then waits with
    /// CreateContainerError (the image is there, with nothing to run) or ErrImagePull, and the
    /// kubelet's events say so, as a real node reports it.
    pub(crate) fn kubelet(
        mut self,
        pull: impl Fn(&str) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.kubelet = Some(Kubelet(Arc::new(pull)));
        self
    }

    /// What the node's runtime holds, which the kubelet asks instead of pulling when a container's
    /// `imagePullPolicy` is `Never` (ErrImageNeverPull when it lacks the image).
    pub(crate) fn node_holds(
        mut self,
        holds: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.node_holds = Some(Holds(Arc::new(holds)));
        self
    }

    /// The scheduler places no pod: each one created stays Pending with no node, its
    /// `PodScheduled` condition `False`/`Unschedulable` with `message`, and a FailedScheduling
    /// event, as kube-scheduler writes them; no kubelet hears of it.
    pub(crate) fn unschedulable(mut self, message: &str) -> Self {
        self.unschedulable = Some(message.to_string());
        self
    }

    /// Another writer updates the hosting ConfigMap (adding a key of its own) just before each
    /// of the next `count` updates arrives, so each of them carries a stale resourceVersion.
    pub(crate) fn concurrent_writes(mut self, count: usize) -> Self {
        self.concurrent_writes = count;
        self
    }

    /// Answer every request on this resource with a Status of `code` carrying `message`
    /// (which may hold any text a broken or hostile server sends).
    pub(crate) fn fail(mut self, resource: &str, code: u16, message: &str) -> Self {
        self.failing
            .insert(resource.to_string(), (code, message.to_string()));
        self
    }

    /// Serve `config.openshift.io/v1` and its cluster-scoped `images/cluster`, as OpenShift 4 does.
    pub(crate) fn openshift(mut self, internal: &str, external: &[&str]) -> Self {
        self.openshift = Some(OpenshiftImageConfig {
            internal: internal.to_string(),
            external: external.iter().map(|h| h.to_string()).collect(),
        });
        self
    }

    /// A pod in `namespace` running `images` on `node`, its containers' `imageID` being
    /// `image_ids` (what the node resolved), listed by `GET /api/v1/pods`.
    pub(crate) fn pod(
        mut self,
        namespace: &str,
        name: &str,
        node: &str,
        images: &[&str],
        image_ids: &[&str],
    ) -> Self {
        let containers = containers_running(images);
        let statuses: Vec<Value> = images
            .iter()
            .zip(image_ids)
            .enumerate()
            .map(|(i, (image, id))| {
                json!({"name": format!("c{i}"), "image": image, "imageID": id, "ready": true,
                       "restartCount": 0, "state": {"running": {"startedAt": "2025-01-01T00:00:00Z"}}})
            })
            .collect();
        let pod = json!({
            "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}")},
            "spec": {"nodeName": node, "containers": containers},
            "status": {"phase": "Running", "containerStatuses": statuses},
        });
        self.workloads.push(("pods".to_string(), pod));
        self
    }

    /// A workload of `kind` (`Deployment`, `StatefulSet`, `DaemonSet`, `ReplicaSet`, `Job`,
    /// `CronJob`) in `namespace` whose pod template runs `images`, with `replicas` where the
    /// kind has them; listed by `GET /apis/{apps,batch}/v1/<kinds>`.
    pub(crate) fn workload(
        mut self,
        kind: &str,
        namespace: &str,
        name: &str,
        images: &[&str],
        replicas: i32,
    ) -> Self {
        let containers = containers_running(images);
        let template = json!({
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": containers, "restartPolicy": if matches!(kind, "Job" | "CronJob") { "Never" } else { "Always" }},
        });
        let selector = json!({"matchLabels": {"app": name}});
        let spec = match kind {
            "Deployment" | "ReplicaSet" => {
                json!({"replicas": replicas, "selector": selector, "template": template})
            }
            "StatefulSet" => json!({"replicas": replicas, "selector": selector,
                                    "serviceName": name, "template": template}),
            "DaemonSet" => json!({"selector": selector, "template": template}),
            "Job" => json!({"template": template}),
            "CronJob" => {
                json!({"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": template}}})
            }
            other => panic!("no such workload kind in the stand-in: {other}"),
        };
        let resource = format!("{}s", kind.to_lowercase());
        let object = json!({
            "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}")},
            "spec": spec,
        });
        self.workloads.push((resource, object));
        self
    }

    /// Serve these controllers' workloads, pods and logs (see tests/support/controllers.rs).
    pub(crate) fn controllers(mut self, controllers: &Controllers) -> Self {
        self.controllers = Some(controllers.clone());
        self
    }

    /// Answer 401 to every request without `Authorization: Bearer <token>`.
    pub(crate) fn require_token(mut self, token: &str) -> Self {
        self.token = Some(token.to_string());
        self
    }

    /// Serve HTTPS with this PEM certificate chain and key (see `registry::make_certificates`).
    pub(crate) fn tls(mut self, certificate: &Path, key: &Path) -> Self {
        self.tls = Some((certificate.to_path_buf(), key.to_path_buf()));
        self
    }

    pub(crate) fn start(self) -> ApiServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
        let port = listener.local_addr().expect("local address").port();
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let tls = self
            .tls
            .as_ref()
            .map(|(certificate, key)| tls_config(certificate, key));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stopping = Arc::new(AtomicBool::new(false));
        let store = Mutex::new(Store {
            resource_version: 1,
            hosting: self
                .hosting_configmap
                .as_ref()
                .map(|data| configmap(HOSTING_NAMESPACE, HOSTING_NAME, data)),
            concurrent_writes: self.concurrent_writes,
            pods: BTreeMap::new(),
            events: Vec::new(),
        });
        let state = Arc::new(Served {
            spec: self,
            port,
            store,
        });
        let served = Arc::clone(&state);
        let accept = {
            let requests = Arc::clone(&requests);
            let stopping = Arc::clone(&stopping);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let state = Arc::clone(&state);
                    let requests = Arc::clone(&requests);
                    let tls = tls.clone();
                    std::thread::spawn(move || {
                        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                        match tls {
                            None => serve_connection(&stream, &state, &requests, Some(&stream)),
                            Some(config) => {
                                let Ok(connection) = rustls::ServerConnection::new(config) else {
                                    return;
                                };
                                let mut tls = rustls::StreamOwned::new(connection, &stream);
                                serve_connection(&mut tls, &state, &requests, None);
                                tls.conn.send_close_notify();
                                let _ = tls.flush();
                            }
                        }
                        let _ = stream.shutdown(Shutdown::Both);
                    });
                }
            })
        };
        ApiServer {
            port,
            scheme,
            served,
            requests,
            stopping,
            accept: Some(accept),
        }
    }
}

/// A running stand-in; stops when dropped.
pub(crate) struct ApiServer {
    port: u16,
    scheme: &'static str,
    served: Arc<Served>,
    requests: Arc<Mutex<Vec<Logged>>>,
    stopping: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl ApiServer {
    pub(crate) fn builder() -> ApiServerBuilder {
        ApiServerBuilder::default()
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn url(&self) -> String {
        format!("{}://127.0.0.1:{}", self.scheme, self.port)
    }

    /// Every request served so far, as `METHOD /path` (query dropped), in arrival order.
    pub(crate) fn requests(&self) -> Vec<String> {
        let log = self.requests.lock().expect("request log");
        log.iter().map(|r| r.request.clone()).collect()
    }

    /// Every request served so far, as `METHOD /path?query`, in arrival order.
    pub(crate) fn targets(&self) -> Vec<String> {
        let log = self.requests.lock().expect("request log");
        log.iter().map(|r| r.target.clone()).collect()
    }

    /// The hosting ConfigMap as the server holds it now (None when absent).
    pub(crate) fn hosting_configmap(&self) -> Option<Value> {
        self.served.store.lock().expect("store").hosting.clone()
    }

    /// The `Authorization` header of every request, in arrival order (None when absent).
    pub(crate) fn authorizations(&self) -> Vec<Option<String>> {
        let log = self.requests.lock().expect("request log");
        log.iter().map(|r| r.authorization.clone()).collect()
    }

    /// Writes `dir/kubeconfig` whose only (and current) context points at this server.
    /// Creates pod `name` in `default` running `image` (as `kubectl run NAME --image IMAGE`
    /// posts it); the kubelet, when there is one, pulls it before this returns.
    pub(crate) fn create_pod(&self, name: &str, image: &str, pull_policy: Option<&str>) {
        self.create_labelled_pod(name, image, pull_policy, &[("run", name)]);
    }

    /// `create_pod` with these labels (a Deployment's pods carry its selector's).
    pub(crate) fn create_labelled_pod(
        &self,
        name: &str,
        image: &str,
        pull_policy: Option<&str>,
        labels: &[(&str, &str)],
    ) {
        let labels: serde_json::Map<String, Value> = labels
            .iter()
            .map(|(key, value)| (key.to_string(), json!(value)))
            .collect();
        let mut container = json!({"name": name, "image": image});
        if let Some(policy) = pull_policy {
            container["imagePullPolicy"] = json!(policy);
        }
        let body = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [container], "restartPolicy": "Always"},
        })
        .to_string();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connecting");
        write!(
            stream,
            "POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: 127.0.0.1\r\n\
             Authorization: Bearer stand-in-token\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("sending the pod");
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        assert!(
            answer.starts_with("HTTP/1.1 201"),
            "creating pod {name}: {answer}"
        );
    }

    pub(crate) fn write_kubeconfig(&self, dir: &Path, context: &str, cluster: &str) -> PathBuf {
        let path = dir.join("kubeconfig");
        std::fs::write(&path, kubeconfig_yaml(&self.url(), context, cluster))
            .expect("writing kubeconfig");
        path
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// A kubeconfig as `kind create cluster` writes it (user named after the context), for any server.
pub(crate) fn kubeconfig_yaml(server: &str, context: &str, cluster: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- cluster:
    server: {server}
  name: {cluster}
contexts:
- context:
    cluster: {cluster}
    user: {context}
  name: {context}
current-context: {context}
preferences: {{}}
users:
- name: {context}
  user:
    token: stand-in-token
"
    )
}

/// `dir/kubeconfig`, context and cluster `kind-dev`, whose API server is a loopback port nothing
/// listens on: a cluster that is down.
pub(crate) fn write_kubeconfig_of_a_down_cluster(dir: &Path) -> PathBuf {
    let kubeconfig = dir.join("kubeconfig");
    let server = format!("http://127.0.0.1:{}", unused_port());
    std::fs::write(
        &kubeconfig,
        kubeconfig_yaml(&server, "kind-dev", "kind-dev"),
    )
    .expect("writing the kubeconfig");
    kubeconfig
}

/// A loopback port nothing listens on (bound, then released).
pub(crate) fn unused_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
    listener.local_addr().expect("local address").port()
}

/// One request as the log keeps it.
struct Logged {
    request: String,
    /// `METHOD /path?query`
    target: String,
    authorization: Option<String>,
}

struct Served {
    spec: ApiServerBuilder,
    port: u16,
    store: Mutex<Store>,
}

/// What writes change.
struct Store {
    /// The last resourceVersion handed out; every write takes the next one.
    resource_version: u64,
    hosting: Option<Value>,
    concurrent_writes: usize,
    /// Pods by name (namespace `default` only), and the events about them.
    pods: BTreeMap<String, Value>,
    events: Vec<Value>,
}

const HOSTING_NAMESPACE: &str = "kube-public";
const HOSTING_NAME: &str = "local-registry-hosting";

/// A pod template's containers, `c0`, `c1`, ..., one per image.
fn containers_running(images: &[&str]) -> Vec<Value> {
    images
        .iter()
        .enumerate()
        .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
        .collect()
}
