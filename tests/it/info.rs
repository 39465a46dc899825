//! `kubectl registry info` end to end: the built binary against the stand-in API server, for each
//! discovery source, their precedence, and every way reading the cluster can fail.

use snapbox::{IntoData, str};
use std::path::Path;

use crate::support::apiserver::{ApiServer, StandInNode, kubeconfig_yaml, unused_port};
use crate::support::info_report::{KIND_HELP, KIND_SCRIPT_V1, Product, Registry, Report};
use crate::support::run::{Outcome, Run};
use tempfile::TempDir;

const CONFIGMAP_GET: &str = "GET /api/v1/namespaces/kube-public/configmaps/local-registry-hosting";
/// minikube's registry addon, the source after the ConfigMap.
const MINIKUBE_SERVICE_GET: &str = "GET /api/v1/namespaces/kube-system/services/registry";
const IMAGE_CONFIG_GET: &str = "GET /apis/config.openshift.io/v1/images/cluster";
const NODES_LIST: &str = "GET /api/v1/nodes";
const SERVICE_GET: &str = "GET /api/v1/namespaces/container-registry/services/registry";
/// What discovery asks when no source before the last answers: each source once, in order, the
/// nodes listed once for the annotations and the product alike.
const EVERY_SOURCE: [&str; 5] = [
    CONFIGMAP_GET,
    MINIKUBE_SERVICE_GET,
    IMAGE_CONFIG_GET,
    NODES_LIST,
    SERVICE_GET,
];

/// `kubectl registry info [args]` against `server`, through a kubeconfig with context/cluster `name`.
fn info(server: &ApiServer, name: &str, args: &[&str]) -> Outcome {
    let dir = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path(), name, name);
    Run::plugin(dir.path())
        .kubeconfig_flag(&kubeconfig)
        .arg("info")
        .args(args)
        .output()
}

fn json(outcome: &Outcome) -> serde_json::Value {
    outcome.json()
}

/// Asserts `run` failed with exit `code`, printing nothing on stdout (its stderr is the test's).
#[track_caller]
fn assert_failed(run: &Outcome, code: i32) {
    run.assert_stdout(str![]);
    assert_eq!(run.code, code, "stderr: {}", run.stderr);
}

/// `kubectl registry --kubeconfig KUBECONFIG info`, HOME `home`.
fn info_through(home: &Path, kubeconfig: &Path) -> Outcome {
    Run::plugin(home)
        .kubeconfig_flag(kubeconfig)
        .arg("info")
        .output()
}

/// Asserts `run` printed `expected` (a whole report) with exit 0, warning `warning` on stderr.
#[track_caller]
fn assert_warned(run: &Outcome, expected: String, warning: impl IntoData) {
    run.assert_stdout(expected);
    run.assert_stderr(warning);
    assert_eq!(run.code, 0);
}

/// Asserts `run` printed `expected` (a whole report) and nothing on stderr, with exit 0.
#[track_caller]
fn assert_report(run: &Outcome, expected: String) {
    run.assert_stdout(expected);
    run.assert_clean_success();
}

/// `info` then `info -o json` for context `context` of `server`: each prints `expected` cleanly,
/// and the first asked every source once (`why` says what the order shows).
#[track_caller]
fn assert_both_forms(server: &ApiServer, context: &str, expected: &Report, why: &str) {
    assert_report(&info(server, context, &[]), expected.text());
    assert_eq!(server.requests(), EVERY_SOURCE, "{why}");
    assert_report(&info(server, context, &["-o", "json"]), expected.json());
}

/// The registry kind's local-registry script advertises ([`KIND_SCRIPT_V1`]).
fn kinds_registry() -> Registry {
    Registry::configmap("localhost:5001").help(KIND_HELP)
}

/// kind's cluster `dev` whose ConfigMap the local-registry script wrote.
fn kind_with_its_script() -> ApiServer {
    ApiServer::builder()
        .hosting_v1(KIND_SCRIPT_V1)
        .node(kind_node("dev"))
        .start()
}

#[test]
fn kinds_local_registry_script_is_found_in_the_configmap_as_text() {
    let server = kind_with_its_script();
    let run = info(&server, "kind-dev", &[]);
    run.assert_stderr(str![]);
    run.assert_stdout(Report::kinds_script().text());
    // The report as printed, literally once: `Report` above renders the same text for the
    // other clusters.
    run.assert_stdout(str![[r#"
context:              kind-dev
cluster:              kind-dev
server:               http://127.0.0.1:[PORT]
product:              kind (cluster "dev")
registry host:        localhost:5001
runtime host:         localhost:5001
cluster-network host: (not advertised)
help:                 https://kind.sigs.k8s.io/docs/user/local-registry/
source:               ConfigMap kube-public/local-registry-hosting (KEP-1755)
network:              host (outside the cluster: a kubeconfig context)
push:                 push to localhost:5001 and print refs on localhost:5001

"#]]);
    assert_eq!(run.code, 0);
    assert_eq!(
        server.requests(),
        vec![CONFIGMAP_GET, NODES_LIST],
        "the first hit ends discovery; the nodes are listed for the product"
    );
}

#[test]
fn kinds_local_registry_script_is_found_in_the_configmap_as_json() {
    let server = kind_with_its_script();
    let run = info(&server, "kind-dev", &["-o", "json"]);
    assert_report(&run, Report::kinds_script().json());
    run.assert_stdout(str![[r#"
{
  "context": "kind-dev",
  "cluster": "kind-dev",
  "server": "http://127.0.0.1:[PORT]",
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

"#]]);
}

#[test]
fn every_configmap_field_is_reported_and_json_values_are_read() {
    let server = ApiServer::builder()
        .hosting_v1(r#"{"host": "localhost:5000", "hostFromContainerRuntime": "registry.localhost:5000", "hostFromClusterNetwork": "k3d-registry:5000", "somethingNew": true}"#)
        .start();
    let expected = Report::of("k3d-dev", Product::k3d("dev")).registry(
        Registry::configmap("localhost:5000")
            .runtime("registry.localhost:5000")
            .network("k3d-registry:5000"),
    );
    let run = info(&server, "k3d-dev", &["-o", "json"]);
    run.assert_stdout(expected.json());
    let text = info(&server, "k3d-dev", &[]);
    text.assert_stdout(expected.text());
    assert_eq!((run.code, text.code), (0, 0));
}

#[test]
fn a_scheme_in_the_configmap_host_is_stripped_with_a_warning() {
    let server = ApiServer::builder()
        .hosting_v1("host: http://localhost:5000\n")
        .start();
    let run = info(&server, "kind-dev", &["-o", "json"]);
    let expected = Report::of("kind-dev", Product::kind("dev"))
        .registry(Registry::configmap("localhost:5000"));
    assert_warned(
        &run,
        expected.json(),
        str![[r#"
warning: ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1, field host "http://localhost:5000" has a scheme (http://); using localhost:5000

"#]],
    );
    assert_eq!(json(&run)["registry"]["host"], "localhost:5000");
}

#[test]
fn node_annotations_name_the_registry_when_no_configmap_does() {
    let server = ApiServer::builder()
        .node(
            StandInNode::new("k3d-dev-server-0")
                .provider_id("k3s://k3d-dev-server-0")
                .annotation("tilt.dev/registry", "localhost:5005")
                .annotation("tilt.dev/registry-from-cluster", "registry.local:5000"),
        )
        .microk8s_registry_service(32000)
        .start();
    let run = info(&server, "k3d-dev", &["-o", "json"]);
    let found = Registry::annotation("localhost:5005").runtime("registry.local:5000");
    assert_report(
        &run,
        Report::of("k3d-dev", Product::k3d("dev"))
            .registry(found)
            .json(),
    );
    assert_eq!(
        server.requests(),
        EVERY_SOURCE[..4],
        "found in the annotations: the microk8s Service is not asked"
    );
}

#[test]
fn microk8s_registry_service_is_the_last_resort() {
    let server = ApiServer::builder()
        .node(StandInNode::new("laptop").label("microk8s.io/cluster", "true"))
        .microk8s_registry_service(32000)
        .start();
    let run = info(&server, "microk8s", &[]);
    let expected = Report::of("microk8s", Product::microk8s())
        .registry(Registry::microk8s_service("localhost:32000"));
    assert_report(&run, expected.text());
    assert_eq!(server.requests(), EVERY_SOURCE);
}

/// A kind node (cluster "kind") annotated with the registry `localhost:5002`.
fn annotated_kind_node() -> StandInNode {
    StandInNode::new("kind-control-plane").annotation("kind.x-k8s.io/registry", "localhost:5002")
}

/// `info -o json` on context kind-dev of `server`, whose node is [`annotated_kind_node`]: asserts
/// the report (kind's cluster "kind", as the node's name tells) names `found`; the run.
#[track_caller]
fn found_on_annotated_kind(server: &ApiServer, found: Registry) -> Outcome {
    let run = info(server, "kind-dev", &["-o", "json"]);
    run.assert_stdout(
        Report::of("kind-dev", Product::kind("kind"))
            .registry(found)
            .json(),
    );
    run
}

#[test]
fn the_configmap_beats_annotations_and_the_service() {
    let server = ApiServer::builder()
        .hosting_v1("host: localhost:5001\n")
        .node(annotated_kind_node())
        .microk8s_registry_service(32000)
        .start();
    let run = found_on_annotated_kind(&server, Registry::configmap("localhost:5001"));
    assert_eq!(json(&run)["registry"]["host"], "localhost:5001");
    assert_eq!(json(&run)["registry"]["source"], "configmap");
}

#[test]
fn annotations_beat_the_service() {
    let server = ApiServer::builder()
        .node(annotated_kind_node())
        .microk8s_registry_service(32000)
        .start();
    let run = found_on_annotated_kind(&server, Registry::annotation("localhost:5002"));
    assert_eq!(json(&run)["registry"]["host"], "localhost:5002");
    assert_eq!(json(&run)["registry"]["source"], "annotation");
}

#[test]
fn flags_beat_everything_and_the_cluster_is_not_contacted() {
    let server = ApiServer::builder()
        .hosting_v1(KIND_SCRIPT_V1)
        .microk8s_registry_service(32000)
        .start();
    let dir = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
    let run = Run::plugin(dir.path())
        .env("KUBECONFIG", &kubeconfig)
        .env("KUBECTL_REGISTRY_HOST", "localhost:6000")
        .args([
            "--registry",
            "registry.localhost:5001",
            "--registry-from-runtime",
            "kind-registry:5000",
        ])
        .args(["info", "-o", "json"])
        .output();
    let named = Registry::flag("registry.localhost:5001").runtime("kind-registry:5000");
    assert_report(&run, Report::named(Some("kind-dev"), named).json());
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[test]
fn the_environment_beats_the_configmap_and_the_cluster_is_not_contacted() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let dir = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
    let run = Run::plugin(dir.path())
        .kubeconfig_flag(&kubeconfig)
        .env("KUBECTL_REGISTRY_HOST", "localhost:6000")
        .env("KUBECTL_REGISTRY_RUNTIME_HOST", "registry:6000")
        .arg("info")
        .output();
    let named = Registry::env("localhost:6000").runtime("registry:6000");
    assert_report(&run, Report::named(Some("kind-dev"), named).text());
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[test]
fn the_registry_flag_needs_no_kubeconfig_at_all() {
    let home = TempDir::new().unwrap();
    let run = Run::plugin(home.path())
        .env("KUBECONFIG", home.path().join("missing"))
        .args(["--registry", "localhost:5001", "info", "-o", "json"])
        .output();
    let expected = Report::named(None, Registry::flag("localhost:5001"));
    assert_report(&run, expected.json());
    let text = Run::plugin(home.path())
        .args(["--registry", "localhost:5001", "info"])
        .output();
    text.assert_stdout(expected.text());
    assert_eq!(
        text.stdout.lines().take(4).collect::<Vec<_>>(),
        vec![
            "context:              (none)",
            "cluster:              (none)",
            "server:               (none)",
            "product:              (not detected: the cluster was not contacted)",
        ]
    );
    assert_eq!(text.code, 0);
}

#[test]
fn a_bad_registry_flag_is_a_usage_error() {
    let home = TempDir::new().unwrap();
    let run = Run::plugin(home.path())
        .args(["--registry", "localhost:5001/team", "info"])
        .output();
    assert_failed(&run, 2);
    run.assert_stderr(str![[r#"
error: --registry "localhost:5001/team" is not a registry host
caused by: "localhost:5001/team" is not a registry host[:port]: it has a path (/team)
hint: give host[:port], for example localhost:5001 or [::1]:5001

"#]]);
}

/// A kind node as kind writes it: `NAME-control-plane`, providerID `kind://docker/NAME/...`.
fn kind_node(cluster: &str) -> StandInNode {
    let node = format!("{cluster}-control-plane");
    StandInNode::new(&node)
        .provider_id(&format!("kind://docker/{cluster}/{node}"))
        .label("node-role.kubernetes.io/control-plane", "")
}

/// A cluster whose one node is `node`, and nothing else.
fn one_node(node: StandInNode) -> ApiServer {
    ApiServer::builder().node(node).start()
}

/// A MicroK8s node.
fn microk8s_node() -> StandInNode {
    StandInNode::new("laptop").label("microk8s.io/cluster", "true")
}

#[test]
fn kind_without_a_registry_loads_with_kind_load_naming_the_cluster() {
    assert_both_forms(
        &one_node(kind_node("dev")),
        "kind-dev",
        &Report::of("kind-dev", Product::kind("dev")),
        "one node list serves discovery and product detection",
    );
}

#[test]
fn node_facts_name_the_product_when_the_context_was_renamed() {
    let server = one_node(kind_node("dev"));
    let run = info(&server, "work", &["-o", "json"]);
    assert_report(&run, Report::of("work", Product::kind("dev")).json());
    assert_eq!(
        json(&run)["product"],
        serde_json::json!({"kind": "kind", "clusterName": "dev"})
    );
    assert_eq!(
        json(&run)["push"]["description"],
        "load the image into the nodes of kind cluster \"dev\": `kind load image-archive <archive> --name dev`"
    );
}

#[test]
fn k3d_without_a_registry_imports_into_the_named_cluster() {
    let server = one_node(
        StandInNode::new("k3d-dev-server-0")
            .provider_id("k3s://k3d-dev-server-0")
            .label("node.kubernetes.io/instance-type", "k3s"),
    );
    let expected = Report::of("k3d-dev", Product::k3d("dev"));
    assert_both_forms(&server, "k3d-dev", &expected, "no registry anywhere");
}

#[test]
fn minikube_without_a_registry_loads_into_the_profile() {
    let server = one_node(StandInNode::new("minikube").label("minikube.k8s.io/name", "minikube"));
    let expected = Report::of("minikube", Product::minikube("minikube"));
    assert_both_forms(&server, "minikube", &expected, "no registry anywhere");
}

#[test]
fn microk8s_without_its_registry_addon_imports_on_every_node() {
    let expected = Report::of("microk8s", Product::microk8s());
    assert_both_forms(
        &one_node(microk8s_node()),
        "microk8s",
        &expected,
        "no addon",
    );
}

#[test]
fn microk8s_with_its_registry_addon_pushes_there_as_json() {
    let server = ApiServer::builder()
        .node(microk8s_node())
        .microk8s_registry_service(32000)
        .start();
    let run = info(&server, "microk8s", &["-o", "json"]);
    let expected = Report::of("microk8s", Product::microk8s())
        .registry(Registry::microk8s_service("localhost:32000"));
    assert_report(&run, expected.json());
    assert_eq!(server.requests(), EVERY_SOURCE);
}

#[test]
fn docker_desktop_without_a_registry_loads_into_the_local_docker_store() {
    let server = one_node(StandInNode::new("docker-desktop"));
    let expected = Report::of("docker-desktop", Product::docker_desktop());
    assert_both_forms(&server, "docker-desktop", &expected, "no registry anywhere");
}

#[test]
fn an_unknown_cluster_without_a_registry_says_push_would_fail_and_the_ways_out() {
    let server = one_node(StandInNode::new("node-1"));
    let expected = Report::of("work", Product::unknown());
    assert_both_forms(&server, "work", &expected, "a result, not a failure");
}

#[test]
fn forbidden_nodes_leave_the_kubeconfig_names_to_tell_the_product() {
    let server = ApiServer::builder()
        .forbid("nodes")
        .node(kind_node("other"))
        .start();
    let run = info(&server, "kind-dev", &["-v"]);
    run.assert_stdout(Report::of("kind-dev", Product::kind("dev")).text());
    assert_eq!(
        run.stdout.lines().nth(3),
        Some("product:              kind (cluster \"dev\")"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.lines().nth(6),
        Some(
            "push:                 load the image into the nodes of kind cluster \"dev\": `kind load image-archive <archive> --name dev`"
        )
    );
    run.assert_stderr(str![[r#"
ConfigMap kube-public/local-registry-hosting not found
no readable Service kube-system/registry of minikube's registry addon
no readable images.config.openshift.io/cluster (not OpenShift)
listing nodes is not allowed here; no node facts
no readable Service container-registry/registry (microk8s registry addon)
no node facts, so the product is told from the kubeconfig's names alone

"#]]);
    assert_eq!(run.code, 0);
    assert_eq!(server.requests(), EVERY_SOURCE);

    let renamed = info(&server, "work", &["-o", "json"]);
    renamed.assert_stdout(Report::of("work", Product::unknown()).json());
    assert_eq!(
        (
            &json(&renamed)["product"],
            &json(&renamed)["push"]["method"]
        ),
        (
            &serde_json::json!({"kind": "unknown", "clusterName": null}),
            &serde_json::json!("none")
        ),
        "without node facts a renamed context says nothing"
    );
    assert_eq!((renamed.code, renamed.stderr.as_str()), (0, ""));
}

#[test]
fn forbidden_reads_mean_none_advertised() {
    let server = ApiServer::builder()
        .forbid("configmaps")
        .forbid("nodes")
        .forbid("services")
        .start();
    let run = info(&server, "kind-dev", &["-o", "json"]);
    assert_report(&run, Report::of("kind-dev", Product::kind("dev")).json());
    assert_eq!(json(&run)["registry"], serde_json::Value::Null);
    assert_eq!(server.requests(), EVERY_SOURCE);
}

#[test]
fn a_forbidden_configmap_falls_through_to_the_annotations() {
    let server = ApiServer::builder()
        .forbid("configmaps")
        .node(annotated_kind_node())
        .start();
    let run = found_on_annotated_kind(&server, Registry::annotation("localhost:5002"));
    assert_eq!(json(&run)["registry"]["source"], "annotation");
    assert_eq!(run.code, 0);
}

#[test]
fn a_v2_key_alone_is_none_understood_with_a_warning() {
    let server = ApiServer::builder()
        .hosting_configmap(&[(
            "localRegistryHosting.v2",
            "registries: [{host: localhost:5001}]\n",
        )])
        .start();
    let run = info(&server, "kind-dev", &["-o", "json"]);
    let expected = Report::of("kind-dev", Product::kind("dev"));
    assert_warned(
        &run,
        expected.json(),
        str![[r#"
warning: ConfigMap kube-public/local-registry-hosting only has localRegistryHosting.v2, a version this kubectl-registry does not understand (it reads localRegistryHosting.v1); treating the registry as not advertised

"#]],
    );
    assert_eq!(json(&run)["registry"], serde_json::Value::Null);
}

#[test]
fn a_v2_key_beside_v1_is_a_debug_note_only() {
    let server = ApiServer::builder()
        .hosting_configmap(&[
            ("localRegistryHosting.v1", "host: localhost:5001\n"),
            ("localRegistryHosting.v2", "registries: []\n"),
        ])
        .start();
    let quiet = info(&server, "kind-dev", &["-o", "json"]);
    assert_report(
        &quiet,
        Report::of("kind-dev", Product::kind("dev"))
            .registry(Registry::configmap("localhost:5001"))
            .json(),
    );
    assert_eq!(json(&quiet)["registry"]["host"], "localhost:5001");
    let verbose = info(&server, "kind-dev", &["-o", "json", "-v"]);
    verbose.assert_stderr(str![[r#"
ignoring localRegistryHosting.v2 of ConfigMap kube-public/local-registry-hosting: newer than this kubectl-registry understands; reading localRegistryHosting.v1
no node facts, so the product is told from the kubeconfig's names alone

"#]]
    );
}

#[test]
fn a_malformed_configmap_host_is_an_error_with_the_help_link() {
    let server = ApiServer::builder()
        .hosting_v1("host: localhost:5001/v2\nhostFromClusterNetwork: kind-registry:5000\nhelp: https://kind.sigs.k8s.io/docs/user/local-registry/\n")
        .start();
    let run = info(&server, "kind-dev", &[]);
    assert_failed(&run, 3);
    run.assert_stderr(str![[r#"
error: ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field host is not a registry host
caused by: "localhost:5001/v2" is not a registry host[:port]: it has a path (/v2)
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/ (or skip discovery with --registry HOST[:PORT])

"#]]);
}

/// What microk8s installs while its registry addon is off, and re-applies on `microk8s
/// disable registry`.
const MICROK8S_HELP_ONLY: &str = "help: \"https://microk8s.io/docs/registry-built-in\"\n";

#[test]
fn microk8s_help_only_configmap_advertises_no_registry_and_shows_how_to_set_one_up() {
    let server = ApiServer::builder()
        .hosting_v1(MICROK8S_HELP_ONLY)
        .node(microk8s_node())
        .start();
    let expected = Report::of("microk8s", Product::microk8s())
        .guide("https://microk8s.io/docs/registry-built-in");
    assert_report(&info(&server, "microk8s", &[]), expected.text());

    let run = info(&server, "microk8s", &["-o", "json"]);
    assert_report(&run, expected.json());
    let report = json(&run);
    assert_eq!(report["registry"], serde_json::Value::Null);
    assert_eq!(
        report["registryGuide"],
        "https://microk8s.io/docs/registry-built-in"
    );
    assert_eq!(report["push"]["method"], "node-load");
}

#[test]
fn an_unknown_cluster_with_a_help_only_configmap_names_that_guide_first_among_the_ways_out() {
    let server = ApiServer::builder()
        .hosting_v1("help: https://registry.example.test/setup\n")
        .node(StandInNode::new("worker-1"))
        .start();
    let run = info(&server, "corp", &[]);
    let tail: Vec<&str> = run
        .stdout
        .lines()
        .skip_while(|line| !line.is_empty())
        .collect();
    assert_eq!(
        tail,
        [
            "",
            "No local registry advertised: ConfigMap kube-public/local-registry-hosting has a help link but no",
            "host, and neither OpenShift's image config, a node annotation nor a microk8s registry",
            "Service names one.",
            "Ways out:",
            "  - set one up with this cluster's guide:",
            "    https://registry.example.test/setup",
            "  - or name one: --registry HOST[:PORT] (or KUBECTL_REGISTRY_HOST)",
            "  - or load the image your own way: push --load-command 'PROGRAM ARGS... {archive}'",
        ]
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
}

#[test]
fn invalid_yaml_in_the_configmap_is_an_error_naming_the_key() {
    let server = ApiServer::builder()
        .hosting_v1("host: [localhost:5001\n")
        .start();
    let run = info(&server, "kind-dev", &["-o", "json"]);
    run.assert_stdout(str![]);
    let lines: Vec<&str> = run.stderr.lines().collect();
    run.assert_stderr(str![[r#"
error: ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: the value is not valid YAML
caused by: unclosed bracket '[' at line 1, column 7
hint: fix it with `kubectl -n kube-public edit configmap local-registry-hosting`, or skip discovery with --registry HOST[:PORT]

"#]]);
    assert_eq!(
        lines[0],
        "error: ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: the value is not valid YAML"
    );
    assert!(lines[1].starts_with("caused by: "), "{}", run.stderr);
    assert_eq!(
        lines[2..],
        [
            "hint: fix it with `kubectl -n kube-public edit configmap local-registry-hosting`, or skip discovery with --registry HOST[:PORT]"
        ]
    );
    assert_eq!(run.code, 3);
}

#[test]
fn a_hostile_host_in_the_configmap_is_an_error_naming_the_field() {
    let server = ApiServer::builder()
        .hosting_v1("host: localhost:5001\nhostFromContainerRuntime: \"admin:pw@registry:5000\"\n")
        .start();
    let run = info(&server, "kind-dev", &[]);
    assert_failed(&run, 3);
    run.assert_stderr(str![[r#"
error: ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field hostFromContainerRuntime is not a registry host
caused by: "admin:xxxxx@registry:5000" is not a registry host[:port]: it has user info (…@); registry credentials belong in ~/.docker/config.json
hint: fix it with `kubectl -n kube-public edit configmap local-registry-hosting`, or skip discovery with --registry HOST[:PORT]

"#]]);
}

#[test]
fn an_unknown_context_lists_the_contexts_available() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let dir = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
    let run = Run::plugin(dir.path())
        .kubeconfig_flag(&kubeconfig)
        .args(["--context", "kind-prod", "info"])
        .output();
    assert_failed(&run, 3);
    run.assert_stderr(str![[r#"
error: context "kind-prod" is not in kubeconfig [ROOT]/kubeconfig
hint: contexts available: kind-dev; choose one with --context NAME

"#]]);
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[test]
fn the_context_flag_picks_among_merged_kubeconfig_files() {
    let kind = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let microk8s = ApiServer::builder()
        .microk8s_registry_service(32000)
        .start();
    let dir = TempDir::new().unwrap();
    let first = dir.path().join("kind");
    let second = dir.path().join("microk8s");
    std::fs::write(&first, kubeconfig_yaml(&kind.url(), "kind-dev", "kind-dev")).unwrap();
    std::fs::write(
        &second,
        kubeconfig_yaml(&microk8s.url(), "microk8s", "microk8s-cluster"),
    )
    .unwrap();
    let joined = std::env::join_paths([&first, &second]).unwrap();
    let run = Run::plugin(dir.path())
        .env("KUBECONFIG", &joined)
        .args(["--context", "microk8s", "info", "-o", "json"])
        .output();
    run.assert_stdout(
        Report::of("microk8s", Product::microk8s())
            .cluster("microk8s-cluster")
            .registry(Registry::microk8s_service("localhost:32000"))
            .json(),
    );
    assert_eq!(json(&run)["context"], "microk8s");
    assert_eq!(json(&run)["cluster"], "microk8s-cluster");
    assert_eq!(json(&run)["registry"]["host"], "localhost:32000");
    assert_eq!(run.code, 0);
    assert_eq!(kind.requests(), Vec::<String>::new());
}

#[test]
fn an_unreadable_kubeconfig_is_a_cluster_error() {
    let dir = TempDir::new().unwrap();
    let kubeconfig = dir.path().join("config");
    std::fs::write(&kubeconfig, "apiVersion: v1\nclusters: [\n").unwrap();
    let run = info_through(dir.path(), &kubeconfig);
    assert_failed(&run, 3);
    run.assert_stderr(str![[r#"
error: reading kubeconfig [ROOT]/config
caused by: unclosed bracket '[' at line 2, column 11
hint: fix or replace that file, or skip discovery with --registry HOST[:PORT]

"#]]);
}

#[test]
fn a_missing_kubeconfig_flag_file_is_a_cluster_error() {
    let dir = TempDir::new().unwrap();
    let kubeconfig = dir.path().join("nope");
    let run = info_through(dir.path(), &kubeconfig);
    assert_failed(&run, 3);
    run.assert_stderr(str![[r#"
error: reading kubeconfig [ROOT]/nope
caused by: No such file or directory (os error 2)
hint: check the path, or unset --kubeconfig to use KUBECONFIG or ~/.kube/config; or skip discovery with --registry HOST[:PORT]

"#]]);
}

#[test]
fn no_kubeconfig_at_all_says_so() {
    let home = TempDir::new().unwrap();
    let run = Run::plugin(home.path()).arg("info").output();
    assert_failed(&run, 3);
    run.assert_stderr(str![[r#"
error: no kubeconfig: [ROOT]/.kube/config does not exist
hint: create a cluster (`kind create cluster` writes one) or point --kubeconfig at one, or skip discovery with --registry HOST[:PORT]

"#]]);
}

#[test]
fn a_kubeconfig_list_with_a_missing_file_uses_the_others() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let dir = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
    let joined = std::env::join_paths([dir.path().join("gone"), kubeconfig]).unwrap();
    let run = Run::plugin(dir.path())
        .env("KUBECONFIG", &joined)
        .args(["info", "-o", "json"])
        .output();
    run.assert_stdout(Report::kinds_script().json());
    assert_eq!(json(&run)["context"], "kind-dev");
    assert_eq!(json(&run)["registry"]["host"], "localhost:5001");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
}

#[test]
fn the_home_kubeconfig_is_the_default() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let home = TempDir::new().unwrap();
    std::fs::create_dir(home.path().join(".kube")).unwrap();
    std::fs::write(
        home.path().join(".kube/config"),
        kubeconfig_yaml(&server.url(), "minikube", "minikube"),
    )
    .unwrap();
    let run = Run::plugin(home.path())
        .args(["info", "-o", "json"])
        .output();
    run.assert_stdout(
        Report::of("minikube", Product::minikube("minikube"))
            .registry(kinds_registry())
            .json(),
    );
    assert_eq!(json(&run)["context"], "minikube");
    assert_eq!(json(&run)["registry"]["host"], "localhost:5001");
    assert_eq!(run.code, 0);
}

#[test]
fn an_api_server_that_is_down_fails_naming_context_and_server() {
    let dir = TempDir::new().unwrap();
    let kubeconfig = dir.path().join("config");
    let server = format!("http://127.0.0.1:{}", unused_port());
    std::fs::write(
        &kubeconfig,
        kubeconfig_yaml(&server, "kind-dev", "kind-dev"),
    )
    .unwrap();
    let run = info_through(dir.path(), &kubeconfig);
    assert_failed(&run, 3);
    run.assert_stderr(str![[r#"
error: reading ConfigMap kube-public/local-registry-hosting: cannot reach the API server of context "kind-dev" (http://127.0.0.1:[PORT])
caused by: client error (Connect)
caused by: tcp connect error
caused by: Connection refused (os error 111)
hint: is the cluster running? `kubectl --context kind-dev get nodes` shows whether it answers

"#]]);
}

/// A kubeconfig whose user runs `./credential` (beside the kubeconfig) as an exec plugin.
fn exec_kubeconfig(dir: &Path, server: &ApiServer, script: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let plugin = dir.join("credential");
    std::fs::write(&plugin, script).unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let yaml = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: eks-dev
  cluster: {{server: \"{}\"}}
contexts:
- name: eks-dev
  context: {{cluster: eks-dev, user: sso}}
current-context: eks-dev
users:
- name: sso
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./credential
      interactiveMode: Never
",
        server.url()
    );
    std::fs::write(&kubeconfig, yaml).unwrap();
    kubeconfig
}

/// `info -o json` with an exec credential plugin that prints `answer`: the run, and the
/// Authorization headers the API server saw.
fn info_with_plugin_answer(answer: &str) -> (Outcome, Vec<Option<String>>) {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let dir = TempDir::new().unwrap();
    let script = format!("#!/bin/sh\nprintf '%s' '{answer}'\n");
    let kubeconfig = exec_kubeconfig(dir.path(), &server, &script);
    let run = Run::plugin(dir.path())
        .env("KUBECONFIG", &kubeconfig)
        .args(["info", "-o", "json"])
        .output();
    (run, server.authorizations())
}

#[test]
fn an_exec_credential_plugin_supplies_the_token() {
    let (run, authorizations) = info_with_plugin_answer(
        r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec-plugin"}}"#,
    );
    assert_eq!(json(&run)["registry"]["host"], "localhost:5001");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert_eq!(
        authorizations,
        vec![Some("Bearer from-exec-plugin".to_string()); 2],
        "the ConfigMap read and the node list"
    );
}

#[test]
fn an_exec_credential_plugin_may_answer_in_yaml() {
    let (run, authorizations) = info_with_plugin_answer(
        "apiVersion: client.authentication.k8s.io/v1\nkind: ExecCredential\nstatus:\n  token: from-yaml\n",
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert_eq!(
        authorizations,
        vec![Some("Bearer from-yaml".to_string()); 2]
    );
}

#[test]
fn a_failing_exec_credential_plugin_is_a_cluster_error() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let dir = TempDir::new().unwrap();
    let kubeconfig = exec_kubeconfig(
        dir.path(),
        &server,
        "#!/bin/sh\necho 'session expired: run sso login' >&2\nexit 1\n",
    );
    let run = Run::plugin(dir.path())
        .env("KUBECONFIG", &kubeconfig)
        .arg("info")
        .output();
    assert_failed(&run, 3);
    run.assert_stderr(str![[r#"
error: getting credentials for context "eks-dev" (http://127.0.0.1:[PORT]): the kubeconfig's exec credential plugin failed (exit status: 1)
caused by: session expired: run sso login
hint: log in again with that plugin's tool, then try `kubectl --context eks-dev get nodes`

"#]]);
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[test]
fn an_exec_credential_plugin_that_never_answers_is_stopped_at_its_bound() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let dir = TempDir::new().unwrap();
    let (pid_file, child_file) = (dir.path().join("plugin.pid"), dir.path().join("child.pid"));
    // A shell script, as many plugins are, waiting on a program of its own.
    let kubeconfig = exec_kubeconfig(
        dir.path(),
        &server,
        &format!(
            "#!/bin/sh\nsleep 600 &\necho $! > '{}'\necho $$ > '{}'\nwait\n",
            child_file.display(),
            pid_file.display()
        ),
    );
    let started = std::time::Instant::now();
    let run = Run::plugin(dir.path())
        .env("KUBECONFIG", &kubeconfig)
        .timeout(std::time::Duration::from_secs(90))
        .arg("info")
        .output();
    let took = started.elapsed();
    // kube resolves the plugin's relative path against the kubeconfig's folder ([ROOT]).
    assert_failed(&run, 3);
    run.assert_stderr(str![[r#"
error: getting credentials for context "eks-dev" (http://127.0.0.1:[PORT]): the kubeconfig's exec credential plugin "[ROOT]/./credential" did not answer within 15s; it was stopped
hint: run "[ROOT]/./credential" yourself to see what it waits for (a login, a prompt, the network), then try `kubectl --context eks-dev get nodes`

"#]]);
    assert!(took < std::time::Duration::from_secs(40), "took {took:?}");
    assert_eq!(server.requests(), Vec::<String>::new());
    // The plugin was waited for before the command returned: not even a zombie is left.
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    assert_eq!(stat, "", "the plugin outlived the command");
    // What it started was in its process group, killed with it; the system reaps it.
    let child = std::fs::read_to_string(&child_file).unwrap();
    wait_until_dead(child.trim());
}

/// Waits, bounded, until `pid` has died (gone, or a zombie awaiting init): a killed grandchild
/// of ours is the system's to reap, a moment after its SIGKILL.
fn wait_until_dead(pid: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or_default().trim_start();
        if stat.is_empty() || state.starts_with('Z') {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "pid {pid} is still running: {stat}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn https_proxy_is_never_used_for_a_loopback_api_server() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let dir = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
    let proxy = format!("http://127.0.0.1:{}", unused_port());
    let run = Run::plugin(dir.path())
        .env("KUBECONFIG", &kubeconfig)
        .env("HTTPS_PROXY", &proxy)
        .env("https_proxy", &proxy)
        .args(["info", "-o", "json"])
        .output();
    run.assert_stdout(Report::kinds_script().json());
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert_eq!(json(&run)["registry"]["host"], "localhost:5001");
    assert!(server.requests().contains(&CONFIGMAP_GET.to_string()));
}

#[test]
fn a_kubeconfig_proxy_url_is_used_even_for_a_loopback_api_server() {
    let server = ApiServer::builder().hosting_v1(KIND_SCRIPT_V1).start();
    let dir = TempDir::new().unwrap();
    let proxy = format!("http://127.0.0.1:{}", unused_port());
    let yaml = crate::support::apiserver::kubeconfig_yaml(&server.url(), "kind-dev", "kind-dev")
        .replacen(
            "    server:",
            &format!("    proxy-url: {proxy}\n    server:"),
            1,
        );
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, yaml).unwrap();
    let run = Run::plugin(dir.path())
        .env("KUBECONFIG", &kubeconfig)
        .arg("info")
        .output();
    run.assert_stderr(str![[r#"
error: reading ConfigMap kube-public/local-registry-hosting: cannot reach the API server of context "kind-dev" (http://127.0.0.1:[PORT] through proxy http://127.0.0.1:[PORT])
caused by: client error (Connect)
caused by: tunnel error: failed to create underlying connection
caused by: tcp connect error
caused by: Connection refused (os error 111)
hint: is the cluster (and the proxy) running? `kubectl --context kind-dev get nodes` shows whether it answers

"#]]);
    assert_eq!(
        run.stderr.lines().next(),
        Some(
            "error: reading ConfigMap kube-public/local-registry-hosting: cannot reach the API server of context \"kind-dev\" (http://127.0.0.1:[PORT] through proxy http://127.0.0.1:[PORT])"
        )
    );
    assert_eq!(run.code, 3);
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[test]
fn text_from_the_api_server_and_the_configmap_is_printed_escaped() {
    let hostile = "no\x1b]0;owned\x07 \u{202e}gnp.exe";
    let server = ApiServer::builder()
        .fail("configmaps", 500, hostile)
        .start();
    let run = info(&server, "kind-dev", &[]);
    run.assert_stdout(str![]);
    assert_eq!(run.code, 3);
    run.assert_stderr(str![[r#"
error: reading ConfigMap kube-public/local-registry-hosting: the API server of context "kind-dev" (http://127.0.0.1:[PORT]) answered 500 InternalError
caused by: no\u001b]0;owned\u0007 \u202egnp.exe

"#]]);
    assert!(
        run.stderr
            .contains("caused by: no\\u001b]0;owned\\u0007 \\u202egnp.exe"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(['\u{1b}', '\u{7}', '\u{202e}']));

    // YAML's escape for RIGHT-TO-LEFT OVERRIDE (a `help` with C0 controls is refused as invalid).
    let server = ApiServer::builder()
        .hosting_v1("host: \"localhost:5001\"\nhelp: \"https://example.test/guide\\u202E\"\n")
        .start();
    for args in [&[][..], &["-o", "json"]] {
        let run = info(&server, "kind-dev", args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(!run.stdout.contains('\u{202e}'), "{}", run.stdout);
        assert!(run.stdout.contains("guide\\u202e"), "{}", run.stdout);
    }
}

#[test]
fn discovery_reads_the_configmap_then_openshifts_image_config_then_the_node_annotations() {
    let internal = "image-registry.openshift-image-registry.svc:5000";
    let route = "default-route-openshift-image-registry.apps.example.test";
    let annotated =
        || StandInNode::new("worker-1").annotation("tilt.dev/registry", "localhost:6000");
    let everything = ApiServer::builder()
        .hosting_v1("host: \"localhost:5001\"\n")
        .openshift(internal, &[route])
        .node(annotated())
        .start();
    let found = json(&info(&everything, "corp", &["-o", "json"]));
    assert_eq!(
        (&found["registry"]["source"], &found["registry"]["host"]),
        (
            &serde_json::json!("configmap"),
            &serde_json::json!("localhost:5001")
        )
    );

    let openshift = ApiServer::builder()
        .openshift(internal, &[route, "second-route.example.test"])
        .node(annotated())
        .start();
    let found = json(&info(&openshift, "corp", &["-o", "json"]));
    assert_eq!(
        found["registry"],
        serde_json::json!({
            "host": route,
            "hostFromContainerRuntime": internal,
            "hostFromClusterNetwork": internal,
            "help": "https://docs.redhat.com/en/documentation/openshift_container_platform/latest/html/registry/securing-exposing-registry",
            "source": "openshift",
        })
    );
    assert_eq!(found["product"]["kind"], "openshift");
    assert_eq!(
        openshift.requests(),
        [
            "GET /api/v1/namespaces/kube-public/configmaps/local-registry-hosting",
            "GET /api/v1/namespaces/kube-system/services/registry",
            "GET /apis/config.openshift.io/v1/images/cluster",
            "GET /api/v1/nodes",
        ],
        "the nodes are listed once, for the product, not for the annotations"
    );

    let annotations = ApiServer::builder().node(annotated()).start();
    let found = json(&info(&annotations, "corp", &["-o", "json"]));
    assert_eq!(found["registry"]["source"], "annotation");
}
