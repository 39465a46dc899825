//! `why` on pods as the API server really serves them, round three: a pod the scheduler cannot
//! place (Pending, no node, no container statuses, its `PodScheduled` condition saying why),
//! `imagePullPolicy: Never` on a node without the image (the kubelet's ErrImageNeverPull), with a
//! registry and without one, a reference the kubelet refuses (InvalidImageName) and the fix that
//! corrects it, and every spelling of a workload `kubectl get` accepts. The stand-in API server
//! writes the scheduler's and the kubelet's words; the registry is the real one, the node's
//! runtime a real containerd.

use snapbox::str;
use std::sync::Arc;

use serde_json::Value;
use tempfile::TempDir;

use crate::support::apiserver::{ApiServer, ApiServerBuilder, StandInNode};
use crate::support::containerd::Containerd;
use crate::support::fixtures::{Format, Image};
use crate::support::push::{Outcome, clean_run, cluster_with_web};
use crate::support::registry::TestRegistry;
use crate::support::run::Run;
use crate::support::standins::StandIns;
use crate::support::why_report::report;

/// The stand-in API server's one node, where the pods run.
const NODE: Option<&str> = Some("stand-in-node");

const SCHEDULER_SAYS: &str = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes \
     are available: 1 No preemption victims found for incoming pod.";

/// A cluster advertising `registry` (kind's script's ConfigMap), served by the stand-in.
struct Cluster {
    registry: TestRegistry,
    api: ApiServer,
    dir: TempDir,
}

impl Cluster {
    fn new(extra: impl FnOnce(ApiServerBuilder) -> ApiServerBuilder) -> Self {
        let registry = TestRegistry::start();
        let api = extra(cluster_with_web(&registry.host(), 1)).start();
        Self {
            registry,
            api,
            dir: TempDir::new().unwrap(),
        }
    }

    fn why(&self, target: &str) -> Outcome {
        let kubeconfig = self
            .api
            .write_kubeconfig(self.dir.path(), "kind-dev", "kind-dev");
        why_with(clean_run(self.dir.path()).kubeconfig(&kubeconfig), target)
    }

    /// Pushes a sample image as `myimg:dev` with our binary.
    fn push(&self) {
        let archive = self.dir.path().join("img.tar");
        Image::sample(501).write(Format::DockerLegacy, &archive, &["myimg:dev"]);
        let kubeconfig = self
            .api
            .write_kubeconfig(self.dir.path(), "kind-dev", "kind-dev");
        let run = clean_run(self.dir.path())
            .kubeconfig(&kubeconfig)
            .args(["push", archive.to_str().unwrap()])
            .output();
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(self.registry.get("/v2/myimg/tags/list").status, 200);
    }
}

fn why_with(run: Run, target: &str) -> Outcome {
    run.args(["why", target, "-o", "json"]).output()
}

fn finding(run: &Outcome) -> Value {
    run.json()["containers"][0].clone()
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

#[test]
fn a_pod_not_yet_scheduled_says_so_with_the_schedulers_words_and_no_image_cause() {
    let cluster = Cluster::new(|api| {
        api.kubelet(|_| Err("no kubelet hears of an unscheduled pod".into()))
            .unschedulable(SCHEDULER_SAYS)
    });
    cluster
        .api
        .create_pod("web", "kind-registry:5000/myimg:dev", None);
    let run = cluster.why("pod/web");
    report(&run, 0, "web", None).finding(str![[r#"
"image": "kind-registry:5000/myimg:dev",
"cause": null,
"explanation": "the pod is not scheduled on a node yet, so no node has asked for its image; the scheduler says: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
"fix": null

"#]]);
    assert_eq!(run.stderr, "", "{}", run.stdout);
    let found = finding(&run);
    let explanation = text(&found["explanation"]);
    assert!(
        explanation.contains("not scheduled on a node yet")
            && explanation.ends_with(&format!(
                "the scheduler says: Unschedulable: {SCHEDULER_SAYS}"
            )),
        "{explanation}"
    );
    assert!(
        !explanation.contains("pulled"),
        "claims a pull: {explanation}"
    );
}

#[test]
fn pull_policy_never_on_a_node_without_the_image_is_pull_policy_with_a_registry() {
    let cluster = Cluster::new(|api| {
        api.kubelet(|_| Err("Never: the kubelet does not pull".into()))
            .node_holds(|_| false)
    });
    cluster.push();
    cluster
        .api
        .create_pod("pushed", "kind-registry:5000/myimg:dev", Some("Never"));
    cluster.api.create_pod(
        "unpushed",
        "kind-registry:5000/myimg:nothere",
        Some("Never"),
    );

    let run = cluster.why("pod/pushed");
    report(&run, 3, "pushed", NODE).finding(str![[r#"
"image": "kind-registry:5000/myimg:dev",
"cause": "pull-policy",
"explanation": "its imagePullPolicy is Never, so the kubelet uses only an image the node holds: node stand-in-node does not hold it, and the registry holds it: Container image \"kind-registry:5000/myimg:dev\" is not present with pull policy of Never",
"fix": "set imagePullPolicy: IfNotPresent in the pod spec (or leave it out), so that the node pulls it from the registry"

"#]]);

    report(&cluster.why("unpushed"), 3, "unpushed", NODE).finding(str![[r#"
"image": "kind-registry:5000/myimg:nothere",
"cause": "pull-policy",
"explanation": "its imagePullPolicy is Never, so the kubelet uses only an image the node holds: node stand-in-node does not hold it, and the registry does not hold it either: Container image \"kind-registry:5000/myimg:nothere\" is not present with pull policy of Never",
"fix": "push it (kubectl registry push IMAGE --tag myimg:nothere), then set imagePullPolicy: IfNotPresent in the pod spec (or leave it out), so that the node pulls it from the registry"

"#]]);
}

#[test]
fn pull_policy_never_without_a_registry_says_to_load_the_nodes() {
    let node = Arc::new(Containerd::start());
    let standins = StandIns::new(&node);
    standins.add_node("stand-in-node", &node);
    let held = Arc::clone(&node);
    let api = ApiServer::builder()
        .node(StandInNode::new("stand-in-node").provider_id("kind://docker/dev/stand-in-node"))
        .kubelet(|_| Err("Never: the kubelet does not pull".into()))
        .node_holds(move |image| {
            held.images()
                .contains(&format!("docker.io/library/{image}"))
        })
        .start();
    let dir = TempDir::new().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
    api.create_pod("web", "myimg:dev", Some("Never"));
    let run = why_with(
        clean_run(dir.path())
            .kubeconfig(&kubeconfig)
            .path(format!("{}:/usr/bin:/bin", standins.bin_dir().display())),
        "pod/web",
    );
    report(&run, 3, "web", NODE).finding(str![[r#"
"image": "myimg:dev",
"cause": "pull-policy",
"explanation": "its imagePullPolicy is Never, so the kubelet uses only an image the node holds: the cluster has no registry, and node stand-in-node's containerd holds no docker.io/library/myimg:dev: Container image \"myimg:dev\" is not present with pull policy of Never",
"fix": "load it into the nodes: kubectl registry push IMAGE --tag myimg:dev (with no registry, push loads the nodes), then use the ref it prints; imagePullPolicy: Never finds a loaded image"

"#]]);
}

#[test]
fn a_reference_in_the_wrong_case_is_invalid_name_with_the_corrected_reference() {
    let cluster = Cluster::new(|api| api.kubelet(|_| Err("parsed before any pull".into())));
    cluster
        .api
        .create_pod("web", "kind-registry:5000/Team/MyImg:Dev-1", None);
    let run = cluster.why("web");
    report(&run, 3, "web", NODE).finding(str![[r#"
"image": "kind-registry:5000/Team/MyImg:Dev-1",
"cause": "invalid-name",
"explanation": "the image reference does not parse: \"kind-registry:5000/Team/MyImg:Dev-1\" is not an image name: each path component is lowercase letters and digits, joined by '.', '_', '__' or '-'",
"fix": "use image kind-registry:5000/team/myimg:Dev-1 in the pod spec (repository names are lower case; the tag is kept)"

"#]]);
}

#[test]
fn every_spelling_of_a_deployment_kubectl_get_accepts_is_read() {
    // No kubelet: the Deployment's pod has no status yet, and why says no more than that.
    let cluster = Cluster::new(|api| api);
    cluster.api.create_labelled_pod(
        "web-1",
        "kind-registry:5000/myimg:dev",
        None,
        &[("app", "web")],
    );
    for spelling in [
        "deploy/web",
        "deployment/web",
        "deployments/web",
        "Deployment/web",
        "deployment.apps/web",
        "deployments.apps/web",
        "deployments.v1.apps/web",
    ] {
        let run = cluster.why(spelling);
        assert_eq!(
            (run.code, run.stderr.as_str()),
            (0, ""),
            "{spelling}: {}",
            run.stdout
        );
        assert_eq!(run.json()["pod"], "web-1", "{spelling}");
        let explanation = text(&finding(&run)["explanation"]).to_string();
        assert!(
            explanation.contains("has not reported on this container yet")
                && !explanation.contains("pulled;"),
            "{spelling}: {explanation}"
        );
    }
    let run = cluster.why("statefulsets.apps/web");
    assert_eq!((run.code, run.stdout.as_str()), (2, ""), "{run:?}");
    run.assert_stderr(str![[r#"
error: "statefulsets.apps/web": why does not read statefulsets.apps; it reads pods and deployments
hint: name one as pod/NAME (pods, po, pods.v1.) or deployment/NAME (deployments, deploy, deployments.apps), or a pod by NAME alone, e.g. kubectl registry why deploy/web
hint: for another workload, name one of its pods: `kubectl get pods -l SELECTOR` lists them

"#]]);
}
