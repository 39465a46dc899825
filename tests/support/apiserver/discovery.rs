//! The one set of discovery documents the stand-in API server and its controllers serve: the
//! version, the core, apps and authorization resources, and OpenShift's config group.

use super::*;

pub(super) fn version() -> Value {
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

pub(super) fn api_versions(port: u16) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": format!("127.0.0.1:{port}")}],
    })
}

pub(super) fn core_v1_resources() -> Value {
    let verbs = json!(VERBS);
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

/// What a resource of the core and apps groups allows.
const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// `/apis`: apps and authorization when the stand-in controllers run workloads, OpenShift's
/// config group when it plays OpenShift.
pub(crate) fn api_groups(openshift: bool, workloads: bool) -> Value {
    let mut groups = Vec::new();
    if workloads {
        groups.push(apps_group());
        groups.push(json!({"name": "authorization.k8s.io",
            "versions": [{"groupVersion": "authorization.k8s.io/v1", "version": "v1"}],
            "preferredVersion": {"groupVersion": "authorization.k8s.io/v1", "version": "v1"}}));
    }
    if openshift {
        groups.push(openshift_config_group());
    }
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub(crate) fn apps_group() -> Value {
    let version = json!({"groupVersion": "apps/v1", "version": "v1"});
    json!({"kind": "APIGroup", "apiVersion": "v1", "name": "apps", "versions": [version], "preferredVersion": version})
}

pub(crate) fn authorization_resources() -> Value {
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "authorization.k8s.io/v1", "resources": [
        {"name": "selfsubjectaccessreviews", "singularName": "selfsubjectaccessreview", "namespaced": false,
         "kind": "SelfSubjectAccessReview", "verbs": ["create"]},
    ]})
}

pub(crate) fn apps_resources() -> Value {
    let verbs = json!(VERBS);
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1", "resources": [
        {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment", "verbs": verbs, "shortNames": ["deploy"], "categories": ["all"]},
        {"name": "statefulsets", "singularName": "statefulset", "namespaced": true, "kind": "StatefulSet", "verbs": verbs, "shortNames": ["sts"], "categories": ["all"]},
        {"name": "daemonsets", "singularName": "daemonset", "namespaced": true, "kind": "DaemonSet", "verbs": verbs, "shortNames": ["ds"], "categories": ["all"]},
    ]})
}

pub(super) fn openshift_config_group() -> Value {
    let version = json!({"groupVersion": "config.openshift.io/v1", "version": "v1"});
    json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": "config.openshift.io",
        "versions": [version],
        "preferredVersion": version,
    })
}

pub(super) fn openshift_config_resources() -> Value {
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
