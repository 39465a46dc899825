//! Where the pusher runs picks the registry host (KEP-1755). In a pod, with the service
//! account's in-cluster config against a TLS stand-in API server that demands the account's
//! token, push uploads to `hostFromClusterNetwork`; `--network` chooses for builders with a
//! kubeconfig; `info` says which host and why. The real registry receives the image.

use crate::support::apiserver::{ApiServer, unused_port};
use crate::support::fixtures::{Format, Image};
use crate::support::push::{Bench, HELP, Outcome, RUNTIME_HOST, clean_run};
use crate::support::registry::{TestRegistry, make_certificates};
use crate::support::run::{Run, redactions};
use snapbox::str;

const SERVICE_ACCOUNT_TOKEN: &str = "pod-service-account-token";
const CONFIGMAP_GET: &str = "GET /api/v1/namespaces/kube-public/configmaps/local-registry-hosting";

/// A pod's view of a cluster: the stand-in API server over TLS, the service account's files
/// in the bench, and the ConfigMap advertising `hosting`.
struct Pod {
    bench: Bench,
    /// The ConfigMap's `host`: where a laptop would push, and nothing listens.
    laptop_host: String,
}

impl Pod {
    /// `host` unreachable from here; `hostFromClusterNetwork` the real registry when
    /// `cluster_network` is true.
    fn start(cluster_network: bool) -> Self {
        let registry = TestRegistry::start();
        let dir = tempfile::tempdir().expect("temp dir");
        let certs = dir.path().join("api-certs");
        std::fs::create_dir(&certs).unwrap();
        make_certificates(&certs);
        let laptop_host = format!("localhost:{}", unused_port());
        let mut hosting = format!(
            "host: \"{laptop_host}\"\nhostFromContainerRuntime: \"{RUNTIME_HOST}\"\nhelp: \"{HELP}\"\n"
        );
        if cluster_network {
            hosting.push_str(&format!(
                "hostFromClusterNetwork: \"{}\"\n",
                registry.host()
            ));
        }
        let api = ApiServer::builder()
            .hosting_v1(&hosting)
            .require_token(SERVICE_ACCOUNT_TOKEN)
            .tls(&certs.join("server.crt"), &certs.join("server.key"))
            .start();
        let account = dir.path().join("serviceaccount");
        std::fs::create_dir(&account).unwrap();
        std::fs::write(account.join("token"), SERVICE_ACCOUNT_TOKEN).unwrap();
        std::fs::copy(certs.join("certs/ca.crt"), account.join("ca.crt")).unwrap();
        std::fs::write(account.join("namespace"), "builds").unwrap();
        let kubeconfig = dir.path().join("no-kubeconfig");
        Self {
            bench: Bench {
                registry,
                api,
                dir,
                kubeconfig,
            },
            laptop_host,
        }
    }

    /// The binary as a pod runs it: no kubeconfig, the kubelet's variables, the account's files.
    fn cmd(&self) -> Run {
        clean_run(self.bench.dir.path())
            .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
            .env("KUBERNETES_SERVICE_PORT", self.bench.api.port().to_string())
            .env(
                "KUBECTL_REGISTRY_SERVICEACCOUNT_DIR",
                self.bench.path("serviceaccount"),
            )
    }

    fn run(&self, args: &[&str]) -> Outcome {
        self.bench.run(self.cmd().args(args))
    }

    fn archive(&self, seed: u64) -> String {
        let path = self.bench.path("img.tar");
        Image::sample(seed).write(Format::DockerLegacy, &path, &["myimg:dev"]);
        path.to_str().unwrap().to_string()
    }
}

#[test]
fn a_pod_pushes_to_the_cluster_network_host_and_prints_the_runtime_ref() {
    let pod = Pod::start(true);
    let path = pod.archive(60);
    let run = pod.run(&["push", &path]);
    pod.bench.assert_pushed(&run, "myimg", "dev");
    assert_eq!(pod.bench.api.requests(), [CONFIGMAP_GET]);
    assert_eq!(
        pod.bench.api.authorizations(),
        [Some(format!("Bearer {SERVICE_ACCOUNT_TOKEN}"))],
        "the service account's token goes to the API server"
    );

    let json = pod.run(&["push", &path, "-o", "json"]);
    json.assert_clean_success();
    let (_, digest) = pod.bench.landed("myimg:dev");
    let report = json.json();
    assert_eq!(
        (
            report["ref"].as_str(),
            report["pushRef"].as_str(),
            report["network"].as_str()
        ),
        (
            Some(format!("{RUNTIME_HOST}/myimg:dev@{digest}").as_str()),
            Some(format!("127.0.0.1:[PORT]/myimg:dev@{digest}").as_str()),
            Some("cluster")
        )
    );
}

#[test]
fn network_host_in_a_pod_pushes_to_the_laptops_host() {
    let pod = Pod::start(true);
    let path = pod.archive(61);
    let run = pod.run(&["push", &path, "--network", "host"]);
    assert_eq!((run.code, run.stdout.as_str()), (5, ""));
    assert_eq!(
        run.stderr_lines()[0],
        format!("error: reaching the registry {}", pod.laptop_host)
    );
    pod.bench.assert_not_tagged("myimg", "dev");
}

#[test]
fn a_pod_without_a_cluster_network_host_fails_naming_the_field_and_the_ways_out() {
    let pod = Pod::start(false);
    let path = pod.archive(62);
    let run = pod.run(&["push", &path]);
    assert_eq!((run.code, run.stdout.as_str()), (6, ""));
    assert_eq!(
        run.stderr,
        format!(
            "error: pushing from the cluster network (in a pod: in-cluster config): ConfigMap \
             kube-public/local-registry-hosting sets no hostFromClusterNetwork, the registry's \
             name inside the cluster\n\
             hint: this cluster's registry guide: {HELP}\n\
             hint: name the registry as this pod reaches it with --registry HOST[:PORT] (and \
             --registry-from-runtime {RUNTIME_HOST}), or pass --network host if {} is reachable \
             from here\n",
            pod.laptop_host
        )
    );
    pod.bench.assert_not_tagged("myimg", "dev");

    // The way out the message names (in the `--flag=value` form scripts often use).
    let registry = format!("--registry={}", pod.bench.registry.host());
    let from_runtime = format!("--registry-from-runtime={RUNTIME_HOST}");
    let named = pod.run(&["push", &path, &registry, &from_runtime]);
    pod.bench.assert_pushed(&named, "myimg", "dev");
}

#[test]
fn info_in_a_pod_names_the_cluster_network_host_and_why() {
    let pod = Pod::start(true);
    let run = pod.run(&["info"]);
    assert_eq!(
        run.stdout,
        format!(
            "\
context:              (in-cluster)
cluster:              (none)
server:               https://127.0.0.1:[PORT]
product:              unknown
registry host:        {laptop}
runtime host:         {RUNTIME_HOST}
cluster-network host: 127.0.0.1:[PORT]
help:                 {HELP}
source:               ConfigMap kube-public/local-registry-hosting (KEP-1755)
network:              cluster (in a pod: in-cluster config)
push:                 push to 127.0.0.1:[PORT] (hostFromClusterNetwork) and print refs on {RUNTIME_HOST}
",
            laptop = pod.laptop_host
        )
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));

    let json = pod.run(&["info", "-o", "json", "--network", "host"]);
    assert_eq!(
        json.json()["push"],
        serde_json::json!({
            "method": "registry",
            "network": "host",
            "networkReason": "flag",
            "host": pod.laptop_host,
            "description": format!("push to {} and print refs on {RUNTIME_HOST}", pod.laptop_host),
        })
    );
}

#[test]
fn a_missing_service_account_token_is_a_cluster_error_naming_the_file() {
    let pod = Pod::start(true);
    std::fs::remove_file(pod.bench.path("serviceaccount/token")).unwrap();
    let run = pod.run(&["info"]);
    assert_eq!((run.code, run.stdout.as_str()), (3, ""));
    run.assert_stderr(str![[r#"
error: reading the pod's service account: [ROOT]/serviceaccount/token
caused by: No such file or directory (os error 2)
hint: a pod finds its service account in /var/run/secrets/kubernetes.io/serviceaccount unless the pod spec sets automountServiceAccountToken: false; or skip discovery with --registry HOST[:PORT]

"#]]);
    assert!(pod.bench.api.requests().is_empty());
}

#[test]
fn network_cluster_with_a_kubeconfig_pushes_to_the_cluster_network_host() {
    let registry = TestRegistry::start();
    let laptop_host = format!("localhost:{}", unused_port());
    let api = ApiServer::builder()
        .hosting_v1(&format!(
            "host: \"{laptop_host}\"\nhostFromContainerRuntime: \"{RUNTIME_HOST}\"\n\
             hostFromClusterNetwork: \"{}\"\n",
            registry.host()
        ))
        .start();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
    let bench = Bench {
        registry,
        api,
        dir,
        kubeconfig,
    };
    let path = bench.path("img.tar");
    Image::sample(63).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let run = bench.push(&[path.to_str().unwrap(), "--network", "cluster"]);
    bench.assert_pushed(&run, "myimg", "dev");

    let info = bench.run(bench.cmd().args(["info", "--network", "cluster"]));
    assert!(
        info.stdout.ends_with(&format!(
            "network:              cluster (--network cluster)\n\
             push:                 push to 127.0.0.1:[PORT] (hostFromClusterNetwork) and print refs on {RUNTIME_HOST}\n"
        )),
        "{}",
        info.stdout
    );
}

#[test]
fn doctor_in_a_pod_probes_the_cluster_network_host() {
    let pod = Pod::start(true);
    let run = pod.run(&["doctor"]);
    assert_eq!(
        redactions().redact(&run.stdout),
        format!(
            "\
✓ kubeconfig: none: in a pod, with its service account (in-cluster config)
✓ api-server: https://127.0.0.1:[PORT] answered in [ELAPSED] ms (Kubernetes v1.32.0)
✓ discovery: ConfigMap kube-public/local-registry-hosting: host {laptop}, hostFromContainerRuntime {RUNTIME_HOST}, hostFromClusterNetwork 127.0.0.1:[PORT], help {HELP}
✓ registry: 127.0.0.1:[PORT] answers GET /v2/ over http, the host push uses from the cluster network (in a pod: in-cluster config)
✓ round-trip: pushed the probe image (704 bytes) to 127.0.0.1:[PORT]/kubectl-registry-probe:doctor, read it back by digest sha256:[DIGEST]…, then deleted
– nodes: pods will pull from {RUNTIME_HOST}, not 127.0.0.1:[PORT]: each node's containerd must map {RUNTIME_HOST} to the registry (kind: /etc/containerd/certs.d/{RUNTIME_HOST}/hosts.toml); not checked from a node
    hint: this cluster's registry guide: {HELP}
    hint: `kubectl registry doctor --pod` pulls the probe image from a node
– node-load: not needed: push uses the registry
",
            laptop = pod.laptop_host
        )
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
}

#[test]
fn doctor_in_a_pod_without_a_cluster_network_host_fails_the_registry_check_as_push_would() {
    let pod = Pod::start(false);
    let run = pod.run(&["doctor"]);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[3..7],
        [
            "✗ registry: pushing from the cluster network (in a pod: in-cluster config): ConfigMap \
             kube-public/local-registry-hosting sets no hostFromClusterNetwork, the registry's name \
             inside the cluster"
                .to_string(),
            format!("    hint: this cluster's registry guide: {HELP}"),
            format!(
                "    hint: name the registry as this pod reaches it with --registry HOST[:PORT] (and \
                 --registry-from-runtime {RUNTIME_HOST}), or pass --network host if {} is reachable \
                 from here",
                pod.laptop_host
            ),
            "– round-trip: skipped: no host to reach the registry at from here".to_string(),
        ]
    );
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (6, "error: push would not work: 1 check failed (registry)\n")
    );
}
