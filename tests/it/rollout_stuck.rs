//! What keeps a rollout's new pods from ready, said at the timeout and at a progress deadline,
//! one line per pod in the kubelet's and the scheduler's words (and in `-o json`'s
//! `notReady`): a readiness probe that fails (the kubelet's `Unhealthy` event), a container
//! waiting on a missing Secret key (CreateContainerConfigError), a pod no node takes because
//! its claim is unbound (kube-scheduler's event, written through events.k8s.io); the probe
//! failures the kubelet counted (its Unhealthy event's `count`, going up each probe period).

use serde_json::{Value, json};
use snapbox::str;

use crate::rollout::{Node, RolloutBench, web, web_with};
use crate::support::controllers::{Controllers, Runs};
use crate::support::fixtures::Image;

/// Our image's containers do `runs`; the old image's are ready.
fn ours(runs: Runs) -> impl Fn(&str) -> Runs + Send + Sync + 'static {
    move |image| match image.contains("myimg:dev") {
        true => runs.clone(),
        false => Runs::Ready,
    }
}

/// `-o json`'s `rollout[0].notReady`, pod names replaced by whether each is new.
fn not_ready(report: &Value) -> Vec<Value> {
    report["rollout"][0]["notReady"]
        .as_array()
        .expect("a notReady list")
        .iter()
        .map(|stuck| {
            assert!(
                stuck["pod"].as_str().unwrap().starts_with("web-"),
                "{stuck}"
            );
            let mut stuck = stuck.clone();
            stuck["pod"] = json!("[POD]");
            stuck
        })
        .collect()
}

#[test]
fn a_failing_readiness_probe_is_said_per_new_pod_at_the_timeout() {
    let bench = RolloutBench::new(Node::Mapped, |c| web(c).runs(ours(Runs::NeverReady)));
    let run = bench.push(
        &bench.archive(&Image::sample(471)),
        &["--rollout", "deploy/web", "--timeout", "4s", "-o", "json"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
error: deployment/web: the rollout did not finish in 4s: waiting for deployment "web" rollout to finish: 1 out of 2 new replicas have been updated
hint: the new pod web-5f02-09aab is not ready: container web: Readiness probe failed: HTTP probe failed with statuscode: 503

"#]]);
    let report = run.json();
    assert_eq!(report["rollout"][0]["status"], "timed-out");
    assert_eq!(
        not_ready(&report),
        [
            json!({"pod": "[POD]", "new": true, "container": "web", "reason": "Unhealthy",
                "message": "Readiness probe failed: HTTP probe failed with statuscode: 503", "count": 1})
        ]
    ); // `why` says the same of the newest pod, and claims no cause of its image.
    let why = bench.cmd().args(["why", "deploy/web"]).output();
    assert_eq!(why.code, 0, "{why:?}");
    why.assert_stdout(str![[r#"
pod default/web-5f02-09aab on node stand-in-node
✓ web (kind-registry:5000/myimg:dev@sha256:[DIGEST]): it runs but is not ready: Readiness probe failed: HTTP probe failed with statuscode: 503

"#]]);
    why.assert_stderr(str![]);
}

#[test]
fn a_missing_secret_key_is_said_at_the_progress_deadline() {
    let missing = "couldn't find key password in Secret default/db-creds";
    let bench = RolloutBench::new(Node::Mapped, |c: Controllers| {
        web_with(c, |spec| spec["progressDeadlineSeconds"] = json!(2))
            .runs(ours(Runs::ConfigError(missing.into())))
    });
    let run = bench.push(
        &bench.archive(&Image::sample(472)),
        &["--rollout", "deploy/web", "--timeout", "10m", "-o", "json"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
error: deployment/web: deployment "web" exceeded its progress deadline
hint: the new pod web-5f02-09aab is not ready: container web waits: CreateContainerConfigError: couldn't find key password in Secret default/db-creds

"#]]);
    let report = run.json();
    assert_eq!(report["rollout"][0]["status"], "failed");
    assert_eq!(
        not_ready(&report),
        [json!({"pod": "[POD]", "new": true, "container": "web",
                "reason": "CreateContainerConfigError", "message": missing, "count": null})]
    );
}

#[test]
fn a_pod_pending_on_an_unbound_claim_is_said_in_the_schedulers_words() {
    let message = "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.";
    let bench = RolloutBench::new(Node::Mapped, |c| web(c).unschedulable(message));
    let run = bench.push(
        &bench.archive(&Image::sample(473)),
        &["--rollout", "deploy/web", "--timeout", "4s", "-o", "json"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
error: deployment/web: the rollout did not finish in 4s: waiting for deployment "web" rollout to finish: 1 out of 2 new replicas have been updated
hint: the new pod web-5f02-09aab was never scheduled: Unschedulable: 0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.

"#]]);
    assert_eq!(
        not_ready(&run.json()),
        [
            json!({"pod": "[POD]", "new": true, "container": null, "reason": "Unschedulable",
                "message": "Unschedulable: 0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
                "count": null})
        ]
    );
}

#[test]
fn the_probe_failures_the_kubelet_counted_are_said_with_the_cause() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        web(c)
            .runs(ours(Runs::NeverReady))
            .probes_every(std::time::Duration::from_millis(300))
    });
    let run = bench.push(
        &bench.archive(&Image::sample(477)),
        &["--rollout", "deploy/web", "--timeout", "4s", "-o", "json"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    let stuck = not_ready(&run.json());
    let count = stuck[0]["count"].as_i64().expect("a count");
    assert!(count > 3, "the kubelet probed every 300 ms: {stuck:?}");
    assert!(
        run.stderr.contains(&format!(
            "hint: the new pod web-5f02-09aab is not ready: container web: Readiness probe failed: HTTP probe failed with statuscode: 503 ({count} times)\n"
        )),
        "{run:?}"
    );
}
