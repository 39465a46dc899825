//! The Windows build's first runs under Wine: `version`, `--help` and `completion powershell`
//! print what the Linux build of the same sources prints, byte for byte; `info` reads the
//! kubeconfig at `%USERPROFILE%\.kube\config` and reports the stand-in cluster's registry.

use snapbox::str;

use crate::on_windows::{linux, user_profile, windows};
use crate::support::apiserver::{ApiServer, StandInNode, kubeconfig_yaml};
use crate::support::info_report::{KIND_SCRIPT_V1, Report};
use crate::support::run::Outcome;

/// `args` run by the Windows and the Linux build alike: both succeed and print the same.
fn same_on_both(args: &[&str]) -> Outcome {
    let home = tempfile::tempdir().unwrap();
    let on_windows = windows(home.path()).args(args).output();
    let on_linux = linux(home.path()).args(args).output();
    on_windows.assert_clean_success();
    on_linux.assert_clean_success();
    assert_eq!(on_windows.stdout, on_linux.stdout, "{args:?}");
    on_windows
}

#[test]
fn version_is_the_crates() {
    let run = same_on_both(&["version"]);
    assert!(
        run.stdout.contains(env!("CARGO_PKG_VERSION")),
        "{}",
        run.stdout
    );
}

#[test]
fn help_is_the_linux_builds() {
    let run = same_on_both(&["--help"]);
    assert!(run.stdout.contains("push"), "{}", run.stdout);
}

#[test]
fn powershell_completion_is_the_linux_builds() {
    let run = same_on_both(&["completion", "powershell"]);
    assert!(
        run.stdout.contains("Register-ArgumentCompleter"),
        "{}",
        run.stdout
    );
}

#[test]
fn info_reads_the_kubeconfig_in_the_user_profile() {
    let node = StandInNode::new("dev-control-plane")
        .provider_id("kind://docker/dev/dev-control-plane")
        .label("node-role.kubernetes.io/control-plane", "");
    let server = ApiServer::builder()
        .hosting_v1(KIND_SCRIPT_V1)
        .node(node)
        .start();
    let (_, profile) = user_profile();
    std::fs::create_dir_all(profile.join(".kube")).unwrap();
    std::fs::write(
        profile.join(".kube/config"),
        kubeconfig_yaml(&server.url(), "kind-dev", "kind-dev"),
    )
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let run = windows(home.path()).arg("info").output();
    run.assert_stderr(str![]);
    run.assert_stdout(Report::kinds_script().text());
    assert_eq!(run.code, 0);
    let json = windows(home.path()).args(["info", "-o", "json"]).output();
    json.assert_stdout(Report::kinds_script().json());
    json.assert_clean_success();
}
