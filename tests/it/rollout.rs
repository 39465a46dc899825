//! `push --rollout KIND/NAME[=CONTAINER]` end to end: the real registry, the stand-in API
//! server's controllers (tests/support/controllers.rs) rolling Deployments, StatefulSets and
//! DaemonSets on a patch, their kubelet pulling each new pod's image with a real containerd
//! through kind's `hosts.toml`. The stand-in is checked against the real `kubectl set image`
//! and `kubectl rollout status`.

use snapbox::{IntoData, str};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tempfile::TempDir;

use serde_json::Value;

use crate::support::apiserver::{ApiServer, StandInNode, unused_port};
use crate::support::containerd::Containerd;
use crate::support::controllers::{Container, Controllers, Runs};
use crate::support::fixtures::{Format, Image};
use crate::support::push::{RUNTIME_HOST, clean_run, hosting_yaml};
use crate::support::registry::TestRegistry;

/// The image the workloads ran before the test: on the registry's runtime host, never pulled.
pub(crate) const OLD: &str = "kind-registry:5000/myimg:old";

pub(crate) struct RolloutBench {
    pub registry: TestRegistry,
    /// Served while the bench lives.
    pub _api: ApiServer,
    pub controllers: Controllers,
    pub node: Arc<Containerd>,
    pub dir: TempDir,
    pub kubeconfig: PathBuf,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Node {
    /// kind's mapping: the runtime pulls from the registry.
    Mapped,
    /// A mapping to a port nothing listens on: the runtime's pull is refused.
    Refused,
}

impl RolloutBench {
    /// `workloads` adds the controllers' workloads (and how their containers run).
    pub(crate) fn new(node: Node, workloads: impl FnOnce(Controllers) -> Controllers) -> Self {
        let registry = TestRegistry::start();
        let dir = TempDir::new().unwrap();
        let hosts = dir.path().join("certs.d");
        std::fs::create_dir_all(hosts.join(RUNTIME_HOST)).unwrap();
        let upstream = match node {
            Node::Mapped => registry.host(),
            Node::Refused => format!("127.0.0.1:{}", unused_port()),
        };
        std::fs::write(
            hosts.join(RUNTIME_HOST).join("hosts.toml"),
            format!(
                "server = \"http://{RUNTIME_HOST}\"\n[host.\"http://{upstream}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
            ),
        )
        .unwrap();
        let node = Arc::new(Containerd::start());
        // Weak: a connection thread of the API server may outlive the test, holding the
        // controllers; the node's containerd must still stop when the bench is dropped.
        let kubelet = Arc::downgrade(&node);
        let controllers = workloads(Controllers::new(move |image| match kubelet.upgrade() {
            Some(node) => node.pull(image, &hosts),
            None => Err("the node's containerd has stopped".to_string()),
        }));
        let api = ApiServer::builder()
            .hosting_v1(&hosting_yaml(&registry.host()))
            .node(StandInNode::new("stand-in-node"))
            .controllers(&controllers)
            .start();
        let kubeconfig = api.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
        Self {
            registry,
            _api: api,
            controllers,
            node,
            dir,
            kubeconfig,
        }
    }

    pub(crate) fn cmd(&self) -> crate::support::run::Run {
        clean_run(self.dir.path()).kubeconfig(&self.kubeconfig)
    }

    /// `push ARCHIVE ARGS...`, started and left running, its stdout and stderr piped.
    pub(crate) fn spawn_push(&self, archive: &Path, args: &[&str]) -> std::process::Child {
        self.cmd()
            .args(["push", archive.to_str().unwrap()])
            .args(args)
            .spawn()
    }

    /// An archive of `image` named `myimg:dev`.
    pub(crate) fn archive(&self, image: &Image) -> PathBuf {
        let archive = self.dir.path().join("img.tar");
        image.write(Format::DockerLegacy, &archive, &["myimg:dev"]);
        archive
    }

    /// The real `kubectl ARGS` against this cluster.
    pub(crate) fn kubectl(&self, args: &[&str]) -> Outcome {
        crate::support::run::Run::program("kubectl", self.dir.path())
            .kubeconfig(&self.kubeconfig)
            .args(args)
            .output()
    }

    pub(crate) fn push(&self, archive: &Path, args: &[&str]) -> Outcome {
        self.cmd()
            .args(["push", archive.to_str().unwrap()])
            .args(args)
            .output()
    }

    /// The ref a `-o json` push reported, checked to be what the container `name` of workload
    /// `kind/name` now runs.
    pub(crate) fn assert_runs_reported<'r>(
        &self,
        report: &'r Value,
        kind: &str,
        name: &str,
    ) -> &'r str {
        let reference = report["ref"].as_str().expect("a ref in the report");
        assert_eq!(self.controllers.images(kind, name)[name], reference);
        reference
    }

    /// The ref `run` printed, checked to be what container web of deployment/web now runs, and
    /// its rollout said whole: the patch, kubectl's waiting lines, done.
    pub(crate) fn assert_web_rolled_out<'r>(&self, run: &'r Outcome) -> &'r str {
        let reference = run.reference();
        assert_eq!(
            self.controllers.images("deployment", "web")["web"],
            reference
        );
        run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
deployment/web: deployment "web" successfully rolled out in [ELAPSED]s

"#]]);
        reference
    }

    pub(crate) fn patches(&self) -> usize {
        self.controllers.patches().len()
    }

    fn tag_status(&self, tag: &str) -> u16 {
        self.registry
            .request("GET", &format!("/v2/myimg/manifests/{tag}"))
            .status
    }
}

pub(crate) use crate::support::run::Outcome;

/// Each workload of a `-o json` report's `rollout`, and its status.
pub(crate) fn rollout_outcomes(report: &Value) -> Vec<(&str, &str)> {
    report["rollout"]
        .as_array()
        .expect("a rollout list")
        .iter()
        .map(|o| {
            (
                o["workload"].as_str().expect("a workload"),
                o["status"].as_str().expect("a status"),
            )
        })
        .collect()
}

pub(crate) fn web(controllers: Controllers) -> Controllers {
    controllers.workload("Deployment", "web", &[Container("web", OLD, false)], 2)
}

/// deployment/web of one pod whose two containers, web and worker, run the old image.
pub(crate) fn web_and_worker(controllers: Controllers) -> Controllers {
    let containers = [
        Container("web", OLD, false),
        Container("worker", OLD, false),
    ];
    controllers.workload("Deployment", "web", &containers, 1)
}

/// [`web`], its spec changed by `edit`.
pub(crate) fn web_with(controllers: Controllers, edit: impl FnOnce(&mut Value)) -> Controllers {
    let containers = [Container("web", OLD, false)];
    controllers.workload_in("default", "Deployment", "web", &containers, 2, edit)
}

#[test]
fn a_deployment_rolls_out_to_the_pushed_ref_with_one_patch() {
    let bench = RolloutBench::new(Node::Mapped, web);
    let old_pods = bench.controllers.pods();
    let run = bench.push(
        &bench.archive(&Image::sample(321)),
        &["--rollout", "deploy/web"],
    );
    let reference = bench.assert_web_rolled_out(&run);
    assert!(
        reference.starts_with("kind-registry:5000/myimg:dev@sha256:"),
        "{run:?}"
    );
    assert_eq!(bench.patches(), 1, "{run:?}");
    let pods = bench.controllers.pods();
    assert_eq!(pods.len(), 2, "{pods:?}");
    assert!(
        pods.iter()
            .all(|(name, ready)| *ready && !old_pods.iter().any(|(old, _)| old == name))
    );
    assert!(
        bench.node.images().contains(&reference.to_string()),
        "the node pulled it"
    );
}

#[test]
fn the_containers_running_the_image_are_set_init_ones_too_and_others_left() {
    // Another image on the registry, for the containers left alone (the new pod pulls it too).
    let bench = RolloutBench::new(Node::Mapped, |c| c);
    let run = bench.push(&bench.archive(&Image::sample(9)), &["--tag", "proxy:1"]);
    let proxy = run.reference().to_string();
    // The host we push to, spelled otherwise: the same registry.
    let port = bench
        .registry
        .host()
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let setup = format!("LOCALHOST:{port}/myimg:old");
    bench.controllers.add_workload(
        "Deployment",
        "web",
        &[
            Container("migrate", &proxy, true),
            Container("setup", &setup, true),
            Container("web", OLD, false),
            Container("proxy", &proxy, false),
        ],
        1,
    );
    let run = bench.push(
        &bench.archive(&Image::sample(322)),
        &["--rollout", "deployment.apps/web"],
    );
    let reference = run.reference();
    let images = bench.controllers.images("deployment", "web");
    assert_eq!(images["setup"], reference, "{run:?}");
    assert_eq!(images["web"], reference);
    assert_eq!(images["proxy"], proxy);
    assert_eq!(images["migrate"], proxy);
    assert_eq!(bench.patches(), 1);
}

#[test]
fn equal_containers_of_different_images_need_a_name_and_the_name_picks_one() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        c.workload(
            "Deployment",
            "web",
            &[
                Container("web", OLD, false),
                Container("debug", "kind-registry:5000/myimg:debug", false),
            ],
            1,
        )
    });
    // The container left alone runs an image the registry holds, as the new pod pulls it too.
    bench
        .push(&bench.archive(&Image::sample(9)), &["--tag", "myimg:old"])
        .reference();
    let archive = bench.archive(&Image::sample(323));
    let run = bench.push(&archive, &["--rollout", "deploy/web"]);
    assert_eq!(run.code, 2, "{run:?}");
    run.assert_stderr(str![[r#"
error: 2 containers of deployment default/web run myimg on 127.0.0.1:[PORT], as different images; nothing was pushed
hint: its containers: web: kind-registry:5000/myimg:old, debug: kind-registry:5000/myimg:debug
hint: name the one to set: --rollout deployment/web=web

"#]]);
    assert_eq!(bench.tag_status("dev"), 404, "nothing was pushed");
    let run = bench.push(&archive, &["--rollout", "deploy/web=debug"]);
    let reference = run.reference();
    let images = bench.controllers.images("deployment", "web");
    assert_eq!(
        (images["web"].as_str(), images["debug"].as_str()),
        (OLD, reference)
    );
}

#[test]
fn no_container_running_the_image_is_exit_2_before_anything_is_pushed() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        c.workload(
            "Deployment",
            "web",
            &[Container("web", "nginx:1.27", false)],
            1,
        )
    });
    let run = bench.push(
        &bench.archive(&Image::sample(324)),
        &["--rollout", "deploy/web"],
    );
    assert_eq!(run.code, 2, "{run:?}");
    run.assert_stdout(str![]);
    run.assert_stderr(str![[r#"
error: no container of deployment default/web runs myimg on 127.0.0.1:[PORT]; nothing was pushed
hint: its containers: web: nginx:1.27
hint: name the one to set: --rollout deployment/web=web

"#]]);
    assert_eq!(bench.tag_status("dev"), 404, "nothing was pushed");
    assert_eq!(bench.patches(), 0);
}

#[test]
fn a_new_pod_that_cannot_pull_stops_the_wait_with_whys_cause_and_exit_code() {
    let bench = RolloutBench::new(Node::Refused, web);
    let run = bench.push(
        &bench.archive(&Image::sample(325)),
        &["--rollout", "deploy/web", "-o", "json", "--timeout", "30s"],
    );
    assert_eq!(run.code, 6, "why's code for an unmapped registry: {run:?}");
    run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
pod default/web-5f02-09aab on node stand-in-node
✗ web (kind-registry:5000/myimg:dev@sha256:[DIGEST]): registry-not-mapped
    why: the node's container runtime cannot connect to kind-registry:5000: Failed: Failed to pull image "kind-registry:5000/myimg:dev@sha256:[DIGEST]": [..]: connection refused
    fix: map kind-registry:5000 on each node's containerd to the registry (kind: /etc/containerd/certs.d/kind-registry:5000/hosts.toml):
         server = "http://kind-registry:5000"
         [host."http://kind-registry:5000"]
           capabilities = ["pull", "resolve"]
error: deployment/web: the new pod web-5f02-09aab cannot pull its image: pod default/web-5f02-09aab: 1 container cannot start its image (web)

"#]]);
    assert!(!run.stderr.contains("did not finish"), "{run:?}");
    let report = run.json();
    let outcome = &report["rollout"][0];
    assert_eq!(outcome["workload"], "deployment/web");
    assert_eq!(outcome["status"], "image-pull");
    assert_eq!(outcome["patched"], true);
    assert_eq!(
        outcome["why"]["containers"][0]["cause"],
        "registry-not-mapped"
    );
    assert!(
        report["ref"]
            .as_str()
            .unwrap()
            .starts_with("kind-registry:5000/myimg:dev@")
    );
}

#[test]
fn a_crash_loop_shows_the_previous_runs_last_lines_and_how_it_ended() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        web(c).runs(|image| {
            if image.contains("myimg:dev") {
                Runs::Crashes {
                    reason: "OOMKilled".into(),
                    exit_code: 137,
                    log: "starting\nloading the model\nallocating 4 GiB\n".into(),
                }
            } else {
                Runs::Ready
            }
        })
    });
    let run = bench.push(
        &bench.archive(&Image::sample(326)),
        &["--rollout", "deploy/web", "--timeout", "30s"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
deployment/web: container web of the new pod web-5f02-09aab crashes (OOMKilled 137, restarted 2 times); its previous run's last lines:
    starting
    loading the model
    allocating 4 GiB
error: deployment/web: the new pod web-5f02-09aab crash-loops: container web ended OOMKilled 137
hint: `kubectl logs web-5f02-09aab -c web --previous` shows its whole log

"#]]);
    run.assert_stdout(str![[r#"
kind-registry:5000/myimg:dev@sha256:[DIGEST]

"#]]);
}

#[test]
fn a_rollout_that_never_finishes_times_out_naming_the_schedulers_message() {
    let message = "0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.";
    let bench = RolloutBench::new(Node::Mapped, |c| web(c).unschedulable(message));
    let run = bench.push(
        &bench.archive(&Image::sample(327)),
        &["--rollout", "deploy/web", "--timeout", "5s", "-o", "json"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    run.assert_stderr(str![[r#"
deployment/web: set web=kind-registry:5000/myimg:dev@sha256:[DIGEST]
...
deployment/web: pod web-5f02-09aab is not scheduled: Unschedulable: 0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.
...
error: deployment/web: the rollout did not finish in 5s: waiting for deployment "web" rollout to finish: [..]
hint: the new pod web-5f02-09aab was never scheduled: Unschedulable: 0/1 nodes are available: 1 Insufficient memory.

"#]]);
    assert_eq!(run.json()["rollout"][0]["status"], "timed-out");
}

#[test]
fn statefulsets_and_daemonsets_roll_out_in_one_push() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        c.workload("StatefulSet", "db", &[Container("db", OLD, false)], 2)
            .workload("DaemonSet", "agent", &[Container("agent", OLD, false)], 1)
    });
    let run = bench.push(
        &bench.archive(&Image::sample(328)),
        &["--rollout", "sts/db", "--rollout", "ds/agent", "-o", "json"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let report = run.json();
    let reference = bench.assert_runs_reported(&report, "statefulset", "db");
    assert_eq!(
        bench.controllers.images("daemonset", "agent")["agent"],
        reference
    );
    let outcomes = rollout_outcomes(&report);
    assert_eq!(
        outcomes,
        [
            ("statefulset/db", "rolled-out"),
            ("daemonset/agent", "rolled-out")
        ]
    );
    run.assert_stderr(
        str![[r#"
statefulset/db: set db=kind-registry:5000/myimg:dev@sha256:[DIGEST]
daemonset/agent: set agent=kind-registry:5000/myimg:dev@sha256:[DIGEST]
statefulset/db: statefulset rolling update complete 2 pods at revision db-2 in [ELAPSED]s
daemonset/agent: daemon set "agent" successfully rolled out in [ELAPSED]s
...
"#]]
        .unordered(),
    );
}

#[test]
fn an_unchanged_push_patches_nothing_and_says_so() {
    let bench = RolloutBench::new(Node::Mapped, web);
    let archive = bench.archive(&Image::sample(329));
    let first = bench.push(&archive, &["--rollout", "deploy/web"]);
    let reference = first.reference().to_string();
    let again = bench.push(&archive, &["--rollout", "deploy/web", "-o", "json"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(bench.patches(), 1, "the second push patched nothing");
    again.assert_stderr(str![[r#"
deployment/web already runs kind-registry:5000/myimg:dev@sha256:[DIGEST] (web); nothing patched

"#]]);
    assert!(again.stderr.contains(&reference), "{again:?}");
    let outcome = &again.json()["rollout"][0];
    assert_eq!(
        (outcome["status"].as_str(), outcome["patched"].as_bool()),
        (Some("unchanged"), Some(false))
    );
}

#[test]
fn permissions_the_rollout_lacks_are_named_exit_3_before_the_push() {
    for (verb, resource, named) in [
        ("patch", "deployments", "patch deployments.apps"),
        ("list", "pods", "list pods"),
        ("get", "pods/log", "get pods/log"),
        ("get", "deployments", "get deployments.apps"),
    ] {
        let bench = RolloutBench::new(Node::Mapped, |c| web(c).forbid(verb, resource));
        let run = bench.push(
            &bench.archive(&Image::sample(330)),
            &["--rollout", "deploy/web"],
        );
        assert_eq!(run.code, 3, "{run:?}");
        assert!(
            run.stderr.contains(&format!("these credentials may not {named} in namespace default; nothing was pushed or patched")),
            "{run:?}"
        );
        assert_eq!(bench.tag_status("dev"), 404, "nothing was pushed");
        assert_eq!(bench.patches(), 0);
    }
}

#[test]
fn the_stand_in_rolls_out_as_kubectl_set_image_and_rollout_status_see_it() {
    let bench = RolloutBench::new(Node::Mapped, web);
    let run = bench.push(&bench.archive(&Image::sample(331)), &[]);
    let reference = run.reference().to_string();
    let kubectl = |args: &[&str]| {
        let run = bench.kubectl(args);
        (run.code == 0, run.stdout + &run.stderr)
    };
    let set = kubectl(&["set", "image", "deploy/web", &format!("web={reference}")]);
    assert_eq!(
        set,
        (true, "deployment.apps/web image updated\n".to_string())
    );
    let status = kubectl(&["rollout", "status", "deploy/web", "--timeout=60s"]);
    assert!(
        status.0
            && status
                .1
                .ends_with("deployment \"web\" successfully rolled out\n"),
        "{status:?}"
    );
    assert_eq!(
        bench.controllers.images("deployment", "web")["web"],
        reference
    );
    assert_eq!(bench.patches(), 1);
    // The same push with --rollout now finds it done.
    let again = bench.push(
        &bench.archive(&Image::sample(331)),
        &["--rollout", "deploy/web"],
    );
    again.assert_stderr(str![[r#"
deployment/web already runs kind-registry:5000/myimg:dev@sha256:[DIGEST] (web); nothing patched

"#]]);
}
