//! Ctrl-C and SIGTERM mid-push, sent to the real binary while the registry holds an upload
//! (a stalling proxy makes "mid-push" certain): exit 130 / 143, a message saying what stopped,
//! the upload cancelled at the registry, temp files gone, nothing tagged.

use std::time::{Duration, Instant};

use crate::support::fault_proxy::{Action, FaultProxy};
use crate::support::fixtures::{Format, Image};
use crate::support::push::Bench;
use crate::support::registry::TestRegistry;
use crate::support::run::finished;

fn stopped_mid_push(signal: &str, seed: u64) -> (i32, String, Bench, FaultProxy, Vec<String>) {
    let registry = TestRegistry::start();
    let proxy = FaultProxy::on_uploads(&registry.host(), 1, Action::StallAfterBody);
    let bench = Bench::advertising(registry, &proxy.host());
    let path = bench.path("img.tar");
    Image::sample(seed).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let tmp = bench.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = bench
        .cmd()
        .env("TMPDIR", &tmp)
        .args(["push", path.to_str().unwrap()])
        .spawn();
    assert!(
        proxy.wait_for_stall(Duration::from_secs(60)),
        "the push never reached the stalling upload"
    );
    let during = entries(&tmp);
    assert!(
        during
            .iter()
            .any(|name| name.starts_with("kubectl-registry-")),
        "no scratch dir mid-push: {during:?}"
    );
    crate::support::run::signal(child.id(), signal);
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the push outlived its {signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let run = finished(child);
    assert_eq!(run.stdout, "");
    (run.code, run.stderr, bench, proxy, entries(&tmp))
}

fn entries(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn assert_stopped_cleanly(signal: &str, name: &str, code: i32, seed: u64) {
    let (exit, stderr, bench, proxy, left) = stopped_mid_push(signal, seed);
    assert_eq!(
        (exit, stderr.as_str()),
        (
            code,
            format!(
                "error: interrupted by {name} while pushing to 127.0.0.1:[PORT]/myimg:dev; nothing was tagged\n"
            )
            .as_str()
        )
    );
    assert_eq!(left, Vec::<String>::new(), "temp files left behind");
    bench.assert_not_tagged("myimg", "dev");
    let seen = proxy.seen_short();
    assert!(
        seen.iter().any(|s| s == "DELETE /v2/myimg/blobs/uploads/"),
        "the held upload was not cancelled at the registry: {seen:#?}"
    );
}

#[test]
fn ctrl_c_mid_push_exits_130_cleanly() {
    assert_stopped_cleanly("-INT", "SIGINT", 130, 101);
}

#[test]
fn sigterm_mid_push_exits_143_cleanly() {
    assert_stopped_cleanly("-TERM", "SIGTERM", 143, 102);
}
