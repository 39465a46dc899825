//! The scene the `ls`, `prune` and registry-contents tests share, written once: a stand-in
//! cluster's kubeconfig in a folder of its own and runs of the binary against it ([`Cluster`],
//! the node stand-ins first on PATH where the nodes are stand-ins), and a real registry that
//! cluster advertises, with the reads the tests check it by ([`RegistryScene`]: skopeo, the
//! registry's tags/list, a HEAD of a manifest).

use std::path::{Path, PathBuf};

use serde_json::Value;
use tempfile::TempDir;

use crate::support::apiserver::{ApiServer, ApiServerBuilder};
use crate::support::fixtures::{self, Image, OCI_INDEX, OCI_MANIFEST};
use crate::support::push::{CONTEXT, clean_run, hosting_yaml};
use crate::support::registry::TestRegistry;
use crate::support::run::{Outcome, Run};
use crate::support::standins::StandIns;

/// A stand-in cluster and a kubeconfig naming it, in a folder that is also the runs' HOME.
pub(crate) struct Cluster {
    api: ApiServer,
    dir: TempDir,
    kubeconfig: PathBuf,
    standins: Option<PathBuf>,
}

impl Cluster {
    /// `api` as context `context` of cluster `cluster`.
    pub(crate) fn new(api: ApiServer, context: &str, cluster: &str) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let kubeconfig = api.write_kubeconfig(dir.path(), context, cluster);
        Self {
            api,
            dir,
            kubeconfig,
            standins: None,
        }
    }

    /// Every run has `standins` first on PATH (the nodes' `docker`, `microk8s`, `minikube`).
    pub(crate) fn standins(mut self, standins: &StandIns) -> Self {
        self.standins = Some(standins.bin_dir());
        self
    }

    /// Every request the API server has answered, as `METHOD PATH`.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.api.requests()
    }

    /// The folder: HOME of the runs, and room for the test's files.
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `kubectl registry ARGS` against the cluster, not yet run.
    pub(crate) fn cmd(&self, args: &[&str]) -> Run {
        let run = clean_run(self.dir.path()).kubeconfig(&self.kubeconfig);
        match &self.standins {
            Some(bin) => run.standins(bin),
            None => run,
        }
        .args(args)
    }

    /// `kubectl registry ARGS` against the cluster.
    pub(crate) fn run(&self, args: &[&str]) -> Outcome {
        self.cmd(args).output()
    }
}

/// A real registry advertised (KEP-1755 ConfigMap) by a stand-in cluster, context `kind-dev`.
pub(crate) struct RegistryScene {
    pub registry: TestRegistry,
    cluster: Cluster,
}

impl RegistryScene {
    /// A registry (deletes on) advertised by a cluster with no workloads.
    pub(crate) fn bare() -> Self {
        Self::new(TestRegistry::start(), |api, _| api)
    }

    /// `registry`, advertised by a cluster whose API server serves what `cluster` adds (it is
    /// handed the registry's host).
    pub(crate) fn new(
        registry: TestRegistry,
        cluster: impl FnOnce(ApiServerBuilder, &str) -> ApiServerBuilder,
    ) -> Self {
        let host = registry.host();
        Self::advertising(registry, &host, cluster)
    }

    /// `registry`, with `host` advertised for it (a proxy's, or its own).
    pub(crate) fn advertising(
        registry: TestRegistry,
        host: &str,
        cluster: impl FnOnce(ApiServerBuilder, &str) -> ApiServerBuilder,
    ) -> Self {
        let api = cluster(ApiServer::builder().hosting_v1(&hosting_yaml(host)), host).start();
        Self {
            registry,
            cluster: Cluster::new(api, CONTEXT, CONTEXT),
        }
    }

    /// The registry alone, its cluster stopped (to be advertised by another).
    pub(crate) fn into_registry(self) -> TestRegistry {
        self.registry
    }

    pub(crate) fn dir(&self) -> &Path {
        self.cluster.dir()
    }

    /// Puts `image` in the registry as `repo:tag` with skopeo; the digest skopeo reads back.
    pub(crate) fn put(&self, image: &Image, repo: &str, tag: &str) -> String {
        let layout = self
            .dir()
            .join(format!("layout-{repo}-{tag}").replace('/', "_"));
        image.layout_dir(&layout, &[tag]);
        self.registry.skopeo_put_layout(&layout, repo, tag)
    }

    /// The digest skopeo reads back for `repo:tag`.
    pub(crate) fn digest(&self, repo: &str, tag: &str) -> String {
        fixtures::sha256(&self.registry.skopeo_raw_manifest(&format!("{repo}:{tag}")))
    }

    /// The registry's own tags/list of `repo`.
    pub(crate) fn tags(&self, repo: &str) -> Vec<String> {
        self.registry.tags(repo)
    }

    /// The status of `HEAD /v2/<repo>/manifests/<digest>` (an image manifest or an index).
    pub(crate) fn manifest_status(&self, repo: &str, digest: &str) -> u16 {
        let accept = format!("{OCI_MANIFEST}, {OCI_INDEX}");
        self.registry
            .request_with(
                "HEAD",
                &format!("/v2/{repo}/manifests/{digest}"),
                &[("Accept", &accept)],
            )
            .status
    }

    /// config + layers of `repo:tag`, as the manifest skopeo reads back declares them.
    pub(crate) fn manifest_size(&self, repo: &str, tag: &str) -> u64 {
        let manifest: Value =
            serde_json::from_slice(&self.registry.skopeo_raw_manifest(&format!("{repo}:{tag}")))
                .expect("a JSON manifest");
        let size = |descriptor: &Value| descriptor["size"].as_u64().expect("a size");
        size(&manifest["config"])
            + manifest["layers"]
                .as_array()
                .expect("layers")
                .iter()
                .map(size)
                .sum::<u64>()
    }

    /// `kubectl registry ARGS` against the cluster.
    pub(crate) fn run(&self, args: &[&str]) -> Outcome {
        self.cluster.run(args)
    }

    /// `kubectl registry ARGS` with `standins` first on PATH (the registry's container).
    pub(crate) fn run_with(&self, args: &[&str], standins: &StandIns) -> Outcome {
        self.cluster
            .cmd(args)
            .standins(&standins.bin_dir())
            .output()
    }
}

/// A `prune -o json` report's kept tags and why each was kept, in the report's order.
/// The digests of a prune report's `deleted`, in order.
pub(crate) fn deleted_digests(report: &Value) -> Vec<&str> {
    report["deleted"]
        .as_array()
        .expect("a deleted list")
        .iter()
        .map(|d| d["digest"].as_str().expect("a digest"))
        .collect()
}

pub(crate) fn kept_reasons(report: &Value) -> Vec<(String, String)> {
    let text = |value: &Value| value.as_str().expect("a string").to_string();
    report["kept"]
        .as_array()
        .expect("a kept list")
        .iter()
        .map(|k| (text(&k["tag"]), text(&k["reason"])))
        .collect()
}
