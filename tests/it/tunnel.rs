//! Registries only the cluster reaches: minikube's registry addon found from its objects, and
//! a push through a tunnel through the (stand-in) API server's pod `portforward` subresource,
//! as kube-rs speaks it, to the real registry; the failures: no permission, no ready pod, a
//! tunnel that drops mid-push, the registry's pod replaced mid-push, an API server that does not
//! upgrade. A `minikube` on PATH fails
//! the test if called: the addon is reached without minikube's CLI.

use snapbox::str;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::apiserver::{ApiServer, ApiServerBuilder};
use crate::support::cluster_objects::running_pod;
use crate::support::fixtures::{Format, Image};
use crate::support::portforward::{Faults, Replacement};
use crate::support::push::{Bench, Outcome};
use crate::support::registry::TestRegistry;
use crate::watch::Watching;

/// A bench whose cluster is built by `cluster` around the real registry's address, with a
/// `minikube` on PATH that records being called.
struct Tunnelled {
    bench: Bench,
    called: PathBuf,
}

fn registry_addr(registry: &TestRegistry) -> SocketAddr {
    registry
        .host()
        .parse()
        .expect("the registry's loopback address")
}

fn tunnelled(cluster: impl FnOnce(ApiServerBuilder, SocketAddr) -> ApiServerBuilder) -> Tunnelled {
    tunnelled_to(TestRegistry::start(), cluster)
}

/// [`tunnelled`] to `registry`.
fn tunnelled_to(
    registry: TestRegistry,
    cluster: impl FnOnce(ApiServerBuilder, SocketAddr) -> ApiServerBuilder,
) -> Tunnelled {
    let api = cluster(ApiServer::builder(), registry_addr(&registry)).start();
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = api.write_kubeconfig(dir.path(), "minikube", "minikube");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let called = dir.path().join("minikube-called");
    let script = format!("#!/bin/sh\necho \"$@\" >> '{}'\nexit 1\n", called.display());
    std::fs::write(bin.join("minikube"), script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("minikube"), std::fs::Permissions::from_mode(0o755)).unwrap();
    Tunnelled {
        bench: Bench {
            registry,
            api,
            dir,
            kubeconfig,
        },
        called,
    }
}

impl Tunnelled {
    fn run(&self, args: &[&str]) -> Outcome {
        self.run_with(args, &[])
    }

    fn run_with(&self, args: &[&str], envs: &[(&str, &std::path::Path)]) -> Outcome {
        self.bench
            .cmd()
            .standins(&self.bench.path("bin"))
            .envs(envs.iter().copied())
            .args(args)
            .output()
    }

    fn archive(&self, image: &Image) -> String {
        let path = self.bench.path("img.tar");
        image.write(Format::OciArchive, &path, &["app:v1"]);
        path.to_str().unwrap().to_string()
    }

    fn assert_minikube_not_called(&self) {
        assert!(
            !self.called.exists(),
            "minikube was called: {:?}",
            std::fs::read_to_string(&self.called)
        );
    }

    fn portforwards(&self) -> usize {
        self.bench
            .api
            .requests()
            .iter()
            .filter(|request| request.ends_with("/portforward"))
            .count()
    }
}

#[test]
fn credentials_are_those_of_the_names_the_cluster_advertises_not_the_tunnels_port() {
    // The tunnel's loopback port changes every run: no one logs in to it. The user logged in to
    // the registry's name in the cluster (as `docker login` inside a pod, or `oc registry login`).
    let registry = TestRegistry::with_basic_auth("alice", "s3cret");
    let cluster = tunnelled_to(registry, |api, registry| {
        api.minikube_registry_addon(registry)
    });
    let path = cluster.archive(&Image::sample(66));
    let anonymous = cluster.run(&["push", &path]);
    assert_eq!((anonymous.code, anonymous.stdout.as_str()), (5, ""));
    anonymous.assert_stderr(str![[r#"
error: reaching the registry localhost:5000
caused by: wrong or missing credentials for localhost:5000: no credentials for localhost:5000 or registry.kube-system.svc.cluster.local:80 were found ([ROOT]/no-docker-config/config.json)
caused by: the registry answered 401 Unauthorized: UNAUTHORIZED: authentication required
hint: this cluster's registry guide: https://minikube.sigs.k8s.io/docs/handbook/registry/
hint: the registry was reached through a port-forward to pod kube-system/registry-6c86875c6f-x7k2p port 5000 of Service kube-system/registry port 80, through the API server
hint: run `docker login localhost:5000` (or `podman login localhost:5000`) with an account allowed to push

"#]]);

    let config = crate::support::push::docker_config(
        &cluster.bench,
        "registry.kube-system.svc.cluster.local",
        "alice",
        "s3cret",
    );
    let run = cluster.run_with(&["push", &path], &[("DOCKER_CONFIG", &config)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (_, digest) = cluster.bench.landed("app:v1");
    assert_eq!(run.stdout, format!("localhost:5000/app:v1@{digest}\n"));
}

#[test]
fn info_finds_minikubes_registry_addon() {
    let cluster = tunnelled(|api, registry| api.minikube_registry_addon(registry));
    let run = cluster.run(&["info", "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        report["registry"],
        json!({
            "host": "localhost:5000",
            "hostFromContainerRuntime": "localhost:5000",
            "hostFromClusterNetwork": "registry.kube-system.svc.cluster.local:80",
            "help": "https://minikube.sigs.k8s.io/docs/handbook/registry/",
            "source": "minikube-addon",
        })
    );
    cluster.assert_minikube_not_called();
}

#[test]
fn a_push_to_minikubes_addon_goes_through_the_api_server() {
    let cluster = tunnelled(|api, registry| api.minikube_registry_addon(registry));
    let image = Image::with_layers(61, "linux/amd64", &[900 << 10, 300 << 10, 120 << 10]);
    let path = cluster.archive(&image);
    let run = cluster.run(&["push", &path, "-v"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (_, digest) = cluster.bench.landed("app:v1");
    assert_eq!(run.stdout, format!("localhost:5000/app:v1@{digest}\n"));
    run.assert_stderr(str![[r#"
ConfigMap kube-public/local-registry-hosting not found
pushing through a tunnel to Service kube-system/registry port 80 through the API server: minikube's registry addon is reached only inside the cluster
no service CA from ConfigMap kube-system/openshift-service-ca.crt: the cluster publishes none there
tunnel: 127.0.0.1:[PORT] -> a port-forward to pod kube-system/registry-6c86875c6f-x7k2p port 5000 of Service kube-system/registry port 80, through the API server
tunnel: the registry behind Service kube-system/registry port 80 is spoken to as registry.kube-system.svc.cluster.local in plain HTTP: it answered our TLS hello in plain HTTP
pushed 4 blobs (1.4 MB), 0 blobs already there, in [ELAPSED]s

"#]]);
    assert!(
        run.stderr
            .contains("a port-forward to pod kube-system/registry-6c86875c6f-x7k2p port 5000"),
        "{}",
        run.stderr
    );
    assert!(
        cluster.portforwards() >= 2,
        "{:?}",
        cluster.bench.api.requests()
    );
    cluster.assert_minikube_not_called();
}

/// A ConfigMap naming only the Service, whose pod's port is named in the Service.
fn service_only(api: ApiServerBuilder, registry: SocketAddr) -> ApiServerBuilder {
    let pod = running_pod(
        "registry-0",
        json!({"app": "registry"}),
        json!([{"name": "registry", "image": "registry:2", "ports": [{"name": "http", "containerPort": 5000}]}]),
    );
    let mut pod = pod;
    pod["metadata"]["namespace"] = json!("dev");
    api.hosting_v1("hostFromClusterNetwork: registry.dev.svc.cluster.local:5000\nhostFromContainerRuntime: localhost:30500\n")
        .object(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "registry", "namespace": "dev"},
            "spec": {"selector": {"app": "registry"}, "ports": [{"port": 5000, "targetPort": "http"}]},
        }))
        .object(pod)
        .forward("dev", "registry-0", 5000, registry)
}

#[test]
fn a_service_only_advertisement_is_pushed_to_through_the_tunnel() {
    let cluster = tunnelled(service_only);
    let path = cluster.archive(&Image::sample(62));
    let run = cluster.run(&["push", &path, "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let (_, digest) = cluster.bench.landed("app:v1");
    assert_eq!(report["ref"], format!("localhost:30500/app:v1@{digest}"));
    assert_eq!(report["network"], "tunnel");
    assert_eq!(
        report["pushRef"],
        Value::Null,
        "a loopback port that is gone"
    );
    let host = cluster.run(&["push", &path, "--network", "host"]);
    assert_eq!(host.code, 2, "{}", host.stderr);
    host.assert_stderr(str![[r#"
error: --network host: ConfigMap kube-public/local-registry-hosting sets no host, so nothing outside the cluster reaches the registry
hint: drop --network host to push through a tunnel through the API server, or name a registry with --registry HOST[:PORT]

"#]]);
}

#[test]
fn no_permission_to_port_forward_is_exit_3_naming_it() {
    let cluster = tunnelled(|api, registry| {
        api.minikube_registry_addon(registry)
            .forbid("pods/portforward")
    });
    let path = cluster.archive(&Image::sample(63));
    let run = cluster.run(&["push", &path]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: the cluster does not allow us to create pods/portforward in namespace kube-system, which the tunnel to the registry through the API server needs
caused by: pods/portforward "registry-6c86875c6f-x7k2p" is forbidden: User "system:serviceaccount:default:dev" cannot create resource "pods/portforward" in API group "" in the namespace "kube-system"
hint: ask for RBAC permission to create pods/portforward in kube-system (`kubectl auth can-i create pods/portforward -n kube-system` checks), or push to a registry reachable from here with --registry HOST[:PORT]

"#]]);
    assert_eq!(cluster.bench.tag_status("app", "v1"), 404);
}

#[test]
fn a_service_without_a_ready_pod_is_named_with_its_selector() {
    let cluster = tunnelled(|api, _| {
        api.hosting_v1("hostFromClusterNetwork: registry.dev.svc:5000\n")
            .object(json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "registry", "namespace": "dev"},
                "spec": {"selector": {"app": "registry"}, "ports": [{"port": 5000}]},
            }))
    });
    let path = cluster.archive(&Image::sample(64));
    let run = cluster.run(&["push", &path]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: no registry pod to tunnel to behind Service dev/registry port 5000: no pod matching its selector app=registry is ready
hint: `kubectl -n dev get pods` shows why its pods are not ready; or name a registry reachable from here with --registry HOST[:PORT]

"#]]);
}

#[test]
fn a_tunnel_dropped_mid_push_is_reopened_and_the_blob_resent() {
    let cluster = tunnelled(|api, registry| {
        api.minikube_registry_addon(registry)
            .portforward_faults(Faults {
                cut_streams: 3,
                cut_after: 200 << 10,
                ..Faults::default()
            })
    });
    let image = Image::with_layers(65, "linux/amd64", &[2 << 20]);
    let path = cluster.archive(&image);
    let run = cluster.run(&["push", &path, "-v"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    cluster.bench.landed("app:v1");
    assert!(
        cluster.portforwards() >= 4,
        "{:?}",
        cluster.bench.api.requests()
    );
}

#[test]
fn a_registry_pod_replaced_mid_push_is_followed_and_what_the_new_one_lacks_is_sent() {
    // The new pod's registry starts empty, as minikube's addon (no volume) comes back.
    let successor = TestRegistry::start();
    let labels = json!({"actual-registry": "true", "kubernetes.io/minikube-addons": "registry",
                        "addonmanager.kubernetes.io/mode": "Reconcile"});
    let containers = json!([{"name": "registry", "image": "docker.io/registry:2.8.3",
                             "ports": [{"containerPort": 5000, "protocol": "TCP"}]}]);
    let new_pod = running_pod("registry-6c86875c6f-q9w4z", labels, containers);
    let replacement = Replacement::new(
        5 << 19,
        "registry-6c86875c6f-x7k2p",
        new_pod,
        registry_addr(&successor),
    );
    let cluster = tunnelled(|api, registry| {
        api.minikube_registry_addon(registry)
            .portforward_faults(Faults {
                replace: Some(replacement),
                ..Faults::default()
            })
    });
    // Small layers land on the old pod before it goes; the big ones are cut mid-way.
    let image = Image::with_layers(68, "linux/amd64", &[3 << 20, 2 << 20, 64 << 10, 32 << 10]);
    let path = cluster.archive(&image);
    let run = cluster.run(&["push", &path, "-v"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("tunnel: Service kube-system/registry port 80 now goes to pod kube-system/registry-6c86875c6f-q9w4z port 5000"),
        "{}",
        run.stderr
    );
    // What the printed ref names is whole in the new pod's registry, read back by skopeo.
    let manifest: Value = serde_json::from_slice(&successor.skopeo_raw_manifest("app:v1")).unwrap();
    let digest = run.stdout.trim().rsplit_once('@').unwrap().1;
    assert_eq!(
        crate::support::fixtures::sha256(&successor.skopeo_raw_manifest("app:v1")),
        digest
    );
    let blobs = std::iter::once(&manifest["config"])
        .chain(manifest["layers"].as_array().unwrap())
        .map(|blob| blob["digest"].as_str().unwrap());
    for blob in blobs {
        assert_eq!(successor.blob_status("app", blob), 200, "{blob} missing");
    }
}

#[test]
fn a_watch_opens_its_tunnel_once_for_every_round() {
    let cluster = tunnelled(|api, registry| api.minikube_registry_addon(registry));
    let path = cluster.archive(&Image::sample(69));
    let command = cluster
        .bench
        .cmd()
        .args(["push", &path, "--watch", "-v"])
        .command();
    let mut watching = Watching::start(command);
    let first = watching.next_ref();
    let next = cluster.bench.path("next.tar");
    Image::sample(70).write(Format::OciArchive, &next, &["app:v1"]);
    std::fs::rename(&next, &path).unwrap();
    let second = watching.next_ref();
    assert_ne!(first, second);
    assert_eq!(watching.interrupt().0, 130);
    let said = watching.said_to_the_end();
    let opened: Vec<&String> = said
        .iter()
        .filter(|line| line.starts_with("tunnel: 127.0.0.1:") && line.contains(" -> "))
        .collect();
    assert_eq!(opened.len(), 1, "{said:#?}");
    assert!(
        said.iter()
            .any(|line| line.starts_with("tunnel: 127.0.0.1:") && line.ends_with(" again")),
        "{said:#?}"
    );
}

#[test]
fn a_tunnel_that_keeps_dropping_fails_clearly_and_tags_nothing() {
    let cluster = tunnelled(|api, registry| {
        api.minikube_registry_addon(registry)
            .portforward_faults(Faults {
                cut_streams: usize::MAX,
                cut_after: 200 << 10,
                ..Faults::default()
            })
    });
    let image = Image::with_layers(66, "linux/amd64", &[2 << 20]);
    let path = cluster.archive(&image);
    let run = cluster.run(&["push", &path]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: pushing blob sha256:[DIGEST]… to localhost:5000/app
...
hint: this cluster's registry guide: https://minikube.sigs.k8s.io/docs/handbook/registry/
hint: the registry was reached through a port-forward to pod kube-system/registry-6c86875c6f-x7k2p port 5000 of Service kube-system/registry port 80, through the API server; its last failure: a port-forward to pod kube-system/registry-6c86875c6f-x7k2p port 5000 broke off: [..]

"#]]);
    assert_eq!(cluster.bench.tag_status("app", "v1"), 404);
}

#[test]
fn an_api_server_that_does_not_upgrade_is_told() {
    let cluster = tunnelled(|api, registry| {
        api.minikube_registry_addon(registry)
            .portforward_faults(Faults {
                no_upgrade: true,
                ..Faults::default()
            })
    });
    let path = cluster.archive(&Image::sample(67));
    let run = cluster.run(&["push", &path]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: opening a port-forward to pod kube-system/registry-6c86875c6f-x7k2p port 5000 through the API server: the API server answered 400 BadRequest
caused by: Upgrade request required
hint: a proxy between here and the API server may not pass WebSocket upgrades on; `kubectl port-forward` fails the same way there. Push to a registry reachable from here with --registry HOST[:PORT]

"#]]);
}

#[test]
fn ls_reads_the_registry_through_the_tunnel() {
    let cluster = tunnelled(|api, registry| api.minikube_registry_addon(registry));
    let path = cluster.archive(&Image::sample(68));
    assert_eq!(cluster.run(&["push", &path]).code, 0);
    let run = cluster.run(&["ls", "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.assert_stdout(str![[r#"
[
  {
    "repository": "app",
    "tag": "v1",
    "digest": "sha256:[DIGEST]",
    "size": 643057,
    "created": null,
    "inUseBy": []
  }
]

"#]]);
}

/// kubectl's own port-forward, through the same stand-in: its WebSocket try
/// (`SPDY/3.1+portforward.k8s.io`) refused as a server without that tunnelling refuses it, then
/// its SPDY upgrade; a push through what it forwards lands.
#[test]
fn kubectl_port_forward_reaches_the_registry_through_the_same_stand_in() {
    let cluster = tunnelled(|api, registry| api.minikube_registry_addon(registry));
    let mut kubectl = std::process::Command::new("kubectl")
        .args([
            "port-forward",
            "-n",
            "kube-system",
            "pod/registry-6c86875c6f-x7k2p",
            ":5000",
        ])
        .arg("--kubeconfig")
        .arg(&cluster.bench.kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(cluster.bench.path("kubectl.err")).unwrap())
        .spawn()
        .expect("kubectl is installed (scripts/install-test-deps)");
    let stdout = kubectl.stdout.take().unwrap();
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = sender.send(line);
        }
    });
    let line = lines
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("kubectl port-forward says where it listens");
    let port = line
        .strip_prefix("Forwarding from 127.0.0.1:")
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("kubectl said: {line}"))
        .to_string();
    let path = cluster.archive(&Image::sample(69));
    let host = format!("127.0.0.1:{port}");
    let run = cluster.run(&["push", &path, "--registry", &host]);
    let _ = kubectl.kill();
    let _ = kubectl.wait();
    let said = std::fs::read_to_string(cluster.bench.path("kubectl.err")).unwrap();
    assert_eq!(
        run.code,
        0,
        "{}\nkubectl said: {said}\n{:?}",
        run.stderr,
        cluster.bench.api.requests()
    );
    cluster.bench.landed("app:v1");
    let tries: Vec<String> = cluster
        .bench
        .api
        .requests()
        .into_iter()
        .filter(|request| request.ends_with("/portforward"))
        .collect();
    assert_eq!(
        tries[..2],
        [
            "GET /api/v1/namespaces/kube-system/pods/registry-6c86875c6f-x7k2p/portforward",
            "POST /api/v1/namespaces/kube-system/pods/registry-6c86875c6f-x7k2p/portforward",
        ],
        "{tries:?}"
    );
}

#[test]
fn info_says_push_would_tunnel_and_why() {
    let cluster = tunnelled(|api, registry| api.minikube_registry_addon(registry));
    let run = cluster.run(&["info", "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["push"]["network"], "tunnel");
    assert_eq!(
        report["push"]["tunnel"],
        json!({"service": "kube-system/registry", "port": 80, "why": "minikube-addon",
               "tlsName": "registry.kube-system.svc.cluster.local"})
    );
    let text = cluster.run(&["info"]);
    text.assert_stdout(str![[r#"
context:              minikube
cluster:              minikube
server:               http://127.0.0.1:[PORT]
product:              minikube (profile "minikube")
registry host:        localhost:5000
runtime host:         localhost:5000
cluster-network host: registry.kube-system.svc.cluster.local:80
help:                 https://minikube.sigs.k8s.io/docs/handbook/registry/
source:               Service kube-system/registry (minikube registry addon)
network:              host (outside the cluster: a kubeconfig context)
push:                 push through a tunnel through the API server to Service kube-system/registry port 80 (minikube's registry addon is reached only inside the cluster) and print refs on localhost:5000; TLS to registry.kube-system.svc.cluster.local first (its certificate checked for that name), plain HTTP if the registry answers in it

"#]]);
}

/// `doctor -o json`'s check named `name`.
pub(crate) fn check<'a>(checks: &'a Value, name: &str) -> &'a Value {
    checks
        .as_array()
        .unwrap()
        .iter()
        .find(|check| check["check"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {checks}"))
}

#[test]
fn doctor_checks_the_hop_and_the_registry_through_it() {
    let cluster = tunnelled(|api, registry| api.minikube_registry_addon(registry));
    let run = cluster.run(&["doctor", "-o", "json"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let checks: Value = serde_json::from_str(&run.stdout).unwrap();
    let tunnel = check(&checks, "tunnel");
    assert_eq!(tunnel["ok"], true, "{tunnel}");
    assert!(
        tunnel["detail"].as_str().unwrap().contains("allowed to create pods/portforward in kube-system; a port-forward to pod kube-system/registry-6c86875c6f-x7k2p port 5000 of Service kube-system/registry port 80 opens"),
        "{tunnel}"
    );
    let registry = check(&checks, "registry");
    assert!(
        registry["detail"]
            .as_str()
            .unwrap()
            .ends_with("answers GET /v2/ over http (it answered TLS to registry.kube-system.svc.cluster.local in plain HTTP): the registry, through the tunnel"),
        "{registry}"
    );
    assert_eq!(check(&checks, "round-trip")["ok"], true);

    let refused = tunnelled(|api, registry| {
        api.minikube_registry_addon(registry)
            .forbid("pods/portforward")
    });
    let run = refused.run(&["doctor", "-o", "json"]);
    assert_ne!(run.code, 0);
    let checks: Value = serde_json::from_str(&run.stdout).unwrap();
    let tunnel = check(&checks, "tunnel");
    assert_eq!(tunnel["ok"], false, "{tunnel}");
    assert!(tunnel["detail"].as_str().unwrap().contains("not allowed to create pods/portforward in namespace kube-system (SelfSubjectAccessReview)"), "{tunnel}");
    assert!(
        !refused
            .bench
            .api
            .requests()
            .iter()
            .any(|r| r.ends_with("/portforward"))
    );
}
