//! `push --rollout` when it is not alone: another writer sets its own image in the template
//! during the wait (the real `kubectl set image`, a server-side apply as Flux's
//! kustomize-controller makes one), before or after the controller started rolling ours; and
//! writes to anything but the image (an annotation, the replicas), which leave the wait to
//! kubectl's rules. Each container replaced is named (`-o json`: `replacements`), and under
//! `--watch` the next round pushes and rolls out again. The stand-in keeps managedFields as
//! kube-apiserver does.

use serde_json::Value;

use crate::rollout::{Node, RolloutBench, web, web_and_worker};
use crate::support::controllers::Runs;
use crate::support::fixtures::{Format, Image};
use crate::support::run::finished;
use crate::watch::Watching;
use snapbox::str;

const OTHER: &str = "kind-registry:5000/myimg:other";

/// `-o json`'s `rollout[0].replacedBy`, its time checked to be a time of this run (seconds, UTC).
fn replaced_by(run: &crate::rollout::Outcome) -> Value {
    let report = run.json();
    let outcome = &report["rollout"][0];
    assert_eq!(outcome["status"], "replaced", "{run:?}");
    let mut by = outcome["replacedBy"].clone();
    let time = by["time"].as_str().expect("a time").to_string();
    let when: k8s_openapi::jiff::Timestamp = time.parse().expect("RFC 3339");
    let age = k8s_openapi::jiff::Timestamp::now().duration_since(when);
    assert!(age.as_secs() < 120 && age.as_secs() >= 0, "{time}");
    by["time"] = Value::from("[TIME]");
    by
}

/// The manager that owns container `container`'s image in the stand-in's managedFields.
fn image_owner(bench: &RolloutBench, container: &str) -> Vec<String> {
    let key = format!("k:{{\"name\":\"{container}\"}}");
    bench
        .controllers
        .managed_fields("deployment", "web")
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| {
            !entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"][&key]["f:image"]
                .is_null()
        })
        .map(|entry| {
            format!(
                "{} {}",
                entry["manager"].as_str().unwrap(),
                entry["operation"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn an_image_kubectl_set_before_the_controller_rolled_ours_is_named_exit_1() {
    let bench = RolloutBench::new(Node::Mapped, |c| web(c).hold());
    let archive = bench.archive(&Image::sample(461));
    let push = bench.spawn_push(
        &archive,
        &["--rollout", "deploy/web", "-o", "json", "--timeout", "20s"],
    );
    assert!(bench.controllers.wait_for_patches(1), "our patch came");
    assert_eq!(image_owner(&bench, "web"), ["kubectl-registry Update"]);
    let set = bench.kubectl(&["set", "image", "deploy/web", &format!("web={OTHER}")]);
    assert_eq!(set.code, 0, "{set:?}");
    assert_eq!(image_owner(&bench, "web"), ["kubectl-set Update"]);
    bench.controllers.release();
    let run = finished(push);
    assert_eq!(run.code, 1, "{run:?}");
    run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
error: deployment/web: the pushed ref did not roll out: container web now runs kind-registry:5000/myimg:other, set by kubectl-set (Update) at [..]
hint: someone changed deployment/web's image with kubectl (kubectl-set) after our patch: push again to set ours, or agree with them who sets it

"#]]);
    assert_eq!(
        replaced_by(&run),
        serde_json::json!({"container": "web", "image": OTHER, "manager": "kubectl-set",
                           "operation": "Update", "time": "[TIME]"})
    );
    assert!(!run.stderr.contains("successfully rolled out"), "{run:?}");
}

#[test]
fn a_server_side_apply_mid_rollout_is_named_with_a_gitops_hint() {
    // Our pods never get ready: the rollout is still going when Flux applies its own image.
    let bench = RolloutBench::new(Node::Mapped, |c| {
        web(c).runs(|image| match image.contains("myimg:dev") {
            true => Runs::NeverReady,
            false => Runs::Ready,
        })
    });
    let old = bench.controllers.pods();
    let archive = bench.archive(&Image::sample(462));
    let push = bench.spawn_push(
        &archive,
        &["--rollout", "deploy/web", "-o", "json", "--timeout", "20s"],
    );
    assert!(
        bench.controllers.wait_for_pods(|pods| pods
            .iter()
            .any(|(name, _)| !old.iter().any(|(o, _)| o == name))),
        "the controller started rolling ours"
    );
    let manifest = bench.dir.path().join("web.json");
    let applied = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "web", "image": OTHER}]}}},
    });
    std::fs::write(&manifest, applied.to_string()).unwrap();
    let apply = bench.kubectl(&[
        "apply",
        "--server-side",
        "--field-manager=kustomize-controller",
        "--force-conflicts",
        "--validate=false",
        "-f",
        manifest.to_str().unwrap(),
    ]);
    assert_eq!(apply.code, 0, "{apply:?}");
    let run = finished(push);
    assert_eq!(run.code, 1, "{run:?}");
    run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
error: deployment/web: the pushed ref did not roll out: container web now runs kind-registry:5000/myimg:other, set by kustomize-controller (Apply) at [..]
hint: Flux applies deployment/web from Git and reverts live changes: change the image in Git, or suspend its Kustomization (`flux suspend kustomization NAME`) and any image policy that updates it while you iterate

"#]]);
    assert_eq!(
        replaced_by(&run),
        serde_json::json!({"container": "web", "image": OTHER, "manager": "kustomize-controller",
                           "operation": "Apply", "time": "[TIME]"})
    );
    assert_eq!(image_owner(&bench, "web"), ["kustomize-controller Apply"]);
}

#[test]
fn writes_to_anything_but_the_image_leave_the_wait_to_kubectls_rules() {
    let bench = RolloutBench::new(Node::Mapped, |c| web(c).hold());
    let old = bench.controllers.pods();
    let archive = bench.archive(&Image::sample(463));
    let push = bench.spawn_push(&archive, &["--rollout", "deploy/web"]);
    assert!(bench.controllers.wait_for_patches(1), "our patch came");
    let annotate = bench.kubectl(&["annotate", "deploy/web", "team=payments"]);
    assert_eq!(annotate.code, 0, "{annotate:?}");
    let scale = bench.kubectl(&["patch", "deploy/web", "-p", r#"{"spec":{"replicas":3}}"#]);
    assert_eq!(scale.code, 0, "{scale:?}");
    bench.controllers.release();
    let run = finished(push);
    assert_eq!(run.code, 0, "{run:?}");
    run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
deployment/web: deployment "web" successfully rolled out in [ELAPSED]s

"#]]);
    let pods = bench.controllers.pods();
    assert_eq!(pods.len(), 3, "{pods:?}");
    assert!(
        pods.iter()
            .all(|(name, ready)| *ready && !old.iter().any(|(o, _)| o == name))
    );
    assert_eq!(image_owner(&bench, "web"), ["kubectl-registry Update"]);
}

#[test]
fn each_container_another_writer_replaced_is_named_and_listed_in_json() {
    let bench = RolloutBench::new(Node::Mapped, |c| web_and_worker(c).hold());
    let archive = bench.archive(&Image::sample(464));
    let push = bench.spawn_push(
        &archive,
        &["--rollout", "deploy/web", "-o", "json", "--timeout", "20s"],
    );
    assert!(bench.controllers.wait_for_patches(1), "our patch came");
    let worker = "kind-registry:5000/myimg:worker";
    let set = bench.kubectl(&[
        "set",
        "image",
        "deploy/web",
        &format!("web={OTHER}"),
        &format!("worker={worker}"),
    ]);
    assert_eq!(set.code, 0, "{set:?}");
    bench.controllers.release();
    let run = finished(push);
    assert_eq!(run.code, 1, "{run:?}");
    run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST] worker=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
error: deployment/web: the pushed ref did not roll out: container web now runs kind-registry:5000/myimg:other, set by kubectl-set (Update) at [..]; container worker now runs kind-registry:5000/myimg:worker, set by kubectl-set (Update) at [..]
hint: someone changed deployment/web's image with kubectl (kubectl-set) after our patch: push again to set ours, or agree with them who sets it

"#]]);
    let by = |container: &str, image: &str| {
        serde_json::json!({"container": container, "image": image, "manager": "kubectl-set",
                           "operation": "Update", "time": "[TIME]"})
    };
    assert_eq!(replaced_by(&run), by("web", OTHER), "the first, as before");
    let each: Vec<Value> = run.json()["rollout"][0]["replacements"]
        .as_array()
        .expect("a replacements list")
        .iter()
        .map(|r| {
            let mut r = r.clone();
            assert!(r["time"].is_string(), "{r}");
            r["time"] = Value::from("[TIME]");
            r
        })
        .collect();
    assert_eq!(each, [by("web", OTHER), by("worker", worker)]);
}

#[test]
fn under_watch_the_round_after_a_replacement_pushes_and_rolls_out_again() {
    let bench = RolloutBench::new(Node::Mapped, |c| web(c).hold());
    let archive = bench.archive(&Image::sample(465));
    let command = bench
        .cmd()
        .args(["push", archive.to_str().unwrap()])
        .args(["--watch", "--rollout", "deploy/web", "--timeout", "20s"])
        .command();
    let mut watching = Watching::start(command);
    let first = watching.next_ref();
    assert!(bench.controllers.wait_for_patches(1), "our patch came");
    let set = bench.kubectl(&["set", "image", "deploy/web", &format!("web={OTHER}")]);
    assert_eq!(set.code, 0, "{set:?}");
    bench.controllers.release();
    watching.until_said(
        "the pushed ref did not roll out: container web now runs kind-registry:5000/myimg:other",
    );
    // The next round: a new archive in its place.
    let next = bench.dir.path().join("img.next.tar");
    Image::sample(466).write(Format::DockerLegacy, &next, &["myimg:dev"]);
    std::fs::rename(&next, &archive).unwrap();
    let second = watching.next_ref();
    assert_ne!(second, first);
    watching.until_said("successfully rolled out");
    assert_eq!(bench.controllers.images("deployment", "web")["web"], second);
    assert_eq!(image_owner(&bench, "web"), ["kubectl-registry Update"]);
    assert_eq!(watching.interrupt().0, 130);
}
