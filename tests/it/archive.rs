//! Image archives through the library API: every format opens with the right names, platforms
//! and layers; blobs stream back byte-identical and verified; selection and corrupt inputs give
//! clear errors; written single-platform archives import into a real containerd by name.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::support::containerd::Containerd;
use crate::support::fixtures::{self, Format, LayerCompression, Wrap, sha256};
use crate::support::run::assert_redacted;
use kubectl_registry::image::archive::{
    Archive, ArchiveError, Compression, Format as ArchiveFormat, Image, PlatformImage, Source,
    Wrapping, archive_error_in, is_verification_failure,
};
use kubectl_registry::plumbing::error::{Error, ExitCode};
use snapbox::str;

// ---------------------------------------------------------------------------------------------
// Helpers

fn open(path: &Path) -> Archive {
    Archive::open(&Source::Path(path.to_path_buf()))
        .unwrap_or_else(|err| panic!("opening {}: {err} ({err:?})", path.display()))
}

fn open_error(path: &Path) -> ArchiveError {
    match Archive::open(&Source::Path(path.to_path_buf())) {
        Ok(archive) => panic!("{} opened but should not: {archive:?}", path.display()),
        Err(err) => err,
    }
}

fn only_image(archive: &Archive) -> &Image {
    assert_eq!(archive.images().len(), 1, "{:?}", archive.images());
    &archive.images()[0]
}

fn only_platform(image: &Image) -> &PlatformImage {
    assert_eq!(image.platforms.len(), 1, "{:?}", image.platform_names());
    &image.platforms[0]
}

fn compression_of(compression: LayerCompression) -> Compression {
    match compression {
        LayerCompression::None => Compression::None,
        LayerCompression::Gzip => Compression::Gzip,
        LayerCompression::Zstd => Compression::Zstd,
    }
}

/// Checks a platform against the fixture it was written from, streaming every layer through
/// the verifying reader: bytes identical to what was stored, digest and diff_id verified.
fn assert_platform_is(
    archive: &Archive,
    platform: &PlatformImage,
    image: &fixtures::Image,
    stored: LayerCompression,
) {
    assert_eq!(platform.platform.to_string(), image.platform());
    assert_eq!(platform.config.digest.as_str(), image.config_digest());
    assert_eq!(platform.config.bytes, image.config_bytes());
    assert_eq!(platform.layers.len(), image.layer_count());
    for (index, layer) in platform.layers.iter().enumerate() {
        let expected = image.stored_layer(index, stored);
        assert_eq!(layer.diff_id.as_str(), image.diff_ids()[index]);
        assert_eq!(layer.compression, compression_of(stored), "layer {index}");
        assert_eq!(layer.size(), expected.len() as u64);
        if let Some(digest) = &layer.digest {
            assert_eq!(digest.as_str(), sha256(&expected), "layer {index} digest");
        }
        let mut reader = archive.layer_reader(layer).unwrap();
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).unwrap();
        assert!(bytes == expected, "layer {index} bytes differ");
        assert_eq!(reader.digest().unwrap().as_str(), sha256(&expected));
        assert_eq!(reader.diff_id().unwrap().as_str(), image.diff_ids()[index]);
    }
}

/// Checks `archive` holds one image, named `names`, of one platform: `image`, its layers stored
/// as `stored` (see [`assert_platform_is`]); returns that platform.
#[track_caller]
fn assert_only_image<'a>(
    archive: &'a Archive,
    names: &[&str],
    image: &fixtures::Image,
    stored: LayerCompression,
) -> &'a PlatformImage {
    let found = only_image(archive);
    assert_eq!(found.names, names);
    let platform = only_platform(found);
    assert_platform_is(archive, platform, image, stored);
    platform
}

/// Checks diff_ids and that every layer streams through the verifying reader, whatever
/// compression the writer chose (skopeo compresses layers for oci-archive).
fn assert_layers_verify(archive: &Archive, platform: &PlatformImage, image: &fixtures::Image) {
    assert_eq!(platform.config.digest.as_str(), image.config_digest());
    let diff_ids: Vec<String> = platform
        .layers
        .iter()
        .map(|l| l.diff_id.to_string())
        .collect();
    assert_eq!(diff_ids, image.diff_ids());
    for layer in &platform.layers {
        let mut reader = archive.layer_reader(layer).unwrap();
        io::copy(&mut reader, &mut io::sink()).unwrap();
        assert_eq!(reader.diff_id(), Some(&layer.diff_id));
    }
}

fn write(format: Format, image: &fixtures::Image, tags: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("image.tar");
    image.write(format, &path, tags);
    (dir, path)
}

fn read_to_error(reader: &mut impl Read) -> (u64, io::Error) {
    let mut buffer = vec![0u8; 64 << 10];
    let mut total = 0u64;
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => panic!("read {total} bytes to the end without an error"),
            Ok(read) => total += read as u64,
            Err(err) => return (total, err),
        }
    }
}

fn copy_truncated(from: &Path, len: u64, to: &Path) {
    let bytes = std::fs::read(from).unwrap();
    std::fs::write(to, &bytes[..len as usize]).unwrap();
}

/// Where the tar header of `member` starts in the tar file at `path`.
fn header_position(path: &Path, member: &str) -> u64 {
    let mut tar = tar::Archive::new(std::fs::File::open(path).unwrap());
    for entry in tar.entries().unwrap() {
        let entry = entry.unwrap();
        if entry.path().unwrap().to_str() == Some(member) {
            return entry.raw_header_position();
        }
    }
    panic!("{member} not in {}", path.display());
}

// ---------------------------------------------------------------------------------------------
// Every format

#[test]
fn docker_legacy_archive_has_repo_tags_and_resolves_a_symlinked_layer() {
    let image = fixtures::Image::with_repeated_layer(1);
    let (_dir, path) = write(Format::DockerLegacy, &image, &["myimg:dev"]);
    let archive = open(&path);
    assert_eq!(archive.format(), ArchiveFormat::Docker);
    assert_eq!(archive.wrapping(), Wrapping::None);
    let platform = assert_only_image(&archive, &["myimg:dev"], &image, LayerCompression::None);
    assert!(
        platform.manifest.is_none(),
        "docker save carries no manifest"
    );
    let (first, repeat) = (&platform.layers[0].location, &platform.layers[2].location);
    assert_ne!(first.member, repeat.member, "the repeat is its own member");
    assert_eq!(
        first.offset, repeat.offset,
        "the symlink resolves to the first file"
    );
}

#[test]
fn docker_legacy_archive_resolves_a_hardlinked_layer() {
    let image = fixtures::Image::with_repeated_layer(2);
    let (_dir, path) = write(Format::DockerLegacyHardlinks, &image, &["myimg:dev"]);
    let archive = open(&path);
    let platform = only_platform(only_image(&archive));
    assert_platform_is(&archive, platform, &image, LayerCompression::None);
    assert_eq!(
        platform.layers[0].location.offset,
        platform.layers[2].location.offset
    );
}

#[test]
fn docker25_archive_keeps_its_manifest_and_names_the_image_once() {
    let image = fixtures::Image::sample(3);
    let (_dir, path) = write(Format::Docker25, &image, &["myimg:dev"]);
    let archive = open(&path);
    assert_eq!(archive.format(), ArchiveFormat::OciLayout);
    // The name once: RepoTags first, the annotation deduplicated.
    let platform = assert_only_image(&archive, &["myimg:dev"], &image, LayerCompression::None);
    let manifest = platform.manifest.as_ref().expect("the layout's manifest");
    assert_eq!(manifest.bytes, image.manifest(LayerCompression::None));
    assert_eq!(manifest.media_type, fixtures::OCI_MANIFEST);
    assert_eq!(
        archive.manifest(platform).unwrap(),
        *manifest,
        "pushed byte for byte"
    );
}

#[test]
fn containerd_export_with_gzip_layers_keeps_docker_media_types() {
    let image = fixtures::Image::sample(4);
    let (_dir, path) = write(
        Format::ContainerdExport(LayerCompression::Gzip),
        &image,
        &["registry.example:5000/team/app:v1"],
    );
    let archive = open(&path);
    let platform = assert_only_image(
        &archive,
        &["registry.example:5000/team/app:v1"],
        &image,
        LayerCompression::Gzip,
    );
    assert_eq!(platform.config.media_type, fixtures::DOCKER_CONFIG);
    let manifest = platform.manifest.as_ref().unwrap();
    assert_eq!(manifest.media_type, fixtures::DOCKER_MANIFEST);
    for layer in &platform.layers {
        assert_eq!(
            layer.media_type.as_deref(),
            Some(fixtures::DOCKER_LAYER_GZIP)
        );
    }
}

#[test]
fn containerd_export_with_zstd_layers_verifies_diff_ids_by_decompressing() {
    let image = fixtures::Image::sample(5);
    let (_dir, path) = write(
        Format::ContainerdExport(LayerCompression::Zstd),
        &image,
        &["myimg:zstd"],
    );
    let archive = open(&path);
    let platform = only_platform(only_image(&archive));
    assert_platform_is(&archive, platform, &image, LayerCompression::Zstd);
    assert_eq!(
        platform.layers[0].media_type.as_deref(),
        Some(fixtures::OCI_LAYER_ZSTD)
    );
}

#[test]
fn oci_archive_ref_name_that_is_a_tag_gives_no_name() {
    let image = fixtures::Image::sample(6);
    let (_dir, path) = write(Format::OciArchive, &image, &["dev"]);
    let archive = open(&path);
    assert_only_image(&archive, &[], &image, LayerCompression::None);
    assert_eq!(archive.images()[0].bare_tags, ["dev"]);
    let selected = archive.select(Some("dev"), None).unwrap();
    assert_eq!(selected.bare_tags, ["dev"]);
}

#[test]
fn oci_archive_ref_name_that_is_a_reference_names_the_image() {
    let image = fixtures::Image::sample(7);
    let (_dir, path) = write(Format::OciArchive, &image, &["gcr.io/proj/app:1.2"]);
    let archive = open(&path);
    let found = only_image(&archive);
    assert_eq!(found.names, ["gcr.io/proj/app:1.2"]);
    assert!(found.bare_tags.is_empty());
}

#[test]
fn oci_layout_directory_is_read_in_place() {
    let image = fixtures::Image::sample(8);
    let dir = tempfile::tempdir().unwrap();
    image.layout_dir(dir.path(), &["dev"]);
    let archive = open(dir.path());
    assert_eq!(archive.wrapping(), Wrapping::Directory);
    let found = only_image(&archive);
    assert_eq!(found.bare_tags, ["dev"]);
    let platform = only_platform(found);
    assert_platform_is(&archive, platform, &image, LayerCompression::None);
    assert!(
        platform.layers[0]
            .location
            .member
            .starts_with("blobs/sha256/")
    );
}

#[test]
fn podman_docker_archive_with_digest_named_layers() {
    let image = fixtures::Image::sample(9);
    let (_dir, path) = write(Format::Podman, &image, &["localhost/myimg:dev"]);
    let archive = open(&path);
    assert_only_image(
        &archive,
        &["localhost/myimg:dev"],
        &image,
        LayerCompression::None,
    );
}

#[test]
fn nix_gzip_wrapped_archive_is_spooled_and_read() {
    let image = fixtures::Image::sample(10);
    let (_dir, path) = write(Format::NixGzip, &image, &["nixed:abc"]);
    let archive = open(&path);
    assert_eq!(archive.wrapping(), Wrapping::Gzip);
    assert_only_image(&archive, &["nixed:abc"], &image, LayerCompression::None);
}

#[test]
fn jib_gzip_layers_have_no_digest_until_resolved() {
    let image = fixtures::Image::sample(11);
    let (_dir, path) = write(Format::Jib, &image, &["jibbed:1"]);
    let archive = open(&path);
    let mut platform = only_platform(only_image(&archive)).clone();
    assert!(platform.layers.iter().all(|layer| layer.digest.is_none()));
    assert_platform_is(&archive, &platform, &image, LayerCompression::Gzip);
    assert!(matches!(
        archive.manifest(&platform),
        Err(ArchiveError::UnresolvedDigest { .. })
    ));

    archive.resolve_digests(&mut platform).unwrap();
    let digests: Vec<String> = platform
        .layers
        .iter()
        .map(|layer| layer.digest.as_ref().unwrap().to_string())
        .collect();
    assert_eq!(digests, image.layer_digests(LayerCompression::Gzip));
    let manifest = archive.manifest(&platform).unwrap();
    let parsed: serde_json::Value = serde_json::from_slice(&manifest.bytes).unwrap();
    assert_eq!(manifest.media_type, fixtures::OCI_MANIFEST);
    assert_eq!(parsed["config"]["digest"], image.config_digest());
    assert_eq!(parsed["layers"][0]["digest"], digests[0]);
    assert_eq!(parsed["layers"][0]["mediaType"], fixtures::OCI_LAYER_GZIP);
    assert_eq!(manifest.digest.as_str(), sha256(&manifest.bytes));
}

#[test]
fn crane_archive_with_a_sha256_config_name() {
    let image = fixtures::Image::sample(12);
    let (_dir, path) = write(Format::Crane, &image, &["craned:2"]);
    let archive = open(&path);
    assert_only_image(&archive, &["craned:2"], &image, LayerCompression::Gzip);
}

#[test]
fn zstd_wrapped_archive_is_spooled_and_read() {
    let image = fixtures::Image::sample(13);
    let (dir, plain) = write(Format::Docker25, &image, &["myimg:dev"]);
    let wrapped = dir.path().join("image.tar.zst");
    fixtures::wrap(&plain, Wrap::Zstd, &wrapped);
    let archive = open(&wrapped);
    assert_eq!(archive.wrapping(), Wrapping::Zstd);
    assert_only_image(&archive, &["myimg:dev"], &image, LayerCompression::None);
}

#[test]
fn a_stream_is_spooled_whether_plain_or_gzip() {
    let image = fixtures::Image::sample(14);
    let (dir, plain) = write(Format::DockerLegacy, &image, &["piped:1"]);
    let gzipped = dir.path().join("image.tar.gz");
    fixtures::wrap(&plain, Wrap::Gzip, &gzipped);
    for (path, wrapping) in [(&plain, Wrapping::Piped), (&gzipped, Wrapping::Gzip)] {
        let stream = std::fs::File::open(path).unwrap();
        let archive = Archive::from_reader(stream, "standard input").unwrap();
        assert_eq!(archive.wrapping(), wrapping);
        assert_eq!(archive.name(), "standard input");
        assert_only_image(&archive, &["piped:1"], &image, LayerCompression::None);
    }
    assert_eq!(Source::from_arg("-"), Source::Stdin);
    assert_eq!(Source::from_arg("x.tar"), Source::Path("x.tar".into()));
}

#[test]
fn a_named_pipe_is_spooled_like_standard_input() {
    let image = fixtures::Image::sample(16);
    let (dir, path) = write(Format::Docker25, &image, &["fifo:1"]);
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, std::fs::read(path).unwrap()).unwrap())
    };
    let archive = open(&fifo);
    writer.join().unwrap();
    assert_eq!(archive.wrapping(), Wrapping::Piped);
    assert_eq!(archive.loadable_as_is(&["fifo:1".to_string()]), None);
    assert_only_image(&archive, &["fifo:1"], &image, LayerCompression::None);
}

#[test]
fn archives_written_by_the_real_skopeo_open() {
    let image = fixtures::Image::sample(15);
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("layout");
    image.layout_dir(&layout, &["dev"]);

    let docker_archive = dir.path().join("docker.tar");
    let dest = format!("docker-archive:{}:myimg:dev", docker_archive.display());
    fixtures::skopeo_copy(&layout, "dev", &dest);
    let archive = open(&docker_archive);
    let found = only_image(&archive);
    assert_eq!(found.names.len(), 1, "{:?}", found.names);
    let selected = archive
        .select(Some("docker.io/library/myimg:dev"), None)
        .unwrap();
    assert_platform_is(
        &archive,
        only_platform(&selected),
        &image,
        LayerCompression::None,
    );

    let oci_archive = dir.path().join("oci.tar");
    let dest = format!("oci-archive:{}:dev", oci_archive.display());
    fixtures::skopeo_copy(&layout, "dev", &dest);
    let archive = open(&oci_archive);
    let found = only_image(&archive);
    assert_eq!(found.bare_tags, ["dev"]);
    let platform = only_platform(found);
    assert_layers_verify(&archive, platform, &image);
    assert!(platform.manifest.is_some());
}

// ---------------------------------------------------------------------------------------------
// Selection

#[test]
fn several_images_need_image_which_matches_normalised_names() {
    let first = fixtures::Image::sample(20);
    let second = fixtures::Image::sample(21);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("multi.tar");
    fixtures::write_images(
        Format::DockerLegacy,
        &path,
        &[
            (&first, &["first:1"]),
            (&second, &["second:2", "second:latest"]),
        ],
    );
    let archive = open(&path);
    assert_eq!(archive.images().len(), 2);

    let err = archive.select(None, None).unwrap_err();
    assert!(
        matches!(&err, ArchiveError::Ambiguous { images, .. } if images == &["first:1", "second:2"])
    );
    assert_redacted(
        &err.to_string(),
        str!["[ROOT]/multi.tar holds 2 images; say which one with --image: first:1, second:2"],
    );

    let chosen = archive
        .select(Some("docker.io/library/first:1"), None)
        .unwrap();
    assert_eq!(chosen.names, ["first:1"]);
    assert_eq!(
        only_platform(&chosen).config.digest.as_str(),
        first.config_digest()
    );
    let chosen = archive.select(Some("second"), None).unwrap();
    assert_eq!(
        only_platform(&chosen).config.digest.as_str(),
        second.config_digest()
    );

    let err = archive.select(Some("third:3"), None).unwrap_err();
    assert!(
        matches!(&err, ArchiveError::NoSuchImage { wanted, images, .. } if wanted == "third:3" && images.len() == 2)
    );
    let cli: Error = err.into();
    assert_eq!(cli.exit_code(), ExitCode::Input);
    assert_eq!(
        cli.hints(),
        ["pick one with --image NAME[:TAG] or --image DIGEST (a unique prefix will do)"]
    );
}

#[test]
fn a_multi_platform_export_pushes_the_platforms_present_and_selects_one() {
    let amd64 = fixtures::Image::sample_for(30, "linux/amd64");
    let arm64 = fixtures::Image::sample_for(31, "linux/arm64");
    let armv7 = fixtures::Image::sample_for(32, "linux/arm/v7");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("multi.tar");
    fixtures::write_multi_platform(
        &path,
        "myimg:multi",
        &[&amd64, &arm64],
        &[&armv7],
        LayerCompression::Zstd,
    );
    let archive = open(&path);
    let found = only_image(&archive);
    assert_eq!(found.names, ["myimg:multi"]);
    assert_eq!(found.platform_names(), ["linux/amd64", "linux/arm64"]);
    assert_eq!(found.absent_platforms.len(), 1);
    assert_eq!(
        found.absent_platforms[0]
            .platform
            .as_ref()
            .unwrap()
            .to_string(),
        "linux/arm/v7"
    );
    assert!(
        found.index.is_none(),
        "an index naming absent blobs cannot be pushed as is"
    );
    assert_platform_is(
        &archive,
        &found.platforms[1],
        &arm64,
        LayerCompression::Zstd,
    );

    let chosen = archive.select(None, Some("linux/arm64")).unwrap();
    assert_eq!(chosen.platform_names(), ["linux/arm64"]);
    assert!(chosen.absent_platforms.is_empty());

    let err = archive.select(None, Some("linux/arm/v7")).unwrap_err();
    let ArchiveError::NoSuchPlatform { platforms, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(
        platforms,
        &[
            "linux/amd64",
            "linux/arm64",
            "linux/arm/v7 (blobs not in the archive)"
        ]
    );
    let err = archive.select(None, Some("linux")).unwrap_err();
    assert!(matches!(err, ArchiveError::BadPlatform(_)), "{err:?}");
    let cli: Error = err.into();
    assert_eq!(cli.exit_code(), ExitCode::Usage);
}

#[test]
fn a_complete_multi_platform_index_is_kept_byte_for_byte() {
    let amd64 = fixtures::Image::sample_for(33, "linux/amd64");
    let arm64 = fixtures::Image::sample_for(34, "linux/arm64");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("multi.tar");
    let present = [&amd64, &arm64];
    fixtures::write_multi_platform(&path, "myimg:all", &present, &[], LayerCompression::Gzip);
    let archive = open(&path);
    let found = only_image(&archive);
    let index = found.index.as_ref().expect("every platform is present");
    assert_eq!(
        index.bytes,
        fixtures::multi_platform_index(&present, &[], LayerCompression::Gzip)
    );
    assert_eq!(index.media_type, fixtures::DOCKER_MANIFEST_LIST);
    assert_platform_is(
        &archive,
        &found.platforms[0],
        &amd64,
        LayerCompression::Gzip,
    );

    let one = archive.select(None, Some("linux/amd64")).unwrap();
    assert!(
        one.index.is_none(),
        "one platform of several is pushed without the index"
    );
}

#[test]
fn an_export_without_any_platform_blobs_says_what_is_missing() {
    let amd64 = fixtures::Image::sample_for(35, "linux/amd64");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.tar");
    fixtures::write_multi_platform(&path, "myimg:gone", &[], &[&amd64], LayerCompression::Zstd);
    let archive = open(&path);
    let err = archive.select(None, None).unwrap_err();
    let ArchiveError::NoPlatformPresent { absent, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(absent.len(), 1);
    assert!(
        absent[0].starts_with("linux/amd64: blobs/sha256/"),
        "{absent:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Streaming

#[test]
fn layers_of_one_archive_stream_in_parallel_on_threads_of_their_own() {
    let image = fixtures::Image::with_layers(40, "linux/amd64", &[600 << 10, 500 << 10, 400 << 10]);
    let (_dir, path) = write(Format::DockerLegacy, &image, &["par:1"]);
    // As the push pipeline does: the archive shared, each reader moved to a blocking thread that
    // outlives the borrow it was made from.
    let archive = std::sync::Arc::new(open(&path));
    let platform = only_platform(only_image(&archive));
    let handles: Vec<_> = platform
        .layers
        .iter()
        .map(|layer| {
            let mut reader = archive.layer_reader(layer).unwrap();
            let archive = std::sync::Arc::clone(&archive);
            std::thread::spawn(move || {
                let _shared = archive;
                let mut bytes = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    match reader.read(&mut chunk).unwrap() {
                        0 => return bytes,
                        read => bytes.extend_from_slice(&chunk[..read]),
                    }
                }
            })
        })
        .collect();
    for (index, handle) in handles.into_iter().enumerate() {
        assert!(
            handle.join().unwrap() == image.layer(index),
            "layer {index}"
        );
    }
}

#[test]
fn a_verified_blob_reader_checks_a_digest() {
    let image = fixtures::Image::sample(41);
    let (_dir, path) = write(Format::DockerLegacy, &image, &["blob:1"]);
    let archive = open(&path);
    let layer = &only_platform(only_image(&archive)).layers[0];
    let right = layer.diff_id.clone();
    let mut bytes = Vec::new();
    archive
        .verified_blob_reader(&layer.location, &right)
        .unwrap()
        .read_to_end(&mut bytes)
        .unwrap();
    assert!(bytes == image.layer(0));

    let wrong = kubectl_registry::image::digest::Digest::of_bytes(b"something else");
    let mut reader = archive
        .verified_blob_reader(&layer.location, &wrong)
        .unwrap();
    let (delivered, err) = read_to_error(&mut reader);
    assert!(delivered < layer.size(), "the last bytes are withheld");
    assert!(err.to_string().contains(wrong.as_str()), "{err}");
    assert_redacted(
        &err.to_string(),
        str![
            "digest of 6b9936b40baa2856b8e5da013df940bb935669b586e9727b5d18686f21e4d37b/layer.tar in [ROOT]/image.tar does not match: expected sha256:[DIGEST], got sha256:[DIGEST]"
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Corrupt inputs

#[test]
fn a_flipped_byte_in_an_uncompressed_layer_fails_its_diff_id_at_the_end() {
    let image = fixtures::Image::sample(50);
    let (_dir, path) = write(Format::DockerLegacy, &image, &["flip:1"]);
    let location = only_platform(only_image(&open(&path))).layers[1]
        .location
        .clone();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[(location.offset + 5000) as usize] ^= 0x55;
    std::fs::write(&path, bytes).unwrap();

    let archive = open(&path);
    let layer = &only_platform(only_image(&archive)).layers[1];
    let mut reader = archive.layer_reader(layer).unwrap();
    let (delivered, err) = read_to_error(&mut reader);
    assert!(
        delivered < layer.size(),
        "no complete bad layer is handed over"
    );
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(is_verification_failure(&err));
    let Some(ArchiveError::Mismatch {
        what,
        expected,
        member,
        archive: name,
        ..
    }) = archive_error_in(&err)
    else {
        panic!("{err:?}");
    };
    assert!(what.starts_with("diff_id"), "{what}");
    assert_eq!(expected, &image.diff_ids()[1]);
    assert!(member.contains(&image.diff_ids()[1]), "{member}");
    assert_eq!(name, &path.display().to_string());
    let text = err.to_string();
    assert!(
        text.contains("diff_id") && text.contains(&image.diff_ids()[1]),
        "{text}"
    );
    let again = reader.read(&mut [0u8; 16]).unwrap_err();
    assert_eq!(
        again.kind(),
        io::ErrorKind::InvalidData,
        "the failure sticks"
    );
}

#[test]
fn a_flipped_byte_in_a_zstd_layer_fails_its_digest() {
    let image = fixtures::Image::sample(51);
    let (_dir, path) = write(
        Format::ContainerdExport(LayerCompression::Zstd),
        &image,
        &["flip:zstd"],
    );
    let location = only_platform(only_image(&open(&path))).layers[0]
        .location
        .clone();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[(location.offset + location.len / 2) as usize] ^= 0x01;
    std::fs::write(&path, bytes).unwrap();

    let archive = open(&path);
    let layer = &only_platform(only_image(&archive)).layers[0];
    let (_, err) = read_to_error(&mut archive.layer_reader(layer).unwrap());
    let Some(ArchiveError::Mismatch { what, expected, .. }) = archive_error_in(&err) else {
        panic!("{err:?}");
    };
    assert_eq!(*what, "digest");
    assert_eq!(expected, &image.layer_digests(LayerCompression::Zstd)[0]);
}

#[test]
fn a_flipped_byte_in_a_jib_gzip_layer_is_caught_without_a_known_digest() {
    let image = fixtures::Image::sample(52);
    let (_dir, path) = write(Format::Jib, &image, &["flip:gz"]);
    let location = only_platform(only_image(&open(&path))).layers[0]
        .location
        .clone();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[(location.offset + location.len / 2) as usize] ^= 0x10;
    std::fs::write(&path, bytes).unwrap();

    let archive = open(&path);
    let mut platform = only_platform(only_image(&archive)).clone();
    let (_, err) = read_to_error(&mut archive.layer_reader(&platform.layers[0]).unwrap());
    assert!(is_verification_failure(&err), "{err:?}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    let err = archive.resolve_digests(&mut platform).unwrap_err();
    assert!(
        matches!(
            err,
            ArchiveError::Mismatch { .. } | ArchiveError::Invalid { .. }
        ),
        "{err:?}"
    );
}

#[test]
fn a_truncated_archive_is_refused_wherever_it_is_cut() {
    let image = fixtures::Image::sample(53);
    let (dir, path) = write(Format::DockerLegacy, &image, &["cut:1"]);
    let len = std::fs::metadata(&path).unwrap().len();
    let archive = open(&path);
    let layer = only_platform(only_image(&archive)).layers[1]
        .location
        .clone();
    let manifest_header = header_position(&path, "manifest.json");
    let cut = dir.path().join("cut.tar");

    copy_truncated(&path, layer.offset + 1000, &cut);
    let err = open_error(&cut);
    assert!(
        matches!(&err, ArchiveError::Truncated { member, .. } if *member == layer.member),
        "{err:?}"
    );
    assert_redacted(
        &err.to_string(),
        str![
            "[ROOT]/cut.tar is truncated: member 1a70919a05fc3ac4af23206db9a51b059743ecf820af3a63f8ae8d6cab3fc047/layer.tar ends at byte 522240 but the file has 315880 bytes"
        ],
    );

    copy_truncated(&path, manifest_header, &cut);
    let err = open_error(&cut);
    assert!(
        matches!(&err, ArchiveError::TruncatedBeforeMetadata { .. }),
        "{err:?}"
    );
    assert_redacted(
        &err.to_string(),
        str!["[ROOT]/cut.tar ends before its manifest.json or index.json: it looks truncated"],
    );

    let last_layer = only_platform(only_image(&archive)).layers[2]
        .location
        .clone();
    copy_truncated(&path, last_layer.offset - 512, &cut);
    let err = open_error(&cut);
    assert!(
        matches!(&err, ArchiveError::TruncatedBeforeMetadata { .. }),
        "cut at a member boundary: {err:?}"
    );

    copy_truncated(&path, manifest_header + 100, &cut);
    let err = open_error(&cut);
    assert!(matches!(&err, ArchiveError::Tar { .. }), "{err:?}");

    for point in [
        10,
        700,
        len / 3,
        len / 2,
        (len * 9) / 10,
        manifest_header + 512,
    ] {
        copy_truncated(&path, point, &cut);
        let err = open_error(&cut);
        assert!(
            err.to_string().contains(&cut.display().to_string()),
            "{err}"
        );
        let cli: Error = err.into();
        assert_eq!(cli.exit_code(), ExitCode::Input, "cut at {point}");
    }
}

#[test]
fn a_truncated_gzip_wrapper_is_a_decompression_error() {
    let image = fixtures::Image::sample(54);
    let (dir, path) = write(Format::NixGzip, &image, &["cut:gz"]);
    let len = std::fs::metadata(&path).unwrap().len();
    let cut = dir.path().join("cut.tar.gz");
    copy_truncated(&path, len / 2, &cut);
    let err = open_error(&cut);
    assert!(
        matches!(
            &err,
            ArchiveError::Decompress {
                compression: "gzip",
                ..
            }
        ),
        "{err:?}"
    );
    let cli: Error = err.into();
    assert!(
        !cli.causes().is_empty(),
        "the decoder's error is kept as the cause"
    );
}

#[test]
fn inputs_that_are_not_archives_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let random = dir.path().join("random.bin");
    let mut bytes = vec![0u8; 100_000];
    fixtures::Rng::new(55).fill(&mut bytes);
    std::fs::write(&random, &bytes).unwrap();
    let err = open_error(&random);
    assert!(matches!(&err, ArchiveError::NotAnArchive { .. }), "{err:?}");
    assert_redacted(
        &err.to_string(),
        str![
            "[ROOT]/random.bin is not an image archive: it is not a tar file, nor gzip, zstd, bzip2 or xz compressed"
        ],
    );

    let empty = dir.path().join("empty.tar");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(open_error(&empty), ArchiveError::Empty { .. }));

    let missing = dir.path().join("missing.tar");
    let err = open_error(&missing);
    let ArchiveError::Open { source, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(source.kind(), io::ErrorKind::NotFound);
    assert_redacted(&err.to_string(), str!["cannot read [ROOT]/missing.tar"]);

    let xz = dir.path().join("image.tar.xz");
    std::fs::write(&xz, b"\xfd7zXZ\x00\x00\x04rest").unwrap();
    let err = open_error(&xz);
    assert_redacted(
        &err.to_string(),
        str!["decompressing [ROOT]/image.tar.xz (xz)"],
    );

    let not_layout = tempfile::tempdir().unwrap();
    let err = open_error(not_layout.path());
    assert_redacted(
        &err.to_string(),
        str![
            "[ROOT] is not an image archive: it is a directory without index.json or manifest.json, so neither an OCI layout nor a `dir:` copy (skopeo, podman save --format docker-dir)"
        ],
    );

    let plain = dir.path().join("plain.tar");
    fixtures::write_tar(&plain, &[entry("hello.txt", b"hi")]);
    let err = open_error(&plain);
    assert_redacted(
        &err.to_string(),
        str![
            "[ROOT]/plain.tar is not an image archive: it has neither manifest.json (docker) nor index.json (OCI)"
        ],
    );
    let cli: Error = err.into();
    assert_eq!(cli.exit_code(), ExitCode::Input);
    assert_eq!(cli.hints().len(), 1, "says what an archive is");
}

fn entry(path: &str, bytes: &[u8]) -> fixtures::Entry {
    fixtures::Entry {
        path: path.to_string(),
        kind: fixtures::Kind::File(bytes.to_vec()),
    }
}

#[test]
fn archives_with_no_image_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let docker = dir.path().join("docker.tar");
    fixtures::write_tar(&docker, &[entry("manifest.json", b"[]")]);
    assert!(matches!(
        open_error(&docker),
        ArchiveError::NoImages {
            looks_truncated: false,
            ..
        }
    ));
    let oci = dir.path().join("oci.tar");
    fixtures::write_tar(
        &oci,
        &[
            entry("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#),
            entry("index.json", br#"{"schemaVersion":2,"manifests":[]}"#),
        ],
    );
    let err = open_error(&oci);
    assert!(err.to_string().ends_with("holds no image"), "{err}");
}

#[test]
fn bad_metadata_names_the_member() {
    let image = fixtures::Image::sample(56);
    let dir = tempfile::tempdir().unwrap();
    let config_name = format!(
        "{}.json",
        image.config_digest().trim_start_matches("sha256:")
    );
    let manifest = |layers: &str| {
        format!(r#"[{{"Config":"{config_name}","RepoTags":["bad:1"],"Layers":[{layers}]}}]"#)
    };
    let layers: Vec<String> = (0..image.layer_count())
        .map(|i| format!("\"l{i}.tar\""))
        .collect();
    let build = |name: &str, extra: Vec<fixtures::Entry>| {
        let path = dir.path().join(name);
        let mut entries: Vec<fixtures::Entry> = (0..image.layer_count())
            .map(|i| entry(&format!("l{i}.tar"), image.layer(i)))
            .collect();
        entries.extend(extra);
        fixtures::write_tar(&path, &entries);
        path
    };

    let malformed = build(
        "malformed.tar",
        vec![entry("manifest.json", b"[{\"Config\": ")],
    );
    let err = open_error(&malformed);
    assert!(
        matches!(&err, ArchiveError::Json { member, .. } if member == "manifest.json"),
        "{err:?}"
    );

    let absent = build(
        "absent.tar",
        vec![
            entry(&config_name, image.config_bytes()),
            entry(
                "manifest.json",
                manifest(&format!("{},\"gone/layer.tar\"", layers[..2].join(","))).as_bytes(),
            ),
        ],
    );
    let err = open_error(&absent);
    assert!(
        matches!(&err, ArchiveError::MissingMember { member, listed_by, .. }
            if member == "gone/layer.tar" && listed_by == "manifest.json"),
        "{err:?}"
    );
    assert_redacted(
        &err.to_string(),
        str!["[ROOT]/absent.tar: manifest.json names gone/layer.tar, which is not in the archive"],
    );

    let bad_config = build(
        "badconfig.tar",
        vec![
            entry(&config_name, b"{not json"),
            entry("manifest.json", manifest(&layers.join(",")).as_bytes()),
        ],
    );
    let err = open_error(&bad_config);
    assert!(
        matches!(&err, ArchiveError::Json { member, .. } if *member == config_name),
        "{err:?}"
    );

    let mut huge = b"[".to_vec();
    huge.resize((17 << 20) - 1, b' ');
    huge.push(b']');
    let oversized = build("huge.tar", vec![entry("manifest.json", &huge)]);
    let err = open_error(&oversized);
    assert!(matches!(&err, ArchiveError::TooLarge { .. }), "{err:?}");
}

// ---------------------------------------------------------------------------------------------
// Writing a single-platform archive for node loaders

#[test]
fn a_written_archive_reopens_as_a_named_single_platform_oci_layout() {
    let image = fixtures::Image::sample(60);
    let (dir, path) = write(Format::DockerLegacy, &image, &["myimg:dev"]);
    let archive = open(&path);
    let platform = only_platform(only_image(&archive));
    let names = vec!["kind-registry:5000/myimg:dev".to_string()];
    assert_eq!(
        archive.loadable_as_is(&names),
        None,
        "legacy archives are rewritten"
    );

    let out = dir.path().join("out.tar");
    archive
        .write_docker_archive(platform, &names, &out)
        .unwrap();
    let written = open(&out);
    assert_eq!(written.format(), ArchiveFormat::OciLayout);
    let found = only_image(&written);
    assert_eq!(found.names, names);
    let reopened = only_platform(found);
    assert_platform_is(&written, reopened, &image, LayerCompression::None);
    assert_eq!(
        reopened.manifest.as_ref().unwrap(),
        &archive.manifest(platform).unwrap(),
        "the node gets the manifest a push would send"
    );
    assert_eq!(written.loadable_as_is(&names), Some(out.as_path()));
    assert_eq!(written.loadable_as_is(&["other:1".to_string()]), None);
    let onto_itself = written.write_docker_archive(reopened, &names, &out);
    assert!(
        matches!(onto_itself, Err(ArchiveError::Write { .. })),
        "{onto_itself:?}"
    );
    assert_eq!(
        open(&out).loadable_as_is(&names),
        Some(out.as_path()),
        "left intact"
    );

    let index: serde_json::Value =
        serde_json::from_slice(&read_member(&out, "index.json")).unwrap();
    let annotations = &index["manifests"][0]["annotations"];
    assert_eq!(
        annotations["io.containerd.image.name"],
        "kind-registry:5000/myimg:dev"
    );
    assert_eq!(annotations["org.opencontainers.image.ref.name"], "dev");
    let docker: serde_json::Value =
        serde_json::from_slice(&read_member(&out, "manifest.json")).unwrap();
    assert_eq!(docker[0]["RepoTags"][0], "kind-registry:5000/myimg:dev");
}

fn read_member(path: &Path, member: &str) -> Vec<u8> {
    let mut tar = tar::Archive::new(std::fs::File::open(path).unwrap());
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().to_str() == Some(member) {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            return bytes;
        }
    }
    panic!("{member} not in {}", path.display());
}

#[test]
fn an_oci_input_is_written_with_its_original_manifest() {
    let image = fixtures::Image::sample(61);
    let (dir, path) = write(
        Format::ContainerdExport(LayerCompression::Gzip),
        &image,
        &["myimg:gz"],
    );
    let archive = open(&path);
    let platform = only_platform(only_image(&archive));
    let out = dir.path().join("out.tar");
    archive
        .write_docker_archive(platform, &["myimg:gz".to_string()], &out)
        .unwrap();
    let written = open(&out);
    let reopened = only_platform(only_image(&written));
    assert_eq!(reopened.manifest, platform.manifest);
    assert_platform_is(&written, reopened, &image, LayerCompression::Gzip);
}

#[test]
fn only_an_uncompressed_single_platform_archive_naming_the_image_is_loaded_as_is() {
    let image = fixtures::Image::sample(62);
    let (dir, path) = write(Format::Docker25, &image, &["myimg:dev"]);
    let names = ["myimg:dev".to_string()];
    assert_eq!(open(&path).loadable_as_is(&names), Some(path.as_path()));
    assert_eq!(
        open(&path).loadable_as_is(&["docker.io/library/myimg:dev".to_string()]),
        Some(path.as_path())
    );
    assert_eq!(
        open(&path).loadable_as_is(&["myimg:other".to_string()]),
        None
    );

    let gzipped = dir.path().join("image.tar.gz");
    fixtures::wrap(&path, Wrap::Gzip, &gzipped);
    assert_eq!(open(&gzipped).loadable_as_is(&names), None);

    let skopeo_style = dir.path().join("oci.tar");
    image.write(Format::OciArchive, &skopeo_style, &["dev"]);
    assert_eq!(
        open(&skopeo_style).loadable_as_is(&names),
        None,
        "ctr would not name it"
    );

    let multi = dir.path().join("multi.tar");
    let arm64 = fixtures::Image::sample_for(63, "linux/arm64");
    fixtures::write_multi_platform(
        &multi,
        "myimg:dev",
        &[&image, &arm64],
        &[],
        LayerCompression::Zstd,
    );
    assert_eq!(open(&multi).loadable_as_is(&names), None);
}

#[test]
fn containerd_imports_written_archives_under_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = fixtures::Image::sample(70);
    let jib = fixtures::Image::sample(71);
    let zstd = fixtures::Image::sample(72);
    let cases = [
        (
            Format::DockerLegacy,
            &legacy,
            "myimg:dev",
            "docker.io/library/myimg:dev",
        ),
        (
            Format::Jib,
            &jib,
            "kind-registry:5000/jib:1",
            "kind-registry:5000/jib:1",
        ),
        (
            Format::ContainerdExport(LayerCompression::Zstd),
            &zstd,
            "team/zimg:z",
            "docker.io/team/zimg:z",
        ),
    ];
    let containerd = Containerd::start();
    for (index, (format, image, name, full)) in cases.into_iter().enumerate() {
        let input = dir.path().join(format!("in{index}.tar"));
        image.write(format, &input, &["source:tag"]);
        let archive = open(&input);
        let mut platform = only_platform(only_image(&archive)).clone();
        let out = dir.path().join(format!("out{index}.tar"));
        archive
            .write_docker_archive(&platform, &[name.to_string()], &out)
            .unwrap();
        archive.resolve_digests(&mut platform).unwrap();
        let manifest = archive.manifest(&platform).unwrap();

        containerd.import(&out);
        assert!(
            containerd.images().iter().any(|n| n == full),
            "{full} ({format:?}) not in {:?}",
            containerd.images()
        );
        let listing = containerd.ctr(&["images", "ls", &format!("name=={full}")]);
        let listing = String::from_utf8_lossy(&listing.stdout);
        assert!(
            listing.contains(manifest.digest.as_str()),
            "{full} should point at {}: {listing}",
            manifest.digest
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Memory

/// Counts each thread's live heap bytes and their peak, so one test can measure its own
/// allocations while others run on other threads.
struct CountingAllocator;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

fn track(delta: i64) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            track(layout.size() as i64);
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            track(layout.size() as i64);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        track(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            track(new_size as i64 - layout.size() as i64);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Runs `work` and returns how far this thread's live heap rose above where it started.
fn peak_growth<T>(work: impl FnOnce() -> T) -> (T, i64) {
    let start = LIVE.with(Cell::get);
    PEAK.with(|peak| peak.set(start));
    let result = work();
    (result, PEAK.with(Cell::get) - start)
}

#[test]
fn a_200_mb_layer_streams_through_the_verifying_reader_in_fixed_memory() {
    const LAYER: u64 = 200 << 20;
    const CEILING: i64 = 8 << 20;
    let dir = tempfile::tempdir().unwrap();
    let big = fixtures::write_big_image(&dir.path().join("big.tar"), LAYER);

    let (archive, opening) = peak_growth(|| open(&big.archive));
    assert!(opening < CEILING, "opening allocated {opening} bytes");
    let layer = only_platform(only_image(&archive)).layers[0].clone();
    assert_eq!(layer.diff_id.as_str(), big.diff_id);
    assert_eq!(layer.size(), big.layer_size);

    let (read, reading) = peak_growth(|| {
        let mut reader = archive.layer_reader(&layer).unwrap();
        let mut buffer = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            match reader.read(&mut buffer).unwrap() {
                0 => break,
                read => total += read as u64,
            }
        }
        assert_eq!(reader.diff_id().unwrap().as_str(), big.diff_id);
        total
    });
    assert_eq!(read, big.layer_size);
    assert!(
        reading < CEILING,
        "reading a {LAYER}-byte layer allocated {reading} bytes at peak"
    );
}
