//! `push PATH --watch` follows the path as build tools rewrite it, as `tail -F` follows a file:
//! the archive's folder removed and made again, a symlinked output whose target is replaced, an
//! archive rewritten in place in several writes, a path missing at the start; and Ctrl-C while
//! it waits between rounds ends it with 130 and not a word. Archives written by the real skopeo,
//! pushed to the real registry.

use std::path::{Path, PathBuf};

use crate::support::fixtures::{self, Image};
use crate::support::push::Bench;
use crate::support::registry::TestRegistry;
use crate::watch::Watching;

/// `image` as the real skopeo writes a `docker-archive:` tagged `myimg:dev`, at `to`.
fn skopeo_archive(bench: &Bench, image: &Image, to: &Path) {
    let layout = bench.path(&format!("layout-{}", image_seed(to)));
    image.layout_dir(&layout, &["dev"]);
    let written = bench.path(&format!("written-{}.tar", image_seed(to)));
    let _ = std::fs::remove_file(&written);
    fixtures::skopeo_copy(
        &layout,
        "dev",
        &format!("docker-archive:{}:myimg:dev", written.display()),
    );
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::rename(&written, to).unwrap();
}

/// A name for a scratch path, different for each archive written.
fn image_seed(to: &Path) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{}-{}",
        to.file_name().unwrap().to_string_lossy(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn watching(bench: &Bench, path: &Path) -> Watching {
    Watching::start(
        bench
            .cmd()
            .args(["push", path.to_str().unwrap(), "--watch", "-v"])
            .command(),
    )
}

/// The digest a ref line pins.
fn digest(reference: &str) -> &str {
    reference.rsplit_once('@').map_or("", |(_, digest)| digest)
}

fn bench() -> Bench {
    let registry = TestRegistry::start();
    let host = registry.host();
    Bench::advertising(registry, &host)
}

#[test]
fn the_archives_folder_removed_and_made_again_is_followed() {
    let bench = bench();
    let archive: PathBuf = bench.path("build/out/img.tar");
    skopeo_archive(&bench, &Image::sample(501), &archive);
    let mut watching = watching(&bench, &archive);
    let first = watching.next_ref();
    // `make clean`: the folder goes, and comes back later with a new archive in it.
    std::fs::remove_dir_all(bench.path("build")).unwrap();
    skopeo_archive(&bench, &Image::sample(502), &archive);
    let second = watching.next_ref();
    assert_ne!(digest(&second), digest(&first));
    assert_eq!(bench.landed("myimg:dev").1, digest(&second));
    assert_eq!(watching.interrupt().0, 130);
}

#[test]
fn a_symlinked_output_whose_target_is_replaced_is_followed() {
    let bench = bench();
    // Bazel: `bazel-bin/app.tar` is a link into its output tree, replaced at each build.
    let out = bench.path("bazel-out/bin");
    std::fs::create_dir_all(&out).unwrap();
    let target = out.join("app.tar");
    skopeo_archive(&bench, &Image::sample(511), &target);
    let link = bench.path("app.tar");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let mut watching = watching(&bench, &link);
    let first = watching.next_ref();
    skopeo_archive(&bench, &Image::sample(512), &target);
    let second = watching.next_ref();
    assert_ne!(digest(&second), digest(&first));
    // Nix: `result` is itself replaced by a link to a new store path.
    let store = bench.path("store-2");
    std::fs::create_dir_all(&store).unwrap();
    skopeo_archive(&bench, &Image::sample(513), &store.join("app.tar"));
    let next_link = bench.path("app.tar.next");
    std::os::unix::fs::symlink(store.join("app.tar"), &next_link).unwrap();
    std::fs::rename(&next_link, &link).unwrap();
    let third = watching.next_ref();
    assert_ne!(digest(&third), digest(&second));
    assert_eq!(bench.landed("myimg:dev").1, digest(&third));
    assert_eq!(watching.interrupt().0, 130);
}

#[test]
fn an_archive_rewritten_in_place_is_pushed_once_it_has_settled() {
    let bench = bench();
    let archive = bench.path("img.tar");
    skopeo_archive(&bench, &Image::sample(521), &archive);
    let mut watching = watching(&bench, &archive);
    let first = watching.next_ref();
    // A writer that truncates the file and writes it in pieces, closing it between them (each
    // close is an event): what lands is the whole new archive, never a half of it.
    let whole = bench.path("next.tar");
    skopeo_archive(&bench, &Image::sample(522), &whole);
    let bytes = std::fs::read(&whole).unwrap();
    std::fs::write(&archive, &bytes[..bytes.len() / 3]).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&archive)
        .unwrap();
    std::io::Write::write_all(&mut file, &bytes[bytes.len() / 3..]).unwrap();
    drop(file);
    let second = watching.next_ref();
    assert_ne!(digest(&second), digest(&first));
    assert_eq!(bench.landed("myimg:dev").1, digest(&second));
    // Pushed once, whole: no round was tried on a half-written file.
    assert_eq!(watching.interrupt().0, 130);
    let failed: Vec<String> = watching
        .said_to_the_end()
        .into_iter()
        .filter(|line| line.starts_with("error:"))
        .collect();
    assert_eq!(failed, Vec::<String>::new());
}

#[test]
fn a_path_missing_at_the_start_is_said_and_waited_for() {
    let bench = bench();
    let archive = bench.path("dist/img.tar");
    let mut watching = watching(&bench, &archive);
    watching.until_said(&format!(
        "warning: {} does not exist yet; push --watch waits for it to be written",
        archive.display()
    ));
    skopeo_archive(&bench, &Image::sample(531), &archive);
    let first = watching.next_ref();
    assert_eq!(bench.landed("myimg:dev").1, digest(&first));
    assert_eq!(watching.interrupt().0, 130);
}

#[test]
fn ctrl_c_between_rounds_ends_with_130_and_not_a_word() {
    let bench = bench();
    let archive = bench.path("img.tar");
    skopeo_archive(&bench, &Image::sample(541), &archive);
    let mut watching = watching(&bench, &archive);
    watching.next_ref();
    watching.until_said("push --watch: waiting for the next change");
    let before = watching.drain().len();
    let (code, rest) = watching.interrupt();
    assert_eq!((code, rest), (130, Vec::<String>::new()));
    let after = watching.said_to_the_end();
    assert_eq!(after[before..], [] as [String; 0], "said after Ctrl-C");
}
