//! `push --rollout` against a cluster whose admission refuses the new image (a policy that only
//! allows some registries), as the policy engines answer: Gatekeeper's webhook and a
//! ValidatingAdmissionPolicy with 403 Forbidden (not RBAC's 403), Kyverno's webhook with 400 and
//! a message of several lines. The push has happened: its ref is printed (text and `-o json`),
//! the refusal is said in the policy's words with the kubectl command that asks it the same,
//! nothing is patched, and the exit is 3. A policy on pods only lets the patch through and
//! refuses the ReplicaSet's pods: the rollout never gets a new pod, and at the progress deadline
//! the Deployment's ReplicaFailure condition says why.

use serde_json::json;

use crate::rollout::{Node, OLD, Outcome, RolloutBench, web, web_with};
use crate::support::controllers::{Engine, Policy};
use crate::support::fixtures::Image;

/// A bench whose admission allows only images under `ghcr.io/acme/`, as `engine` says it.
fn refusing(engine: Engine) -> RolloutBench {
    RolloutBench::new(Node::Mapped, move |c| {
        web(c).admit(Policy {
            engine,
            allowed: "ghcr.io/acme/".into(),
            pods: false,
        })
    })
}

/// The ref the refused push printed, alone on stdout.
fn pushed(run: &Outcome) -> &str {
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "stdout is the ref line alone: {run:?}");
    lines[0]
}

/// The refused push's stderr: the `error:` line and the `hint:` line.
fn refusal(run: &Outcome) -> (&str, &str) {
    let error = run
        .stderr
        .lines()
        .find(|line| line.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error: {run:?}"));
    let hint = run
        .stderr
        .lines()
        .find(|line| line.starts_with("hint: "))
        .unwrap_or_else(|| panic!("no hint: {run:?}"));
    (error, hint)
}

/// The kubectl command the hint gives, run with the real kubectl: refused in the same words.
fn asks_the_same(bench: &RolloutBench, hint: &str, words: &str) {
    let command = hint
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no command in {hint}"));
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    let asked = bench.kubectl(&args);
    assert_eq!(asked.code, 1, "{asked:?}");
    assert!(asked.stderr.contains(words), "{asked:?}");
    assert_eq!(bench.controllers.images("deployment", "web")["web"], OLD);
}

#[test]
fn gatekeepers_refusal_is_said_in_its_words_not_as_rbacs() {
    let bench = refusing(Engine::Gatekeeper);
    let run = bench.push(
        &bench.archive(&Image::sample(491)),
        &["--rollout", "deploy/web"],
    );
    assert_eq!(run.code, 3, "{run:?}");
    let reference = pushed(&run);
    let (error, hint) = refusal(&run);
    assert_eq!(
        error,
        format!(
            "error: deployment/web: the cluster refused the new image: admission webhook \"validation.gatekeeper.sh\" denied the request: [allowed-repos] container <web> has an invalid image repo <{reference}>, allowed repos are [\"ghcr.io/acme/\"]; the image is pushed, and no workload was patched"
        )
    );
    assert_eq!(
        hint,
        format!(
            "hint: a policy in the cluster's admission (a ValidatingAdmissionPolicy, or a webhook such as Kyverno's or Gatekeeper's) checks each change: its words above say what it allows; push where it allows (--tag), or change the policy. `kubectl set image deployment/web web={reference} -n default --dry-run=server` asks it the same"
        )
    );
    assert!(!run.stderr.contains("credentials"), "{run:?}");
    assert_eq!(bench.patches(), 0);
    asks_the_same(
        &bench,
        hint,
        "[allowed-repos] container <web> has an invalid image repo",
    );
}

#[test]
fn kyvernos_refusal_of_several_lines_is_one_paragraph() {
    let bench = refusing(Engine::Kyverno);
    let run = bench.push(
        &bench.archive(&Image::sample(492)),
        &["--rollout", "deploy/web"],
    );
    assert_eq!(run.code, 3, "{run:?}");
    pushed(&run);
    let (error, hint) = refusal(&run);
    assert_eq!(
        error,
        "error: deployment/web: the cluster refused the new image: admission webhook \"validate.kyverno.svc-fail\" denied the request: resource Deployment/default/web was blocked due to the following policies restrict-image-registries: autogen-validate-registries: 'validation error: Unknown image registry. rule autogen-validate-registries failed at path /spec/template/spec/containers/0/image/'; the image is pushed, and no workload was patched"
    );
    assert_eq!(bench.patches(), 0);
    asks_the_same(&bench, hint, "resource Deployment/default/web was blocked");
}

#[test]
fn a_validating_admission_policys_refusal_keeps_the_pushed_ref_in_json() {
    let bench = refusing(Engine::ValidatingAdmissionPolicy);
    let run = bench.push(
        &bench.archive(&Image::sample(493)),
        &["--rollout", "deploy/web", "-o", "json"],
    );
    assert_eq!(run.code, 3, "{run:?}");
    let report = run.json();
    let reference = report["ref"].as_str().expect("the pushed ref");
    assert!(
        reference.starts_with("kind-registry:5000/myimg:dev@sha256:"),
        "{report}"
    );
    assert!(report.get("rollout").is_none(), "{report}");
    let (error, hint) = refusal(&run);
    assert!(
        error.contains(": the cluster refused the new image: deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'allowed-registries' with binding 'allowed-registries-binding' denied request: failed expression: object.spec.template.spec.containers.all(c, c.image.startsWith('ghcr.io/acme/')); the image is pushed, and no workload was patched"),
        "{error}"
    );
    asks_the_same(
        &bench,
        hint,
        "ValidatingAdmissionPolicy 'allowed-registries'",
    );
}

#[test]
fn a_policy_on_pods_only_is_said_at_the_progress_deadline_from_the_replica_failure() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        web_with(c, |spec| spec["progressDeadlineSeconds"] = json!(2)).admit(Policy {
            engine: Engine::Gatekeeper,
            allowed: "ghcr.io/acme/".into(),
            pods: true,
        })
    });
    let run = bench.push(
        &bench.archive(&Image::sample(494)),
        &["--rollout", "deploy/web", "--timeout", "60s", "-o", "json"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    let report = run.json();
    let reference = report["ref"].as_str().expect("the pushed ref");
    let refusal = format!(
        "admission webhook \"validation.gatekeeper.sh\" denied the request: [allowed-repos] container <web> has an invalid image repo <{reference}>, allowed repos are [\"ghcr.io/acme/\"]"
    );
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines[lines.len() - 2..],
        [
            "error: deployment/web: deployment \"web\" exceeded its progress deadline".to_string(),
            format!("hint: no new pod could be created: {refusal}"),
        ],
        "{run:?}"
    );
    let outcome = &report["rollout"][0];
    assert_eq!(outcome["status"], "failed");
    assert_eq!(
        outcome["notReady"],
        json!([{"pod": null, "new": true, "container": null, "reason": "FailedCreate",
                "message": refusal, "count": null}])
    );
    // The patch went through: the template runs the ref, the old pod still runs the old image.
    assert_eq!(
        bench.controllers.images("deployment", "web")["web"],
        reference
    );
    let status = bench.kubectl(&[
        "get",
        "deploy",
        "web",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"ReplicaFailure\")].reason}",
    ]);
    assert_eq!(status.stdout, "FailedCreate", "{status:?}");
    // `why` examines the old pod, which runs, and says what keeps new ones from being made.
    let why = bench.cmd().args(["why", "deploy/web"]).output();
    assert_eq!(why.code, 0, "{why:?}");
    assert!(
        why.stdout.ends_with(&format!(
            "\n✓ web ({OLD}): it runs\n! no new pod could be created: {refusal}\n"
        )),
        "{why:?}"
    );
    let report = bench
        .cmd()
        .args(["why", "deploy/web", "-o", "json"])
        .output()
        .json();
    assert_eq!(report["notCreated"], refusal.as_str());
}
