//! The stand-in controllers' API: discovery of `apps/v1`, workloads read, listed, watched and
//! patched in any namespace, their pods listed, watched and read with their logs and events,
//! patched, replaced and deleted (pod_writes.rs),
//! SelfSubjectAccessReviews answered from what the test forbids, 403 for what it forbids.

use std::io::Write;
use std::time::Instant;

use serde_json::{Value, json};

use super::pod_writes::PodWrite;
use super::state::Key;
use super::wire::{
    is_workload, kind_names, named_in, query_value, respond_json, respond_text, status,
    strategic_merge,
};
use super::{Controllers, managed, watch};
use crate::support::apiserver::discovery::{
    api_groups, apps_group, apps_resources, authorization_resources,
};

impl Controllers {
    /// Answers the request when it is the controllers'; false to leave it to the rest.
    pub(crate) fn serve(
        &self,
        method: &str,
        target: &str,
        (headers, body): (&[(String, String)], &[u8]),
        stream: &mut dyn Write,
    ) -> bool {
        let path = target.split('?').next().unwrap_or("");
        let query = target.split_once('?').map_or("", |(_, q)| q);
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let watching = query_value(query, "watch").is_some_and(|w| w == "true" || w == "1");
        let answer = match (method, segments.as_slice()) {
            ("GET", ["apis"]) => (200, api_groups(false, true)),
            ("GET", ["apis", "apps"]) => (200, apps_group()),
            ("GET", ["apis", "apps", "v1"]) => (200, apps_resources()),
            ("GET", ["apis", "authorization.k8s.io", "v1"]) => (200, authorization_resources()),
            (
                "POST",
                [
                    "apis",
                    "authorization.k8s.io",
                    "v1",
                    "selfsubjectaccessreviews",
                ],
            ) => self.review(body),
            ("GET", ["apis", "apps", "v1", "namespaces", namespace, resource])
                if is_workload(resource) =>
            {
                if watching {
                    if let Some(refused) = self.refused("watch", resource) {
                        respond_json(stream, refused.0, &refused.1);
                    } else {
                        let wanted = watch::Wanted {
                            resource,
                            namespace,
                            query,
                        };
                        self.watch(&wanted, stream);
                    }
                    return true;
                }
                self.refused("list", resource)
                    .unwrap_or_else(|| self.list(namespace, resource, query))
            }
            (
                "GET" | "PATCH",
                [
                    "apis",
                    "apps",
                    "v1",
                    "namespaces",
                    namespace,
                    resource,
                    name,
                ],
            ) if is_workload(resource) => {
                let verb = method.to_ascii_lowercase();
                self.refused(&verb, resource)
                    .unwrap_or_else(|| match method {
                        "GET" => self.get(namespace, resource, name),
                        _ => {
                            let key = (
                                namespace.to_string(),
                                resource.to_string(),
                                name.to_string(),
                            );
                            self.patch(&key, query, headers, body)
                        }
                    })
            }
            ("GET", ["api", "v1", "namespaces", namespace, "pods"]) => {
                if watching {
                    if let Some(refused) = self.refused("watch", "pods") {
                        respond_json(stream, refused.0, &refused.1);
                    } else {
                        let wanted = watch::Wanted {
                            resource: "pods",
                            namespace,
                            query,
                        };
                        self.watch(&wanted, stream);
                    }
                    return true;
                }
                self.refused("list", "pods")
                    .unwrap_or_else(|| self.pod_list(namespace, query))
            }
            ("GET", ["api", "v1", "namespaces", namespace, "pods", name])
                if self.has_pod(namespace, name) =>
            {
                let state = self.0.state.lock().unwrap();
                (
                    200,
                    state.pods[&(namespace.to_string(), name.to_string())].clone(),
                )
            }
            ("PATCH" | "PUT" | "DELETE", ["api", "v1", "namespaces", namespace, "pods", name])
                if self.has_pod(namespace, name) =>
            {
                let verb = method.to_ascii_lowercase();
                let content_type = headers
                    .iter()
                    .find(|(key, _)| key.eq_ignore_ascii_case("content-type"))
                    .map_or("", |(_, value)| {
                        value.split(';').next().unwrap_or("").trim()
                    });
                self.refused(&verb, "pods").unwrap_or_else(|| {
                    self.write_pod(&PodWrite {
                        method,
                        namespace,
                        name,
                        query,
                        content_type,
                        body,
                    })
                })
            }
            _ => return self.serve_pods(method, &segments, query, stream),
        };
        respond_json(stream, answer.0, &answer.1);
        true
    }

    /// A pod's log and events, when the pod is the controllers'.
    fn serve_pods(
        &self,
        method: &str,
        segments: &[&str],
        query: &str,
        stream: &mut dyn Write,
    ) -> bool {
        let answer = match (method, segments) {
            ("GET", ["api", "v1", "namespaces", namespace, "pods", name, "log"])
                if self.has_pod(namespace, name) =>
            {
                if let Some(refused) = self.refused("get", "pods/log") {
                    refused
                } else {
                    let container = query_value(query, "container").unwrap_or_default();
                    let state = self.0.state.lock().unwrap();
                    let log = state
                        .logs
                        .get(&(namespace.to_string(), name.to_string(), container))
                        .cloned()
                        .unwrap_or_default();
                    respond_text(stream, 200, &log);
                    return true;
                }
            }
            ("GET", ["api", "v1", "namespaces", namespace, "events"]) => {
                let wanted = query_value(query, "fieldSelector").and_then(|s| {
                    s.split(',')
                        .find_map(|t| t.strip_prefix("involvedObject.name=").map(str::to_string))
                });
                match wanted {
                    Some(pod) if self.has_pod(namespace, &pod) => {
                        let state = self.0.state.lock().unwrap();
                        let items: Vec<Value> = state
                            .events
                            .iter()
                            .filter(|e| e["involvedObject"]["name"] == pod.as_str())
                            .cloned()
                            .collect();
                        (
                            200,
                            json!({"kind": "EventList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}),
                        )
                    }
                    _ => return false,
                }
            }
            _ => return false,
        };
        respond_json(stream, answer.0, &answer.1);
        true
    }

    fn has_pod(&self, namespace: &str, name: &str) -> bool {
        self.0
            .state
            .lock()
            .unwrap()
            .pods
            .contains_key(&(namespace.to_string(), name.to_string()))
    }

    fn refused(&self, verb: &str, resource: &str) -> Option<(u16, Value)> {
        let asked = (verb.to_string(), resource.to_string());
        let forbidden = self.0.forbidden.lock().unwrap().contains(&asked)
            || self.0.refused.lock().unwrap().contains(&asked);
        forbidden.then(|| {
            let message = format!(
                "{resource} is forbidden: User \"system:serviceaccount:default:dev\" cannot {verb} resource {resource:?} in the namespace \"default\""
            );
            (403, status(403, "Forbidden", &message))
        })
    }

    fn review(&self, body: &[u8]) -> (u16, Value) {
        let mut review: Value = serde_json::from_slice(body).unwrap_or_default();
        let attributes = &review["spec"]["resourceAttributes"];
        let mut resource = attributes["resource"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if let Some(sub) = attributes["subresource"].as_str().filter(|s| !s.is_empty()) {
            resource = format!("{resource}/{sub}");
        }
        let verb = attributes["verb"].as_str().unwrap_or_default().to_string();
        let allowed = !self.0.forbidden.lock().unwrap().contains(&(verb, resource));
        review["status"] = json!({"allowed": allowed});
        review["apiVersion"] = json!("authorization.k8s.io/v1");
        review["kind"] = json!("SelfSubjectAccessReview");
        (201, review)
    }

    fn get(&self, namespace: &str, resource: &str, name: &str) -> (u16, Value) {
        let state = self.0.state.lock().unwrap();
        let key = (
            namespace.to_string(),
            resource.to_string(),
            name.to_string(),
        );
        match state.workloads.get(&key) {
            Some(object) => (200, object.clone()),
            None => (
                404,
                status(
                    404,
                    "NotFound",
                    &format!("{resource}.apps {name:?} not found"),
                ),
            ),
        }
    }

    fn list(&self, namespace: &str, resource: &str, query: &str) -> (u16, Value) {
        let state = self.0.state.lock().unwrap();
        let (_, kind) = kind_names(resource);
        let name = named_in(query);
        let items: Vec<Value> = state
            .workloads
            .iter()
            .filter(|((ns, r, n), _)| {
                ns == namespace && r == resource && name.as_ref().is_none_or(|name| name == n)
            })
            .map(|(_, object)| object.clone())
            .collect();
        (
            200,
            json!({"kind": format!("{kind}List"), "apiVersion": "apps/v1",
                     "metadata": {"resourceVersion": state.version.to_string()}, "items": items}),
        )
    }

    fn pod_list(&self, namespace: &str, query: &str) -> (u16, Value) {
        let selector: Vec<(String, String)> = query_value(query, "labelSelector")
            .unwrap_or_default()
            .split(',')
            .filter_map(|t| {
                t.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect();
        let state = self.0.state.lock().unwrap();
        let items: Vec<Value> = state
            .pods
            .iter()
            .filter(|((ns, _), pod)| {
                ns == namespace
                    && selector
                        .iter()
                        .all(|(k, v)| pod["metadata"]["labels"][k] == v.as_str())
            })
            .map(|(_, pod)| pod.clone())
            .collect();
        (
            200,
            json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": state.version.to_string()}, "items": items}),
        )
    }

    /// A strategic-merge patch (or a server-side apply) of the workload: a new generation when
    /// its spec changed, stored with its managedFields; the controllers notice it later, on
    /// their own loop.
    fn patch(
        &self,
        key: &Key,
        query: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> (u16, Value) {
        let (_, resource, name) = key;
        let patch: Value = serde_json::from_slice(body).unwrap_or_default();
        let dry_run = query_value(query, "dryRun").is_some();
        let header = |wanted: &str| {
            headers
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(wanted))
                .map_or("", |(_, value)| value.as_str())
        };
        let apply = header("content-type").starts_with("application/apply-patch");
        // kube-apiserver: `?fieldManager=`, else the User-Agent up to its first `/`.
        let manager = query_value(query, "fieldManager").unwrap_or_else(|| {
            header("user-agent")
                .split('/')
                .next()
                .unwrap_or("")
                .to_string()
        });
        if apply && query_value(query, "fieldManager").is_none() {
            let message =
                "PATCH, application/apply-patch+yaml: fieldManager is required for apply requests";
            return (400, status(400, "BadRequest", message));
        }
        let mut state = self.0.state.lock().unwrap();
        let Some(current) = state.workloads.get(key).cloned() else {
            return (
                404,
                status(
                    404,
                    "NotFound",
                    &format!("{resource}.apps {name:?} not found"),
                ),
            );
        };
        let mut updated = current.clone();
        strategic_merge(&mut updated, &patch);
        let policy = self.0.admission.lock().unwrap().clone();
        if let Some(refusal) = policy.and_then(|policy| policy.check(resource, name, &updated)) {
            return refusal;
        }
        if dry_run {
            return (200, updated);
        }
        state.patches.push(patch.clone());
        if updated["spec"] != current["spec"] {
            updated["metadata"]["generation"] =
                json!(current["metadata"]["generation"].as_i64().unwrap_or(1) + 1);
        }
        let time = managed::now();
        let write = managed::Write {
            manager: &manager,
            operation: if apply { "Apply" } else { "Update" },
            subresource: None,
            set: managed::fields_of(&patch),
            time: &time,
        };
        managed::record(&current, &mut updated, &write);
        state.put_workload(key, updated);
        let delay = {
            let mut timing = self.0.timing.lock().unwrap();
            timing.fixed.unwrap_or_else(|| timing.next())
        };
        state
            .due_workloads
            .entry(key.clone())
            .or_insert(Instant::now() + delay);
        let stored = state.workloads[key].clone();
        drop(state);
        self.0.changed.notify_all();
        (200, stored)
    }
}
