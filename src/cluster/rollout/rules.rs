//! Whether a workload's rollout is done, by each kind's own rules as `kubectl rollout status`
//! reads them (kubectl's polymorphichelpers/rollout_status.go), over the typed object the API
//! server returned, and never before the controller observed the generation our PATCH made.
//! Pure.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};

use super::workload::Workload;

/// What the status says now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Still rolling out: kubectl's words for what it waits for.
    Waiting(String),
    Done(String),
    /// It will not finish by waiting (a progress deadline exceeded, an OnDelete strategy).
    Failed(String),
    /// A paused Deployment: it rolls once resumed, never by waiting.
    Paused(String),
}

/// The reason kubectl reads on the `Progressing` condition of a Deployment past its deadline.
const TIMED_OUT: &str = "ProgressDeadlineExceeded";

/// `workload`'s status. `patched` is the generation the PATCH answered: a status whose
/// `observedGeneration` is below it (or below the object's own generation) was written before
/// the controller saw the change, whatever its counts say.
pub fn status(workload: &Workload, patched: i64) -> Status {
    let wanted = workload.generation().max(patched);
    match workload {
        Workload::Deployment(d) => deployment(d, wanted),
        Workload::StatefulSet(s) => statefulset(s, wanted),
        Workload::DaemonSet(d) => daemonset(d, wanted),
    }
}

fn name(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

fn deployment(d: &Deployment, wanted: i64) -> Status {
    let name = name(&d.metadata);
    let spec = d.spec.clone().unwrap_or_default();
    if spec.paused == Some(true) {
        return Status::Paused(format!("deployment {name:?} is paused"));
    }
    let status = d.status.clone().unwrap_or_default();
    if status.observed_generation.unwrap_or(0) < wanted {
        return Status::Waiting("waiting for deployment spec update to be observed".into());
    }
    let timed_out = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Progressing" && c.reason.as_deref() == Some(TIMED_OUT));
    if timed_out {
        return Status::Failed(format!(
            "deployment {name:?} exceeded its progress deadline"
        ));
    }
    let updated = status.updated_replicas.unwrap_or(0);
    let replicas = status.replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    let waiting = |what: String| {
        Status::Waiting(format!(
            "waiting for deployment {name:?} rollout to finish: {what}"
        ))
    };
    if let Some(wanted) = spec.replicas
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

fn daemonset(ds: &DaemonSet, wanted: i64) -> Status {
    let name = name(&ds.metadata);
    let strategy = ds
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|s| s.type_.clone())
        .unwrap_or_default();
    if !strategy.is_empty() && strategy != "RollingUpdate" {
        return Status::Failed(format!(
            "daemon set {name:?} updates {strategy}: rollout status is only available for the RollingUpdate strategy type"
        ));
    }
    let status = ds.status.clone().unwrap_or_default();
    if status.observed_generation.unwrap_or(0) < wanted {
        return Status::Waiting("waiting for daemon set spec update to be observed".into());
    }
    let desired = status.desired_number_scheduled;
    let updated = status.updated_number_scheduled.unwrap_or(0);
    let available = status.number_available.unwrap_or(0);
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

fn statefulset(sts: &StatefulSet, wanted: i64) -> Status {
    let spec = sts.spec.clone().unwrap_or_default();
    let strategy = spec.update_strategy.clone().unwrap_or_default();
    let kind = strategy.type_.clone().unwrap_or_default();
    if !kind.is_empty() && kind != "RollingUpdate" {
        return Status::Failed(format!(
            "statefulset {:?} updates {kind}: rollout status is only available for the RollingUpdate strategy type",
            name(&sts.metadata)
        ));
    }
    let status = sts.status.clone().unwrap_or_default();
    let observed = status.observed_generation.unwrap_or(0);
    if observed == 0 || observed < wanted {
        return Status::Waiting("waiting for statefulset spec update to be observed".into());
    }
    let ready = status.ready_replicas.unwrap_or(0);
    let updated = status.updated_replicas.unwrap_or(0);
    if let Some(replicas) = spec.replicas
        && ready < replicas
    {
        return Status::Waiting(format!("waiting for {} pods to be ready", replicas - ready));
    }
    // kubectl: a rollingUpdate block (the API server defaults one, partition 0) ends here.
    if let Some(rolling) = &strategy.rolling_update {
        if let (Some(replicas), Some(partition)) = (spec.replicas, rolling.partition)
            && updated < replicas - partition
        {
            return Status::Waiting(format!(
                "waiting for partitioned roll out to finish: {updated} out of {} new pods have been updated",
                replicas - partition
            ));
        }
        return Status::Done(format!(
            "partitioned roll out complete: {updated} new pods have been updated"
        ));
    }
    let update_revision = status.update_revision.unwrap_or_default();
    if Some(&update_revision) != status.current_revision.as_ref() {
        return Status::Waiting(format!(
            "waiting for statefulset rolling update to complete {updated} pods at revision {update_revision}"
        ));
    }
    Status::Done(format!(
        "statefulset rolling update complete {} pods at revision {update_revision}",
        status.current_replicas.unwrap_or(0)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn deployment(generation: i64, spec: Value, status: Value) -> Workload {
        let mut full = json!({"selector": {}, "template": {}, "replicas": 4});
        strategic(&mut full, &spec);
        Workload::Deployment(
            serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "app", "generation": generation}, "spec": full, "status": status}))
            .unwrap(),
        )
    }

    fn strategic(into: &mut Value, from: &Value) {
        for (key, value) in from.as_object().unwrap() {
            into[key] = value.clone();
        }
    }

    fn waiting(status: Status) -> String {
        match status {
            Status::Waiting(line) => line,
            other => panic!("not waiting: {other:?}"),
        }
    }

    #[test]
    fn a_deployment_right_after_its_patch_waits_for_the_generation_to_be_observed() {
        // What a GET right after the PATCH returns: the new generation, the old status, whose
        // counts all look rolled out.
        let stale = json!({"observedGeneration": 1, "replicas": 4, "updatedReplicas": 4, "availableReplicas": 4});
        assert_eq!(
            waiting(status(&deployment(2, json!({}), stale.clone()), 2)),
            "waiting for deployment spec update to be observed"
        );
        // A watch event older than the patch's answer (generation 1): the patch's generation holds.
        assert_eq!(
            waiting(status(&deployment(1, json!({}), stale), 2)),
            "waiting for deployment spec update to be observed"
        );
        let observed = json!({"observedGeneration": 2, "replicas": 4, "updatedReplicas": 4, "availableReplicas": 4});
        assert_eq!(
            status(&deployment(2, json!({}), observed), 2),
            Status::Done("deployment \"app\" successfully rolled out".into())
        );
    }

    #[test]
    fn a_deployment_past_its_progress_deadline_fails_in_kubectls_words() {
        let status_ = json!({"observedGeneration": 2, "replicas": 5, "updatedReplicas": 1, "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]});
        assert_eq!(
            status(&deployment(2, json!({}), status_), 2),
            Status::Failed("deployment \"app\" exceeded its progress deadline".into())
        );
        // Before the controller observed the patch, its old deadline says nothing yet.
        let old = json!({"observedGeneration": 1, "conditions": [
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]});
        assert!(matches!(
            status(&deployment(2, json!({}), old), 2),
            Status::Waiting(_)
        ));
    }

    #[test]
    fn a_paused_deployment_is_said_at_once() {
        let stale = json!({"observedGeneration": 1});
        assert_eq!(
            status(&deployment(2, json!({"paused": true}), stale), 2),
            Status::Paused("deployment \"app\" is paused".into())
        );
    }

    #[test]
    fn a_deployment_of_zero_replicas_is_done_once_observed() {
        let zero = json!({"replicas": 0});
        assert!(matches!(
            status(
                &deployment(3, zero.clone(), json!({"observedGeneration": 2})),
                3
            ),
            Status::Waiting(_)
        ));
        assert_eq!(
            status(&deployment(3, zero, json!({"observedGeneration": 3})), 3),
            Status::Done("deployment \"app\" successfully rolled out".into())
        );
    }

    #[test]
    fn a_surge_rollout_is_followed_step_by_step_as_kubectl_words_it() {
        // 4 replicas, maxSurge 1, maxUnavailable 0: the controller's steps.
        let steps = [
            (
                json!({"replicas": 5, "updatedReplicas": 1, "availableReplicas": 4}),
                "1 out of 4 new replicas have been updated",
            ),
            (
                json!({"replicas": 5, "updatedReplicas": 3, "availableReplicas": 4}),
                "3 out of 4 new replicas have been updated",
            ),
            (
                json!({"replicas": 5, "updatedReplicas": 4, "availableReplicas": 4}),
                "1 old replicas are pending termination",
            ),
            (
                json!({"replicas": 4, "updatedReplicas": 4, "availableReplicas": 3}),
                "3 of 4 updated replicas are available",
            ),
        ];
        for (counts, said) in steps {
            let mut s = counts.clone();
            s["observedGeneration"] = json!(2);
            assert_eq!(
                waiting(status(&deployment(2, json!({}), s), 2)),
                format!("waiting for deployment \"app\" rollout to finish: {said}")
            );
        }
        // maxUnavailable 1, no surge: one old scaled down first, 3 replicas, none updated.
        let unavailable = json!({"observedGeneration": 2, "replicas": 3, "updatedReplicas": 0, "availableReplicas": 3});
        assert_eq!(
            waiting(status(&deployment(2, json!({}), unavailable), 2)),
            "waiting for deployment \"app\" rollout to finish: 0 out of 4 new replicas have been updated"
        );
    }

    fn sts(generation: i64, strategy: Value, status_: Value) -> Workload {
        Workload::StatefulSet(
            serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": "db", "generation": generation},
                "spec": {"replicas": 3, "selector": {}, "template": {}, "serviceName": "db", "updateStrategy": strategy},
                "status": status_}))
            .unwrap(),
        )
    }

    #[test]
    fn a_statefulset_waits_for_observed_ready_then_the_revisions() {
        let rolling = json!({"type": "RollingUpdate"});
        let st = |s: Value| status(&sts(3, rolling.clone(), s), 3);
        assert_eq!(
            waiting(st(
                json!({"replicas": 3, "observedGeneration": 2, "readyReplicas": 3,
                "currentRevision": "db-2", "updateRevision": "db-2"})
            )),
            "waiting for statefulset spec update to be observed"
        );
        assert_eq!(
            waiting(st(
                json!({"replicas": 3, "observedGeneration": 3, "readyReplicas": 2})
            )),
            "waiting for 1 pods to be ready"
        );
        assert_eq!(
            waiting(st(
                json!({"replicas": 3, "observedGeneration": 3, "readyReplicas": 3, "updatedReplicas": 1,
                "currentRevision": "db-2", "updateRevision": "db-3"})
            )),
            "waiting for statefulset rolling update to complete 1 pods at revision db-3"
        );
        assert_eq!(
            st(
                json!({"replicas": 3, "observedGeneration": 3, "readyReplicas": 3, "currentReplicas": 3,
                "currentRevision": "db-3", "updateRevision": "db-3"})
            ),
            Status::Done("statefulset rolling update complete 3 pods at revision db-3".into())
        );
    }

    #[test]
    fn a_partitioned_statefulset_is_done_when_the_pods_above_the_partition_are_updated() {
        let partitioned = json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 1}});
        let st = |s: Value| status(&sts(3, partitioned.clone(), s), 3);
        assert_eq!(
            waiting(st(
                json!({"replicas": 3, "observedGeneration": 3, "readyReplicas": 3, "updatedReplicas": 1})
            )),
            "waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated"
        );
        assert_eq!(
            st(
                json!({"replicas": 3, "observedGeneration": 3, "readyReplicas": 3, "updatedReplicas": 2})
            ),
            Status::Done("partitioned roll out complete: 2 new pods have been updated".into())
        );
    }

    #[test]
    fn an_on_delete_statefulset_or_daemonset_cannot_be_waited_for() {
        assert!(matches!(
            status(&sts(3, json!({"type": "OnDelete"}), json!({"replicas": 3})), 3),
            Status::Failed(m) if m.contains("only available for the RollingUpdate strategy type")
        ));
        assert!(matches!(
            status(&ds(2, "OnDelete", json!({})), 2),
            Status::Failed(m) if m.contains("daemon set \"agent\" updates OnDelete")
        ));
    }

    fn ds(generation: i64, strategy: &str, status_: Value) -> Workload {
        Workload::DaemonSet(
            serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": "agent", "generation": generation},
                "spec": {"selector": {}, "template": {}, "updateStrategy": {"type": strategy}},
                "status": status_}))
            .unwrap(),
        )
    }

    #[test]
    fn a_daemonset_rolls_node_by_node_then_waits_for_available_pods() {
        let d = |s: Value| status(&ds(2, "RollingUpdate", s), 2);
        let base = |updated: i64, available: i64, observed: i64| {
            json!({"observedGeneration": observed,
            "desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberMisscheduled": 0, "numberReady": available,
            "updatedNumberScheduled": updated, "numberAvailable": available})
        };
        assert_eq!(
            waiting(d(base(3, 3, 1))),
            "waiting for daemon set spec update to be observed"
        );
        for updated in 0..3 {
            assert_eq!(
                waiting(d(base(updated, 3, 2))),
                format!(
                    "waiting for daemon set \"agent\" rollout to finish: {updated} out of 3 new pods have been updated"
                )
            );
        }
        assert_eq!(
            waiting(d(base(3, 2, 2))),
            "waiting for daemon set \"agent\" rollout to finish: 2 of 3 updated pods are available"
        );
        assert_eq!(
            d(base(3, 3, 2)),
            Status::Done("daemon set \"agent\" successfully rolled out".into())
        );
    }
}
