//! The names users hand `push`: one registry under several spellings (`localhost:PORT`,
//! `127.0.0.1:[PORT]`, `[::1]:PORT`, the advertised runtime host) is one registry, as Skaffold's
//! default-repo and Tilt hand a build script the address the user wrote; another registry's host
//! keeps the documented rule and says so. An engine's image typed by its ID is pushed under its
//! one name, and refused when it has several. The real registry, a stand-in API server
//! advertising `localhost:PORT` as kind's script does, and a real podman.

use serde_json::Value;
use snapbox::str;

use crate::support::fixtures::{Format, Image};
use crate::support::podman::{Podman, layer_dir};
use crate::support::push::{Bench, RUNTIME_HOST};
use crate::support::registry::TestRegistry;

/// A cluster advertising the registry as `localhost:PORT` (kind's script), the runtime host
/// being `kind-registry:5000`.
fn advertised_as_localhost() -> (Bench, u16) {
    let registry = TestRegistry::start();
    let port: u16 = registry.host().rsplit_once(':').unwrap().1.parse().unwrap();
    (
        Bench::advertising(registry, &format!("localhost:{port}")),
        port,
    )
}

fn archive(bench: &Bench, image: &Image) -> String {
    let path = bench.path("img.tar");
    image.write(Format::OciArchive, &path, &["myimg:dev"]);
    path.to_str().unwrap().to_string()
}

/// The registry's own `tags/list` status for `repo`.
fn repository_status(bench: &Bench, repo: &str) -> u16 {
    bench.registry.get(&format!("/v2/{repo}/tags/list")).status
}

#[test]
fn every_spelling_of_the_advertised_registry_in_tag_is_that_registry() {
    let (bench, port) = advertised_as_localhost();
    let image = Image::sample(301);
    let path = archive(&bench, &image);
    for (spelling, tag) in [
        (format!("127.0.0.1:{port}"), "v7"),
        (format!("127.9.8.7:{port}"), "v8"),
        (format!("[::1]:{port}"), "v9"),
        (format!("LOCALHOST:{port}"), "v10"),
        (RUNTIME_HOST.to_string(), "v11"),
    ] {
        let run = bench.push(&[
            &path,
            "--tag",
            &format!("{spelling}/app:{tag}"),
            "-o",
            "json",
        ]);
        assert_eq!(
            (run.code, run.stderr.as_str()),
            (0, ""),
            "{spelling}: {}",
            run.stdout
        );
        let report: Value = run.json();
        assert_eq!(report["repository"], "app", "{spelling}");
        assert_eq!(report["tag"], tag, "{spelling}");
        let (_, digest) = bench.landed(&format!("app:{tag}"));
        assert_eq!(
            report["ref"],
            format!("{RUNTIME_HOST}/app:{tag}@{digest}"),
            "{spelling}"
        );
    }
    // Nothing landed under a repository named after a spelling of the registry.
    for repository in [
        format!("127.0.0.1-{port}/app"),
        format!("127.9.8.7-{port}/app"),
        format!("localhost-{port}/app"),
        "kind-registry-5000/app".to_string(),
    ] {
        assert_eq!(repository_status(&bench, &repository), 404, "{repository}");
    }
}

#[test]
fn another_registrys_host_in_tag_keeps_the_documented_rule_and_says_so() {
    let (bench, port) = advertised_as_localhost();
    let other = if port == 1 { 2 } else { port - 1 };
    let image = Image::sample(302);
    let path = archive(&bench, &image);
    let tag = format!("127.0.0.1:{other}/app:v7");
    let run = bench.push(&[&path, "--tag", &tag, "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let repository = format!("127.0.0.1-{other}/app");
    assert_eq!(run.json()["repository"], repository.as_str());
    bench.landed(&format!("{repository}:v7"));
    assert!(
        run.stderr.ends_with(&format!("/{repository}:v7\n")),
        "{}",
        run.stderr
    );
    run.assert_stderr(str![[r#"
warning: --tag names the registry 127.0.0.1:[PORT], which is not this cluster's (localhost:[..]); as any other registry's name, it keeps its host in the repository: localhost:[..]/127.0.0.1-[..]/app:v7

"#]]);
    // A name the archive records is pushed by the same rule, silently (documented).
    image.write(
        Format::OciArchive,
        &bench.path("gcr.tar"),
        &["gcr.io/proj/app:v1"],
    );
    let run = bench.push(&[bench.path("gcr.tar").to_str().unwrap()]);
    bench.assert_pushed(&run, "gcr.io/proj/app", "v1");
}

/// podman's image built from two directories, named `names` (the first given by the build).
fn podman_image(podman: &Podman, names: &[&str]) -> String {
    let dirs = podman.dir();
    let one = layer_dir(dirs, "one", 303, &[3_000]);
    let two = layer_dir(dirs, "two", 304, &[2_000]);
    podman.build(names[0], &[&one, &two]);
    for name in &names[1..] {
        podman.run(&["tag", names[0], name]);
    }
    podman.tool(
        "podman",
        &["image", "inspect", "--format", "{{.Id}}", names[0]],
    )
}

fn push_engine(bench: &Bench, podman: &Podman, args: &[&str]) -> crate::support::push::Outcome {
    bench
        .cmd()
        .envs(podman.envs())
        .env("KUBECTL_REGISTRY_ENGINE", "podman")
        .arg("push")
        .args(args)
        .output()
}

#[test]
fn an_image_id_with_several_names_is_refused_listing_them_and_one_name_is_used() {
    let bench = Bench::new();
    let podman = Podman::new();
    let id = podman_image(&podman, &["localhost/app:v1", "localhost/other:v2"]);
    for typed in [id.clone(), id[..12].to_string(), format!("sha256:{id}")] {
        let run = push_engine(&bench, &podman, &[&typed]);
        assert_eq!(run.code, 2, "{typed}: {}", run.stderr);
        assert!(
            run.stderr.contains("has 2 names")
                && run.stderr.contains("localhost/app:v1, localhost/other:v2")
                && run.stderr.contains("--tag"),
            "{}",
            run.stderr
        );
    }
    bench.assert_not_tagged("app", "v1");
    bench.assert_not_tagged("other", "v2");

    // --tag says which; the ID alone, once the image has one name, takes it.
    let run = push_engine(&bench, &podman, &[&id[..12], "--tag", "other:v2"]);
    bench.assert_pushed(&run, "other", "v2");
    // `podman untag IMAGE NAME`: only that name goes.
    podman.run(&["untag", "localhost/app:v1", "localhost/other:v2"]);
    let run = push_engine(&bench, &podman, &[&id[..12]]);
    bench.assert_pushed(&run, "app", "v1");
}
