//! How the stand-in API server refuses: `Status` objects for 403 (RBAC), 404 and 409, as a real
//! server words them.

use super::*;

pub(super) fn not_found(resource: &str, name: &str) -> (u16, Value) {
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
pub(super) fn refusal(
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

pub(super) fn hosting_details() -> Value {
    json!({"name": HOSTING_NAME, "kind": "configmaps"})
}

pub(super) fn not_found_hosting() -> (u16, Value) {
    let message = format!("configmaps {HOSTING_NAME:?} not found");
    (404, status(404, "NotFound", &message, hosting_details()))
}

pub(super) fn conflict() -> (u16, Value) {
    let message = format!(
        "Operation cannot be fulfilled on configmaps {HOSTING_NAME:?}: the object has been modified; please apply your changes to the latest version and try again"
    );
    (409, status(409, "Conflict", &message, hosting_details()))
}

pub(super) fn status(code: u16, reason: &str, message: &str, details: Value) -> Value {
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

/// The 405 a real server answers a method it does not serve on a path.
pub(super) fn method_not_allowed() -> (u16, Value) {
    (
        405,
        status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            json!({}),
        ),
    )
}
