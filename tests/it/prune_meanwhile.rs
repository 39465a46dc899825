//! `prune` when a push tags the content it is about to delete: deleting a manifest by digest
//! removes every tag on it, so right before each delete the repository's tags are read again
//! and a digest that a tag pushed meanwhile names is kept, and said so. The push lands through
//! the real registry while prune runs (a hook in the fault proxy, just before prune's re-read).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use snapbox::str;

use crate::support::cluster_scene::{RegistryScene, deleted_digests, kept_reasons};
use crate::support::fault_proxy::{Action, FaultProxy, Rule};
use crate::support::fixtures::Image;
use crate::support::registry::TestRegistry;

fn image(seed: u64, created: &str) -> Image {
    Image::with_layers(seed, "linux/amd64", &[40 << 10, 20 << 10]).created(Some(created))
}

#[test]
fn a_digest_tagged_while_prune_runs_is_kept_and_said_so() {
    let staging = RegistryScene::new(TestRegistry::start(), |api, _| api);
    let mut digests = Vec::new();
    for (seed, tag, created) in [
        (31, "v1", "2024-01-01T00:00:00Z"),
        (32, "v2", "2024-02-01T00:00:00Z"),
        (33, "v3", "2024-03-01T00:00:00Z"),
    ] {
        digests.push(staging.put(&image(seed, created), "app", tag));
    }
    let v1 = staging.registry.skopeo_raw_manifest("app:v1");
    let media_type = serde_json::from_slice::<Value>(&v1).unwrap()["mediaType"]
        .as_str()
        .unwrap()
        .to_string();
    let registry = staging.into_registry();
    // The second read of app's tags is prune's, right before its first delete: a push of
    // v1's manifest as `hotfix` lands just before it.
    let write = registry.writer();
    let reads = AtomicUsize::new(0);
    let push_hotfix = move || {
        if reads.fetch_add(1, Ordering::SeqCst) == 1 {
            let status = write(
                "PUT",
                "/v2/app/manifests/hotfix",
                &[("Content-Type", &media_type)],
                &v1,
            );
            assert_eq!(status, 201, "hotfix pushed");
        }
    };
    let proxy = FaultProxy::start(
        &registry.host(),
        vec![Rule::new(
            "GET",
            "/tags/list",
            100,
            Action::Before(Arc::new(push_hotfix)),
        )],
    );
    let lab = RegistryScene::advertising(registry, &proxy.host(), |api, _| api);
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
