//! The record of blobs sent to each registry: a second repository mounts what the first got, a
//! compressed re-push costs no compression, and a corrupt or stale record is never trusted.

use crate::support::fixtures::{Format, Image};
use crate::support::push::{Bench, Node};

fn counts(report: &serde_json::Value) -> (u64, u64) {
    (
        report["blobsPushed"].as_u64().unwrap(),
        report["blobsSkipped"].as_u64().unwrap(),
    )
}

fn record_file(bench: &Bench) -> std::path::PathBuf {
    bench.path(".cache/kubectl-registry/sent-blobs-v1.json")
}

#[test]
fn a_second_repository_mounts_the_layers_the_first_one_got() {
    let bench = Bench::new();
    let image = Image::sample(61);
    let path = bench.path("img.tar");
    image.write(Format::Docker25, &path, &["first:dev"]);
    let path = path.to_str().unwrap();
    bench.push(&[path]).assert_clean_success();

    let second = bench.push(&[path, "--tag", "second:dev", "-o", "json"]);
    second.assert_clean_success();
    // Only the config goes again (configs are not recorded); every layer is mounted.
    assert_eq!(counts(&second.json()), (1, image.layer_count() as u64));
    let (reference, _) =
        bench.assert_pushed(&bench.push(&[path, "--tag", "second:dev"]), "second", "dev");
    Node::start(&bench.registry).assert_pulls(&reference, &image);
}

#[test]
fn a_gzip_repush_finds_the_recorded_blobs_without_compressing_again() {
    let bench = Bench::new();
    let image = Image::sample(62);
    let path = bench.path("img.tar");
    image.write(Format::Docker25, &path, &["myimg:dev"]);
    let path = path.to_str().unwrap();
    let first = bench.push(&[path, "--compression", "gzip", "-o", "json"]);
    first.assert_clean_success();

    let again = bench.push(&[path, "--compression", "gzip", "-o", "json"]);
    again.assert_clean_success();
    assert_eq!(counts(&again.json()), (0, image.layer_count() as u64 + 1));
    assert_eq!(again.json()["digest"], first.json()["digest"]);
}

#[test]
fn a_corrupt_record_is_ignored_and_written_anew() {
    let bench = Bench::new();
    let image = Image::sample(63);
    let path = bench.path("img.tar");
    image.write(Format::Docker25, &path, &["myimg:dev"]);
    let record = record_file(&bench);
    std::fs::create_dir_all(record.parent().unwrap()).unwrap();
    std::fs::write(&record, b"{\"entries\": [[\"half").unwrap();

    let run = bench.push(&[path.to_str().unwrap(), "--compression", "gzip"]);
    let (reference, _) = bench.assert_pushed(&run, "myimg", "dev");
    Node::start(&bench.registry).assert_pulls(&reference, &image);
    let rewritten: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    assert_eq!(
        rewritten["entries"].as_array().unwrap().len(),
        image.layer_count()
    );
}

#[test]
fn a_record_of_blobs_the_registry_lost_is_not_trusted() {
    let bench = Bench::new();
    let image = Image::sample(64);
    let path = bench.path("img.tar");
    image.write(Format::Docker25, &path, &["myimg:dev"]);
    let path = path.to_str().unwrap();
    bench
        .push(&[path, "--compression", "gzip"])
        .assert_clean_success();
    // The registry forgets everything; the record still names the gzip blobs.
    std::fs::remove_dir_all(bench.registry.data_dir().join("docker")).unwrap();

    let again = bench.push(&[path, "--compression", "gzip", "-o", "json"]);
    again.assert_clean_success();
    assert_eq!(counts(&again.json()), (image.layer_count() as u64 + 1, 0));
    let (reference, _) = bench.assert_pushed(
        &bench.push(&[path, "--compression", "gzip"]),
        "myimg",
        "dev",
    );
    Node::start(&bench.registry).assert_pulls(&reference, &image);
}
