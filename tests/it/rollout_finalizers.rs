//! An old pod a finalizer keeps, end to end: the stand-in keeps a deleted pod that carries
//! `metadata.finalizers` as kube-apiserver does (terminating until a write empties them, the
//! real `kubectl` reading and writing it), a StatefulSet waits for it before it makes that
//! ordinal again, and `push --rollout` says so at the timeout (text and `-o json`) or goes on
//! once the finalizer is removed mid-wait, as `kubectl rollout status` does. A Deployment's
//! ReplicaSet counts no terminating pod: its rollout finishes past a held old pod, and `why`
//! says that pod beside the one it examines, with the fix the real `kubectl` then runs.

use serde_json::{Value, json};
use snapbox::str;

use crate::rollout::{Node, OLD, RolloutBench, web};
use crate::support::controllers::{Container, Controllers};
use crate::support::fixtures::Image;
use crate::support::run;

const HOLD: &str = r#"{"metadata":{"finalizers":["example.com/hold"]}}"#;

/// A StatefulSet `db` of one pod, `db-0`, running the old image.
fn db(controllers: Controllers) -> Controllers {
    controllers.workload("StatefulSet", "db", &[Container("db", OLD, false)], 1)
}

/// The real `kubectl patch pod NAME ARGS...`, checked to have patched.
fn patch_pod(bench: &RolloutBench, name: &str, args: &[&str]) {
    let mut all = vec!["patch", "pod", name];
    all.extend_from_slice(args);
    let patched = bench.kubectl(&all);
    assert_eq!(
        (patched.code, patched.stdout.as_str()),
        (0, format!("pod/{name} patched\n").as_str()),
        "{patched:?}"
    );
}

/// Pod `name` as the real `kubectl get -o json` reads it (`None` when not found).
fn pod(bench: &RolloutBench, name: &str) -> Option<Value> {
    let got = bench.kubectl(&["get", "pod", name, "-o", "json"]);
    if got.code != 0 {
        assert!(got.stderr.contains("NotFound"), "{got:?}");
        return None;
    }
    Some(serde_json::from_str(&got.stdout).expect("kubectl's JSON"))
}

#[test]
fn the_stand_in_keeps_a_pod_its_finalizers_hold_as_kubectl_sees_it() {
    let bench = RolloutBench::new(Node::Mapped, db);
    patch_pod(&bench, "db-0", &["--type=merge", "-p", HOLD]);
    let first_uid = pod(&bench, "db-0").unwrap()["metadata"]["uid"].clone();
    let deleted = bench.kubectl(&["delete", "pod", "db-0", "--wait=false"]);
    assert_eq!(
        (deleted.code, deleted.stdout.as_str()),
        (0, "pod \"db-0\" deleted\n"),
        "{deleted:?}"
    );
    let held = pod(&bench, "db-0").expect("kept by its finalizer");
    let meta = &held["metadata"];
    assert!(meta["deletionTimestamp"].is_string(), "{held}");
    assert_eq!(meta["deletionGracePeriodSeconds"], 0, "{held}");
    assert_eq!(meta["finalizers"], json!(["example.com/hold"]));
    assert_eq!(held["status"]["phase"], "Succeeded");
    // No finalizer is added to a pod being deleted.
    let added = bench.kubectl(&[
        "patch",
        "pod",
        "db-0",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/more"]}}"#,
    ]);
    assert_eq!(added.code, 1, "{added:?}");
    assert!(
        added
            .stderr
            .contains("no new finalizers can be added if the object is being deleted"),
        "{added:?}"
    );
    // Emptied by a replace (a PUT) of the pod as read: gone, and the StatefulSet makes db-0
    // again (a new uid); a replace of an older version is refused as a conflict.
    let mut emptied = held.clone();
    emptied["metadata"]["finalizers"] = json!([]);
    let file = bench.dir.path().join("db-0.json");
    let mut stale = emptied.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    std::fs::write(&file, stale.to_string()).unwrap();
    let refused = bench.kubectl(&["replace", "--validate=false", "-f", file.to_str().unwrap()]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("the object has been modified"),
        "{refused:?}"
    );
    std::fs::write(&file, emptied.to_string()).unwrap();
    let replaced = bench.kubectl(&["replace", "--validate=false", "-f", file.to_str().unwrap()]);
    assert_eq!(
        (replaced.code, replaced.stdout.as_str()),
        (0, "pod/db-0 replaced\n"),
        "{replaced:?}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let again = loop {
        match pod(&bench, "db-0") {
            Some(again) if again["metadata"]["uid"] != first_uid => break again,
            _ if std::time::Instant::now() > deadline => panic!("db-0 was not made again"),
            _ => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    };
    assert!(again["metadata"]["deletionTimestamp"].is_null(), "{again}");
}

#[test]
fn an_old_pod_a_finalizer_keeps_is_said_at_the_timeout() {
    let bench = RolloutBench::new(Node::Mapped, db);
    patch_pod(&bench, "db-0", &["--type=merge", "-p", HOLD]);
    let run = bench.push(
        &bench.archive(&Image::sample(474)),
        &["--rollout", "sts/db", "--timeout", "4s", "-o", "json"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    run.assert_stderr(str![[r#"
statefulset/db: set db=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
error: statefulset/db: the rollout did not finish in 4s: waiting for 1 pods to be ready
hint: the old pod db-0 is not gone: deleted, kept by finalizer example.com/hold

"#]]);
    let report = run.json();
    assert_eq!(report["rollout"][0]["status"], "timed-out");
    assert_eq!(
        report["rollout"][0]["notReady"],
        json!([{"pod": "db-0", "new": false, "container": null, "reason": "Terminating",
                "message": "deleted, kept by finalizer example.com/hold", "count": null}])
    );
    // kubectl waits for the same pod.
    let status = bench.kubectl(&["rollout", "status", "sts/db", "--timeout=2s"]);
    assert_ne!(status.code, 0, "{status:?}");
    assert!(
        status.stdout.contains("Waiting for 1 pods to be ready..."),
        "{status:?}"
    );
    assert!(pod(&bench, "db-0").unwrap()["metadata"]["deletionTimestamp"].is_string());
}

#[test]
fn the_rollout_finishes_once_the_finalizer_is_removed_mid_wait() {
    let bench = RolloutBench::new(Node::Mapped, db);
    patch_pod(&bench, "db-0", &["--type=merge", "-p", HOLD]);
    let archive = bench.archive(&Image::sample(475));
    let push = bench.spawn_push(&archive, &["--rollout", "sts/db", "--timeout", "60s"]);
    assert!(bench.controllers.wait_for_terminating("db-0"));
    let pending = bench.kubectl(&["rollout", "status", "sts/db", "--timeout=1s"]);
    assert_ne!(pending.code, 0, "kubectl waits too: {pending:?}");
    patch_pod(
        &bench,
        "db-0",
        &["--type=merge", "-p", r#"{"metadata":{"finalizers":null}}"#],
    );
    let run = run::finished(push);
    assert_eq!(run.code, 0, "{run:?}");
    run.assert_stderr(str![[r#"
statefulset/db: set db=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
statefulset/db: statefulset rolling update complete 1 pods at revision db-2 in [ELAPSED]s

"#]]);
    assert_eq!(
        bench.controllers.images("statefulset", "db")["db"],
        run.reference()
    );
    let status = bench.kubectl(&["rollout", "status", "sts/db", "--timeout=10s"]);
    assert_eq!(status.code, 0, "{status:?}");
}

#[test]
fn a_deployments_old_pods_held_by_finalizers_do_not_hold_its_rollout() {
    let bench = RolloutBench::new(Node::Mapped, web);
    let old: Vec<String> = bench.controllers.pods().into_iter().map(|p| p.0).collect();
    let add = r#"[{"op":"add","path":"/metadata/finalizers","value":["example.com/hold"]}]"#;
    for name in &old {
        patch_pod(&bench, name, &["--type=json", "-p", add]);
    }
    let run = bench.push(
        &bench.archive(&Image::sample(476)),
        &["--rollout", "deploy/web", "--timeout", "60s"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    bench.assert_web_rolled_out(&run);
    for name in &old {
        let held = pod(&bench, name).expect("still kept by its finalizer");
        assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    }
}

#[test]
fn why_says_the_deployments_pods_finalizers_keep_beside_the_pod_it_examines() {
    let bench = RolloutBench::new(Node::Mapped, web);
    let old: Vec<String> = bench.controllers.pods().into_iter().map(|p| p.0).collect();
    let held = &old[0];
    let add = r#"[{"op":"add","path":"/metadata/finalizers","value":["example.com/hold","example.com/drain"]}]"#;
    patch_pod(&bench, held, &["--type=json", "-p", add]);
    let run = bench.push(
        &bench.archive(&Image::sample(478)),
        &["--rollout", "deploy/web", "--timeout", "60s"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let reference = run.reference();
    let kept = "deleted, kept by finalizers example.com/hold, example.com/drain";
    let fix = format!(
        "whatever added example.com/hold, example.com/drain removes them when its work is done; if nothing will, `kubectl patch pod {held} -n default --type=merge -p '{{\"metadata\":{{\"finalizers\":null}}}}'` lets the pod go"
    );
    // A Deployment: its newest pod is examined, the held one said beside it; a pod that
    // finalizers keep is no cause of the containers', so why exits 0.
    let why = bench.cmd().args(["why", "deploy/web"]).output();
    assert_eq!(why.code, 0, "{why:?}");
    let lines: Vec<&str> = why.stdout.lines().collect();
    assert!(
        lines[0].starts_with("pod default/web-") && !lines[0].contains(held.as_str()),
        "{why:?}"
    );
    assert_eq!(
        lines[1..],
        [
            format!("✓ web ({reference}): it runs"),
            format!("! pod {held} is not gone: {kept}"),
            format!("    fix: {fix}"),
        ],
        "{why:?}"
    );
    let report = bench
        .cmd()
        .args(["why", "deploy/web", "-o", "json"])
        .output()
        .json();
    assert_eq!(
        report["terminating"],
        json!([{"pod": held, "finalizers": ["example.com/hold", "example.com/drain"],
                "explanation": kept, "fix": fix}])
    );
    // The held pod itself: its container was stopped, not running.
    let itself = bench.cmd().args(["why", &format!("pod/{held}")]).output();
    assert_eq!(itself.code, 0, "{itself:?}");
    assert_eq!(
        itself.stdout,
        format!(
            "pod default/{held} on node stand-in-node\n✓ web ({OLD}): it ran and ended: Completed, exit code 0\n! pod {held} is not gone: {kept}\n    fix: {fix}\n"
        )
    );
    // The fix, as printed, run with the real kubectl: the pod goes, and why no longer says it.
    patch_pod(
        &bench,
        held,
        &[
            "-n",
            "default",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ],
    );
    assert!(pod(&bench, held).is_none());
    let after = bench.cmd().args(["why", "deploy/web"]).output();
    assert_eq!(after.code, 0, "{after:?}");
    assert_eq!(
        after.stdout,
        format!("{}\n✓ web ({reference}): it runs\n", lines[0])
    );
}
