//! `kubectl registry push` of inputs other tools write, round two (issue 21): `docker save`
//! output compressed by the real xz, bzip2, zstd and gzip (as users keep it, and as `docker load`
//! and `podman load` read it; gzip followed by other bytes too), Go's `null` for empty lists (a
//! BuildKit export with no layers), and a Docker 1.10-1.12 manifest whose config is labelled
//! `application/octet-stream`. Each push goes to the real registry.

use snapbox::str;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::support::fixtures::{
    self, DOCKER_LAYER_GZIP, DOCKER_MANIFEST, Image, LayerCompression, OCI_CONFIG, OCI_MANIFEST,
    sha256,
};
use crate::support::layouts::Layout;
use crate::support::push::{Bench, Outcome};

fn text(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// `image` as the real skopeo writes a `docker-archive:` (what `docker save` holds), tagged
/// `myimg:dev`.
fn skopeo_docker_archive(bench: &Bench, image: &Image) -> PathBuf {
    let layout = bench.path("layout");
    image.layout_dir(&layout, &["dev"]);
    let archive = bench.path("img.tar");
    fixtures::skopeo_copy(
        &layout,
        "dev",
        &format!("docker-archive:{}:myimg:dev", archive.display()),
    );
    archive
}

/// Runs the real `tool` with `args` over `from`, writing its stdout to `to`.
fn compress_with(tool: &str, args: &[&str], from: &Path, to: &Path) {
    let status = Command::new(tool)
        .args(args)
        .stdin(std::fs::File::open(from).unwrap())
        .stdout(std::fs::File::create(to).unwrap())
        .status()
        .unwrap_or_else(|err| panic!("running {tool} (scripts/install-test-deps): {err}"));
    assert!(status.success(), "{tool} failed");
}

#[test]
fn docker_saves_compressed_by_xz_bzip2_and_zstd_push_whole() {
    let image = Image::with_layers(101, "linux/amd64", &[300 << 10, 40 << 10]);
    for (tool, args, name) in [
        ("xz", &["-T2", "-c"][..], "img.tar.xz"),
        ("bzip2", &["-c"][..], "img.tar.bz2"),
        ("zstd", &["-q", "-c"][..], "img.tar.zst"),
    ] {
        let bench = Bench::new();
        let plain = skopeo_docker_archive(&bench, &image);
        let compressed = bench.path(name);
        compress_with(tool, args, &plain, &compressed);
        let run = bench.push(&[text(&compressed)]);
        let (_, manifest) = bench.assert_pushed(&run, "myimg", "dev");
        assert_eq!(
            manifest["config"]["digest"],
            image.config_digest().as_str(),
            "{tool}"
        );
        bench.read_back_whole("myimg:dev");
    }
}

#[test]
fn an_xz_compressed_docker_save_pushes_from_standard_input() {
    let image = Image::sample(102);
    let bench = Bench::new();
    let plain = skopeo_docker_archive(&bench, &image);
    let compressed = bench.path("img.tar.xz");
    compress_with("xz", &["-c"], &plain, &compressed);
    let run = bench.run(bench.cmd().args(["push", "-"]).stdin_file(&compressed));
    let (_, manifest) = bench.assert_pushed(&run, "myimg", "dev");
    assert_eq!(manifest["config"]["digest"], image.config_digest().as_str());
}

#[test]
fn an_xz_stream_with_damage_is_refused_naming_xz() {
    let image = Image::sample(103);
    let bench = Bench::new();
    let plain = skopeo_docker_archive(&bench, &image);
    let compressed = bench.path("img.tar.xz");
    compress_with("xz", &["-c"], &plain, &compressed);
    let mut bytes = std::fs::read(&compressed).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&compressed, bytes).unwrap();
    let run = bench.push(&[text(&compressed)]);
    assert_eq!(run.code, 4, "{run:?}");
    assert!(
        run.stderr
            .starts_with("error: decompressing [ROOT]/img.tar.xz (xz)"),
        "{}",
        run.stderr
    );
    bench.assert_not_tagged("myimg", "dev");
}

/// A config with no layers, as Go writes an empty list: `"diff_ids": null`.
fn no_layer_config() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": ["PATH=/usr/bin:/bin"]},
        "rootfs": {"type": "layers", "diff_ids": null},
        "history": null,
    }))
    .unwrap()
}

#[test]
fn a_buildkit_export_with_no_layers_and_null_lists_pushes() {
    // BuildKit's OCI exporter on `FROM scratch` with nothing added: Go's nil slices.
    let bench = Bench::new();
    let mut layout = Layout::new();
    let config = layout.blob(OCI_CONFIG, &no_layer_config());
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": config,
        "layers": null,
    }))
    .unwrap();
    let mut descriptor = layout.blob(OCI_MANIFEST, &manifest);
    descriptor["platform"] = json!({"architecture": "amd64", "os": "linux"});
    layout.entry(&descriptor, Some("dev"));
    let archive = bench.path("export.tar");
    layout.write_tar(&archive);
    let run = bench.push(&[text(&archive), "--tag", "myimg:dev"]);
    let (reference, landed) = bench.assert_pushed(&run, "myimg", "dev");
    assert!(reference.ends_with(&sha256(&manifest)), "{reference}");
    assert_eq!(
        landed["layers"],
        Value::Null,
        "the manifest goes byte for byte"
    );
    assert_eq!(bench.read_back_whole("myimg:dev"), sha256(&manifest));
}

#[test]
fn a_docker_save_with_null_layers_pushes() {
    // BuildKit's docker exporter, and Go-written manifest.json files: `"Layers": null`.
    let bench = Bench::new();
    let config = no_layer_config();
    let config_name = format!("{}.json", sha256(&config).trim_start_matches("sha256:"));
    let manifest_json = serde_json::to_vec(&json!([
        {"Config": config_name, "RepoTags": ["myimg:dev"], "Layers": null}
    ]))
    .unwrap();
    let archive = bench.path("img.tar");
    fixtures::write_tar(
        &archive,
        &[
            fixtures::Entry {
                path: config_name.clone(),
                kind: fixtures::Kind::File(config.clone()),
            },
            fixtures::Entry {
                path: "manifest.json".to_string(),
                kind: fixtures::Kind::File(manifest_json),
            },
        ],
    );
    let run = bench.push(&[text(&archive)]);
    let (_, landed) = bench.assert_pushed(&run, "myimg", "dev");
    assert_eq!(landed["config"]["digest"], sha256(&config).as_str());
    assert_eq!(landed["layers"], json!([]));
    bench.read_back_whole("myimg:dev");
}

/// A schema 2 manifest as Docker 1.10 to 1.12 pushed it: the config typed
/// `application/octet-stream`, docker's gzip layer type.
fn docker_1_10_manifest(layout: &mut Layout, image: &Image, config: &[u8]) -> (Value, Vec<u8>) {
    let config = layout.blob("application/octet-stream", config);
    let layers: Vec<Value> = (0..image.layer_count())
        .map(|index| {
            layout.blob(
                DOCKER_LAYER_GZIP,
                &image.stored_layer(index, LayerCompression::Gzip),
            )
        })
        .collect();
    let manifest = serde_json::to_vec_pretty(&json!({
        "schemaVersion": 2,
        "mediaType": DOCKER_MANIFEST,
        "config": config,
        "layers": layers,
    }))
    .unwrap();
    (layout.blob(DOCKER_MANIFEST, &manifest), manifest)
}

#[test]
fn a_docker_1_10_manifest_with_an_octet_stream_config_is_an_image() {
    let image = Image::sample(104);
    let bench = Bench::new();
    let mut layout = Layout::new();
    let (descriptor, manifest) = docker_1_10_manifest(&mut layout, &image, image.config_bytes());
    layout.entry(&descriptor, Some("dev"));
    let run = push_layout(&bench, &layout);
    let (reference, landed) = bench.assert_pushed(&run, "myimg", "dev");
    assert!(reference.ends_with(&sha256(&manifest)), "{reference}");
    assert_eq!(landed["config"]["mediaType"], "application/octet-stream");
    bench.read_back_whole("myimg:dev");
}

#[test]
fn an_octet_stream_config_without_a_rootfs_is_refused_as_not_an_image() {
    let image = Image::sample(105);
    let bench = Bench::new();
    let mut layout = Layout::new();
    let (descriptor, _) = docker_1_10_manifest(&mut layout, &image, br#"{"notes":"no rootfs"}"#);
    layout.entry(&descriptor, Some("dev"));
    let run = push_layout(&bench, &layout);
    assert_eq!(run.code, 4, "{run:?}");
    run.assert_stderr(str![[r#"
error: dev in [ROOT]/layout is not a container image but an artifact: artifact (its config has no `rootfs` field, so it is not an image config)
hint: push artifacts with their own tools (oras, cosign); name an image with --image NAME[:TAG] or a digest

"#]]);
    assert!(!run.stderr.contains("rootfs.diff"), "{}", run.stderr);
    bench.assert_not_tagged("myimg", "dev");
}

#[test]
fn an_index_whose_configs_have_no_rootfs_is_refused_naming_the_field() {
    // What a tool that writes only a platform into each config leaves: `architecture` and
    // `os`, no `rootfs` (an image-spec config requires it).
    let image = Image::sample(107);
    let bench = Bench::new();
    let mut layout = Layout::new();
    let children: Vec<Value> = [("amd64", "linux"), ("arm64", "linux")]
        .into_iter()
        .map(|(architecture, os)| {
            let config = json!({"architecture": architecture, "os": os});
            let config = serde_json::to_vec(&config).unwrap();
            let mut descriptor = layout.artifact(
                (OCI_CONFIG, &config),
                (fixtures::OCI_LAYER, image.layer(0)),
                None,
            );
            descriptor["platform"] = json!({"architecture": architecture, "os": os});
            descriptor
        })
        .collect();
    let (index, _) = layout.index(&children);
    layout.entry(&index, Some("dev"));
    let run = push_layout(&bench, &layout);
    assert_eq!(run.code, 4, "{run:?}");
    run.assert_stderr(str![[r#"
error: dev in [ROOT]/layout is not a container image but an artifact: index of artifacts: the config of each of its manifests has no `rootfs` field, so none is an image config (an image config has `rootfs`, not only `architecture` and `os`)
hint: push artifacts with their own tools (oras, cosign); name an image with --image NAME[:TAG] or a digest

"#]]);
    bench.assert_not_tagged("myimg", "dev");
}

#[test]
fn a_gzip_archive_with_bytes_after_the_stream_pushes_as_gzip_reads_it() {
    // `gzip -d` says "trailing garbage ignored" and goes on; so does `tar -z`.
    let image = Image::sample(106);
    let bench = Bench::new();
    let plain = skopeo_docker_archive(&bench, &image);
    let compressed = bench.path("img.tar.gz");
    compress_with("gzip", &["-c"], &plain, &compressed);
    let mut bytes = std::fs::read(&compressed).unwrap();
    bytes.extend_from_slice(&[0u8; 1024]);
    bytes.extend_from_slice(b"-----BEGIN PGP SIGNATURE-----\n");
    std::fs::write(&compressed, bytes).unwrap();
    let run = bench.push(&[text(&compressed)]);
    let (_, manifest) = bench.assert_pushed(&run, "myimg", "dev");
    assert_eq!(manifest["config"]["digest"], image.config_digest().as_str());
}

/// `layout` written as a directory and pushed as `myimg:dev`.
fn push_layout(bench: &Bench, layout: &Layout) -> Outcome {
    let dir = bench.path("layout");
    layout.write_dir(&dir);
    bench.push(&[text(&dir), "--tag", "myimg:dev"])
}
