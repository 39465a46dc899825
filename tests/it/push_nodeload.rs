//! `kubectl registry push` into clusters that advertise no registry, end to end: the built binary
//! against the stand-in API server, the stand-in product CLIs on the child's PATH, and a real
//! containerd as the nodes' runtime.

use snapbox::str;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::support::apiserver::{ApiServer, ApiServerBuilder, StandInNode};
use crate::support::containerd::Containerd;
use crate::support::fixtures::{self, Format, Image, LayerCompression};
use crate::support::run::{Outcome, Run, redact};
use crate::support::standins::StandIns;
use tempfile::TempDir;

/// The name every fixture archive records, and how containerd names it.
const NAME: &str = "myimg:dev";
const LOADED: &str = "docker.io/library/myimg:dev";

/// One cluster without a registry: its API server, its nodes' runtime, the product CLIs.
struct Bench {
    containerd: Containerd,
    standins: StandIns,
    server: ApiServer,
    kubeconfig: PathBuf,
    dir: TempDir,
}

impl Bench {
    /// A cluster whose kubeconfig context is `context` (cluster entry `cluster`), with `nodes`
    /// and no `kube-public/local-registry-hosting` (404).
    fn new(context: &str, cluster: &str, nodes: Vec<StandInNode>) -> Self {
        let server = nodes
            .into_iter()
            .fold(ApiServer::builder(), |builder, node| builder.node(node));
        Self::serving(context, cluster, server)
    }

    /// A cluster whose API server serves what `server` says.
    fn serving(context: &str, cluster: &str, server: ApiServerBuilder) -> Self {
        let containerd = Containerd::start();
        let standins = StandIns::new(&containerd);
        // The one node of a kind or k3d cluster is a container `docker exec` reaches.
        if let Some(node) = node_container(context) {
            standins.add_node(node, &containerd);
        }
        let server = server.start();
        let dir = TempDir::new().unwrap();
        let kubeconfig = server.write_kubeconfig(dir.path(), context, cluster);
        Self {
            containerd,
            standins,
            server,
            kubeconfig,
            dir,
        }
    }

    fn kind() -> Self {
        Self::new("kind-dev", "kind-dev", vec![kind_node()])
    }

    /// Writes `image` in `format` as `file` in the bench's dir, named `myimg:dev`.
    fn archive(&self, image: &Image, format: Format, file: &str) -> PathBuf {
        let path = self.dir.path().join(file);
        image.write(format, &path, &[NAME]);
        path
    }

    /// `kubectl-registry push ARGS`, the stand-ins first on the child's PATH.
    fn push(&self, args: &[&str]) -> Outcome {
        self.push_with_path(args, &self.path_with_standins())
    }

    /// `kubectl-registry push ARGS` with `stdin` piped in.
    fn push_stdin(&self, stdin: &Path, args: &[&str]) -> Outcome {
        self.run(args, &self.path_with_standins(), Some(stdin), &[])
    }

    fn push_with_path(&self, args: &[&str], path: &OsString) -> Outcome {
        self.run(args, path, None, &[])
    }

    fn run(
        &self,
        args: &[&str],
        path: &OsString,
        stdin: Option<&Path>,
        envs: &[(&str, &str)],
    ) -> Outcome {
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut run = Run::plugin(&home)
            .path(path)
            .env("TMPDIR", self.scratch_parent())
            .envs(envs.iter().copied());
        if let Some(stdin) = stdin {
            run = run.stdin_file(stdin);
        }
        run.kubeconfig_flag(&self.kubeconfig)
            .arg("push")
            .args(args)
            .output()
    }

    /// The child's PATH: the stand-ins' bin dir, then this process's PATH.
    fn path_with_standins(&self) -> OsString {
        let inherited = std::env::var_os("PATH").unwrap_or_default();
        let dirs =
            std::iter::once(self.standins.bin_dir()).chain(std::env::split_paths(&inherited));
        std::env::join_paths(dirs).unwrap()
    }

    /// Where the child makes its scratch dir: private to the test, to see what it leaves.
    fn scratch_parent(&self) -> PathBuf {
        let tmp = self.dir.path().join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        tmp
    }

    /// Every name in the runtime's k8s.io namespace, with the manifest digest it points at.
    fn loaded(&self) -> BTreeMap<String, String> {
        let out = self.containerd.ctr(&["images", "ls"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .skip(1)
            .map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                (fields[0].to_string(), fields[2].to_string())
            })
            .collect()
    }

    /// The config digest of the manifest `digest` in the runtime's content store.
    fn config_of(&self, manifest: &str) -> String {
        let out = self.containerd.ctr(&["content", "get", manifest]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let manifest: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        manifest["config"]["digest"].as_str().unwrap().to_string()
    }

    /// Asserts the runtime holds `myimg:dev` and `myimg:<content_tag>` as one manifest of
    /// `image`; returns that manifest's digest.
    fn assert_loaded(&self, image: &Image, content_tag: &str) -> String {
        let loaded = self.loaded();
        let tagged = loaded
            .get(LOADED)
            .unwrap_or_else(|| panic!("{LOADED} not in the runtime: {loaded:?}"));
        let content_name = format!("docker.io/library/myimg:{content_tag}");
        assert_eq!(
            loaded.get(&content_name),
            Some(tagged),
            "{content_name} is not the same manifest as {LOADED}: {loaded:?}"
        );
        assert_eq!(self.config_of(tagged), image.config_digest());
        tagged.clone()
    }

    fn assert_nothing_loaded(&self) {
        let loaded = self.loaded();
        assert!(loaded.is_empty(), "loaded anyway: {loaded:?}");
    }

    /// The one recorded call, with the archive argument (at `archive_at`) replaced by `FILE`;
    /// returns the call and the archive path it got.
    fn single_call(&self, archive_at: usize) -> (Vec<String>, PathBuf) {
        let calls = self.standins.calls();
        let [call] = calls.as_slice() else {
            panic!("expected one call, got {calls:?}");
        };
        let mut call = call.clone();
        let archive = PathBuf::from(std::mem::replace(&mut call[archive_at], "FILE".into()));
        (call, archive)
    }

    /// Writes `Image::sample(seed)` as the docker-save archive `myimg.tar`, named `myimg:dev`.
    fn legacy(&self, seed: u64) -> (Image, PathBuf) {
        let image = Image::sample(seed);
        let input = self.archive(&image, Format::DockerLegacy, "myimg.tar");
        (image, input)
    }

    /// `kubectl-registry push INPUT EXTRA...`, the stand-ins first on the child's PATH.
    fn push_input(&self, input: &Path, extra: &[&str]) -> Outcome {
        self.push(&[&[input.to_str().unwrap()][..], extra].concat())
    }

    /// Pushes a sample docker-save archive with `extra` arguments; asserts it failed with `code`
    /// and printed nothing on stdout.
    #[track_caller]
    fn refused(&self, extra: &[&str], code: i32) -> Outcome {
        let (_, input) = self.legacy(1);
        let run = self.push_input(&input, extra);
        assert_eq!(run.code, code, "{run:?}");
        run.assert_stdout(str![]);
        run
    }

    /// Asserts the runtime holds `image` under `myimg:dev` and its content tag (see
    /// [`Self::assert_loaded`]); returns the manifest's digest.
    fn assert_holds(&self, image: &Image) -> String {
        self.assert_loaded(image, &content_tag(image))
    }

    /// Asserts the child removed its scratch dir (the written archive with it).
    fn assert_no_scratch_left(&self) {
        let left: Vec<_> = std::fs::read_dir(self.scratch_parent())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}

/// The node container of the kind and k3d clusters these tests make.
fn node_container(context: &str) -> Option<&'static str> {
    match context {
        "kind-dev" => Some(KIND_NODE),
        "k3d-dev" => Some(K3D_NODE),
        _ => None,
    }
}

const KIND_NODE: &str = "dev-control-plane";
const K3D_NODE: &str = "k3d-dev-server-0";

impl Bench {
    /// Asserts the image went into `node` node by node: the product listed its nodes first,
    /// one archive was streamed into the node's `ctr images import` (`snapshotter` named when
    /// the product names it), and the product's own load never ran.
    fn assert_streamed_into(&self, node: &str, listing: &str, snapshotter: &str) {
        let calls: Vec<String> = self
            .standins
            .calls()
            .iter()
            .map(|call| call.join(" "))
            .collect();
        assert_eq!(
            calls.first().map(String::as_str),
            Some(listing),
            "{calls:#?}"
        );
        let import = format!(
            "docker exec -i {node} ctr -n k8s.io images import --all-platforms --digests {snapshotter}-"
        );
        let imports: Vec<&String> = calls
            .iter()
            .filter(|call| call.contains(" import"))
            .collect();
        assert_eq!(imports, [&import], "{calls:#?}");
        assert_eq!(self.standins.received(node).len(), 1);
    }

    fn assert_streamed_into_kind(&self) {
        self.assert_streamed_into(
            KIND_NODE,
            "kind get nodes --name dev",
            "--snapshotter=native ",
        );
    }

    /// The last recorded call, with the archive argument (at `archive_at`) replaced by `FILE`.
    fn last_call(&self, archive_at: usize) -> (Vec<String>, PathBuf) {
        let mut call = self.standins.calls().pop().expect("no call recorded");
        let archive = PathBuf::from(std::mem::replace(&mut call[archive_at], "FILE".into()));
        (call, archive)
    }
}

/// `myimg:dev-<first 12 hex of the config digest>`: the tag the content gets.
fn content_tag(image: &Image) -> String {
    let digest = image.config_digest();
    let hex = digest.strip_prefix("sha256:").unwrap();
    format!("dev-{}", &hex[..12])
}

fn expected_ref(image: &Image) -> String {
    format!("myimg:{}\n", content_tag(image))
}

/// Asserts `run` succeeded, printing `image`'s ref (`myimg:` and its content tag) alone on
/// stdout and `stderr` on stderr.
#[track_caller]
fn assert_ref(run: &Outcome, image: &Image, stderr: &str) {
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, expected_ref(image).as_str(), stderr),
        "{run:?}"
    );
}

/// Asserts `run` succeeded, printing `image`'s ref alone on stdout (stderr is the caller's).
#[track_caller]
fn assert_ref_printed(run: &Outcome, image: &Image) {
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, expected_ref(image).as_str()),
        "{run:?}"
    );
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn kind_node() -> StandInNode {
    StandInNode::new("dev-control-plane")
        .provider_id("kind://docker/dev/dev-control-plane")
        .label("node-role.kubernetes.io/control-plane", "")
}

fn k3s_node(name: &str) -> StandInNode {
    StandInNode::new(name)
        .provider_id(&format!("k3s://{name}"))
        .label("node.kubernetes.io/instance-type", "k3s")
        .label("node-role.kubernetes.io/control-plane", "true")
        .label("node-role.kubernetes.io/master", "true")
}

/// Pushes a legacy docker-save archive into a cluster and checks the ref, the CLI's argv (the
/// archive at `archive_at`), and both names in the runtime.
fn loads_into(bench: &Bench, archive_at: usize, expected: &[&str]) {
    let (image, input) = bench.legacy(1);
    let run = bench.push_input(&input, &[]);
    assert_ref(&run, &image, "");
    let (call, archive) = bench.single_call(archive_at);
    assert_eq!(call, argv(expected));
    assert_ne!(
        archive, input,
        "a legacy archive is rewritten, never handed over"
    );
    bench.assert_holds(&image);
    bench.assert_no_scratch_left();
}

/// Pushes a legacy docker-save archive into a kind or k3d cluster and checks the ref and both
/// names in the runtime.
fn streams_into(bench: &Bench) {
    let (image, input) = bench.legacy(1);
    let run = bench.push_input(&input, &[]);
    assert_ref(&run, &image, "");
    bench.assert_holds(&image);
    bench.assert_no_scratch_left();
}

#[test]
fn kind_loads_into_the_nodes_of_the_cluster_its_provider_id_names() {
    let bench = Bench::kind();
    streams_into(&bench);
    bench.assert_streamed_into_kind();
}

#[test]
fn k3d_imports_into_the_nodes_of_the_cluster_its_server_node_names() {
    let bench = Bench::new("k3d-dev", "k3d-dev", vec![k3s_node(K3D_NODE)]);
    streams_into(&bench);
    bench.assert_streamed_into(K3D_NODE, "k3d node list -o json", "");
}

#[test]
fn kind_listing_no_nodes_loads_the_whole_archive_with_kind_load() {
    let bench = Bench::new("kind-dev", "kind-dev", vec![kind_node()]);
    bench.standins.remove_nodes();
    streams_into(&bench);
    let calls = bench.standins.calls();
    let [listing, load] = calls.as_slice() else {
        panic!("expected two calls, got {calls:?}");
    };
    assert_eq!(*listing, argv(&["kind", "get", "nodes", "--name", "dev"]));
    let mut load = load.clone();
    load[3] = "FILE".into();
    assert_eq!(
        load,
        argv(&["kind", "load", "image-archive", "FILE", "--name", "dev"])
    );
}

#[test]
fn minikube_loads_into_the_profile_its_node_label_names() {
    let bench = minikube();
    loads_into(
        &bench,
        3,
        &["minikube", "image", "load", "FILE", "-p", "minikube"],
    );
}

fn microk8s() -> Bench {
    let node = StandInNode::new("laptop").label("microk8s.io/cluster", "true");
    Bench::new("microk8s", "microk8s-cluster", vec![node])
}

#[test]
fn microk8s_imports_into_every_node() {
    loads_into(&microk8s(), 3, &["microk8s", "images", "import", "FILE"]);
}

#[test]
fn microk8s_before_1_25_falls_back_to_its_ctr() {
    let bench = microk8s();
    bench.standins.old_microk8s();
    let (image, input) = bench.legacy(1);
    let run = bench.push_input(&input, &[]);
    assert_ref(&run, &image, "");
    let calls = bench.standins.calls();
    let [first, second] = calls.as_slice() else {
        panic!("expected two calls, got {calls:?}");
    };
    let file = first[3].as_str();
    assert_eq!(*first, argv(&["microk8s", "images", "import", file]));
    assert_eq!(*second, argv(&["microk8s", "ctr", "image", "import", file]));
    bench.assert_holds(&image);
}

#[test]
fn k3s_imports_with_its_ctr_into_the_k8s_namespace() {
    let bench = Bench::new("default", "default", vec![k3s_node("server-1")]);
    loads_into(
        &bench,
        6,
        &["k3s", "ctr", "-n", "k8s.io", "images", "import", "FILE"],
    );
}

#[test]
fn docker_desktop_loads_into_the_shared_docker_store() {
    let bench = Bench::new(
        "docker-desktop",
        "docker-desktop",
        vec![StandInNode::new("docker-desktop")],
    );
    loads_into(&bench, 3, &["docker", "load", "-i", "FILE"]);
}

#[test]
fn orbstack_loads_into_the_shared_docker_store() {
    let bench = Bench::new("orbstack", "orbstack", vec![k3s_node("orbstack")]);
    loads_into(&bench, 3, &["docker", "load", "-i", "FILE"]);
}

#[test]
fn colima_loads_into_the_shared_docker_store() {
    let bench = Bench::new("colima", "colima", vec![k3s_node("colima")]);
    loads_into(&bench, 3, &["docker", "load", "-i", "FILE"]);
}

#[test]
fn rancher_desktop_loads_into_the_shared_docker_store() {
    let bench = Bench::new(
        "rancher-desktop",
        "rancher-desktop",
        vec![k3s_node("lima-rancher-desktop")],
    );
    loads_into(&bench, 3, &["docker", "load", "-i", "FILE"]);
}

/// Pushes `input` into the kind bench; asserts success and returns the printed ref.
fn push_ok(bench: &Bench, args: &[&str]) -> String {
    let run = bench.push(args);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    run.stdout
}

#[test]
fn the_ref_changes_when_and_only_when_the_content_changes() {
    let bench = Bench::kind();
    let image = Image::sample(7);
    let legacy = bench.archive(&image, Format::DockerLegacy, "first.tar");
    let again = bench.archive(&image, Format::DockerLegacy, "again.tar");
    // The same content stored another way (gzip layers, OCI layout) is the same image.
    let gzipped = bench.archive(
        &image,
        Format::ContainerdExport(LayerCompression::Gzip),
        "gzip.tar",
    );
    let first = push_ok(&bench, &[legacy.to_str().unwrap()]);
    assert_eq!(first, expected_ref(&image));
    assert_eq!(push_ok(&bench, &[again.to_str().unwrap()]), first);
    assert_eq!(push_ok(&bench, &[gzipped.to_str().unwrap()]), first);

    // The same layers but the last, which is one KiB longer.
    let changed = Image::with_layers(7, "linux/amd64", &[300 << 10, 200 << 10, 121 << 10]);
    assert_eq!(changed.diff_ids()[..2], image.diff_ids()[..2]);
    assert_ne!(changed.diff_ids()[2], image.diff_ids()[2]);
    let input = bench.archive(&changed, Format::DockerLegacy, "changed.tar");
    let second = push_ok(&bench, &[input.to_str().unwrap()]);
    assert_eq!(second, expected_ref(&changed));
    assert_ne!(second, first);

    // Both content tags stay; the user's tag moved to the new content.
    let loaded = bench.loaded();
    let old_tag = format!("docker.io/library/myimg:{}", content_tag(&image));
    assert!(loaded.contains_key(&old_tag), "{loaded:?}");
    bench.assert_holds(&changed);
    // The unchanged re-push sent nothing; the gzip one sent its (other) layers.
    assert_eq!(bench.standins.received(KIND_NODE).len(), 3);
}

/// amd64 and arm64 present, arm/v7 named by the index but absent, as `ctr export` writes.
fn multi_platform(bench: &Bench) -> (PathBuf, Image, Image) {
    let amd64 = Image::sample_for(11, "linux/amd64");
    let arm64 = Image::sample_for(12, "linux/arm64");
    let armv7 = Image::sample_for(13, "linux/arm/v7");
    let path = bench.dir.path().join("multi.tar");
    fixtures::write_multi_platform(
        &path,
        NAME,
        &[&amd64, &arm64],
        &[&armv7],
        LayerCompression::Gzip,
    );
    (path, amd64, arm64)
}

fn arm64_kind() -> Bench {
    let node = kind_node()
        .label("kubernetes.io/arch", "arm64")
        .label("beta.kubernetes.io/arch", "arm64");
    Bench::new("kind-dev", "kind-dev", vec![node])
}

#[test]
fn the_nodes_arch_label_picks_the_platform_of_a_multi_platform_image() {
    let bench = arm64_kind();
    let (input, _amd64, arm64) = multi_platform(&bench);
    let run = bench.push_input(&input, &["-o", "json"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["platforms"], serde_json::json!(["linux/arm64"]));
    assert_eq!(
        report["ref"],
        format!("myimg:{}", content_tag(&arm64)).as_str()
    );
    let manifest = bench.assert_holds(&arm64);
    // The archive's own arm64 manifest, byte for byte: the digest is its digest.
    let stored = fixtures::sha256(&arm64.manifest(LayerCompression::Gzip));
    assert_eq!(manifest, stored);
    assert_eq!(report["digest"], stored.as_str());
}

const AMD64_ON_ARM64: &str = "warning: the image is for linux/amd64 but the nodes run linux/arm64: its containers will not start there (exec format error) unless the nodes emulate linux/amd64\n";

#[test]
fn the_platform_flag_overrides_the_nodes_arch_with_a_warning() {
    let bench = arm64_kind();
    let (input, amd64, _arm64) = multi_platform(&bench);
    let run = bench.push_input(&input, &["--platform", "linux/amd64"]);
    assert_ref(&run, &amd64, AMD64_ON_ARM64);
    bench.assert_holds(&amd64);
}

#[test]
fn a_single_platform_image_for_another_arch_is_loaded_with_a_warning() {
    let bench = arm64_kind();
    let (image, input) = bench.legacy(1);
    let run = bench.push_input(&input, &[]);
    assert_ref(&run, &image, AMD64_ON_ARM64);
    bench.assert_holds(&image);
}

#[test]
fn a_platform_the_image_lacks_is_an_input_error_naming_what_it_has() {
    let node = kind_node()
        .label("kubernetes.io/arch", "s390x")
        .label("beta.kubernetes.io/arch", "s390x");
    let bench = Bench::new("kind-dev", "kind-dev", vec![node]);
    let (input, _, _) = multi_platform(&bench);
    let run = bench.push_input(&input, &[]);
    assert_eq!(run.code, 4, "{run:?}");
    run.assert_stdout(str![]);
    run.assert_stderr(str![[r#"
error: the image has no linux/s390x platform for the nodes (it has linux/amd64, linux/arm64)
hint: pick one with --platform OS/ARCH, or build the image for the nodes' platform

"#]]);
    assert!(bench.standins.calls().is_empty());
}

/// Writes `Image::sample(3)` in `input_format` named `tags`, pushes it (with `extra` args) into
/// `bench`; checks the ref and the runtime, and returns the input.
fn pushes_format(bench: &Bench, input_format: Format, tags: &[&str], extra: &[&str]) -> PathBuf {
    let image = Image::sample(3);
    let input = bench.dir.path().join("input.tar");
    image.write(input_format, &input, tags);
    let run = bench.push_input(&input, extra);
    assert_ref(&run, &image, "");
    bench.assert_holds(&image);
    bench.assert_no_scratch_left();
    input
}

/// Pushes `input` (with `extra` args) into a kind cluster; checks the ref and the runtime.
fn kind_loads(input_format: Format, tags: &[&str], extra: &[&str]) {
    let bench = Bench::kind();
    pushes_format(&bench, input_format, tags, extra);
    bench.assert_streamed_into_kind();
}

fn minikube() -> Bench {
    let node = StandInNode::new("minikube")
        .label("minikube.k8s.io/name", "minikube")
        .label("minikube.k8s.io/primary", "true");
    Bench::new("minikube", "minikube", vec![node])
}

/// Pushes `input` (with `extra` args) into a minikube cluster, whose CLI gets the whole
/// archive; checks the ref and the runtime, and returns the archive `minikube` got.
fn minikube_loads(
    input_format: Format,
    tags: &[&str],
    extra: &[&str],
) -> (Bench, PathBuf, PathBuf) {
    let bench = minikube();
    let input = pushes_format(&bench, input_format, tags, extra);
    let (call, archive) = bench.single_call(3);
    assert_eq!(
        call,
        argv(&["minikube", "image", "load", "FILE", "-p", "minikube"])
    );
    (bench, input, archive)
}

#[test]
fn a_docker_25_archive_is_loaded() {
    kind_loads(Format::Docker25, &[NAME], &[]);
}

#[test]
fn a_docker_25_archive_is_rewritten_for_a_cli() {
    let (_, input, archive) = minikube_loads(Format::Docker25, &[NAME], &[]);
    assert_ne!(archive, input);
}

#[test]
fn an_oci_archive_naming_its_image_fully_is_loaded() {
    kind_loads(Format::OciArchive, &[NAME], &[]);
}

#[test]
fn an_oci_archive_naming_its_image_fully_is_rewritten_for_a_cli() {
    let (_, input, archive) = minikube_loads(Format::OciArchive, &[NAME], &[]);
    assert_ne!(
        archive, input,
        "it lacks the content tag, so it is rewritten"
    );
}

#[test]
fn an_oci_archive_with_a_bare_tag_is_loaded_under_the_tag_flag() {
    kind_loads(Format::OciArchive, &["dev"], &["--tag", NAME]);
}

#[test]
fn a_gzip_wrapped_archive_is_loaded() {
    kind_loads(Format::NixGzip, &[NAME], &[]);
}

#[test]
fn a_jib_archive_with_compressed_layers_is_loaded() {
    kind_loads(Format::Jib, &[NAME], &[]);
}

#[test]
fn a_containerd_export_with_zstd_layers_is_loaded() {
    kind_loads(
        Format::ContainerdExport(LayerCompression::Zstd),
        &[NAME],
        &[],
    );
}

#[test]
fn an_oci_archive_naming_both_refs_only_in_ref_name_is_rewritten() {
    // jib and rules_oci put whole references in ref.name; ctr takes them verbatim
    // (`myimg:dev`), which is not the `docker.io/library/myimg:dev` the kubelet looks up.
    let image = Image::sample(3);
    let content_name = format!("myimg:{}", content_tag(&image));
    let (bench, input, archive) = minikube_loads(Format::OciArchive, &[NAME, &content_name], &[]);
    assert_ne!(archive, input);
    let loaded = bench.loaded();
    assert!(!loaded.contains_key(NAME), "{loaded:?}");
}

#[test]
fn an_archive_already_single_platform_and_named_is_handed_over_as_is() {
    let image = Image::sample(3);
    let content_name = format!("myimg:{}", content_tag(&image));
    let (_, input, archive) = minikube_loads(Format::Docker25, &[NAME, &content_name], &[]);
    assert_eq!(archive, input, "the input should have been loaded in place");
}

fn lab() -> Bench {
    Bench::new("lab", "lab", vec![StandInNode::new("lab-1")])
}

/// A user's own loader on the child's PATH: `mytool import FILE` records its argv in
/// `mytool.log` and imports FILE into the runtime, as the product stand-ins do.
fn install_mytool(bench: &Bench) -> PathBuf {
    let log = bench.dir.path().join("mytool.log");
    let ctr = crate::support::standins::find_on_path("ctr").expect("ctr is not installed");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{log}'\nif [ \"$#\" -eq 2 ] && [ \"$1\" = import ]; then\n  exec '{ctr}' -a '{socket}' -n k8s.io images import --all-platforms --digests \"$2\"\nfi\necho \"mytool: unexpected arguments: $*\" >&2\nexit 2\n",
        log = log.display(),
        ctr = ctr.display(),
        socket = bench.containerd.socket().display(),
    );
    let path = bench.standins.bin_dir().join("mytool");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    log
}

fn mytool_calls(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_load_command_loads_into_a_cluster_we_do_not_know() {
    let bench = lab();
    let log = install_mytool(&bench);
    let (image, input) = bench.legacy(5);
    let run = bench.push_input(&input, &["--load-command", "mytool import {archive}"]);
    assert_ref(&run, &image, "");
    let calls = mytool_calls(&log);
    let [call] = calls.as_slice() else {
        panic!("expected one call, got {calls:?}");
    };
    let archive = call.strip_prefix("import ").unwrap();
    assert!(
        archive.ends_with(".tar") && archive != input.to_str().unwrap(),
        "{call}"
    );
    bench.assert_holds(&image);
    bench.assert_no_scratch_left();
}

#[test]
fn a_load_command_replaces_the_products_own_cli() {
    let bench = Bench::kind();
    let log = install_mytool(&bench);
    let (image, input) = bench.legacy(5);
    let run = bench.push_input(&input, &["--load-command", "mytool import {archive}"]);
    assert_ref_printed(&run, &image);
    assert_eq!(mytool_calls(&log).len(), 1);
    assert!(bench.standins.calls().is_empty(), "kind ran too");
    bench.assert_holds(&image);
}

#[test]
fn a_load_command_without_the_archive_placeholder_is_a_usage_error() {
    let bench = lab();
    let log = install_mytool(&bench);
    let run = bench.refused(&["--load-command", "mytool import"], 2);
    run.assert_stderr(str![[r#"
error: reading --load-command 'mytool import': it has no {archive} to put the archive's path in
hint: write the command as you would in a shell, with {archive} where the archive goes: --load-command 'mycluster load {archive}'

"#]]
    );
    assert!(mytool_calls(&log).is_empty());
    bench.assert_nothing_loaded();
    bench.assert_no_scratch_left();
}

#[test]
fn a_missing_cli_is_named_with_where_to_get_it_and_the_registry_guide() {
    let bench = Bench::kind();
    bench.standins.remove("kind");
    assert!(
        crate::support::standins::find_on_path("kind").is_none(),
        "a real kind is installed here; this test needs it absent"
    );
    let run = bench.refused(&[], 6);
    run.assert_stderr(str![[r#"
error: loading the image into kind cluster "dev": `kind` is not installed (not found on PATH)
caused by: No such file or directory (os error 2)
hint: install kind: https://kind.sigs.k8s.io/docs/user/quick-start/#installation
hint: or give the cluster a registry to push to instead: https://kind.sigs.k8s.io/docs/user/local-registry/

"#]]
    );
    bench.assert_nothing_loaded();
    bench.assert_no_scratch_left();
}

#[test]
fn a_missing_docker_cli_is_named_for_docker_desktop() {
    let bench = Bench::new(
        "docker-desktop",
        "docker-desktop",
        vec![StandInNode::new("docker-desktop")],
    );
    bench.standins.remove("docker");
    let input = bench.archive(&Image::sample(1), Format::DockerLegacy, "myimg.tar");
    // The stand-ins alone: this machine has a real docker CLI, which must not be found.
    let run = bench.push_with_path(&[input.to_str().unwrap()], &bench.standins.path());
    assert_eq!(run.code, 6, "{run:?}");
    run.assert_stdout(str![]);
    run.assert_stderr(str![[r#"
error: loading the image into the Docker Desktop cluster: `docker` is not installed (not found on PATH)
caused by: No such file or directory (os error 2)
hint: install docker: https://docs.docker.com/desktop/
hint: or give the cluster a registry to push to instead: https://docs.docker.com/desktop/features/kubernetes/

"#]]
    );
}

#[test]
fn a_failing_cli_exits_6_with_the_end_of_its_stderr() {
    let bench = Bench::new("k3d-dev", "k3d-dev", vec![k3s_node("k3d-dev-server-0")]);
    let stderr: String = (1..=25).map(|i| format!("k3d line {i:02}\n")).collect();
    bench.standins.fail(
        "k3d",
        "INFO[0000] Importing image(s) into cluster 'dev'\n",
        &stderr,
    );
    let run = bench.refused(&[], 6);
    // `k3d node list` failed too: the whole archive went to k3d's own import.
    assert_eq!(bench.standins.calls().len(), 2);
    let (call, archive) = bench.last_call(3);
    assert_eq!(call, argv(&["k3d", "image", "import", "FILE", "-c", "dev"]));
    let tail: String = (6..=25).map(|i| format!("    k3d line {i:02}\n")).collect();
    assert_eq!(
        run.stderr
            .replace(&redact(archive.to_str().unwrap()), "FILE"),
        format!(
            "error: loading the image into k3d cluster \"dev\": `k3d image import FILE -c dev` failed (exit status: 1)\n\
             caused by: `k3d` said:\n{tail}\
             hint: or give the cluster a registry to push to instead: https://k3d.io/stable/usage/registries/\n"
        )
    );
    bench.assert_nothing_loaded();
    bench.assert_no_scratch_left();
}

#[test]
fn what_a_failing_cli_prints_reaches_the_terminal_escaped() {
    let bench = Bench::new("k3d-dev", "k3d-dev", vec![k3s_node("k3d-dev-server-0")]);
    bench.standins.fail(
        "k3d",
        "",
        "\x1b]0;owned\x07\x1b[2Jcleared \u{202e}txt.exe\n",
    );
    let run = bench.refused(&[], 6);
    run.assert_stderr(str![[r#"
error: loading the image into k3d cluster "dev": `k3d image import [ROOT]/tmp/kubectl-registry-[..]/image.tar -c dev` failed (exit status: 1)
caused by: `k3d` said:
    \u001b]0;owned\u0007\u001b[2Jcleared \u202etxt.exe
hint: or give the cluster a registry to push to instead: https://k3d.io/stable/usage/registries/

"#]]);
    assert!(!run.stderr.contains(['\u{1b}', '\u{7}', '\u{202e}']));
}

#[test]
fn an_unknown_cluster_without_a_load_command_names_the_configmap_and_the_ways_out() {
    let bench = lab();
    let run = bench.refused(&[], 6);
    run.assert_stderr(str![[r#"
error: no way to get the image into cluster "lab": it advertises no local registry (no ConfigMap kube-public/local-registry-hosting) and is no product whose nodes we know how to load into
hint: give the cluster a registry and advertise it in kube-public/local-registry-hosting (KEP-1755): https://github.com/kubernetes/enhancements/tree/master/keps/sig-cluster-lifecycle/generic/1755-communicating-a-local-registry
hint: or push to a registry its nodes can pull from: --registry HOST[:PORT]
hint: or load the image your own way: --load-command 'PROGRAM ARGS... {archive}'

"#]]);
    assert!(bench.standins.calls().is_empty());
    bench.assert_nothing_loaded();
    bench.assert_no_scratch_left();
}

/// What `push --no-load` says on a kind cluster advertising no registry.
const KIND_NO_LOAD: &str = r#"error: no way to get the image into cluster "kind-dev": it advertises no local registry (no ConfigMap kube-public/local-registry-hosting), and --no-load forbids loading it into the nodes
hint: give the cluster a registry and advertise it in kube-public/local-registry-hosting: https://kind.sigs.k8s.io/docs/user/local-registry/
hint: or push to a registry its nodes can pull from: --registry HOST[:PORT]
hint: or drop --no-load to load it into kind cluster "dev" with `kind`
"#;

#[test]
fn no_load_refuses_to_run_the_products_cli() {
    let bench = Bench::kind();
    let run = bench.refused(&["--no-load"], 6);
    run.assert_stderr(KIND_NO_LOAD);
    assert!(bench.standins.calls().is_empty(), "the CLI ran");
    bench.assert_nothing_loaded();
    assert_eq!(
        bench.server.requests(),
        [
            "GET /api/v1/namespaces/kube-public/configmaps/local-registry-hosting",
            "GET /api/v1/namespaces/kube-system/services/registry",
            "GET /apis/config.openshift.io/v1/images/cluster",
            "GET /api/v1/nodes",
            "GET /api/v1/namespaces/container-registry/services/registry",
        ],
        "the product comes from the node list discovery read, listed once"
    );
}

#[test]
fn no_load_on_an_unknown_cluster_offers_a_load_command() {
    let bench = lab();
    let run = bench.refused(&["--no-load"], 6);
    run.assert_stderr(str![[r#"
error: no way to get the image into cluster "lab": it advertises no local registry (no ConfigMap kube-public/local-registry-hosting), and --no-load forbids loading it into the nodes
hint: give the cluster a registry and advertise it in kube-public/local-registry-hosting: https://github.com/kubernetes/enhancements/tree/master/keps/sig-cluster-lifecycle/generic/1755-communicating-a-local-registry
hint: or push to a registry its nodes can pull from: --registry HOST[:PORT]
hint: or drop --no-load and load it your own way: --load-command 'PROGRAM ARGS... {archive}'

"#]]);
}

#[test]
fn the_clis_own_output_stays_off_stdout_and_shows_with_verbose() {
    let bench = minikube();
    let (image, input) = bench.legacy(1);
    let run = bench.push_input(&input, &["-v"]);
    assert_ref_printed(&run, &image);
    let (_, archive) = bench.single_call(3);
    let stderr = run
        .stderr
        .replace(&redact(archive.to_str().unwrap()), "FILE");
    let lines: Vec<&str> = stderr.lines().collect();
    // What ctr printed on its stdout, echoed on ours only as a -v line on stderr.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("  minikube: unpacking {LOADED} (sha256:"))),
        "{stderr}"
    );
    for expected in [
        "no registry advertised; the cluster is minikube profile \"minikube\"",
        "node-load plan: load the image into the nodes of minikube profile \"minikube\": `minikube image load FILE -p minikube`",
        "loaded the image into minikube profile \"minikube\" with `minikube image load FILE -p minikube`",
    ] {
        assert!(lines.contains(&expected), "no {expected:?} in:\n{stderr}");
    }
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("loaded into the nodes in "),
        "{stderr}"
    );
}

#[test]
fn what_each_node_got_shows_with_verbose_and_ctr_stays_off_stdout() {
    let bench = Bench::kind();
    let (image, input) = bench.legacy(1);
    let run = bench.push_input(&input, &["-v"]);
    assert_ref_printed(&run, &image);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("  {KIND_NODE}: unpacking {LOADED} (sha256:"))),
        "{}",
        run.stderr
    );
    assert!(
        lines.contains(&"no registry advertised; the cluster is kind cluster \"dev\""),
        "{}",
        run.stderr
    );
    let loaded =
        format!("loaded the image into kind cluster \"dev\": {KIND_NODE} got 3 of 3 layers (");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&loaded) && l.ends_with(" MB)")),
        "no {loaded:?} in:\n{}",
        run.stderr
    );
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("loaded into the nodes in "),
        "{}",
        run.stderr
    );
}

#[test]
fn json_after_a_node_load_names_the_method_the_content_tag_and_the_platform() {
    let bench = Bench::kind();
    let (image, input) = bench.legacy(1);
    let run = bench.push_input(&input, &["-o", "json"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    let tag = content_tag(&image);
    let digest = bench.assert_loaded(&image, &tag);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        report,
        serde_json::json!({
            "ref": format!("myimg:{tag}"),
            "pushRef": null,
            "clusterNetworkRef": null,
            "digest": digest,
            "repository": "myimg",
            "tag": tag,
            "method": "node-load",
            "network": null,
            "platforms": ["linux/amd64"],
            "blobsPushed": 0,
            "blobsSkipped": 0,
            "bytesPushed": 0,
            "bytesSkipped": 0,
        })
    );
}

/// Copies the tar `from` to `to` without its member `drop`.
fn tar_without(from: &Path, to: &Path, drop: &str) {
    let mut input = tar::Archive::new(std::fs::File::open(from).unwrap());
    let mut output = tar::Builder::new(std::fs::File::create(to).unwrap());
    for entry in input.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().to_str() != Some(drop) {
            let header = entry.header().clone();
            output.append(&header, &mut entry).unwrap();
        }
    }
    output.finish().unwrap();
}

#[test]
fn an_oci_layout_without_manifest_json_is_rewritten_for_docker_load() {
    let bench = Bench::new(
        "docker-desktop",
        "docker-desktop",
        vec![StandInNode::new("docker-desktop")],
    );
    let image = Image::sample(3);
    let content_name = format!("myimg:{}", content_tag(&image));
    let docker25 = bench.dir.path().join("docker25.tar");
    image.write(Format::Docker25, &docker25, &[NAME, &content_name]);
    let input = bench.dir.path().join("layout-only.tar");
    tar_without(&docker25, &input, "manifest.json");
    let run = bench.push_input(&input, &[]);
    assert_ref(&run, &image, "");
    let (call, archive) = bench.single_call(3);
    assert_eq!(call, argv(&["docker", "load", "-i", "FILE"]));
    assert_ne!(
        archive, input,
        "docker load (before 25) needs manifest.json"
    );
    bench.assert_holds(&image);
}

#[test]
fn an_archive_on_stdin_is_loaded() {
    let bench = Bench::kind();
    let (image, input) = bench.legacy(9);
    let run = bench.push_stdin(&input, &["-"]);
    assert_ref(&run, &image, "");
    bench.assert_holds(&image);
    bench.assert_no_scratch_left();
}

#[test]
fn a_name_on_another_registry_keeps_its_domain_in_the_ref() {
    let bench = Bench::kind();
    let (image, input) = bench.legacy(9);
    let run = bench.push(&[
        input.to_str().unwrap(),
        "--tag",
        "registry.example:5000/team/app:v1",
    ]);
    let hex = &content_tag(&image)["dev-".len()..];
    assert_eq!(
        (run.code, run.stdout, run.stderr),
        (
            0,
            format!("registry.example:5000/team/app:v1-{hex}\n"),
            String::new()
        )
    );
    let loaded = bench.loaded();
    let tagged = &loaded["registry.example:5000/team/app:v1"];
    assert_eq!(
        loaded.get(&format!("registry.example:5000/team/app:v1-{hex}")),
        Some(tagged),
        "{loaded:?}"
    );
    assert!(!loaded.contains_key(LOADED), "{loaded:?}");
}

#[test]
fn a_user_who_may_not_list_nodes_still_loads_into_the_kind_cluster_the_context_names() {
    let server = ApiServer::builder().node(kind_node()).forbid("nodes");
    let bench = Bench::serving("kind-dev", "kind-dev", server);
    let (image, input) = bench.legacy(1);
    let run = bench.push_input(&input, &[]);
    assert_ref(&run, &image, "");
    bench.assert_streamed_into(
        KIND_NODE,
        "kind get nodes --name dev",
        "--snapshotter=native ",
    );
    bench.assert_holds(&image);
}

/// What microk8s installs while its registry addon is off: a ConfigMap with `help` and no host.
const MICROK8S_HELP_ONLY: &str = "help: \"https://microk8s.io/docs/registry-built-in\"\n";

#[test]
fn microk8s_help_only_configmap_means_no_registry_so_push_imports_into_the_nodes() {
    let node = StandInNode::new("laptop").label("microk8s.io/cluster", "true");
    let server = ApiServer::builder()
        .hosting_v1(MICROK8S_HELP_ONLY)
        .node(node);
    let bench = Bench::serving("microk8s", "microk8s-cluster", server);
    let (image, input) = bench.legacy(61);
    let run = bench.push_input(&input, &[]);
    assert_ref(&run, &image, "");
    let (call, _) = bench.single_call(3);
    assert_eq!(call, argv(&["microk8s", "images", "import", "FILE"]));
    bench.assert_holds(&image);
    bench.assert_no_scratch_left();
}

#[test]
fn a_help_only_configmaps_link_is_in_every_hint_of_a_refused_load() {
    let server = ApiServer::builder()
        .hosting_v1("help: https://registry.example.test/setup\n")
        .node(kind_node());
    let bench = Bench::serving("kind-dev", "kind-dev", server);
    let run = bench.refused(&["--no-load"], 6);
    run.assert_stderr(format!(
        "{KIND_NO_LOAD}hint: this cluster's registry guide: https://registry.example.test/setup\n"
    ));
    bench.assert_nothing_loaded();
}

// A local engine's image by name

/// A nerdctl stand-in (kind's nodes are reached through the `docker` stand-in): inspect prints
/// what nerdctl would for `image`, save hands over `saved`; every call is logged to `calls`.
fn nerdctl_stand_in(bench: &Bench, image: &Image, saved: &Path, calls: &Path) -> OsString {
    let bin = bench.dir.path().join("engine-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let inspect = bench.dir.path().join("inspect.json");
    let facts = serde_json::json!([{
        "Id": image.config_digest(),
        "RepoTags": [NAME],
        "Os": "linux",
        "Architecture": "amd64",
        "RootFS": {"Type": "layers", "Layers": image.diff_ids()},
    }]);
    std::fs::write(&inspect, facts.to_string()).unwrap();
    let script = bin.join("nerdctl");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{calls}'\n\
             case \"$1 $2 $3\" in\n\
             'image inspect myimg:dev') exec cat '{inspect}' ;;\n\
             'image save myimg:dev') exec cat '{saved}' ;;\n\
             esac\nexit 1\n",
            calls = calls.display(),
            inspect = inspect.display(),
            saved = saved.display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let inherited = bench.path_with_standins();
    std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&inherited))).unwrap()
}

fn take_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let _ = std::fs::remove_file(path);
    text.lines().map(str::to_string).collect()
}

#[test]
fn an_engine_image_the_nodes_hold_is_neither_exported_nor_loaded_again() {
    let bench = Bench::kind();
    let image = Image::sample(61);
    let saved = bench.archive(&image, Format::DockerLegacy, "saved.tar");
    let calls = bench.dir.path().join("engine-calls");
    let path = nerdctl_stand_in(&bench, &image, &saved, &calls);
    let engine = [("KUBECTL_REGISTRY_ENGINE", "nerdctl")];

    let first = bench.run(&[NAME], &path, None, &engine);
    assert_eq!(
        (first.code, first.stdout.as_str(), first.stderr.as_str()),
        (0, expected_ref(&image).as_str(), ""),
        "{first:?}"
    );
    let manifest = bench.assert_holds(&image);
    assert_eq!(
        take_lines(&calls),
        ["image inspect myimg:dev", "image save myimg:dev"]
    );
    bench.assert_no_scratch_left();

    let again = bench.run(&[NAME, "-v"], &path, None, &engine);
    assert_eq!(
        (again.code, again.stdout.as_str()),
        (0, expected_ref(&image).as_str()),
        "{again:?}"
    );
    let skipped = format!(
        "every node holds {} already (image {}): not exported, not loaded again",
        expected_ref(&image).trim_end(),
        image.config_digest()
    );
    assert!(
        again.stderr.lines().any(|line| line == skipped),
        "{}",
        again.stderr
    );
    assert_eq!(take_lines(&calls), ["image inspect myimg:dev"]);

    // The node lost it: loaded again, whatever the record says.
    let removed = bench.containerd.ctr(&["content", "rm", &manifest]);
    assert!(
        removed.status.success(),
        "{}",
        String::from_utf8_lossy(&removed.stderr)
    );
    let reload = bench.run(&[NAME], &path, None, &engine);
    assert_eq!(
        (reload.code, reload.stdout.as_str()),
        (0, expected_ref(&image).as_str()),
        "{reload:?}"
    );
    assert_eq!(
        take_lines(&calls),
        ["image inspect myimg:dev", "image save myimg:dev"]
    );
    bench.assert_holds(&image);
    bench.assert_no_scratch_left();
}
