//! One builder for a run of any program in a test ([`Run`]): the built binary or another program,
//! a clean environment, a home, a kubeconfig, stand-ins first on PATH, more variables and stdin;
//! one [`Outcome`] back, with what varies between runs redacted (see [`redactions`]).

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use snapbox::{Assert, IntoData, Redactions};

use crate::support::env::clean_env;

/// A run being set up; [`Run::output`] runs it.
pub(crate) struct Run {
    cmd: Command,
    home: PathBuf,
    standins: Vec<PathBuf>,
    stdin: Option<Vec<u8>>,
    timeout: Option<Duration>,
}

impl Run {
    /// The built `kubectl-registry` with a clean environment: `home` as HOME, no colour, none of
    /// the machine's cluster, registry, engine, cache or proxy variables.
    pub(crate) fn plugin(home: &Path) -> Self {
        Self::program(assert_cmd::cargo::cargo_bin("kubectl-registry"), home)
    }

    /// Any `program` (kubectl, a wrapper around the binary) with the clean environment
    /// [`Run::plugin`] gives.
    pub(crate) fn program(program: impl AsRef<OsStr>, home: &Path) -> Self {
        let mut cmd = Command::new(program);
        clean_env(&mut cmd, home);
        Self {
            cmd,
            home: home.to_path_buf(),
            standins: Vec::new(),
            stdin: None,
            timeout: None,
        }
    }

    /// The built binary under `/usr/bin/time -f %M -o RSS_FILE`: GNU time writes the run's
    /// peak RSS (KiB) into `rss_file`. `DOCKER_CONFIG` as [`Run::no_docker_config`].
    pub(crate) fn plugin_timed(home: &Path, rss_file: &Path) -> Self {
        Self::program("/usr/bin/time", home)
            .no_docker_config()
            .args(["-f", "%M", "-o"])
            .arg(rss_file)
            .arg(assert_cmd::cargo::cargo_bin("kubectl-registry"))
    }

    /// `DOCKER_CONFIG` at a folder that does not exist (HOME/no-docker-config): no machine's
    /// credentials, not even the home's.
    pub(crate) fn no_docker_config(mut self) -> Self {
        self.cmd
            .env("DOCKER_CONFIG", self.home.join("no-docker-config"));
        self
    }

    /// `KUBECONFIG` set to `kubeconfig`.
    pub(crate) fn kubeconfig(self, kubeconfig: &Path) -> Self {
        self.env("KUBECONFIG", kubeconfig)
    }

    /// `--kubeconfig KUBECONFIG` as the first arguments.
    pub(crate) fn kubeconfig_flag(self, kubeconfig: &Path) -> Self {
        self.arg("--kubeconfig").arg(kubeconfig)
    }

    /// `dir` on PATH before the inherited PATH (and before the stand-ins given earlier).
    pub(crate) fn standins(mut self, dir: &Path) -> Self {
        self.standins.insert(0, dir.to_path_buf());
        self
    }

    /// PATH is `path` and nothing else (no inherited PATH, no stand-ins).
    pub(crate) fn path(mut self, path: impl AsRef<OsStr>) -> Self {
        self.standins.clear();
        self.cmd.env("PATH", path);
        self
    }

    pub(crate) fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    pub(crate) fn envs<K, V>(mut self, vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.cmd.envs(vars);
        self
    }

    pub(crate) fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.cmd.arg(arg);
        self
    }

    pub(crate) fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.cmd.args(args);
        self
    }

    /// Runs in `dir` (otherwise in the test's own current directory).
    pub(crate) fn current_dir(mut self, dir: &Path) -> Self {
        self.cmd.current_dir(dir);
        self
    }

    /// `bytes` on stdin (otherwise stdin is empty).
    pub(crate) fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// The contents of `file` on stdin.
    pub(crate) fn stdin_file(self, file: &Path) -> Self {
        self.stdin(std::fs::read(file).expect("reading the stdin file"))
    }

    /// A run not ended `timeout` after it started is killed, and the test fails.
    pub(crate) fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The command as it will run (for what the builder does not say).
    pub(crate) fn command(mut self) -> Command {
        if !self.standins.is_empty() {
            let inherited = std::env::var_os("PATH").unwrap_or_default();
            let dirs = self
                .standins
                .iter()
                .cloned()
                .chain(std::env::split_paths(&inherited));
            let path: OsString = std::env::join_paths(dirs).expect("a PATH of the stand-ins");
            self.cmd.env("PATH", path);
        }
        self.cmd
    }

    /// Starts the run with stdin, stdout and stderr piped (stdin given by [`Run::stdin`] is
    /// written from a thread, then closed; else closed at once); [`finished`] makes its [`Outcome`].
    pub(crate) fn spawn(mut self) -> Child {
        let stdin = self.stdin.take();
        let mut child = self
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the program");
        let mut pipe = child.stdin.take().expect("stdin piped");
        if let Some(bytes) = stdin {
            // A writer of its own: a program that stops reading (it refused the input) must not
            // hold the test up; what it did not read is its own affair.
            std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
        }
        child
    }

    /// Runs to the end; what it printed, redacted.
    pub(crate) fn output(self) -> Outcome {
        let timeout = self.timeout;
        let mut child = self.spawn();
        let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut pipe) = pipe {
                    pipe.read_to_end(&mut bytes).expect("reading the output");
                }
                bytes
            })
        };
        let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
        let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
        let deadline = timeout.map(|timeout| (Instant::now() + timeout, timeout));
        let status = loop {
            if deadline.is_none() {
                break child.wait().expect("waiting for the program");
            }
            if let Some(status) = child.try_wait().expect("polling the program") {
                break status;
            }
            if let Some((deadline, timeout)) = deadline
                && Instant::now() >= deadline
            {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the program did not end within {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        outcome(
            status,
            stdout.join().expect("the stdout reader"),
            stderr.join().expect("the stderr reader"),
        )
    }
}

/// The trimmed stdout of a finished helper program (docker, podman, skopeo); a panic with its
/// stderr when it failed.
pub(crate) fn stdout_of(what: &str, out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .trim()
        .to_string()
}

/// Sends `signal` (`-INT`, `-TERM`, `-9`) to the process `pid` with kill(1); asserts it was sent.
pub(crate) fn signal(pid: u32, signal: &str) {
    let sent = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("running kill");
    assert!(sent.success(), "kill {signal} {pid} failed");
}

/// The [`Outcome`] of a run started with [`Run::spawn`] (or any child with piped output).
pub(crate) fn finished(child: Child) -> Outcome {
    let output = child.wait_with_output().expect("waiting for the program");
    outcome(output.status, output.stdout, output.stderr)
}

fn outcome(status: std::process::ExitStatus, stdout: Vec<u8>, stderr: Vec<u8>) -> Outcome {
    let text = |bytes: Vec<u8>| redact(&String::from_utf8(bytes).expect("UTF-8 output"));
    Outcome {
        code: status
            .code()
            .expect("the program was killed by a signal (a crash)"),
        stdout: text(stdout),
        stderr: without_wines_own(text(stderr)),
    }
}

/// What Wine's ntdll prints of itself, now and then, when its own client fails to talk to the
/// wineserver (`wine client error:2f0: sendmsg: Socket operation on non-socket`, seen once in
/// CI after `version` had printed its line and exited 0): Wine's, not the program's, which never
/// prints it; a Linux run never has it. The exit code and the rest of the output are still
/// judged. Said on the test's own stderr, not dropped unseen.
const WINES_OWN: &str = "wine client error:";

fn without_wines_own(stderr: String) -> String {
    if !stderr.contains(WINES_OWN) {
        return stderr;
    }
    let (wines, ours): (Vec<&str>, Vec<&str>) = stderr
        .split_inclusive('\n')
        .partition(|line| line.starts_with(WINES_OWN));
    eprintln!("Wine said of itself (left out of the program's stderr): {wines:?}");
    ours.concat()
}

/// What a run printed, its loopback ports (`[PORT]`) and temporary folders (`[ROOT]`) redacted.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    pub(crate) fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("stdout is not JSON ({err}): {:?}", self.stdout))
    }

    /// The one line of stdout of a success (the ref a push prints).
    #[track_caller]
    pub(crate) fn reference(&self) -> &str {
        assert_eq!(self.code, 0, "{self:?}");
        let lines: Vec<&str> = self.stdout.lines().collect();
        assert_eq!(lines.len(), 1, "stdout is the ref line alone: {self:?}");
        lines[0]
    }

    /// Asserts a clean success: exit 0 and nothing at all on stderr.
    #[track_caller]
    pub(crate) fn assert_clean_success(&self) {
        assert_eq!(
            (self.code, self.stderr.as_str()),
            (0, ""),
            "stdout: {}",
            self.stdout
        );
    }

    /// Asserts stdout is `expected` whole, every [`redactions`] applied (digests and times too).
    #[track_caller]
    pub(crate) fn assert_stdout(&self, expected: impl IntoData) {
        assert_redacted(&self.stdout, expected);
    }

    /// Asserts stderr is `expected` whole, every [`redactions`] applied (digests and times too).
    #[track_caller]
    pub(crate) fn assert_stderr(&self, expected: impl IntoData) {
        assert_redacted(&self.stderr, expected);
    }
}

/// Asserts `actual`, every [`redactions`] applied, is `expected`; `SNAPSHOTS=overwrite` rewrites
/// `expected` in place.
#[track_caller]
pub(crate) fn assert_redacted(actual: &str, expected: impl IntoData) {
    let actual = redactions().redact(actual);
    Assert::new()
        .action_env(snapbox::assert::DEFAULT_ACTION_ENV)
        .redact_with(redactions().clone())
        // Output is pinned as printed: a backslash stays one (snapbox would turn it into `/`).
        .normalize_paths(false)
        .eq(actual, expected);
}

/// What varies between runs, and the placeholder each becomes:
/// - `[ROOT]`: a temporary folder (`$TMPDIR/.tmpXXXXXX` as `tempfile` names them, and the engines'
///   socket folders);
/// - `[PORT]`: a loopback port (`127.0.0.1:[PORT]`);
/// - `[DIGEST]`: a sha256 digest's hex, whole or cut to 12 or more characters;
/// - `[ELAPSED]`: a time taken (`answered in [ELAPSED] ms`, `done in [ELAPSED]s`).
///
/// Every [`Outcome`] has `[ROOT]` and `[PORT]` applied; the snapshot assertions apply them all.
pub(crate) fn redactions() -> &'static Redactions {
    static REDACTIONS: OnceLock<Redactions> = OnceLock::new();
    REDACTIONS.get_or_init(|| {
        let mut redactions = Redactions::new();
        let pattern = |pattern: &str| regex::Regex::new(pattern).expect("a redaction pattern");
        redactions
            .extend([
                ("[ROOT]", pattern(&root_pattern())),
                ("[PORT]", pattern(r"127\.0\.0\.1:(?<redacted>[0-9]+)")),
                ("[DIGEST]", pattern(r"sha256:(?<redacted>[0-9a-f]{12,64})")),
                ("[ELAPSED]", pattern(r"answered in (?<redacted>[0-9]+) ms")),
                ("[ELAPSED]", pattern(r" in (?<redacted>[0-9]+\.[0-9])s\b")),
            ])
            .expect("valid placeholders");
        redactions
    })
}

/// A temporary folder as `tempfile` names them, below the machine's temp dir (`.tmpXXXXXX`, or the
/// short prefixes the engines' socket folders take: `ctrd`, `dk`, `pdmn`).
fn root_pattern() -> String {
    let temp = std::env::temp_dir();
    let temp = temp
        .to_str()
        .expect("a UTF-8 temp dir")
        .trim_end_matches('/');
    format!(
        r"(?<redacted>{}/(?:\.tmp|ctrd|dk|pdmn)[A-Za-z0-9]{{6}})",
        regex::escape(temp)
    )
}

/// `text` with the redactions every [`Outcome`] has: `[ROOT]` and `[PORT]`.
pub(crate) fn redact(text: &str) -> String {
    static OUTCOME: OnceLock<Redactions> = OnceLock::new();
    OUTCOME
        .get_or_init(|| {
            let mut redactions = Redactions::new();
            redactions
                .insert(
                    "[ROOT]",
                    regex::Regex::new(&root_pattern()).expect("[ROOT]"),
                )
                .expect("[ROOT]");
            redactions
                .insert(
                    "[PORT]",
                    regex::Regex::new(r"127\.0\.0\.1:(?<redacted>[0-9]+)").expect("[PORT]"),
                )
                .expect("[PORT]");
            redactions
        })
        .redact(text)
}

#[test]
fn what_varies_is_redacted_and_nothing_else() {
    let temp = std::env::temp_dir().join(".tmpAb12Cd");
    let text = format!(
        "http://127.0.0.1:39211 and 127.0.0.1:5 but localhost:5001; {}/img.tar; \
         sha256:96e66b1e3211 answered in 12 ms, done in 3.4s",
        temp.display()
    );
    assert_eq!(
        redact(&text),
        "http://127.0.0.1:[PORT] and 127.0.0.1:[PORT] but localhost:5001; [ROOT]/img.tar; \
         sha256:96e66b1e3211 answered in 12 ms, done in 3.4s"
    );
    assert_eq!(
        redactions().redact(&text),
        "http://127.0.0.1:[PORT] and 127.0.0.1:[PORT] but localhost:5001; [ROOT]/img.tar; \
         sha256:[DIGEST] answered in [ELAPSED] ms, done in [ELAPSED]s"
    );
}
