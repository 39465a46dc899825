//! `kubectl registry advertise` end to end: the built binary writes the KEP-1755 ConfigMap into
//! the stand-in API server, the real kubectl and `info` read back what it wrote, and every refusal
//! (bad input, RBAC, conflicts) says what to do.

use snapbox::str;

use crate::support::apiserver::{ApiServer, unused_port};
use crate::support::info_report::{KIND_HELP, Product, Registry, Report};
use crate::support::registry::TestRegistry;
use crate::support::run::{Outcome, Run};
use tempfile::TempDir;

const CONFIGMAP_PATH: &str = "/api/v1/namespaces/kube-public/configmaps/local-registry-hosting";

/// `kubectl registry [args]` against `server` through a kubeconfig with context `kind-dev`.
fn plugin(server: &ApiServer, args: &[&str]) -> Outcome {
    let dir = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
    Run::plugin(dir.path())
        .kubeconfig_flag(&kubeconfig)
        .args(args)
        .output()
}

/// `kubectl registry advertise localhost:5001 FLAGS --no-verify` against `server`.
fn advertise(server: &ApiServer, flags: &[&str]) -> Outcome {
    plugin(
        server,
        &[
            &["advertise", "localhost:5001"][..],
            flags,
            &["--no-verify"],
        ]
        .concat(),
    )
}

/// `advertise localhost:5001` where a ConfigMap exists: asserts it said `configured`, and the
/// ConfigMap then holds localhost:5001's value beside `kept`, the keys advertise does not own.
#[track_caller]
fn assert_reconfigured_keeping(server: &ApiServer, kept: serde_json::Value) {
    let run = advertise(server, &[]);
    assert_done(&run, "configured");
    let mut expected = kept;
    expected["localRegistryHosting.v1"] = "host: \"localhost:5001\"\n".into();
    assert_eq!(data(server), expected);
}

/// The real kubectl against `server`, with `stdin` fed to it; its stdout.
fn kubectl(server: &ApiServer, args: &[&str], stdin: &str) -> String {
    let home = TempDir::new().unwrap();
    let kubeconfig = server.write_kubeconfig(home.path(), "kind-dev", "kind-dev");
    let run = Run::program("kubectl", home.path())
        .kubeconfig_flag(&kubeconfig)
        .args(args)
        .stdin(stdin)
        .output();
    assert_eq!(run.code, 0, "kubectl {args:?}: {}", run.stderr);
    run.stdout
}

/// Asserts `run` succeeded saying what it did to the ConfigMap (`configmap/local-registry-hosting
/// created`, as kubectl says it) alone on stdout, and nothing on stderr.
#[track_caller]
fn assert_done(run: &Outcome, what: &str) {
    run.assert_stdout(format!("configmap/local-registry-hosting {what}\n"));
    run.assert_clean_success();
}

/// Asserts `run` was refused with exit `code`, printing nothing on stdout (its stderr is the
/// test's to check).
#[track_caller]
fn assert_refused(run: &Outcome, code: i32) {
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (code, ""),
        "{}",
        run.stderr
    );
}

fn data(server: &ApiServer) -> serde_json::Value {
    server.hosting_configmap().expect("the ConfigMap exists")["data"].clone()
}

fn writes(server: &ApiServer) -> Vec<String> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.contains("/configmaps"))
        .collect()
}

#[test]
fn advertise_creates_the_configmap_that_real_kubectl_and_info_read_back() {
    let server = ApiServer::builder().start();
    let run = advertise(
        &server,
        &[
            "--from-runtime",
            "kind-registry:5000",
            "--from-cluster-network",
            "kind-registry:5000",
            "--help-url",
            KIND_HELP,
        ],
    );
    assert_done(&run, "created");
    assert_eq!(
        writes(&server),
        [
            format!("GET {CONFIGMAP_PATH}"),
            "POST /api/v1/namespaces/kube-public/configmaps".to_string()
        ]
    );
    let yaml = kubectl(
        &server,
        &[
            "get",
            "configmap",
            "-n",
            "kube-public",
            "local-registry-hosting",
            "-o",
            "yaml",
        ],
        "",
    );
    assert_eq!(
        yaml,
        r#"apiVersion: v1
data:
  localRegistryHosting.v1: |
    host: "localhost:5001"
    hostFromContainerRuntime: "kind-registry:5000"
    hostFromClusterNetwork: "kind-registry:5000"
    help: "https://kind.sigs.k8s.io/docs/user/local-registry/"
kind: ConfigMap
metadata:
  creationTimestamp: "2025-01-01T00:00:00Z"
  name: local-registry-hosting
  namespace: kube-public
  resourceVersion: "2"
  uid: 00000000-0000-4000-8000-000000000016
"#
    );
    let info = plugin(&server, &["info", "-o", "json"]);
    let advertised = Registry::configmap("localhost:5001")
        .runtime("kind-registry:5000")
        .network("kind-registry:5000")
        .help(KIND_HELP);
    info.assert_stdout(
        Report::of("kind-dev", Product::kind("dev"))
            .registry(advertised)
            .json(),
    );
    let report: serde_json::Value = serde_json::from_str(&info.stdout).unwrap();
    assert_eq!(
        report["registry"],
        serde_json::json!({
            "host": "localhost:5001",
            "hostFromContainerRuntime": "kind-registry:5000",
            "hostFromClusterNetwork": "kind-registry:5000",
            "help": KIND_HELP,
            "source": "configmap",
        })
    );
}

#[test]
fn an_existing_configmap_is_updated_and_keys_advertise_does_not_own_are_kept() {
    let server = ApiServer::builder()
        .hosting_configmap(&[
            ("localRegistryHosting.v1", "host: \"localhost:5000\"\n"),
            ("localRegistryHosting.v2", "someday: true\n"),
            ("owner-notes", "written by our platform team"),
        ])
        .start();
    assert_reconfigured_keeping(
        &server,
        serde_json::json!({
            "localRegistryHosting.v2": "someday: true\n",
            "owner-notes": "written by our platform team",
        }),
    );
    assert_eq!(
        writes(&server),
        [
            format!("GET {CONFIGMAP_PATH}"),
            format!("PUT {CONFIGMAP_PATH}")
        ]
    );

    let again = advertise(&server, &[]);
    assert_done(&again, "unchanged");
    assert_eq!(
        writes(&server).len(),
        3,
        "the same value again sends no write"
    );
}

#[test]
fn a_write_that_loses_a_race_is_retried_on_the_new_version_keeping_the_other_writers_keys() {
    let server = ApiServer::builder()
        .hosting_v1("host: \"localhost:5000\"\n")
        .concurrent_writes(2)
        .start();
    assert_reconfigured_keeping(
        &server,
        serde_json::json!({
            "written-meanwhile-2": "by another writer",
            "written-meanwhile-3": "by another writer",
        }),
    );
    let get = format!("GET {CONFIGMAP_PATH}");
    let put = format!("PUT {CONFIGMAP_PATH}");
    assert_eq!(
        writes(&server),
        [&get, &put, &get, &put, &get, &put].map(String::clone)
    );
}

#[test]
fn a_configmap_that_keeps_changing_is_given_up_on_with_exit_3() {
    let server = ApiServer::builder()
        .hosting_v1("host: \"localhost:5000\"\n")
        .concurrent_writes(5)
        .start();
    let run = advertise(&server, &[]);
    assert_refused(&run, 3);
    run.assert_stderr(str![[r#"
error: writing ConfigMap kube-public/local-registry-hosting: it changed under us 5 times in a row
hint: something else keeps rewriting it; find it (`kubectl -n kube-public get configmap local-registry-hosting -o yaml` shows its managedFields) and try again

"#]]);
}

#[test]
fn a_forbidden_create_names_the_missing_permission_and_exits_3() {
    let server = ApiServer::builder()
        .forbid_verb("configmaps", "create")
        .start();
    let run = advertise(&server, &[]);
    assert_refused(&run, 3);
    run.assert_stderr(str![[r#"
error: creating ConfigMap kube-public/local-registry-hosting: not allowed: the credentials of context "kind-dev" (http://127.0.0.1:[PORT]) may not create configmaps in namespace kube-public
caused by: configmaps "local-registry-hosting" is forbidden: User "system:serviceaccount:default:dev" cannot create resource "configmaps" in API group "" in the namespace "kube-public"
hint: advertising needs get, create, update and delete on configmaps in kube-public; `kubectl auth can-i create configmaps -n kube-public` checks it; a cluster admin can grant it with a Role and RoleBinding

"#]]);
    assert!(server.hosting_configmap().is_none());
}

#[test]
fn a_forbidden_update_names_update() {
    let server = ApiServer::builder()
        .hosting_v1("host: \"localhost:5000\"\n")
        .forbid_verb("configmaps", "update")
        .start();
    let run = advertise(&server, &[]);
    run.assert_stderr(str![[r#"
error: updating ConfigMap kube-public/local-registry-hosting: not allowed: the credentials of context "kind-dev" (http://127.0.0.1:[PORT]) may not update configmaps in namespace kube-public
caused by: configmaps "local-registry-hosting" is forbidden: User "system:serviceaccount:default:dev" cannot update resource "configmaps" in API group "" in the namespace "kube-public"
hint: advertising needs get, create, update and delete on configmaps in kube-public; `kubectl auth can-i update configmaps -n kube-public` checks it; a cluster admin can grant it with a Role and RoleBinding

"#]]);
    assert!(
        run.stderr.starts_with("error: updating ConfigMap kube-public/local-registry-hosting: not allowed: the credentials of context \"kind-dev\" (http://127.0.0.1:[PORT]) may not update configmaps in namespace kube-public\n"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("`kubectl auth can-i update configmaps -n kube-public`")
    );
    assert_eq!(run.code, 3);
    assert_eq!(
        data(&server)["localRegistryHosting.v1"],
        "host: \"localhost:5000\"\n"
    );
}

#[test]
fn hosts_and_help_links_discovery_would_refuse_are_usage_errors_before_any_request() {
    let server = ApiServer::builder().start();
    let run = plugin(&server, &["advertise", "http://localhost:5001"]);
    assert_refused(&run, 2);
    run.assert_stderr(str![[r#"
error: HOST is not usable
caused by: "http://localhost:5001" is not a registry host[:port]: it starts with a scheme (http://); give the host alone
hint: give host[:port] alone, e.g. localhost:5001 or registry:5000

"#]]);
    for (args, problem, stderr) in [
        (
            &["localhost:5001/v2"][..],
            "\"localhost:5001/v2\" is not a registry host[:port]: it has a path (/v2)",
            str![[r#"
error: HOST is not usable
caused by: "localhost:5001/v2" is not a registry host[:port]: it has a path (/v2)
hint: give host[:port] alone, e.g. localhost:5001 or registry:5000

"#]],
        ),
        (
            &["me:secret@localhost:5001"][..],
            "it has user info (…@); registry credentials belong in ~/.docker/config.json",
            str![[r#"
error: HOST is not usable
caused by: "me:xxxxx@localhost:5001" is not a registry host[:port]: it has user info (…@); registry credentials belong in ~/.docker/config.json
hint: give host[:port] alone, e.g. localhost:5001 or registry:5000

"#]],
        ),
        (
            &["local host:5001"][..],
            "it contains a space",
            str![[r#"
error: HOST is not usable
caused by: "local host:5001" is not a registry host[:port]: it contains a space
hint: give host[:port] alone, e.g. localhost:5001 or registry:5000

"#]],
        ),
        (
            &["localhost:5001", "--from-runtime", "registry:99999"][..],
            "port \"99999\" is not a number from 1 to 65535",
            str![[r#"
error: --from-runtime is not usable
caused by: "registry:99999" is not a registry host[:port]: port "99999" is not a number from 1 to 65535
hint: give host[:port] alone, e.g. localhost:5001 or registry:5000

"#]],
        ),
        (
            &["localhost:5001", "--help-url", "file:///etc/passwd"][..],
            "\"file:///etc/passwd\" is not a help URL: it must start with https:// or http://",
            str![[r#"
error: --help-url is not usable
caused by: "file:///etc/passwd" is not a help URL: it must start with https:// or http://
hint: give a web page users can open, e.g. https://kind.sigs.k8s.io/docs/user/local-registry/

"#]],
        ),
    ] {
        let run = plugin(
            &server,
            &[&["advertise"][..], args, &["--no-verify"]].concat(),
        );
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(problem), "{args:?}: {}", run.stderr);
        eprintln!("advertise {args:?}:");
        run.assert_stderr(stderr);
    }
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[test]
fn dry_run_prints_a_configmap_the_real_kubectl_creates_and_writes_nothing() {
    let server = ApiServer::builder().start();
    let run = advertise(&server, &["--help-url", KIND_HELP, "--dry-run"]);
    run.assert_stdout(str![[r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: local-registry-hosting
  namespace: kube-public
data:
  localRegistryHosting.v1: |
    host: "localhost:5001"
    help: "https://kind.sigs.k8s.io/docs/user/local-registry/"

"#]]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert_eq!(server.requests(), Vec::<String>::new());

    kubectl(
        &server,
        &["create", "--validate=false", "-f", "-"],
        &run.stdout,
    );
    assert_eq!(
        data(&server),
        serde_json::json!({
            "localRegistryHosting.v1": "host: \"localhost:5001\"\nhelp: \"https://kind.sigs.k8s.io/docs/user/local-registry/\"\n",
        })
    );
}

#[test]
fn delete_removes_the_configmap_or_only_the_key_advertise_owns() {
    let server = ApiServer::builder()
        .hosting_v1("host: \"localhost:5001\"\n")
        .start();
    let run = plugin(&server, &["advertise", "--delete"]);
    assert_done(&run, "deleted");
    assert!(server.hosting_configmap().is_none());
    let again = plugin(&server, &["advertise", "--delete"]);
    assert_done(&again, "unchanged (nothing was advertised)");

    let shared = ApiServer::builder()
        .hosting_configmap(&[
            ("localRegistryHosting.v1", "host: \"localhost:5001\"\n"),
            ("owner-notes", "kept"),
        ])
        .start();
    let run = plugin(&shared, &["advertise", "--delete"]);
    assert_done(&run, "configured");
    assert_eq!(data(&shared), serde_json::json!({"owner-notes": "kept"}));
}

#[test]
fn delete_takes_no_host() {
    let server = ApiServer::builder().start();
    let run = plugin(&server, &["advertise", "localhost:5001", "--delete"]);
    assert_eq!(run.code, 2);
    run.assert_stderr(str![[r#"
error: the argument '[HOST[:PORT]]' cannot be used with '--delete'

Usage: kubectl registry advertise <HOST[:PORT]>

For more information, try '--help'.

"#]]);
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[test]
fn a_host_that_does_not_answer_like_a_registry_is_advertised_with_a_warning() {
    let server = ApiServer::builder().start();
    let host = format!("127.0.0.1:{}", unused_port());
    let run = plugin(&server, &["advertise", &host]);
    run.assert_stdout(str![[r#"
configmap/local-registry-hosting created

"#]]);
    run.assert_stderr(str![[r#"
warning: 127.0.0.1:[PORT] does not answer GET /v2/ like a registry from here (the registry at 127.0.0.1:[PORT] is down or not reachable from here: Connection refused (os error 111)); advertising it in ConfigMap kube-public/local-registry-hosting anyway (--no-verify skips this check)

"#]]
    );
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "configmap/local-registry-hosting created\n")
    );
}

#[test]
fn a_real_registry_is_advertised_without_a_word() {
    let registry = TestRegistry::start();
    let server = ApiServer::builder().start();
    let run = plugin(&server, &["advertise", &registry.host()]);
    assert_done(&run, "created");
    let expected = format!("host: \"{}\"\n", registry.host());
    assert_eq!(data(&server)["localRegistryHosting.v1"], expected.as_str());
}

#[test]
fn keys_a_user_patched_in_with_real_kubectl_survive_advertise() {
    let server = ApiServer::builder().start();
    plugin(&server, &["advertise", "localhost:5000", "--no-verify"]);
    kubectl(
        &server,
        &[
            "patch",
            "configmap",
            "-n",
            "kube-public",
            "local-registry-hosting",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"owner-notes":"patched by hand"}}"#,
        ],
        "",
    );
    assert_reconfigured_keeping(
        &server,
        serde_json::json!({
            "owner-notes": "patched by hand",
        }),
    );
}
