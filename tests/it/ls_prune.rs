//! `kubectl registry ls` and `prune` against the real registry (deletes on and off), a stand-in
//! API server serving pods and workloads (a Deployment scaled to 0 pinning a digest, a 403 on
//! workloads), and kind nodes of real containerd. Images are put in the registry by skopeo;
//! what is left is read back by skopeo and the registry's own tags/list.

use snapbox::str;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::apiserver::{ApiServer, StandInNode};
use crate::support::cluster_scene::{Cluster, RegistryScene, kept_reasons};
use crate::support::containerd::Containerd;
use crate::support::dockerd::Dockerd;
use crate::support::fixtures::{self, Image};
use crate::support::push::RUNTIME_HOST;
use crate::support::registry::{RegistryConfig, TestRegistry};
use crate::support::run::{redact, stdout_of};
use crate::support::standins::StandIns;

/// A small image whose config says it was created at `created`.
fn image(seed: u64, created: Option<&str>) -> Image {
    Image::with_layers(seed, "linux/amd64", &[40 << 10, 20 << 10]).created(created)
}

#[test]
fn ls_shows_each_tag_with_its_digest_size_created_and_users() {
    let registry = TestRegistry::start();
    let lab_host = registry.host();
    // The digest the scaled-to-0 Deployment pins is known only once v1 is in: put first.
    let staging = RegistryScene::new(registry, |api, _| api);
    let v1 = staging.put(&image(1, Some("2024-01-01T00:00:00Z")), "app", "v1");
    let v2 = staging.put(&image(2, Some("2024-02-01T00:00:00Z")), "app", "v2");
    staging.put(&image(3, None), "tools/cli", "latest");
    let registry = staging.into_registry();
    let lab = RegistryScene::new(registry, |api, host| {
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
    assert_eq!(lab_host, lab.registry.host());

    let out = lab.run(&["ls", "-o", "json"]);
    out.assert_stdout(str![[r#"
[
  {
    "repository": "app",
    "tag": "v1",
    "digest": "sha256:[DIGEST]",
    "size": 32235,
    "created": "2024-01-01T00:00:00Z",
    "inUseBy": [
      "Deployment/batch/old-web"
    ]
  },
  {
    "repository": "app",
    "tag": "v2",
    "digest": "sha256:[DIGEST]",
    "size": 32237,
    "created": "2024-02-01T00:00:00Z",
    "inUseBy": [
      "Pod/web/web-7d9f"
    ]
  },
  {
    "repository": "tools/cli",
    "tag": "latest",
    "digest": "sha256:[DIGEST]",
    "size": 32202,
    "created": null,
    "inUseBy": []
  }
]

"#]]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    assert_eq!(
        out.json(),
        json!([
            {"repository": "app", "tag": "v1", "digest": v1, "size": lab.manifest_size("app", "v1"),
             "created": "2024-01-01T00:00:00Z", "inUseBy": ["Deployment/batch/old-web"]},
            {"repository": "app", "tag": "v2", "digest": v2, "size": lab.manifest_size("app", "v2"),
             "created": "2024-02-01T00:00:00Z", "inUseBy": ["Pod/web/web-7d9f"]},
            {"repository": "tools/cli", "tag": "latest", "digest": lab.digest("tools/cli", "latest"),
             "size": lab.manifest_size("tools/cli", "latest"), "created": null, "inUseBy": []},
        ])
    );

    assert_eq!(lab.tags("app"), ["v1", "v2"]);
    let out = lab.run(&["ls", "app"]);
    out.assert_stdout(str![[r#"
REPOSITORY   TAG   DIGEST                SIZE    CREATED                IN USE BY
app          v1    sha256:[DIGEST]   32 kB   2024-01-01T00:00:00Z   Deployment/batch/old-web
app          v2    sha256:[DIGEST]   32 kB   2024-02-01T00:00:00Z   Pod/web/web-7d9f

"#]]);
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
    let lab = RegistryScene::new(TestRegistry::start(), |api, _| api);
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
    let lab = RegistryScene::new(TestRegistry::start(), |api, _| api.forbid("deployments"));
    lab.put(&image(5, None), "app", "v1");
    let out = lab.run(&["ls", "-o", "json"]);
    out.assert_stdout(str![[r#"
[
  {
    "repository": "app",
    "tag": "v1",
    "digest": "sha256:[DIGEST]",
    "size": 32203,
    "created": null,
    "inUseBy": null
  }
]

"#]]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()[0]["inUseBy"], Value::Null);
    out.assert_stderr(str![[r#"
warning: which workloads use the images is not shown: listing deployments.apps in all namespaces is forbidden

"#]]);
}

/// `app` with five dated tags, one undated, and an alias of v3; the cluster runs v3 by tag in a
/// Deployment and pins v2 by digest in a Deployment scaled to 0.
struct Pruned {
    lab: RegistryScene,
    digests: std::collections::BTreeMap<&'static str, String>,
}

fn five_versions(config: RegistryConfig, forbid: Option<&str>) -> Pruned {
    let staging = RegistryScene::new(TestRegistry::start_with(config), |api, _| api);
    let mut digests = std::collections::BTreeMap::new();
    for (seed, tag, created) in [
        (11, "v1", Some("2024-01-01T00:00:00Z")),
        (12, "v2", Some("2024-02-01T00:00:00Z")),
        (13, "v3", Some("2024-03-01T00:00:00Z")),
        (14, "v4", Some("2024-04-01T00:00:00Z")),
        (15, "v5", Some("2024-05-01T00:00:00Z")),
        (16, "nodate", None),
    ] {
        digests.insert(tag, staging.put(&image(seed, created), "app", tag));
    }
    let alias = staging.put(&image(13, Some("2024-03-01T00:00:00Z")), "app", "v3-alias");
    assert_eq!(alias, digests["v3"], "the alias is the same manifest");
    let v2 = digests["v2"].clone();
    let registry = staging.into_registry();
    let lab = RegistryScene::new(registry, |api, host| {
        let api = api
            .workload(
                "Deployment",
                "web",
                "web",
                &[&format!("{RUNTIME_HOST}/app:v3")],
                2,
            )
            .workload(
                "Deployment",
                "batch",
                "rollback",
                &[&format!("{host}/app@{v2}")],
                0,
            );
        match forbid {
            Some(resource) => api.forbid(resource),
            None => api,
        }
    });
    Pruned { lab, digests }
}

const ALL_TAGS: [&str; 7] = ["nodate", "v1", "v2", "v3", "v3-alias", "v4", "v5"];
/// What `prune --keep 2` keeps of [`five_versions`] (v3-alias goes with v3).
const KEPT_TAGS: [&str; 5] = ["v2", "v3", "v4", "v5", "nodate"];

/// Asserts skopeo reads each of `tags` of `app` back at the digest it was put with.
#[track_caller]
fn assert_read_back(
    lab: &RegistryScene,
    digests: &std::collections::BTreeMap<&'static str, String>,
    tags: &[&str],
) {
    for tag in tags {
        assert_eq!(
            lab.digest("app", tag),
            digests[tag],
            "skopeo reads {tag} back"
        );
    }
}

#[test]
fn prune_dry_run_says_what_it_would_delete_and_changes_nothing() {
    let Pruned { lab, digests } = five_versions(RegistryConfig::default(), None);
    let out = lab.run(&["prune", "--keep", "2", "--dry-run", "-o", "json"]);
    out.assert_stdout(str![[r#"
{
  "dryRun": true,
  "deleted": [
    {
      "repository": "app",
      "digest": "sha256:[DIGEST]",
      "tags": [
        "v1"
      ],
      "size": 32239
    }
  ],
  "kept": [
    {
      "repository": "app",
      "tag": "nodate",
      "digest": "sha256:[DIGEST]",
      "reason": "no-created-time",
      "inUseBy": []
    },
    {
      "repository": "app",
      "tag": "v2",
      "digest": "sha256:[DIGEST]",
      "reason": "in-use",
      "inUseBy": [
        "Deployment/batch/rollback"
      ]
    },
    {
      "repository": "app",
      "tag": "v3",
      "digest": "sha256:[DIGEST]",
      "reason": "in-use",
      "inUseBy": [
        "Deployment/web/web"
      ]
    },
    {
      "repository": "app",
      "tag": "v3-alias",
      "digest": "sha256:[DIGEST]",
      "reason": "shares-a-kept-digest",
      "inUseBy": []
    },
    {
      "repository": "app",
      "tag": "v4",
      "digest": "sha256:[DIGEST]",
      "reason": "newest",
      "inUseBy": []
    },
    {
      "repository": "app",
      "tag": "v5",
      "digest": "sha256:[DIGEST]",
      "reason": "newest",
      "inUseBy": []
    }
  ],
  "unreferencedBytes": 32239,
  "garbageCollect": null
}

"#]]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    let report = out.json();
    assert_eq!(report["dryRun"], true);
    assert_eq!(
        report["deleted"],
        json!([{"repository": "app", "digest": digests["v1"], "tags": ["v1"],
                "size": lab.manifest_size("app", "v1")}])
    );
    assert_eq!(lab.tags("app"), ALL_TAGS);
    assert_eq!(lab.manifest_status("app", &digests["v1"]), 200);

    let out = lab.run(&["prune", "--keep", "2", "--dry-run"]);
    out.assert_stdout(str![[r#"
would delete app:v1 (sha256:[DIGEST], 32 kB)
would delete 1 manifests, kept 6 tags (2 in use); 32 kB no longer referenced

"#]]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .starts_with(&format!("would delete app:v1 ({}, ", digests["v1"])),
        "{}",
        out.stdout
    );
    assert_eq!(lab.tags("app"), ALL_TAGS);
}

#[test]
fn prune_keeps_the_newest_the_used_and_their_digests_and_deletes_the_rest() {
    let Pruned { lab, digests } = five_versions(RegistryConfig::default(), None);
    let v1_size = lab.manifest_size("app", "v1");
    let out = lab.run(&["prune", "--keep", "2", "-o", "json"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    let report = out.json();
    let kept = kept_reasons(&report);
    let expected: Vec<(String, String)> = [
        ("nodate", "no-created-time"),
        ("v2", "in-use"),
        ("v3", "in-use"),
        ("v3-alias", "shares-a-kept-digest"),
        ("v4", "newest"),
        ("v5", "newest"),
    ]
    .iter()
    .map(|(t, r)| (t.to_string(), r.to_string()))
    .collect();
    assert_eq!(kept, expected);
    assert_eq!(
        report["kept"][1]["inUseBy"],
        json!(["Deployment/batch/rollback"])
    );
    assert_eq!(report["kept"][2]["inUseBy"], json!(["Deployment/web/web"]));
    // v1's own config and layers are referenced by nothing kept.
    assert_eq!(report["deleted"][0]["size"], v1_size);
    assert_eq!(report["unreferencedBytes"], v1_size);

    assert_eq!(
        lab.tags("app"),
        ["nodate", "v2", "v3", "v3-alias", "v4", "v5"]
    );
    assert_eq!(lab.manifest_status("app", &digests["v1"]), 404);
    for tag in KEPT_TAGS {
        assert_eq!(lab.manifest_status("app", &digests[tag]), 200, "{tag}");
    }
    assert_read_back(&lab, &digests, &KEPT_TAGS);

    // Again: nothing more to delete.
    let out = lab.run(&["prune", "--keep", "2"]);
    out.assert_stdout(str![[r#"
deleted 0 manifests, kept 6 tags (2 in use); 0 B no longer referenced

"#]]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .starts_with("deleted 0 manifests, kept 6 tags (2 in use)"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_registry_refusing_deletes_is_a_clear_error_and_nothing_changes() {
    let config = RegistryConfig {
        deletes_disabled: true,
        ..RegistryConfig::default()
    };
    let Pruned { lab, digests } = five_versions(config, None);
    let out = lab.run(&["prune", "--keep", "2"]);
    assert_eq!(out.code, 5, "{}", out.stdout);
    out.assert_stdout(str![]);
    assert!(
        out.stderr.starts_with(&format!(
            "error: the registry {} does not allow deletes; nothing was deleted\n",
            redact(&lab.registry.host())
        )),
        "{}",
        out.stderr
    );
    out.assert_stderr(str![[r#"
error: the registry 127.0.0.1:[PORT] does not allow deletes; nothing was deleted
caused by: the registry answered 405 Method Not Allowed: UNSUPPORTED: The operation is unsupported.
hint: a distribution registry deletes only with storage.delete.enabled: run it with REGISTRY_STORAGE_DELETE_ENABLED=true (kind: docker run ... -e REGISTRY_STORAGE_DELETE_ENABLED=true registry:2), then prune again

"#]]);
    assert_eq!(lab.tags("app"), ALL_TAGS);
    assert_eq!(lab.manifest_status("app", &digests["v1"]), 200);
}

#[test]
fn prune_refuses_when_the_workloads_cannot_be_read_unless_told_to_ignore_them() {
    let Pruned { lab, digests } = five_versions(RegistryConfig::default(), Some("pods"));
    let out = lab.run(&["prune", "--keep", "2"]);
    assert_eq!(out.code, 3, "{}", out.stdout);
    out.assert_stdout(str![]);
    assert!(
        out.stderr.starts_with(
            "error: prune must know which images the cluster's workloads use, but listing pods in all namespaces is forbidden\n"
        ),
        "{}",
        out.stderr
    );
    out.assert_stderr(str![[r#"
error: prune must know which images the cluster's workloads use, but listing pods in all namespaces is forbidden
caused by: pods is forbidden: User "system:serviceaccount:default:dev" cannot list resource "pods" in API group "" at the cluster scope
hint: ask for `list` on pods and on deployments, statefulsets, daemonsets, replicasets (apps) and jobs, cronjobs (batch) in all namespaces (`kubectl auth can-i list pods --all-namespaces`), or pass --ignore-usage to go on without knowing

"#]]);
    assert_eq!(lab.tags("app"), ALL_TAGS);

    let out = lab.run(&["prune", "--keep", "2", "--ignore-usage", "-o", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.assert_stderr(str![[r#"
warning: --ignore-usage: the workloads are not read; images they use may be removed

"#]]);
    // Without the workloads, v2 and v3 (and its alias) go with v1.
    assert_eq!(lab.tags("app"), ["nodate", "v4", "v5"]);
    assert_eq!(lab.manifest_status("app", &digests["v3"]), 404);
}

/// `du -sk DIR` in bytes, as the registry container's `du` answers `--gc`.
fn disk_usage(dir: &std::path::Path) -> u64 {
    let out = std::process::Command::new("du")
        .arg("-sk")
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace()
        .next()
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

/// Stand-ins with `lab`'s registry as the container `kind-registry` (`docker exec` runs its
/// `registry garbage-collect`); the node they run on must outlive them.
fn registry_container(lab: &RegistryScene) -> (Containerd, StandIns) {
    let node = Containerd::start();
    let standins = StandIns::new(&node);
    standins.add_registry_container(
        "kind-registry",
        &lab.registry.config_file(),
        &lab.registry.data_dir(),
    );
    (node, standins)
}

/// Where the registry's filesystem storage keeps a blob.
fn blob_file(lab: &RegistryScene, digest: &str) -> PathBuf {
    let hex = digest.strip_prefix("sha256:").unwrap();
    lab.registry.data_dir().join(format!(
        "docker/registry/v2/blobs/sha256/{}/{hex}/data",
        &hex[..2]
    ))
}

/// The config and layer digests of `repo:tag`.
fn blobs_of(lab: &RegistryScene, repo: &str, tag: &str) -> Vec<String> {
    let manifest: Value =
        serde_json::from_slice(&lab.registry.skopeo_raw_manifest(&format!("{repo}:{tag}")))
            .unwrap();
    std::iter::once(&manifest["config"])
        .chain(manifest["layers"].as_array().unwrap())
        .map(|d| d["digest"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn gc_runs_the_registrys_own_garbage_collect_in_its_container_and_frees_the_disk() {
    let Pruned { lab, digests } = five_versions(RegistryConfig::default(), None);
    let (_node, standins) = registry_container(&lab);
    let v1_blobs = blobs_of(&lab, "app", "v1");
    let v2_blobs = blobs_of(&lab, "app", "v2");
    let v1_size = lab.manifest_size("app", "v1");
    let before = disk_usage(&lab.registry.data_dir());

    // Deleting alone frees nothing: the blobs stay until the garbage-collect.
    let out = lab.run(&["prune", "--keep", "2"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.assert_stdout(str![[r#"
deleted app:v1 (sha256:[DIGEST], 32 kB)
deleted 1 manifests, kept 6 tags (2 in use); 32 kB no longer referenced
the registry frees them only in its garbage-collect: prune --gc runs it in kind-registry, or run `docker exec kind-registry registry garbage-collect --delete-untagged /etc/docker/registry/config.yml` (then restart it)

"#]]);
    assert!(v1_blobs.iter().all(|blob| blob_file(&lab, blob).exists()));
    let after_delete = disk_usage(&lab.registry.data_dir());
    assert!(
        after_delete + 64 * 1024 > before,
        "{before} -> {after_delete}"
    );

    let out = lab.run_with(&["prune", "--keep", "2", "--gc", "-o", "json"], &standins);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let after = disk_usage(&lab.registry.data_dir());
    let gc = &out.json()["garbageCollect"];
    assert_eq!(gc["container"], "kind-registry");
    assert_eq!(gc["bytesBefore"], after_delete);
    assert_eq!(gc["bytesAfter"], after);
    assert_eq!(gc["freedBytes"], after_delete - after);
    assert_eq!(gc["restarted"], true);
    // v1's config and layers, and its manifest (stored as a blob too).
    assert_eq!(gc["blobsDeleted"], v1_blobs.len() + 1);
    // What was freed is at least v1's config and layers; they are gone, the kept ones are not.
    assert!(
        after_delete - after >= v1_size,
        "freed {} < {v1_size}",
        after_delete - after
    );
    for blob in &v1_blobs {
        assert!(!blob_file(&lab, blob).exists(), "{blob} still on disk");
    }
    for blob in &v2_blobs {
        assert!(
            blob_file(&lab, blob).exists(),
            "{blob} of a kept tag was freed"
        );
    }
    assert_read_back(&lab, &digests, &KEPT_TAGS);
    let calls = standins.calls();
    assert!(
        calls.contains(
            &[
                "docker",
                "exec",
                "kind-registry",
                "registry",
                "garbage-collect",
                "--delete-untagged",
                "/etc/docker/registry/config.yml"
            ]
            .map(str::to_string)
            .to_vec()
        ),
        "{calls:?}"
    );
    assert_eq!(
        calls.last().unwrap(),
        &["docker", "restart", "kind-registry"]
    );
    eprintln!(
        "measured: {} bytes before prune, {after_delete} after the deletes, {after} after garbage-collect ({} freed; v1's blobs {v1_size} bytes)",
        before,
        after_delete - after
    );
}

/// Builds of `myimg:dev` from `seeds`, the i-th created on the first of month i + 1 of 2024
/// (`pretty`: configs with newlines).
fn builds(seeds: &[u64], pretty: bool) -> Vec<Image> {
    seeds
        .iter()
        .enumerate()
        .map(|(i, seed)| {
            let build = image(*seed, Some(&format!("2024-0{}-01T00:00:00Z", i + 1)));
            if pretty { build.pretty_config() } else { build }
        })
        .collect()
}

/// The content tag push gives `build` in a node: `dev-` and 12 hex digits of its config digest.
fn content_tag(build: &Image) -> String {
    format!("dev-{}", &build.config_digest()["sha256:".len()..][..12])
}

/// Pushes each of `builds` as `myimg:dev` through `cluster` (a node-load), asserting the ref
/// each prints.
#[track_caller]
fn push_builds(cluster: &Cluster, builds: &[Image]) {
    for (i, build) in builds.iter().enumerate() {
        let archive = cluster.dir().join(format!("build-{i}.tar"));
        build.write(fixtures::Format::DockerLegacy, &archive, &["myimg:dev"]);
        let out = cluster.run(&["push", archive.to_str().unwrap()]);
        assert_eq!(
            out.stdout,
            format!("myimg:{}\n", content_tag(build)),
            "{}",
            out.stderr
        );
    }
}

/// The row of `ls -o json`'s `rows` that `matches`.
#[track_caller]
fn row_where(rows: &Value, matches: impl Fn(&Value) -> bool) -> &Value {
    let rows = rows.as_array().expect("ls -o json is a list");
    rows.iter()
        .find(|row| matches(row))
        .unwrap_or_else(|| panic!("no such row in {rows:?}"))
}

/// The string fields `names` of each row of `ls -o json`'s `rows`, in the rows' order.
fn columns(rows: &Value, names: &[&str]) -> Vec<Vec<String>> {
    let field = |row: &Value, name: &str| row[name].as_str().expect("a string field").to_string();
    rows.as_array()
        .expect("ls -o json is a list")
        .iter()
        .map(|row| names.iter().map(|name| field(row, name)).collect())
        .collect()
}

/// The content tags (`myimg:dev-...`) `node`'s containerd holds, sorted.
fn held_by(node: &Containerd) -> Vec<String> {
    let mut names: Vec<String> = node
        .images()
        .into_iter()
        .filter(|n| n.contains(":dev-"))
        .collect();
    names.sort();
    names
}

#[test]
fn prune_nodes_removes_old_content_tags_keeping_the_newest_and_the_used() {
    let node =
        StandInNode::new("dev-control-plane").provider_id("kind://docker/dev/dev-control-plane");
    prunes_the_content_tags_of("kind-dev", "kind-dev", "dev-control-plane", node, true);
}

#[test]
fn prune_nodes_of_k3d_reaches_the_nodes_it_lists() {
    let node = StandInNode::new("k3d-dev-server-0")
        .provider_id("k3s://k3d-dev-server-0")
        .label("node.kubernetes.io/instance-type", "k3s");
    prunes_the_content_tags_of("k3d-dev", "k3d-dev", "k3d-dev-server-0", node, true);
}

#[test]
fn prune_nodes_of_microk8s_goes_through_its_own_ctr() {
    let node = StandInNode::new("laptop").label("microk8s.io/cluster", "true");
    prunes_the_content_tags_of("microk8s", "microk8s-cluster", "laptop", node, false);
}

/// Four builds of `myimg:dev` pushed (node-load) into a cluster whose node is a real
/// containerd, the oldest used by a pod: `ls` lists the content tags, `prune --keep 2` removes
/// the second oldest only.
fn prunes_the_content_tags_of(
    context: &str,
    cluster: &str,
    node_name: &str,
    api_node: StandInNode,
    container: bool,
) {
    // Four builds of myimg:dev loaded by push into a kind node of real containerd.
    let builds = builds(&[21, 22, 23, 24], false);
    let node = Containerd::start();
    let standins = StandIns::new(&node);
    if container {
        standins.add_node(node_name, &node);
    }
    let api = ApiServer::builder()
        .node(api_node)
        .pod(
            "default",
            "app-1",
            node_name,
            &[&format!("myimg:{}", content_tag(&builds[0]))],
            &[""],
        )
        .start();
    let cluster = Cluster::new(api, context, cluster).standins(&standins);
    push_builds(&cluster, &builds);
    let content_names = |builds: &[&Image]| -> Vec<String> {
        builds
            .iter()
            .map(|b| format!("docker.io/library/myimg:{}", content_tag(b)))
            .collect()
    };
    let held = || held_by(&node);
    let mut all = content_names(&builds.iter().collect::<Vec<_>>());
    all.sort();
    assert_eq!(held(), all);

    let asked_before = cluster.requests().len();
    let out = cluster.run(&["ls", "-o", "json"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    let asked = cluster.requests().split_off(asked_before);
    let listed_nodes = asked.iter().filter(|r| *r == "GET /api/v1/nodes").count();
    assert_eq!(
        listed_nodes, 1,
        "ls lists the Nodes once (discovery and the node reach share the list): {asked:#?}"
    );
    let rows = out.json();
    assert_eq!(rows.as_array().unwrap().len(), 4, "{rows}");
    let v1 = row_where(&rows, |r| r["tag"] == content_tag(&builds[0]).as_str());
    assert_eq!(v1["node"], node_name);
    assert_eq!(v1["repository"], "myimg");
    assert_eq!(v1["created"], "2024-01-01T00:00:00Z");
    assert_eq!(v1["inUseBy"], json!(["Pod/default/app-1"]));

    let out = cluster.run(&["prune", "--keep", "2", "--dry-run"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        format!(
            "would remove docker.io/library/myimg:{} from {node_name}\nwould remove 1 content tags, kept 3 (1 in use); each node's containerd frees what no image names\n",
            content_tag(&builds[1])
        )
    );
    assert_eq!(held(), all);

    let out = cluster.run(&["prune", "--keep", "2"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut left = content_names(&[&builds[0], &builds[2], &builds[3]]);
    left.sort();
    assert_eq!(held(), left, "v1 is used, v3 and v4 are the newest");
    let removal = standins
        .calls()
        .into_iter()
        .find(|call| call.iter().any(|arg| arg == "rm"))
        .expect("a removal was run");
    let through: Vec<&str> = if container {
        vec![
            "docker", "exec", node_name, "ctr", "-n", "k8s.io", "images", "rm",
        ]
    } else {
        vec!["microk8s", "ctr", "-n", "k8s.io", "images", "rm"]
    };
    assert_eq!(removal[..through.len()], through, "{removal:?}");
    assert!(
        node.images()
            .contains(&"docker.io/library/myimg:dev".to_string()),
        "the plain name stays"
    );
}

#[test]
fn an_index_is_sized_over_its_platforms_and_gc_leaves_its_platforms_alone() {
    let lab = RegistryScene::new(TestRegistry::start(), |api, _| api);
    let amd64 = Image::sample_for(31, "linux/amd64");
    let arm64 = Image::sample_for(32, "linux/arm64/v8");
    let archive = lab.dir().join("multi.tar");
    fixtures::write_multi_platform(
        &archive,
        "multi:v1",
        &[&amd64, &arm64],
        &[],
        fixtures::LayerCompression::None,
    );
    stdout_of(
        "skopeo copy of the index into the registry",
        std::process::Command::new("skopeo")
            .args(["copy", "--quiet", "--all", "--dest-tls-verify=false"])
            .arg(format!("oci-archive:{}", archive.display()))
            .arg(format!("docker://{}/multi:v1", lab.registry.host()))
            .output()
            .unwrap(),
    );
    lab.put(&image(33, Some("2023-01-01T00:00:00Z")), "app", "old");
    lab.put(&image(34, Some("2024-01-01T00:00:00Z")), "app", "new");
    let index: Value =
        serde_json::from_slice(&lab.registry.skopeo_raw_manifest("multi:v1")).unwrap();
    let children: Vec<String> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["digest"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(children.len(), 2);
    let platforms_size: u64 = children
        .iter()
        .map(|child| {
            let manifest: Value = serde_json::from_slice(
                &lab.registry.skopeo_raw_manifest(&format!("multi@{child}")),
            )
            .unwrap();
            manifest["config"]["size"].as_u64().unwrap()
                + manifest["layers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l["size"].as_u64().unwrap())
                    .sum::<u64>()
        })
        .sum();

    let out = lab.run(&["ls", "multi", "-o", "json"]);
    out.assert_stdout(str![[r#"
[
  {
    "repository": "multi",
    "tag": "v1",
    "digest": "sha256:[DIGEST]",
    "size": 428508,
    "created": null,
    "inUseBy": []
  }
]

"#]]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()[0]["size"], platforms_size);
    // The fixtures' platforms were made at the epoch, as reproducible builds are: no time.
    assert_eq!(out.json()[0]["created"], Value::Null);

    let (_node, standins) = registry_container(&lab);
    let out = lab.run_with(&["prune", "--keep", "1", "--gc", "-o", "json"], &standins);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.assert_stderr(str![[r#"
warning: garbage-collect runs without --delete-untagged: the registry holds image indexes (or was read only in part), whose platform manifests distribution 2.x would remove with it; what prune deleted is freed all the same

"#]]);
    assert_eq!(out.json()["deleted"][0]["tags"], json!(["old"]));
    assert!(
        standins.calls().iter().any(|call| call.len() > 4
            && call[4] == "garbage-collect"
            && !call.contains(&"--delete-untagged".to_string())),
        "{:?}",
        standins.calls()
    );
    for child in &children {
        assert_eq!(
            lab.registry
                .request_with(
                    "HEAD",
                    &format!("/v2/multi/manifests/{child}"),
                    &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
                )
                .status,
            200,
            "the platform manifest {child} of a kept index must survive the garbage-collect (distribution 2.8 --delete-untagged removes it)"
        );
    }
    stdout_of(
        "every platform reads back: skopeo copy --all from the registry",
        std::process::Command::new("skopeo")
            .args(["copy", "--quiet", "--all", "--src-tls-verify=false"])
            .arg(format!("docker://{}/multi:v1", lab.registry.host()))
            .arg(format!("oci:{}:v1", lab.dir().join("pulled").display()))
            .output()
            .unwrap(),
    );
}

#[test]
fn prune_says_plainly_it_does_not_touch_openshift_image_streams() {
    let api = ApiServer::builder()
        .openshift(
            "image-registry.openshift-image-registry.svc:5000",
            &["default-route-openshift-image-registry.apps-crc.testing"],
        )
        .start();
    let run = Cluster::new(api, "crc-admin", "api-crc-testing:6443").run(&["prune", "--dry-run"]);
    run.assert_stdout(str![]);
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty());
    run.assert_stderr(str![[r#"
error: prune does not prune OpenShift's integrated registry (default-route-openshift-image-registry.apps-crc.testing): its images belong to image streams, which prune does not touch
hint: delete image stream tags with `oc tag -d PROJECT/NAME:TAG` (or `oc delete istag`), then `oc adm prune images --confirm` frees the registry's storage

"#]]);
    let stderr = run.stderr;
    assert!(
        stderr.starts_with(
            "error: prune does not prune OpenShift's integrated registry (default-route-openshift-image-registry.apps-crc.testing): its images belong to image streams, which prune does not touch\n"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("oc adm prune images"), "{stderr}");
}

/// A minikube profile `dev` of two nodes (`dev`, `dev-m02`), each a real containerd reached by
/// `minikube ssh -n NODE -- sudo ctr` under a real terminal, as minikube runs it. Four builds
/// are pushed (minikube image load into both); a fifth only into `dev-m02`. `ls` lists the
/// content tags per node with their created times; `prune --keep 2 --dry-run` changes nothing;
/// `prune --keep 2` removes, per node, what is neither among the two newest nor used.
#[test]
fn prune_nodes_of_minikube_reaches_each_node_through_minikube_ssh() {
    // Configs with newlines: what comes through minikube's terminal must be read back exactly.
    let builds = builds(&[31, 32, 33, 34, 35], true);
    let name_of = |image: &Image| format!("docker.io/library/myimg:{}", content_tag(image));
    let first = Containerd::start();
    let second = Containerd::start();
    let standins = StandIns::new(&first);
    standins.add_node("dev", &first);
    standins.add_node("dev-m02", &second);
    let minikube_node = |name: &str| {
        StandInNode::new(name)
            .label("minikube.k8s.io/name", "dev")
            .runtime("containerd://1.7.23")
    };
    let api = ApiServer::builder()
        .node(minikube_node("dev"))
        .node(minikube_node("dev-m02"))
        .pod(
            "default",
            "app-1",
            "dev",
            &[&format!("myimg:{}", content_tag(&builds[0]))],
            &[""],
        )
        .start();
    let cluster = Cluster::new(api, "dev", "dev").standins(&standins);
    push_builds(&cluster, &builds[..4]);
    // The fifth build, loaded into the second node only (as a node added later would not
    // have the first four): each node is ranked on its own.
    let archive = cluster.dir().join("build-4.tar");
    builds[4].write(fixtures::Format::DockerLegacy, &archive, &["myimg:dev"]);
    let imported = second.ctr(&[
        "images",
        "import",
        "--all-platforms",
        "--digests",
        archive.to_str().unwrap(),
    ]);
    assert!(imported.status.success(), "{imported:?}");
    let tagged = second.ctr(&[
        "images",
        "tag",
        "docker.io/library/myimg:dev",
        &name_of(&builds[4]),
    ]);
    assert!(tagged.status.success(), "{tagged:?}");
    let names = |of: &[usize]| -> Vec<String> {
        let mut names: Vec<String> = of.iter().map(|i| name_of(&builds[*i])).collect();
        names.sort();
        names
    };
    assert_eq!(held_by(&first), names(&[0, 1, 2, 3]));
    assert_eq!(held_by(&second), names(&[0, 1, 2, 3, 4]));

    let out = cluster.run(&["ls", "-o", "json"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    let rows = out.json();
    let listed = columns(&rows, &["node", "tag", "created"]);
    let mut expected: Vec<Vec<String>> = Vec::new();
    for (node, of) in [
        ("dev", &[0, 1, 2, 3][..]),
        ("dev-m02", &[0, 1, 2, 3, 4][..]),
    ] {
        for i in of {
            expected.push(vec![
                node.to_string(),
                content_tag(&builds[*i]),
                format!("2024-0{}-01T00:00:00Z", i + 1),
            ]);
        }
    }
    expected.sort();
    let mut listed_sorted = listed.clone();
    listed_sorted.sort();
    assert_eq!(listed_sorted, expected, "{rows}");
    let v1 = row_where(&rows, |r| {
        r["node"] == "dev" && r["tag"] == content_tag(&builds[0]).as_str()
    });
    assert_eq!(v1["repository"], "myimg");
    assert_eq!(v1["inUseBy"], json!(["Pod/default/app-1"]));

    // Per node, in name order.
    let second_removes = names(&[1, 2]);
    let out = cluster.run(&["prune", "--keep", "2", "--dry-run"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.assert_stdout(str![[r#"
would remove docker.io/library/myimg:dev-e7ed9853b0d7 from dev
would remove docker.io/library/myimg:dev-4449495ce807 from dev-m02
would remove docker.io/library/myimg:dev-e7ed9853b0d7 from dev-m02
would remove 3 content tags, kept 6 (2 in use); each node's containerd frees what no image names

"#]]);
    assert_eq!(held_by(&first), names(&[0, 1, 2, 3]));
    assert_eq!(held_by(&second), names(&[0, 1, 2, 3, 4]));

    let out = cluster.run(&["prune", "--keep", "2"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        held_by(&first),
        names(&[0, 2, 3]),
        "v1 is used, v3 and v4 the newest"
    );
    assert_eq!(
        held_by(&second),
        names(&[0, 3, 4]),
        "v1 is used, v4 and v5 the newest"
    );
    let removals: Vec<Vec<String>> = standins
        .calls()
        .into_iter()
        .filter(|call| call.iter().any(|arg| arg == "rm"))
        .collect();
    assert_eq!(
        removals,
        vec![
            [
                "minikube", "ssh", "-p", "dev", "-n", "dev", "--", "sudo", "ctr", "-n", "k8s.io",
                "images", "rm",
            ]
            .iter()
            .map(|s| s.to_string())
            .chain([name_of(&builds[1])])
            .collect::<Vec<_>>(),
            [
                "minikube", "ssh", "-p", "dev", "-n", "dev-m02", "--", "sudo", "ctr", "-n",
                "k8s.io", "images", "rm",
            ]
            .iter()
            .map(|s| s.to_string())
            .chain(second_removes.clone())
            .collect::<Vec<_>>(),
        ]
    );
    assert!(
        first
            .images()
            .contains(&"docker.io/library/myimg:dev".to_string()),
        "the plain name stays"
    );
}

/// minikube's default runtime, docker: the images push loaded (`minikube image load`, which
/// `docker load`s into each node) are in the node's dockerd, a real one here behind `minikube
/// ssh -- docker`. `ls` lists the content tags with their created times and image IDs, `prune
/// --keep 2 --dry-run` changes nothing, `prune --keep 2` removes what is neither newest nor
/// used with `docker image rm`.
#[test]
fn prune_nodes_of_minikube_on_docker_reaches_the_nodes_dockerd() {
    let builds = builds(&[41, 42, 43, 44], true);
    let daemon = Dockerd::start();
    let unused = Containerd::start();
    let standins = StandIns::new(&unused);
    standins.add_docker_node("minikube", &daemon);
    let api = ApiServer::builder()
        .node(
            StandInNode::new("minikube")
                .label("minikube.k8s.io/name", "minikube")
                .runtime("docker://27.4.1"),
        )
        .pod(
            "default",
            "app-1",
            "minikube",
            &[&format!("myimg:{}", content_tag(&builds[0]))],
            &[""],
        )
        .start();
    let cluster = Cluster::new(api, "minikube", "minikube").standins(&standins);
    push_builds(&cluster, &builds);
    let held = || -> Vec<String> {
        daemon
            .tags()
            .into_iter()
            .filter(|name| name.contains(":dev-"))
            .collect()
    };
    let names = |of: &[usize]| -> Vec<String> {
        let mut names: Vec<String> = of
            .iter()
            .map(|i| format!("myimg:{}", content_tag(&builds[*i])))
            .collect();
        names.sort();
        names
    };
    assert_eq!(held(), names(&[0, 1, 2, 3]));

    let out = cluster.run(&["ls", "-o", "json"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    let rows = out.json();
    let mut listed = columns(&rows, &["node", "tag", "digest", "created"]);
    listed.sort();
    let mut expected: Vec<Vec<String>> = builds
        .iter()
        .enumerate()
        .map(|(i, build)| {
            vec![
                "minikube".to_string(),
                content_tag(build),
                build.config_digest(),
                format!("2024-0{}-01T00:00:00Z", i + 1),
            ]
        })
        .collect();
    expected.sort();
    assert_eq!(listed, expected, "{rows}");
    let v1 = row_where(&rows, |r| r["tag"] == content_tag(&builds[0]).as_str());
    assert_eq!(v1["repository"], "myimg");
    assert_eq!(v1["inUseBy"], json!(["Pod/default/app-1"]));

    let out = cluster.run(&["prune", "--keep", "2", "--dry-run"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.assert_stdout(str![[r#"
would remove docker.io/library/myimg:dev-9b41e6226f6e from minikube
would remove 1 content tags, kept 3 (1 in use); each node's dockerd removes an image with its last name

"#]]);
    assert_eq!(held(), names(&[0, 1, 2, 3]));

    let out = cluster.run(&["prune", "--keep", "2"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        held(),
        names(&[0, 2, 3]),
        "v1 is used, v3 and v4 are the newest"
    );
    assert_eq!(
        daemon.image_id(&format!("myimg:{}", content_tag(&builds[1]))),
        None
    );
    let removal = standins
        .calls()
        .into_iter()
        .find(|call| call.iter().any(|arg| arg == "rm"))
        .expect("a removal was run");
    assert_eq!(
        removal,
        [
            "minikube", "ssh", "-p", "minikube", "-n", "minikube", "--", "docker", "image", "rm",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!(
            "docker.io/library/myimg:{}",
            content_tag(&builds[1])
        )])
        .collect::<Vec<_>>()
    );
    assert!(
        daemon.image_id("myimg:dev").is_some(),
        "the plain name stays"
    );
}

/// minikube can run CRI-O, whose images are in containers-storage: ls and prune say they do
/// not read it and what to do, with the exit code of nodes that cannot be asked, nothing run.
#[test]
fn minikube_nodes_on_crio_are_a_clear_error() {
    let node = Containerd::start();
    let standins = StandIns::new(&node);
    standins.add_node("minikube", &node);
    let api = ApiServer::builder()
        .node(
            StandInNode::new("minikube")
                .label("minikube.k8s.io/name", "minikube")
                .runtime("cri-o://1.29.1"),
        )
        .start();
    let cluster = Cluster::new(api, "minikube", "minikube").standins(&standins);
    for command in [&["ls"][..], &["prune", "--dry-run"][..]] {
        let run = cluster.run(command);
        assert_eq!(run.code, 6, "{}", run.stderr);
        assert!(run.stdout.is_empty());
        run.assert_stderr(str![[r#"
error: no registry is advertised, and node minikube of minikube profile "minikube" runs the cri-o runtime (cri-o://1.29.1); ls and prune read minikube nodes that all run containerd, or all docker
hint: list the node's images with `minikube image ls -p minikube`, remove old content tags with `minikube image rm IMAGE... -p minikube`
hint: or run the profile on containerd or docker: `minikube start -p minikube --container-runtime=containerd` (a new profile)
hint: or give the cluster a registry to list and prune it instead: https://minikube.sigs.k8s.io/docs/handbook/registry/

"#]]);
    }
    assert!(
        standins.calls().is_empty(),
        "nothing is run: {:?}",
        standins.calls()
    );
}

/// A node whose `ctr` never answers: `ls` and `prune` stop it after the bound
/// (`KUBECTL_REGISTRY_NODE_TIMEOUT`) and say which command it was.
#[test]
fn a_node_that_never_answers_ends_ls_and_prune_within_the_bound() {
    let node = Containerd::start();
    let standins = StandIns::new(&node);
    standins.add_node("dev-control-plane", &node);
    standins.hanging("dev-control-plane");
    let api = ApiServer::builder()
        .node(
            StandInNode::new("dev-control-plane")
                .provider_id("kind://docker/dev/dev-control-plane"),
        )
        .start();
    let cluster = Cluster::new(api, "kind-dev", "kind-dev").standins(&standins);
    for command in [&["ls"][..], &["prune"][..]] {
        let started = std::time::Instant::now();
        let run = cluster
            .cmd(command)
            .env("KUBECTL_REGISTRY_NODE_TIMEOUT", "1")
            .output();
        let took = started.elapsed();
        assert_eq!(run.code, 6, "{}", run.stderr);
        run.assert_stderr(str![[r#"
error: reading what the nodes hold
caused by: `docker exec dev-control-plane ctr -n k8s.io images ls` did not finish within 1s; it was stopped

"#]]);
        // A generous ceiling over the 1 s bound, not a race.
        assert!(took < std::time::Duration::from_secs(20), "took {took:?}");
    }
}
