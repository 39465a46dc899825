//! `kubectl registry push` into clusters that advertise no registry, end to end: the built binary
//! against the stand-in API server, the stand-in product CLIs on the child's PATH, and a real
//! containerd as the nodes' runtime.

mod support;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use support::apiserver::{ApiServer, StandInNode, redact_ports};
use support::containerd::Containerd;
use support::fixtures::{self, Format, Image, LayerCompression};
use support::standins::StandIns;
use tempfile::TempDir;

/// The name every fixture archive records, and how containerd names it.
const NAME: &str = "myimg:dev";
const LOADED: &str = "docker.io/library/myimg:dev";

/// What a run printed, ports redacted.
#[derive(Debug)]
struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

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
        let containerd = Containerd::start();
        let standins = StandIns::new(&containerd);
        let server = nodes
            .into_iter()
            .fold(ApiServer::builder(), |builder, node| builder.node(node))
            .start();
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

    fn push_with_path(&self, args: &[&str], path: &OsString) -> Outcome {
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut cmd = Command::cargo_bin("kubectl-registry").unwrap();
        cmd.env("HOME", &home)
            .env("NO_COLOR", "1")
            .env("PATH", path)
            .env("TMPDIR", self.scratch_parent());
        for var in [
            "KUBECONFIG",
            "KUBECTL_REGISTRY_HOST",
            "KUBECTL_REGISTRY_RUNTIME_HOST",
            "KUBECTL_REGISTRY_ENGINE",
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "NO_PROXY",
            "no_proxy",
            "ALL_PROXY",
            "all_proxy",
            "KUBERNETES_SERVICE_HOST",
            "KUBERNETES_SERVICE_PORT",
        ] {
            cmd.env_remove(var);
        }
        let output = cmd
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("push")
            .args(args)
            .output()
            .unwrap();
        Outcome {
            code: output.status.code().unwrap(),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: redact_ports(&String::from_utf8(output.stderr).unwrap()),
        }
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

    /// Asserts the child removed its scratch dir (the written archive with it).
    fn assert_no_scratch_left(&self) {
        let left: Vec<_> = std::fs::read_dir(self.scratch_parent())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
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
    let image = Image::sample(1);
    let input = bench.archive(&image, Format::DockerLegacy, "myimg.tar");
    let run = bench.push(&[input.to_str().unwrap()]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, expected_ref(&image).as_str(), ""),
        "{run:?}"
    );
    let (call, archive) = bench.single_call(archive_at);
    assert_eq!(call, argv(expected));
    assert_ne!(
        archive, input,
        "a legacy archive is rewritten, never handed over"
    );
    bench.assert_loaded(&image, &content_tag(&image));
    bench.assert_no_scratch_left();
}

#[test]
fn kind_loads_into_the_cluster_its_provider_id_names() {
    let bench = Bench::kind();
    loads_into(
        &bench,
        3,
        &["kind", "load", "image-archive", "FILE", "--name", "dev"],
    );
}

#[test]
fn k3d_imports_into_the_cluster_its_server_node_names() {
    let bench = Bench::new("k3d-dev", "k3d-dev", vec![k3s_node("k3d-dev-server-0")]);
    loads_into(&bench, 3, &["k3d", "image", "import", "FILE", "-c", "dev"]);
}

#[test]
fn minikube_loads_into_the_profile_its_node_label_names() {
    let node = StandInNode::new("minikube")
        .label("minikube.k8s.io/name", "minikube")
        .label("minikube.k8s.io/primary", "true");
    let bench = Bench::new("minikube", "minikube", vec![node]);
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
    let image = Image::sample(1);
    let input = bench.archive(&image, Format::DockerLegacy, "myimg.tar");
    let run = bench.push(&[input.to_str().unwrap()]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, expected_ref(&image).as_str(), ""),
        "{run:?}"
    );
    let calls = bench.standins.calls();
    let [first, second] = calls.as_slice() else {
        panic!("expected two calls, got {calls:?}");
    };
    let file = first[3].as_str();
    assert_eq!(*first, argv(&["microk8s", "images", "import", file]));
    assert_eq!(*second, argv(&["microk8s", "ctr", "image", "import", file]));
    bench.assert_loaded(&image, &content_tag(&image));
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
    bench.assert_loaded(&changed, &content_tag(&changed));
    assert_eq!(bench.standins.calls().len(), 4);
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
    let run = bench.push(&[input.to_str().unwrap(), "-o", "json"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["platforms"], serde_json::json!(["linux/arm64"]));
    assert_eq!(
        report["ref"],
        format!("myimg:{}", content_tag(&arm64)).as_str()
    );
    let manifest = bench.assert_loaded(&arm64, &content_tag(&arm64));
    // The archive's own arm64 manifest, byte for byte: the digest is its digest.
    let stored = fixtures::sha256(&arm64.manifest(LayerCompression::Gzip));
    assert_eq!(manifest, stored);
    assert_eq!(report["digest"], stored.as_str());
}

#[test]
fn the_platform_flag_overrides_the_nodes_arch() {
    let bench = arm64_kind();
    let (input, amd64, _arm64) = multi_platform(&bench);
    let run = bench.push(&[input.to_str().unwrap(), "--platform", "linux/amd64"]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, expected_ref(&amd64).as_str(), ""),
        "{run:?}"
    );
    bench.assert_loaded(&amd64, &content_tag(&amd64));
}

#[test]
fn a_platform_the_image_lacks_is_an_input_error_naming_what_it_has() {
    let node = kind_node()
        .label("kubernetes.io/arch", "s390x")
        .label("beta.kubernetes.io/arch", "s390x");
    let bench = Bench::new("kind-dev", "kind-dev", vec![node]);
    let (input, _, _) = multi_platform(&bench);
    let run = bench.push(&[input.to_str().unwrap()]);
    assert_eq!(run.code, 4, "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "error: the image has no linux/s390x platform for the nodes (it has linux/amd64, linux/arm64)\n\
         hint: pick one with --platform OS/ARCH, or build the image for the nodes' platform\n"
    );
    assert!(bench.standins.calls().is_empty());
}

/// Pushes `input` (with `extra` args) into a kind cluster; checks the ref and the runtime.
fn kind_loads(input_format: Format, tags: &[&str], extra: &[&str]) -> (Bench, PathBuf, PathBuf) {
    let bench = Bench::kind();
    let image = Image::sample(3);
    let input = bench.dir.path().join("input.tar");
    image.write(input_format, &input, tags);
    let mut args = vec![input.to_str().unwrap()];
    args.extend(extra);
    let run = bench.push(&args);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, expected_ref(&image).as_str(), ""),
        "{run:?}"
    );
    bench.assert_loaded(&image, &content_tag(&image));
    let (call, archive) = bench.single_call(3);
    assert_eq!(
        call,
        argv(&["kind", "load", "image-archive", "FILE", "--name", "dev"])
    );
    bench.assert_no_scratch_left();
    (bench, input, archive)
}

#[test]
fn a_docker_25_archive_is_loaded() {
    let (_, input, archive) = kind_loads(Format::Docker25, &[NAME], &[]);
    assert_ne!(archive, input);
}

#[test]
fn an_oci_archive_naming_its_image_fully_is_loaded() {
    let (_, input, archive) = kind_loads(Format::OciArchive, &[NAME], &[]);
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
fn an_archive_already_single_platform_and_named_is_handed_over_as_is() {
    let image = Image::sample(3);
    let content_name = format!("myimg:{}", content_tag(&image));
    let (_, input, archive) = kind_loads(Format::Docker25, &[NAME, &content_name], &[]);
    assert_eq!(archive, input, "the input should have been loaded in place");
}
