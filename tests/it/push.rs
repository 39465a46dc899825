//! `kubectl registry push` to a registry end to end: naming, the JSON report and re-push,
//! compression, TLS, and `--registry` without any kubeconfig (a local engine's image: push_engine.rs). The
//! built binary against a real registry, a stand-in API server, and a real containerd pulling
//! what was pushed.

use crate::support::fixtures::{
    self, Format, Image, LayerCompression, OCI_LAYER, OCI_LAYER_GZIP, OCI_LAYER_ZSTD, OCI_MANIFEST,
};
use crate::support::push::{Bench, Node, Outcome, RUNTIME_HOST, clean_run, layer_media_types};
use serde_json::{Value, json};
use snapbox::str;

const LATEST_WARNING: &str = "warning: no tag given, so the image is tagged `latest`, which makes \
     pods pull it Always (imagePullPolicy); pass --tag NAME:TAG\n";

/// Writes `image` named `tags` in `format` into the bench as `img.tar`; returns its path.
fn archive(bench: &Bench, image: &Image, format: Format, tags: &[&str]) -> String {
    let path = bench.path("img.tar");
    image.write(format, &path, tags);
    path.to_str().unwrap().to_string()
}

// Naming

#[test]
fn a_docker_hub_name_loses_its_domain_and_library() {
    let bench = Bench::new();
    let image = Image::sample(20);
    let path = archive(
        &bench,
        &image,
        Format::DockerLegacy,
        &["docker.io/library/myimg:dev"],
    );
    let run = bench.push(&[&path]);
    bench.assert_pushed(&run, "myimg", "dev");
}

#[test]
fn another_registrys_name_keeps_its_domain_under_the_local_host() {
    let bench = Bench::new();
    let image = Image::sample(21);
    let path = archive(&bench, &image, Format::OciArchive, &["gcr.io/proj/app:v1"]);
    let run = bench.push(&[&path]);
    let (reference, _) = bench.assert_pushed(&run, "gcr.io/proj/app", "v1");
    assert!(reference.starts_with("kind-registry:5000/gcr.io/proj/app:v1@sha256:"));
    Node::start(&bench.registry).assert_pulls(&reference, &image);
}

#[test]
fn a_podman_image_built_here_loses_its_localhost_prefix() {
    let bench = Bench::new();
    let image = Image::sample(30);
    let path = archive(&bench, &image, Format::Podman, &["localhost/myimg:dev"]);
    let run = bench.push(&[&path]);
    let (reference, _) = bench.assert_pushed(&run, "myimg", "dev");
    Node::start(&bench.registry).assert_pulls(&reference, &image);
}

#[test]
fn a_bad_load_command_fails_before_any_work_even_with_a_registry() {
    let bench = Bench::new();
    let path = archive(
        &bench,
        &Image::sample(32),
        Format::DockerLegacy,
        &["myimg:dev"],
    );
    let run = bench.push(&[&path, "--load-command", "mytool import"]);
    assert_eq!((run.code, run.stdout.as_str()), (2, ""));
    run.assert_stderr(str![[r#"
error: reading --load-command 'mytool import': it has no {archive} to put the archive's path in
hint: write the command as you would in a shell, with {archive} where the archive goes: --load-command 'mycluster load {archive}'

"#]]);
    assert!(bench.api.requests().is_empty(), "the cluster was read");
    bench.assert_not_tagged("myimg", "dev");
}

#[test]
fn the_tag_flag_overrides_the_archives_name() {
    let bench = Bench::new();
    let image = Image::sample(22);
    let path = archive(&bench, &image, Format::DockerLegacy, &["myimg:dev"]);
    let run = bench.push(&[&path, "--tag", "other:x"]);
    bench.assert_pushed(&run, "other", "x");
    assert_eq!(bench.tag_status("myimg", "dev"), 404);
}

#[test]
fn a_name_already_on_the_local_registry_keeps_only_its_path() {
    let bench = Bench::new();
    let image = Image::sample(39);
    let path = archive(&bench, &image, Format::DockerLegacy, &["myimg:dev"]);
    let run = bench.push(&[&path, "--tag", "kind-registry:5000/team/app:dev"]);
    bench.assert_pushed(&run, "team/app", "dev");
    let on_push_host = format!("{}/team/app:v2", bench.registry.host());
    let run = bench.push(&[&path, "--tag", &on_push_host]);
    bench.assert_pushed(&run, "team/app", "v2");
}

#[test]
fn an_invalid_tag_flag_is_a_usage_error() {
    let bench = Bench::new();
    let image = Image::sample(40);
    let path = archive(&bench, &image, Format::DockerLegacy, &["myimg:dev"]);
    let run = bench.push(&[&path, "--tag", "My App:dev"]);
    assert_eq!((run.code, run.stdout.as_str()), (2, ""));
    run.assert_stderr(str![[r#"
error: the image name from --tag is not usable
caused by: "My App:dev" is not an image name: each path component is lowercase letters and digits, joined by '.', '_', '__' or '-'
hint: pass a valid name with --tag NAME[:TAG]

"#]]);
    assert_eq!(bench.tag_status("myimg", "dev"), 404);
}

#[test]
fn a_name_without_a_tag_is_pushed_as_latest_with_a_warning() {
    let bench = Bench::new();
    let image = Image::sample(23);
    let path = archive(&bench, &image, Format::DockerLegacy, &["myimg:dev"]);
    let run = bench.push(&[&path, "--tag", "myimg"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, LATEST_WARNING));
    let (_, digest) = bench.landed("myimg:latest");
    assert_eq!(
        run.stdout,
        format!("{RUNTIME_HOST}/myimg:latest@{digest}\n")
    );
}

#[test]
fn quiet_leaves_only_the_ref_and_errors() {
    let bench = Bench::new();
    let image = Image::sample(25);
    let path = archive(&bench, &image, Format::DockerLegacy, &["myimg:dev"]);
    let run = bench.push(&[&path, "--tag", "myimg", "-q", "-v"]);
    assert_eq!(
        run.code, 2,
        "-q and -v contradict each other: {}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("'--quiet' cannot be used with '--verbose"),
        "{}",
        run.stderr
    );

    let run = bench.push(&[&path, "--tag", "myimg", "-q"]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (0, ""),
        "no latest warning under -q"
    );
    let (_, digest) = bench.landed("myimg:latest");
    assert_eq!(
        run.stdout,
        format!("{RUNTIME_HOST}/myimg:latest@{digest}\n")
    );

    let run = bench.push(&[&bench.path("absent.tar").to_string_lossy(), "-q"]);
    assert_eq!(run.code, 4);
    assert!(
        run.stderr.starts_with("error: "),
        "errors still show: {}",
        run.stderr
    );
}

#[test]
fn an_archive_name_without_a_tag_is_pushed_as_latest_with_a_warning() {
    let bench = Bench::new();
    let image = Image::sample(24);
    let path = archive(&bench, &image, Format::OciArchive, &["gcr.io/proj/app"]);
    let run = bench.push(&[&path]);
    assert_eq!((run.code, run.stderr.as_str()), (0, LATEST_WARNING));
    let (_, digest) = bench.landed("gcr.io/proj/app:latest");
    assert_eq!(
        run.stdout,
        format!("{RUNTIME_HOST}/gcr.io/proj/app:latest@{digest}\n")
    );
}

#[test]
fn an_unnamed_oci_layout_needs_the_tag_flag() {
    let bench = Bench::new();
    let image = Image::sample(25);
    let layout = bench.path("layout");
    image.layout_dir(&layout, &["dev"]);
    let run = bench.push(&[layout.to_str().unwrap()]);
    assert_eq!((run.code, run.stdout.as_str()), (4, ""));
    let manifest_digest = fixtures::sha256(&image.manifest(LayerCompression::None));
    let short_digest = format!("{}…", &manifest_digest[.."sha256:".len() + 12]);
    assert_eq!(
        run.stderr,
        format!(
            "error: the archive does not name its image (unnamed image {short_digest} tagged dev)\n\
             hint: name it with --tag NAME[:TAG], e.g. --tag myimg:dev\n"
        )
    );
}

#[test]
fn an_image_without_layers_pushes() {
    let bench = Bench::new();
    let image = Image::with_layers(41, "linux/amd64", &[]);
    let path = archive(&bench, &image, Format::DockerLegacy, &["empty:1"]);
    let run = bench.push(&[&path]);
    let (_, manifest) = bench.assert_pushed(&run, "empty", "1");
    assert_eq!(manifest["layers"], json!([]));
    assert_eq!(manifest["config"]["digest"], image.config_digest().as_str());
}

// The JSON report, and pushing again

#[test]
fn json_reports_every_ref_and_a_repush_skips_every_blob() {
    let bench = Bench::new();
    let image = Image::sample(26);
    let path = archive(&bench, &image, Format::Docker25, &["myimg:dev"]);

    let first = bench.push(&[&path, "-o", "json"]);
    first.assert_clean_success();
    let (_, digest) = bench.landed("myimg:dev");
    let layer_bytes: usize = (0..image.layer_count()).map(|i| image.layer(i).len()).sum();
    let blob_bytes = (layer_bytes + image.config_bytes().len()) as u64;
    let blobs = image.layer_count() as u64 + 1;
    let report = |pushed: (u64, u64), skipped: (u64, u64)| {
        json!({
            "ref": format!("{RUNTIME_HOST}/myimg:dev@{digest}"),
            "pushRef": format!("127.0.0.1:[PORT]/myimg:dev@{digest}"),
            "clusterNetworkRef": format!("{RUNTIME_HOST}/myimg:dev@{digest}"),
            "digest": digest,
            "repository": "myimg",
            "tag": "dev",
            "method": "registry",
            "network": "host",
            "platforms": ["linux/amd64"],
            "blobsPushed": pushed.0,
            "blobsSkipped": skipped.0,
            "bytesPushed": pushed.1,
            "bytesSkipped": skipped.1,
        })
    };
    assert_eq!(first.json(), report((blobs, blob_bytes), (0, 0)));

    let again = bench.push(&[&path, "-o", "json"]);
    again.assert_clean_success();
    assert_eq!(again.json(), report((0, 0), (blobs, blob_bytes)));
    assert_eq!(bench.landed("myimg:dev").1, digest);
}

// Compression

/// Pushes an uncompressed Docker 25 archive with `--compression FLAG`; returns the pushed
/// manifest after checking a node pulls it with the fixture's layers.
fn pushed_with_compression(flag: &str, seed: u64) -> Value {
    let bench = Bench::new();
    let image = Image::sample(seed);
    let path = archive(&bench, &image, Format::Docker25, &["myimg:dev"]);
    let run = bench.push(&[&path, "--compression", flag]);
    let (reference, manifest) = bench.assert_pushed(&run, "myimg", "dev");
    Node::start(&bench.registry).assert_pulls(&reference, &image);
    manifest
}

#[test]
fn gzip_compresses_uncompressed_layers_on_the_way() {
    let manifest = pushed_with_compression("gzip", 27);
    assert_eq!(manifest["mediaType"], OCI_MANIFEST);
    assert_eq!(layer_media_types(&manifest), [OCI_LAYER_GZIP; 3]);
}

#[test]
fn zstd_compresses_uncompressed_layers_on_the_way() {
    let manifest = pushed_with_compression("zstd", 28);
    assert_eq!(layer_media_types(&manifest), [OCI_LAYER_ZSTD; 3]);
}

#[test]
fn none_keeps_uncompressed_layers_as_stored() {
    let manifest = pushed_with_compression("none", 29);
    assert_eq!(layer_media_types(&manifest), [OCI_LAYER; 3]);
}

#[test]
fn gzip_leaves_already_compressed_layers_as_they_are() {
    let bench = Bench::new();
    let image = Image::sample(30);
    let path = archive(
        &bench,
        &image,
        Format::ContainerdExport(LayerCompression::Zstd),
        &["myimg:dev"],
    );
    let run = bench.push(&[&path, "--compression", "gzip"]);
    bench.assert_pushed(&run, "myimg", "dev");
    let (bytes, _) = bench.landed("myimg:dev");
    assert_eq!(bytes, image.manifest(LayerCompression::Zstd));
}

// Where the image and the registry come from

#[test]
fn kinds_localhost_host_reaches_a_registry_bound_to_ipv4_loopback() {
    let registry = crate::support::registry::TestRegistry::start();
    let localhost = registry.host().replace("127.0.0.1", "localhost");
    let bench = Bench::advertising(registry, &localhost);
    let image = Image::sample(42);
    let path = archive(&bench, &image, Format::DockerLegacy, &["myimg:dev"]);
    let run = bench.push(&[&path, "-o", "json"]);
    run.assert_clean_success();
    let (_, digest) = bench.landed("myimg:dev");
    let report = run.json();
    assert_eq!(
        (report["ref"].as_str(), report["pushRef"].as_str()),
        (
            Some(format!("{RUNTIME_HOST}/myimg:dev@{digest}").as_str()),
            Some(format!("{localhost}/myimg:dev@{digest}").as_str())
        )
    );
}

#[test]
fn a_tls_registry_is_trusted_through_the_ca_file_flag() {
    let registry = crate::support::registry::TestRegistry::with_tls();
    let ca_file = registry.ca_file();
    let bench = Bench::with_registry(registry);
    let image = Image::sample(43);
    let path = archive(&bench, &image, Format::DockerLegacy, &["myimg:dev"]);
    let run = bench.push(&[&path, "--ca-file", ca_file.to_str().unwrap()]);
    run.assert_clean_success();
    let (_, digest) = bench.landed("myimg:dev");
    assert_eq!(run.stdout, format!("{RUNTIME_HOST}/myimg:dev@{digest}\n"));

    let untrusted = bench.push(&[&path, "--tag", "other:dev"]);
    assert_certificate_untrusted(&untrusted);
}

#[test]
fn the_systems_trusted_roots_are_the_ones_a_tls_registry_is_checked_against() {
    let registry = crate::support::registry::TestRegistry::with_tls();
    let ca_file = registry.ca_file();
    let bench = Bench::with_registry(registry);
    let image = Image::sample(44);
    let path = archive(&bench, &image, Format::DockerLegacy, &["myimg:dev"]);
    // SSL_CERT_FILE names the system's CA bundle, as OpenSSL and rustls read it.
    let trusted = bench.run(
        bench
            .cmd()
            .env("SSL_CERT_FILE", &ca_file)
            .args(["push", &path]),
    );
    trusted.assert_clean_success();
    let (_, digest) = bench.landed("myimg:dev");
    assert_eq!(
        trusted.stdout,
        format!("{RUNTIME_HOST}/myimg:dev@{digest}\n")
    );

    // A system without CA certificates (a slim container) still reaches its plain-HTTP API
    // server, and trusts no registry certificate.
    let nothing = bench.path("no-certificates");
    std::fs::create_dir(&nothing).unwrap();
    let none = bench.run(
        bench
            .cmd()
            .env("SSL_CERT_FILE", nothing.join("absent.pem"))
            .env("SSL_CERT_DIR", &nothing)
            .args(["push", path.as_str(), "--tag", "other:dev"]),
    );
    assert_certificate_untrusted(&none);
}

/// The push failed, nothing on stdout, because no trusted root signed the registry's certificate.
fn assert_certificate_untrusted(run: &Outcome) {
    assert_eq!((run.code, run.stdout.as_str()), (5, ""), "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: reaching the registry 127.0.0.1:[PORT]
caused by: the TLS certificate of 127.0.0.1:[PORT] is not trusted
caused by: invalid peer certificate: UnknownIssuer
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
hint: pass --ca-file with the CA that signed the registry's certificate, or --insecure to skip the check

"#]]);
}

#[test]
fn the_registry_flag_needs_no_kubeconfig_and_prints_nothing_else() {
    let bench = Bench::new();
    let image = Image::sample(38);
    let path = archive(&bench, &image, Format::DockerLegacy, &["myimg:dev"]);
    let host = bench.registry.host();
    let run = bench.run(
        clean_run(bench.dir.path())
            .kubeconfig(&bench.path("no-such-kubeconfig"))
            .args(["push", &path, "--registry", &host]),
    );
    run.assert_clean_success();
    let (_, digest) = bench.landed("myimg:dev");
    assert_eq!(run.stdout, format!("127.0.0.1:[PORT]/myimg:dev@{digest}\n"));
    assert!(
        bench.api.requests().is_empty(),
        "the cluster was contacted: {:?}",
        bench.api.requests()
    );

    let runtime = bench.run(clean_run(bench.dir.path()).args([
        "push",
        &path,
        "--registry",
        &host,
        "--registry-from-runtime",
        RUNTIME_HOST,
    ]));
    runtime.assert_clean_success();
    assert_eq!(
        runtime.stdout,
        format!("{RUNTIME_HOST}/myimg:dev@{digest}\n")
    );
}
