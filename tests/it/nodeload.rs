//! Loading an archive into the nodes with each product's CLI (stand-ins that hand the archive to
//! a real containerd), through the library API, and the errors when that cannot work.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::containerd::Containerd;
use crate::support::run::assert_redacted;
use crate::support::standins::StandIns;
use kubectl_registry::cluster::client::NodeFacts;
use kubectl_registry::cluster::kubeconfig::KubeconfigFacts;
use kubectl_registry::cluster::product::{self, Product, ProductKind};
use kubectl_registry::delivery::nodeload;
use kubectl_registry::nodes::{self, LoadPlan};
use kubectl_registry::plumbing::error::{Error, ExitCode};
use kubectl_registry::plumbing::limits::Limits;
use kubectl_registry::plumbing::output::Printer;
use sha2::{Digest as _, Sha256};
use snapbox::str;

/// What containerd calls the `myimg:dev` the archive carries.
const LOADED_NAME: &str = "docker.io/library/myimg:dev";

/// A test's bench: a node runtime, the stand-in CLIs, and a docker-archive written by skopeo.
struct Bench {
    containerd: Containerd,
    standins: StandIns,
    archive: PathBuf,
    _dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Self {
        let containerd = Containerd::start();
        let standins = StandIns::new(&containerd);
        let dir = tempfile::tempdir().unwrap();
        let archive = docker_archive(dir.path());
        Self {
            containerd,
            standins,
            archive,
            _dir: dir,
        }
    }

    fn plan(&self, kind: ProductKind, cluster_name: Option<&str>) -> LoadPlan {
        let product = Product {
            kind,
            cluster_name: cluster_name.map(str::to_string),
        };
        LoadPlan::for_product(&product, &self.archive)
            .unwrap()
            .with_env("PATH", self.standins.path())
    }

    fn archive_arg(&self) -> String {
        self.archive.to_str().unwrap().to_string()
    }

    /// `words` as the argv a CLI gets, `FILE` standing for the archive's path.
    fn argv(&self, words: &[&str]) -> Vec<String> {
        words
            .iter()
            .map(|word| match *word {
                "FILE" => self.archive_arg(),
                word => word.to_string(),
            })
            .collect()
    }

    /// Asserts the stand-ins were called `calls`, in order, each an argv written as words
    /// split at spaces (`FILE`: the archive's path).
    #[track_caller]
    fn assert_calls(&self, calls: &[&str]) {
        let expected: Vec<Vec<String>> = calls
            .iter()
            .map(|call| self.argv(&call.split(' ').collect::<Vec<_>>()))
            .collect();
        assert_eq!(self.standins.calls(), expected);
    }

    fn assert_loaded(&self) {
        let images = self.containerd.images();
        assert!(
            images.iter().any(|i| i == LOADED_NAME),
            "not in containerd: {images:?}"
        );
    }

    fn assert_not_loaded(&self) {
        let images = self.containerd.images();
        assert!(
            !images.iter().any(|i| i == LOADED_NAME),
            "loaded anyway: {images:?}"
        );
    }
}

async fn run(plan: &LoadPlan) -> Result<(), Error> {
    nodeload::run(
        plan,
        Limits::default().node_timeout,
        &Printer::new(0, false, false),
    )
    .await
}

/// Writes a one-layer OCI layout by hand, then has the real skopeo write the single-platform
/// docker-archive `myimg:dev` from it, as the archive writer will.
fn docker_archive(dir: &Path) -> PathBuf {
    let layout = dir.join("layout");
    let blobs = layout.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |bytes: &[u8]| {
        let hex = hex::encode(Sha256::digest(bytes));
        std::fs::write(blobs.join(&hex), bytes).unwrap();
        (format!("sha256:{hex}"), bytes.len())
    };

    let mut layer = tar::Builder::new(Vec::new());
    let content = b"hello from a node-loaded image\n";
    let mut header = tar::Header::new_gnu();
    header.set_size(content.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    layer
        .append_data(&mut header, "hello.txt", &content[..])
        .unwrap();
    let (layer_digest, layer_size) = put(&layer.into_inner().unwrap());

    let config = serde_json::json!({
        "architecture": "amd64",
        "os": "linux",
        "config": {"Cmd": ["/hello"]},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    });
    let (config_digest, config_size) = put(&serde_json::to_vec(&config).unwrap());
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest, "size": layer_size}],
    });
    let (manifest_digest, manifest_size) = put(&serde_json::to_vec(&manifest).unwrap());
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": manifest_digest,
            "size": manifest_size,
            "annotations": {"org.opencontainers.image.ref.name": "dev"},
        }],
    });
    std::fs::write(
        layout.join("index.json"),
        serde_json::to_vec(&index).unwrap(),
    )
    .unwrap();
    std::fs::write(
        layout.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();

    let archive = dir.join("myimg.tar");
    let out = Command::new("skopeo")
        .arg("--insecure-policy")
        .arg("copy")
        .arg(format!("oci:{}:dev", layout.display()))
        .arg(format!("docker-archive:{}:myimg:dev", archive.display()))
        .output()
        .expect("running skopeo (scripts/install-test-deps)");
    assert!(
        out.status.success(),
        "skopeo: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    archive
}

/// Loads with `kind`'s plan for the product and checks the one call the CLI got (`argv` as
/// words, `FILE` the archive) and the result.
async fn loads_with(kind: ProductKind, cluster_name: Option<&str>, argv: &str) {
    let bench = Bench::new();
    let plan = bench.plan(kind, cluster_name);
    run(&plan).await.unwrap();
    bench.assert_calls(&[argv]);
    bench.assert_loaded();
}

#[tokio::test]
async fn kind_loads_the_archive_into_the_named_cluster() {
    loads_with(
        ProductKind::Kind,
        Some("dev"),
        "kind load image-archive FILE --name dev",
    )
    .await;
}

#[tokio::test]
async fn k3d_imports_the_archive_into_the_named_cluster() {
    loads_with(
        ProductKind::K3d,
        Some("dev"),
        "k3d image import FILE -c dev",
    )
    .await;
}

#[tokio::test]
async fn minikube_loads_the_archive_into_the_profile() {
    loads_with(
        ProductKind::Minikube,
        Some("dev"),
        "minikube image load FILE -p dev",
    )
    .await;
}

#[tokio::test]
async fn microk8s_imports_with_images_import() {
    loads_with(ProductKind::Microk8s, None, "microk8s images import FILE").await;
}

#[tokio::test]
async fn k3s_imports_with_its_ctr_into_the_k8s_namespace() {
    loads_with(
        ProductKind::K3s,
        None,
        "k3s ctr -n k8s.io images import FILE",
    )
    .await;
}

#[tokio::test]
async fn docker_desktop_loads_into_the_shared_docker_store() {
    loads_with(ProductKind::DockerDesktop, None, "docker load -i FILE").await;
}

#[tokio::test]
async fn orbstack_loads_into_the_shared_docker_store() {
    loads_with(ProductKind::Orbstack, None, "docker load -i FILE").await;
}

#[tokio::test]
async fn colima_loads_into_the_shared_docker_store() {
    loads_with(ProductKind::Colima, Some("default"), "docker load -i FILE").await;
}

#[tokio::test]
async fn rancher_desktop_loads_into_the_shared_docker_store() {
    loads_with(ProductKind::RancherDesktop, None, "docker load -i FILE").await;
}

#[tokio::test]
async fn microk8s_before_1_25_falls_back_to_its_ctr() {
    let bench = Bench::new();
    bench.standins.old_microk8s();
    run(&bench.plan(ProductKind::Microk8s, None)).await.unwrap();
    bench.assert_calls(&[
        "microk8s images import FILE",
        "microk8s ctr image import FILE",
    ]);
    bench.assert_loaded();
}

#[tokio::test]
async fn microk8s_failing_for_another_reason_is_not_retried() {
    let bench = Bench::new();
    bench
        .standins
        .fail("microk8s", "", "error: the archive is not an image\n");
    let err = run(&bench.plan(ProductKind::Microk8s, None))
        .await
        .unwrap_err();
    assert_eq!(bench.standins.calls().len(), 1);
    assert_redacted(
        &err.causes().join("\n"),
        str![[r#"
`microk8s` said:
    error: the archive is not an image
"#]],
    );
    bench.assert_not_loaded();
}

/// Detection from what the tools write, then the load: the whole library path.
#[tokio::test]
async fn a_detected_kind_cluster_gets_its_name_from_the_node() {
    let bench = Bench::new();
    let kubeconfig = KubeconfigFacts {
        context: Some("renamed".into()),
        cluster: Some("renamed".into()),
        server: Some("https://127.0.0.1:40001".into()),
    };
    let nodes = [NodeFacts {
        name: "dev-control-plane".into(),
        provider_id: Some("kind://docker/dev/dev-control-plane".into()),
        ..Default::default()
    }];
    let detected = product::detect(&kubeconfig, &nodes);
    let plan = LoadPlan::for_product(&detected, &bench.archive)
        .unwrap()
        .with_env("PATH", bench.standins.path());
    run(&plan).await.unwrap();
    bench.assert_calls(&["kind load image-archive FILE --name dev"]);
    bench.assert_loaded();
}

#[tokio::test]
async fn a_load_that_goes_silent_is_stopped_and_named() {
    let bench = Bench::new();
    bench.standins.go_silent("kind", "loading...");
    let plan = bench.plan(ProductKind::Kind, Some("dev"));
    // A node bound of 0.1s: the load may say nothing for ten times it.
    let err = nodeload::run(
        &plan,
        Duration::from_millis(100),
        &Printer::new(0, false, false),
    )
    .await
    .unwrap_err();
    assert_eq!(err.exit_code(), ExitCode::Load);
    assert_eq!(err.message(), "loading the image into kind cluster \"dev\"");
    assert_eq!(
        err.causes(),
        [format!(
            "`kind load image-archive {} --name dev` printed nothing for 1s; it was stopped",
            bench.archive_arg()
        )]
    );
    assert!(err.hints()[0].ends_with(
        "KUBECTL_REGISTRY_NODE_TIMEOUT sets the bound (it may print nothing for ten times it)"
    ));
    bench.assert_not_loaded();
}

#[tokio::test]
async fn a_missing_cli_is_named_with_where_to_get_it_and_the_registry_way() {
    let bench = Bench::new();
    bench.standins.remove("kind");
    let err = run(&bench.plan(ProductKind::Kind, Some("dev")))
        .await
        .unwrap_err();
    assert_eq!(err.exit_code(), ExitCode::Load);
    assert_eq!(
        err.message(),
        "loading the image into kind cluster \"dev\": `kind` is not installed (not found on PATH)"
    );
    assert_eq!(
        err.hints(),
        vec![
            "install kind: https://kind.sigs.k8s.io/docs/user/quick-start/#installation",
            "or give the cluster a registry to push to instead: https://kind.sigs.k8s.io/docs/user/local-registry/",
        ]
    );
    assert!(bench.standins.calls().is_empty());
}

#[tokio::test]
async fn a_failing_cli_shows_its_exit_status_and_the_end_of_its_stderr() {
    let bench = Bench::new();
    let stderr: String = (1..=30).map(|i| format!("k3d line {i:02}\n")).collect();
    bench
        .standins
        .fail("k3d", "some progress on stdout\n", &stderr);
    let err = run(&bench.plan(ProductKind::K3d, Some("dev")))
        .await
        .unwrap_err();
    assert_eq!(err.exit_code(), ExitCode::Load);
    let file = bench.archive_arg();
    assert_eq!(
        err.message(),
        format!(
            "loading the image into k3d cluster \"dev\": `k3d image import {file} -c dev` failed (exit status: 1)"
        )
    );
    let expected_tail: String = (11..=30)
        .map(|i| format!("\n    k3d line {i:02}"))
        .collect();
    assert_eq!(err.causes(), vec![format!("`k3d` said:{expected_tail}")]);
    assert_eq!(
        err.hints(),
        vec![
            "or give the cluster a registry to push to instead: https://k3d.io/stable/usage/registries/"
        ]
    );
    bench.assert_not_loaded();
}

#[tokio::test]
async fn a_cli_failing_on_stdout_alone_still_says_why() {
    let bench = Bench::new();
    bench
        .standins
        .fail("docker", "Cannot connect to the Docker daemon\n", "");
    let err = run(&bench.plan(ProductKind::RancherDesktop, None))
        .await
        .unwrap_err();
    assert_eq!(
        err.causes(),
        vec!["`docker` said:\n    Cannot connect to the Docker daemon"]
    );
    assert!(err.hints()[0].contains("--load-command 'nerdctl -n k8s.io load -i {archive}'"));
}

#[tokio::test]
async fn a_load_command_template_runs_with_quoted_arguments_kept_whole() {
    let bench = Bench::new();
    let plan = LoadPlan::from_template(
        "kind load image-archive {archive} --name 'my dev'",
        &bench.archive,
    )
    .unwrap()
    .with_env("PATH", bench.standins.path());
    run(&plan).await.unwrap();
    // `my dev` one argument: the words are not split here.
    let call = bench.argv(&["kind", "load", "image-archive", "FILE", "--name", "my dev"]);
    assert_eq!(bench.standins.calls(), [call]);
    bench.assert_loaded();
}

#[tokio::test]
async fn a_load_command_naming_a_missing_program_says_so() {
    let bench = Bench::new();
    let plan = LoadPlan::from_template("mycluster load {archive}", &bench.archive)
        .unwrap()
        .with_env("PATH", bench.standins.path());
    let err = run(&plan).await.unwrap_err();
    assert_eq!(err.exit_code(), ExitCode::Load);
    assert_eq!(
        err.message(),
        format!(
            "running your --load-command `mycluster load {}`: `mycluster` was not found",
            bench.archive_arg()
        )
    );
}

#[test]
fn an_unknown_cluster_has_no_plan_and_an_error_naming_the_configmap() {
    let kubeconfig = KubeconfigFacts {
        context: Some("lab".into()),
        cluster: Some("lab".into()),
        server: Some("https://10.0.0.2:6443".into()),
    };
    let nodes = [NodeFacts {
        name: "lab-1".into(),
        ..Default::default()
    }];
    let detected = product::detect(&kubeconfig, &nodes);
    assert_eq!(detected.kind, ProductKind::Unknown);
    assert!(LoadPlan::for_product(&detected, Path::new("/tmp/img.tar")).is_none());
    let err = nodes::nothing_advertised(kubeconfig.context.as_deref());
    assert_eq!(err.exit_code(), ExitCode::Load);
    assert_eq!(
        err.message(),
        "no way to get the image into cluster \"lab\": it advertises no local registry (no ConfigMap kube-public/local-registry-hosting) and is no product whose nodes we know how to load into"
    );
    let hints = err.hints().join("\n");
    assert!(hints.contains("(KEP-1755): https://github.com/kubernetes/enhancements/"));
    assert!(hints.contains("--registry HOST[:PORT]"));
    assert!(hints.contains("--load-command 'PROGRAM ARGS... {archive}'"));
}

/// Runs in a child copy of this test binary; the parent reads the child's stdout.
const CHILD_ENV: &str = "NODELOAD_TEST_CHILD_PLAN";

#[test]
fn the_clis_output_never_reaches_our_stdout() {
    if let Some(spec) = std::env::var_os(CHILD_ENV) {
        // The child: load as push will, verbose so that the CLI's lines are echoed on stderr.
        let spec = spec.into_string().unwrap();
        let (path, archive) = spec.split_once('\n').unwrap();
        let plan = LoadPlan::for_product(
            &Product {
                kind: ProductKind::Kind,
                cluster_name: Some("dev".into()),
            },
            Path::new(archive),
        )
        .unwrap()
        .with_env("PATH", path);
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime
            .block_on(nodeload::run(
                &plan,
                Limits::default().node_timeout,
                &Printer::new(1, false, false),
            ))
            .unwrap();
        return;
    }
    let bench = Bench::new();
    let spec = format!(
        "{}\n{}",
        bench.standins.path().to_str().unwrap(),
        bench.archive_arg()
    );
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "nodeload::the_clis_output_never_reaches_our_stdout",
            "--nocapture",
        ])
        .env(CHILD_ENV, spec)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    bench.assert_loaded();
    // ctr import prints `unpacking docker.io/library/myimg:dev ...` on its stdout.
    assert!(
        !stdout.contains("unpacking"),
        "the CLI's stdout leaked:\n{stdout}"
    );
    assert!(
        stderr.contains(&format!("  kind: unpacking {LOADED_NAME}")),
        "stderr:\n{stderr}"
    );
    assert!(
        stderr.contains("loaded the image into kind cluster \"dev\" with `kind load image-archive")
    );
}
