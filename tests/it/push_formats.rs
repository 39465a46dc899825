//! `kubectl registry push` of every archive format users hand us, end to end: the built binary
//! pushes to a real registry the stand-in cluster advertises, prints exactly the runtime ref of
//! what landed (read back by skopeo), and a real containerd pulls that ref through the node's
//! mirror and holds the fixture's layers.

use crate::support::fixtures::{self, Format, Image, LayerCompression, Wrap};
use crate::support::push::{Bench, Node};

/// Writes `image` as `myimg:dev` in `format`, pushes it, and checks the registry and a node.
fn pushes_and_pulls(format: Format, image: &Image) {
    let bench = Bench::new();
    let archive = bench.path("img.tar");
    image.write(format, &archive, &["myimg:dev"]);
    pushes_file_and_pulls(&bench, archive.to_str().unwrap(), &[], image);
}

/// Pushes `source` (with `extra` args), expects `myimg:dev`, and has a node pull the ref.
fn pushes_file_and_pulls(bench: &Bench, source: &str, extra: &[&str], image: &Image) {
    let mut args = vec![source];
    args.extend_from_slice(extra);
    let run = bench.push(&args);
    let (reference, manifest) = bench.assert_pushed(&run, "myimg", "dev");
    assert_eq!(
        manifest["config"]["digest"].as_str(),
        Some(image.config_digest().as_str()),
        "the pushed config is the fixture's"
    );
    Node::start(&bench.registry).assert_pulls(&reference, image);
}

#[test]
fn legacy_docker_save_with_a_symlinked_layer() {
    let image = Image::with_repeated_layer(1);
    pushes_and_pulls(Format::DockerLegacy, &image);
}

#[test]
fn legacy_docker_save_with_a_hardlinked_layer() {
    let image = Image::with_repeated_layer(2);
    pushes_and_pulls(Format::DockerLegacyHardlinks, &image);
}

#[test]
fn docker_25_save_pushes_its_own_manifest_byte_for_byte() {
    let image = Image::sample(3);
    let bench = Bench::new();
    let archive = bench.path("img.tar");
    image.write(Format::Docker25, &archive, &["myimg:dev"]);
    pushes_file_and_pulls(&bench, archive.to_str().unwrap(), &[], &image);
    let (bytes, _) = bench.landed("myimg:dev");
    assert_eq!(bytes, image.manifest(LayerCompression::None));
}

#[test]
fn containerd_export_with_gzip_layers_keeps_its_docker_manifest() {
    let image = Image::sample(4);
    let bench = Bench::new();
    let archive = bench.path("img.tar");
    image.write(
        Format::ContainerdExport(LayerCompression::Gzip),
        &archive,
        &["myimg:dev"],
    );
    pushes_file_and_pulls(&bench, archive.to_str().unwrap(), &[], &image);
    let (bytes, _) = bench.landed("myimg:dev");
    assert_eq!(bytes, image.manifest(LayerCompression::Gzip));
}

#[test]
fn containerd_export_with_zstd_layers() {
    let image = Image::sample(5);
    let bench = Bench::new();
    let archive = bench.path("img.tar");
    image.write(
        Format::ContainerdExport(LayerCompression::Zstd),
        &archive,
        &["myimg:dev"],
    );
    pushes_file_and_pulls(&bench, archive.to_str().unwrap(), &[], &image);
    let (bytes, _) = bench.landed("myimg:dev");
    assert_eq!(bytes, image.manifest(LayerCompression::Zstd));
}

#[test]
fn oci_archive_naming_its_image_in_ref_name() {
    pushes_and_pulls(Format::OciArchive, &Image::sample(6));
}

#[test]
fn oci_layout_directory() {
    let image = Image::sample(7);
    let bench = Bench::new();
    let layout = bench.path("layout");
    image.layout_dir(&layout, &["myimg:dev"]);
    pushes_file_and_pulls(&bench, layout.to_str().unwrap(), &[], &image);
}

#[test]
fn podman_docker_archive() {
    pushes_and_pulls(Format::Podman, &Image::sample(8));
}

#[test]
fn nix_gzip_wrapped_docker_archive() {
    pushes_and_pulls(Format::NixGzip, &Image::sample(9));
}

#[test]
fn jib_archive_with_gzip_layers_named_by_digest() {
    pushes_and_pulls(Format::Jib, &Image::sample(10));
}

#[test]
fn crane_archive() {
    pushes_and_pulls(Format::Crane, &Image::sample(11));
}

#[test]
fn zstd_wrapped_docker_archive() {
    let image = Image::sample(12);
    let bench = Bench::new();
    let plain = bench.path("plain.tar");
    image.write(Format::DockerLegacy, &plain, &["myimg:dev"]);
    let wrapped = bench.path("img.tar.zst");
    fixtures::wrap(&plain, Wrap::Zstd, &wrapped);
    pushes_file_and_pulls(&bench, wrapped.to_str().unwrap(), &[], &image);
}

#[test]
fn gzip_wrapped_containerd_export_from_stdin() {
    let image = Image::sample(13);
    let bench = Bench::new();
    let plain = bench.path("plain.tar");
    image.write(
        Format::ContainerdExport(LayerCompression::Gzip),
        &plain,
        &["myimg:dev"],
    );
    let wrapped = bench.path("img.tar.gz");
    fixtures::wrap(&plain, Wrap::Gzip, &wrapped);
    let run = bench.run(bench.cmd().args(["push", "-"]).stdin_file(&wrapped));
    let (reference, _) = bench.assert_pushed(&run, "myimg", "dev");
    Node::start(&bench.registry).assert_pulls(&reference, &image);
}

#[test]
fn docker_archive_from_stdin() {
    let image = Image::sample(14);
    let bench = Bench::new();
    let archive = bench.path("img.tar");
    image.write(Format::Podman, &archive, &["myimg:dev"]);
    let run = bench.run(bench.cmd().args(["push", "-"]).stdin_file(&archive));
    let (reference, _) = bench.assert_pushed(&run, "myimg", "dev");
    Node::start(&bench.registry).assert_pulls(&reference, &image);
}

#[test]
fn docker_archive_written_by_skopeo() {
    let image = Image::sample(15);
    let bench = Bench::new();
    let layout = bench.path("layout");
    image.layout_dir(&layout, &["dev"]);
    let archive = bench.path("skopeo.tar");
    fixtures::skopeo_copy(
        &layout,
        "dev",
        &format!("docker-archive:{}:myimg:dev", archive.display()),
    );
    pushes_file_and_pulls(&bench, archive.to_str().unwrap(), &[], &image);
}

#[test]
fn oci_archive_written_by_skopeo_needs_a_name_from_tag() {
    let image = Image::sample(16);
    let bench = Bench::new();
    let layout = bench.path("layout");
    image.layout_dir(&layout, &["dev"]);
    let archive = bench.path("skopeo-oci.tar");
    fixtures::skopeo_copy(
        &layout,
        "dev",
        &format!("oci-archive:{}:dev", archive.display()),
    );
    pushes_file_and_pulls(
        &bench,
        archive.to_str().unwrap(),
        &["--tag", "myimg:dev"],
        &image,
    );
}
