//! Writes to the controllers' pods as kube-apiserver takes them: DELETE (graceful: see
//! terminating.rs), PATCH (merge, strategic-merge with `metadata.finalizers` merged as a set,
//! JSON patch) and PUT of a pod's metadata. A pod's spec is not changed (422), a stale
//! resourceVersion is a 409, a finalizer added to a terminating pod is refused (422); a write
//! that empties the finalizers of a terminating pod deletes it, and its controller looks again.

use std::time::Instant;

use serde_json::{Value, json};

use super::Controllers;
use super::state::State;
use super::steps::owner_of;
use super::terminating::{finalizers, terminating};
use super::wire::{query_value, status};

/// One write to a pod.
pub(super) struct PodWrite<'a> {
    pub method: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub query: &'a str,
    pub content_type: &'a str,
    pub body: &'a [u8],
}

impl Controllers {
    /// The answer to `write`, the pod in it as it stands after (a deleted one as last seen).
    pub(super) fn write_pod(&self, write: &PodWrite<'_>) -> (u16, Value) {
        let key = (write.namespace.to_string(), write.name.to_string());
        let mut state = self.0.state.lock().unwrap();
        let Some(current) = state.pods.get(&key).cloned() else {
            let message = format!("pods {:?} not found", write.name);
            return (404, status(404, "NotFound", &message));
        };
        let dry_run = query_value(write.query, "dryRun").is_some();
        let answer = match write.method {
            "DELETE" if dry_run => (200, current.clone()),
            "DELETE" => {
                let options: Value = serde_json::from_slice(write.body).unwrap_or_default();
                let grace = query_value(write.query, "gracePeriodSeconds")
                    .and_then(|g| g.parse().ok())
                    .or_else(|| options["gracePeriodSeconds"].as_i64());
                state.delete_pod_gracefully(write.namespace, write.name, grace);
                (
                    200,
                    state
                        .pods
                        .get(&key)
                        .cloned()
                        .unwrap_or_else(|| current.clone()),
                )
            }
            _ => match updated(&current, write) {
                Err(refused) => refused,
                Ok(pod) if dry_run => (200, pod),
                Ok(pod) => {
                    state.put_pod(write.namespace, pod);
                    let stored = state.pods[&key].clone();
                    if terminating(&stored) && finalizers(&stored).is_empty() {
                        state.delete_pod(write.namespace, write.name);
                    }
                    (200, stored)
                }
            },
        };
        if !state.pods.contains_key(&key) {
            self.look_again(&mut state, &current);
        }
        drop(state);
        self.0.changed.notify_all();
        answer
    }

    /// The controller of `pod` notices it is gone.
    fn look_again(&self, state: &mut State, pod: &Value) {
        if let Some(owner) = owner_of(pod) {
            let delay = self.0.timing.lock().unwrap().next();
            state
                .due_workloads
                .entry(owner)
                .or_insert(Instant::now() + delay);
        }
    }
}

/// `current` after a PATCH or PUT, or the API server's refusal.
fn updated(current: &Value, write: &PodWrite<'_>) -> Result<Value, (u16, Value)> {
    let sent: Value = serde_json::from_slice(write.body).map_err(|e| {
        (
            400,
            status(400, "BadRequest", &format!("invalid JSON: {e}")),
        )
    })?;
    let mut pod = current.clone();
    match (write.method, write.content_type) {
        ("PUT", _) => {
            for field in ["labels", "annotations", "finalizers"] {
                pod["metadata"][field] = sent["metadata"][field].clone();
            }
            pod["spec"] = sent["spec"].clone();
        }
        (_, "application/merge-patch+json") => merge(&mut pod, &sent),
        (_, "application/strategic-merge-patch+json") => strategic(&mut pod, &sent),
        (_, "application/json-patch+json") => json_patch(&mut pod, &sent)?,
        (_, other) => {
            let message = format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (the stand-in got {other:?})"
            );
            return Err((415, status(415, "UnsupportedMediaType", &message)));
        }
    }
    let name = write.name;
    let sent_version = &sent["metadata"]["resourceVersion"];
    if !sent_version.is_null() && *sent_version != current["metadata"]["resourceVersion"] {
        let message = format!(
            "Operation cannot be fulfilled on pods {name:?}: the object has been modified; please apply your changes to the latest version and try again"
        );
        return Err((409, status(409, "Conflict", &message)));
    }
    if pod["spec"] != current["spec"] {
        let message = format!(
            "Pod {name:?} is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations) or `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
        );
        return Err((422, status(422, "Invalid", &message)));
    }
    let before = finalizers(current);
    let added: Vec<String> = finalizers(&pod)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    if terminating(current) && !added.is_empty() {
        let message = format!(
            "Pod {name:?} is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
            added
                .iter()
                .map(|f| format!("{f:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Err((422, status(422, "Invalid", &message)));
    }
    // Status, resourceVersion and the deletion fields are the server's.
    pod["status"] = current["status"].clone();
    for field in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "uid",
    ] {
        pod["metadata"][field] = current["metadata"][field].clone();
    }
    if pod["metadata"]["finalizers"]
        .as_array()
        .is_some_and(Vec::is_empty)
    {
        pod["metadata"]
            .as_object_mut()
            .map(|m| m.remove("finalizers"));
    }
    Ok(pod)
}

/// RFC 7386: maps merged, `null` removes, anything else replaces.
fn merge(target: &mut Value, patch: &Value) {
    let Some(patch) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    for (key, value) in patch {
        if value.is_null() {
            target.as_object_mut().map(|m| m.remove(key));
        } else {
            merge(&mut target[key.as_str()], value);
        }
    }
}

/// A strategic merge of metadata: `finalizers` merged as a set (`patchStrategy: merge`), those
/// in `$deleteFromPrimitiveList/finalizers` removed; other lists replace, maps merge.
fn strategic(pod: &mut Value, patch: &Value) {
    let mut patch = patch.clone();
    let meta = &mut patch["metadata"];
    let remove: Vec<Value> = meta["$deleteFromPrimitiveList/finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let adding = meta["finalizers"].as_array().cloned();
    if let Some(meta) = meta.as_object_mut() {
        meta.retain(|key, _| !key.starts_with('$') && key != "finalizers");
    }
    merge(pod, &patch);
    let mut kept: Vec<Value> = pod["metadata"]["finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for finalizer in adding.into_iter().flatten() {
        if !kept.contains(&finalizer) {
            kept.push(finalizer);
        }
    }
    kept.retain(|f| !remove.contains(f));
    pod["metadata"]["finalizers"] = json!(kept);
}

/// RFC 6902's add, remove and replace (what `kubectl patch --type=json` sends for metadata).
fn json_patch(pod: &mut Value, ops: &Value) -> Result<(), (u16, Value)> {
    let invalid = |message: String| (422, status(422, "Invalid", &message));
    for op in ops.as_array().into_iter().flatten() {
        let path = op["path"].as_str().unwrap_or_default();
        let (parent, last) = path
            .rsplit_once('/')
            .ok_or_else(|| invalid(format!("invalid path {path:?}")))?;
        let target = pod
            .pointer_mut(parent)
            .ok_or_else(|| invalid(format!("doc is missing path: {path:?}")))?;
        match (op["op"].as_str(), target) {
            (Some("remove"), Value::Object(map)) => map
                .remove(last)
                .map(drop)
                .ok_or_else(|| invalid(format!("doc is missing key: {path:?}")))?,
            (Some("remove"), Value::Array(list)) => match last.parse::<usize>() {
                Ok(at) if at < list.len() => drop(list.remove(at)),
                _ => return Err(invalid(format!("doc is missing index: {path:?}"))),
            },
            (Some("add" | "replace"), Value::Object(map)) => {
                map.insert(last.to_string(), op["value"].clone());
            }
            (Some("add"), Value::Array(list)) if last == "-" => list.push(op["value"].clone()),
            (Some("add" | "replace"), Value::Array(list)) => match last.parse::<usize>() {
                Ok(at) if at < list.len() && op["op"] == "replace" => {
                    list[at] = op["value"].clone()
                }
                Ok(at) if at <= list.len() => list.insert(at, op["value"].clone()),
                _ => return Err(invalid(format!("invalid index in {path:?}"))),
            },
            (op, _) => {
                return Err(invalid(format!(
                    "the stand-in does not apply {op:?} at {path:?}"
                )));
            }
        }
    }
    Ok(())
}
