//! Whether a workload's template still runs the pushed ref in each container we set, and, for
//! each that runs another image, who set it and when: the `metadata.managedFields` entry that
//! owns that container's `image` (its manager, operation and time). Pure.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use serde_json::Value;

use super::workload::Workload;

/// A container we set that now runs another image, and who set it, when the server recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    pub container: String,
    /// The image its template runs now.
    pub image: String,
    /// The managedFields entry that owns the container's image: `kubectl-set`,
    /// `argocd-controller`, `kustomize-controller`, `helm`...
    pub by: Option<Writer>,
}

/// One managedFields entry: who wrote, how, when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    pub manager: String,
    /// `Update` or `Apply`.
    pub operation: String,
    /// RFC 3339, as the server recorded it.
    pub time: Option<String>,
}

/// The containers among `containers` whose template image is no longer `reference`, with who
/// owns each one's image; empty when every one still runs it.
pub fn replaced(workload: &Workload, containers: &[String], reference: &str) -> Vec<Replaced> {
    let template = workload.containers();
    let managed = workload
        .metadata()
        .managed_fields
        .as_deref()
        .unwrap_or_default();
    containers
        .iter()
        .filter_map(|name| {
            let found = template.iter().find(|c| &c.name == name)?;
            (found.image != reference).then(|| Replaced {
                container: name.clone(),
                image: found.image.clone(),
                by: owner(managed, name, found.init),
            })
        })
        .collect()
}

/// The entry whose fieldsV1 holds `f:spec.f:template.f:spec.f:containers.k:{"name":NAME}.f:image`
/// (`f:initContainers` for an init container); the latest one if several do.
fn owner(managed: &[ManagedFieldsEntry], container: &str, init: bool) -> Option<Writer> {
    let list = if init {
        "f:initContainers"
    } else {
        "f:containers"
    };
    managed
        .iter()
        .filter(|entry| {
            let fields = entry.fields_v1.as_ref().map(|f| &f.0);
            let containers = fields
                .and_then(|f| f.get("f:spec"))
                .and_then(|f| f.get("f:template"))
                .and_then(|f| f.get("f:spec"))
                .and_then(|f| f.get(list));
            containers.is_some_and(|c| owns_image(c, container))
        })
        .max_by_key(|entry| entry.time.as_ref().map(|t| t.0))
        .map(|entry| Writer {
            manager: entry.manager.clone().unwrap_or_default(),
            operation: entry.operation.clone().unwrap_or_default(),
            time: entry.time.as_ref().map(|t| t.0.to_string()),
        })
}

/// Whether a `f:containers` set holds `k:{"name":NAME}` with `f:image` in it.
fn owns_image(containers: &Value, name: &str) -> bool {
    containers.as_object().is_some_and(|keys| {
        keys.iter().any(|(key, fields)| {
            let named = key
                .strip_prefix("k:")
                .and_then(|json| serde_json::from_str::<Value>(json).ok())
                .is_some_and(|k| k.get("name").and_then(Value::as_str) == Some(name));
            named && fields.get("f:image").is_some()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use serde_json::json;

    /// A Deployment as a real kube-apiserver returns it after `kubectl set image` took the
    /// image of container `web` from the one who applied it.
    fn deployment(web: &str) -> Workload {
        let d: Deployment = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "generation": 3, "managedFields": [
                {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "apps/v1",
                 "time": "2026-12-07T17:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {
                    "f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"side\"}": {".": {}, "f:image": {}, "f:name": {}},
                        "k:{\"name\":\"web\"}": {".": {}, "f:name": {}}}}}}}},
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
                 "time": "2026-12-07T17:10:04Z", "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:replicas": {}}}},
                {"manager": "kubectl-set", "operation": "Update", "apiVersion": "apps/v1",
                 "time": "2026-12-07T17:10:03Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {
                    "f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"web\"}": {"f:image": {}}}}}}}},
            ]},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {"containers": [
                {"name": "web", "image": web}, {"name": "side", "image": "r/side:1"}]}}},
        }))
        .unwrap();
        Workload::Deployment(d)
    }

    #[test]
    fn another_image_is_named_with_the_manager_that_owns_it() {
        let found = replaced(
            &deployment("r/app:other"),
            &["web".into()],
            "r/app:dev@sha256:ab",
        );
        assert_eq!(
            found,
            [Replaced {
                container: "web".into(),
                image: "r/app:other".into(),
                by: Some(Writer {
                    manager: "kubectl-set".into(),
                    operation: "Update".into(),
                    time: Some("2026-12-07T17:10:03Z".into()),
                }),
            }]
        );
    }

    #[test]
    fn our_ref_still_there_is_no_replacement_whatever_else_changed() {
        let ours = "r/app:dev@sha256:ab";
        assert!(replaced(&deployment(ours), &["web".into()], ours).is_empty());
    }

    #[test]
    fn an_image_no_entry_owns_is_named_without_a_writer() {
        let found = replaced(&deployment("r/app:other"), &["side".into()], "r/app:dev");
        assert_eq!(found[0].image, "r/side:1");
        assert_eq!(
            found[0].by.as_ref().map(|w| w.manager.as_str()),
            Some("kubectl-client-side-apply")
        );
        let mut bare = deployment("r/app:other");
        if let Workload::Deployment(d) = &mut bare {
            d.metadata.managed_fields = None;
        }
        assert_eq!(replaced(&bare, &["web".into()], "r/app:dev")[0].by, None);
    }
}
