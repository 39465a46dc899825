//! The runner against real programs (`sh`, `head`, `sleep`, `cat`, `wc`): caps, bounds, kill on
//! drop, the error's words.

use std::os::unix::process::ExitStatusExt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::*;

/// Longer than any bound under test: a test that reaches it failed to stop the program.
const HANG: Duration = Duration::from_secs(20);

fn sh(script: &str) -> Argv {
    Argv::of("sh", ["-c", script])
}

fn streaming(stall: Duration, finish: Duration) -> Bound {
    Bound::Streaming { stall, finish }
}

fn within(seconds: f64) -> Bound {
    Bound::Within(Duration::from_secs_f64(seconds))
}

/// Runs `run`, failing the test instead of hanging when the runner does not stop it.
async fn bounded<T>(run: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(HANG, run)
        .await
        .expect("the runner let the program run past its bound")
}

#[tokio::test]
async fn output_is_kept_up_to_its_cap_and_read_to_the_end() {
    let argv = Argv::of("head", ["-c", "300000", "/dev/zero"]);
    let ran = bounded(
        Run::new(&argv, within(10.0))
            .stdout(Out::Keep { cap: 1000 })
            .succeed(),
    )
    .await
    .unwrap();
    assert_eq!(ran.stdout.len(), 1000);
    // Read past the cap to the end: head wrote it all and exited 0, not killed by a full pipe.
    assert!(ran.status.success());
}

#[tokio::test]
async fn a_run_past_its_bound_is_stopped_and_named() {
    let argv = Argv::of("sleep", ["30"]);
    let started = Instant::now();
    let err = bounded(Run::new(&argv, within(0.2)).output())
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        err.to_string(),
        "`sleep 30` did not finish within 0.2s; it was stopped"
    );
}

#[tokio::test]
async fn a_program_that_exits_but_leaves_its_output_open_is_not_waited_for() {
    let argv = sh("sleep 30 & echo started");
    let err = bounded(Run::new(&argv, within(0.5)).output())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ProcessError::LeftOpen { status, .. } if status.success()),
        "{err}"
    );
}

#[tokio::test]
async fn a_program_that_takes_no_input_is_stopped_after_the_stall_bound() {
    let argv = Argv::of("sleep", ["30"]);
    let writer: StdinWriter = Box::new(|out| {
        loop {
            out.write_all(&[0; 65536])?;
        }
    });
    let err = bounded(
        Run::new(&argv, streaming(Duration::from_millis(300), HANG * 2))
            .stdin(Stdin::Writer(writer))
            .output(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ProcessError::Stalled { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("`sleep 30` took no byte of its input for 0.3s (after ")
    );
}

#[tokio::test]
async fn a_streamed_input_is_all_taken_and_counted() {
    let argv = Argv::of("wc", ["-c"]);
    let writer: StdinWriter = Box::new(|out| out.write_all(&vec![7; 3 << 20]));
    let ran = bounded(
        Run::new(
            &argv,
            streaming(Duration::from_secs(10), Duration::from_secs(10)),
        )
        .stdin(Stdin::Writer(writer))
        .succeed(),
    )
    .await
    .unwrap();
    assert_eq!(ran.stdout_text().trim(), (3 << 20).to_string());
    assert_eq!(ran.bytes_in, 3 << 20);
}

#[tokio::test]
async fn our_own_input_failing_is_told_apart_from_the_programs_failure() {
    let argv = Argv::of("cat", Vec::<&str>::new());
    let writer: StdinWriter = Box::new(|out| {
        out.write_all(b"some")?;
        Err(io::Error::other("the archive is cut short"))
    });
    let err = bounded(
        Run::new(
            &argv,
            streaming(Duration::from_secs(10), Duration::from_secs(10)),
        )
        .stdin(Stdin::Writer(writer))
        .output(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ProcessError::Input { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "writing the input of `cat`: the archive is cut short"
    );
}

#[tokio::test]
async fn bytes_go_to_stdin() {
    let argv = Argv::of("cat", Vec::<&str>::new());
    let ran = bounded(
        Run::new(&argv, within(10.0))
            .stdin(Stdin::Bytes(b"registry.example\n".to_vec()))
            .succeed(),
    )
    .await
    .unwrap();
    assert_eq!(ran.stdout, b"registry.example\n");
}

#[tokio::test]
async fn a_silent_program_is_stopped_one_that_talks_is_not() {
    let silent = sh("echo one; sleep 30");
    let err = bounded(
        Run::new(&silent, Bound::Quiet(Duration::from_millis(300)))
            .stdout(Out::Lines)
            .output(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`sh -c 'echo one; sleep 30'` printed nothing for 0.3s; it was stopped"
    );
    // Four lines 0.4s apart: longer in all than the bound, never silent for it.
    let talking = sh("for i in 1 2 3 4; do echo $i; sleep 0.4; done");
    let ran = bounded(
        Run::new(&talking, Bound::Quiet(Duration::from_secs(1)))
            .stdout(Out::Lines)
            .succeed(),
    )
    .await
    .unwrap();
    assert_eq!(ran.stdout_text(), "1\n2\n3\n4");
}

#[tokio::test]
async fn lines_of_both_streams_are_handed_over_and_the_last_ones_kept() {
    let argv = sh("printf 'a\\rb\\n\\nc'; printf 'd\\n' >&2; seq 1 30");
    let seen = Mutex::new(Vec::new());
    let ran = bounded(
        Run::new(&argv, within(10.0))
            .stdout(Out::Lines)
            .stderr(Out::Lines)
            .output_lines(&|line| seen.lock().unwrap().push(line.to_string())),
    )
    .await
    .unwrap();
    let mut seen = seen.into_inner().unwrap();
    // a, b, c1, 2 to 30 on stdout; d on stderr.
    assert_eq!(seen.len(), 33);
    seen.sort();
    assert_eq!(&seen[29..], ["a", "b", "c1", "d"]);
    let kept = ran.stdout_text();
    assert_eq!(kept.lines().count(), TAIL_LINES);
    assert!(kept.ends_with("\n29\n30"), "{kept}");
    assert_eq!(ran.stderr_text(), "d");
}

#[test]
fn a_line_is_cut_to_its_bound_and_the_tail_to_its_length() {
    let (sender, mut lines) = mpsc::unbounded_channel();
    let mut tail = running::Tail::default();
    for i in 0..30 {
        tail.push(format!("line {i}\n").as_bytes(), &sender);
    }
    tail.push(&vec![b'x'; MAX_LINE_BYTES * 3], &sender);
    tail.end_line(&sender);
    assert_eq!(tail.lines.len(), TAIL_LINES);
    assert_eq!(tail.lines[0], "line 11");
    assert_eq!(tail.lines[TAIL_LINES - 1].len(), MAX_LINE_BYTES);
    let mut seen = 0;
    while lines.try_recv().is_ok() {
        seen += 1;
    }
    assert_eq!(seen, 31);
}

#[tokio::test]
async fn dropping_the_run_kills_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let argv = sh(&format!("echo $$ > {}; exec sleep 30", pid_file.display()));
    let run = Run::new(&argv, within(60.0)).output();
    let pid = {
        tokio::pin!(run);
        bounded(async {
            loop {
                tokio::select! {
                    ended = &mut run => panic!("ended: {ended:?}"),
                    () = tokio::task::yield_now() => {}
                }
                if let Some(pid) = std::fs::read_to_string(&pid_file)
                    .ok()
                    .filter(|text| text.ends_with('\n'))
                {
                    break pid.trim().to_string();
                }
            }
        })
        .await
        // The unfinished run is dropped here.
    };
    bounded(async {
        while alive(&pid) {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

/// The process runs (it is neither gone nor a zombie awaiting its reaper).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

#[tokio::test]
async fn a_failure_names_the_program_and_its_last_line() {
    let argv = sh("echo first >&2; echo 'the last word' >&2; exit 3");
    let err = bounded(Run::new(&argv, within(10.0)).succeed())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`sh -c 'echo first >&2; echo '\\''the last word'\\'' >&2; exit 3'` failed (exit status: 3): the last word"
    );
    let ProcessError::Failed { output, .. } = err else {
        panic!("not a failure");
    };
    assert_eq!(output.stderr_text(), "first\nthe last word\n");
}

#[tokio::test]
async fn a_missing_program_is_told_as_not_found() {
    let argv = Argv::of("kubectl-registry-no-such-program", ["x"]);
    let err = bounded(Run::new(&argv, within(10.0)).output())
        .await
        .unwrap_err();
    assert!(err.not_found());
    assert_eq!(
        err.to_string(),
        "could not start `kubectl-registry-no-such-program x`: No such file or directory (os error 2)"
    );
}

#[test]
fn a_failure_is_told_by_its_last_line_not_minikubes_ssh_wrapper() {
    let said = |stdout: &[u8], stderr: &[u8]| {
        Output {
            status: std::process::ExitStatus::from_raw(1 << 8),
            stdout: stdout.to_vec(),
            stderr: stderr.to_vec(),
            bytes_in: 0,
            stdin_broke: false,
        }
        .said()
    };
    assert_eq!(
        said(
            b"ctr: image \"x\": not found\r\n",
            b"ssh: Process exited with status 1\n"
        )
        .as_deref(),
        Some("ctr: image \"x\": not found")
    );
    assert_eq!(
        said(b"", b"ssh: Process exited with status 1\n").as_deref(),
        Some("ssh: Process exited with status 1")
    );
    assert_eq!(said(b"out\n", b"a\n\n  b  \n\n").as_deref(), Some("b"));
    assert_eq!(said(b"", b"\n"), None);
    assert_eq!(said(b"", b"bell\x07\n").as_deref(), Some("bell\\u{7}"));
}

#[test]
fn blocking_runs_outside_a_runtime() {
    let argv = Argv::of("echo", ["hi"]);
    let ran = output_blocking(Run::new(&argv, within(10.0))).unwrap();
    assert_eq!(ran.stdout, b"hi\n");
}

#[tokio::test]
async fn a_run_past_its_bound_is_reaped_and_what_it_started_stopped_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (pid_file, child_file) = (dir.path().join("pid"), dir.path().join("child"));
    // A shell script plugin: it waits on a program of its own.
    let argv = sh(&format!(
        "sleep 30 & echo $! > {child}; echo $$ > {pid}; wait",
        child = child_file.display(),
        pid = pid_file.display()
    ));
    let running = Run::new(&argv, within(0.5)).spawn().unwrap();
    bounded(async {
        while std::fs::read_to_string(&pid_file).map_or(true, |pid| !pid.ends_with('\n')) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let err = bounded(running.wait(&|_| {})).await.unwrap_err();
    assert!(matches!(err, ProcessError::TimedOut { .. }), "{err}");
    // Waited for before the error came back: not even a zombie is left of it.
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(
        !std::path::Path::new(&format!("/proc/{}", pid.trim())).exists(),
        "the stopped program was not reaped"
    );
    // Its own child was in its process group, so it was killed too; it is the system's to reap.
    let child = std::fs::read_to_string(&child_file).unwrap();
    bounded(async {
        while alive(child.trim()) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_program_on_our_terminal_stays_in_our_process_group() {
    let ours = std::fs::read_to_string("/proc/self/stat").unwrap();
    let group_of = |stat: &str| {
        stat.rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .nth(2)
            .unwrap()
            .to_string()
    };
    let argv = sh("cat /proc/$$/stat");
    let attended = bounded(
        Run::new(&argv, within(10.0))
            .stdin(Stdin::Inherit)
            .succeed(),
    )
    .await
    .unwrap();
    assert_eq!(group_of(&attended.stdout_text()), group_of(&ours));
    let unattended = bounded(Run::new(&argv, within(10.0)).succeed())
        .await
        .unwrap();
    let (group, pid) = {
        let stat = unattended.stdout_text();
        (
            group_of(&stat),
            stat.split_whitespace().next().unwrap().to_string(),
        )
    };
    assert_eq!(group, pid, "an unattended program leads a group of its own");
}
