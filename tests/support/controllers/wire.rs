//! The stand-in controllers' wire: kinds and their resources, query parameters, the strategic
//! merge of a pod template patch and responses (the discovery documents are the API server's,
//! `apiserver::discovery`).

use std::io::Write;

use serde_json::{Value, json};

pub(super) fn kind_names(kind: &str) -> (&'static str, &'static str) {
    match kind.to_lowercase().as_str() {
        "deployment" | "deployments" => ("deployments", "Deployment"),
        "statefulset" | "statefulsets" => ("statefulsets", "StatefulSet"),
        "daemonset" | "daemonsets" => ("daemonsets", "DaemonSet"),
        other => panic!("no such workload kind in the stand-in controllers: {other}"),
    }
}

pub(super) fn is_workload(resource: &str) -> bool {
    matches!(resource, "deployments" | "statefulsets" | "daemonsets")
}

/// A query parameter, percent-decoded as far as selectors need.
pub(super) fn query_value(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| {
            v.replace("%3D", "=")
                .replace("%3d", "=")
                .replace("%2C", ",")
                .replace("%2c", ",")
        })
    })
}

/// `fieldSelector=metadata.name=NAME`
pub(super) fn named_in(query: &str) -> Option<String> {
    query_value(query, "fieldSelector").and_then(|s| {
        s.split(',')
            .find_map(|t| t.strip_prefix("metadata.name=").map(str::to_string))
    })
}

/// The apiserver's strategic merge for what a pod template patch holds: maps merge, lists of
/// containers merge by name, `$`-directives (kubectl's `$setElementOrder`) are read and dropped.
pub(super) fn strategic_merge(target: &mut Value, patch: &Value) {
    let Some(patch) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    for (key, value) in patch {
        if key.starts_with('$') {
            continue;
        }
        match (key.as_str(), value) {
            (_, Value::Null) => {
                target.as_object_mut().map(|map| map.remove(key));
            }
            ("containers" | "initContainers", Value::Array(items)) => {
                let list = target[key.as_str()].as_array().cloned().unwrap_or_default();
                let mut merged = list;
                for item in items {
                    match merged.iter_mut().find(|c| c["name"] == item["name"]) {
                        Some(existing) => strategic_merge(existing, item),
                        None => merged.push(item.clone()),
                    }
                }
                target[key.as_str()] = Value::Array(merged);
            }
            _ => strategic_merge(&mut target[key.as_str()], value),
        }
    }
}

pub(super) fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

pub(super) fn respond_json(stream: &mut dyn Write, code: u16, body: &Value) {
    let body = body.to_string();
    let reason = match code {
        200 => "OK",
        201 => "Created",
        403 => "Forbidden",
        404 => "Not Found",
        _ => "Error",
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}

pub(super) fn respond_text(stream: &mut dyn Write, code: u16, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {code} OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}
