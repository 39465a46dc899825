//! `kubectl registry push` when something is wrong: damaged or bogus archives (exit 4, the
//! file named, nothing tagged, no corrupt blob stored), a registry that is down or refuses our
//! credentials (exit 5, with the cluster's guide or `docker login`).

use crate::support::apiserver::unused_port;
use crate::support::fixtures::{self, Format, Image};
use crate::support::push::{Bench, Outcome, docker_config};
use crate::support::registry::TestRegistry;
use snapbox::str;

/// Asserts a failed push of bad input: exit 4, nothing on stdout, and `myimg:dev` not tagged.
fn assert_refused_input(bench: &Bench, run: &Outcome) {
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (4, ""),
        "stderr: {}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    bench.assert_not_tagged("myimg", "dev");
}

#[test]
fn a_truncated_archive_is_refused_naming_the_file() {
    let bench = Bench::new();
    let path = bench.path("img.tar");
    Image::sample(40).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let bytes = std::fs::read(&path).unwrap();
    let kept = bytes.len() / 2;
    std::fs::write(&path, &bytes[..kept]).unwrap();
    let (member, end) = member_spanning(&bytes, kept as u64);
    let run = bench.push(&[path.to_str().unwrap()]);
    assert_refused_input(&bench, &run);
    assert_eq!(
        run.stderr_lines(),
        [
            format!(
                "error: [ROOT]/img.tar is truncated: member {member} ends at byte {end} but the file has {kept} bytes"
            )
            .as_str(),
            "hint: the archive is damaged or incomplete; write it again (e.g. docker save -o FILE IMAGE)",
        ]
    );
}

#[test]
fn a_truncated_gzip_wrapped_archive_is_refused_naming_the_file() {
    let bench = Bench::new();
    let path = bench.path("img.tar.gz");
    Image::sample(48).write(Format::NixGzip, &path, &["myimg:dev"]);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() * 3 / 4]).unwrap();
    let run = bench.push(&[path.to_str().unwrap()]);
    assert_refused_input(&bench, &run);
    run.assert_stderr(str![[r#"
error: decompressing [ROOT]/img.tar.gz (gzip)
caused by: incomplete deflate stream
hint: the archive is damaged or incomplete; write it again (e.g. docker save -o FILE IMAGE)

"#]]);
}

/// The tar member of `archive` whose data spans byte `offset`, and the byte its data ends at.
fn member_spanning(archive: &[u8], offset: u64) -> (String, u64) {
    let mut tar = tar::Archive::new(archive);
    for entry in tar.entries().unwrap() {
        let entry = entry.unwrap();
        let start = entry.raw_file_position();
        let end = start + entry.size();
        if (start..end).contains(&offset) {
            return (entry.path().unwrap().display().to_string(), end);
        }
    }
    panic!("no member spans byte {offset}");
}

/// A legacy docker archive of `image` whose first layer has one byte flipped inside a file's
/// content (tar headers intact).
struct FlippedLayer {
    path: String,
    /// The member holding the damaged layer.
    member: String,
    /// The sha256 of the damaged layer's bytes.
    corrupt: String,
}

fn archive_with_a_flipped_layer_byte(bench: &Bench, image: &Image) -> FlippedLayer {
    let path = bench.path("img.tar");
    image.write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let mut bytes = std::fs::read(&path).unwrap();
    let layer = image.layer(0);
    let needle = &layer[4096..4160];
    let in_archive = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap();
    bytes[in_archive + 32] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let mut corrupt = layer.to_vec();
    corrupt[4096 + 32] ^= 0x40;
    FlippedLayer {
        path: path.to_str().unwrap().to_string(),
        member: member_spanning(&bytes, in_archive as u64).0,
        corrupt: fixtures::sha256(&corrupt),
    }
}

/// Asserts the registry stores no blob holding `corrupt_sha256`'s content, raw or compressed.
fn assert_no_blob_holds(bench: &Bench, corrupt_sha256: &str) {
    let stored = bench.stored_blob_contents();
    for (raw, uncompressed) in stored {
        assert_ne!(raw, corrupt_sha256, "the corrupt layer was stored");
        assert_ne!(
            uncompressed.as_deref(),
            Some(corrupt_sha256),
            "the corrupt layer was stored compressed"
        );
    }
}

/// What a push says when the first layer turns out corrupt while it is being sent: the archive's
/// fault alone, not the aborted request's.
fn corrupt_layer_stderr(image: &Image, flipped: &FlippedLayer) -> String {
    let diff_id = &image.diff_ids()[0];
    let layer = format!("layer {diff_id} ({})", flipped.member);
    format!(
        "error: {layer} is corrupt; nothing was tagged\n\
         caused by: diff_id (the uncompressed content's digest) of {layer} in [ROOT]/img.tar does not match: expected {diff_id}, got {corrupt}\n\
         hint: the archive was damaged after it was written: write it again (docker save, skopeo copy)\n",
        corrupt = flipped.corrupt,
    )
}

#[test]
fn a_flipped_byte_in_a_layer_aborts_its_upload_and_tags_nothing() {
    let bench = Bench::new();
    let image = Image::sample(41);
    let flipped = archive_with_a_flipped_layer_byte(&bench, &image);
    let run = bench.push(&[&flipped.path]);
    assert_refused_input(&bench, &run);
    assert_eq!(run.stderr, corrupt_layer_stderr(&image, &flipped));
    assert_no_blob_holds(&bench, &flipped.corrupt);
}

#[test]
fn a_flipped_byte_in_a_layer_aborts_a_compressing_upload_and_tags_nothing() {
    let bench = Bench::new();
    let image = Image::sample(42);
    let flipped = archive_with_a_flipped_layer_byte(&bench, &image);
    let run = bench.push(&[&flipped.path, "--compression", "gzip"]);
    assert_refused_input(&bench, &run);
    assert_eq!(run.stderr, corrupt_layer_stderr(&image, &flipped));
    assert_no_blob_holds(&bench, &flipped.corrupt);
}

#[test]
fn random_bytes_are_not_an_archive() {
    let bench = Bench::new();
    let path = bench.path("img.tar");
    let mut noise = vec![0u8; 64 << 10];
    fixtures::Rng::new(43).fill(&mut noise);
    std::fs::write(&path, noise).unwrap();
    let run = bench.push(&[path.to_str().unwrap()]);
    assert_refused_input(&bench, &run);
    run.assert_stderr(str![[r#"
error: [ROOT]/img.tar is not an image archive: it is not a tar file, nor gzip, zstd, bzip2 or xz compressed
hint: expected the output of docker save, podman save, skopeo copy (docker-archive: or oci-archive:), or an OCI layout directory, optionally gzip, zstd, bzip2 or xz compressed

"#]]);
}

#[test]
fn a_missing_file_is_named() {
    let bench = Bench::new();
    let run = bench.push(&[bench.path("gone.tar").to_str().unwrap()]);
    assert_refused_input(&bench, &run);
    run.assert_stderr(str![[r#"
error: cannot read [ROOT]/gone.tar
caused by: No such file or directory (os error 2)

"#]]);
}

#[test]
fn an_empty_file_is_named() {
    let bench = Bench::new();
    let path = bench.path("img.tar");
    std::fs::write(&path, b"").unwrap();
    let run = bench.push(&[path.to_str().unwrap()]);
    assert_refused_input(&bench, &run);
    run.assert_stderr(str![[r#"
error: [ROOT]/img.tar is empty, not an image archive
hint: expected the output of docker save, podman save, skopeo copy (docker-archive: or oci-archive:), or an OCI layout directory, optionally gzip, zstd, bzip2 or xz compressed

"#]]);
}

#[test]
fn empty_standard_input_is_named() {
    let bench = Bench::new();
    let run = bench.run(bench.cmd().args(["push", "-"]).stdin(Vec::new()));
    assert_refused_input(&bench, &run);
    run.assert_stderr(str![[r#"
error: standard input is empty, not an image archive
hint: expected the output of docker save, podman save, skopeo copy (docker-archive: or oci-archive:), or an OCI layout directory, optionally gzip, zstd, bzip2 or xz compressed

"#]]);
}

#[test]
fn a_registry_that_is_down_is_named_with_the_clusters_guide() {
    let down = format!("127.0.0.1:{}", unused_port());
    let bench = Bench::advertising(TestRegistry::start(), &down);
    let path = bench.path("img.tar");
    Image::sample(44).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let run = bench.push(&[path.to_str().unwrap()]);
    assert_eq!((run.code, run.stdout.as_str()), (5, ""));
    run.assert_stderr(str![[r#"
error: reaching the registry 127.0.0.1:[PORT]
caused by: the registry at 127.0.0.1:[PORT] is down or not reachable from here
caused by: Connection refused (os error 111)
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
hint: check that the registry runs and that 127.0.0.1:[PORT] is reachable from this machine

"#]]);
}

#[test]
fn wrong_credentials_say_docker_login() {
    let bench = Bench::with_registry(TestRegistry::with_basic_auth("kind", "right"));
    let path = bench.path("img.tar");
    Image::sample(45).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let config = docker_config(&bench, &bench.registry.host(), "kind", "wrong");
    let run = bench.run(
        bench
            .cmd()
            .env("DOCKER_CONFIG", &config)
            .args(["push", path.to_str().unwrap()]),
    );
    assert_told_to_log_in(
        &bench,
        &run,
        "the credentials from the auths entry for 127.0.0.1:[PORT] in [ROOT]/docker-config/config.json were refused",
    );
}

#[test]
fn missing_credentials_say_docker_login() {
    let bench = Bench::with_registry(TestRegistry::with_basic_auth("kind", "right"));
    let path = bench.path("img.tar");
    Image::sample(47).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let run = bench.push(&[path.to_str().unwrap()]);
    assert_told_to_log_in(
        &bench,
        &run,
        "no credentials for 127.0.0.1:[PORT] were found ([ROOT]/no-docker-config/config.json)",
    );
}

/// The push was refused for its credentials (`why`), the user told to log in, nothing tagged.
fn assert_told_to_log_in(bench: &Bench, run: &Outcome, why: &str) {
    assert_eq!((run.code, run.stdout.as_str()), (5, ""));
    run.assert_stderr(format!(
        "error: reaching the registry 127.0.0.1:[PORT]\n\
         caused by: wrong or missing credentials for 127.0.0.1:[PORT]: {why}\n\
         caused by: the registry answered 401 Unauthorized: UNAUTHORIZED: authentication required\n\
         hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/\n\
         hint: run `docker login 127.0.0.1:[PORT]` (or `podman login 127.0.0.1:[PORT]`) with an account allowed to push\n"
    ));
    bench.assert_not_tagged("myimg", "dev");
}

#[test]
fn the_right_credentials_from_docker_config_push() {
    let bench = Bench::with_registry(TestRegistry::with_basic_auth("kind", "right"));
    let path = bench.path("img.tar");
    Image::sample(46).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let config = docker_config(&bench, &bench.registry.host(), "kind", "right");
    let run = bench.run(
        bench
            .cmd()
            .env("DOCKER_CONFIG", &config)
            .args(["push", path.to_str().unwrap()]),
    );
    bench.assert_pushed(&run, "myimg", "dev");
}

#[test]
fn a_cluster_that_is_down_fails_while_stdin_is_still_open() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = crate::support::apiserver::write_kubeconfig_of_a_down_cluster(dir.path());
    let binary = assert_cmd::cargo::cargo_bin("kubectl-registry");
    let mut child = crate::support::push::clean_std_cmd(binary.as_os_str(), dir.path())
        .args(["push", "-", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Keep stdin open and silent: the failure must not wait for an archive that never ends.
    let _stdin = child.stdin.take();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("push kept waiting for stdin after the cluster failed");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(3));
}

#[test]
fn a_credential_helper_that_never_answers_is_cut_off() {
    let bench = Bench::with_registry(TestRegistry::with_basic_auth("kind", "right"));
    let path = bench.path("img.tar");
    Image::sample(48).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let config = bench.path("docker-config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.json"), r#"{"credsStore": "hang"}"#).unwrap();
    let bin = bench.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let helper = bin.join("docker-credential-hang");
    std::fs::write(&helper, "#!/bin/sh\nexec sleep 600\n").unwrap();
    std::fs::set_permissions(&helper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path_var = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let run = bench.run(
        bench
            .cmd()
            .env("DOCKER_CONFIG", &config)
            .env("PATH", path_var)
            .env("KUBECTL_REGISTRY_HELPER_TIMEOUT", "1")
            .timeout(std::time::Duration::from_secs(90))
            .args(["push", path.to_str().unwrap()]),
    );
    assert_eq!((run.code, run.stdout.as_str()), (5, ""));
    run.assert_stderr(str![[r#"
error: reaching the registry 127.0.0.1:[PORT]
caused by: getting credentials for 127.0.0.1:[PORT] from the credential helper docker-credential-hang (credsStore in [ROOT]/docker-config/config.json): docker-credential-hang did not answer within 1s
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
hint: check that docker-credential-hang works (it may be waiting for a password prompt or a locked keychain); KUBECTL_REGISTRY_HELPER_TIMEOUT sets how long to wait

"#]]);
    bench.assert_not_tagged("myimg", "dev");
}

/// An OCI layout whose largest layer blob is a symlink to a file outside the layout, as bazel's
/// rules_oci builds them; returns the layout and the file the link points to.
fn layout_with_a_layer_outside(bench: &Bench, image: &Image) -> (String, std::path::PathBuf) {
    let layout = bench.path("layout");
    image.layout_dir(&layout, &["dev"]);
    let largest = image
        .diff_ids()
        .into_iter()
        .enumerate()
        .max_by_key(|(index, _)| image.layer(*index).len())
        .unwrap()
        .1;
    let hex = largest.trim_start_matches("sha256:");
    let inside = layout.join("blobs/sha256").join(hex);
    let outside = bench.path("bazel-out").join(hex);
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    std::fs::rename(&inside, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &inside).unwrap();
    (layout.to_str().unwrap().to_string(), outside)
}

#[test]
fn a_layout_layer_symlinked_outside_the_layout_is_pushed() {
    let bench = Bench::new();
    let image = Image::sample(49);
    let (layout, _) = layout_with_a_layer_outside(&bench, &image);
    let run = bench.push(&[&layout, "--tag", "myimg:dev"]);
    bench.assert_pushed(&run, "myimg", "dev");
}

#[test]
fn a_layout_layer_symlinked_outside_the_layout_is_still_verified() {
    let bench = Bench::new();
    let image = Image::sample(50);
    let (layout, outside) = layout_with_a_layer_outside(&bench, &image);
    let mut bytes = std::fs::read(&outside).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    std::fs::write(&outside, &bytes).unwrap();
    let run = bench.push(&[&layout, "--tag", "myimg:dev"]);
    assert_refused_input(&bench, &run);
    let name = outside.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        run.stderr_lines()[0],
        format!("error: layer sha256:{name} (blobs/sha256/{name}) is corrupt; nothing was tagged")
    );
    assert!(
        run.stderr.contains(&format!(
            "does not match: expected sha256:{name}, got {}",
            fixtures::sha256(&bytes)
        )),
        "{}",
        run.stderr
    );
    run.assert_stderr(str![[r#"
error: layer sha256:[DIGEST] (blobs/sha256/[..]) is corrupt; nothing was tagged
caused by: diff_id (the uncompressed content's digest) of layer sha256:[DIGEST] (blobs/sha256/[..]) in [ROOT]/layout does not match: expected sha256:[DIGEST], got sha256:[DIGEST]
hint: the archive was damaged after it was written: write it again (docker save, skopeo copy)

"#]]);
    assert_no_blob_holds(&bench, &fixtures::sha256(&bytes));
}
