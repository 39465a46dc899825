//! TLS in the cluster, through the tunnel: the real registry serving TLS with a certificate for
//! its Service's name, behind the stand-in API server's port-forward. TLS is tried first and the
//! certificate checked against the Service's DNS name; the cluster's service CA
//! (`openshift-service-ca.crt`) or `--ca-file` trusted; a certificate for other names refused
//! with the names it has, never downgraded to plain HTTP; `--insecure` said once; a registry
//! that answers the TLS hello in plain HTTP spoken to in plain HTTP.

use std::net::SocketAddr;
use std::process::Command;

use serde_json::{Value, json};
use snapbox::str;

use crate::support::apiserver::{ApiServer, ApiServerBuilder};
use crate::support::cluster_objects::running_pod;
use crate::support::fixtures::{Format, Image, sha256};
use crate::support::push::{Bench, Outcome};
use crate::support::registry::{RegistryConfig, TestRegistry};
use crate::tunnel::check;

/// The Service's name as the cluster advertises it: what the certificate must name.
const SERVICE_NAME: &str = "registry.dev.svc.cluster.local";
const GUIDE: &str = "https://registry.example/guide";

/// A TLS registry whose certificate names `names`.
fn tls_registry(names: &str) -> TestRegistry {
    TestRegistry::start_with(RegistryConfig {
        tls: true,
        certificate_names: Some(names.to_string()),
        ..RegistryConfig::default()
    })
}

/// A cluster advertising only the Service `dev/registry` (port 5000, its pod's port `https`),
/// the port-forward to its pod reaching `registry`; `service_ca` put in the namespace as
/// OpenShift's service CA operator does.
fn cluster(registry: TestRegistry, service_ca: Option<String>) -> Bench {
    let addr: SocketAddr = registry.host().parse().expect("the registry's address");
    let pod = {
        let mut pod = running_pod(
            "registry-0",
            json!({"app": "registry"}),
            json!([{"name": "registry", "image": "registry:2", "ports": [{"name": "https", "containerPort": 5000}]}]),
        );
        pod["metadata"]["namespace"] = json!("dev");
        pod
    };
    let mut api: ApiServerBuilder = ApiServer::builder()
        .hosting_v1(&format!(
            "hostFromClusterNetwork: {SERVICE_NAME}:5000\nhostFromContainerRuntime: {SERVICE_NAME}:5000\nhelp: {GUIDE}\n"
        ))
        .object(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "registry", "namespace": "dev"},
            "spec": {"selector": {"app": "registry"}, "ports": [{"port": 5000, "targetPort": "https"}]},
        }))
        .object(pod)
        .forward("dev", "registry-0", 5000, addr);
    if let Some(pem) = service_ca {
        api = api.object(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "openshift-service-ca.crt", "namespace": "dev",
                         "annotations": {"service.beta.openshift.io/inject-cabundle": "true"}},
            "data": {"service-ca.crt": pem},
        }));
    }
    let api = api.start();
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = api.write_kubeconfig(dir.path(), "dev", "dev");
    Bench {
        registry,
        api,
        dir,
        kubeconfig,
    }
}

fn archive(bench: &Bench, seed: u64) -> String {
    let path = bench.path("img.tar");
    Image::with_layers(seed, "linux/amd64", &[700 << 10, 90 << 10]).write(
        Format::OciArchive,
        &path,
        &["app:v1"],
    );
    path.to_str().unwrap().to_string()
}

fn push(bench: &Bench, args: &[&str]) -> Outcome {
    bench.push(args)
}

fn ca_pem(registry: &TestRegistry) -> String {
    std::fs::read_to_string(registry.ca_file()).expect("the test CA")
}

/// skopeo copies what `repo:tag` names out of the registry (every blob read back), and the
/// manifest's digest; `None` when skopeo finds no such tag.
fn skopeo_copied(bench: &Bench, repo_and_tag: &str) -> Option<String> {
    let out = bench.path("copied");
    let _ = std::fs::remove_dir_all(&out);
    let copied = Command::new("skopeo")
        .args(["copy", "--src-tls-verify=false"])
        .arg(format!("docker://{}/{repo_and_tag}", bench.registry.host()))
        .arg(format!("dir:{}", out.display()))
        .output()
        .expect("running skopeo");
    if !copied.status.success() {
        return None;
    }
    let manifest = std::fs::read(out.join("manifest.json")).expect("skopeo wrote the manifest");
    let stored = bench.registry.skopeo_raw_manifest(repo_and_tag);
    assert_eq!(manifest, stored, "skopeo copied the stored manifest");
    Some(sha256(&stored))
}

/// The pushed ref's digest, checked against what skopeo copies out of the registry.
fn assert_landed(bench: &Bench, run: &Outcome) {
    assert_eq!(run.code, 0, "{}", run.stderr);
    let digest = skopeo_copied(bench, "app:v1").expect("app:v1 is in the registry");
    assert_eq!(run.stdout, format!("{SERVICE_NAME}:5000/app:v1@{digest}\n"));
}

fn assert_not_tagged(bench: &Bench) {
    assert_eq!(skopeo_copied(bench, "app:v1"), None, "app:v1 was tagged");
}

#[test]
fn a_tls_registry_is_checked_for_the_services_name_with_the_clusters_service_ca() {
    let registry = tls_registry(&format!("DNS:{SERVICE_NAME},DNS:registry.dev.svc"));
    let ca = ca_pem(&registry);
    let bench = cluster(registry, Some(ca));
    let path = archive(&bench, 81);
    let run = push(&bench, &[&path, "-v"]);
    assert_landed(&bench, &run);
    run.assert_stderr(str![[r#"
ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1 sets no host; registry.dev.svc.cluster.local:5000 is Service dev/registry port 5000, reached from outside the cluster through the API server
pushing through a tunnel to Service dev/registry port 5000 through the API server: ConfigMap kube-public/local-registry-hosting sets no host, only the Service of hostFromClusterNetwork
tunnel: trusting the cluster's service CA of namespace dev for the registry
tunnel: 127.0.0.1:[PORT] -> a port-forward to pod dev/registry-0 port 5000 of Service dev/registry port 5000, through the API server
tunnel: the registry behind Service dev/registry port 5000 is spoken to as registry.dev.svc.cluster.local over TLS, its certificate checked for the Service's name
pushed 3 blobs (814.5 KB), 0 blobs already there, in [ELAPSED]s

"#]]);
    assert!(
        bench
            .api
            .requests()
            .iter()
            .any(|r| r == "GET /api/v1/namespaces/dev/configmaps/openshift-service-ca.crt"),
        "{:?}",
        bench.api.requests()
    );
    // No word of warning, and the docker daemon (if any) not asked to push to 127.0.0.1.
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}

#[test]
fn ca_file_adds_the_ca_and_without_it_the_certificate_is_not_trusted_nor_downgraded() {
    let bench = cluster(tls_registry(&format!("DNS:{SERVICE_NAME}")), None);
    let path = archive(&bench, 82);
    let untrusted = push(&bench, &[&path]);
    assert_eq!(untrusted.code, 5, "{}", untrusted.stderr);
    untrusted.assert_stderr(str![[r#"
error: reaching the registry registry.dev.svc.cluster.local:5000
caused by: the TLS certificate of the registry behind Service dev/registry port 5000 (as registry.dev.svc.cluster.local) is not trusted
caused by: invalid peer certificate: UnknownIssuer
hint: this cluster's registry guide: https://registry.example/guide
hint: the registry was reached through a port-forward to pod dev/registry-0 port 5000 of Service dev/registry port 5000, through the API server
hint: pass --ca-file with the CA that signed the registry's certificate, or --insecure to skip the check; the cluster publishes no service CA (ConfigMap openshift-service-ca.crt) in the Service's namespace

"#]]);
    assert!(
        untrusted
            .stderr
            .contains("pass --ca-file with the CA that signed the registry's certificate, or --insecure to skip the check; the cluster publishes no service CA (ConfigMap openshift-service-ca.crt) in the Service's namespace"),
        "{}",
        untrusted.stderr
    );
    assert_not_tagged(&bench);
    let ca_file = bench.registry.ca_file();
    let run = push(&bench, &[&path, "--ca-file", ca_file.to_str().unwrap()]);
    assert_landed(&bench, &run);
}

#[test]
fn a_certificate_for_other_names_is_refused_naming_them() {
    let bench = cluster(
        tls_registry("DNS:registry.example,DNS:*.registry.example,IP:127.0.0.1"),
        None,
    );
    let path = archive(&bench, 83);
    let ca_file = bench.registry.ca_file();
    let run = push(&bench, &[&path, "--ca-file", ca_file.to_str().unwrap()]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: reaching the registry registry.dev.svc.cluster.local:5000
caused by: the TLS certificate of the registry behind Service dev/registry port 5000 names registry.example, *.registry.example and 127.0.0.1, not registry.dev.svc.cluster.local, the Service's name in the cluster
caused by: invalid peer certificate: certificate not valid for name "registry.dev.svc.cluster.local"; certificate is only valid for DnsName("registry.example"), DnsName("*.registry.example") or IpAddress(127.0.0.1)
hint: this cluster's registry guide: https://registry.example/guide
hint: the registry was reached through a port-forward to pod dev/registry-0 port 5000 of Service dev/registry port 5000, through the API server
hint: the registry's certificate must name registry.dev.svc.cluster.local, as pods pull from it by that name: reissue it with registry.dev.svc.cluster.local among its DNS names (cert-manager: the Certificate's dnsNames; OpenShift: the Service's annotation service.beta.openshift.io/serving-cert-secret-name), or pass --insecure to skip the check

"#]]);
    assert_not_tagged(&bench);
}

#[test]
fn insecure_skips_the_check_and_says_so_once() {
    let bench = cluster(tls_registry("DNS:registry.example"), None);
    let path = archive(&bench, 84);
    let run = push(&bench, &[&path, "--insecure"]);
    assert_landed(&bench, &run);
    run.assert_stderr(str![[r#"
warning: --insecure: the TLS certificate of the registry behind Service dev/registry port 5000 is not checked

"#]]);
}

#[test]
fn a_registry_answering_plain_http_is_spoken_to_in_plain_http() {
    let bench = cluster(TestRegistry::start(), None);
    let path = archive(&bench, 85);
    let run = push(&bench, &[&path, "-v"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (_, digest) = bench.landed("app:v1");
    assert_eq!(run.stdout, format!("{SERVICE_NAME}:5000/app:v1@{digest}\n"));
    run.assert_stderr(str![[r#"
ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1 sets no host; registry.dev.svc.cluster.local:5000 is Service dev/registry port 5000, reached from outside the cluster through the API server
pushing through a tunnel to Service dev/registry port 5000 through the API server: ConfigMap kube-public/local-registry-hosting sets no host, only the Service of hostFromClusterNetwork
no service CA from ConfigMap dev/openshift-service-ca.crt: the cluster publishes none there
tunnel: 127.0.0.1:[PORT] -> a port-forward to pod dev/registry-0 port 5000 of Service dev/registry port 5000, through the API server
tunnel: the registry behind Service dev/registry port 5000 is spoken to as registry.dev.svc.cluster.local in plain HTTP: it answered our TLS hello in plain HTTP
pushed 3 blobs (814.5 KB), 0 blobs already there, in [ELAPSED]s

"#]]);
    // A system without CA certificates (a slim container) still tries TLS and falls back.
    let nothing = bench.path("no-certificates");
    std::fs::create_dir(&nothing).unwrap();
    let slim = bench.run(
        bench
            .cmd()
            .env("SSL_CERT_FILE", nothing.join("absent.pem"))
            .env("SSL_CERT_DIR", &nothing)
            .args(["push", path.as_str(), "--tag", "slim:v1"]),
    );
    assert_eq!(slim.code, 0, "{}", slim.stderr);
    let (_, digest) = bench.landed("slim:v1");
    assert_eq!(
        slim.stdout,
        format!("{SERVICE_NAME}:5000/slim:v1@{digest}\n")
    );
}

#[test]
fn doctor_says_the_registry_answers_tls_for_the_services_name() {
    let registry = tls_registry(&format!("DNS:{SERVICE_NAME}"));
    let ca = ca_pem(&registry);
    let bench = cluster(registry, Some(ca));
    let run = bench.run(bench.cmd().args(["doctor", "-o", "json"]));
    let checks: Value = serde_json::from_str(&run.stdout).unwrap();
    let registry = check(&checks, "registry");
    assert_eq!(
        registry["detail"],
        format!(
            "127.0.0.1:[PORT] answers GET /v2/ over https (TLS to {SERVICE_NAME}, the Service's name): the registry, through the tunnel"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(check(&checks, "round-trip")["ok"], true, "{checks}");
}

#[test]
fn an_expired_certificate_behind_the_tunnel_is_named_as_the_cluster_names_the_registry() {
    let registry = TestRegistry::start_with(RegistryConfig {
        tls: true,
        certificate_names: Some(format!("DNS:{SERVICE_NAME}")),
        expired_certificate: true,
        ..RegistryConfig::default()
    });
    let bench = cluster(registry, None);
    let archive = archive(&bench, 64);
    let ca_file = bench.registry.ca_file();
    let run = push(&bench, &[&archive, "--ca-file", ca_file.to_str().unwrap()]);
    assert_eq!(run.code, 5, "{run:?}");
    run.assert_stderr(str![[r#"
error: reaching the registry registry.dev.svc.cluster.local:5000
caused by: the TLS certificate of the registry behind Service dev/registry port 5000 (as registry.dev.svc.cluster.local) expired on 2020-01-02 00:00:00 UTC
caused by: invalid peer certificate: certificate expired: verification time [..]
hint: this cluster's registry guide: https://registry.example/guide
hint: the registry was reached through a port-forward to pod dev/registry-0 port 5000 of Service dev/registry port 5000, through the API server
hint: renew the registry's certificate (whoever runs registry.dev.svc.cluster.local:5000, behind Service dev/registry port 5000, can); check this machine's clock too: the --ca-file given is not the problem

"#]]);
    assert!(!run.stderr.contains("127.0.0.1"), "{run:?}");
    assert_not_tagged(&bench);
}
