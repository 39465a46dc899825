//! More of what the stand-in API server holds: any object put in it (served by its path, listed
//! per namespace by label selector), minikube's registry addon as `minikube addons enable
//! registry` creates it, pods whose ports forward to real addresses (see `portforward.rs`), and
//! SelfSubjectAccessReviews answered from the stand-in's RBAC.

use std::net::SocketAddr;

use serde_json::{Value, json};

use super::apiserver::ApiServerBuilder;

/// The stand-in's RBAC: (resource, verb, namespace, name) -> its 403, when forbidden.
pub(crate) type Refusal<'a> = dyn Fn(&str, &str, &str, Option<&str>) -> Option<(u16, Value)> + 'a;

/// What the stand-in holds besides its own fixed objects.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extra {
    /// Objects with `apiVersion`, `kind`, `metadata.name` and `metadata.namespace` (see
    /// [`Extra::current`]).
    pub(crate) objects: Vec<Value>,
    /// `(namespace, pod, port)` -> where the pod's kubelet connects for a port-forward.
    pub(crate) forwards: Vec<((String, String, u16), SocketAddr)>,
    /// How the port-forward subresource misbehaves (see `portforward.rs`).
    pub(crate) faults: super::portforward::Faults,
}

impl Extra {
    /// The objects as they stand now: a pod replaced mid-way gone, its replacement there.
    fn current(&self) -> impl Iterator<Item = &Value> {
        let replace = self.faults.replace.as_ref();
        self.objects
            .iter()
            .filter(move |object| !replace.is_some_and(|replace| replace.hides(object)))
            .chain(replace.and_then(super::portforward::Replacement::added))
    }
}

impl ApiServerBuilder {
    /// Any object, served at its path and in its namespace's list.
    pub(crate) fn object(mut self, object: Value) -> Self {
        self.extra.objects.push(object);
        self
    }

    /// A port-forward to `port` of pod `namespace/pod` reaches `to` (the kubelet's dial inside
    /// the pod's network namespace).
    pub(crate) fn forward(mut self, namespace: &str, pod: &str, port: u16, to: SocketAddr) -> Self {
        self.extra
            .forwards
            .push(((namespace.into(), pod.into(), port), to));
        self
    }

    pub(crate) fn portforward_faults(mut self, faults: super::portforward::Faults) -> Self {
        self.extra.faults = faults;
        self
    }

    /// minikube's registry addon as it runs (minikube's deploy/addons/registry: the
    /// ReplicationController `registry`, its pod, Service `registry` port 80 -> 5000, the
    /// DaemonSet `registry-proxy` with hostPort 5000 and its pod), the registry pod's port 5000
    /// being `registry`.
    pub(crate) fn minikube_registry_addon(self, registry: SocketAddr) -> Self {
        let addon = json!({"kubernetes.io/minikube-addons": "registry",
                           "addonmanager.kubernetes.io/mode": "Reconcile"});
        let pod_labels = json!({"actual-registry": "true", "kubernetes.io/minikube-addons": "registry",
                                "addonmanager.kubernetes.io/mode": "Reconcile"});
        let service = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "registry", "namespace": "kube-system", "labels": addon.clone(), "uid": "uid-svc-registry"},
            "spec": {"type": "ClusterIP", "clusterIP": "10.101.24.7", "clusterIPs": ["10.101.24.7"],
                     "ports": [{"port": 80, "protocol": "TCP", "targetPort": 5000}],
                     "selector": {"actual-registry": "true", "kubernetes.io/minikube-addons": "registry"},
                     "sessionAffinity": "None", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"},
            "status": {"loadBalancer": {}},
        });
        let rc = json!({
            "apiVersion": "v1", "kind": "ReplicationController",
            "metadata": {"name": "registry", "namespace": "kube-system", "labels": addon.clone()},
            "spec": {"replicas": 1, "selector": {"kubernetes.io/minikube-addons": "registry"},
                     "template": {"metadata": {"labels": pod_labels.clone()}}},
            "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1},
        });
        let daemonset = json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "registry-proxy", "namespace": "kube-system", "labels": addon.clone()},
            "spec": {"selector": {"matchLabels": {"registry-proxy": "true", "kubernetes.io/minikube-addons": "registry"}},
                     "template": {"metadata": {"labels": {"registry-proxy": "true", "kubernetes.io/minikube-addons": "registry"}},
                                  "spec": {"containers": [{"name": "registry-proxy", "image": "gcr.io/k8s-minikube/kube-registry-proxy:0.0.9",
                                           "ports": [{"name": "registry", "containerPort": 80, "hostPort": 5000, "protocol": "TCP"}],
                                           "env": [{"name": "REGISTRY_HOST", "value": "registry.kube-system.svc.cluster.local"},
                                                   {"name": "REGISTRY_PORT", "value": "80"}]}]}}},
            "status": {"currentNumberScheduled": 1, "desiredNumberScheduled": 1, "numberReady": 1},
        });
        let registry_pod = running_pod(
            "registry-6c86875c6f-x7k2p",
            pod_labels,
            json!([{"name": "registry", "image": "docker.io/registry:2.8.3",
                    "ports": [{"containerPort": 5000, "protocol": "TCP"}],
                    "env": [{"name": "REGISTRY_STORAGE_DELETE_ENABLED", "value": "true"}]}]),
        );
        let proxy_pod = running_pod(
            "registry-proxy-vn9kq",
            json!({"registry-proxy": "true", "kubernetes.io/minikube-addons": "registry"}),
            json!([{"name": "registry-proxy", "image": "gcr.io/k8s-minikube/kube-registry-proxy:0.0.9",
                    "ports": [{"name": "registry", "containerPort": 80, "hostPort": 5000, "protocol": "TCP"}]}]),
        );
        self.object(service)
            .object(rc)
            .object(daemonset)
            .object(registry_pod)
            .object(proxy_pod)
            .forward("kube-system", "registry-6c86875c6f-x7k2p", 5000, registry)
    }
}

/// A pod in kube-system, scheduled on node `minikube`, Running and Ready.
pub(crate) fn running_pod(name: &str, labels: Value, containers: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "kube-system", "labels": labels, "uid": format!("uid-{name}")},
        "spec": {"nodeName": "minikube", "containers": containers},
        "status": {"phase": "Running", "podIP": "10.244.0.3",
                   "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"},
                                  {"type": "ContainersReady", "status": "True"}, {"type": "PodScheduled", "status": "True"}]},
    })
}

/// The resource plural of a kind, as the object's path names it.
fn plural(kind: &str) -> String {
    format!("{}s", kind.to_lowercase())
}

/// `/api/v1/namespaces/NS/RESOURCE[/NAME]` or `/apis/GROUP/VERSION/namespaces/NS/RESOURCE[/NAME]`.
fn object_path(path: &str) -> Option<(String, String, String, Option<String>)> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (api_version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => (version.to_string(), rest),
        ["apis", group, version, rest @ ..] => (format!("{group}/{version}"), rest),
        _ => return None,
    };
    match rest {
        ["namespaces", namespace, resource] => Some((
            api_version,
            namespace.to_string(),
            resource.to_string(),
            None,
        )),
        ["namespaces", namespace, resource, name] => Some((
            api_version,
            namespace.to_string(),
            resource.to_string(),
            Some(name.to_string()),
        )),
        _ => None,
    }
}

/// A GET of an object put in the stand-in, or a list of its namespace's objects of that kind by
/// label selector; `None` when no object put in names that namespace and resource.
pub(crate) fn respond(
    extra: &Extra,
    (method, path, query, body): (&str, &str, &str, &[u8]),
    refusal: &Refusal,
) -> Option<(u16, Value)> {
    if method == "POST" && path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" {
        return Some(access_review(body, refusal));
    }
    if method != "GET" {
        return None;
    }
    let (api_version, namespace, resource, name) = object_path(path)?;
    let verb = if name.is_some() { "get" } else { "list" };
    let refused = refusal(&resource, verb, &namespace, name.as_deref());
    let of_kind: Vec<&Value> = extra
        .current()
        .filter(|object| {
            object["apiVersion"] == api_version.as_str()
                && object["metadata"]["namespace"] == namespace.as_str()
                && plural(object["kind"].as_str().unwrap_or_default()) == resource
        })
        .collect();
    if of_kind.is_empty() {
        return None;
    }
    if let Some(refused) = refused {
        return Some(refused);
    }
    let Some(name) = name else {
        let selector = label_selector(query);
        let items: Vec<&Value> = of_kind
            .into_iter()
            .filter(|object| {
                selector
                    .iter()
                    .all(|(key, value)| object["metadata"]["labels"][key] == value.as_str())
            })
            .collect();
        let kind = format!(
            "{}List",
            items
                .first()
                .map_or("", |o| o["kind"].as_str().unwrap_or_default())
        );
        return Some((
            200,
            json!({"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": "7"}, "items": items}),
        ));
    };
    Some(
        match of_kind
            .into_iter()
            .find(|object| object["metadata"]["name"] == name.as_str())
        {
            Some(object) => (200, object.clone()),
            None => return None,
        },
    )
}

/// `labelSelector=a%3Db,c%3Dd` as pairs.
fn label_selector(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("labelSelector="))
        .map(|selector| {
            selector
                .replace("%3D", "=")
                .replace("%3d", "=")
                .replace("%2C", ",")
                .replace("%2c", ",")
                .replace("%2F", "/")
                .replace("%2f", "/")
        })
        .unwrap_or_default()
        .split(',')
        .filter_map(|term| term.split_once('='))
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

/// Where a port-forward to `namespace/pod:port` connects; `None`: no such pod, or no such port.
pub(crate) fn forward_target(
    extra: &Extra,
    namespace: &str,
    pod: &str,
    port: u16,
) -> Option<SocketAddr> {
    let replaced = extra.faults.replace.as_ref();
    extra
        .forwards
        .iter()
        .find(|((ns, name, p), _)| ns == namespace && name == pod && *p == port)
        .map(|(_, to)| *to)
        .or_else(|| replaced.and_then(|replace| replace.forward(pod)))
}

/// Whether a pod of that name is in the stand-in.
pub(crate) fn has_pod(extra: &Extra, namespace: &str, pod: &str) -> bool {
    extra.current().any(|object| {
        object["kind"] == "Pod"
            && object["metadata"]["namespace"] == namespace
            && object["metadata"]["name"] == pod
    })
}

/// Where a port-forward to the pod's one forwarded port connects (kubectl names its port in
/// stream headers, which the stand-in does not decompress: see `spdy.rs`).
pub(crate) fn pod_forward(extra: &Extra, namespace: &str, pod: &str) -> Option<SocketAddr> {
    let replaced = extra.faults.replace.as_ref();
    extra
        .forwards
        .iter()
        .find(|((ns, name, _), _)| ns == namespace && name == pod)
        .map(|(_, to)| *to)
        .or_else(|| replaced.and_then(|replace| replace.forward(pod)))
}

/// A SelfSubjectAccessReview answered from the stand-in's RBAC, as the authorizer answers it.
fn access_review(body: &[u8], refusal: &Refusal) -> (u16, Value) {
    let mut review: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let attributes = &review["spec"]["resourceAttributes"];
    let text = |key: &str| attributes[key].as_str().unwrap_or_default().to_string();
    let resource = match text("subresource").as_str() {
        "" => text("resource"),
        subresource => format!("{}/{subresource}", text("resource")),
    };
    let allowed = refusal(&resource, &text("verb"), &text("namespace"), None).is_none();
    review["status"] = if allowed {
        json!({"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding \"dev\""})
    } else {
        json!({"allowed": false})
    };
    (201, review)
}
