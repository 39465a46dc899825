//! `kubectl registry push` of multi-platform and multi-image archives: an index of the
//! platforms present, one platform with `--platform`, one image with `--image`, and the list
//! of what is inside when the choice is ambiguous. A real containerd pulls what was pushed.

use crate::support::fixtures::{self, Format, Image, LayerCompression, OCI_INDEX, OCI_LAYER_GZIP};
use crate::support::push::{Bench, Node, RUNTIME_HOST, layer_media_types};
use serde_json::{Value, json};
use snapbox::str;

fn multi_platform_bench(seed: u64, compression: LayerCompression) -> (Bench, String, Image, Image) {
    let bench = Bench::new();
    let amd64 = Image::sample_for(seed, "linux/amd64");
    let arm64 = Image::sample_for(seed + 1, "linux/arm64");
    let absent = Image::sample_for(seed + 2, "linux/arm/v7");
    let path = bench.path("multi.tar");
    fixtures::write_multi_platform(
        &path,
        "myimg:dev",
        &[&amd64, &arm64],
        &[&absent],
        compression,
    );
    (bench, path.to_str().unwrap().to_string(), amd64, arm64)
}

/// Pushes a multi-platform export missing linux/arm/v7's blobs: the tag is a new OCI index
/// of the two platforms present, each manifest as the archive stored it, and a node pulls both.
fn tags_an_index_of_the_platforms_present(seed: u64, compression: LayerCompression) {
    let (bench, path, amd64, arm64) = multi_platform_bench(seed, compression);
    let run = bench.push(&[&path]);
    let (reference, index) = bench.assert_pushed(&run, "myimg", "dev");
    let child = |image: &Image, platform: Value| {
        let manifest = image.manifest(compression);
        json!({
            "mediaType": image.manifest_media_type(compression),
            "digest": fixtures::sha256(&manifest),
            "size": manifest.len(),
            "platform": platform,
        })
    };
    assert_eq!(
        index,
        json!({
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": [
                child(&amd64, json!({"os": "linux", "architecture": "amd64"})),
                child(&arm64, json!({"os": "linux", "architecture": "arm64"})),
            ],
        })
    );
    let node = Node::start(&bench.registry);
    node.pull(&reference, &["--all-platforms"]);
    for image in [&amd64, &arm64] {
        let digest = fixtures::sha256(&image.manifest(compression));
        assert_eq!(node.layer_diff_ids(&digest), image.diff_ids());
    }
}

#[test]
fn a_multi_platform_export_tags_an_index_of_the_platforms_present() {
    tags_an_index_of_the_platforms_present(31, LayerCompression::Zstd);
}

#[test]
fn a_multi_platform_export_of_docker_manifests_tags_an_index_of_those_present() {
    tags_an_index_of_the_platforms_present(50, LayerCompression::Gzip);
}

#[test]
fn a_multi_platform_export_with_every_platform_pushes_its_own_index() {
    let bench = Bench::new();
    let amd64 = Image::sample_for(32, "linux/amd64");
    let arm64 = Image::sample_for(33, "linux/arm64");
    let path = bench.path("multi.tar");
    fixtures::write_multi_platform(
        &path,
        "myimg:dev",
        &[&amd64, &arm64],
        &[],
        LayerCompression::Gzip,
    );
    let run = bench.push(&[path.to_str().unwrap()]);
    let (reference, _) = bench.assert_pushed(&run, "myimg", "dev");
    let (bytes, _) = bench.landed("myimg:dev");
    assert_eq!(
        bytes,
        fixtures::multi_platform_index(&[&amd64, &arm64], &[], LayerCompression::Gzip)
    );
    Node::start(&bench.registry).assert_pulls(
        &format!(
            "{}@{}",
            reference.rsplit_once('@').unwrap().0,
            fixtures::sha256(&amd64.manifest(LayerCompression::Gzip))
        ),
        &amd64,
    );
}

#[test]
fn gzip_on_an_uncompressed_multi_platform_export_rewrites_manifests_and_index() {
    let (bench, path, amd64, arm64) = multi_platform_bench(52, LayerCompression::None);
    let run = bench.push(&[&path, "--compression", "gzip"]);
    let (reference, index) = bench.assert_pushed(&run, "myimg", "dev");
    assert_eq!(index["mediaType"], OCI_INDEX);
    let children = index["manifests"].as_array().unwrap();
    let platforms: Vec<&str> = children
        .iter()
        .map(|child| child["platform"]["architecture"].as_str().unwrap())
        .collect();
    assert_eq!(platforms, ["amd64", "arm64"]);
    let node = Node::start(&bench.registry);
    node.pull(&reference, &["--all-platforms"]);
    for (child, image) in children.iter().zip([&amd64, &arm64]) {
        let digest = child["digest"].as_str().unwrap();
        let manifest: Value =
            serde_json::from_slice(&bench.manifest_by_digest("myimg", digest)).unwrap();
        assert_eq!(layer_media_types(&manifest), [OCI_LAYER_GZIP; 2]);
        assert_eq!(manifest["config"]["digest"], image.config_digest().as_str());
        assert_eq!(node.layer_diff_ids(digest), image.diff_ids());
    }
}

#[test]
fn the_platform_flag_pushes_just_that_platforms_manifest() {
    let (bench, path, _, arm64) = multi_platform_bench(34, LayerCompression::Zstd);
    let run = bench.push(&[&path, "--platform", "linux/arm64", "-o", "json"]);
    run.assert_clean_success();
    let (bytes, digest) = bench.landed("myimg:dev");
    assert_eq!(bytes, arm64.manifest(LayerCompression::Zstd));
    let report = run.json();
    assert_eq!(
        report["ref"],
        format!("{RUNTIME_HOST}/myimg:dev@{digest}").as_str()
    );
    assert_eq!(report["platforms"], json!(["linux/arm64"]));
    let node = Node::start(&bench.registry);
    node.pull(
        report["ref"].as_str().unwrap(),
        &["--platform", "linux/arm64"],
    );
    assert_eq!(node.layer_diff_ids(&digest), arm64.diff_ids());
}

fn two_image_archive(bench: &Bench) -> (String, Image, Image) {
    let web = Image::sample(35);
    let api = Image::sample(36);
    let path = bench.path("all.tar");
    fixtures::write_images(
        Format::DockerLegacy,
        &path,
        &[(&web, &["web:dev"]), (&api, &["api:dev"])],
    );
    (path.to_str().unwrap().to_string(), web, api)
}

#[test]
fn a_multi_image_archive_without_image_lists_what_is_inside() {
    let bench = Bench::new();
    let (path, _, _) = two_image_archive(&bench);
    let run = bench.push(&[&path]);
    assert_eq!((run.code, run.stdout.as_str()), (4, ""));
    run.assert_stderr(str![[r#"
error: [ROOT]/all.tar holds 2 images; say which one with --image: web:dev, api:dev
hint: pick one with --image NAME[:TAG] or --image DIGEST (a unique prefix will do)

"#]]);
    assert_eq!(bench.tag_status("web", "dev"), 404);
    assert_eq!(bench.tag_status("api", "dev"), 404);
}

#[test]
fn the_image_flag_picks_one_image_of_a_multi_image_archive() {
    let bench = Bench::new();
    let (path, _, api) = two_image_archive(&bench);
    let run = bench.push(&[&path, "--image", "api:dev"]);
    let (reference, manifest) = bench.assert_pushed(&run, "api", "dev");
    assert_eq!(manifest["config"]["digest"], api.config_digest().as_str());
    assert_eq!(bench.tag_status("web", "dev"), 404);
    Node::start(&bench.registry).assert_pulls(&reference, &api);
}
