//! `push --rollout` on the shapes users have: a workload in another namespace (`-n`, the
//! context's), an image pinned by digest only, the repository only in an init container, two
//! containers on one image, several `--rollout`s, a malformed `--timeout`, the ref line on
//! stdout while the wait goes on, and a pod that never becomes ready.

use snapbox::str;
use std::io::BufRead;

use crate::rollout::{Node, OLD, RolloutBench, rollout_outcomes, web, web_and_worker};
use crate::support::controllers::Container;
use crate::support::fixtures::Image;

#[test]
fn a_workload_in_another_namespace_is_rolled_with_n_or_the_contexts_namespace() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        c.workload_in(
            "apps",
            "Deployment",
            "web",
            &[Container("web", OLD, false)],
            2,
            |_| {},
        )
    });
    let run = bench.push(
        &bench.archive(&Image::sample(351)),
        &["-n", "apps", "--rollout", "deploy/web", "-o", "json"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let report = run.json();
    assert_eq!(
        bench.controllers.images_in("apps", "deployment", "web")["web"],
        report["ref"].as_str().unwrap()
    );
    assert_eq!(
        (
            &report["rollout"][0]["namespace"],
            &report["rollout"][0]["status"]
        ),
        (&serde_json::json!("apps"), &serde_json::json!("rolled-out"))
    );
    // The context's namespace, as kubectl takes it.
    let kubeconfig = std::fs::read_to_string(&bench.kubeconfig).unwrap();
    let with_namespace = kubeconfig.replace(
        "    user: kind-dev\n  name: kind-dev",
        "    user: kind-dev\n    namespace: apps\n  name: kind-dev",
    );
    assert_ne!(kubeconfig, with_namespace);
    std::fs::write(&bench.kubeconfig, with_namespace).unwrap();
    let run = bench.push(
        &bench.archive(&Image::sample(352)),
        &["--rollout", "deploy/web"],
    );
    let reference = run.reference();
    assert_eq!(
        bench.controllers.images_in("apps", "deployment", "web")["web"],
        reference
    );
}

#[test]
fn an_image_pinned_by_digest_only_is_the_pushed_repository() {
    let pinned = format!("kind-registry:5000/myimg@sha256:{}", "ab".repeat(32));
    let bench = RolloutBench::new(Node::Mapped, |c| {
        c.workload("Deployment", "web", &[Container("web", &pinned, false)], 1)
    });
    let run = bench.push(
        &bench.archive(&Image::sample(353)),
        &["--rollout", "deploy/web"],
    );
    bench.assert_web_rolled_out(&run);
}

#[test]
fn the_repository_only_in_an_init_container_is_set_and_rolled() {
    let bench = RolloutBench::new(Node::Mapped, |c| c);
    // The main container runs another image on the registry: the new pod pulls it too.
    let proxy = bench
        .push(&bench.archive(&Image::sample(9)), &["--tag", "proxy:1"])
        .reference()
        .to_string();
    bench.controllers.add_workload(
        "Deployment",
        "web",
        &[
            Container("setup", OLD, true),
            Container("web", &proxy, false),
        ],
        1,
    );
    let run = bench.push(
        &bench.archive(&Image::sample(354)),
        &["--rollout", "deploy/web", "-o", "json"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let report = run.json();
    let images = bench.controllers.images("deployment", "web");
    assert_eq!(images["setup"], report["ref"].as_str().unwrap());
    assert_eq!(images["web"], proxy);
    assert_eq!(
        report["rollout"][0]["containers"],
        serde_json::json!(["setup"])
    );
    assert_eq!(report["rollout"][0]["status"], "rolled-out");
}

#[test]
fn two_containers_on_the_same_image_are_both_set_in_one_patch() {
    let bench = RolloutBench::new(Node::Mapped, web_and_worker);
    let run = bench.push(
        &bench.archive(&Image::sample(355)),
        &["--rollout", "deploy/web"],
    );
    let reference = run.reference();
    let images = bench.controllers.images("deployment", "web");
    assert_eq!(
        (images["web"].as_str(), images["worker"].as_str()),
        (reference, reference)
    );
    assert_eq!(bench.patches(), 1);
    assert!(
        run.stderr.contains(&format!(
            "deployment/web: set web={reference} worker={reference}"
        )),
        "{run:?}"
    );
    run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST] worker=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
deployment/web: deployment "web" successfully rolled out in [ELAPSED]s

"#]]);
}

#[test]
fn several_rollouts_are_each_rolled_and_reported_in_order_and_none_patched_if_one_cannot_be() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        web(c)
            .workload("Deployment", "api", &[Container("api", OLD, false)], 1)
            .workload("StatefulSet", "db", &[Container("db", OLD, false)], 1)
            .forbid("patch", "statefulsets")
    });
    let archive = bench.archive(&Image::sample(356));
    let refused = bench.push(
        &archive,
        &["--rollout", "deploy/web", "--rollout", "sts/db"],
    );
    assert_eq!(refused.code, 3, "{refused:?}");
    refused.assert_stderr(str![[r#"
error: these credentials may not patch statefulsets.apps in namespace default; nothing was pushed or patched
hint: push --rollout needs get, list, watch and patch on the workload, get, list and watch on pods and get on pods/log in default (`kubectl auth can-i patch statefulsets.apps -n default`)

"#]]);
    assert_eq!(bench.patches(), 0, "none patched");
    let run = bench.push(
        &archive,
        &[
            "--rollout",
            "deploy/api",
            "--rollout",
            "deploy/web",
            "-o",
            "json",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let report = run.json();
    let outcomes = rollout_outcomes(&report);
    assert_eq!(
        outcomes,
        [
            ("deployment/api", "rolled-out"),
            ("deployment/web", "rolled-out")
        ]
    );
    assert_eq!(bench.patches(), 2);
}

#[test]
fn a_malformed_timeout_is_exit_2_before_anything_is_pushed() {
    let bench = RolloutBench::new(Node::Mapped, web);
    let run = bench.push(
        &bench.archive(&Image::sample(357)),
        &["--rollout", "deploy/web", "--timeout", "5 minutes"],
    );
    assert_eq!(run.code, 2, "{run:?}");
    run.assert_stderr(str![[r#"
error: invalid value '5 minutes' for '--timeout <DURATION>': "5 minutes" is not a duration: write it as 5m, 90s, 1m30s, 500ms or 1h

For more information, try '--help'.

"#]]);
    run.assert_stdout(str![]);
    assert_eq!(
        bench
            .registry
            .request("GET", "/v2/myimg/manifests/dev")
            .status,
        404,
        "nothing was pushed"
    );
    assert_eq!(bench.patches(), 0);
}

#[test]
fn the_ref_line_is_on_stdout_as_soon_as_the_push_is_done_while_the_wait_goes_on() {
    let bench = RolloutBench::new(Node::Mapped, |c| web(c).hold());
    let mut child = bench.spawn_push(
        &bench.archive(&Image::sample(358)),
        &["--rollout", "deploy/web", "--timeout", "60s"],
    );
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(
        line.starts_with("kind-registry:5000/myimg:dev@sha256:"),
        "{line:?}"
    );
    // The controller has not noticed the patch: the wait cannot have ended.
    assert!(child.try_wait().unwrap().is_none(), "still waiting");
    bench.controllers.release();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}
