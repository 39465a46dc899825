//! `prune` when a push tags the content it is about to delete: deleting a manifest by digest
//! removes every tag on it, so right before each delete the repository's tags are read again
//! and a digest that a tag pushed meanwhile names (a new tag, or one prune saw moved onto it)
//! is kept, said so, and left out of the totals. The push lands through
//! the real registry while prune runs (a hook in the fault proxy, just before prune's re-read).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use snapbox::str;

use crate::support::cluster_scene::{RegistryScene, deleted_digests, kept_reasons};
use crate::support::fault_proxy::{Action, FaultProxy, Rule};
use crate::support::fixtures::Image;
use crate::support::push::blob_sizes;
use crate::support::registry::TestRegistry;
use kubectl_registry::plumbing::output::human_size;

fn image(seed: u64, created: &str) -> Image {
    Image::with_layers(seed, "linux/amd64", &[40 << 10, 20 << 10]).created(Some(created))
}

/// app:v1, v2 and v3, a month apart (v3 the newest), their digests and the manifest of each,
/// as skopeo reads them.
struct Staged {
    registry: TestRegistry,
    digests: Vec<String>,
    manifests: Vec<Vec<u8>>,
}

fn staged() -> Staged {
    let staging = RegistryScene::new(TestRegistry::start(), |api, _| api);
    let mut digests = Vec::new();
    let mut manifests = Vec::new();
    for (seed, tag, created) in [
        (31, "v1", "2024-01-01T00:00:00Z"),
        (32, "v2", "2024-02-01T00:00:00Z"),
        (33, "v3", "2024-03-01T00:00:00Z"),
    ] {
        digests.push(staging.put(&image(seed, created), "app", tag));
        manifests.push(staging.registry.skopeo_raw_manifest(&format!("app:{tag}")));
    }
    let registry = staging.into_registry();
    Staged {
        registry,
        digests,
        manifests,
    }
}

impl Staged {
    /// A cluster advertising the registry through a proxy where v1's manifest is pushed as
    /// `tag` just before prune's first re-read of app's tags (the second read of them).
    fn pushing_v1_as(self, tag: &str) -> (RegistryScene, FaultProxy, Vec<String>) {
        self.pushing(0, tag)
    }

    /// The same with the manifest of `v{from + 1}`.
    fn pushing(self, from: usize, tag: &str) -> (RegistryScene, FaultProxy, Vec<String>) {
        let v1 = self.manifests[from].clone();
        let media_type = serde_json::from_slice::<Value>(&v1).unwrap()["mediaType"]
            .as_str()
            .unwrap()
            .to_string();
        let write = self.registry.writer();
        let reads = AtomicUsize::new(0);
        let path = format!("/v2/app/manifests/{tag}");
        let push = move || {
            if reads.fetch_add(1, Ordering::SeqCst) == 1 {
                let status = write("PUT", &path, &[("Content-Type", &media_type)], &v1);
                assert_eq!(status, 201, "{path} pushed");
            }
        };
        let proxy = FaultProxy::start(
            &self.registry.host(),
            vec![Rule::new(
                "GET",
                "/tags/list",
                100,
                Action::Before(Arc::new(push)),
            )],
        );
        let lab = RegistryScene::advertising(self.registry, &proxy.host(), |api, _| api);
        (lab, proxy, self.digests)
    }
}

#[test]
fn a_digest_tagged_while_prune_runs_is_kept_and_said_so() {
    let (lab, _proxy, digests) = staged().pushing_v1_as("hotfix");
    let out = lab.run(&["prune", "--keep", "1", "-o", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.assert_stderr(str![[r#"
kept app@sha256:[DIGEST]: tagged hotfix since the registry was read

"#]]);
    let report = out.json();
    let deleted = deleted_digests(&report);
    assert_eq!(deleted, [digests[1].as_str()], "only v2 went");
    assert_eq!(
        kept_reasons(&report),
        [
            ("hotfix", "tagged-meanwhile"),
            ("v1", "tagged-meanwhile"),
            ("v3", "newest")
        ]
        .map(|(t, r)| (t.to_string(), r.to_string()))
    );
    assert_eq!(lab.tags("app"), ["hotfix", "v1", "v3"]);
    assert_eq!(lab.digest("app", "hotfix"), digests[0]);
}

/// The bytes only v2's manifest references (its config and layers: no other image shares them).
fn v2_bytes(staged: &Staged) -> u64 {
    let manifest: Value = serde_json::from_slice(&staged.manifests[1]).unwrap();
    blob_sizes(&manifest).iter().sum()
}

#[test]
fn a_tag_prune_saw_moved_onto_a_doomed_manifest_keeps_it_and_the_totals_say_so() {
    // The newest tag, v3, is pushed again with v1's manifest after prune read the registry.
    let staged = staged();
    let only_v2 = v2_bytes(&staged);
    let (lab, _proxy, digests) = staged.pushing_v1_as("v3");
    let out = lab.run(&["prune", "--keep", "1", "-o", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.assert_stderr(str![[r#"
kept app@sha256:[DIGEST]: tagged v3 since the registry was read

"#]]);
    assert!(out.stderr.contains(&digests[0]), "{}", out.stderr);
    let report = out.json();
    assert_eq!(
        deleted_digests(&report),
        [digests[1].as_str()],
        "only v2 went"
    );
    assert_eq!(
        kept_reasons(&report),
        [("v1", "tagged-meanwhile"), ("v3", "tagged-meanwhile")]
            .map(|(t, r)| (t.to_string(), r.to_string()))
    );
    assert_eq!(
        report["unreferencedBytes"], only_v2,
        "v1's bytes are not freed"
    );
    assert_eq!(lab.tags("app"), ["v1", "v3"]);
    assert_eq!(lab.digest("app", "v3"), digests[0]);
}

#[test]
fn the_text_report_counts_what_was_really_deleted_after_such_a_keep() {
    let staged = staged();
    let only_v2 = v2_bytes(&staged);
    let (lab, _proxy, _) = staged.pushing_v1_as("v3");
    let out = lab.run(&["prune", "--keep", "1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let summary = out
        .stdout
        .lines()
        .rev()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        summary,
        format!(
            "deleted 1 manifests, kept 2 tags (0 in use); {} no longer referenced",
            human_size(only_v2)
        ),
        "{}",
        out.stdout
    );
    out.assert_stdout(str![[r#"
deleted app:v2 (sha256:[DIGEST], [..])
deleted 1 manifests, kept 2 tags (0 in use); [..] no longer referenced
[..]

"#]]);
}

#[test]
fn a_doomed_tag_pushed_onto_another_manifest_meanwhile_is_not_said_deleted() {
    // v2, due to go, is pushed again with v1's manifest (also due to go) after prune read.
    let (lab, _proxy, digests) = staged().pushing_v1_as("v2");
    let out = lab.run(&["prune", "--keep", "1", "-o", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.assert_stderr(str![[r#"
kept app@sha256:[DIGEST]: tagged v2 since the registry was read

"#]]);
    let report = out.json();
    assert_eq!(
        deleted_digests(&report),
        [digests[1].as_str()],
        "v2's old manifest"
    );
    assert_eq!(
        report["deleted"][0]["tags"],
        serde_json::json!([]),
        "v2 was not deleted"
    );
    assert_eq!(
        kept_reasons(&report),
        [
            ("v1", "tagged-meanwhile"),
            ("v2", "tagged-meanwhile"),
            ("v3", "newest")
        ]
        .map(|(t, r)| (t.to_string(), r.to_string()))
    );
    assert_eq!(lab.tags("app"), ["v1", "v2", "v3"]);
    assert_eq!(lab.digest("app", "v2"), digests[0]);
    // v2 pushed with the kept v3's manifest instead: nothing is kept after all, and v2 is not
    // said deleted with its old manifest.
    let (lab, _proxy, digests) = staged().pushing(2, "v2");
    let out = lab.run(&["prune", "--keep", "1", "-o", "json"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out:?}");
    let report = out.json();
    let deleted: Vec<(&str, &Value)> = report["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["digest"].as_str().unwrap(), &d["tags"]))
        .collect();
    let (v1_tags, none) = (serde_json::json!(["v1"]), serde_json::json!([]));
    let mut expected = vec![
        (digests[0].as_str(), &v1_tags),
        (digests[1].as_str(), &none),
    ];
    expected.sort_by_key(|(digest, _)| *digest);
    assert_eq!(deleted, expected, "v2 was not deleted");
    assert_eq!(lab.tags("app"), ["v2", "v3"]);
    assert_eq!(lab.digest("app", "v2"), digests[2]);
    let (lab, _proxy, _) = staged().pushing_v1_as("v2");
    let text = lab.run(&["prune", "--keep", "1"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    text.assert_stdout(str![[r#"
deleted app@sha256:[DIGEST] (its tags were moved or deleted since the registry was read)
deleted 1 manifests, kept 3 tags (0 in use); [..] no longer referenced
[..]

"#]]);
}
