//! `kubectl registry push` of archives as other tools write them: docker 25's null index,
//! jib's lowercase manifest.json, layouts holding artifacts beside images (oras, cosign, helm,
//! regclient) and buildx attestations, manifests whose descriptor misnames their type, skopeo's
//! `dir:` and podman's docker-dir, a bare filesystem, and choosing among images by digest, by
//! podman's `localhost/` name and by containerd's platform aliases. Each push goes to the real
//! registry and is read back whole by skopeo (`copy --all` to `oci:`, verifying every digest).

use crate::support::fixtures::{
    self, DOCKER_MANIFEST, Format, Image, LayerCompression, OCI_MANIFEST, sha256,
};
use crate::support::layouts::{self, Layout};
use crate::support::podman::Podman;
use crate::support::push::{Bench, Outcome};
use serde_json::{Value, json};
use snapbox::str;

fn text(path: &std::path::Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// Asserts a clean push of `repo:tag` and reads it back whole; returns the pushed digest.
fn pushed_and_read_back(bench: &Bench, run: &Outcome, repo: &str, tag: &str) -> (String, Value) {
    let (reference, manifest) = bench.assert_pushed(run, repo, tag);
    let digest = reference
        .rsplit_once('@')
        .expect("a pinned ref")
        .1
        .to_string();
    let read_back = bench.read_back_whole(&format!("{repo}:{tag}"));
    let oci_typed = manifest["mediaType"] != DOCKER_MANIFEST;
    if oci_typed {
        assert_eq!(read_back, digest, "skopeo read back what was tagged");
    }
    (digest, manifest)
}

/// Pushes with `args`; asserts the push was refused as bad input: exit 4, nothing on stdout.
#[track_caller]
fn refused(bench: &Bench, args: &[&str]) -> Outcome {
    let run = bench.push(args);
    assert_eq!((run.code, run.stdout.as_str()), (4, ""), "{run:?}");
    run
}

/// Asserts `run` first says the blob `blob` of `[ROOT]/layout.tar`, damaged by
/// `Layout::damage_blob` (seven bytes more), is not the size its descriptor gives.
#[track_caller]
fn assert_damaged(run: &Outcome, blob: &[u8]) {
    let digest = sha256(blob);
    let hex = digest.trim_start_matches("sha256:");
    let size = blob.len();
    assert_eq!(
        run.stderr_lines()[0],
        format!(
            "error: size of blobs/sha256/{hex} in [ROOT]/layout.tar does not match: expected {size} bytes, got {} bytes",
            size + 7
        )
    );
}

/// Asserts the registry holds no repository at all.
#[track_caller]
fn assert_nothing_pushed(bench: &Bench) {
    assert_eq!(
        bench.registry.get("/v2/_catalog").body,
        br#"{"repositories":[]}
"#
    );
}

// ---------------------------------------------------------------------------------------------
// 1. docker 25/26: an index.json with "manifests": null beside a valid manifest.json

#[test]
fn docker_25_save_with_a_null_index_pushes_what_manifest_json_describes() {
    let image = Image::sample(71);
    let bench = Bench::new();
    let archive = bench.path("img.tar");
    image.write(Format::Docker25, &archive, &["myimg:dev"]);
    layouts::rewrite_member(&archive, "index.json", |_| {
        br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":null}"#
            .to_vec()
    });
    let run = bench.push(&[text(&archive)]);
    let (_, manifest) = pushed_and_read_back(&bench, &run, "myimg", "dev");
    assert_eq!(manifest["config"]["digest"], image.config_digest().as_str());
    let layers: Vec<&str> = manifest["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|layer| layer["digest"].as_str().unwrap())
        .collect();
    assert_eq!(layers, image.diff_ids());
}

// ---------------------------------------------------------------------------------------------
// 2. jib before mid-2020: manifest.json with lowercase keys

#[test]
fn jib_archive_with_lowercase_manifest_keys() {
    let image = Image::sample(72);
    let bench = Bench::new();
    let archive = bench.path("jib.tar");
    image.write(Format::Jib, &archive, &["myimg:dev"]);
    layouts::rewrite_member(&archive, "manifest.json", |bytes| {
        let entries: Vec<Value> = serde_json::from_slice(bytes).unwrap();
        let lowercase: Vec<Value> = entries
            .iter()
            .map(|entry| {
                json!({"config": entry["Config"], "repoTags": entry["RepoTags"], "layers": entry["Layers"]})
            })
            .collect();
        serde_json::to_vec(&lowercase).unwrap()
    });
    let run = bench.push(&[text(&archive)]);
    let (_, manifest) = pushed_and_read_back(&bench, &run, "myimg", "dev");
    assert_eq!(manifest["config"]["digest"], image.config_digest().as_str());
    assert_eq!(
        manifest["layers"][0]["digest"],
        image.layer_digests(LayerCompression::Gzip)[0].as_str()
    );
}

// ---------------------------------------------------------------------------------------------
// 3. layouts holding artifacts beside images

/// An image named `myimg:dev` beside a cosign signature, an oras SBOM (empty config), a Helm
/// chart and a regclient entry whose config is `{}`.
fn layout_with_artifacts(image: &Image) -> Layout {
    let mut layout = Layout::new();
    let manifest = layout.image(image);
    layout.entry(&manifest, Some("myimg:dev"));
    let signature = layout.cosign_signature(&manifest);
    let hex = manifest["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    layout.entry(&signature, Some(&format!("sha256-{hex}.sig")));
    let sbom = layout.sbom(1);
    layout.entry(&sbom, Some("sbom"));
    let chart = layout.helm_chart();
    layout.entry(&chart, Some("chart:0.1.0"));
    let bare = layout.bare_config_artifact();
    layout.entry(&bare, None);
    layout
}

#[test]
fn an_image_beside_signatures_sboms_and_charts_pushes_alone() {
    let image = Image::sample(73);
    let bench = Bench::new();
    let archive = bench.path("layout.tar");
    layout_with_artifacts(&image).write_tar(&archive);
    let run = bench.push(&[text(&archive)]);
    let (digest, _) = pushed_and_read_back(&bench, &run, "myimg", "dev");
    assert_eq!(digest, sha256(&image.manifest(LayerCompression::None)));
}

#[test]
fn several_images_and_artifacts_are_listed_by_kind_and_an_artifact_is_refused_as_one() {
    let image = Image::sample(74);
    let other = Image::sample(75);
    let bench = Bench::new();
    let mut layout = Layout::new();
    let manifest = layout.image(&image);
    layout.entry(&manifest, Some("myimg:dev"));
    let manifest = layout.image(&other);
    layout.entry(&manifest, Some("other:1"));
    let sbom = layout.sbom(2);
    layout.entry(&sbom, Some("sbom"));
    let chart = layout.helm_chart();
    layout.entry(&chart, Some("chart:0.1.0"));
    let dir = bench.path("layout");
    layout.write_dir(&dir);

    let run = refused(&bench, &[text(&dir)]);
    run.assert_stderr(str![[r#"
error: [ROOT]/layout holds 2 images, 2 artifacts; say which one with --image: myimg:dev, other:1 (not images: sbom (SBOM (application/spdx+json)), chart:0.1.0 (Helm chart (application/vnd.cncf.helm.chart.content.v1.tar+gzip)))
hint: pick one with --image NAME[:TAG] or --image DIGEST (a unique prefix will do)

"#]]);

    let run = refused(&bench, &[text(&dir), "--image", "sbom", "--tag", "sbom:1"]);
    run.assert_stderr(str![[r#"
error: sbom in [ROOT]/layout is not a container image but an artifact: SBOM (application/spdx+json)
hint: push artifacts with their own tools (oras, cosign); name an image with --image NAME[:TAG] or a digest

"#]]);
    assert_nothing_pushed(&bench);

    let run = bench.push(&[text(&dir), "--image", "other:1", "--tag", "other:1"]);
    let (digest, _) = pushed_and_read_back(&bench, &run, "other", "1");
    assert_eq!(digest, sha256(&other.manifest(LayerCompression::None)));
}

#[test]
fn a_damaged_entry_stops_only_a_push_of_that_entry() {
    let image = Image::sample(76);
    let damaged = Image::sample(77);
    let bench = Bench::new();
    let mut layout = Layout::new();
    let manifest = layout.image(&image);
    layout.entry(&manifest, Some("myimg:dev"));
    let manifest = layout.image(&damaged);
    layout.entry(&manifest, Some("damaged:1"));
    let bad_layer = sha256(damaged.layer(1));
    layout.damage_blob(&bad_layer);
    let archive = bench.path("layout.tar");
    layout.write_tar(&archive);

    let run = refused(&bench, &[text(&archive)]);
    run.assert_stderr(str![[r#"
error: [ROOT]/layout.tar holds 1 image, 1 unreadable entry; say which one with --image: myimg:dev (not images: damaged:1 (unreadable))
hint: pick one with --image NAME[:TAG] or --image DIGEST (a unique prefix will do)

"#]]);

    let run = refused(&bench, &[text(&archive), "--image", "damaged:1"]);
    assert_damaged(&run, damaged.layer(1));
    assert_eq!(bench.tag_status("damaged", "1"), 404);

    let run = bench.push(&[text(&archive), "--image", "myimg:dev"]);
    pushed_and_read_back(&bench, &run, "myimg", "dev");
}

/// A buildx-style image index: two platforms, each with its attestation manifest.
struct Attested {
    layout: Layout,
    amd64: Image,
    arm64: Image,
    index: Vec<u8>,
    attestations: Vec<Value>,
}

fn attested(seed: u64) -> Attested {
    let amd64 = Image::sample_for(seed, "linux/amd64");
    let arm64 = Image::sample_for(seed + 1, "linux/arm64");
    let mut layout = Layout::new();
    let amd64_manifest = layout.image(&amd64);
    let arm64_manifest = layout.image(&arm64);
    let attestations = vec![
        layout.attestation(&amd64_manifest),
        layout.attestation(&arm64_manifest),
    ];
    let children = [
        amd64_manifest,
        arm64_manifest,
        attestations[0].clone(),
        attestations[1].clone(),
    ];
    let (descriptor, index) = layout.index(&children);
    layout.entry(&descriptor, Some("myimg:dev"));
    Attested {
        layout,
        amd64,
        arm64,
        index,
        attestations,
    }
}

#[test]
fn an_index_with_attestation_manifests_pushes_unchanged() {
    let attested = attested(78);
    let bench = Bench::new();
    let archive = bench.path("buildx.tar");
    attested.layout.write_tar(&archive);
    let run = bench.push(&[text(&archive)]);
    let (digest, index) = pushed_and_read_back(&bench, &run, "myimg", "dev");
    assert_eq!(
        digest,
        sha256(&attested.index),
        "the source's own index digest"
    );
    assert_eq!(index["manifests"].as_array().unwrap().len(), 4);
    for attestation in &attested.attestations {
        let digest = attestation["digest"].as_str().unwrap();
        let stored = bench.manifest_by_digest("myimg", digest);
        assert_eq!(sha256(&stored), digest);
    }
}

#[test]
fn attestations_whose_blobs_are_absent_are_left_out_and_said() {
    let mut attested = attested(80);
    // The in-toto statement is each attestation's only layer: drop the first one's.
    let attestation = attested.attestations[0]["digest"].as_str().unwrap();
    let manifest: Value = serde_json::from_slice(attested.layout.blob_bytes(attestation)).unwrap();
    let statement_layer = manifest["layers"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    attested.layout.remove_blob(&statement_layer);
    let bench = Bench::new();
    let archive = bench.path("buildx.tar");
    attested.layout.write_tar(&archive);
    let run = bench.push(&[text(&archive), "-v"]);
    let short = format!(
        "{}…",
        &attested.attestations[0]["digest"].as_str().unwrap()[..19]
    );
    assert!(
        run.stderr.contains(&format!(
            "leaving out: attached manifest {short} (its blobs are not in the archive), attached manifest "
        )),
        "{}",
        run.stderr
    );
    run.assert_stderr(str![[r#"
leaving out: attached manifest sha256:[DIGEST]… (its blobs are not in the archive), attached manifest sha256:[DIGEST]…
pushed 6 blobs (850.7 KB), 0 blobs already there, in [ELAPSED]s

"#]]);
    let (reference, index) = bench.assert_landed(&run, "myimg", "dev");
    let digest = reference.rsplit_once('@').unwrap().1;
    assert_ne!(
        digest,
        sha256(&attested.index),
        "a new index of what was pushed"
    );
    let platforms: Vec<&str> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|child| child["platform"]["architecture"].as_str().unwrap())
        .collect();
    assert_eq!(platforms, ["amd64", "arm64"]);
    assert_eq!(bench.read_back_whole("myimg:dev"), digest);
}

// ---------------------------------------------------------------------------------------------
// 4. a manifest's own media type, never its descriptor's

#[test]
fn a_docker_manifest_under_an_oci_descriptor_is_sent_as_docker() {
    let image = Image::sample(82);
    let bench = Bench::new();
    let archive = bench.path("export.tar");
    image.write(
        Format::ContainerdExport(LayerCompression::Gzip),
        &archive,
        &["myimg:dev"],
    );
    layouts::rewrite_member(&archive, "index.json", |bytes| {
        String::from_utf8(bytes.to_vec())
            .unwrap()
            .replace(DOCKER_MANIFEST, OCI_MANIFEST)
            .into_bytes()
    });
    let run = bench.push(&[text(&archive)]);
    pushed_and_read_back(&bench, &run, "myimg", "dev");
    let answer = bench.registry.request_with(
        "GET",
        "/v2/myimg/manifests/dev",
        &[("Accept", crate::support::push::ACCEPT_MANIFESTS)],
    );
    assert_eq!(answer.header("Content-Type"), Some(DOCKER_MANIFEST));
    assert_eq!(answer.body, image.manifest(LayerCompression::Gzip));
}

#[test]
fn a_manifest_no_registry_takes_is_refused_before_any_blob_is_sent() {
    let image = Image::sample(83);
    let bench = Bench::new();
    let mut layout = Layout::new();
    layout.image(&image);
    let config = layout.blob(fixtures::OCI_CONFIG, image.config_bytes());
    let schema1 = serde_json::to_vec(&json!({
        "schemaVersion": 1,
        "name": "myimg",
        "tag": "dev",
        "config": config,
    }))
    .unwrap();
    let descriptor = layout.blob(
        "application/vnd.docker.distribution.manifest.v1+prettyjws",
        &schema1,
    );
    layout.entry(&descriptor, Some("myimg:dev"));
    let archive = bench.path("old.tar");
    layout.write_tar(&archive);
    let run = refused(&bench, &[text(&archive)]);
    let hex = sha256(&schema1);
    assert_eq!(
        run.stderr_lines()[0],
        format!(
            "error: [ROOT]/old.tar: blobs/sha256/{}: it is a docker schema 1 manifest, which registries \
             no longer accept; convert it with `skopeo copy --format v2s2`",
            hex.trim_start_matches("sha256:")
        )
    );
    assert_eq!(bench.stored_blob_contents(), [], "nothing was uploaded");
}

// ---------------------------------------------------------------------------------------------
// 6. choosing among images: digests, podman's names, platform aliases

#[test]
fn two_images_sharing_a_tag_are_told_apart_by_digest_prefix() {
    let first = Image::sample(84);
    let second = Image::sample(85);
    let bench = Bench::new();
    let mut layout = Layout::new();
    let first_manifest = layout.image(&first);
    layout.entry(&first_manifest, Some("myimg:dev"));
    let second_manifest = layout.image(&second);
    layout.entry(&second_manifest, Some("myimg:dev"));
    let archive = bench.path("twins.tar");
    layout.write_tar(&archive);

    let run = refused(&bench, &[text(&archive), "--image", "myimg:dev"]);
    let short = |descriptor: &Value| format!("{}…", &descriptor["digest"].as_str().unwrap()[..19]);
    assert_eq!(
        run.stderr_lines()[0],
        format!(
            "error: [ROOT]/twins.tar holds 2 images; say which one with --image: myimg:dev ({}), myimg:dev ({})",
            short(&first_manifest),
            short(&second_manifest)
        )
    );

    let second_digest = second_manifest["digest"].as_str().unwrap();
    let run = bench.push(&[text(&archive), "--image", &second_digest[..19]]);
    let (digest, _) = pushed_and_read_back(&bench, &run, "myimg", "dev");
    assert_eq!(digest, second_digest);

    // The config digest is the image ID docker and podman print; a bare hex prefix will do.
    let first_id = first.config_digest();
    let run = bench.push(&[
        text(&archive),
        "--image",
        &first_id[7..17],
        "--tag",
        "first:1",
    ]);
    let (digest, _) = pushed_and_read_back(&bench, &run, "first", "1");
    assert_eq!(digest, first_manifest["digest"].as_str().unwrap());
}

#[test]
fn the_image_flag_matches_podmans_localhost_names_as_pushing_names_them() {
    let web = Image::sample(86);
    let api = Image::sample(87);
    let bench = Bench::new();
    let archive = bench.path("podman.tar");
    fixtures::write_images(
        Format::Podman,
        &archive,
        &[
            (&web, &["localhost/web:dev"]),
            (&api, &["localhost/api:dev"]),
        ],
    );
    let run = bench.push(&[text(&archive), "--image", "api:dev"]);
    let (_, manifest) = pushed_and_read_back(&bench, &run, "api", "dev");
    assert_eq!(manifest["config"]["digest"], api.config_digest().as_str());
    let run = bench.push(&[text(&archive), "--image", "docker.io/library/web:dev"]);
    let (_, manifest) = pushed_and_read_back(&bench, &run, "web", "dev");
    assert_eq!(manifest["config"]["digest"], web.config_digest().as_str());
}

#[test]
fn platform_aliases_choose_as_containerd_normalises_them() {
    let attested = attested(88);
    let bench = Bench::new();
    let archive = bench.path("buildx.tar");
    attested.layout.write_tar(&archive);
    for (flag, image) in [
        ("linux/aarch64", &attested.arm64),
        ("linux/arm64/v8", &attested.arm64),
        ("linux/x86_64", &attested.amd64),
    ] {
        let run = bench.push(&[text(&archive), "--platform", flag]);
        let (digest, _) = pushed_and_read_back(&bench, &run, "myimg", "dev");
        assert_eq!(
            digest,
            sha256(&image.manifest(LayerCompression::None)),
            "{flag}"
        );
    }
    let run = bench.push(&[text(&archive), "--platform", "linux/aarch64", "-v"]);
    assert_eq!(run.code, 0, "{run:?}");
    let short = |i: usize| {
        format!(
            "{}…",
            &attested.attestations[i]["digest"].as_str().unwrap()[..19]
        )
    };
    assert!(
        run.stderr.contains(&format!(
            "leaving out: linux/amd64 (not the platform chosen), attached manifest {} (not the platform chosen), attached manifest {} (not the platform chosen)",
            short(0),
            short(1)
        )),
        "{}",
        run.stderr
    );
    run.assert_stderr(str![[r#"
leaving out: linux/amd64 (not the platform chosen), attached manifest sha256:[DIGEST]… (not the platform chosen), attached manifest sha256:[DIGEST]… (not the platform chosen)
pushed 0 blobs (0 B), 3 blobs already there, in [ELAPSED]s

"#]]);
}

// ---------------------------------------------------------------------------------------------
// 7. formats people still hand us

#[test]
fn skopeos_dir_copy_pushes_under_the_tag_given() {
    let image = Image::sample(89);
    let bench = Bench::new();
    let layout = bench.path("layout");
    image.layout_dir(&layout, &["dev"]);
    let dir = bench.path("copied");
    fixtures::skopeo_copy(&layout, "dev", &format!("dir:{}", dir.display()));
    let run = bench.push(&[text(&dir), "--tag", "myimg:dev"]);
    let (digest, _) = pushed_and_read_back(&bench, &run, "myimg", "dev");
    assert_eq!(digest, sha256(&image.manifest(LayerCompression::None)));
}

#[test]
fn podman_save_as_docker_dir_pushes_its_own_manifest() {
    let image = Image::sample(90);
    let bench = Bench::new();
    let archive = bench.path("img.tar");
    image.write(Format::DockerLegacy, &archive, &["myimg:dev"]);
    let podman = Podman::new();
    podman.load(&archive);
    let dir = bench.path("docker-dir");
    podman.save("docker-dir", "localhost/myimg:dev", &dir);
    let run = bench.push(&[text(&dir), "--tag", "myimg:dev"]);
    let (digest, manifest) = pushed_and_read_back(&bench, &run, "myimg", "dev");
    assert_eq!(manifest["mediaType"], DOCKER_MANIFEST);
    assert_eq!(manifest["config"]["digest"], image.config_digest().as_str());
    let saved = std::fs::read(dir.join("manifest.json")).unwrap();
    assert_eq!(digest, sha256(&saved), "podman's manifest, byte for byte");
}

#[test]
fn a_filesystem_tar_is_refused_with_how_to_make_it_an_image() {
    let image = Image::sample(91);
    let bench = Bench::new();
    let layer = bench.path("rootfs.tar");
    std::fs::write(&layer, image.layer(0)).unwrap();
    let run = refused(&bench, &[text(&layer)]);
    run.assert_stderr(str![[r#"
error: [ROOT]/rootfs.tar is a filesystem, not an image: it holds files (opt/) but neither manifest.json nor index.json, as a `docker export` or a single layer does
hint: make it an image first: `docker import FILE myimg:dev` (or `podman import`), then push myimg:dev

"#]]);
}

// ---------------------------------------------------------------------------------------------
// 8. broken layouts, named for what they are (issue 21)

#[test]
fn an_error_about_the_entry_asked_for_names_only_that_entry() {
    let damaged = Image::sample(134);
    let bench = Bench::new();
    let mut layout = Layout::new();
    let sbom = layout.sbom(3);
    layout.entry(&sbom, Some("sbom"));
    let manifest = layout.image(&damaged);
    layout.entry(&manifest, Some("damaged:1"));
    let bad_layer = sha256(damaged.layer(0));
    layout.damage_blob(&bad_layer);
    let archive = bench.path("layout.tar");
    layout.write_tar(&archive);

    // Nothing named: every entry, and why none is an image.
    let run = refused(&bench, &[text(&archive)]);
    run.assert_stderr(str![[r#"
error: [ROOT]/layout.tar holds no image, only sbom (SBOM (application/spdx+json)), damaged:1 (unreadable)

"#]]);

    // One entry named: its own problem, and nothing about the other.
    let run = refused(&bench, &[text(&archive), "--image", "damaged:1"]);
    assert_damaged(&run, damaged.layer(0));
    assert!(!run.stderr.contains("sbom"), "{}", run.stderr);

    let run = refused(
        &bench,
        &[text(&archive), "--image", "sbom", "--tag", "sbom:1"],
    );
    run.assert_stderr(str![[r#"
error: sbom in [ROOT]/layout.tar is not a container image but an artifact: SBOM (application/spdx+json)
hint: push artifacts with their own tools (oras, cosign); name an image with --image NAME[:TAG] or a digest

"#]]);
    assert!(!run.stderr.contains("damaged"), "{}", run.stderr);

    let run = refused(&bench, &[text(&archive), "--image", "other:2"]);
    run.assert_stderr(str![[r#"
error: [ROOT]/layout.tar has no image named other:2; it holds no image (not images: sbom (SBOM (application/spdx+json)), damaged:1 (unreadable))
hint: pick one with --image NAME[:TAG] or --image DIGEST (a unique prefix will do)

"#]]);
    assert_nothing_pushed(&bench);
}

/// Runs the real `tar` with `args` in `dir`.
fn tar(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("tar")
        .args(args)
        .current_dir(dir)
        .status()
        .expect("running tar");
    assert!(status.success(), "tar {args:?} failed");
}

#[test]
fn an_image_manifest_where_index_json_belongs_is_named_as_one() {
    let image = Image::sample(135);
    let bench = Bench::new();
    let source = bench.path("source");
    image.layout_dir(&source, &["dev"]);
    let layout = bench.path("layout");
    fixtures::skopeo_copy(&source, "dev", &format!("oci:{}:dev", layout.display()));
    // The mistake: the image's manifest copied over index.json.
    let index: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    let digest = index["manifests"][0]["digest"].as_str().unwrap();
    let manifest = layout
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"));
    std::fs::copy(&manifest, layout.join("index.json")).unwrap();
    let archive = bench.path("layout.tar");
    tar(&layout, &["-cf", text(&archive), "."]);

    let layers = image.diff_ids().len();
    for (input, shown) in [(&layout, "[ROOT]/layout"), (&archive, "[ROOT]/layout.tar")] {
        let run = bench.push(&[text(input), "--tag", "myimg:dev"]);
        assert_eq!((run.code, run.stdout.as_str()), (4, ""), "{run:?}");
        assert_eq!(
            run.stderr_lines(),
            [
                format!(
                    "error: {shown}: index.json is an image manifest ({OCI_MANIFEST}), with a config \
                     and {layers} layers, not an image index: an OCI layout's index.json lists \
                     manifests by digest"
                )
                .as_str(),
                "hint: store the manifest as blobs/sha256/<its sha256> and write an index.json naming it \
                 ({\"schemaVersion\":2,\"manifests\":[{\"mediaType\":...,\"digest\":...,\"size\":...}]}), \
                 or write the layout again with the tool that made it (skopeo copy ... oci:DIR:TAG)",
            ]
        );
    }
}

#[test]
fn a_symlink_loop_where_manifest_json_belongs_is_named_as_a_loop() {
    let image = Image::sample(136);
    let bench = Bench::new();
    let source = bench.path("source");
    image.layout_dir(&source, &["dev"]);
    let saved = bench.path("saved.tar");
    fixtures::skopeo_copy(
        &source,
        "dev",
        &format!("docker-archive:{}:myimg:dev", saved.display()),
    );
    let dir = bench.path("unpacked");
    std::fs::create_dir(&dir).unwrap();
    tar(&dir, &["-xf", text(&saved)]);
    // manifest.json -> loop/a -> ../manifest.json
    std::fs::remove_file(dir.join("manifest.json")).unwrap();
    std::fs::create_dir(dir.join("loop")).unwrap();
    std::os::unix::fs::symlink("loop/a", dir.join("manifest.json")).unwrap();
    std::os::unix::fs::symlink("../manifest.json", dir.join("loop/a")).unwrap();
    let archive = bench.path("looped.tar");
    tar(&dir, &["-cf", text(&archive), "."]);
    let run = bench.push(&[text(&archive)]);
    assert_eq!((run.code, run.stdout.as_str()), (4, ""), "{run:?}");
    run.assert_stderr(str![[r#"
error: [ROOT]/looped.tar: manifest.json: it is a symbolic link that never reaches a file (manifest.json -> loop/a -> manifest.json)
hint: point the link at the file it stands for, or write the archive again (e.g. docker save -o FILE IMAGE)

"#]]);

    let run = bench.push(&[text(&dir)]);
    assert_eq!((run.code, run.stdout.as_str()), (4, ""), "{run:?}");
    run.assert_stderr(str![[r#"
error: [ROOT]/unpacked: manifest.json: it is a symbolic link to loop/a that cannot be followed: Too many levels of symbolic links (os error 40)
hint: point the link at the file it stands for, or write the archive again (e.g. docker save -o FILE IMAGE)

"#]]);
}
