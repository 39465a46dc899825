//! The real kubectl against the stand-in API server: proof the stand-in answers as a real one does,
//! and `kubectl registry` run through kubectl's plugin mechanism.

use snapbox::str;
use std::path::{Path, PathBuf};

use crate::support::apiserver::{ApiServer, StandInNode};
use crate::support::info_report::{KIND_SCRIPT_V1, Report};
use crate::support::run::{Outcome, Run};
use tempfile::TempDir;

/// `kubectl get` of the hosting ConfigMap.
const GET_HOSTING: [&str; 5] = [
    "get",
    "configmap",
    "-n",
    "kube-public",
    "local-registry-hosting",
];

/// The real kubectl with a private HOME (its discovery cache lands there) and no proxies.
fn kubectl(home: &Path) -> Run {
    Run::program("kubectl", home)
}

/// The folder of the built `kubectl-registry`, first on PATH as a user who installed the plugin has it.
fn plugin_dir() -> PathBuf {
    let plugin = PathBuf::from(env!("CARGO_BIN_EXE_kubectl-registry"));
    plugin.parent().unwrap().to_path_buf()
}

fn success(run: &Outcome) -> serde_json::Value {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    run.json()
}

#[test]
fn real_kubectl_reads_the_hosting_configmap_from_the_stand_in() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let home = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(home.path(), "kind-dev", "kind-dev");
    let output = kubectl(home.path())
        .kubeconfig_flag(&kubeconfig)
        .args(GET_HOSTING)
        .args(["-o", "json"])
        .output();
    let configmap = success(&output);
    assert_eq!(configmap["kind"], "ConfigMap");
    assert_eq!(configmap["metadata"]["namespace"], "kube-public");
    assert_eq!(configmap["data"]["localRegistryHosting.v1"], KIND_SCRIPT_V1);
    assert!(server.requests().contains(
        &"GET /api/v1/namespaces/kube-public/configmaps/local-registry-hosting".to_string()
    ));
}

#[test]
fn real_kubectl_reads_nodes_and_the_404_and_403_statuses() {
    let server = ApiServer::builder()
        .node(
            StandInNode::new("kind-control-plane")
                .provider_id("kind://docker/dev/kind-control-plane")
                .annotation("kind.x-k8s.io/registry", "localhost:5002"),
        )
        .forbid("services")
        .start();
    let home = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(home.path(), "kind-dev", "kind-dev");
    let nodes = kubectl(home.path())
        .kubeconfig_flag(&kubeconfig)
        .args(["get", "nodes", "-o", "json"])
        .output();
    let nodes = success(&nodes);
    assert_eq!(nodes["items"][0]["metadata"]["name"], "kind-control-plane");
    assert_eq!(
        nodes["items"][0]["spec"]["providerID"],
        "kind://docker/dev/kind-control-plane"
    );

    let missing = kubectl(home.path())
        .kubeconfig_flag(&kubeconfig)
        .args(GET_HOSTING)
        .output();
    missing.assert_stderr(str![[r#"
Error from server (NotFound): configmaps "local-registry-hosting" not found

"#]]);
    assert_eq!(missing.code, 1);

    let forbidden = kubectl(home.path())
        .kubeconfig_flag(&kubeconfig)
        .args(["get", "service", "-n", "container-registry", "registry"])
        .output();
    forbidden.assert_stderr(str![[r#"
Error from server (Forbidden): services "registry" is forbidden: User "system:serviceaccount:default:dev" cannot get resource "services" in API group "" in the namespace "container-registry"

"#]]);
}

#[test]
fn kubectl_runs_the_plugin_which_finds_kinds_registry() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let home = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(home.path(), "kind-dev", "kind-dev");
    let output = kubectl(home.path())
        .standins(&plugin_dir())
        .env("KUBECONFIG", &kubeconfig)
        .args(["registry", "info", "-o", "json"])
        .output();
    output.assert_stdout(Report::kinds_script().json());
    output.assert_stderr(str![]);
    assert_eq!(output.code, 0);
}

#[test]
fn kubectl_passes_the_plugins_own_flags_through() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let home = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(home.path(), "kind-dev", "kind-dev");
    let output = kubectl(home.path())
        .standins(&plugin_dir())
        .args(["registry", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["--context", "kind-prod", "info"])
        .output();
    output.assert_stderr(str![[r#"
error: context "kind-prod" is not in kubeconfig [ROOT]/kubeconfig
hint: contexts available: kind-dev; choose one with --context NAME

"#]]);
    assert_eq!(output.code, 3, "kubectl hands back the plugin's exit code");
}
