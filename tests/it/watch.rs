//! `push SRC --watch [--rollout ...]` end to end, the real binary kept running: an archive
//! replaced by `mv`, a podman image and a docker image rebuilt under the same name, each giving
//! a new ref line (and the workload rolled to it); Ctrl-C mid-round exits 130 with nothing
//! tagged and no temporary file left; each round inspects its engine once and reads the cluster once.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use crate::rollout::{Node, RolloutBench};
use crate::support::controllers::{Container, Controllers};
use crate::support::dockerd::Dockerd;
use crate::support::fault_proxy::{Action, FaultProxy};
use crate::support::fixtures::{Format, Image};
use crate::support::podman::{Podman, layer_dir};
use crate::support::push::Bench;
use crate::support::registry::TestRegistry;

/// A bound on each wait, not a timing assertion: a round here takes well under a second.
pub(crate) const BOUND: Duration = Duration::from_secs(60);

/// The binary running `push --watch`, its stdout and stderr read line by line as they come.
pub(crate) struct Watching {
    child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    said: Vec<String>,
}

impl Watching {
    pub(crate) fn start(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = |stream: Box<dyn std::io::Read + Send>| {
            let (sender, receiver) = channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if sender.send(line).is_err() {
                        return;
                    }
                }
            });
            receiver
        };
        let stdout = lines(Box::new(child.stdout.take().unwrap()));
        let stderr = lines(Box::new(child.stderr.take().unwrap()));
        Self {
            child,
            stdout,
            stderr,
            said: Vec::new(),
        }
    }

    /// The next ref line on stdout.
    pub(crate) fn next_ref(&mut self) -> String {
        self.stdout
            .recv_timeout(BOUND)
            .unwrap_or_else(|_| panic!("no ref line; stderr so far: {:?}", self.drain()))
    }

    /// Reads stderr until a line contains `text`.
    pub(crate) fn until_said(&mut self, text: &str) {
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(text);
                    self.said.push(line);
                    if found {
                        return;
                    }
                }
                Err(_) => panic!("never said {text:?}; said {:?}", self.said),
            }
        }
    }

    /// Everything said on stderr, to its end (after the program exited).
    pub(crate) fn said_to_the_end(&mut self) -> Vec<String> {
        while let Ok(line) = self.stderr.recv_timeout(BOUND) {
            self.said.push(line);
        }
        self.said.clone()
    }

    pub(crate) fn drain(&mut self) -> Vec<String> {
        self.said.extend(self.stderr.try_iter());
        self.said.clone()
    }

    /// Ctrl-C, then the exit code and what stdout still had (stderr kept in `said`).
    pub(crate) fn interrupt(&mut self) -> (i32, Vec<String>) {
        crate::support::run::signal(self.child.id(), "-INT");
        let deadline = Instant::now() + BOUND;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the watch outlived its SIGINT");
            std::thread::sleep(Duration::from_millis(20));
        };
        let rest: Vec<String> = self.stdout.try_iter().collect();
        self.drain();
        (
            status
                .code()
                .expect("died of the signal instead of handling it"),
            rest,
        )
    }
}

fn watch_command(bench: &RolloutBench, args: &[&str]) -> Command {
    bench
        .cmd()
        .args(["push"])
        .args(args)
        .args(["--watch", "--rollout", "deploy/web", "-v"])
        .command()
}

fn web_on(image: &'static str) -> impl FnOnce(Controllers) -> Controllers {
    move |c| c.workload("Deployment", "web", &[Container("web", image, false)], 1)
}

#[test]
fn an_archive_replaced_by_mv_is_pushed_and_rolled_out_again() {
    let bench = RolloutBench::new(Node::Mapped, web_on("kind-registry:5000/myimg:old"));
    let archive = bench.archive(&Image::sample(401));
    let mut watching = Watching::start(watch_command(&bench, &[archive.to_str().unwrap()]));
    watching.until_said(&format!(
        "watching {}: inotify on {}",
        archive.display(),
        bench.dir.path().display()
    ));
    let first = watching.next_ref();
    watching.until_said("successfully rolled out");
    assert_eq!(bench.controllers.images("deployment", "web")["web"], first);
    let next = bench.dir.path().join("img.next.tar");
    Image::sample(402).write(Format::DockerLegacy, &next, &["myimg:dev"]);
    std::fs::rename(&next, &archive).unwrap();
    let second = watching.next_ref();
    assert_ne!(second, first);
    assert!(
        second.starts_with("kind-registry:5000/myimg:dev@sha256:"),
        "{second}"
    );
    watching.until_said("successfully rolled out");
    assert_eq!(bench.controllers.images("deployment", "web")["web"], second);
    let (code, rest) = watching.interrupt();
    assert_eq!((code, rest), (130, Vec::<String>::new()));
}

#[test]
fn with_vv_each_round_says_where_its_time_went_from_the_change_on() {
    let bench = RolloutBench::new(Node::Mapped, web_on("kind-registry:5000/myimg:old"));
    let archive = bench.archive(&Image::sample(421));
    let mut command = watch_command(&bench, &[archive.to_str().unwrap()]);
    command.arg("-v");
    let mut watching = Watching::start(command);
    watching.next_ref();
    watching.until_said("push round and its rollouts: ");
    let next = bench.dir.path().join("img.next.tar");
    Image::sample(422).write(Format::DockerLegacy, &next, &["myimg:dev"]);
    std::fs::rename(&next, &archive).unwrap();
    watching.next_ref();
    watching.until_said("push round and its rollouts: ");
    assert_eq!(watching.interrupt().0, 130);
    let said = watching.drain();
    let laps = |prefix: &str| -> Vec<Vec<String>> {
        said.iter()
            .filter_map(|line| line.strip_prefix(prefix))
            .map(|laps| {
                let (laps, total) = laps.rsplit_once(", in all ").expect("a total");
                assert!(
                    total.strip_suffix(" ms").unwrap().parse::<u64>().is_ok(),
                    "{total}"
                );
                laps.split(", ")
                    .map(|lap| {
                        let (name, ms) = lap
                            .rsplit_once(' ')
                            .and_then(|(l, _)| l.rsplit_once(' '))
                            .unwrap();
                        assert!(ms.parse::<u64>().is_ok(), "{lap}");
                        name.to_string()
                    })
                    .collect()
            })
            .collect()
    };
    let pushes = laps("push round: ");
    let first = [
        "open and discover",
        "read the rollouts",
        "plan",
        "carry out",
    ];
    // The second round's time counts from the change noticed: the archive's settling first.
    let second = [
        "settle",
        "open and discover",
        "read the rollouts",
        "plan",
        "carry out",
    ];
    assert_eq!(pushes, [first.to_vec(), second.to_vec()]);
    let rolled = laps("push round and its rollouts: ");
    assert_eq!(rolled.len(), 2, "{rolled:?}");
    assert!(
        rolled
            .iter()
            .all(|laps| laps.last().map(String::as_str) == Some("roll out"))
    );
}

#[test]
fn a_watch_asks_for_its_permissions_once_and_a_refused_one_again_at_the_next_round() {
    let bench = RolloutBench::new(Node::Mapped, |c| {
        web_on("kind-registry:5000/myimg:old")(c).forbid("patch", "deployments")
    });
    let archive = bench.archive(&Image::sample(431));
    let mut watching = Watching::start(watch_command(&bench, &[archive.to_str().unwrap()]));
    watching.until_said("may not patch deployments.apps in namespace default");
    bench.controllers.permit("patch", "deployments");
    for sample in [432, 433] {
        let next = bench.dir.path().join("img.next.tar");
        Image::sample(sample).write(Format::DockerLegacy, &next, &["myimg:dev"]);
        std::fs::rename(&next, &archive).unwrap();
        let pushed = watching.next_ref();
        watching.until_said("successfully rolled out");
        assert_eq!(bench.controllers.images("deployment", "web")["web"], pushed);
    }
    assert_eq!(watching.interrupt().0, 130);
    // The first round asks all eight (get, list, patch and watch on deployments; get, list and
    // watch on pods; get on pods/log) and is refused patch; the second asks for patch only, now
    // granted; the third asks nothing.
    let reviews = bench
        ._api
        .requests()
        .iter()
        .filter(|request| request.contains("selfsubjectaccessreviews"))
        .count();
    assert_eq!(reviews, 9, "{:#?}", bench._api.requests());
}

#[test]
fn a_permission_taken_away_mid_watch_is_named_and_the_round_after_its_return_rolls_out() {
    let bench = RolloutBench::new(Node::Mapped, web_on("kind-registry:5000/myimg:old"));
    let archive = bench.archive(&Image::sample(434));
    let mut watching = Watching::start(watch_command(&bench, &[archive.to_str().unwrap()]));
    watching.next_ref();
    watching.until_said("successfully rolled out");
    bench.controllers.revoke("patch", "deployments");
    let rebuild = |sample| {
        let next = bench.dir.path().join("img.next.tar");
        Image::sample(sample).write(Format::DockerLegacy, &next, &["myimg:dev"]);
        std::fs::rename(&next, &archive).unwrap();
    };
    // Granted before the first round, so pushed; the PATCH itself is refused.
    rebuild(435);
    watching.next_ref();
    watching.until_said(
        "error: these credentials may not patch deployments.apps in namespace default; the image is pushed, and no workload was patched",
    );
    // The refusal is remembered: the next round asks first, and pushes nothing.
    rebuild(436);
    watching.until_said(
        "error: these credentials may not patch deployments.apps in namespace default; nothing was pushed or patched",
    );
    bench.controllers.permit("patch", "deployments");
    rebuild(437);
    let pushed = watching.next_ref();
    watching.until_said("successfully rolled out");
    assert_eq!(bench.controllers.images("deployment", "web")["web"], pushed);
    assert_eq!(watching.interrupt().0, 130);
}

#[test]
fn a_podman_image_rebuilt_under_its_name_is_pushed_and_rolled_out_again() {
    let podman = Podman::new();
    let layers = podman.dir().join("layers");
    podman.build(
        "localhost/myimg:dev",
        &[&layer_dir(&layers, "a", 411, &[4096])],
    );
    let bench = RolloutBench::new(Node::Mapped, web_on("kind-registry:5000/myimg:old"));
    let mut command = watch_command(&bench, &["myimg:dev"]);
    command
        .envs(podman.envs())
        .env("KUBECTL_REGISTRY_ENGINE", "podman");
    // Its store's images.json, which buildah's commits rewrite too (podman's events miss them).
    rolled_again_after_a_rebuild(&bench, command, "podman's store: inotify on", || {
        podman.build(
            "localhost/myimg:dev",
            &[&layer_dir(&layers, "b", 412, &[4096])],
        );
    });
}

/// The first round rolled out; `rebuild`; a new ref, rolled out too; Ctrl-C ends it.
fn rolled_again_after_a_rebuild(
    bench: &RolloutBench,
    command: Command,
    heard_by: &str,
    rebuild: impl FnOnce(),
) {
    let mut watching = Watching::start(command);
    watching.until_said(&format!("watching myimg:dev: {heard_by}"));
    let first = watching.next_ref();
    watching.until_said("successfully rolled out");
    rebuild();
    let second = watching.next_ref();
    assert_ne!(second, first);
    watching.until_said("successfully rolled out");
    assert_eq!(bench.controllers.images("deployment", "web")["web"], second);
    assert_eq!(watching.interrupt().0, 130);
}

#[test]
fn a_docker_image_rebuilt_under_its_name_is_pushed_and_rolled_out_again() {
    let dockerd = Dockerd::start();
    let dir = tempfile::tempdir().unwrap();
    dockerd.build(
        "scratch",
        "myimg:dev",
        &[&layer_dir(dir.path(), "a", 421, &[4096])],
    );
    let bench = RolloutBench::new(Node::Mapped, web_on("kind-registry:5000/myimg:old"));
    let mut command = watch_command(&bench, &["myimg:dev"]);
    command.env("DOCKER_HOST", dockerd.host());
    let heard_by = "the image events of docker engine API at unix://";
    rolled_again_after_a_rebuild(&bench, command, heard_by, || {
        dockerd.build(
            "scratch",
            "myimg:dev",
            &[&layer_dir(dir.path(), "b", 422, &[4096])],
        );
    });
}

#[test]
fn ctrl_c_during_a_round_exits_130_with_nothing_tagged_and_no_temporary_file() {
    let registry = TestRegistry::start();
    let proxy = FaultProxy::on_uploads(&registry.host(), 1, Action::StallAfterBody);
    let bench = Bench::advertising(registry, &proxy.host());
    let path = bench.path("img.tar");
    Image::sample(431).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let tmp = bench.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let command = bench
        .cmd()
        .env("TMPDIR", &tmp)
        .args(["push", path.to_str().unwrap(), "--watch"])
        .command();
    let mut watching = Watching::start(command);
    assert!(
        proxy.wait_for_stall(BOUND),
        "the round never reached the stalling upload: {:?}",
        watching.drain()
    );
    assert!(!entries(&tmp).is_empty(), "no scratch dir mid-round");
    let (code, rest) = watching.interrupt();
    assert_eq!((code, rest), (130, Vec::<String>::new()));
    let said = watching.drain().join("\n");
    assert!(
        said.contains("interrupted by SIGINT while pushing to"),
        "{said}"
    );
    bench.assert_not_tagged("myimg", "dev");
    assert_eq!(entries(&tmp), Vec::<String>::new(), "temporary files left");
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn the_rounds_of_a_watch_share_one_cluster_client() {
    let bench = RolloutBench::new(Node::Mapped, web_on("kind-registry:5000/myimg:old"));
    let archive = bench.archive(&Image::sample(403));
    let mut watching = Watching::start(watch_command(&bench, &[archive.to_str().unwrap()]));
    let first = watching.next_ref();
    watching.until_said("successfully rolled out");
    // The kubeconfig is gone: a round that connected again could not read the cluster.
    std::fs::remove_file(&bench.kubeconfig).unwrap();
    let next = bench.dir.path().join("img.next.tar");
    Image::sample(404).write(Format::DockerLegacy, &next, &["myimg:dev"]);
    std::fs::rename(&next, &archive).unwrap();
    let second = watching.next_ref();
    assert_ne!(second, first);
    watching.until_said("successfully rolled out");
    assert_eq!(bench.controllers.images("deployment", "web")["web"], second);
    let (code, rest) = watching.interrupt();
    assert_eq!((code, rest), (130, Vec::<String>::new()));
}

#[test]
fn each_round_of_a_watch_inspects_its_engine_once_and_reads_the_cluster_once() {
    let podman = Podman::new();
    let layers = podman.dir().join("layers");
    podman.build(
        "localhost/myimg:dev",
        &[&layer_dir(&layers, "a", 441, &[4096])],
    );
    let bench = RolloutBench::new(Node::Mapped, web_on("kind-registry:5000/myimg:old"));
    let mut command = watch_command(&bench, &["myimg:dev"]);
    command
        .envs(podman.envs())
        .env("KUBECTL_REGISTRY_ENGINE", "podman");
    let mut watching = Watching::start(command);
    watching.next_ref();
    watching.until_said("successfully rolled out");
    podman.build(
        "localhost/myimg:dev",
        &[&layer_dir(&layers, "b", 442, &[4096])],
    );
    watching.next_ref();
    watching.until_said("successfully rolled out");
    assert_eq!(watching.interrupt().0, 130);
    // -v says each inspect ("podman's store has myimg:dev (image ID): podman not asked"); a
    // round begins by reading that image from the store. The inspect that noticed the new ID
    // is the one the round pushes: no second inspect of it between the two.
    let said = watching.drain();
    let inspected = |line: &String| line.contains("has myimg:dev (image");
    let rounds: Vec<usize> = (0..said.len())
        .filter(|&at| said[at].starts_with("reading myimg:dev from"))
        .collect();
    assert_eq!(rounds.len(), 2, "{said:#?}");
    let mut since = 0;
    for at in rounds {
        let before = &said[since..at];
        let noticed = before
            .iter()
            .rfind(|line| inspected(line))
            .expect("an inspect");
        let times = before.iter().filter(|line| *line == noticed).count();
        assert_eq!(
            times, 1,
            "the round's image inspected {times} times: {said:#?}"
        );
        since = at;
    }
    let discoveries = bench
        ._api
        .requests()
        .iter()
        .filter(|request| {
            request.as_str()
                == "GET /api/v1/namespaces/kube-public/configmaps/local-registry-hosting"
        })
        .count();
    assert_eq!(discoveries, 2, "one discovery per round");
}
