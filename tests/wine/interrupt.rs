//! Ctrl-C mid-push by the Windows build under Wine, as `push` and as a round of `push --watch`:
//! the registry holds the first upload (a stalling proxy makes "mid-push" certain), then Ctrl-C
//! reaches the program as a console's does, a `CTRL_C_EVENT` its handler (tokio's, through
//! `SetConsoleCtrlHandler`) receives on a thread of its own. Wine raises that event for a SIGINT
//! to the program's Linux process, as when a user presses Ctrl-C in the terminal Wine runs in.
//! The run exits 130 saying what stopped, the held upload is cancelled at the registry, nothing
//! is tagged, and the `%TEMP%` it spooled to (its own, set by `cmd`) holds nothing afterwards.
//!
//! Only the program gets the SIGINT, not the `cmd` that set `%TEMP%`: Windows' cmd ignores
//! Ctrl-C while a program it started runs, Wine 8's has no handler and would end with 0, its
//! exit status lost. (A program with no handler of its own ends on Ctrl-C with
//! STATUS_CONTROL_C_EXIT, 0xC000013A, on Windows; with 0 on Wine 8. Ours says 130 on both.)

use std::path::Path;
use std::time::{Duration, Instant};

use crate::on_windows::{c_folder, windows_pid, windows_with_temp, z_path};
use crate::support::fault_proxy::{Action, FaultProxy};
use crate::support::fixtures::{Format, Image};
use crate::support::push::Bench;
use crate::support::registry::TestRegistry;
use crate::support::run::{Outcome, finished, signal};

/// A bound on each wait under Wine, not a timing assertion.
const BOUND: Duration = Duration::from_secs(120);

/// What a push stopped by Ctrl-C left: its outcome, what `%TEMP%` held mid-push and after.
struct Stopped {
    run: Outcome,
    during: Vec<String>,
    after: Vec<String>,
}

/// `push ARGS` (then `extra`) by the Windows build, the archive of `seed` on stdin if `stdin`
/// (`push -`) else at `Z:\...\img.tar`, Ctrl-C once the registry holds its first upload. The
/// held upload was cancelled at the registry and nothing was tagged.
fn stopped_mid_push(seed: u64, stdin: bool, extra: &[&str]) -> Stopped {
    let registry = TestRegistry::start();
    let proxy = FaultProxy::on_uploads(&registry.host(), 1, Action::StallAfterBody);
    let bench = Bench::advertising(registry, &proxy.host());
    let archive = bench.path("img.tar");
    Image::sample(seed).write(Format::DockerLegacy, &archive, &["myimg:dev"]);
    let (temp, windows_temp) = c_folder("temp");
    let kubeconfig = z_path(&bench.kubeconfig);
    let source = if stdin {
        "-".to_string()
    } else {
        z_path(&archive)
    };
    let mut args = vec!["--kubeconfig", &kubeconfig, "push", &source];
    args.extend(extra);
    let mut run = windows_with_temp(bench.dir.path(), &windows_temp, &args);
    if stdin {
        run = run.stdin_file(&archive);
    }
    let mut child = run.spawn();
    assert!(
        proxy.wait_for_stall(BOUND),
        "the push never reached the stalling upload"
    );
    let during = entries(temp.path());
    signal(windows_pid(&kubeconfig).expect("its process"), "-INT");
    let deadline = Instant::now() + BOUND;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the push outlived its Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let run = finished(child);
    bench.assert_not_tagged("myimg", "dev");
    let seen = proxy.seen_short();
    assert!(
        seen.iter().any(|s| s == "DELETE /v2/myimg/blobs/uploads/"),
        "the held upload was not cancelled at the registry: {seen:#?}"
    );
    let after = entries(temp.path());
    Stopped { run, during, after }
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn has(names: &[String], prefix: &str) -> bool {
    names.iter().any(|name| name.starts_with(prefix))
}

const SAID: &str = "error: interrupted by Ctrl-C while pushing to 127.0.0.1:[PORT]/myimg:dev; nothing was tagged\n";

/// The archive on stdin: spooled to a file in `%TEMP%` beside the push's scratch folder.
#[test]
fn ctrl_c_mid_push_exits_130_with_nothing_tagged_and_nothing_left_in_temp() {
    let stopped = stopped_mid_push(80, true, &[]);
    let during = &stopped.during;
    assert!(has(during, "kubectl-registry-"), "no scratch: {during:?}");
    assert!(
        has(during, ".tmp"),
        "stdin not spooled to %TEMP%: {during:?}"
    );
    let run = &stopped.run;
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (130, "", SAID)
    );
    assert_eq!(stopped.after, Vec::<String>::new(), "left in %TEMP%");
}

#[test]
fn ctrl_c_during_a_round_of_a_watch_exits_130_with_nothing_tagged_and_nothing_left_in_temp() {
    let stopped = stopped_mid_push(81, false, &["--watch"]);
    let during = &stopped.during;
    assert!(has(during, "kubectl-registry-"), "no scratch: {during:?}");
    let run = &stopped.run;
    assert_eq!((run.code, run.stdout.as_str()), (130, ""));
    assert!(run.stderr.ends_with(SAID), "{}", run.stderr);
    assert_eq!(stopped.after, Vec::<String>::new(), "left in %TEMP%");
}
