//! Shell completion as users get it: the committed scripts are what the binary prints and bash
//! runs the bash one; the real kubectl completes `kubectl registry ...` through this binary
//! linked as `kubectl_complete-registry`.

use snapbox::str;
use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::cargo::cargo_bin;

use crate::support::run::{Outcome, Run};

const REGENERATE: &str = "run scripts/gen-completions and commit completions/";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `kubectl-registry completion SHELL`.
fn completion(shell: &str) -> Outcome {
    let home = tempfile::tempdir().unwrap();
    Run::plugin(home.path())
        .args(["completion", shell])
        .output()
}

/// A directory put first on PATH, holding the plugin and its completion helper as a user links
/// them, optionally a stand-in `docker`, and serving as the shell's current directory.
struct PluginPath {
    dir: tempfile::TempDir,
}

impl PluginPath {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(
            cargo_bin("kubectl-registry"),
            dir.path().join("kubectl-registry"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "kubectl-registry",
            dir.path().join("kubectl_complete-registry"),
        )
        .unwrap();
        Self { dir }
    }

    /// No docker daemon runs here: the engine is this script, standing in for the docker CLI.
    fn with_docker(script: &str) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let path = Self::new();
        let docker = path.dir.path().join("docker");
        std::fs::write(&docker, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&docker, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn env_path(&self) -> String {
        format!(
            "{}:{}",
            self.path().display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// `kubectl __complete registry WORDS...`, what kubectl's shell scripts run on <TAB>: the
    /// candidates (value, description) and the directive.
    fn kubectl_complete(&self, words: &[&str]) -> (Vec<(String, Option<String>)>, String) {
        let kubectl = find_on_path("kubectl").unwrap_or_else(|| {
            panic!("kubectl is not on PATH: these tests drive the real kubectl (1.26+)")
        });
        let minor = kubectl_client_minor(&kubectl, self.path());
        assert!(
            minor >= PLUGIN_COMPLETION_SINCE_MINOR,
            "{} is kubectl 1.{minor}: completing plugin arguments through kubectl_complete-NAME \
             needs 1.{PLUGIN_COMPLETION_SINCE_MINOR}+ (scripts/install-test-deps installs one)",
            kubectl.display()
        );
        let run = Run::program(kubectl, self.path())
            .args(["__complete", "registry"])
            .args(words)
            .current_dir(self.path())
            .path(self.env_path())
            .kubeconfig(&self.path().join("no-kubeconfig"))
            .output();
        assert_eq!(run.code, 0, "{run:?}");
        parse_cobra(&run.stdout)
    }
}

/// kubectl completes a plugin's arguments by running `kubectl_complete-NAME` since 1.26.
const PLUGIN_COMPLETION_SINCE_MINOR: u32 = 26;

/// The minor version `kubectl version --client` reports (`"minor": "32"`, or `"32+"` on some builds).
fn kubectl_client_minor(kubectl: &Path, home: &Path) -> u32 {
    let run = Run::program(kubectl, home)
        .args(["version", "--client", "-o", "json"])
        .output();
    let version: serde_json::Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|err| panic!("kubectl version --client -o json: {err}: {run:?}"));
    let minor = version["clientVersion"]["minor"]
        .as_str()
        .unwrap_or_default();
    minor
        .trim_end_matches('+')
        .parse()
        .unwrap_or_else(|_| panic!("kubectl's minor version {minor:?} is not a number"))
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

fn parse_cobra(stdout: &str) -> (Vec<(String, Option<String>)>, String) {
    let mut lines: Vec<&str> = stdout.lines().collect();
    let directive = lines.pop().unwrap_or_default();
    assert!(
        directive.starts_with(':'),
        "no directive line in {stdout:?}"
    );
    let candidates = lines
        .into_iter()
        .map(|line| match line.split_once('\t') {
            Some((value, description)) => (value.to_string(), Some(description.to_string())),
            None => (line.to_string(), None),
        })
        .collect();
    (candidates, directive.to_string())
}

fn values(candidates: &[(String, Option<String>)]) -> Vec<&str> {
    candidates.iter().map(|(value, _)| value.as_str()).collect()
}

#[test]
fn committed_scripts_are_what_the_binary_prints() {
    for (shell, file) in [
        ("bash", "kubectl-registry.bash"),
        ("zsh", "_kubectl-registry"),
        ("fish", "kubectl-registry.fish"),
        ("powershell", "_kubectl-registry.ps1"),
    ] {
        let run = completion(shell);
        assert_eq!(
            (run.code, run.stderr.as_str()),
            (0, ""),
            "completion {shell}"
        );
        let committed = std::fs::read(repo().join("completions").join(file))
            .unwrap_or_else(|err| panic!("completions/{file}: {err}; {REGENERATE}"));
        assert!(
            run.stdout.as_bytes() == committed,
            "completions/{file} differs from `kubectl registry completion {shell}`: {REGENERATE}"
        );
    }
}

#[test]
fn scripts_register_for_the_binary_not_for_kubectl() {
    let expectations = [
        ("bash", "-o default kubectl-registry\n"),
        ("zsh", "#compdef kubectl-registry\n"),
        ("fish", "complete -c kubectl-registry "),
        ("powershell", "-CommandName 'kubectl-registry'"),
        ("elvish", "edit:completion:arg-completer[kubectl-registry]"),
    ];
    for (shell, registration) in expectations {
        let script = completion(shell).stdout;
        assert!(
            script.contains(registration),
            "{shell}: no {registration:?} in\n{script}"
        );
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error_naming_the_shells() {
    let run = completion("tcsh");
    assert_eq!((run.code, run.stdout.as_str()), (2, ""));
    run.assert_stderr(str![[r#"
error: invalid value 'tcsh' for '<SHELL>'
  [possible values: bash, elvish, fish, powershell, zsh]

  tip: a similar value exists: 'zsh'

For more information, try '--help'.

"#]]);
}

/// What the committed bash script offers for `kubectl-registry WORDS...<TAB>`.
fn bash_complete(words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|word| format!("'{word}'")).collect();
    let current = words.len() - 1;
    let previous = if current > 0 { words[current - 1] } else { "" };
    let script = format!(
        "source completions/kubectl-registry.bash
         COMP_WORDS=({words}); COMP_CWORD={current}
         _kubectl__registry kubectl-registry '{cur}' '{previous}'
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        words = quoted.join(" "),
        cur = words[current],
    );
    let home = tempfile::tempdir().unwrap();
    let run = Run::program("bash", home.path())
        .args(["-c", &script])
        .current_dir(&repo())
        .output();
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_script_completes_subcommands_their_flags_and_values() {
    assert_eq!(bash_complete(&["kubectl-registry", "pu"]), ["push"]);
    assert_eq!(
        bash_complete(&["kubectl-registry", "push", "--comp"]),
        ["--compression"]
    );
    assert_eq!(
        bash_complete(&["kubectl-registry", "push", "--compression", ""]),
        ["auto", "none", "gzip", "zstd"]
    );
    assert_eq!(
        bash_complete(&["kubectl-registry", "info", "-o", ""]),
        ["text", "json"]
    );
    assert_eq!(
        bash_complete(&["kubectl-registry", "why", "--ins"]),
        ["--insecure"]
    );
}

#[test]
fn kubectl_completes_subcommand_names() {
    let path = PluginPath::new();
    let (candidates, directive) = path.kubectl_complete(&["pu"]);
    assert_eq!(values(&candidates), ["push"]);
    assert_eq!(directive, ":4");
    let (candidates, _) = path.kubectl_complete(&[""]);
    assert_eq!(
        values(&candidates),
        [
            "push",
            "info",
            "advertise",
            "doctor",
            "ls",
            "prune",
            "why",
            "version",
            "completion"
        ]
    );
}

#[test]
fn kubectl_completes_the_current_subcommands_flags_with_descriptions() {
    let path = PluginPath::new();
    let (candidates, directive) = path.kubectl_complete(&["push", "--comp"]);
    assert_eq!(
        candidates,
        [(
            "--compression".to_string(),
            Some("How to send uncompressed layers".to_string())
        )]
    );
    assert_eq!(directive, ":4");
    let (candidates, _) = path.kubectl_complete(&["info", "--"]);
    let offered = values(&candidates);
    assert!(
        offered.contains(&"--output") && offered.contains(&"--context"),
        "{offered:?}"
    );
    assert!(
        !offered.contains(&"--compression"),
        "push's flag offered for info"
    );
}

#[test]
fn kubectl_completes_flag_and_argument_values() {
    let path = PluginPath::new();
    let (candidates, directive) = path.kubectl_complete(&["push", "--compression", ""]);
    assert_eq!(values(&candidates), ["auto", "none", "gzip", "zstd"]);
    assert_eq!(directive, ":4");
    let (candidates, _) = path.kubectl_complete(&["push", "./img.tar", "-o", ""]);
    assert_eq!(values(&candidates), ["text", "json"]);
    let (candidates, _) = path.kubectl_complete(&["completion", ""]);
    assert_eq!(
        values(&candidates),
        ["bash", "elvish", "fish", "powershell", "zsh"]
    );
}

#[test]
fn push_source_is_left_to_file_completion_when_docker_fails() {
    let path = PluginPath::with_docker("echo 'Cannot connect to the Docker daemon' >&2; exit 1");
    let (candidates, directive) = path.kubectl_complete(&["push", ""]);
    assert!(candidates.is_empty(), "{candidates:?}");
    assert_eq!(directive, ":0", "the shell completes file names");
}

#[test]
fn push_source_offers_local_images_and_the_files_beside_them() {
    let path = PluginPath::with_docker(
        r#"[ "$*" = 'image ls --format {{.Repository}}:{{.Tag}}' ] || exit 1
printf 'myimg:dev\nmyimg:<none>\n<none>:<none>\nother:1\n'"#,
    );
    std::fs::write(path.path().join("myimg.tar"), b"").unwrap();
    std::fs::create_dir(path.path().join("mydir")).unwrap();
    let (candidates, directive) = path.kubectl_complete(&["push", "my"]);
    assert_eq!(
        candidates,
        [
            ("myimg:dev".to_string(), Some("local image".to_string())),
            ("mydir/".to_string(), None),
            ("myimg.tar".to_string(), None),
        ]
    );
    assert_eq!(directive, ":4");
    let (candidates, directive) = path.kubectl_complete(&["push", "./my"]);
    assert!(
        candidates.is_empty(),
        "paths are the shell's: {candidates:?}"
    );
    assert_eq!(directive, ":0");
}

#[test]
fn a_hanging_docker_does_not_hold_the_prompt() {
    let path = PluginPath::with_docker("exec sleep 60");
    // The helper gives docker a second; far less than this bound, which only stops a hang.
    let run = Run::program(path.path().join("kubectl_complete-registry"), path.path())
        .args(["push", ""])
        .path(path.env_path())
        .timeout(Duration::from_secs(20))
        .output();
    assert_eq!((run.code, run.stdout.as_str()), (0, ":0\n"), "{run:?}");
}

#[test]
fn the_helper_answers_under_its_windows_name_too() {
    let path = PluginPath::new();
    let exe = path.path().join("kubectl_complete-registry.exe");
    std::os::unix::fs::symlink("kubectl-registry", &exe).unwrap();
    let run = Run::program(exe, path.path()).arg("ver").output();
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "version\tPrint the version\n:4\n")
    );
}
