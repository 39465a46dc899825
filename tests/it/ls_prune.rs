//! `kubectl registry ls` and `prune` against the real registry (deletes on and off), a stand-in
//! API server serving pods and workloads (a Deployment scaled to 0 pinning a digest, a 403 on
//! workloads), and kind nodes of real containerd. Images are put in the registry by skopeo;
//! what is left is read back by skopeo and the registry's own tags/list.

use std::path::PathBuf;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::apiserver::{ApiServer, ApiServerBuilder};
use crate::support::fixtures::{self, Image};
use crate::support::push::{CONTEXT, Outcome, RUNTIME_HOST, clean_cmd, hosting_yaml};
use crate::support::registry::TestRegistry;

/// A registry advertised by a cluster whose API server serves what `cluster` adds.
struct Lab {
    registry: TestRegistry,
    _api: ApiServer,
    dir: TempDir,
    kubeconfig: PathBuf,
}

impl Lab {
    fn new(
        registry: TestRegistry,
        cluster: impl FnOnce(ApiServerBuilder, &str) -> ApiServerBuilder,
    ) -> Self {
        let host = registry.host();
        let api = cluster(ApiServer::builder().hosting_v1(&hosting_yaml(&host)), &host).start();
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = api.write_kubeconfig(dir.path(), CONTEXT, CONTEXT);
        Self {
            registry,
            _api: api,
            dir,
            kubeconfig,
        }
    }

    /// Puts `image` in the registry as `repo:tag` with skopeo; its manifest digest.
    fn put(&self, image: &Image, repo: &str, tag: &str) -> String {
        let layout = self
            .dir
            .path()
            .join(format!("layout-{repo}-{tag}").replace('/', "_"));
        image.layout_dir(&layout, &[tag]);
        let output = std::process::Command::new("skopeo")
            .args([
                "copy",
                "--quiet",
                "--dest-tls-verify=false",
                &format!("oci:{}:{tag}", layout.display()),
                &format!("docker://{}/{repo}:{tag}", self.registry.host()),
            ])
            .output()
            .expect("running skopeo");
        assert!(
            output.status.success(),
            "skopeo copy: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        self.digest(repo, tag)
    }

    /// The digest skopeo reads back for `repo:tag`.
    fn digest(&self, repo: &str, tag: &str) -> String {
        fixtures::sha256(&self.registry.skopeo_raw_manifest(&format!("{repo}:{tag}")))
    }

    /// The registry's own `tags/list`, sorted.
    fn tags(&self, repo: &str) -> Vec<String> {
        let answer = self.registry.get(&format!("/v2/{repo}/tags/list"));
        if answer.status == 404 {
            return Vec::new();
        }
        let listed: Value = serde_json::from_slice(&answer.body).unwrap();
        let mut tags: Vec<String> = listed["tags"]
            .as_array()
            .map(|tags| {
                tags.iter()
                    .map(|t| t.as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default();
        tags.sort();
        tags
    }

    fn run(&self, args: &[&str]) -> Outcome {
        let output = clean_cmd(self.dir.path())
            .env("KUBECONFIG", &self.kubeconfig)
            .args(args)
            .output()
            .expect("running kubectl-registry");
        let redact = |bytes: Vec<u8>| {
            crate::support::apiserver::redact_ports(&String::from_utf8(bytes).unwrap())
        };
        Outcome {
            code: output.status.code().expect("not killed"),
            stdout: redact(output.stdout),
            stderr: redact(output.stderr),
        }
    }
}

/// A small image whose config says it was created at `created`.
fn image(seed: u64, created: Option<&str>) -> Image {
    Image::with_layers(seed, "linux/amd64", &[40 << 10, 20 << 10]).created(created)
}

/// config + layers, as the manifest skopeo reads back declares them.
fn manifest_size(lab: &Lab, repo: &str, tag: &str) -> u64 {
    let manifest: Value =
        serde_json::from_slice(&lab.registry.skopeo_raw_manifest(&format!("{repo}:{tag}")))
            .unwrap();
    manifest["config"]["size"].as_u64().unwrap()
        + manifest["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["size"].as_u64().unwrap())
            .sum::<u64>()
}

#[test]
fn ls_shows_each_tag_with_its_digest_size_created_and_users() {
    let registry = TestRegistry::start();
    let lab_host = registry.host();
    // The digest the scaled-to-0 Deployment pins is known only once v1 is in: put first.
    let staging = Lab::new(registry, |api, _| api);
    let v1 = staging.put(&image(1, Some("2024-01-01T00:00:00Z")), "app", "v1");
    let v2 = staging.put(&image(2, Some("2024-02-01T00:00:00Z")), "app", "v2");
    staging.put(&image(3, None), "tools/cli", "latest");
    let Lab { registry, dir, .. } = staging;
    let lab = Lab::new(registry, |api, host| {
        api.pod(
            "web",
            "web-7d9f",
            "dev-control-plane",
            &[&format!("{RUNTIME_HOST}/app:v2")],
            &[&format!("{RUNTIME_HOST}/app@{v2}")],
        )
        .workload(
            "Deployment",
            "batch",
            "old-web",
            &[&format!("{host}/app@{v1}")],
            0,
        )
        .workload(
            "CronJob",
            "ops",
            "nightly",
            &["docker.io/library/app:v1"],
            1,
        )
    });
    drop(dir);
    assert_eq!(lab_host, lab.registry.host());

    let out = lab.run(&["ls", "-o", "json"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    assert_eq!(
        out.json(),
        json!([
            {"repository": "app", "tag": "v1", "digest": v1, "size": manifest_size(&lab, "app", "v1"),
             "created": "2024-01-01T00:00:00Z", "inUseBy": ["Deployment/batch/old-web"]},
            {"repository": "app", "tag": "v2", "digest": v2, "size": manifest_size(&lab, "app", "v2"),
             "created": "2024-02-01T00:00:00Z", "inUseBy": ["Pod/web/web-7d9f"]},
            {"repository": "tools/cli", "tag": "latest", "digest": lab.digest("tools/cli", "latest"),
             "size": manifest_size(&lab, "tools/cli", "latest"), "created": null, "inUseBy": []},
        ])
    );

    assert_eq!(lab.tags("app"), ["v1", "v2"]);
    let out = lab.run(&["ls", "app"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    assert!(
        lines[0].starts_with("REPOSITORY   TAG   DIGEST"),
        "{}",
        out.stdout
    );
    assert!(
        lines[1].contains(&v1[..19]) && lines[1].ends_with("Deployment/batch/old-web"),
        "{}",
        out.stdout
    );
    assert!(
        lines[2].contains("2024-02-01T00:00:00Z") && lines[2].ends_with("Pod/web/web-7d9f"),
        "{}",
        out.stdout
    );
}

#[test]
fn ls_follows_the_catalog_across_pages() {
    let lab = Lab::new(TestRegistry::start(), |api, _| api);
    let first = lab.put(&image(4, None), "r000", "t");
    let manifest = lab.registry.skopeo_raw_manifest("r000:t");
    let parsed: Value = serde_json::from_slice(&manifest).unwrap();
    let blobs: Vec<String> = std::iter::once(&parsed["config"])
        .chain(parsed["layers"].as_array().unwrap())
        .map(|d| d["digest"].as_str().unwrap().to_string())
        .collect();
    // 150 repositories: two pages of the catalog at 100 a page.
    for i in 1..150 {
        let repo = format!("r{i:03}");
        for blob in &blobs {
            let mounted = lab.registry.request_with_body(
                "POST",
                &format!("/v2/{repo}/blobs/uploads/?mount={blob}&from=r000"),
                &[],
                &[],
            );
            assert_eq!(mounted.status, 201, "mount into {repo}");
        }
        let put = lab.registry.request_with_body(
            "PUT",
            &format!("/v2/{repo}/manifests/t"),
            &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")],
            &manifest,
        );
        assert_eq!(put.status, 201, "manifest into {repo}");
    }
    let out = lab.run(&["ls", "-o", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows = out.json();
    let repos: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["repository"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..150).map(|i| format!("r{i:03}")).collect();
    assert_eq!(repos, expected);
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .all(|r| r["digest"] == first.as_str())
    );
}

#[test]
fn ls_says_when_the_workloads_cannot_be_read_and_still_lists() {
    let lab = Lab::new(TestRegistry::start(), |api, _| api.forbid("deployments"));
    lab.put(&image(5, None), "app", "v1");
    let out = lab.run(&["ls", "-o", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()[0]["inUseBy"], Value::Null);
    assert_eq!(
        out.stderr,
        "warning: which workloads use the images is not shown: listing deployments.apps in all namespaces is forbidden\n"
    );
}
