//! `kubectl registry push` into kind and k3d clusters without a registry, node by node: each
//! node is a real containerd behind the stand-in `kind`/`k3d` and `docker exec` CLIs, asked what
//! it holds and sent only what it lacks. What each node was sent is read from the archives the
//! stand-in `docker` kept; what it holds, from its containerd.

use snapbox::{IntoData, str};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::support::apiserver::{ApiServer, StandInNode};
use crate::support::containerd::Containerd;
use crate::support::fixtures::{Format, Image};
use crate::support::run::{Outcome, Run};
use crate::support::standins::StandIns;
use tempfile::TempDir;

const NAME: &str = "myimg:dev";
const LOADED: &str = "docker.io/library/myimg:dev";

/// A kind (or k3d) cluster named `dev` whose nodes each run their own containerd.
struct Cluster {
    nodes: Vec<(String, Containerd)>,
    standins: StandIns,
    kubeconfig: PathBuf,
    _server: ApiServer,
    dir: TempDir,
}

impl Cluster {
    fn kind(nodes: &[&str]) -> Self {
        let api_nodes = nodes
            .iter()
            .map(|node| StandInNode::new(node).provider_id(&format!("kind://docker/dev/{node}")))
            .collect();
        Self::start("kind-dev", nodes, api_nodes)
    }

    fn k3d(nodes: &[&str]) -> Self {
        let api_nodes = nodes
            .iter()
            .map(|node| {
                StandInNode::new(node)
                    .provider_id(&format!("k3s://{node}"))
                    .label("node.kubernetes.io/instance-type", "k3s")
            })
            .collect();
        Self::start("k3d-dev", nodes, api_nodes)
    }

    fn start(context: &str, nodes: &[&str], api_nodes: Vec<StandInNode>) -> Self {
        let nodes: Vec<(String, Containerd)> = nodes
            .iter()
            .map(|node| (node.to_string(), Containerd::start()))
            .collect();
        let standins = StandIns::new(&nodes[0].1);
        for (name, runtime) in &nodes {
            standins.add_node(name, runtime);
        }
        let server = api_nodes
            .into_iter()
            .fold(ApiServer::builder(), |builder, node| builder.node(node))
            .start();
        let dir = TempDir::new().unwrap();
        let kubeconfig = server.write_kubeconfig(dir.path(), context, context);
        Self {
            nodes,
            standins,
            kubeconfig,
            _server: server,
            dir,
        }
    }

    /// A new node joins: its containerd is empty.
    fn join(&mut self, node: &str) {
        let runtime = Containerd::start();
        self.standins.add_node(node, &runtime);
        self.nodes.push((node.to_string(), runtime));
    }

    fn archive(&self, image: &Image, file: &str) -> PathBuf {
        let path = self.dir.path().join(file);
        image.write(Format::DockerLegacy, &path, &[NAME]);
        path
    }

    /// `kubectl-registry push ARGS`, the stand-ins first on the child's PATH (the real docker
    /// CLI of this machine, with no daemon, comes after them).
    fn push(&self, args: &[&str]) -> Outcome {
        self.push_with(args, None, &[])
    }

    /// `push`, with `bin` first on PATH and `envs` set.
    fn push_with(&self, args: &[&str], bin: Option<&Path>, envs: &[(&str, OsString)]) -> Outcome {
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut run = Run::plugin(&home).standins(&self.standins.bin_dir());
        if let Some(bin) = bin {
            run = run.standins(bin);
        }
        run.envs(envs.iter().map(|(k, v)| (k, v)))
            .kubeconfig_flag(&self.kubeconfig)
            .arg("push")
            .args(args)
            .output()
    }

    /// Pushes `image` quietly; asserts success and returns the printed ref.
    fn push_ok(&self, image: &Image, file: &str) -> String {
        let input = self.archive(image, file);
        let run = self.push(&[input.to_str().unwrap()]);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (0, expected_ref(image).as_str(), ""),
            "{run:?}"
        );
        run.stdout
    }

    /// Pushes `image` with `-v` and `envs`; asserts it succeeded with the expected ref.
    fn push_verbose(&self, image: &Image, envs: &[(&str, OsString)]) -> Outcome {
        let input = self.archive(image, "first.tar");
        let run = self.push_with(&[input.to_str().unwrap(), "-v"], None, envs);
        assert_eq!(
            (run.code, run.stdout.clone()),
            (0, expected_ref(image)),
            "{run:?}"
        );
        run
    }

    fn runtime(&self, node: &str) -> &Containerd {
        &self.nodes.iter().find(|(name, _)| name == node).unwrap().1
    }

    /// Asserts `node` holds `image` under both names, complete and unpacked into the
    /// snapshotter its CRI uses (`native`).
    fn assert_ready(&self, node: &str, image: &Image) {
        let runtime = self.runtime(node);
        let content_name = format!("docker.io/library/myimg:{}", content_tag(image));
        let out = runtime.ctr(&[
            "images",
            "check",
            "--snapshotter",
            "native",
            &format!("name=={LOADED}"),
            &format!("name=={content_name}"),
        ]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let rows: Vec<Vec<&str>> = text
            .lines()
            .skip(1)
            .map(|line| line.split_whitespace().collect())
            .collect();
        assert_eq!(rows.len(), 2, "{node}: {text}");
        let manifest = rows[0][2];
        for row in &rows {
            assert_eq!(row[2], manifest, "{node}: both names, one manifest: {text}");
            assert_eq!(row[3], "complete", "{node}: {text}");
            assert_eq!(*row.last().unwrap(), "true", "{node} not unpacked: {text}");
        }
        let config = runtime.ctr(&["content", "get", manifest]);
        let manifest: serde_json::Value = serde_json::from_slice(&config.stdout).unwrap();
        assert_eq!(manifest["config"]["digest"], image.config_digest().as_str());
    }

    /// Asserts every node holds `LOADED`, complete, its manifest naming the config `config_digest`.
    fn assert_loaded(&self, config_digest: &str) {
        for (node, runtime) in &self.nodes {
            let out = runtime.ctr(&["images", "check", &format!("name=={LOADED}")]);
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            assert!(text.contains("complete"), "{node}: {text}");
            let manifest = text
                .lines()
                .nth(1)
                .unwrap()
                .split_whitespace()
                .nth(2)
                .unwrap();
            let manifest = runtime.ctr(&["content", "get", manifest]);
            let manifest: serde_json::Value = serde_json::from_slice(&manifest.stdout).unwrap();
            assert_eq!(manifest["config"]["digest"], config_digest, "{node}");
        }
    }

    /// What each archive streamed into `node` held: its blob digests (every other member
    /// listed by name).
    fn received(&self, node: &str) -> Vec<BTreeSet<String>> {
        self.standins
            .received(node)
            .iter()
            .map(|path| members(path))
            .collect()
    }

    /// The recorded CLI calls, the archive path of a `kind load` replaced by `FILE`.
    fn calls(&self) -> Vec<String> {
        self.standins
            .calls()
            .into_iter()
            .map(|call| {
                let mut call = call;
                if call.get(1).map(String::as_str) == Some("load") {
                    call[3] = "FILE".to_string();
                }
                call.join(" ")
            })
            .collect()
    }
}

/// The members of a tar: `blobs/sha256/<hex>` as `sha256:<hex>`, the others by name.
fn members(path: &Path) -> BTreeSet<String> {
    let mut archive = tar::Archive::new(std::fs::File::open(path).unwrap());
    archive
        .entries()
        .unwrap()
        .map(|entry| {
            let name = entry.unwrap().path().unwrap().to_string_lossy().to_string();
            match name.strip_prefix("blobs/sha256/") {
                Some(hex) => format!("sha256:{hex}"),
                None => name,
            }
        })
        .collect()
}

fn content_tag(image: &Image) -> String {
    let digest = image.config_digest();
    format!("dev-{}", &digest["sha256:".len()..][..12])
}

fn expected_ref(image: &Image) -> String {
    format!("myimg:{}\n", content_tag(image))
}

/// The members of an archive holding `layers` of `image`, its config and a manifest (any).
fn layout_with(image: &Image, layers: &[usize], received: &BTreeSet<String>) -> BTreeSet<String> {
    let diff_ids = image.diff_ids();
    let mut expected: BTreeSet<String> = ["oci-layout", "index.json"]
        .into_iter()
        .map(str::to_string)
        .chain([image.config_digest()])
        .chain(layers.iter().map(|&i| diff_ids[i].clone()))
        .collect();
    // The manifest is the one blob not otherwise named.
    let manifest = received
        .iter()
        .find(|member| member.starts_with("sha256:") && !expected.contains(*member))
        .cloned();
    expected.extend(manifest);
    expected
}

fn assert_layout(image: &Image, layers: &[usize], received: &BTreeSet<String>) {
    assert_eq!(
        *received,
        layout_with(image, layers, received),
        "expected the layers {layers:?} and no manifest.json"
    );
    assert_eq!(received.len(), 4 + layers.len(), "{received:?}");
}

/// The sample image with its top layer one KiB longer: same first two layers.
fn changed(seed: u64) -> Image {
    let image = Image::with_layers(seed, "linux/amd64", &[300 << 10, 200 << 10, 121 << 10]);
    let before = Image::sample(seed);
    assert_eq!(image.diff_ids()[..2], before.diff_ids()[..2]);
    assert_ne!(image.diff_ids()[2], before.diff_ids()[2]);
    image
}

const NODES: [&str; 2] = ["dev-control-plane", "dev-worker"];

#[test]
fn a_first_load_sends_every_node_the_whole_image() {
    let cluster = Cluster::kind(&NODES);
    let image = Image::sample(21);
    cluster.push_ok(&image, "first.tar");
    for node in NODES {
        let received = cluster.received(node);
        assert_eq!(received.len(), 1, "{node}: {received:?}");
        assert_layout(&image, &[0, 1, 2], &received[0]);
        cluster.assert_ready(node, &image);
    }
    let mut calls = cluster.calls();
    calls.sort();
    let expected = [
        "docker exec -i dev-control-plane ctr -n k8s.io images import --all-platforms --digests --snapshotter=native -",
        "docker exec -i dev-worker ctr -n k8s.io images import --all-platforms --digests --snapshotter=native -",
    ];
    for call in expected {
        assert!(calls.iter().any(|c| c == call), "no {call:?} in {calls:#?}");
    }
    for node in NODES {
        let dump = format!("docker exec {node} containerd config dump");
        assert!(calls.contains(&dump), "no {dump:?} in {calls:#?}");
    }
    assert!(
        calls.contains(&"kind get nodes --name dev".to_string()),
        "{calls:#?}"
    );
    assert!(
        !calls.iter().any(|call| call.starts_with("kind load")),
        "kind load ran: {calls:#?}"
    );
}

#[test]
fn after_a_one_layer_change_each_node_gets_only_that_layer() {
    let cluster = Cluster::kind(&NODES);
    let before = Image::sample(22);
    let first = cluster.push_ok(&before, "first.tar");
    let after = changed(22);
    let second = cluster.push_ok(&after, "second.tar");
    assert_ne!(second, first, "the content tag follows the content");
    for node in NODES {
        let received = cluster.received(node);
        assert_eq!(received.len(), 2, "{node}: {received:?}");
        assert_layout(&after, &[2], &received[1]);
        cluster.assert_ready(node, &after);
    }
}

#[test]
fn an_unchanged_reload_sends_nothing_and_prints_the_same_ref() {
    let cluster = Cluster::kind(&NODES);
    let image = Image::sample(23);
    let first = cluster.push_ok(&image, "first.tar");
    let input = cluster.archive(&image, "again.tar");
    let run = cluster.push(&[input.to_str().unwrap(), "-v"]);
    assert_eq!((run.code, run.stdout.clone()), (0, first), "{run:?}");
    assert!(
        run.stderr.lines().any(|line| line
            == "loaded the image into kind cluster \"dev\": dev-control-plane had it already, dev-worker had it already"),
        "{}",
        run.stderr
    );
    for node in NODES {
        assert_eq!(cluster.received(node).len(), 1, "{node} was sent more");
        cluster.assert_ready(node, &image);
    }
}

#[test]
fn a_new_empty_node_gets_everything_and_the_others_nothing() {
    let mut cluster = Cluster::kind(&NODES);
    let image = Image::sample(24);
    cluster.push_ok(&image, "first.tar");
    cluster.join("dev-worker2");
    cluster.push_ok(&image, "again.tar");
    for node in NODES {
        assert_eq!(cluster.received(node).len(), 1, "{node} was sent more");
    }
    let joined = cluster.received("dev-worker2");
    assert_eq!(joined.len(), 1, "{joined:?}");
    assert_layout(&image, &[0, 1, 2], &joined[0]);
    cluster.assert_ready("dev-worker2", &image);
}

#[test]
fn a_node_that_cannot_be_asked_gets_the_whole_archive_from_kind() {
    let cluster = Cluster::kind(&NODES);
    cluster.standins.unqueryable("dev-worker");
    let image = Image::sample(25);
    let run = cluster.push_verbose(&image, &[]);
    assert!(
        run.stderr.lines().any(|line| line
            == "dev-worker: cannot be asked what it holds (`docker exec dev-worker ctr -n k8s.io content ls -q` failed (exit status: 1): ctr: failed to dial \"/run/containerd/containerd.sock\": context deadline exceeded); it gets the whole image"),
        "{}",
        run.stderr
    );
    let calls = cluster.calls();
    assert!(
        calls.contains(&"kind load image-archive FILE --name dev --nodes dev-worker".to_string()),
        "{calls:#?}"
    );
    assert_eq!(cluster.received("dev-control-plane").len(), 1);
    assert!(cluster.received("dev-worker").is_empty());
    for node in NODES {
        cluster.assert_ready(node, &image);
    }
}

#[test]
fn a_node_still_incomplete_after_a_partial_load_gets_the_whole_image() {
    let cluster = Cluster::kind(&NODES[..1]);
    let image = Image::sample(26);
    let node = NODES[0];
    cluster.standins.stale_listing(node, &image.diff_ids()[0]);
    let run = cluster.push_verbose(&image, &[]);
    assert!(
        run.stderr.lines().any(|line| line.starts_with(&format!(
            "{node}: still incomplete after loading only the 2 layer(s) it lacked (`docker exec -i {node} ctr -n k8s.io images import"
        )) && line.ends_with("; loading the whole image into it")),
        "{}",
        run.stderr
    );
    let received = cluster.received(node);
    assert_eq!(received.len(), 2, "{received:?}");
    assert_layout(&image, &[1, 2], &received[0]);
    assert_layout(&image, &[0, 1, 2], &received[1]);
    cluster.assert_ready(node, &image);
}

#[test]
fn k3d_nodes_get_only_what_they_lack_too() {
    let nodes = ["k3d-dev-server-0", "k3d-dev-agent-0"];
    let cluster = Cluster::k3d(&nodes);
    cluster.push_ok(&Image::sample(27), "first.tar");
    let after = changed(27);
    cluster.push_ok(&after, "second.tar");
    for node in nodes {
        let received = cluster.received(node);
        assert_eq!(received.len(), 2, "{node}: {received:?}");
        assert_layout(&after, &[2], &received[1]);
    }
    let calls = cluster.calls();
    assert!(
        calls.contains(
            &"docker exec -i k3d-dev-agent-0 ctr -n k8s.io images import --all-platforms --digests -"
                .to_string()
        ),
        "k3d imports with ctr's default snapshotter, as k3d does: {calls:#?}"
    );
    assert!(
        !calls.iter().any(|call| call.starts_with("k3d image")),
        "{calls:#?}"
    );
}

#[test]
fn a_node_the_image_cannot_get_into_fails_the_push_naming_it_and_why() {
    let cluster = Cluster::kind(&NODES);
    let full_disk = "ctr: failed to extract layer sha256:0123: write /var/lib/containerd/x: no space left on device";
    cluster.standins.failing_import("dev-worker", full_disk);
    let input = cluster.archive(&Image::sample(28), "first.tar");
    let run = cluster.push(&[input.to_str().unwrap()]);
    assert_eq!(run.code, 6, "{run:?}");
    run.assert_stdout(str![]);
    run.assert_stderr(str![[r#"
error: loading the image into node dev-worker of kind cluster "dev"
caused by: `docker exec -i dev-worker ctr -n k8s.io images import --all-platforms --digests --snapshotter=native -` failed (exit status: 1): ctr: failed to extract layer sha256:0123: write /var/lib/containerd/x: no space left on device
hint: or give the cluster a registry to push to instead: https://kind.sigs.k8s.io/docs/user/local-registry/

"#]]);
}

/// A node whose `ctr` accepts the question and never answers: with
/// `KUBECTL_REGISTRY_NODE_TIMEOUT=1` the survey stops it after 1 s, names it, and the node gets
/// the whole image from kind instead; the push does not wait on it.
#[test]
fn a_node_that_never_answers_is_stopped_within_the_bound_and_gets_the_whole_archive() {
    let cluster = Cluster::kind(&NODES);
    cluster.standins.hanging("dev-worker");
    let image = Image::sample(29);
    let started = std::time::Instant::now();
    let run = cluster.push_verbose(&image, &[("KUBECTL_REGISTRY_NODE_TIMEOUT", "1".into())]);
    let took = started.elapsed();
    assert!(
        run.stderr.lines().any(|line| line
            == "dev-worker: cannot be asked what it holds (`docker exec dev-worker ctr -n k8s.io content ls -q` did not finish within 1s; it was stopped); it gets the whole image"),
        "{}",
        run.stderr
    );
    // Bounded: 1 s for the survey, then the loads (a generous ceiling, not a race).
    assert!(took < std::time::Duration::from_secs(30), "took {took:?}");
    let calls = cluster.calls();
    assert!(
        calls.contains(&"kind load image-archive FILE --name dev --nodes dev-worker".to_string()),
        "{calls:#?}"
    );
    for node in NODES {
        cluster.assert_ready(node, &image);
    }
}

/// An import that takes nothing of the archive (its node stuck) is stopped when no byte went
/// in for the bound, and the push fails naming the node and the command.
#[test]
fn an_import_that_takes_nothing_is_stopped_within_the_bound_naming_it() {
    let cluster = Cluster::kind(&NODES);
    cluster.standins.import_hangs("dev-worker");
    let input = cluster.archive(&Image::sample(30), "first.tar");
    let started = std::time::Instant::now();
    let run = cluster.push_with(
        &[input.to_str().unwrap()],
        None,
        &[("KUBECTL_REGISTRY_NODE_TIMEOUT", "1".into())],
    );
    let took = started.elapsed();
    assert_eq!(run.code, 6, "{run:?}");
    run.assert_stdout(str![]);
    let (head, tail) = (
        "error: loading the image into node dev-worker of kind cluster \"dev\"\n\
         caused by: `docker exec -i dev-worker ctr -n k8s.io images import --all-platforms --digests --snapshotter=native -` took no byte of the archive for 1s (after ",
        " bytes); it was stopped\n\
         hint: or give the cluster a registry to push to instead: https://kind.sigs.k8s.io/docs/user/local-registry/\n",
    );
    assert!(
        run.stderr.starts_with(head) && run.stderr.ends_with(tail),
        "{}",
        run.stderr
    );
    assert!(took < std::time::Duration::from_secs(30), "took {took:?}");
}

/// podman's image by name: each node's layout is written straight from podman's store (overlay,
/// as workstations have it), so a rebuild reads only the layer the nodes lack, and podman is
/// never asked to export.
#[test]
fn an_image_in_podmans_store_is_loaded_from_the_store_reading_only_what_the_nodes_lack() {
    use crate::support::podman::{Podman, layer_dir};
    let cluster = Cluster::kind(&NODES);
    let podman = Podman::overlay();
    let dirs = podman.dir();
    let base = layer_dir(dirs, "base", 51, &[1_200_000]);
    let app = layer_dir(dirs, "app", 52, &[300_000]);
    podman.build("localhost/myimg:dev", &[&base, &app]);
    let bin = cluster.dir.path().join("podman-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let calls = cluster.dir.path().join("podman-calls");
    crate::support::standins::spy(&bin, "podman", "/usr/bin/podman", &calls);
    let mut envs: Vec<(&str, OsString)> = podman.envs();
    envs.push(("KUBECTL_REGISTRY_ENGINE", "podman".into()));
    let loaded = |run: &Outcome| {
        assert_eq!(run.code, 0, "{run:?}");
        assert!(
            !calls.exists(),
            "podman was run: {:?}",
            std::fs::read_to_string(&calls)
        );
        let id = podman.tool(
            "podman",
            &["image", "inspect", "--format", "{{.Id}}", "myimg:dev"],
        );
        cluster.assert_loaded(&format!("sha256:{id}"));
    };

    let first = cluster.push_with(&["myimg:dev", "-v"], Some(&bin), &envs);
    loaded(&first);
    first.assert_stderr(str![[r#"
podman's store has myimg:dev (image sha256:[DIGEST]): podman not asked
ConfigMap kube-public/local-registry-hosting not found
no readable Service kube-system/registry of minikube's registry addon
no readable images.config.openshift.io/cluster (not OpenShift)
no readable Service container-registry/registry (microk8s registry addon)
no registry advertised; the cluster is kind cluster "dev"
reading myimg:dev in the overlay store at [ROOT]/storage (CONTAINERS_STORAGE_CONF: [ROOT]/storage.conf) for the nodes: nothing exported
loaded the image into kind cluster "dev": dev-control-plane got 2 of 2 layers (1.5 MB), dev-worker got 2 of 2 layers (1.5 MB)
loaded into the nodes in [ELAPSED]s
...
"#]].unordered());
    let diff_ids = podman.diff_ids("localhost/myimg:dev");
    for node in NODES {
        let received = cluster.received(node);
        assert!(
            diff_ids.iter().all(|d| received[0].contains(d)),
            "{node}: {received:?}"
        );
    }

    // The nodes hold the base now: its files are not read again (gone, they would fail the load).
    let base_layer = podman.top_layer("localhost/myimg:dev-base0");
    std::fs::remove_dir_all(podman.layer_files(&base_layer)).unwrap();
    std::fs::create_dir(podman.layer_files(&base_layer)).unwrap();
    let app2 = layer_dir(dirs, "app2", 53, &[400_000]);
    podman.build_on("localhost/myimg:dev-base0", "localhost/myimg:dev", &[&app2]);
    let second = cluster.push_with(&["myimg:dev"], Some(&bin), &envs);
    loaded(&second);
    let new_diff_ids = podman.diff_ids("localhost/myimg:dev");
    for node in NODES {
        let received = cluster.received(node);
        let layers: Vec<&String> = new_diff_ids
            .iter()
            .filter(|d| received[1].contains(*d))
            .collect();
        assert_eq!(
            layers,
            [&new_diff_ids[1]],
            "{node}: only the new layer: {received:?}"
        );
    }
}

/// A nerdctl image (in containerd's content store, as `nerdctl build` or `pull` leaves it: gzip
/// layers) loaded into kind nodes: each node is sent the blobs it lacks straight from containerd,
/// as stored, and nerdctl is never run.
#[test]
fn an_image_in_nerdctls_containerd_is_loaded_from_its_content_store_sending_only_what_nodes_lack() {
    use crate::support::containerd::K8S_NAMESPACE;
    use crate::support::fixtures::LayerCompression;
    let cluster = Cluster::kind(&NODES);
    let store = Containerd::start();
    let import = |image: &Image, file: &str| {
        let path = cluster.dir.path().join(file);
        image.write(
            Format::ContainerdExport(LayerCompression::Gzip),
            &path,
            &[NAME],
        );
        // Not unpacked: re-importing a name lets containerd's GC race the unpack.
        let out = store.ctr(&["images", "import", "--no-unpack", path.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let bin = cluster.dir.path().join("nerdctl-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let calls = cluster.dir.path().join("nerdctl-calls");
    crate::support::standins::spy(&bin, "nerdctl", "/bin/false", &calls);
    let envs: Vec<(&str, OsString)> = vec![
        ("KUBECTL_REGISTRY_ENGINE", "nerdctl".into()),
        ("CONTAINERD_ADDRESS", store.socket().into()),
        ("CONTAINERD_NAMESPACE", K8S_NAMESPACE.into()),
    ];
    let blobs = |image: &Image| -> Vec<String> {
        let manifest: serde_json::Value =
            serde_json::from_slice(&image.manifest(LayerCompression::Gzip)).unwrap();
        manifest["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|layer| layer["digest"].as_str().unwrap().to_string())
            .collect()
    };
    let loaded = |run: &Outcome, image: &Image| {
        assert_eq!(run.code, 0, "{run:?}");
        assert!(
            !calls.exists(),
            "nerdctl was run: {:?}",
            std::fs::read_to_string(&calls)
        );
        cluster.assert_loaded(&image.config_digest());
    };

    let base = Image::with_layers(71, "linux/amd64", &[900_000, 200_000]);
    import(&base, "v1.tar");
    let first = cluster.push_with(&[NAME, "-v"], Some(&bin), &envs);
    loaded(&first, &base);
    first.assert_stderr(str![[r#"
containerd at unix://[ROOT]/c.sock (namespace k8s.io) has myimg:dev (image sha256:[DIGEST]): nerdctl not asked
ConfigMap kube-public/local-registry-hosting not found
no readable Service kube-system/registry of minikube's registry addon
no readable images.config.openshift.io/cluster (not OpenShift)
no readable Service container-registry/registry (microk8s registry addon)
no registry advertised; the cluster is kind cluster "dev"
reading myimg:dev in containerd at unix://[ROOT]/c.sock (namespace k8s.io) for the nodes: nothing exported
loaded the image into kind cluster "dev": dev-control-plane got 2 of 2 layers (0.6 MB), dev-worker got 2 of 2 layers (0.6 MB)
loaded into the nodes in [ELAPSED]s
...
"#]].unordered());
    for node in NODES {
        let received = &cluster.received(node)[0];
        assert!(
            blobs(&base).iter().all(|b| received.contains(b)),
            "{node}: {received:?}"
        );
    }

    let rebuilt = Image::with_layers(71, "linux/amd64", &[900_000, 200_000, 60_000]);
    assert_eq!(rebuilt.diff_ids()[..2], base.diff_ids()[..]);
    import(&rebuilt, "v2.tar");
    let second = cluster.push_with(&[NAME], Some(&bin), &envs);
    loaded(&second, &rebuilt);
    let new_blobs = blobs(&rebuilt);
    for node in NODES {
        let received = &cluster.received(node)[1];
        let layers: Vec<&String> = new_blobs.iter().filter(|b| received.contains(*b)).collect();
        assert_eq!(
            layers,
            [&new_blobs[2]],
            "{node}: only the new layer: {received:?}"
        );
    }
}
