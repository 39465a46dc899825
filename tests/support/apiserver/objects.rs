//! The stand-in API server's core objects: nodes, namespaces, the hosting ConfigMap (created,
//! updated, patched and deleted with resourceVersion checks), microk8s's registry Service and
//! OpenShift's image config.

use super::*;

/// One node, with the labels a kubelet sets by itself.
#[derive(Debug, Clone)]
pub(crate) struct StandInNode {
    pub(super) name: String,
    pub(super) labels: BTreeMap<String, String>,
    pub(super) annotations: BTreeMap<String, String>,
    pub(super) provider_id: Option<String>,
    /// `status.nodeInfo.containerRuntimeVersion`.
    pub(super) runtime: String,
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

/// Routes a write: only the hosting ConfigMap can be written, as a real server would take it.
pub(super) fn respond_to_write(
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
            return method_not_allowed();
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
    pub(super) fn create(&mut self, mut object: Value) -> (u16, Value) {
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
    pub(super) fn update(&mut self, mut object: Value) -> (u16, Value) {
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
    pub(super) fn patch(&mut self, content_type: &str, patch: &Value) -> (u16, Value) {
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

    pub(super) fn delete(&mut self, options: &Value) -> (u16, Value) {
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
    pub(super) fn another_writer_first(&mut self) {
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
pub(super) fn merge_patch(target: &mut Value, patch: &Value) {
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

pub(super) fn metadata(name: &str, namespace: Option<&str>) -> Value {
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

pub(super) fn namespace(name: &str) -> Value {
    json!({
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": metadata(name, None),
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

pub(super) fn configmap(namespace: &str, name: &str, data: &BTreeMap<String, String>) -> Value {
    json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": metadata(name, Some(namespace)),
        "data": data,
    })
}

pub(super) fn node(n: &StandInNode) -> Value {
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

pub(super) fn node_list(nodes: &[StandInNode]) -> Value {
    json!({
        "kind": "NodeList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "1"},
        "items": nodes.iter().map(node).collect::<Vec<_>>(),
    })
}

pub(super) fn microk8s_registry_service(node_port: i32) -> Value {
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

/// `images.config.openshift.io/cluster` as OpenShift 4 (and OpenShift Local) returns it.
pub(super) fn openshift_image_config(config: &OpenshiftImageConfig) -> Value {
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
