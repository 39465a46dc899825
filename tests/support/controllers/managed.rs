//! The stand-in controllers' `metadata.managedFields`, kept as kube-apiserver's field manager
//! keeps them: one entry per (manager, operation, subresource) with its FieldsV1 set (`f:NAME`
//! for a map key, `k:{"name":"web"}` for a container, `.` for the element itself) and the time
//! of its last change. An Update (a PATCH or PUT, manager from `?fieldManager=`, else the
//! User-Agent's first word) takes the fields whose values it changed from every other manager;
//! an Apply (server-side apply, `application/apply-patch+yaml`, forced as controllers apply)
//! owns every field of its configuration and takes those it changed. Managers left with no
//! field are dropped.

use serde_json::{Map, Value, json};

/// A path of FieldsV1 keys down to a leaf.
type Path = Vec<String>;

/// The FieldsV1 set of what `object` (a patch or an applied configuration) holds.
pub(super) fn fields_of(object: &Value) -> Value {
    let Some(map) = object.as_object() else {
        return json!({});
    };
    let mut set = Map::new();
    for (key, value) in map {
        if key.starts_with('$') || matches!(key.as_str(), "apiVersion" | "kind") {
            continue;
        }
        let fields = match (key.as_str(), value) {
            ("containers" | "initContainers", Value::Array(items)) => {
                let mut list = Map::new();
                for item in items {
                    let Some(name) = item["name"].as_str() else {
                        continue;
                    };
                    let mut element = fields_of(item);
                    element["."] = json!({});
                    list.insert(format!("k:{}", json!({"name": name})), element);
                }
                Value::Object(list)
            }
            (_, Value::Object(_)) => fields_of(value),
            _ => json!({}),
        };
        set.insert(format!("f:{key}"), fields);
    }
    Value::Object(set)
}

fn leaves(fields: &Value, prefix: &mut Path, out: &mut Vec<Path>) {
    for (key, value) in fields.as_object().into_iter().flatten() {
        prefix.push(key.clone());
        match value.as_object() {
            Some(inner) if !inner.is_empty() => leaves(value, prefix, out),
            _ => out.push(prefix.clone()),
        }
        prefix.pop();
    }
}

/// The value a FieldsV1 path names in `object`.
fn value_at<'v>(object: &'v Value, path: &[String]) -> Option<&'v Value> {
    let mut at = object;
    for key in path {
        if key == "." {
            return Some(at);
        }
        at = if let Some(field) = key.strip_prefix("f:") {
            at.get(field)?
        } else {
            let wanted: Value = serde_json::from_str(key.strip_prefix("k:")?).ok()?;
            at.as_array()?
                .iter()
                .find(|item| item["name"] == wanted["name"])?
        };
    }
    Some(at)
}

fn insert(fields: &mut Value, path: &[String]) {
    let mut at = fields;
    for key in path {
        if !at.is_object() {
            *at = json!({});
        }
        at = at
            .as_object_mut()
            .expect("an object")
            .entry(key.clone())
            .or_insert_with(|| json!({}));
    }
}

/// Removes a leaf and every parent it leaves empty; true when `fields` is then empty.
fn remove(fields: &mut Value, path: &[String]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    let Some(map) = fields.as_object_mut() else {
        return false;
    };
    let emptied = match map.get_mut(first) {
        Some(inner) if !rest.is_empty() => remove(inner, rest),
        Some(_) => true,
        None => false,
    };
    if emptied {
        map.remove(first);
    }
    map.is_empty()
}

/// One write's effect on `after`'s managedFields (`before` is the object as it was): `set` is
/// the FieldsV1 of what the writer sent, `time` now as RFC 3339.
pub(super) struct Write<'a> {
    pub manager: &'a str,
    /// `Update` or `Apply`.
    pub operation: &'a str,
    pub subresource: Option<&'a str>,
    pub set: Value,
    pub time: &'a str,
}

pub(super) fn record(before: &Value, after: &mut Value, write: &Write<'_>) {
    let mut sent = Vec::new();
    leaves(&write.set, &mut Vec::new(), &mut sent);
    // An object's identity is no one's field.
    sent.retain(|path| {
        !(path.len() == 2
            && path[0] == "f:metadata"
            && matches!(path[1].as_str(), "f:name" | "f:namespace"))
    });
    let changed: Vec<&Path> = sent
        .iter()
        .filter(|path| value_at(before, path) != value_at(after, path))
        .collect();
    let mut entries: Vec<Value> = after["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let same = |entry: &Value| {
        entry["manager"] == write.manager
            && entry["operation"] == write.operation
            && entry["subresource"].as_str() == write.subresource
    };
    for entry in entries.iter_mut().filter(|entry| !same(entry)) {
        for path in &changed {
            remove(&mut entry["fieldsV1"], path);
        }
    }
    let mine = entries.iter().position(same);
    let mut owned = match (write.operation, mine) {
        ("Apply", _) | (_, None) => json!({}),
        (_, Some(at)) => entries[at]["fieldsV1"].clone(),
    };
    let taken: Vec<&Path> = match write.operation {
        "Apply" => sent.iter().collect(),
        _ => changed,
    };
    for path in taken {
        insert(&mut owned, path);
    }
    if let Some(at) = mine {
        entries.remove(at);
    }
    let mut entry = json!({"manager": write.manager, "operation": write.operation,
        "apiVersion": "apps/v1", "time": write.time, "fieldsType": "FieldsV1", "fieldsV1": owned});
    if let Some(subresource) = write.subresource {
        entry["subresource"] = json!(subresource);
    }
    entries.push(entry);
    entries.retain(|entry| entry["fieldsV1"].as_object().is_some_and(|f| !f.is_empty()));
    after["metadata"]["managedFields"] = Value::Array(entries);
}

/// Now, as the API server writes a managedFields or event time (seconds, UTC).
pub(super) fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
