//! The real kubectl against the stand-in API server: proof the stand-in answers as a real one does,
//! and `kubectl registry` run through kubectl's plugin mechanism.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::apiserver::{ApiServer, StandInNode, redact_ports};
use tempfile::TempDir;

const KIND_SCRIPT_V1: &str =
    "host: \"localhost:5001\"\nhelp: \"https://kind.sigs.k8s.io/docs/user/local-registry/\"\n";

/// The real kubectl with a private HOME (its discovery cache lands there) and no proxies.
fn kubectl(home: &Path) -> Command {
    let mut cmd = Command::new("kubectl");
    crate::support::env::clean_env(&mut cmd, home);
    cmd
}

/// PATH with the built `kubectl-registry` first, as a user who installed the plugin has it.
fn path_with_plugin() -> OsString {
    let plugin = PathBuf::from(env!("CARGO_BIN_EXE_kubectl-registry"));
    let plugin_dir = plugin.parent().unwrap().to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(plugin_dir).chain(std::env::split_paths(&rest))).unwrap()
}

fn text(bytes: &[u8]) -> String {
    redact_ports(std::str::from_utf8(bytes).unwrap())
}

fn success(output: &Output) -> serde_json::Value {
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn real_kubectl_reads_the_hosting_configmap_from_the_stand_in() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let home = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(home.path(), "kind-dev", "kind-dev");
    let output = kubectl(home.path())
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "get",
            "configmap",
            "-n",
            "kube-public",
            "local-registry-hosting",
            "-o",
            "json",
        ])
        .output()
        .unwrap();
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
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["get", "nodes", "-o", "json"])
        .output()
        .unwrap();
    let nodes = success(&nodes);
    assert_eq!(nodes["items"][0]["metadata"]["name"], "kind-control-plane");
    assert_eq!(
        nodes["items"][0]["spec"]["providerID"],
        "kind://docker/dev/kind-control-plane"
    );

    let missing = kubectl(home.path())
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "get",
            "configmap",
            "-n",
            "kube-public",
            "local-registry-hosting",
        ])
        .output()
        .unwrap();
    assert_eq!(
        text(&missing.stderr),
        "Error from server (NotFound): configmaps \"local-registry-hosting\" not found\n"
    );
    assert_eq!(missing.status.code(), Some(1));

    let forbidden = kubectl(home.path())
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["get", "service", "-n", "container-registry", "registry"])
        .output()
        .unwrap();
    assert_eq!(
        text(&forbidden.stderr),
        "Error from server (Forbidden): services \"registry\" is forbidden: User \"system:serviceaccount:default:dev\" cannot get resource \"services\" in API group \"\" in the namespace \"container-registry\"\n"
    );
}

#[test]
fn kubectl_runs_the_plugin_which_finds_kinds_registry() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let home = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(home.path(), "kind-dev", "kind-dev");
    let output = kubectl(home.path())
        .env("PATH", path_with_plugin())
        .env("KUBECONFIG", &kubeconfig)
        .args(["registry", "info", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(
        text(&output.stdout),
        r#"{
  "context": "kind-dev",
  "cluster": "kind-dev",
  "server": "http://127.0.0.1:PORT",
  "product": {
    "kind": "kind",
    "clusterName": "dev"
  },
  "registry": {
    "host": "localhost:5001",
    "hostFromContainerRuntime": "localhost:5001",
    "hostFromClusterNetwork": null,
    "help": "https://kind.sigs.k8s.io/docs/user/local-registry/",
    "source": "configmap"
  },
  "registryGuide": "https://kind.sigs.k8s.io/docs/user/local-registry/",
  "push": {
    "method": "registry",
    "network": "host",
    "networkReason": "kubeconfig",
    "host": "localhost:5001",
    "description": "push to localhost:5001 and print refs on localhost:5001"
  }
}
"#
    );
    assert_eq!(text(&output.stderr), "");
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn kubectl_passes_the_plugins_own_flags_through() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let home = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(home.path(), "kind-dev", "kind-dev");
    let output = kubectl(home.path())
        .env("PATH", path_with_plugin())
        .args(["registry", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["--context", "kind-prod", "info"])
        .output()
        .unwrap();
    assert_eq!(
        text(&output.stderr),
        format!(
            "error: context \"kind-prod\" is not in kubeconfig {}\nhint: contexts available: kind-dev; choose one with --context NAME\n",
            kubeconfig.display()
        )
    );
    assert_eq!(
        output.status.code(),
        Some(3),
        "kubectl hands back the plugin's exit code"
    );
}
