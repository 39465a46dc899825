//! `kubectl registry doctor` end to end: the built binary against the stand-in API server and the
//! real registry, on a working set-up, a registry that is down, a forbidden ConfigMap, and a
//! cluster with nothing advertised and no loader on PATH. Whole outputs pinned.

use snapbox::str;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::apiserver::{ApiServer, ApiServerBuilder, StandInNode, unused_port};
use crate::support::registry::TestRegistry;
use crate::support::run::{Outcome, Run, redact};
use tempfile::TempDir;

const KIND_HELP: &str = "https://kind.sigs.k8s.io/docs/user/local-registry/";

/// `kubectl registry doctor [args]` against `server` (context `kind-dev`), with `path` as PATH.
fn doctor(server: &ApiServer, path: &Path, args: &[&str]) -> Outcome {
    doctor_in(server, "kind-dev", path, args)
}

fn doctor_in(server: &ApiServer, context: &str, path: &Path, args: &[&str]) -> Outcome {
    let dir = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path(), context, context);
    Run::plugin(dir.path())
        .path(path)
        .kubeconfig_flag(&kubeconfig)
        .arg("doctor")
        .args(args)
        .output()
}

/// `kubectl registry doctor [args]` against `server` (context `kind-dev`), with an empty folder
/// as PATH: no loader, no tool of the machine's.
fn doctor_bare(server: &ApiServer, args: &[&str]) -> Outcome {
    let path = bin_dir(&[]);
    doctor(server, path.path(), args)
}

/// A kind cluster (its node `dev-control-plane`) whose ConfigMap holds `hosting`.
fn kind_advertising(hosting: &str) -> ApiServerBuilder {
    ApiServer::builder().hosting_v1(hosting).node(kind_node())
}

/// What kind's local-registry script advertises for a registry at `host`: the nodes pull it as
/// `kind-registry:5000`.
fn kinds_script(host: &str) -> String {
    format!(
        "host: \"{host}\"\nhostFromContainerRuntime: \"kind-registry:5000\"\nhelp: \"{KIND_HELP}\"\n"
    )
}

fn kind_node() -> StandInNode {
    StandInNode::new("dev-control-plane").provider_id("kind://docker/dev/dev-control-plane")
}

/// A directory for PATH holding only the executables given, as `name` -> shell script body.
fn bin_dir(programs: &[(&str, &str)]) -> TempDir {
    let dir = TempDir::new().unwrap();
    for (name, body) in programs {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

#[test]
fn a_working_set_up_passes_every_check_and_leaves_no_probe_tag() {
    let registry = TestRegistry::start();
    let server = kind_advertising(&kinds_script(&registry.host())).start();
    let run = doctor_bare(&server, &[]);
    run.assert_stdout(
        str![[r#"
✓ kubeconfig: [ROOT]/kubeconfig, context kind-dev
✓ api-server: http://127.0.0.1:[PORT] answered in [ELAPSED] ms (Kubernetes v1.32.0)
✓ discovery: ConfigMap kube-public/local-registry-hosting: host 127.0.0.1:[PORT], hostFromContainerRuntime kind-registry:5000, hostFromClusterNetwork (not advertised), help https://kind.sigs.k8s.io/docs/user/local-registry/
✓ registry: 127.0.0.1:[PORT] answers GET /v2/ over http
✓ round-trip: pushed the probe image (704 bytes) to 127.0.0.1:[PORT]/kubectl-registry-probe:doctor, read it back by digest sha256:[DIGEST]…, then deleted
– nodes: pods will pull from kind-registry:5000, not 127.0.0.1:[PORT]: each node's containerd must map kind-registry:5000 to the registry (kind: /etc/containerd/certs.d/kind-registry:5000/hosts.toml); not checked from a node
    hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
    hint: `kubectl registry doctor --pod` pulls the probe image from a node
– node-load: not needed: push uses the registry

"#]]
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    let tags = registry.get("/v2/kubectl-registry-probe/tags/list");
    let listed: serde_json::Value = serde_json::from_slice(&tags.body).unwrap_or_default();
    assert!(
        tags.status == 404 || listed["tags"].as_array().is_none_or(Vec::is_empty),
        "the probe's tag is still there: {listed}"
    );
}

#[test]
fn a_registry_that_is_down_fails_naming_the_host_and_the_help_link() {
    let host = format!("127.0.0.1:{}", unused_port());
    let server = kind_advertising(&format!("host: \"{host}\"\nhelp: \"{KIND_HELP}\"\n")).start();
    let run = doctor_bare(&server, &[]);
    run.assert_stdout(
        str![[r#"
✓ kubeconfig: [ROOT]/kubeconfig, context kind-dev
✓ api-server: http://127.0.0.1:[PORT] answered in [ELAPSED] ms (Kubernetes v1.32.0)
✓ discovery: ConfigMap kube-public/local-registry-hosting: host 127.0.0.1:[PORT], hostFromContainerRuntime 127.0.0.1:[PORT], hostFromClusterNetwork (not advertised), help https://kind.sigs.k8s.io/docs/user/local-registry/
✗ registry: reaching the registry 127.0.0.1:[PORT]: the registry at 127.0.0.1:[PORT] is down or not reachable from here: Connection refused (os error 111)
    hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
    hint: check that the registry runs and that 127.0.0.1:[PORT] is reachable from this machine
– round-trip: skipped: the registry does not answer
– nodes: pods will pull from 127.0.0.1:[PORT], the host pushed to; not checked from a node
    hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
    hint: `kubectl registry doctor --pod` pulls the probe image from a node
– node-load: not needed: push uses the registry

"#]]
    );
    run.assert_stderr(str![[r#"
error: push would not work: 1 check failed (registry)

"#]]);
    assert_eq!(run.code, 5);
}

#[test]
fn a_forbidden_configmap_says_so_and_goes_on_to_the_node_loader() {
    let server = ApiServer::builder()
        .forbid("configmaps")
        .node(kind_node())
        .start();
    let path = bin_dir(&[("kind", "echo 'kind v0.27.0 go1.23.6 linux/amd64'")]);
    let run = doctor(&server, path.path(), &[]);
    run.assert_stdout(str![[r#"
✓ kubeconfig: [ROOT]/kubeconfig, context kind-dev
✓ api-server: http://127.0.0.1:[PORT] answered in [ELAPSED] ms (Kubernetes v1.32.0)
– discovery: nothing advertised: reading ConfigMap kube-public/local-registry-hosting is forbidden for these credentials, so it counts as absent, and neither OpenShift's image config, a node annotation nor a microk8s registry Service names one
    hint: if the cluster has a registry, push needs get on configmaps in kube-public: `kubectl auth can-i get configmaps -n kube-public` checks it
– registry: no registry is advertised, so there is none to reach
– round-trip: no registry is advertised, so there is none to push the probe image to
– nodes: push loads images into the nodes instead of a registry
✓ node-load: kind cluster "dev": `kind` is on PATH ([ROOT]/kind, version "kind v0.27.0 go1.23.6 linux/amd64")

"#]]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
}

#[test]
fn nothing_advertised_and_no_loader_on_path_fails_with_where_to_get_one() {
    let server = ApiServer::builder().node(kind_node()).start();
    let run = doctor_bare(&server, &[]);
    run.assert_stdout(
        str![[r#"
✓ kubeconfig: [ROOT]/kubeconfig, context kind-dev
✓ api-server: http://127.0.0.1:[PORT] answered in [ELAPSED] ms (Kubernetes v1.32.0)
– discovery: nothing advertised: no ConfigMap kube-public/local-registry-hosting, and neither OpenShift's image config, a node annotation nor a microk8s registry Service names one
– registry: no registry is advertised, so there is none to reach
– round-trip: no registry is advertised, so there is none to push the probe image to
– nodes: push loads images into the nodes instead of a registry
✗ node-load: kind cluster "dev" needs `kind` to load images into its nodes, and it is not on PATH
    hint: install kind: https://kind.sigs.k8s.io/docs/user/quick-start/#installation
    hint: or give the cluster a registry: https://kind.sigs.k8s.io/docs/user/local-registry/

"#]]
    );
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            6,
            "error: push would not work: 1 check failed (node-load)\n"
        )
    );
}

#[test]
fn an_unknown_cluster_with_nothing_advertised_names_every_way_out_as_json() {
    let server = ApiServer::builder()
        .node(StandInNode::new("node-1"))
        .start();
    let path = bin_dir(&[]);
    let run = doctor_in(&server, "lab", path.path(), &["-o", "json"]);
    run.assert_stdout(str![[r#"
[
  {
    "check": "kubeconfig",
    "ok": true,
    "detail": "[ROOT]/kubeconfig, context lab",
    "hint": null
  },
  {
    "check": "api-server",
    "ok": true,
    "detail": "http://127.0.0.1:[PORT] answered in [ELAPSED] ms (Kubernetes v1.32.0)",
    "hint": null
  },
  {
    "check": "discovery",
    "ok": null,
    "detail": "nothing advertised: no ConfigMap kube-public/local-registry-hosting, and neither OpenShift's image config, a node annotation nor a microk8s registry Service names one",
    "hint": null
  },
  {
    "check": "registry",
    "ok": null,
    "detail": "no registry is advertised, so there is none to reach",
    "hint": null
  },
  {
    "check": "round-trip",
    "ok": null,
    "detail": "no registry is advertised, so there is none to push the probe image to",
    "hint": null
  },
  {
    "check": "nodes",
    "ok": null,
    "detail": "push loads images into the nodes instead of a registry",
    "hint": null
  },
  {
    "check": "node-load",
    "ok": false,
    "detail": "no way to get the image into cluster \"lab\": it advertises no local registry (no ConfigMap kube-public/local-registry-hosting) and is no product whose nodes we know how to load into",
    "hint": "give the cluster a registry and advertise it in kube-public/local-registry-hosting (KEP-1755): https://github.com/kubernetes/enhancements/tree/master/keps/sig-cluster-lifecycle/generic/1755-communicating-a-local-registry; or push to a registry its nodes can pull from: --registry HOST[:PORT]; or load the image your own way: --load-command 'PROGRAM ARGS... {archive}'"
  }
]

"#]]);
    run.assert_stderr(str![[r#"
error: push would not work: 1 check failed (node-load)

"#]]);
    let checks: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let names: Vec<&str> = checks
        .as_array()
        .unwrap()
        .iter()
        .map(|check| check["check"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "kubeconfig",
            "api-server",
            "discovery",
            "registry",
            "round-trip",
            "nodes",
            "node-load"
        ]
    );
    assert_eq!(checks[0]["ok"], true);
    assert_eq!(checks[2]["ok"], serde_json::Value::Null);
    assert_eq!(checks[2]["hint"], serde_json::Value::Null);
    assert_eq!(
        checks[6],
        serde_json::json!({
            "check": "node-load",
            "ok": false,
            "detail": "no way to get the image into cluster \"lab\": it advertises no local registry (no ConfigMap kube-public/local-registry-hosting) and is no product whose nodes we know how to load into",
            "hint": "give the cluster a registry and advertise it in kube-public/local-registry-hosting (KEP-1755): https://github.com/kubernetes/enhancements/tree/master/keps/sig-cluster-lifecycle/generic/1755-communicating-a-local-registry; or push to a registry its nodes can pull from: --registry HOST[:PORT]; or load the image your own way: --load-command 'PROGRAM ARGS... {archive}'",
        })
    );
    assert_eq!(run.code, 6);
}

#[test]
fn an_api_server_that_is_down_fails_and_the_checks_after_it_say_why_they_did_not_run() {
    let dir = TempDir::new().unwrap();
    let kubeconfig = crate::support::apiserver::write_kubeconfig_of_a_down_cluster(dir.path());
    let run = Run::plugin(dir.path())
        .kubeconfig_flag(&kubeconfig)
        .arg("doctor")
        .output();
    run.assert_stdout(str![[r#"
✓ kubeconfig: [ROOT]/kubeconfig, context kind-dev
✗ api-server: asking the API server its version: cannot reach the API server of context "kind-dev" (http://127.0.0.1:[PORT]): client error (Connect): tcp connect error: Connection refused (os error 111)
    hint: is the cluster running? `kubectl --context kind-dev get nodes` shows whether it answers
– discovery: skipped: the cluster could not be read
– registry: skipped: what the cluster advertises is not known
– round-trip: skipped: what the cluster advertises is not known
– nodes: skipped: what the cluster advertises is not known
– node-load: skipped: what the cluster advertises is not known

"#]]);
    assert_eq!(run.code, 3);
}

#[test]
fn a_malformed_configmap_fails_discovery_with_its_fix() {
    let server = kind_advertising("host: \"localhost:5001/v2\"\n").start();
    let run = doctor_bare(&server, &["-o", "json"]);
    let checks: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        checks[2],
        serde_json::json!({
            "check": "discovery",
            "ok": false,
            "detail": "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field host is not a registry host: \"localhost:5001/v2\" is not a registry host[:port]: it has a path (/v2)",
            "hint": "fix it with `kubectl -n kube-public edit configmap local-registry-hosting`, or skip discovery with --registry HOST[:PORT]",
        })
    );
    assert_eq!(
        checks[6]["detail"],
        "skipped: what the cluster advertises is not known"
    );
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            3,
            "error: push would not work: 1 check failed (discovery)\n"
        )
    );
}

/// `dir/HOST/hosts.toml` sending pulls of `runtime_host` to `target` over plain HTTP, as kind's
/// nodes are set up for its local registry.
fn hosts_dir(runtime_host: &str, target: &str) -> TempDir {
    let dir = TempDir::new().unwrap();
    std::fs::create_dir_all(dir.path().join(runtime_host)).unwrap();
    std::fs::write(
        dir.path().join(runtime_host).join("hosts.toml"),
        format!(
            "server = \"http://{runtime_host}\"\n[host.\"http://{target}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
        ),
    )
    .unwrap();
    dir
}

/// A cluster whose nodes name the registry `kind-registry:5000`, their real containerd mapping
/// that name to `mapped_to`; the kubelet pulls with it.
fn pod_set_up(
    registry: &TestRegistry,
    node: &std::sync::Arc<crate::support::containerd::Containerd>,
    mapped_to: &str,
) -> (ApiServer, TempDir) {
    let hosts = hosts_dir("kind-registry:5000", mapped_to);
    let hosts_path = hosts.path().to_path_buf();
    let node = std::sync::Arc::clone(node);
    let server = kind_advertising(&kinds_script(&registry.host()))
        .kubelet(move |image| node.pull(image, &hosts_path))
        .start();
    (server, hosts)
}

#[test]
fn a_pod_pulls_the_probe_through_the_nodes_runtime_mapping_and_is_removed() {
    let registry = TestRegistry::start();
    let node = std::sync::Arc::new(crate::support::containerd::Containerd::start());
    let (server, _hosts) = pod_set_up(&registry, &node, &registry.host());
    let run = doctor_bare(&server, &["--pod"]);
    run.assert_stdout(str![[r#"
✓ kubeconfig: [ROOT]/kubeconfig, context kind-dev
✓ api-server: http://127.0.0.1:[PORT] answered in [ELAPSED] ms (Kubernetes v1.32.0)
✓ discovery: ConfigMap kube-public/local-registry-hosting: host 127.0.0.1:[PORT], hostFromContainerRuntime kind-registry:5000, hostFromClusterNetwork (not advertised), help https://kind.sigs.k8s.io/docs/user/local-registry/
✓ registry: 127.0.0.1:[PORT] answers GET /v2/ over http
✓ round-trip: pushed the probe image (704 bytes) to 127.0.0.1:[PORT]/kubectl-registry-probe:doctor, read it back by digest sha256:[DIGEST]…, then deleted
– nodes: pods will pull from kind-registry:5000, not 127.0.0.1:[PORT]: each node's containerd must map kind-registry:5000 to the registry (kind: /etc/containerd/certs.d/kind-registry:5000/hosts.toml); the pod below pulls it from a node
    hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
– node-load: not needed: push uses the registry
✓ pod: pod default/kubectl-registry-doctor-00002 pulled kind-registry:5000/kubectl-registry-probe@sha256:[DIGEST] on its node, and was deleted

"#]]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert!(
        node.images()
            .iter()
            .any(|image| image.starts_with("kind-registry:5000/kubectl-registry-probe@sha256:")),
        "the node's containerd holds the probe: {:?}",
        node.images()
    );
    let pods: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.contains("/pods"))
        .collect();
    assert_eq!(
        pods.first().map(String::as_str),
        Some("POST /api/v1/namespaces/default/pods")
    );
    assert_eq!(
        pods.last().map(String::as_str),
        Some("DELETE /api/v1/namespaces/default/pods/kubectl-registry-doctor-00002")
    );
    // Followed as a rollout's pods are (listed, then watched while pending), not read in a loop.
    let targets = server.targets();
    assert!(
        targets
            .iter()
            .any(|t| t.starts_with("GET /api/v1/namespaces/default/pods?")
                && t.contains("fieldSelector=metadata.name%3Dkubectl-registry-doctor-00002")),
        "{targets:?}"
    );
    assert!(
        !targets
            .iter()
            .any(|t| t.starts_with("GET /api/v1/namespaces/default/pods/")),
        "{targets:?}"
    );
}

#[test]
fn a_pod_that_cannot_pull_fails_with_the_kubelets_events() {
    let registry = TestRegistry::start();
    let node = std::sync::Arc::new(crate::support::containerd::Containerd::start());
    let wrong = format!("127.0.0.1:{}", unused_port());
    let (server, _hosts) = pod_set_up(&registry, &node, &wrong);
    let run = doctor_bare(&server, &["--pod", "-o", "json"]);
    let checks: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let pod = &checks[7];
    assert_eq!(pod["check"], "pod");
    assert_eq!(pod["ok"], false);
    let detail = redact(pod["detail"].as_str().unwrap());
    assert!(
        detail.starts_with("pod default/kubectl-registry-doctor-00002 could not pull kind-registry:5000/kubectl-registry-probe@sha256:"),
        "{detail}"
    );
    for said in [
        ": ErrImagePull: ",
        "127.0.0.1:[PORT]",
        "connect: connection refused",
        "; the kubelet said: Scheduled: Successfully assigned default/kubectl-registry-doctor-00002 to stand-in-node; Pulling: Pulling image ",
        "; Failed: Error: ErrImagePull",
    ] {
        assert!(detail.contains(said), "{said:?} is not in {detail}");
    }
    assert_eq!(
        pod["hint"],
        "each node's container runtime must reach the registry as kind-registry:5000 (kind: /etc/containerd/certs.d/kind-registry:5000/hosts.toml); for a pod of your own that cannot pull, `kubectl registry why pod/NAME` names the cause and the fix; this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/"
    );
    assert_eq!(checks[4]["ok"], true, "the round trip from here works");
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (5, "error: push would not work: 1 check failed (pod)\n")
    );
    assert!(
        server.requests().contains(
            &"DELETE /api/v1/namespaces/default/pods/kubectl-registry-doctor-00002".to_string()
        ),
        "the pod is removed after a failure too"
    );
}

#[test]
fn a_registry_that_refuses_deletes_keeps_the_probe_and_the_line_says_so() {
    let registry = TestRegistry::start_with(crate::support::registry::RegistryConfig {
        deletes_disabled: true,
        ..Default::default()
    });
    let server = kind_advertising(&format!("host: \"{}\"\n", registry.host())).start();
    let run = doctor_bare(&server, &[]);
    run.assert_stdout(str![[r#"
✓ kubeconfig: [ROOT]/kubeconfig, context kind-dev
✓ api-server: http://127.0.0.1:[PORT] answered in [ELAPSED] ms (Kubernetes v1.32.0)
✓ discovery: ConfigMap kube-public/local-registry-hosting: host 127.0.0.1:[PORT], hostFromContainerRuntime 127.0.0.1:[PORT], hostFromClusterNetwork (not advertised), help (none)
✓ registry: 127.0.0.1:[PORT] answers GET /v2/ over http
✓ round-trip: pushed the probe image (704 bytes) to 127.0.0.1:[PORT]/kubectl-registry-probe:doctor, read it back by digest sha256:[DIGEST]…, left in place: the registry does not allow deletes, so 127.0.0.1:[PORT]/kubectl-registry-probe:doctor stays
– nodes: pods will pull from 127.0.0.1:[PORT], the host pushed to; not checked from a node
    hint: `kubectl registry doctor --pod` pulls the probe image from a node
– node-load: not needed: push uses the registry

"#]]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert_eq!(
        registry.get("/v2/kubectl-registry-probe/tags/list").status,
        200
    );
}
