//! Whether a workload's rollout is done, by each kind's own rules, as `kubectl rollout status`
//! reads them (kubectl's polymorphichelpers/rollout_status.go), from the object the API server
//! returned. Pure.

use serde_json::Value;

use crate::cluster::client::WorkloadKind;

/// What the status says now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    /// Still rolling out: kubectl's words for what it waits for.
    Waiting(String),
    Done(String),
    /// It will not finish by waiting (a progress deadline exceeded, an OnDelete strategy).
    Failed(String),
}

fn int(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn opt(object: &Value, pointer: &str) -> Option<i64> {
    object.pointer(pointer).and_then(Value::as_i64)
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `kind`'s status of `object` (a Deployment, StatefulSet or DaemonSet as JSON).
pub(crate) fn status(kind: WorkloadKind, name: &str, object: &Value) -> Status {
    match kind {
        WorkloadKind::Deployment => deployment(name, object),
        WorkloadKind::StatefulSet => statefulset(object),
        WorkloadKind::DaemonSet => daemonset(name, object),
    }
}

fn deployment(name: &str, d: &Value) -> Status {
    if int(d, "/metadata/generation") > int(d, "/status/observedGeneration") {
        return Status::Waiting("waiting for deployment spec update to be observed".into());
    }
    let timed_out = d
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Progressing" && c["reason"] == "ProgressDeadlineExceeded");
    if timed_out {
        return Status::Failed(format!(
            "deployment {name:?} exceeded its progress deadline"
        ));
    }
    let updated = int(d, "/status/updatedReplicas");
    let replicas = int(d, "/status/replicas");
    let available = int(d, "/status/availableReplicas");
    let waiting = |what: String| {
        Status::Waiting(format!(
            "waiting for deployment {name:?} rollout to finish: {what}"
        ))
    };
    if let Some(wanted) = opt(d, "/spec/replicas")
        && updated < wanted
    {
        return waiting(format!(
            "{updated} out of {wanted} new replicas have been updated"
        ));
    }
    if replicas > updated {
        return waiting(format!(
            "{} old replicas are pending termination",
            replicas - updated
        ));
    }
    if available < updated {
        return waiting(format!(
            "{available} of {updated} updated replicas are available"
        ));
    }
    Status::Done(format!("deployment {name:?} successfully rolled out"))
}

fn daemonset(name: &str, ds: &Value) -> Status {
    let strategy = text(ds, "/spec/updateStrategy/type");
    if !strategy.is_empty() && strategy != "RollingUpdate" {
        return Status::Failed(format!(
            "daemon set {name:?} updates {strategy}: rollout status is only available for the RollingUpdate strategy type"
        ));
    }
    if int(ds, "/metadata/generation") > int(ds, "/status/observedGeneration") {
        return Status::Waiting("waiting for daemon set spec update to be observed".into());
    }
    let desired = int(ds, "/status/desiredNumberScheduled");
    let updated = int(ds, "/status/updatedNumberScheduled");
    let available = int(ds, "/status/numberAvailable");
    if updated < desired {
        return Status::Waiting(format!(
            "waiting for daemon set {name:?} rollout to finish: {updated} out of {desired} new pods have been updated"
        ));
    }
    if available < desired {
        return Status::Waiting(format!(
            "waiting for daemon set {name:?} rollout to finish: {available} of {desired} updated pods are available"
        ));
    }
    Status::Done(format!("daemon set {name:?} successfully rolled out"))
}

fn statefulset(sts: &Value) -> Status {
    let strategy = text(sts, "/spec/updateStrategy/type");
    if !strategy.is_empty() && strategy != "RollingUpdate" {
        return Status::Failed(format!(
            "the statefulset updates {strategy}: rollout status is only available for the RollingUpdate strategy type"
        ));
    }
    let observed = int(sts, "/status/observedGeneration");
    if observed == 0 || int(sts, "/metadata/generation") > observed {
        return Status::Waiting("waiting for statefulset spec update to be observed".into());
    }
    let ready = int(sts, "/status/readyReplicas");
    let updated = int(sts, "/status/updatedReplicas");
    let wanted = opt(sts, "/spec/replicas");
    if let Some(wanted) = wanted
        && ready < wanted
    {
        return Status::Waiting(format!("waiting for {} pods to be ready", wanted - ready));
    }
    if let (Some(wanted), Some(partition)) = (
        wanted,
        opt(sts, "/spec/updateStrategy/rollingUpdate/partition"),
    ) {
        if updated < wanted - partition {
            return Status::Waiting(format!(
                "waiting for partitioned roll out to finish: {updated} out of {} new pods have been updated",
                wanted - partition
            ));
        }
        return Status::Done(format!(
            "partitioned roll out complete: {updated} new pods have been updated"
        ));
    }
    let update_revision = text(sts, "/status/updateRevision");
    if update_revision != text(sts, "/status/currentRevision") {
        return Status::Waiting(format!(
            "waiting for statefulset rolling update to complete {updated} pods at revision {update_revision}"
        ));
    }
    Status::Done(format!(
        "statefulset rolling update complete {} pods at revision {update_revision}",
        int(sts, "/status/currentReplicas")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deploy(generation: i64, status: Value) -> Value {
        json!({"metadata": {"generation": generation}, "spec": {"replicas": 2}, "status": status})
    }

    #[test]
    fn a_deployment_is_done_when_observed_updated_and_available() {
        let d = |g, s| status(WorkloadKind::Deployment, "web", &deploy(g, s));
        assert!(
            matches!(d(2, json!({"observedGeneration": 1})), Status::Waiting(m) if m.contains("spec update"))
        );
        assert!(
            matches!(d(2, json!({"observedGeneration": 2, "updatedReplicas": 1, "replicas": 3})),
            Status::Waiting(m) if m.contains("1 out of 2 new replicas"))
        );
        assert!(
            matches!(d(2, json!({"observedGeneration": 2, "updatedReplicas": 2, "replicas": 3})),
            Status::Waiting(m) if m.contains("1 old replicas are pending termination"))
        );
        assert!(
            matches!(d(2, json!({"observedGeneration": 2, "updatedReplicas": 2, "replicas": 2, "availableReplicas": 1})),
            Status::Waiting(m) if m.contains("1 of 2 updated replicas are available"))
        );
        assert_eq!(
            d(
                2,
                json!({"observedGeneration": 2, "updatedReplicas": 2, "replicas": 2, "availableReplicas": 2})
            ),
            Status::Done("deployment \"web\" successfully rolled out".into())
        );
        let deadline = json!({"observedGeneration": 2, "conditions": [
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]});
        assert!(matches!(d(2, deadline), Status::Failed(_)));
    }

    #[test]
    fn a_statefulset_waits_for_ready_then_the_revisions() {
        let sts = |s: Value, strategy: Value| {
            status(
                WorkloadKind::StatefulSet,
                "db",
                &json!({"metadata": {"generation": 3}, "spec": {"replicas": 2, "updateStrategy": strategy}, "status": s}),
            )
        };
        let rolling = json!({"type": "RollingUpdate"});
        assert!(matches!(
            sts(json!({"observedGeneration": 0}), rolling.clone()),
            Status::Waiting(_)
        ));
        assert!(
            matches!(sts(json!({"observedGeneration": 3, "readyReplicas": 1}), rolling.clone()),
            Status::Waiting(m) if m == "waiting for 1 pods to be ready")
        );
        assert!(
            matches!(sts(json!({"observedGeneration": 3, "readyReplicas": 2, "updatedReplicas": 1,
            "currentRevision": "db-1", "updateRevision": "db-2"}), rolling.clone()), Status::Waiting(m) if m.contains("revision db-2"))
        );
        assert!(matches!(
            sts(
                json!({"observedGeneration": 3, "readyReplicas": 2, "currentReplicas": 2,
            "currentRevision": "db-2", "updateRevision": "db-2"}),
                rolling
            ),
            Status::Done(_)
        ));
        let partitioned = json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 1}});
        assert!(
            matches!(sts(json!({"observedGeneration": 3, "readyReplicas": 2, "updatedReplicas": 1}), partitioned), Status::Done(m) if m.contains("partitioned"))
        );
        assert!(matches!(
            sts(
                json!({"observedGeneration": 3}),
                json!({"type": "OnDelete"})
            ),
            Status::Failed(_)
        ));
    }

    #[test]
    fn a_daemonset_waits_for_updated_then_available_pods() {
        let ds = |s: Value| {
            status(
                WorkloadKind::DaemonSet,
                "agent",
                &json!({"metadata": {"generation": 2}, "spec": {"updateStrategy": {"type": "RollingUpdate"}}, "status": s}),
            )
        };
        assert!(matches!(
            ds(json!({"observedGeneration": 1})),
            Status::Waiting(_)
        ));
        assert!(
            matches!(ds(json!({"observedGeneration": 2, "desiredNumberScheduled": 1, "updatedNumberScheduled": 0})),
            Status::Waiting(m) if m.contains("0 out of 1 new pods"))
        );
        assert!(
            matches!(ds(json!({"observedGeneration": 2, "desiredNumberScheduled": 1, "updatedNumberScheduled": 1, "numberAvailable": 0})),
            Status::Waiting(m) if m.contains("0 of 1 updated pods are available"))
        );
        assert!(matches!(
            ds(
                json!({"observedGeneration": 2, "desiredNumberScheduled": 1, "updatedNumberScheduled": 1, "numberAvailable": 1})
            ),
            Status::Done(_)
        ));
    }
}
