//! A loopback stand-in for the Kubernetes API server: plain HTTP (or HTTPS with a test CA) on a
//! free port, std threads, serving the JSON a real one returns for discovery, the hosting
//! ConfigMap, nodes, microk8s's registry Service and OpenShift's image config; 401/403/404/409
//! as `Status` objects, and a bearer token required when asked. The hosting ConfigMap can be
//! created, updated, patched and deleted, with resourceVersion checks as a real server makes
//! them. Records what it served; stops on Drop.

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

/// One node, with the labels a kubelet sets by itself.
#[derive(Debug, Clone)]
pub(crate) struct StandInNode {
    name: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    provider_id: Option<String>,
    /// `status.nodeInfo.containerRuntimeVersion`.
    runtime: String,
}

impl StandInNode {
    pub(crate) fn new(name: &str) -> Self {
        let labels = [
            ("beta.kubernetes.io/arch", "amd64"),
            ("beta.kubernetes.io/os", "linux"),
            ("kubernetes.io/arch", "amd64"),
            ("kubernetes.io/hostname", name),
            ("kubernetes.io/os", "linux"),
        ];
        Self {
            name: name.to_string(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            annotations: BTreeMap::new(),
            provider_id: None,
            runtime: "containerd://1.7.24".to_string(),
        }
    }

    /// The runtime the kubelet reports: `docker://27.4.1`, `cri-o://1.29.1`.
    pub(crate) fn runtime(mut self, runtime: &str) -> Self {
        self.runtime = runtime.into();
        self
    }

    pub(crate) fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    pub(crate) fn annotation(mut self, key: &str, value: &str) -> Self {
        self.annotations.insert(key.into(), value.into());
        self
    }

    pub(crate) fn provider_id(mut self, id: &str) -> Self {
        self.provider_id = Some(id.into());
        self
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
        let containers: Vec<Value> = images
            .iter()
            .enumerate()
            .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
            .collect();
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
        let containers: Vec<Value> = images
            .iter()
            .enumerate()
            .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
            .collect();
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

fn serve_connection(
    stream: impl Read + Write,
    state: &Served,
    requests: &Mutex<Vec<Logged>>,
    raw: Option<&TcpStream>,
) {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return; // the Drop wake-up, or a client that gave up
    }
    let mut content_length = 0usize;
    let mut authorization = None;
    let mut content_type = String::new();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" || header == "\n" {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        headers.push((name.trim().to_string(), value.trim().to_string()));
        if name.eq_ignore_ascii_case("content-length") {
            content_length = value.trim().parse().unwrap_or(0);
        } else if name.eq_ignore_ascii_case("authorization") {
            authorization = Some(value.trim().to_string());
        } else if name.eq_ignore_ascii_case("content-type") {
            content_type = value.trim().to_string();
        }
    }
    let mut body = vec![0; content_length];
    let _ = reader.read_exact(&mut body);

    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("");
    let path = target.split('?').next().unwrap_or("").to_string();
    let authorized = match &state.spec.token {
        Some(token) => authorization.as_deref() == Some(format!("Bearer {token}").as_str()),
        None => true,
    };
    requests.lock().expect("request log").push(Logged {
        request: format!("{method} {path}"),
        target: format!("{method} {target}"),
        authorization,
    });

    if authorized
        && let Some(controllers) = &state.spec.controllers
        && controllers.serve(&method, target, &body, reader.get_mut())
    {
        return;
    }
    let query = target.split_once('?').map_or("", |(_, query)| query);
    if let (true, Some(raw), Some((namespace, pod))) =
        (authorized, raw, super::portforward::portforward_path(&path))
    {
        let refusal = refusal(
            &state.spec,
            "pods/portforward",
            "create",
            Some(namespace),
            Some(pod),
        );
        let request = super::portforward::Upgrade {
            namespace,
            pod,
            query,
            headers: &headers,
        };
        return super::portforward::serve(&state.spec.extra, raw, request, refusal);
    }
    if authorized
        && method == "GET"
        && path == "/api/v1/namespaces/default/pods"
        && query
            .split('&')
            .any(|pair| pair == "watch=true" || pair == "watch=1")
    {
        return watch_pods(state, query, reader.get_mut());
    }
    let (code, body) = if !authorized {
        (401, status(401, "Unauthorized", "Unauthorized", json!({})))
    } else if let Some(answer) = super::cluster_objects::respond(
        &state.spec.extra,
        (&method, &path, query, &body),
        &|resource, verb, namespace, name| {
            refusal(&state.spec, resource, verb, Some(namespace), name)
        },
    ) {
        answer
    } else if let Some(answer) = respond_for_pods(state, &method, &path, query, &body) {
        answer
    } else if method == "GET" {
        respond(state, &method, &path)
    } else {
        respond_to_write(state, &method, &path, &content_type, &body)
    };
    // A group the server does not serve is a bare mux 404, not a Status.
    let (content_type, body) = match body {
        Value::Null => (
            "text/plain; charset=utf-8",
            "404 page not found\n".to_string(),
        ),
        body => ("application/json", body.to_string()),
    };
    let reason = match code {
        200 => "OK",
        201 => "Created",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        500 => "Internal Server Error",
        _ => "Error",
    };
    let response = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nCache-Control: no-cache, private\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let stream = reader.get_mut();
    let _ = stream.write_all(response.as_bytes());
    let _ = stream.flush();
}

/// A watch of pods in `default` (by `metadata.name=` field selector): each as ADDED, then held
/// open until its timeoutSeconds as a real server holds it (these pods change no more once the
/// kubelet's part is done at their creation).
fn watch_pods(state: &Served, query: &str, stream: &mut dyn Write) {
    let value = |key: &str| {
        query.split('&').find_map(|pair| {
            pair.strip_prefix(key)
                .and_then(|rest| rest.strip_prefix('='))
                .map(|value| value.replace("%3D", "=").replace("%2C", ","))
        })
    };
    let name = value("fieldSelector").and_then(|selector| {
        selector
            .split(',')
            .find_map(|term| term.strip_prefix("metadata.name=").map(str::to_string))
    });
    let seconds: u64 = value("timeoutSeconds")
        .and_then(|s| s.parse().ok())
        .unwrap_or(10)
        .min(60);
    let events: Vec<String> = {
        let store = state.store.lock().expect("store");
        store
            .pods
            .values()
            .filter(|pod| {
                name.as_deref()
                    .is_none_or(|name| pod["metadata"]["name"] == name)
            })
            .map(|pod| json!({"type": "ADDED", "object": pod}).to_string() + "\n")
            .collect()
    };
    let header =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    if stream.write_all(header.as_bytes()).is_err() {
        return;
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
    // Held open until its time is up: the client goes long before.
    std::thread::sleep(std::time::Duration::from_secs(seconds));
    let _ = stream.write_all(b"0\r\n\r\n");
}

/// A rustls server config for the PEM chain and key.
pub(crate) fn tls_config(certificate: &Path, key: &Path) -> Arc<rustls::ServerConfig> {
    let chain = CertificateDer::pem_file_iter(certificate)
        .expect("reading the certificate")
        .collect::<Result<Vec<_>, _>>()
        .expect("PEM certificates");
    let key = PrivateKeyDer::from_pem_file(key).expect("reading the key");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .expect("a TLS server config");
    Arc::new(config)
}

/// Routes one GET like the API server: discovery, then the few objects discovery reads.
fn respond(state: &Served, method: &str, path: &str) -> (u16, Value) {
    if method != "GET" {
        return (
            405,
            status(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
                json!({}),
            ),
        );
    }
    let spec = &state.spec;
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        ["version"] => (200, version()),
        ["api"] => (200, api_versions(state.port)),
        ["apis"] => (200, api_groups(spec.openshift.is_some())),
        ["apis", "config.openshift.io"] if spec.openshift.is_some() => {
            (200, openshift_config_group())
        }
        ["apis", "config.openshift.io", "v1"] if spec.openshift.is_some() => {
            (200, openshift_config_resources())
        }
        ["apis", "config.openshift.io", "v1", "images", name] if spec.openshift.is_some() => {
            let found = (*name == "cluster")
                .then_some(spec.openshift.as_ref())
                .flatten()
                .map(openshift_image_config);
            lookup(spec, "images", "get", None, Some(name), found)
        }
        ["apis", group @ ("apps" | "batch"), "v1", resource] => {
            workload_list(spec, group, resource)
        }
        [
            "apis",
            "apps",
            "v1",
            "namespaces",
            namespace,
            "deployments",
            name,
        ] => {
            let found = spec
                .workloads
                .iter()
                .find(|(resource, object)| {
                    resource == "deployments"
                        && object["metadata"]["name"] == *name
                        && object["metadata"]["namespace"] == *namespace
                })
                .map(|(_, object)| {
                    let mut object = object.clone();
                    object["kind"] = json!("Deployment");
                    object["apiVersion"] = json!("apps/v1");
                    object
                });
            lookup(
                spec,
                "deployments",
                "get",
                Some(namespace),
                Some(name),
                found,
            )
        }
        ["apis", ..] => (404, Value::Null),
        ["api", "v1"] => (200, core_v1_resources()),
        ["api", "v1", "pods"] => workload_list(spec, "", "pods"),
        ["api", "v1", "namespaces", name] => {
            // kubectl asks after a 404 whether the namespace itself exists.
            let exists = ["default", "kube-system", "kube-public", "kube-node-lease"]
                .contains(name)
                || (*name == "container-registry" && spec.microk8s_node_port.is_some());
            lookup(
                spec,
                "namespaces",
                "get",
                None,
                Some(name),
                exists.then(|| namespace(name)),
            )
        }
        ["api", "v1", "namespaces", namespace, "configmaps", name] => {
            let found = (*namespace == HOSTING_NAMESPACE && *name == HOSTING_NAME)
                .then(|| state.store.lock().expect("store").hosting.clone())
                .flatten();
            lookup(
                spec,
                "configmaps",
                "get",
                Some(namespace),
                Some(name),
                found,
            )
        }
        ["api", "v1", "nodes"] => lookup(
            spec,
            "nodes",
            "list",
            None,
            None,
            Some(node_list(&spec.nodes)),
        ),
        ["api", "v1", "nodes", name] => {
            let found = spec.nodes.iter().find(|n| n.name == *name).map(|n| {
                let mut node = node(n);
                node["kind"] = json!("Node");
                node["apiVersion"] = json!("v1");
                node
            });
            lookup(spec, "nodes", "get", None, Some(name), found)
        }
        ["api", "v1", "namespaces", namespace, "services", name] => {
            let found = (*namespace == "container-registry" && *name == "registry")
                .then_some(spec.microk8s_node_port)
                .flatten()
                .map(microk8s_registry_service);
            lookup(spec, "services", "get", Some(namespace), Some(name), found)
        }
        _ => (
            404,
            status(
                404,
                "NotFound",
                "the server could not find the requested resource",
                json!({}),
            ),
        ),
    }
}

/// Every object of `resource` in all namespaces, as a List (403 when forbidden).
fn workload_list(spec: &ApiServerBuilder, group: &str, resource: &str) -> (u16, Value) {
    let (api_version, kind) = match (group, resource) {
        ("", "pods") => ("v1", "Pod"),
        ("apps", "deployments") => ("apps/v1", "Deployment"),
        ("apps", "statefulsets") => ("apps/v1", "StatefulSet"),
        ("apps", "daemonsets") => ("apps/v1", "DaemonSet"),
        ("apps", "replicasets") => ("apps/v1", "ReplicaSet"),
        ("batch", "jobs") => ("batch/v1", "Job"),
        ("batch", "cronjobs") => ("batch/v1", "CronJob"),
        _ => return (404, Value::Null),
    };
    if let Some(refusal) = refusal(spec, resource, "list", None, None) {
        return refusal;
    }
    let items: Vec<Value> = spec
        .workloads
        .iter()
        .filter(|(r, _)| r == resource)
        .map(|(_, object)| {
            let mut object = object.clone();
            object["kind"] = json!(kind);
            object["apiVersion"] = json!(api_version);
            object
        })
        .collect();
    (
        200,
        json!({"kind": format!("{kind}List"), "apiVersion": api_version,
               "metadata": {"resourceVersion": "1"}, "items": items}),
    )
}

/// 403 when the resource is forbidden, else the object or a 404 naming it.
fn lookup(
    spec: &ApiServerBuilder,
    resource: &str,
    verb: &str,
    namespace: Option<&str>,
    name: Option<&str>,
    found: Option<Value>,
) -> (u16, Value) {
    if let Some(refusal) = refusal(spec, resource, verb, namespace, name) {
        return refusal;
    }
    let mut details = json!({"kind": resource});
    if let Some(name) = name {
        details["name"] = json!(name);
    }
    if let Some((code, message)) = spec.failing.get(resource) {
        return (*code, status(*code, "InternalError", message, details));
    }
    match found {
        Some(object) => (200, object),
        None => {
            let message = format!("{resource} {:?} not found", name.unwrap_or_default());
            (404, status(404, "NotFound", &message, details))
        }
    }
}

/// Whether `image`'s repository path is lower case, as docker's reference grammar requires (the
/// registry part, with a `.`, a `:` or `localhost`, may have capitals).
fn is_lower_case_repository(image: &str) -> bool {
    let path = match image.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => rest,
        _ => image,
    };
    let path = path.split(['@', ':']).next().unwrap_or(path);
    !path.chars().any(|c| c.is_ascii_uppercase())
}

/// Pods and events in namespace `default`: create (the kubelet pulls at once), get, delete, and
/// the event list `kubectl describe` and `doctor --pod` read. `None` for any other path.
fn respond_for_pods(
    state: &Served,
    method: &str,
    path: &str,
    query: &str,
    body: &[u8],
) -> Option<(u16, Value)> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (resource, name) = match segments.as_slice() {
        ["api", "v1", "namespaces", "default", resource] => (*resource, None),
        ["api", "v1", "namespaces", "default", resource, name] => (*resource, Some(*name)),
        _ => return None,
    };
    let verb = match (method, name) {
        ("POST", None) => "create",
        ("GET", None) => "list",
        ("GET", Some(_)) => "get",
        ("DELETE", Some(_)) => "delete",
        _ => return None,
    };
    if !matches!(
        (resource, verb),
        ("pods", "create" | "get" | "delete" | "list") | ("events", "list")
    ) {
        return None;
    }
    if let Some(refusal) = refusal(&state.spec, resource, verb, Some("default"), name) {
        return Some(refusal);
    }
    let mut store = state.store.lock().expect("store");
    Some(match (verb, name) {
        ("create", _) => {
            let pod: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            if let Some(message) = &state.spec.unschedulable {
                return Some((201, store.create_unschedulable_pod(pod, message)));
            }
            let created = store.create_pod(pod);
            let name = created["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let image = created
                .pointer("/spec/containers/0/image")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let never =
                created.pointer("/spec/containers/0/imagePullPolicy") == Some(&json!("Never"));
            // The kubelet's part, done before answering: the client finds the outcome at once.
            match (&state.spec.kubelet, never) {
                (Some(_), _) if !is_lower_case_repository(&image) => {
                    store.kubelet_refuses_name(&name, &image);
                }
                (Some(_), true) => {
                    let held = state
                        .spec
                        .node_holds
                        .as_ref()
                        .is_some_and(|Holds(holds)| holds(&image));
                    store.kubelet_never_pulls(&name, &image, held);
                }
                (Some(Kubelet(pull)), false) => {
                    let pulled = pull(&image);
                    store.kubelet_pulled(&name, &image, pulled);
                }
                (None, _) => {}
            }
            (201, created)
        }
        ("list", _) if resource == "pods" => {
            // `labelSelector=app%3Dweb,tier%3Dfront`: every term must match.
            let selector: Vec<(String, String)> = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("labelSelector="))
                .map(|selector| selector.replace("%3D", "=").replace("%2C", ","))
                .unwrap_or_default()
                .split(',')
                .filter_map(|term| term.split_once('='))
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect();
            let items: Vec<Value> = store
                .pods
                .values()
                .filter(|pod| {
                    selector
                        .iter()
                        .all(|(key, value)| pod["metadata"]["labels"][key] == value.as_str())
                })
                .cloned()
                .collect();
            (
                200,
                json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}),
            )
        }
        ("list", _) => {
            let wanted = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("fieldSelector="))
                .map(|selector| selector.replace("%3D", "=").replace("%2C", ","))
                .and_then(|selector| {
                    selector.split(',').find_map(|term| {
                        term.strip_prefix("involvedObject.name=")
                            .map(str::to_string)
                    })
                });
            let items: Vec<Value> = store
                .events
                .iter()
                .filter(|event| {
                    wanted
                        .as_deref()
                        .is_none_or(|name| event["involvedObject"]["name"] == name)
                })
                .cloned()
                .collect();
            (
                200,
                json!({"kind": "EventList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}),
            )
        }
        ("get", Some(name)) => match store.pods.get(name) {
            Some(pod) => (200, pod.clone()),
            // A running pod of the builder's, in `default`.
            None => match state.spec.workloads.iter().find(|(resource, pod)| {
                resource == "pods"
                    && pod["metadata"]["name"] == name
                    && pod["metadata"]["namespace"] == "default"
            }) {
                Some((_, pod)) => (200, pod.clone()),
                None => not_found("pods", name),
            },
        },
        (_, Some(name)) => match store.pods.remove(name) {
            Some(mut pod) => {
                pod["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:01Z");
                (200, pod)
            }
            None => not_found("pods", name),
        },
        _ => unreachable!("routed above"),
    })
}

fn not_found(resource: &str, name: &str) -> (u16, Value) {
    let message = format!("{resource} {name:?} not found");
    (
        404,
        status(
            404,
            "NotFound",
            &message,
            json!({"kind": resource, "name": name}),
        ),
    )
}

/// The 403 a real server answers when RBAC forbids `verb` on `resource`.
fn refusal(
    spec: &ApiServerBuilder,
    resource: &str,
    verb: &str,
    namespace: Option<&str>,
    name: Option<&str>,
) -> Option<(u16, Value)> {
    let forbidden =
        spec.forbidden.contains(resource) || spec.forbidden.contains(&format!("{resource}/{verb}"));
    if !forbidden {
        return None;
    }
    let mut details = json!({"kind": resource});
    if let Some(name) = name {
        details["name"] = json!(name);
    }
    let subject = match name {
        Some(name) => format!("{resource} {name:?}"),
        None => resource.to_string(),
    };
    let scope = match namespace {
        Some(ns) => format!("in the namespace {ns:?}"),
        None => "at the cluster scope".to_string(),
    };
    let message = format!(
        "{subject} is forbidden: User \"system:serviceaccount:default:dev\" cannot {verb} resource {resource:?} in API group \"\" {scope}"
    );
    Some((403, status(403, "Forbidden", &message, details)))
}

/// Routes a write: only the hosting ConfigMap can be written, as a real server would take it.
fn respond_to_write(
    state: &Served,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> (u16, Value) {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let name = match (method, segments.as_slice()) {
        ("POST", ["api", "v1", "namespaces", HOSTING_NAMESPACE, "configmaps"]) => body
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        (
            "PUT" | "PATCH" | "DELETE",
            [
                "api",
                "v1",
                "namespaces",
                HOSTING_NAMESPACE,
                "configmaps",
                name,
            ],
        ) => name.to_string(),
        _ => {
            return (
                405,
                status(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                    json!({}),
                ),
            );
        }
    };
    let verb = match method {
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        _ => "delete",
    };
    if let Some(refusal) = refusal(
        &state.spec,
        "configmaps",
        verb,
        Some(HOSTING_NAMESPACE),
        Some(&name),
    ) {
        return refusal;
    }
    if name != HOSTING_NAME {
        return (
            422,
            status(
                422,
                "Invalid",
                "this stand-in stores only ConfigMap kube-public/local-registry-hosting",
                json!({}),
            ),
        );
    }
    let mut store = state.store.lock().expect("store");
    match verb {
        "create" => store.create(body),
        "update" => store.update(body),
        "patch" => store.patch(content_type, &body),
        _ => store.delete(&body),
    }
}

impl Store {
    fn next_version(&mut self) -> String {
        self.resource_version += 1;
        self.resource_version.to_string()
    }

    fn create_pod(&mut self, mut pod: Value) -> Value {
        let version = self.next_version();
        let prefix = pod
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
            .unwrap_or("pod-")
            .to_string();
        let name = pod
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map_or_else(|| format!("{prefix}{version:0>5}"), str::to_string);
        let mut meta = metadata(&name, Some("default"));
        meta["resourceVersion"] = json!(version);
        if let Some(labels) = pod.pointer("/metadata/labels") {
            meta["labels"] = labels.clone();
        }
        pod["kind"] = json!("Pod");
        pod["apiVersion"] = json!("v1");
        pod["metadata"] = meta;
        pod["spec"]["nodeName"] = json!("stand-in-node");
        pod["status"] = json!({"phase": "Pending", "qosClass": "BestEffort",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                            "lastTransitionTime": "2025-01-01T00:00:00Z"}]});
        self.pods.insert(name, pod.clone());
        self.event(
            &pod,
            "Normal",
            "Scheduled",
            "default-scheduler",
            &format!(
                "Successfully assigned default/{} to stand-in-node",
                pod["metadata"]["name"].as_str().unwrap_or_default()
            ),
        );
        pod
    }

    /// A pod the scheduler cannot place: Pending, no node, no container statuses, and the
    /// scheduler's condition and event (kube-scheduler's words: `0/1 nodes are available: ...`).
    fn create_unschedulable_pod(&mut self, pod: Value, message: &str) -> Value {
        let mut pod = self.create_pod(pod);
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        pod["spec"]
            .as_object_mut()
            .map(|spec| spec.remove("nodeName"));
        pod["status"] = json!({"phase": "Pending", "qosClass": "Burstable",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                            "message": message, "lastProbeTime": null,
                            "lastTransitionTime": "2025-01-01T00:00:00Z"}]});
        // What create_pod recorded as scheduled was not: the scheduler's word instead.
        self.events.retain(|event| {
            event["reason"] != "Scheduled" || event["involvedObject"]["name"] != name.as_str()
        });
        self.event(
            &pod,
            "Warning",
            "FailedScheduling",
            "default-scheduler",
            message,
        );
        self.pods.insert(name, pod.clone());
        pod
    }

    /// What a kubelet records for a reference it cannot parse (its `applyDefaultImageTag`:
    /// docker's reference grammar), before any pull: InvalidImageName.
    fn kubelet_refuses_name(&mut self, name: &str, image: &str) {
        let Some(pod) = self.pods.get(name).cloned() else {
            return;
        };
        let said = format!(
            "Failed to apply default image tag {image:?}: couldn't parse image name {image:?}: \
             invalid reference format: repository name must be lowercase"
        );
        self.event(&pod, "Warning", "InspectFailed", "kubelet", &said);
        self.event(
            &pod,
            "Warning",
            "Failed",
            "kubelet",
            "Error: InvalidImageName",
        );
        self.set_waiting(name, image, "InvalidImageName", &said);
    }

    /// What a kubelet records for `imagePullPolicy: Never`: it asks the runtime whether it holds
    /// the image and never pulls (kubelet's image manager: ErrImageNeverPull).
    fn kubelet_never_pulls(&mut self, name: &str, image: &str, held: bool) {
        let Some(pod) = self.pods.get(name).cloned() else {
            return;
        };
        let (reason, message) = if held {
            self.event(
                &pod,
                "Normal",
                "Pulled",
                "kubelet",
                &format!("Container image {image:?} already present on machine"),
            );
            let error = "failed to generate container spec: no command specified";
            self.event(
                &pod,
                "Warning",
                "Failed",
                "kubelet",
                &format!("Error: {error}"),
            );
            ("CreateContainerError", error.to_string())
        } else {
            let said =
                format!("Container image {image:?} is not present with pull policy of Never");
            self.event(&pod, "Warning", "ErrImageNeverPull", "kubelet", &said);
            self.event(
                &pod,
                "Warning",
                "Failed",
                "kubelet",
                "Error: ErrImageNeverPull",
            );
            ("ErrImageNeverPull", said)
        };
        self.set_waiting(name, image, reason, &message);
    }

    /// What a kubelet records after its runtime pulled (or failed to pull) the pod's image.
    fn kubelet_pulled(&mut self, name: &str, image: &str, pulled: Result<(), String>) {
        let Some(pod) = self.pods.get(name).cloned() else {
            return;
        };
        self.event(
            &pod,
            "Normal",
            "Pulling",
            "kubelet",
            &format!("Pulling image {image:?}"),
        );
        let (reason, message) = match pulled {
            Ok(()) => {
                self.event(
                    &pod,
                    "Normal",
                    "Pulled",
                    "kubelet",
                    &format!("Successfully pulled image {image:?}"),
                );
                let error = "failed to generate container spec: no command specified";
                self.event(
                    &pod,
                    "Warning",
                    "Failed",
                    "kubelet",
                    &format!("Error: {error}"),
                );
                ("CreateContainerError", error.to_string())
            }
            Err(said) => {
                // ctr logs before its error; the kubelet reports the error alone.
                let last = said.lines().rev().find(|line| !line.trim().is_empty());
                let said = last
                    .unwrap_or_default()
                    .trim()
                    .trim_start_matches("ctr: ")
                    .to_string();
                self.event(
                    &pod,
                    "Warning",
                    "Failed",
                    "kubelet",
                    &format!("Failed to pull image {image:?}: {said}"),
                );
                self.event(&pod, "Warning", "Failed", "kubelet", "Error: ErrImagePull");
                ("ErrImagePull", said)
            }
        };
        self.set_waiting(name, image, reason, &message);
    }

    /// The pod's one container waiting with `reason` and `message`, as the kubelet reports it.
    fn set_waiting(&mut self, name: &str, image: &str, reason: &str, message: &str) {
        let version = self.next_version();
        if let Some(stored) = self.pods.get_mut(name) {
            stored["metadata"]["resourceVersion"] = json!(version);
            stored["status"]["containerStatuses"] = json!([{
                "name": stored.pointer("/spec/containers/0/name").cloned().unwrap_or_default(),
                "image": image,
                "imageID": "",
                "ready": false,
                "restartCount": 0,
                "started": false,
                "state": {"waiting": {"reason": reason, "message": message}},
            }]);
        }
    }

    fn event(&mut self, pod: &Value, kind: &str, reason: &str, component: &str, message: &str) {
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let mut meta = metadata(
            &format!("{name}.{:x}", self.events.len() + 1),
            Some("default"),
        );
        meta["resourceVersion"] = json!(self.next_version());
        self.events.push(json!({
            "kind": "Event",
            "apiVersion": "v1",
            "metadata": meta,
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": name, "uid": pod["metadata"]["uid"], "apiVersion": "v1"},
            "reason": reason,
            "message": message,
            "source": {"component": component, "host": "stand-in-node"},
            "firstTimestamp": "2025-01-01T00:00:00Z",
            "lastTimestamp": "2025-01-01T00:00:00Z",
            "count": 1,
            "type": kind,
        }));
    }

    fn create(&mut self, mut object: Value) -> (u16, Value) {
        if self.hosting.is_some() {
            let message = format!("configmaps {HOSTING_NAME:?} already exists");
            return (
                409,
                status(409, "AlreadyExists", &message, hosting_details()),
            );
        }
        let version = self.next_version();
        object["kind"] = json!("ConfigMap");
        object["apiVersion"] = json!("v1");
        object["metadata"] = metadata(HOSTING_NAME, Some(HOSTING_NAMESPACE))
            .as_object()
            .cloned()
            .map(|mut meta| {
                if let Some(given) = object["metadata"].as_object() {
                    for key in ["labels", "annotations"] {
                        if let Some(value) = given.get(key) {
                            meta.insert(key.to_string(), value.clone());
                        }
                    }
                }
                meta.insert("resourceVersion".to_string(), json!(version));
                Value::Object(meta)
            })
            .unwrap_or_default();
        self.hosting = Some(object.clone());
        (201, object)
    }

    /// PUT: the whole object, accepted only with the resourceVersion it currently has.
    fn update(&mut self, mut object: Value) -> (u16, Value) {
        self.another_writer_first();
        let Some(current) = self.hosting.clone() else {
            return not_found_hosting();
        };
        let Some(sent) = object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            let message = format!(
                "ConfigMap {HOSTING_NAME:?} is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
            );
            return (422, status(422, "Invalid", &message, hosting_details()));
        };
        if Some(sent.as_str()) != current["metadata"]["resourceVersion"].as_str() {
            return conflict();
        }
        object["metadata"]["uid"] = current["metadata"]["uid"].clone();
        object["metadata"]["creationTimestamp"] = current["metadata"]["creationTimestamp"].clone();
        object["metadata"]["resourceVersion"] = json!(self.next_version());
        self.hosting = Some(object.clone());
        (200, object)
    }

    /// PATCH as JSON merge patch (what a strategic merge of a ConfigMap's maps amounts to).
    fn patch(&mut self, content_type: &str, patch: &Value) -> (u16, Value) {
        let merge = content_type.starts_with("application/merge-patch+json")
            || content_type.starts_with("application/strategic-merge-patch+json");
        if !merge {
            let message = format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {content_type:?}; this stand-in merges only)"
            );
            return (
                415,
                status(415, "UnsupportedMediaType", &message, json!({})),
            );
        }
        let Some(mut current) = self.hosting.clone() else {
            return not_found_hosting();
        };
        if let Some(sent) = patch.pointer("/metadata/resourceVersion")
            && Some(sent) != current.pointer("/metadata/resourceVersion")
        {
            return conflict();
        }
        merge_patch(&mut current, patch);
        current["metadata"]["resourceVersion"] = json!(self.next_version());
        self.hosting = Some(current.clone());
        (200, current)
    }

    fn delete(&mut self, options: &Value) -> (u16, Value) {
        let Some(current) = self.hosting.clone() else {
            return not_found_hosting();
        };
        let current_version = &current["metadata"]["resourceVersion"];
        if let Some(wanted) = options.pointer("/preconditions/resourceVersion")
            && wanted != current_version
        {
            let message = format!(
                "Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in object meta: {}",
                wanted.as_str().unwrap_or_default(),
                current_version.as_str().unwrap_or_default()
            );
            return (409, status(409, "Conflict", &message, hosting_details()));
        }
        self.hosting = None;
        let mut details = hosting_details();
        details["uid"] = current["metadata"]["uid"].clone();
        (
            200,
            json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": details,
            }),
        )
    }

    /// The other writer of [`ApiServerBuilder::concurrent_writes`], when it has writes left.
    fn another_writer_first(&mut self) {
        if self.concurrent_writes == 0 {
            return;
        }
        self.concurrent_writes -= 1;
        let version = self.next_version();
        if let Some(current) = self.hosting.as_mut() {
            let key = format!("written-meanwhile-{version}");
            current["data"][key] = json!("by another writer");
            current["metadata"]["resourceVersion"] = json!(version);
        }
    }
}

/// RFC 7386: objects merge key by key, null removes, anything else replaces.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(patch) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    for (key, value) in patch {
        if value.is_null() {
            if let Some(map) = target.as_object_mut() {
                map.remove(key);
            }
        } else {
            merge_patch(&mut target[key], value);
        }
    }
}

fn hosting_details() -> Value {
    json!({"name": HOSTING_NAME, "kind": "configmaps"})
}

fn not_found_hosting() -> (u16, Value) {
    let message = format!("configmaps {HOSTING_NAME:?} not found");
    (404, status(404, "NotFound", &message, hosting_details()))
}

fn conflict() -> (u16, Value) {
    let message = format!(
        "Operation cannot be fulfilled on configmaps {HOSTING_NAME:?}: the object has been modified; please apply your changes to the latest version and try again"
    );
    (409, status(409, "Conflict", &message, hosting_details()))
}

fn status(code: u16, reason: &str, message: &str, details: Value) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": details,
        "code": code,
    })
}

fn metadata(name: &str, namespace: Option<&str>) -> Value {
    let mut meta = json!({
        "name": name,
        "uid": format!("00000000-0000-4000-8000-{:012x}", name.len()),
        "resourceVersion": "1",
        "creationTimestamp": "2025-01-01T00:00:00Z",
    });
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    meta
}

fn namespace(name: &str) -> Value {
    json!({
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": metadata(name, None),
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

fn configmap(namespace: &str, name: &str, data: &BTreeMap<String, String>) -> Value {
    json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": metadata(name, Some(namespace)),
        "data": data,
    })
}

fn node(n: &StandInNode) -> Value {
    let mut meta = metadata(&n.name, None);
    meta["labels"] = json!(n.labels);
    if !n.annotations.is_empty() {
        meta["annotations"] = json!(n.annotations);
    }
    let mut spec = json!({});
    if let Some(id) = &n.provider_id {
        spec["providerID"] = json!(id);
    }
    json!({
        "metadata": meta,
        "spec": spec,
        "status": {
            "nodeInfo": {
                "kubeletVersion": "v1.32.0",
                "containerRuntimeVersion": n.runtime,
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    })
}

fn node_list(nodes: &[StandInNode]) -> Value {
    json!({
        "kind": "NodeList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "1"},
        "items": nodes.iter().map(node).collect::<Vec<_>>(),
    })
}

fn microk8s_registry_service(node_port: i32) -> Value {
    json!({
        "kind": "Service",
        "apiVersion": "v1",
        "metadata": metadata("registry", Some("container-registry")),
        "spec": {
            "type": "NodePort",
            "clusterIP": "10.152.183.20",
            "selector": {"app": "registry"},
            "ports": [{"name": "registry", "protocol": "TCP", "port": 5000, "targetPort": 5000, "nodePort": node_port}],
        },
        "status": {"loadBalancer": {}},
    })
}

fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.0",
        "gitCommit": "70d3cc986aa8221cd1dfb1121852688902d3bf53",
        "gitTreeState": "clean",
        "buildDate": "2024-12-11T17:59:15Z",
        "goVersion": "go1.23.3",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

fn api_versions(port: u16) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": format!("127.0.0.1:{port}")}],
    })
}

fn core_v1_resources() -> Value {
    let verbs = json!([
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch"
    ]);
    json!({
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap", "verbs": verbs, "shortNames": ["cm"], "storageVersionHash": "qFsyl6wFWjQ="},
            {"name": "namespaces", "singularName": "namespace", "namespaced": false, "kind": "Namespace", "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["ns"], "storageVersionHash": "Q3oi5N2YM8M="},
            {"name": "nodes", "singularName": "node", "namespaced": false, "kind": "Node", "verbs": verbs, "shortNames": ["no"], "storageVersionHash": "XwShjMxG9Fs="},
            {"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod", "verbs": verbs, "shortNames": ["po"], "categories": ["all"], "storageVersionHash": "xPOwRZ+Yhw8="},
            {"name": "events", "singularName": "event", "namespaced": true, "kind": "Event", "verbs": verbs, "shortNames": ["ev"], "storageVersionHash": "r2yiGXH7wu8="},
            {"name": "services", "singularName": "service", "namespaced": true, "kind": "Service", "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"], "shortNames": ["svc"], "categories": ["all"], "storageVersionHash": "0/CO1lhkEBI="},
        ],
    })
}

fn api_groups(openshift: bool) -> Value {
    let groups = if openshift {
        vec![openshift_config_group()]
    } else {
        Vec::new()
    };
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn openshift_config_group() -> Value {
    let version = json!({"groupVersion": "config.openshift.io/v1", "version": "v1"});
    json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": "config.openshift.io",
        "versions": [version],
        "preferredVersion": version,
    })
}

fn openshift_config_resources() -> Value {
    let verbs = json!([
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "create",
        "update",
        "watch"
    ]);
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "config.openshift.io/v1",
        "resources": [
            {"name": "images", "singularName": "image", "namespaced": false, "kind": "Image", "verbs": verbs, "storageVersionHash": "gDGcmZb4cVw="},
            {"name": "images/status", "singularName": "", "namespaced": false, "kind": "Image", "verbs": ["get", "patch", "update"]},
        ],
    })
}

/// `images.config.openshift.io/cluster` as OpenShift 4 (and OpenShift Local) returns it.
fn openshift_image_config(config: &OpenshiftImageConfig) -> Value {
    let mut meta = metadata("cluster", None);
    meta["annotations"] = json!({
        "include.release.openshift.io/self-managed-high-availability": "true",
        "release.openshift.io/create-only": "true",
    });
    meta["generation"] = json!(1);
    json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": "Image",
        "metadata": meta,
        "spec": {},
        "status": {
            "internalRegistryHostname": config.internal,
            "externalRegistryHostnames": config.external,
        },
    })
}
