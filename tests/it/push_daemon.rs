//! `kubectl registry push NAME` with a real Docker Engine (started by each test on its own socket
//! and data root): the daemon pushes its own image, so a rebuild sends only its new layer; the
//! engine's names are as they were after, whatever happens; a daemon that cannot reach the
//! registry leaves the push to the export; its failure midway is the error, named.

use crate::support::apiserver::{ApiServer, StandInNode};
use crate::support::dockerd::Dockerd;
use crate::support::fault_proxy::{Action, FaultProxy, Rule};
use crate::support::podman::layer_dir;
use crate::support::push::{self, Bench, Node, Outcome, RUNTIME_HOST, blob_sizes, counts};
use crate::support::registry::TestRegistry;
use crate::support::run::{finished, redact};
use serde_json::Value;
use snapbox::str;

fn push(bench: &Bench, daemon: &Dockerd, args: &[&str]) -> Outcome {
    bench
        .cmd()
        .env("DOCKER_HOST", daemon.host())
        .arg("push")
        .args(args)
        .output()
}

fn has_line(run: &Outcome, line: &str) -> bool {
    run.stderr_lines().contains(&line)
}

/// A three-layer image built by the daemon from real files, `myimg:dev`; its base is `myimg:base`.
fn built(bench: &Bench, daemon: &Dockerd, seed: u64) -> String {
    let dirs = bench.dir.path();
    let one = layer_dir(dirs, "one", seed, &[1_500_000]);
    let two = layer_dir(dirs, "two", seed + 1, &[900_000, 300_000]);
    let app = layer_dir(dirs, "app", seed + 2, &[700_000]);
    daemon.build("scratch", "myimg:base", &[&one, &two]);
    daemon.build("myimg:base", "myimg:dev", &[&app])
}

#[test]
fn the_daemon_pushes_then_an_unchanged_image_sends_its_manifest_then_a_rebuild_sends_its_new_layer()
{
    let bench = Bench::new();
    let daemon = Dockerd::start();
    let id = built(&bench, &daemon, 1);
    // A name the user gave another image, which the push borrows and must give back.
    let engine_ref = format!("{}/myimg:dev", bench.registry.host());
    daemon.docker(&["tag", "myimg:base", &engine_ref]);
    let names_before = daemon.tags();

    let first = push(&bench, &daemon, &["myimg:dev", "-v", "-o", "json"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        has_line(
            &first,
            "the docker daemon pushes myimg:dev to 127.0.0.1:[PORT]/myimg:dev"
        ),
        "{}",
        first.stderr
    );
    assert!(!first.stderr.contains("exporting"), "{}", first.stderr);
    let (bytes, digest) = bench.landed("myimg:dev");
    let manifest: Value = serde_json::from_slice(&bytes).unwrap();
    bench.assert_blobs_present("myimg", &manifest);
    let report = first.json();
    let reference = format!("{RUNTIME_HOST}/myimg:dev@{digest}");
    assert_eq!(report["ref"], reference.as_str());
    // The engine's image: its config is the image ID, its layers are the engine's.
    assert_eq!(manifest["config"]["digest"], id.as_str());
    let sizes = blob_sizes(&manifest);
    assert_eq!(counts(&report), [4, sizes.iter().sum(), 0, 0]);
    assert_eq!(daemon.tags(), names_before, "the engine's names changed");
    assert_eq!(
        daemon.image_id(&engine_ref),
        daemon.image_id("myimg:base"),
        "the borrowed name was not given back"
    );
    let node = Node::start(&bench.registry);
    node.pull(&reference, &[]);
    assert_eq!(node.layer_diff_ids(&digest), daemon.diff_ids("myimg:dev"));
    // skopeo copies it back whole, verifying every digest (docker's types it rewrites as OCI).
    let copied = bench.read_back_whole("myimg:dev");
    if manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json" {
        assert_eq!(copied, digest);
    }

    let again = push(&bench, &daemon, &["myimg:dev", "-v", "-o", "json"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        has_line(
            &again,
            &format!(
                "the registry has every blob of {id}: sent only its manifest, nothing exported"
            )
        ),
        "{}",
        again.stderr
    );
    assert_eq!(again.json()["ref"], reference.as_str());
    assert_eq!(counts(&again.json()), [0, 0, 4, sizes.iter().sum()]);

    // A rebuild: one more layer on the same base.
    let more = layer_dir(bench.dir.path(), "more", 9, &[800_000]);
    let new_id = daemon.build("myimg:dev", "myimg:dev", &[&more]);
    let rebuilt = push(&bench, &daemon, &["myimg:dev", "-v", "-o", "json"]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    let (bytes, new_digest) = bench.landed("myimg:dev");
    let manifest: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(manifest["config"]["digest"], new_id.as_str());
    let diff_ids = daemon.diff_ids("myimg:dev");
    for (index, diff_id) in diff_ids.iter().enumerate() {
        let short = &diff_id["sha256:".len()..][..12];
        let word = if index == 3 { "pushed" } else { "exists" };
        assert!(
            has_line(&rebuilt, &format!("the daemon: layer {short} {word}")),
            "{}",
            rebuilt.stderr
        );
    }
    let sizes = blob_sizes(&manifest);
    assert_eq!(
        counts(&rebuilt.json()),
        [2, sizes[0] + sizes[4], 3, sizes[1] + sizes[2] + sizes[3]]
    );
    node.pull(&format!("{RUNTIME_HOST}/myimg:dev@{new_digest}"), &[]);
    assert_eq!(node.layer_diff_ids(&new_digest), diff_ids);
    assert_eq!(daemon.tags(), names_before, "the engine's names changed");
}

#[test]
fn a_daemon_that_cannot_reach_the_registry_leaves_the_push_to_the_export() {
    let bench = Bench::new();
    // Its own network, as a daemon in a VM: 127.0.0.1 is not ours there.
    let daemon = Dockerd::isolated();
    let id = built(&bench, &daemon, 20);
    let names_before = daemon.tags();
    let run = push(&bench, &daemon, &["myimg:dev", "-v"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let unreachable = run
        .stderr_lines()
        .into_iter()
        .find(|line| line.starts_with("the docker daemon cannot reach 127.0.0.1:[PORT] ("))
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert!(
        unreachable.ends_with("network is unreachable): exporting instead"),
        "{unreachable}"
    );
    let socket = daemon.socket();
    assert!(
        has_line(
            &run,
            &redact(&format!(
                "exporting myimg:dev from docker engine API at unix://{} (DOCKER_HOST)",
                socket.display()
            ))
        ),
        "{}",
        run.stderr
    );
    let (bytes, digest) = bench.landed("myimg:dev");
    let manifest: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(manifest["config"]["digest"], id.as_str());
    assert_eq!(run.stdout, format!("{RUNTIME_HOST}/myimg:dev@{digest}\n"));
    assert_eq!(daemon.tags(), names_before, "the engine's names changed");
}

/// A bench whose registry sits behind `rule`, advertised at the proxy's address.
fn behind(rule: Rule) -> (Bench, FaultProxy) {
    let registry = TestRegistry::start();
    let proxy = FaultProxy::start(&registry.host(), vec![rule]);
    let bench = Bench::advertising(registry, &proxy.host());
    (bench, proxy)
}

#[test]
fn a_daemon_push_that_fails_midway_is_the_error_named_and_nothing_is_tagged() {
    let denied =
        br#"{"errors":[{"code":"DENIED","message":"quota exceeded for this repository"}]}"#;
    let (bench, _proxy) = behind(Rule::new(
        "PATCH",
        "/blobs/uploads/",
        100,
        Action::Status {
            status: 403,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: denied.to_vec(),
        },
    ));
    let daemon = Dockerd::start();
    built(&bench, &daemon, 30);
    let names_before = daemon.tags();
    let run = push(&bench, &daemon, &["myimg:dev"]);
    assert_eq!((run.code, run.stdout.as_str()), (5, ""), "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: the docker daemon's push of myimg:dev to 127.0.0.1:[PORT]/myimg:dev
caused by: denied: quota exceeded for this repository

"#]]);
    bench.assert_not_tagged("myimg", "dev");
    assert_eq!(daemon.tags(), names_before, "the engine's names changed");
}

#[test]
fn ctrl_c_during_a_daemon_push_cancels_it_and_gives_the_engine_its_names_back() {
    let (bench, proxy) = behind(Rule::new(
        "PATCH",
        "/blobs/uploads/",
        100,
        Action::StallAfterBody,
    ));
    let daemon = Dockerd::start();
    built(&bench, &daemon, 40);
    let names_before = daemon.tags();
    let child = bench
        .cmd()
        .env("DOCKER_HOST", daemon.host())
        .args(["push", "myimg:dev"])
        .spawn();
    assert!(
        proxy.wait_for_stall(std::time::Duration::from_secs(60)),
        "the daemon never reached the registry"
    );
    assert_ne!(
        daemon.tags(),
        names_before,
        "no temporary name while it pushes"
    );
    crate::support::run::signal(child.id(), "-INT");
    let run = finished(child);
    assert_eq!(
        (run.code, run.stdout, run.stderr),
        (
            130,
            String::new(),
            "error: interrupted by SIGINT while the docker daemon was pushing myimg:dev to \
             127.0.0.1:[PORT]/myimg:dev; its push was cancelled and the engine's temporary tag \
             removed; the registry's tag may or may not have been set\n"
                .to_string(),
        )
    );
    assert_eq!(daemon.tags(), names_before, "the temporary name stayed");
    bench.assert_not_tagged("myimg", "dev");
}

#[test]
fn a_cluster_on_the_engines_own_store_gets_the_content_tag_set_there_and_nothing_moves() {
    // Docker Desktop: its node runs on this engine's store, and it advertises no registry.
    let server = ApiServer::builder()
        .node(StandInNode::new("docker-desktop"))
        .start();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path(), "docker-desktop", "docker-desktop");
    let daemon = Dockerd::start();
    let layer = layer_dir(dir.path(), "layer", 50, &[600_000]);
    let id = daemon.build("scratch", "myimg:dev", &[&layer]);
    let run = push::clean_run(dir.path())
        .kubeconfig(&kubeconfig)
        .env("DOCKER_HOST", daemon.host())
        // No loader on PATH: a load would fail.
        .path("/nonexistent")
        .args(["push", "myimg:dev", "-o", "json"])
        .output();
    let stderr = &run.stderr;
    assert_eq!(run.code, 0, "{stderr}");
    let report = run.json();
    let content_tag = format!("dev-{}", &id["sha256:".len()..][..12]);
    assert_eq!(report["ref"], format!("myimg:{content_tag}").as_str());
    assert_eq!(report["method"], "engine-store");
    assert_eq!(report["digest"], id.as_str());
    assert_eq!(
        daemon.image_id(&format!("myimg:{content_tag}")).as_deref(),
        Some(id.as_str()),
        "the content tag does not resolve in the engine"
    );
    assert_eq!(
        daemon.tags(),
        ["myimg:dev".to_string(), format!("myimg:{content_tag}")]
    );
}
