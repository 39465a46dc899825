//! The bench the push tests share: a real registry, a stand-in API server advertising it the
//! way kind's local-registry script does, a kubeconfig, the built binary with a clean
//! environment, and checks of what landed (read back by skopeo, pulled by a real containerd).

use std::io::Read;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use base64::Engine as _;
use serde_json::Value;
use tempfile::TempDir;

use crate::support::apiserver::{ApiServer, ApiServerBuilder, StandInNode};
use crate::support::containerd::Containerd;
use crate::support::env::clean_env;
use crate::support::fixtures::{self, Image};
use crate::support::registry::TestRegistry;
use crate::support::run::Run;

/// The name pods use for the registry, as kind's script advertises it.
pub(crate) const RUNTIME_HOST: &str = "kind-registry:5000";
pub(crate) const HELP: &str = "https://kind.sigs.k8s.io/docs/user/local-registry/";
pub(crate) const CONTEXT: &str = "kind-dev";

pub(crate) use crate::support::run::Outcome;

/// A registry advertised by a cluster through the KEP-1755 ConfigMap, and a temp dir for archives.
pub(crate) struct Bench {
    pub registry: TestRegistry,
    pub api: ApiServer,
    pub dir: TempDir,
    pub kubeconfig: PathBuf,
}

impl Bench {
    pub(crate) fn new() -> Self {
        Self::with_registry(TestRegistry::start())
    }

    pub(crate) fn with_registry(registry: TestRegistry) -> Self {
        let host = registry.host();
        Self::advertising(registry, &host)
    }

    /// The ConfigMap advertises `host` as where to push, whatever the registry's own address.
    pub(crate) fn advertising(registry: TestRegistry, host: &str) -> Self {
        let api = ApiServer::builder().hosting_v1(&hosting_yaml(host)).start();
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = api.write_kubeconfig(dir.path(), CONTEXT, CONTEXT);
        Self {
            registry,
            api,
            dir,
            kubeconfig,
        }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The binary, clean environment, pointed at the bench's kubeconfig.
    pub(crate) fn cmd(&self) -> Run {
        clean_run(self.dir.path()).kubeconfig(&self.kubeconfig)
    }

    /// `kubectl registry push ARGS...`
    pub(crate) fn push(&self, args: &[&str]) -> Outcome {
        self.cmd().arg("push").args(args).output()
    }

    /// Runs `run`; what it printed, redacted.
    pub(crate) fn run(&self, run: Run) -> Outcome {
        run.output()
    }

    /// The manifest stored under `repo:tag`, as skopeo reads it back, and its digest.
    pub(crate) fn landed(&self, repo_and_tag: &str) -> (Vec<u8>, String) {
        let bytes = self.registry.skopeo_raw_manifest(repo_and_tag);
        let digest = fixtures::sha256(&bytes);
        (bytes, digest)
    }

    /// Asserts `outcome` is a clean push whose stdout is exactly the runtime ref of what
    /// landed under `repo:tag`, that every blob the manifest names is there, and returns the
    /// manifest as JSON.
    pub(crate) fn assert_pushed(
        &self,
        outcome: &Outcome,
        repo: &str,
        tag: &str,
    ) -> (String, Value) {
        outcome.assert_clean_success();
        self.assert_landed(outcome, repo, tag)
    }

    /// [`Bench::assert_pushed`] but for stderr, which may hold warnings: exit 0, stdout exactly
    /// the runtime ref of what landed, every blob there; the manifest as JSON.
    pub(crate) fn assert_landed(
        &self,
        outcome: &Outcome,
        repo: &str,
        tag: &str,
    ) -> (String, Value) {
        assert_eq!(outcome.code, 0, "{outcome:?}");
        let (bytes, digest) = self.landed(&format!("{repo}:{tag}"));
        let reference = format!("{RUNTIME_HOST}/{repo}:{tag}@{digest}");
        assert_eq!(outcome.stdout, format!("{reference}\n"));
        let manifest: Value = serde_json::from_slice(&bytes).expect("manifest JSON");
        self.assert_blobs_present(repo, &manifest);
        (reference, manifest)
    }

    /// Every blob a manifest (or, for an index, each child manifest) names is in `repo`.
    pub(crate) fn assert_blobs_present(&self, repo: &str, manifest: &Value) {
        if let Some(children) = manifest["manifests"].as_array() {
            for child in children {
                let digest = child["digest"].as_str().expect("child digest");
                let bytes = self.manifest_by_digest(repo, digest);
                assert_eq!(fixtures::sha256(&bytes), digest, "child manifest bytes");
                let child: Value = serde_json::from_slice(&bytes).expect("child manifest JSON");
                self.assert_blobs_present(repo, &child);
            }
            return;
        }
        let config = manifest["config"]["digest"]
            .as_str()
            .expect("config digest");
        assert_eq!(self.registry.blob_status(repo, config), 200, "config blob");
        // Go writes no layers as `null`.
        let layers = match &manifest["layers"] {
            Value::Null => &Vec::new(),
            layers => layers.as_array().expect("layers"),
        };
        for layer in layers {
            let digest = layer["digest"].as_str().expect("layer digest");
            assert_eq!(
                self.registry.blob_status(repo, digest),
                200,
                "layer {digest}"
            );
        }
    }

    /// `GET /v2/<repo>/manifests/<digest>` accepting every manifest type.
    pub(crate) fn manifest_by_digest(&self, repo: &str, digest: &str) -> Vec<u8> {
        let answer = self.registry.request_with(
            "GET",
            &format!("/v2/{repo}/manifests/{digest}"),
            &[("Accept", ACCEPT_MANIFESTS)],
        );
        assert_eq!(answer.status, 200, "GET manifest {digest} in {repo}");
        answer.body
    }

    /// The HTTP status of `GET /v2/<repo>/manifests/<tag>`: 404 once nothing was tagged.
    pub(crate) fn tag_status(&self, repo: &str, tag: &str) -> u16 {
        self.registry
            .request_with(
                "GET",
                &format!("/v2/{repo}/manifests/{tag}"),
                &[("Accept", ACCEPT_MANIFESTS)],
            )
            .status
    }

    /// Asserts that `repo:tag` is not in the registry, by our own GET and by skopeo.
    pub(crate) fn assert_not_tagged(&self, repo: &str, tag: &str) {
        assert_eq!(self.tag_status(repo, tag), 404, "{repo}:{tag} was tagged");
        let inspect = std::process::Command::new("skopeo")
            .args(["inspect", "--raw", "--tls-verify=false"])
            .arg(format!("docker://{}/{repo}:{tag}", self.registry.host()))
            .output()
            .expect("running skopeo");
        assert!(!inspect.status.success(), "skopeo found {repo}:{tag}");
    }

    /// Every blob file in the registry's storage, as its bytes' sha256 and, when it is gzip or
    /// zstd, its uncompressed content's sha256.
    pub(crate) fn stored_blob_contents(&self) -> Vec<(String, Option<String>)> {
        let mut found = Vec::new();
        let root = self.registry.data_dir().join("docker/registry/v2/blobs");
        walk(&root, &mut |path| {
            if path.file_name().is_some_and(|name| name == "data") {
                let bytes = std::fs::read(path).expect("reading a stored blob");
                found.push((fixtures::sha256(&bytes), uncompressed_sha256(&bytes)));
            }
        });
        found
    }
}

fn walk(dir: &Path, visit: &mut dyn FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, visit);
        } else {
            visit(&path);
        }
    }
}

/// The sha256 of `bytes` decompressed, when they are gzip or zstd.
pub(crate) fn uncompressed_sha256(bytes: &[u8]) -> Option<String> {
    let mut out = Vec::new();
    match bytes {
        [0x1f, 0x8b, ..] => flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .ok()?,
        [0x28, 0xb5, 0x2f, 0xfd, ..] => zstd::stream::read::Decoder::new(bytes)
            .ok()?
            .read_to_end(&mut out)
            .ok()?,
        _ => return None,
    };
    Some(fixtures::sha256(&out))
}

pub(crate) const ACCEPT_MANIFESTS: &str = "application/vnd.oci.image.manifest.v1+json, \
     application/vnd.oci.image.index.v1+json, \
     application/vnd.docker.distribution.manifest.v2+json, \
     application/vnd.docker.distribution.manifest.list.v2+json";

/// `localRegistryHosting.v1` as kind's local-registry script writes it, pushing to `host`.
pub(crate) fn hosting_yaml(host: &str) -> String {
    format!(
        "host: \"{host}\"\nhostFromContainerRuntime: \"{RUNTIME_HOST}\"\n\
         hostFromClusterNetwork: \"{RUNTIME_HOST}\"\nhelp: \"{HELP}\"\n"
    )
}

/// A push report's `[blobsPushed, bytesPushed, blobsSkipped, bytesSkipped]`.
pub(crate) fn counts(report: &Value) -> [u64; 4] {
    ["blobsPushed", "bytesPushed", "blobsSkipped", "bytesSkipped"]
        .map(|k| report[k].as_u64().expect("a count in the report"))
}

/// Blob sizes of a manifest: the config's, then each layer's.
pub(crate) fn blob_sizes(manifest: &Value) -> Vec<u64> {
    std::iter::once(&manifest["config"])
        .chain(manifest["layers"].as_array().expect("layers"))
        .map(|d| d["size"].as_u64().expect("a size"))
        .collect()
}

/// The media type of each layer a manifest names.
pub(crate) fn layer_media_types(manifest: &Value) -> Vec<&str> {
    manifest["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .map(|layer| layer["mediaType"].as_str().expect("a layer's mediaType"))
        .collect()
}

/// A cluster advertising `host` as kind's script does, its one node `stand-in-node`, and
/// Deployment default/web running `kind-registry:5000/myimg:dev` in `replicas` pods.
pub(crate) fn cluster_with_web(host: &str, replicas: i32) -> ApiServerBuilder {
    ApiServer::builder()
        .hosting_v1(&hosting_yaml(host))
        .node(StandInNode::new("stand-in-node"))
        .workload(
            "Deployment",
            "default",
            "web",
            &[&format!("{RUNTIME_HOST}/myimg:dev")],
            replicas,
        )
}

/// A `DOCKER_CONFIG` dir whose config.json holds `user:password` for `host`.
pub(crate) fn docker_config(
    bench: &Bench,
    host: &str,
    user: &str,
    password: &str,
) -> std::path::PathBuf {
    docker_config_in(&bench.path("docker-config"), host, user, password)
}

/// [`docker_config`] at `dir`.
pub(crate) fn docker_config_in(
    dir: &Path,
    host: &str,
    user: &str,
    password: &str,
) -> std::path::PathBuf {
    let dir = dir.to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    std::fs::write(
        dir.join("config.json"),
        serde_json::json!({"auths": {host: {"auth": auth}}}).to_string(),
    )
    .unwrap();
    dir
}

/// The binary with a clean environment: its own HOME and DOCKER_CONFIG, no proxies, no
/// registry or cluster variables.
pub(crate) fn clean_run(home: &Path) -> Run {
    Run::plugin(home).no_docker_config()
}

/// [`clean_run`] as an `assert_cmd` command.
pub(crate) fn clean_cmd(home: &Path) -> Command {
    let binary = assert_cmd::cargo::cargo_bin("kubectl-registry");
    Command::from_std(clean_std_cmd(binary.as_os_str(), home))
}

/// `program` with the clean environment `clean_cmd` gives the binary (to wrap it in a tool).
pub(crate) fn clean_std_cmd(program: &std::ffi::OsStr, home: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    clean_env(&mut cmd, home).env("DOCKER_CONFIG", home.join("no-docker-config"));
    cmd
}

/// A node's container runtime: a real containerd that reaches `kind-registry:5000` through a
/// `hosts.toml` mirror onto the loopback registry (DESIGN section 8).
pub(crate) struct Node {
    pub containerd: Containerd,
    hosts: TempDir,
}

impl Node {
    pub(crate) fn start(registry: &TestRegistry) -> Self {
        Self::start_mirroring(registry, RUNTIME_HOST)
    }

    /// A node whose runtime reaches `registry` as `runtime_host`.
    pub(crate) fn start_mirroring(registry: &TestRegistry, runtime_host: &str) -> Self {
        let hosts = tempfile::tempdir().expect("hosts dir");
        let mirror = hosts.path().join(runtime_host);
        std::fs::create_dir_all(&mirror).expect("creating the mirror dir");
        std::fs::write(
            mirror.join("hosts.toml"),
            format!(
                "server = \"http://{runtime_host}\"\n[host.\"http://{}\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
                registry.host()
            ),
        )
        .expect("writing hosts.toml");
        Self {
            containerd: Containerd::start(),
            hosts,
        }
    }

    /// `ctr images pull [extra] REF` through the mirror; panics with ctr's words on failure.
    pub(crate) fn pull(&self, reference: &str, extra: &[&str]) {
        let hosts = self.hosts.path().to_str().expect("UTF-8 hosts dir");
        let mut args = vec!["images", "pull", "--hosts-dir", hosts];
        args.extend_from_slice(extra);
        args.push(reference);
        let out = self.containerd.ctr(&args);
        assert!(
            out.status.success(),
            "containerd could not pull {reference}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A blob from containerd's content store.
    pub(crate) fn content(&self, digest: &str) -> Vec<u8> {
        let out = self.containerd.ctr(&["content", "get", digest]);
        assert!(
            out.status.success(),
            "containerd has no {digest}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            fixtures::sha256(&out.stdout),
            digest,
            "containerd's {digest}"
        );
        out.stdout
    }

    /// The uncompressed digests of the layers containerd holds for the single-platform
    /// manifest `digest`, each read from its content store and decompressed here.
    pub(crate) fn layer_diff_ids(&self, manifest_digest: &str) -> Vec<String> {
        let manifest: Value =
            serde_json::from_slice(&self.content(manifest_digest)).expect("manifest JSON");
        manifest["layers"]
            .as_array()
            .expect("layers")
            .iter()
            .map(|layer| {
                let digest = layer["digest"].as_str().expect("layer digest");
                let bytes = self.content(digest);
                uncompressed_sha256(&bytes).unwrap_or_else(|| fixtures::sha256(&bytes))
            })
            .collect()
    }

    /// Pulls a single-platform `reference` (`...@sha256:d`) and asserts its layers are
    /// `image`'s, by content.
    pub(crate) fn assert_pulls(&self, reference: &str, image: &Image) {
        self.pull(reference, &[]);
        let digest = reference.rsplit_once('@').expect("a pinned reference").1;
        assert_eq!(self.layer_diff_ids(digest), image.diff_ids());
        let images = self.containerd.images();
        assert!(
            images.iter().any(|name| name == reference),
            "containerd lists {images:?}, not {reference}"
        );
    }
}

impl Bench {
    /// `skopeo copy --all docker://REGISTRY/REPO:TAG oci:DIR`: skopeo fetches every manifest
    /// and blob the tag reaches, verifying each digest, and writes them as an OCI layout.
    /// Returns the digest the layout's `index.json` names: for OCI types, the tag's own digest
    /// (`--preserve-digests`); docker types skopeo must rewrite as OCI for that layout.
    pub(crate) fn read_back_whole(&self, repo_and_tag: &str) -> String {
        let layout = self.path(&format!(
            "read-back-{}",
            repo_and_tag.replace([':', '/'], "-")
        ));
        // A fresh layout: skopeo adds to an existing one, and index.json's first entry must be this.
        let _ = std::fs::remove_dir_all(&layout);
        let (landed, _) = self.landed(repo_and_tag);
        let landed: Value = serde_json::from_slice(&landed).expect("the landed manifest is JSON");
        let oci_typed = landed["mediaType"]
            .as_str()
            .is_none_or(|media_type| media_type.starts_with("application/vnd.oci."));
        let mut skopeo = std::process::Command::new("skopeo");
        skopeo.args(["copy", "--quiet", "--all", "--src-tls-verify=false"]);
        if oci_typed {
            skopeo.arg("--preserve-digests");
        }
        let output = skopeo
            .arg(format!("docker://{}/{repo_and_tag}", self.registry.host()))
            .arg(format!("oci:{}", layout.display()))
            .output()
            .expect("running skopeo");
        assert!(
            output.status.success(),
            "skopeo could not read {repo_and_tag} back whole: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let index: Value = serde_json::from_slice(
            &std::fs::read(layout.join("index.json")).expect("the read-back index.json"),
        )
        .expect("index.json is JSON");
        index["manifests"][0]["digest"]
            .as_str()
            .expect("a manifest in the read-back layout")
            .to_string()
    }
}
