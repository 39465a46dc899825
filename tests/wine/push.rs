//! `push` by the Windows build under Wine, of every archive format the Linux tests push, written
//! by real tools (skopeo from an OCI layout; gzip, xz, zstd and bzip2 around a docker-archive),
//! named by `Z:\...` and `C:\...` paths with backslashes, to the real registry the stand-in
//! cluster advertises: the printed ref is what landed, and skopeo copies it back whole. Then
//! `push --watch` on a path missing at the start, noticing the archive written, then rewritten.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Command;
use std::sync::mpsc::channel;
use std::time::Duration;

use serde_json::Value;

use crate::on_windows::{c_folder, windows, z_path};
use crate::support::fixtures::Image;
use crate::support::push::{Bench, Outcome};
use crate::support::run::Run;

/// A bound on each wait under Wine, not a timing assertion.
const BOUND: Duration = Duration::from_secs(120);

/// Runs `program args...`, which must succeed.
fn tool(program: &str, args: &[&str]) {
    let out = Command::new(program).args(args).output().expect(program);
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `image` as an OCI layout tagged `dev` in `dir/layout`, then as `transport` (skopeo's
/// `docker-archive`, `oci-archive`) at `to`, named `myimg:dev` where the format names images.
fn written_by_skopeo(image: &Image, dir: &Path, transport: &str, to: &Path) {
    let layout = dir.join("layout");
    image.layout_dir(&layout, &["dev"]);
    let name = if transport == "docker-archive" {
        ":myimg:dev"
    } else {
        ":dev"
    };
    tool(
        "skopeo",
        &[
            "copy",
            "--quiet",
            &format!("oci:{}:dev", layout.display()),
            &format!("{transport}:{}{name}", to.display()),
        ],
    );
}

/// The Windows build, pointed at the bench's kubeconfig by a `Z:\` path.
fn on_windows(bench: &Bench) -> Run {
    windows(bench.dir.path())
        .arg("--kubeconfig")
        .arg(z_path(&bench.kubeconfig))
}

/// `push SOURCE` by the Windows build: the ref of what landed, and skopeo copies it back whole
/// (every blob's digest checked) with the fixture's config.
fn pushes(bench: &Bench, source: &str, image: &Image) {
    let run = on_windows(bench).args(["push", source]).output();
    assert_landed_whole(bench, &run, image);
}

fn assert_landed_whole(bench: &Bench, run: &Outcome, image: &Image) {
    let (_, manifest) = bench.assert_pushed(run, "myimg", "dev");
    assert_eq!(
        manifest["config"]["digest"].as_str(),
        Some(image.config_digest().as_str()),
        "the pushed config is the fixture's"
    );
    let copy = tempfile::tempdir().unwrap();
    tool(
        "skopeo",
        &[
            "copy",
            "--quiet",
            "--src-tls-verify=false",
            &format!("docker://{}/myimg:dev", bench.registry.host()),
            &format!("oci:{}:back", copy.path().display()),
        ],
    );
    let index: Value =
        serde_json::from_slice(&std::fs::read(copy.path().join("index.json")).unwrap()).unwrap();
    let digest = index["manifests"][0]["digest"].as_str().unwrap();
    let hex = digest.strip_prefix("sha256:").unwrap();
    let copied: Value =
        serde_json::from_slice(&std::fs::read(copy.path().join("blobs/sha256").join(hex)).unwrap())
            .unwrap();
    assert_eq!(copied["config"]["digest"], manifest["config"]["digest"]);
    assert_eq!(
        copied["layers"].as_array().map(Vec::len),
        Some(image.layer_count())
    );
}

#[test]
fn a_docker_archive_by_a_z_path() {
    let bench = Bench::new();
    let image = Image::sample(71);
    let archive = bench.path("img.tar");
    written_by_skopeo(&image, bench.dir.path(), "docker-archive", &archive);
    pushes(&bench, &z_path(&archive), &image);
}

#[test]
fn an_oci_archive_on_the_c_drive() {
    let bench = Bench::new();
    let image = Image::sample(72);
    let (folder, windows_folder) = c_folder("oci-archive");
    written_by_skopeo(
        &image,
        bench.dir.path(),
        "oci-archive",
        &folder.path().join("img.tar"),
    );
    let source = format!("{windows_folder}\\img.tar");
    let run = on_windows(&bench)
        .args(["push", &source, "--tag", "myimg:dev"])
        .output();
    assert_landed_whole(&bench, &run, &image);
}

#[test]
fn an_oci_layout_folder_on_the_c_drive() {
    let bench = Bench::new();
    let image = Image::sample(73);
    let (folder, windows_folder) = c_folder("layout");
    image.layout_dir(&folder.path().join("img"), &["myimg:dev"]);
    pushes(&bench, &format!("{windows_folder}\\img"), &image);
}

/// A docker-archive skopeo wrote, compressed by `program` (`-k`: `img.tar.EXT` beside it).
fn compressed_pushes(seed: u64, program: &str, extension: &str) {
    let bench = Bench::new();
    let image = Image::sample(seed);
    let archive = bench.path("img.tar");
    written_by_skopeo(&image, bench.dir.path(), "docker-archive", &archive);
    tool(program, &["-k", archive.to_str().unwrap()]);
    pushes(
        &bench,
        &z_path(&bench.path(&format!("img.tar.{extension}"))),
        &image,
    );
}

#[test]
fn a_gzip_compressed_docker_archive() {
    compressed_pushes(74, "gzip", "gz");
}

#[test]
fn an_xz_compressed_docker_archive() {
    compressed_pushes(75, "xz", "xz");
}

#[test]
fn a_zstd_compressed_docker_archive() {
    compressed_pushes(76, "zstd", "zst");
}

#[test]
fn a_bzip2_compressed_docker_archive() {
    compressed_pushes(77, "bzip2", "bz2");
}

/// `push C:\...\dist\img.tar --watch -v` by the Windows build, `dist` made only after it started:
/// it says it watches with ReadDirectoryChangesW, pushes the archive once written, and again once
/// rewritten in place.
#[test]
fn watch_notices_the_archive_written_then_rewritten() {
    let bench = Bench::new();
    let (first, second) = (Image::sample(78), Image::sample(79));
    let (folder, windows_folder) = c_folder("watch");
    let written = bench.path("first.tar");
    written_by_skopeo(&first, &bench.path("first"), "docker-archive", &written);
    let next = bench.path("next.tar");
    written_by_skopeo(&second, &bench.path("second"), "docker-archive", &next);
    let source = format!("{windows_folder}\\dist\\img.tar");
    let mut child = on_windows(&bench)
        .args(["push", &source, "--watch", "-v"])
        .spawn();
    let lines = |stream: Box<dyn std::io::Read + Send>| {
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                let _ = sender.send(line);
            }
        });
        lines
    };
    let refs = lines(Box::new(child.stdout.take().unwrap()));
    let said = lines(Box::new(child.stderr.take().unwrap()));
    let watching = format!("watching {source}: ReadDirectoryChangesW on {windows_folder}");
    while !said
        .recv_timeout(BOUND)
        .expect("-v's watching line")
        .contains(&watching)
    {}
    let archive = folder.path().join("dist/img.tar");
    std::fs::create_dir(folder.path().join("dist")).unwrap();
    std::fs::copy(&written, &archive).unwrap();
    let first_ref = refs
        .recv_timeout(BOUND)
        .expect("a round once the archive is there");
    assert!(first_ref.ends_with(&bench.landed("myimg:dev").1));
    // Rewritten in place, as a build tool writes its output again.
    std::fs::write(&archive, std::fs::read(&next).unwrap()).unwrap();
    let second_ref = refs
        .recv_timeout(BOUND)
        .expect("a round for the rewritten archive");
    let _ = child.kill();
    let _ = child.wait();
    let (bytes, digest) = bench.landed("myimg:dev");
    assert!(
        second_ref.ends_with(&digest),
        "{second_ref} is not {digest}"
    );
    assert_ne!(first_ref, second_ref);
    let manifest: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        manifest["config"]["digest"].as_str(),
        Some(second.config_digest().as_str()),
        "said: {:?}",
        said.try_iter().collect::<Vec<_>>()
    );
}
