//! `push --rollout` against controllers as late and forgetful as a real cluster's: a patch
//! noticed seconds later, a paused Deployment, a progress deadline, watches the server ends and
//! a history it compacts (410 Gone), and what a whole push costs the API server, side by side
//! with `kubectl set image` + `kubectl rollout status`.

use std::time::Duration;

use crate::rollout::{Node, OLD, RolloutBench, web, web_with};
use crate::support::controllers::Container;
use crate::support::fixtures::Image;
use crate::support::run::{assert_redacted, finished};
use snapbox::{IntoData, str};

/// The requests the stand-in served from `from` on, as `METHOD /path?query`.
fn served_since(bench: &RolloutBench, from: usize) -> Vec<String> {
    bench._api.targets()[from..].to_vec()
}

fn all_new_and_ready(bench: &RolloutBench, old: &[(String, bool)], count: usize) {
    let pods = bench.controllers.pods();
    assert_eq!(pods.len(), count, "{pods:?}");
    assert!(
        pods.iter()
            .all(|(name, ready)| *ready && !old.iter().any(|(o, _)| o == name)),
        "{pods:?}"
    );
}

#[test]
fn a_patch_noticed_two_seconds_late_is_waited_for_within_forty_requests() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        web(c).notices_after(Duration::from_secs(2))
    });
    let old = bench.controllers.pods();
    let from = bench._api.targets().len();
    let run = bench.push(
        &bench.archive(&Image::sample(341)),
        &["--rollout", "deploy/web", "-v"],
    );
    run.reference();
    run.assert_stderr(str![[r#"
pushed 4 blobs (643.1 KB), 0 blobs already there, in [ELAPSED]s
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
deployment/web: waiting for deployment spec update to be observed
...
deployment/web: deployment "web" successfully rolled out in [ELAPSED]s

"#]]);
    all_new_and_ready(&bench, &old, 2);
    let served = served_since(&bench, from);
    assert!(served.len() <= 40, "{} requests: {served:#?}", served.len());
    assert!(
        served
            .iter()
            .any(|r| r.contains("/deployments?") && r.contains("watch=true")),
        "the workload is watched: {served:#?}"
    );
}

#[test]
fn a_paused_deployment_is_patched_then_said_paused_at_once_exit_1() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        web_with(c, |spec| spec["paused"] = serde_json::json!(true))
    });
    let run = bench.push(
        &bench.archive(&Image::sample(342)),
        &["--rollout", "deploy/web", "--timeout", "10m", "-o", "json"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    let report = run.json();
    bench.assert_runs_reported(&report, "deployment", "web");
    run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
error: deployment/web: deployment "web" is paused: the new template rolls out once it is resumed
hint: `kubectl rollout resume deployment/web -n default` resumes it

"#]]);
    assert_eq!(report["rollout"][0]["status"], "paused");
    assert_eq!(report["rollout"][0]["patched"], true);
}

#[test]
fn a_deployment_past_its_progress_deadline_fails_in_kubectls_words() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        let c = c.unschedulable("0/1 nodes are available: 1 Insufficient cpu.");
        web_with(c, |spec| {
            spec["progressDeadlineSeconds"] = serde_json::json!(1)
        })
    });
    let run = bench.push(
        &bench.archive(&Image::sample(343)),
        &["--rollout", "deploy/web", "--timeout", "10m", "-o", "json"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
error: deployment/web: deployment "web" exceeded its progress deadline
hint: the new pod web-5f02-09aab was never scheduled: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.

"#]]);
    assert_eq!(run.json()["rollout"][0]["status"], "failed");
}

#[test]
fn watches_the_server_ends_are_reopened_until_the_rollout_is_done() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        web(c).watch_cap(Duration::from_millis(300))
    });
    let old = bench.controllers.pods();
    let from = bench._api.targets().len();
    let run = bench.push(
        &bench.archive(&Image::sample(344)),
        &["--rollout", "deploy/web", "--timeout", "30s"],
    );
    run.reference();
    all_new_and_ready(&bench, &old, 2);
    let served = served_since(&bench, from);
    let watches = served
        .iter()
        .filter(|r| r.contains("/deployments?") && r.contains("watch=true"))
        .count();
    assert!(watches >= 2, "the ended watch was reopened: {served:#?}");
}

#[test]
fn a_watch_answered_410_gone_relists_and_the_wait_goes_on() {
    let bench = RolloutBench::new(Node::Mapped, web);
    let old = bench.controllers.pods();
    let from = bench._api.targets().len();
    let child = bench.spawn_push(
        &bench.archive(&Image::sample(345)),
        &["--rollout", "deploy/web", "--timeout", "60s", "-v"],
    );
    // The first new pod is made: the rollout is under way and its watches open.
    assert!(bench.controllers.wait_for_pods(|pods| pods.len() > 2));
    bench.controllers.compact();
    let run = finished(child);
    run.reference();
    all_new_and_ready(&bench, &old, 2);
    let served = served_since(&bench, from);
    let lists = served
        .iter()
        .filter(|r| r.contains("/deployments?") && !r.contains("watch=true"))
        .count();
    assert!(lists >= 2, "relisted after the 410: {served:#?}");
    run.assert_stderr(str![[r#"
pushed 4 blobs (643.1 KB), 0 blobs already there, in [ELAPSED]s
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
deployment/web: error returned by apiserver during watch: too old resource version: [..]: Expired; trying again
...
deployment/web: deployment "web" successfully rolled out in [ELAPSED]s

"#]]);
}

/// The figures of the report: one multi-second rollout, ours against the script users write.
#[test]
fn a_rollout_costs_the_api_server_about_what_kubectl_set_image_and_rollout_status_cost() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        web(c).notices_after(Duration::from_secs(2))
    });
    let from = bench._api.targets().len();
    let ours = bench.push(
        &bench.archive(&Image::sample(346)),
        &["--rollout", "deploy/web"],
    );
    ours.reference();
    let ours = served_since(&bench, from);
    eprintln!(
        "API requests of one rollout, push --rollout: {}:\n{ours:#?}",
        ours.len()
    );
    assert_eq!(
        ours.iter()
            .filter(|r| r.contains("configmaps/local-registry-hosting"))
            .count(),
        1,
        "the round reads the cluster once: {ours:#?}"
    );
    let ours = ours.len();
    let from = bench._api.targets().len();
    let pushed = bench.push(&bench.archive(&Image::sample(347)), &[]);
    let reference = pushed.reference().to_string();
    let kubectl = |args: &[&str]| {
        let run = bench.kubectl(args);
        assert_eq!(run.code, 0, "{run:?}");
    };
    kubectl(&["set", "image", "deploy/web", &format!("web={reference}")]);
    kubectl(&["rollout", "status", "deploy/web", "--timeout=60s"]);
    let theirs = served_since(&bench, from);
    eprintln!(
        "API requests of one rollout: push --rollout {ours}; push + kubectl set image + kubectl rollout status {}:\n{theirs:#?}",
        theirs.len()
    );
    assert!(ours <= 40, "{ours}");
}

#[test]
fn where_watch_is_forbidden_the_rollout_is_read_once_a_second_and_said_with_v() {
    let bench = RolloutBench::new(Node::Mapped, |c| web(c).forbid("watch", "deployments"));
    let old = bench.controllers.pods();
    let from = bench._api.targets().len();
    let run = bench.push(
        &bench.archive(&Image::sample(348)),
        &["--rollout", "deploy/web", "-v"],
    );
    run.reference();
    all_new_and_ready(&bench, &old, 2);
    run.assert_stderr(str![[r#"
watching the workloads and their pods is not allowed in default; the rollout is read once a second instead
pushed 4 blobs (643.1 KB), 0 blobs already there, in [ELAPSED]s
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
deployment/web: deployment "web" successfully rolled out in [ELAPSED]s

"#]]);
    let served = served_since(&bench, from);
    assert!(
        !served.iter().any(|r| r.contains("watch=true")),
        "{served:#?}"
    );
}

/// The stand-in's StatefulSet and DaemonSet steps, as the real kubectl reads them, then ours.
#[test]
fn statefulsets_and_daemonsets_roll_in_steps_as_kubectl_rollout_status_reads_them() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        c.nodes(3)
            .workload("StatefulSet", "db", &[Container("db", OLD, false)], 3)
            .workload("DaemonSet", "agent", &[Container("agent", OLD, false)], 1)
    });
    let reference = bench
        .push(&bench.archive(&Image::sample(349)), &[])
        .reference()
        .to_string();
    let kubectl = |args: &[&str]| {
        let run = bench.kubectl(args);
        assert_eq!(run.code, 0, "{run:?}");
        run.stdout
    };
    kubectl(&["set", "image", "sts/db", &format!("db={reference}")]);
    kubectl(&["set", "image", "ds/agent", &format!("agent={reference}")]);
    let sts = kubectl(&["rollout", "status", "sts/db", "--timeout=60s"]);
    assert_redacted(
        &sts,
        str![[r#"
...
statefulset rolling update complete 3 pods at revision db-2...

"#]],
    );
    let ds = kubectl(&["rollout", "status", "ds/agent", "--timeout=60s"]);
    assert_redacted(
        &ds,
        str![[r#"
...
daemon set "agent" successfully rolled out

"#]],
    );
    let pods = bench.controllers.pods();
    assert_eq!(pods.len(), 6, "{pods:?}");
    // Ours, on the next image.
    let run = bench.push(
        &bench.archive(&Image::sample(350)),
        &["--rollout", "sts/db", "--rollout", "ds/agent", "-o", "json"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let report = run.json();
    let reference = report["ref"].as_str().unwrap();
    for (kind, name) in [("statefulset", "db"), ("daemonset", "agent")] {
        assert_eq!(bench.controllers.images(kind, name)[name], reference);
    }
    run.assert_stderr(
        str![[r#"
statefulset/db: set db=kind-registry:5000/myimg:dev@sha256:[DIGEST]
daemonset/agent: set agent=kind-registry:5000/myimg:dev@sha256:[DIGEST]
statefulset/db: statefulset rolling update complete 3 pods at revision db-3 in [ELAPSED]s
daemonset/agent: daemon set "agent" successfully rolled out in [ELAPSED]s
...
"#]]
        .unordered(),
    );
    let pods = bench.controllers.pods();
    assert!(pods.iter().all(|(_, ready)| *ready), "{pods:?}");
    assert_eq!(pods.len(), 6, "{pods:?}");
}

#[test]
fn a_watch_refused_though_the_access_review_allowed_it_falls_back_to_reads_once_a_second() {
    let bench = RolloutBench::new(Node::Mapped, |c| web(c).refuse("watch", "deployments"));
    let old = bench.controllers.pods();
    let from = bench._api.targets().len();
    let run = bench.push(
        &bench.archive(&Image::sample(360)),
        &["--rollout", "deploy/web", "-v", "--timeout", "60s"],
    );
    run.reference();
    all_new_and_ready(&bench, &old, 2);
    run.assert_stderr(str![[r#"
pushed 4 blobs (643.1 KB), 0 blobs already there, in [ELAPSED]s
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
deployment/web: failed to start watching object: [..]; reading the workload and its pods once a second instead
...
deployment/web: deployment "web" successfully rolled out in [ELAPSED]s

"#]]);
    let served = served_since(&bench, from);
    let watches = served
        .iter()
        .filter(|r| r.contains("/deployments?") && r.contains("watch=true"))
        .count();
    assert_eq!(
        watches, 1,
        "a refused watch is not asked again: {served:#?}"
    );
}
