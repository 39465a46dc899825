//! OpenShift and OpenShift Local: the registry found in `images.config.openshift.io/cluster`
//! (served by the stand-in API server, which demands the kubeconfig's token), the push to the
//! route through an auth front that answers as OpenShift's registry does, into the context's
//! project, and the ref on the internal service name, pulled back whole by a real containerd.

use snapbox::str;
use std::path::Path;

use crate::support::apiserver::{ApiServer, ApiServerBuilder, StandInNode, unused_port};
use crate::support::fixtures::{self, Format, Image};
use crate::support::openshift_registry::{OpenshiftRegistry, TokenRequest};
use crate::support::push::{Node, Outcome, clean_run};
use crate::support::registry::make_certificates;
use crate::support::run::{Run, redact, redactions};
use base64::Engine as _;
use tempfile::TempDir;

const INTERNAL: &str = "image-registry.openshift-image-registry.svc:5000";
const USER_TOKEN: &str = "sha256~developer-oauth-token";
const CONTEXT: &str = "myproject/api-crc-testing:6443/developer";
const GUIDE: &str = "https://docs.redhat.com/en/documentation/openshift_container_platform/latest/html/registry/securing-exposing-registry";
const CONFIGMAP_GET: &str = "GET /api/v1/namespaces/kube-public/configmaps/local-registry-hosting";
/// minikube's registry addon, the source after the ConfigMap.
const MINIKUBE_SERVICE_GET: &str = "GET /api/v1/namespaces/kube-system/services/registry";
const IMAGE_CONFIG_GET: &str = "GET /apis/config.openshift.io/v1/images/cluster";

/// An OpenShift Local cluster: its API server, its registry behind the auth front, and a
/// kubeconfig as `oc login` writes it (token user, context namespace `myproject`).
struct Openshift {
    front: OpenshiftRegistry,
    api: ApiServer,
    dir: TempDir,
}

impl Openshift {
    /// The registry's token endpoint takes `registry_tokens`; the API server takes USER_TOKEN.
    fn start(registry_tokens: &[&str]) -> Self {
        Self::with_front(OpenshiftRegistry::start(registry_tokens))
    }

    fn with_front(front: OpenshiftRegistry) -> Self {
        Self::with_cluster(front, true, |api, front| {
            api.openshift(INTERNAL, &[&front.host()])
        })
    }

    /// The API server's image config and objects as `shape` makes them around `front`; over
    /// HTTPS as OpenShift's (kubectl sends no token over plain HTTP) unless `!https` (the
    /// stand-in relays port-forwards only over plain HTTP).
    fn with_cluster(
        front: OpenshiftRegistry,
        https: bool,
        shape: impl FnOnce(ApiServerBuilder, &OpenshiftRegistry) -> ApiServerBuilder,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let certs = dir.path().join("api-certs");
        std::fs::create_dir(&certs).unwrap();
        make_certificates(&certs);
        let mut api = ApiServer::builder()
            .require_token(USER_TOKEN)
            .node(StandInNode::new("crc").label("node.openshift.io/os_id", "rhcos"));
        if https {
            api = api.tls(&certs.join("server.crt"), &certs.join("server.key"));
        }
        let api = shape(api, &front).start();
        let ca = if https {
            format!(
                "\n    certificate-authority: {}",
                certs.join("certs/ca.crt").display()
            )
        } else {
            String::new()
        };
        std::fs::write(
            dir.path().join("kubeconfig"),
            format!(
                "apiVersion: v1
kind: Config
clusters:
- cluster:{ca}
    server: {server}
  name: api-crc-testing:6443
contexts:
- context:
    cluster: api-crc-testing:6443
    namespace: myproject
    user: developer/api-crc-testing:6443
  name: {CONTEXT}
current-context: {CONTEXT}
users:
- name: developer/api-crc-testing:6443
  user:
    token: {USER_TOKEN}
",
                server = api.url(),
            ),
        )
        .unwrap();
        Self { front, api, dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_string()
    }

    fn cmd(&self) -> Run {
        clean_run(self.dir.path()).kubeconfig(Path::new(&self.path("kubeconfig")))
    }

    fn run(&self, run: Run) -> Outcome {
        run.output()
    }

    fn archive(&self, image: &Image) -> String {
        let path = self.path("img.tar");
        image.write(Format::DockerLegacy, Path::new(&path), &["myimg:dev"]);
        path
    }

    /// Asserts a clean push printed the internal ref of what landed under `repo:tag`.
    fn assert_pushed(&self, run: &Outcome, repo: &str, image: &Image) {
        run.assert_clean_success();
        let bytes = self
            .front
            .registry
            .skopeo_raw_manifest(&format!("{repo}:dev"));
        let digest = fixtures::sha256(&bytes);
        let reference = format!("{INTERNAL}/{repo}:dev@{digest}");
        assert_eq!(run.stdout, format!("{reference}\n"));
        // The nodes pull from the internal service name, as OpenShift's do.
        Node::start_mirroring(&self.front.registry, INTERNAL).assert_pulls(&reference, image);
    }
}

fn granted(password: &str) -> TokenRequest {
    TokenRequest {
        password: Some(password.to_string()),
        granted: true,
    }
}

#[test]
fn push_goes_to_the_route_in_the_contexts_project_and_prints_the_internal_ref() {
    let cluster = Openshift::start(&[USER_TOKEN]);
    let image = Image::sample(70);
    let path = cluster.archive(&image);
    let run = cluster.run(cluster.cmd().args(["push", &path]));
    cluster.assert_pushed(&run, "myproject/myimg", &image);

    assert_eq!(
        cluster.api.requests(),
        [CONFIGMAP_GET, MINIKUBE_SERVICE_GET, IMAGE_CONFIG_GET]
    );
    assert!(
        cluster
            .api
            .authorizations()
            .iter()
            .all(|a| a.as_deref() == Some(&format!("Bearer {USER_TOKEN}"))),
        "the API server got {:?}",
        cluster.api.authorizations()
    );
    let tokens = cluster.front.token_requests();
    assert!(!tokens.is_empty());
    assert!(
        tokens.iter().all(|t| *t == granted(USER_TOKEN)),
        "the registry's token endpoint got {tokens:?}"
    );
    assert!(
        cluster
            .front
            .proxied()
            .contains(&"PUT /v2/myproject/myimg/manifests/dev".to_string())
    );
}

#[test]
fn the_namespace_flag_picks_the_project() {
    let cluster = Openshift::start(&[USER_TOKEN]);
    let image = Image::sample(71);
    let path = cluster.archive(&image);
    let run = cluster.run(cluster.cmd().args(["push", &path, "-n", "team-a"]));
    cluster.assert_pushed(&run, "team-a/myimg", &image);
}

#[test]
fn docker_credentials_for_the_route_win_over_the_cluster_token() {
    let cluster = Openshift::start(&["route-token"]);
    let image = Image::sample(72);
    let path = cluster.archive(&image);

    let refused = cluster.run(cluster.cmd().args(["push", &path]));
    assert_eq!((refused.code, refused.stdout.as_str()), (5, ""));
    refused.assert_stderr(str![[r#"
error: reaching the registry 127.0.0.1:[PORT]
caused by: wrong or missing credentials for 127.0.0.1:[PORT]: the token of kubeconfig context "myproject/api-crc-testing:6443/developer" was refused
caused by: the registry answered 401 Unauthorized: UNAUTHORIZED: authentication required
hint: this cluster's registry guide: https://docs.redhat.com/en/documentation/openshift_container_platform/latest/html/registry/securing-exposing-registry
hint: log in again with `oc login` (the registry takes the same token), or run `docker login 127.0.0.1:[PORT]` with an account allowed to push to project myproject

"#]]);

    let docker = cluster.dir.path().join("docker");
    std::fs::create_dir(&docker).unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode("developer:route-token");
    std::fs::write(
        docker.join("config.json"),
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#,
            cluster.front.host()
        ),
    )
    .unwrap();
    let run = cluster.run(
        cluster
            .cmd()
            .env("DOCKER_CONFIG", &docker)
            .args(["push", &path]),
    );
    cluster.assert_pushed(&run, "myproject/myimg", &image);
    assert!(
        cluster
            .front
            .token_requests()
            .iter()
            .any(|t| *t == granted("route-token"))
    );
}

#[test]
fn info_names_openshift_local_the_route_and_the_project() {
    let cluster = Openshift::start(&[USER_TOKEN]);
    let run = cluster.run(cluster.cmd().arg("info"));
    run.assert_stdout(str![[r#"
context:              myproject/api-crc-testing:6443/developer
cluster:              api-crc-testing:6443
server:               https://127.0.0.1:[PORT]
product:              OpenShift Local
registry host:        127.0.0.1:[PORT]
runtime host:         image-registry.openshift-image-registry.svc:5000
cluster-network host: image-registry.openshift-image-registry.svc:5000
help:                 https://docs.redhat.com/en/documentation/openshift_container_platform/latest/html/registry/securing-exposing-registry
source:               OpenShift's images.config.openshift.io/cluster
network:              host (outside the cluster: a kubeconfig context)
push:                 push to 127.0.0.1:[PORT] as myproject/NAME and print refs on image-registry.openshift-image-registry.svc:5000

"#]]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));

    let json = cluster.run(cluster.cmd().args(["info", "-o", "json"]));
    json.assert_stdout(str![[r#"
{
  "context": "myproject/api-crc-testing:6443/developer",
  "cluster": "api-crc-testing:6443",
  "server": "https://127.0.0.1:[PORT]",
  "product": {
    "kind": "openshift-local",
    "clusterName": null
  },
  "registry": {
    "host": "127.0.0.1:[PORT]",
    "hostFromContainerRuntime": "image-registry.openshift-image-registry.svc:5000",
    "hostFromClusterNetwork": "image-registry.openshift-image-registry.svc:5000",
    "help": "https://docs.redhat.com/en/documentation/openshift_container_platform/latest/html/registry/securing-exposing-registry",
    "source": "openshift"
  },
  "registryGuide": null,
  "push": {
    "method": "registry",
    "network": "host",
    "networkReason": "kubeconfig",
    "host": "127.0.0.1:[PORT]",
    "description": "push to 127.0.0.1:[PORT] as myproject/NAME and print refs on image-registry.openshift-image-registry.svc:5000"
  }
}

"#]]);
    let report = json.json();
    assert_eq!(
        (
            &report["product"],
            &report["registry"]["source"],
            &report["registry"]["hostFromContainerRuntime"]
        ),
        (
            &serde_json::json!({"kind": "openshift-local", "clusterName": null}),
            &serde_json::json!("openshift"),
            &serde_json::json!(INTERNAL)
        )
    );
}

#[test]
fn real_kubectl_reads_the_stand_ins_image_config() {
    let cluster = Openshift::start(&[USER_TOKEN]);
    let output = Run::program("kubectl", cluster.dir.path())
        .kubeconfig(Path::new(&cluster.path("kubeconfig")))
        .args(["get", "images.config.openshift.io", "cluster", "-o", "json"])
        .output();
    assert_eq!(output.code, 0, "kubectl: {}", output.stderr);
    output.assert_stdout(str![[r#"
{
    "apiVersion": "config.openshift.io/v1",
    "kind": "Image",
    "metadata": {
        "annotations": {
            "include.release.openshift.io/self-managed-high-availability": "true",
            "release.openshift.io/create-only": "true"
        },
        "creationTimestamp": "2025-01-01T00:00:00Z",
        "generation": 1,
        "name": "cluster",
        "resourceVersion": "1",
        "uid": "00000000-0000-4000-8000-000000000007"
    },
    "spec": {},
    "status": {
        "externalRegistryHostnames": [
            "127.0.0.1:[PORT]"
        ],
        "internalRegistryHostname": "image-registry.openshift-image-registry.svc:5000"
    }
}

"#]]);
    let object = output.json();
    assert_eq!(
        (&object["kind"], &object["status"]),
        (
            &serde_json::json!("Image"),
            &serde_json::json!({
                "internalRegistryHostname": INTERNAL,
                "externalRegistryHostnames": [redact(&cluster.front.host())],
            })
        )
    );
}

#[test]
fn a_route_signed_by_the_ingress_ca_is_trusted_with_the_ca_file_the_hint_names() {
    let certs = tempfile::tempdir().unwrap();
    let cluster = Openshift::with_front(OpenshiftRegistry::start_tls(&[USER_TOKEN], certs.path()));
    let image = Image::sample(73);
    let path = cluster.archive(&image);

    let untrusted = cluster.run(cluster.cmd().args(["push", &path]));
    assert_eq!((untrusted.code, untrusted.stdout.as_str()), (5, ""));
    untrusted.assert_stderr(str![[r#"
error: reaching the registry 127.0.0.1:[PORT]
caused by: the TLS certificate of 127.0.0.1:[PORT] is not trusted
caused by: invalid peer certificate: UnknownIssuer
hint: this cluster's registry guide: https://docs.redhat.com/en/documentation/openshift_container_platform/latest/html/registry/securing-exposing-registry
hint: OpenShift's routes are signed by the cluster's ingress CA: save it with `oc get configmap -n openshift-config-managed default-ingress-cert -o jsonpath='{.data.ca-bundle\.crt}' > ingress-ca.crt` and pass --ca-file ingress-ca.crt
hint: pass --ca-file with the CA that signed the registry's certificate, or --insecure to skip the check

"#]]);
    assert!(
        cluster.front.proxied().is_empty(),
        "something reached the registry"
    );

    let ca_file = cluster.front.ca_file();
    let trusted =
        cluster.run(
            cluster
                .cmd()
                .args(["push", &path, "--ca-file", ca_file.to_str().unwrap()]),
        );
    cluster.assert_pushed(&trusted, "myproject/myimg", &image);
    assert!(
        cluster
            .front
            .token_requests()
            .iter()
            .all(|t| *t == granted(USER_TOKEN))
    );
}

#[test]
fn doctor_probes_the_route_in_the_project_with_the_cluster_token() {
    let cluster = Openshift::start(&[USER_TOKEN]);
    let run = cluster.run(cluster.cmd().arg("doctor"));
    run.assert_stdout(str![[r#"
✓ kubeconfig: [ROOT]/kubeconfig (from KUBECONFIG), context myproject/api-crc-testing:6443/developer
✓ api-server: https://127.0.0.1:[PORT] answered in [ELAPSED] ms (Kubernetes v1.32.0)
✓ discovery: OpenShift's images.config.openshift.io/cluster: host 127.0.0.1:[PORT], hostFromContainerRuntime image-registry.openshift-image-registry.svc:5000, hostFromClusterNetwork image-registry.openshift-image-registry.svc:5000, help https://docs.redhat.com/en/documentation/openshift_container_platform/latest/html/registry/securing-exposing-registry
✓ registry: 127.0.0.1:[PORT] answers GET /v2/ over http
✓ round-trip: pushed the probe image (704 bytes) to 127.0.0.1:[PORT]/myproject/kubectl-registry-probe:doctor, read it back by digest sha256:[DIGEST]…, then deleted
– nodes: pods will pull from image-registry.openshift-image-registry.svc:5000, the registry's service name, which OpenShift's nodes resolve themselves; not checked from a node
    hint: this cluster's registry guide: https://docs.redhat.com/en/documentation/openshift_container_platform/latest/html/registry/securing-exposing-registry
    hint: `kubectl registry doctor --pod` pulls the probe image from a node
– node-load: not needed: push uses the registry

"#]]);
    assert_eq!(
        redactions().redact(&run.stdout),
        format!(
            "\
✓ kubeconfig: [ROOT]/kubeconfig (from KUBECONFIG), context {CONTEXT}
✓ api-server: https://127.0.0.1:[PORT] answered in [ELAPSED] ms (Kubernetes v1.32.0)
✓ discovery: OpenShift's images.config.openshift.io/cluster: host 127.0.0.1:[PORT], hostFromContainerRuntime {INTERNAL}, hostFromClusterNetwork {INTERNAL}, help {GUIDE}
✓ registry: 127.0.0.1:[PORT] answers GET /v2/ over http
✓ round-trip: pushed the probe image (704 bytes) to 127.0.0.1:[PORT]/myproject/kubectl-registry-probe:doctor, read it back by digest sha256:[DIGEST]…, then deleted
– nodes: pods will pull from {INTERNAL}, the registry's service name, which OpenShift's nodes resolve themselves; not checked from a node
    hint: this cluster's registry guide: {GUIDE}
    hint: `kubectl registry doctor --pod` pulls the probe image from a node
– node-load: not needed: push uses the registry
"
        )
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert!(
        cluster
            .front
            .proxied()
            .contains(&"PUT /v2/myproject/kubectl-registry-probe/manifests/doctor".to_string()),
        "{:?}",
        cluster.front.proxied()
    );
    assert!(
        !cluster.front.token_requests().is_empty()
            && cluster
                .front
                .token_requests()
                .iter()
                .all(|t| *t == granted(USER_TOKEN))
    );
}

#[test]
fn a_pod_pushes_to_the_internal_registry_with_its_service_account_token() {
    const ACCOUNT_TOKEN: &str = "builder-service-account-token";
    let front = OpenshiftRegistry::start(&[ACCOUNT_TOKEN]);
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("api-certs");
    std::fs::create_dir(&certs).unwrap();
    make_certificates(&certs);
    // Inside the cluster the service name is what reaches the registry: here, the front.
    let route = format!("127.0.0.1:{}", unused_port());
    let api = ApiServer::builder()
        .require_token(ACCOUNT_TOKEN)
        .tls(&certs.join("server.crt"), &certs.join("server.key"))
        .openshift(&front.host(), &[&route])
        .start();
    let account = dir.path().join("serviceaccount");
    std::fs::create_dir(&account).unwrap();
    std::fs::write(account.join("token"), ACCOUNT_TOKEN).unwrap();
    std::fs::copy(certs.join("certs/ca.crt"), account.join("ca.crt")).unwrap();
    std::fs::write(account.join("namespace"), "ci-builds").unwrap();
    let image = Image::sample(74);
    let path = dir.path().join("img.tar");
    image.write(Format::DockerLegacy, &path, &["myimg:dev"]);

    let run = clean_run(dir.path())
        .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        .env("KUBERNETES_SERVICE_PORT", api.port().to_string())
        .env("KUBECTL_REGISTRY_SERVICEACCOUNT_DIR", &account)
        .args(["push", path.to_str().unwrap()])
        .output();
    run.assert_clean_success();
    let bytes = front.registry.skopeo_raw_manifest("ci-builds/myimg:dev");
    let digest = fixtures::sha256(&bytes);
    assert_eq!(
        run.stdout,
        redact(&format!("{}/ci-builds/myimg:dev@{digest}\n", front.host()))
    );
    let tokens = front.token_requests();
    assert!(
        !tokens.is_empty() && tokens.iter().all(|t| *t == granted(ACCOUNT_TOKEN)),
        "the registry's token endpoint got {tokens:?}"
    );
}

/// OpenShift's registry without a route: from outside the cluster push tunnels to Service
/// `openshift-image-registry/image-registry` through the API server, speaks TLS to its name,
/// trusts the service CA OpenShift publishes in the namespace (`openshift-service-ca.crt`), and
/// logs in with the cluster token at the realm the registry names on that host.
#[test]
fn without_a_route_the_internal_registry_is_pushed_to_over_tls_through_the_tunnel() {
    let dir = tempfile::tempdir().unwrap();
    let front = OpenshiftRegistry::start_tls_naming(
        &[USER_TOKEN],
        dir.path(),
        "DNS:image-registry.openshift-image-registry.svc,DNS:image-registry.openshift-image-registry.svc.cluster.local",
    );
    let service_ca = std::fs::read_to_string(front.ca_file()).unwrap();
    let cluster = Openshift::with_cluster(front, false, |api, front| {
        let namespace = "openshift-image-registry";
        let mut pod = crate::support::cluster_objects::running_pod(
            "image-registry-66f5c7d4b8-lq2xz",
            serde_json::json!({"docker-registry": "default"}),
            serde_json::json!([{"name": "registry", "image": "quay.io/openshift/origin-docker-registry",
                                "ports": [{"containerPort": 5000, "protocol": "TCP"}]}]),
        );
        pod["metadata"]["namespace"] = serde_json::json!(namespace);
        api.openshift(INTERNAL, &[])
            .object(serde_json::json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "image-registry", "namespace": namespace},
                "spec": {"selector": {"docker-registry": "default"},
                         "ports": [{"name": "5000-tcp", "port": 5000, "targetPort": 5000}]},
            }))
            .object(pod)
            .object(serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "openshift-service-ca.crt", "namespace": namespace},
                "data": {"service-ca.crt": service_ca},
            }))
            .forward(
                namespace,
                "image-registry-66f5c7d4b8-lq2xz",
                5000,
                front.host().parse().unwrap(),
            )
    });
    let image = Image::sample(91);
    let path = cluster.archive(&image);
    let run = cluster.run(cluster.cmd().args(["push", &path, "-v"]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.assert_stderr(str![[r#"
ConfigMap kube-public/local-registry-hosting not found
no readable Service kube-system/registry of minikube's registry addon
images.config.openshift.io/cluster names no external hostname: the registry has no route, so only the cluster network reaches it (from outside, through a tunnel to its Service)
pushing through a tunnel to Service openshift-image-registry/image-registry port 5000 through the API server: OpenShift's registry has no route (images.config.openshift.io/cluster names no external hostname)
tunnel: trusting the cluster's service CA of namespace openshift-image-registry for the registry
tunnel: 127.0.0.1:[PORT] -> a port-forward to pod openshift-image-registry/image-registry-66f5c7d4b8-lq2xz port 5000 of Service openshift-image-registry/image-registry port 5000, through the API server
tunnel: the registry behind Service openshift-image-registry/image-registry port 5000 is spoken to as image-registry.openshift-image-registry.svc over TLS, its certificate checked for the Service's name
pushed 4 blobs (643.1 KB), 0 blobs already there, in [ELAPSED]s

"#]]);
    let tokens = cluster.front.token_requests();
    assert!(
        !tokens.is_empty() && tokens.iter().all(|t| *t == granted(USER_TOKEN)),
        "the registry's token endpoint got {tokens:?}"
    );
    let bytes = cluster
        .front
        .registry
        .skopeo_raw_manifest("myproject/myimg:dev");
    let digest = fixtures::sha256(&bytes);
    assert_eq!(
        run.stdout,
        format!("{INTERNAL}/myproject/myimg:dev@{digest}\n")
    );
}
