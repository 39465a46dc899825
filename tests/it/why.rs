//! `kubectl registry why pod/NAME` end to end: the stand-in API server holds the pod, and its
//! kubelet pulls the pod's image with a real containerd (`ctr images pull` through the node's
//! `hosts.toml`, as a kind node does), writing the status and events a kubelet writes with
//! containerd's own words; the real registry holds what was pushed. Each cause is named with its
//! evidence and fix, and the exit code is its area's.

use snapbox::str;
use std::path::Path;
use std::sync::Arc;

use tempfile::TempDir;

use crate::support::apiserver::{ApiServer, StandInNode, unused_port};
use crate::support::containerd::Containerd;
use crate::support::fixtures::{Format, Image};
use crate::support::layouts::Layout;
use crate::support::push::{
    RUNTIME_HOST, clean_run, cluster_with_web, docker_config_in, hosting_yaml,
};
use crate::support::registry::TestRegistry;
use crate::support::run::{Outcome, Run};
use crate::support::standins::StandIns;
use crate::support::why_report::report;

/// The stand-in API server's one node, where the pods run.
const NODE: Option<&str> = Some("stand-in-node");

/// How the node's containerd reaches `kind-registry:5000`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mapping {
    /// kind's local-registry script: plain HTTP to the registry.
    Http,
    /// A mapping that forgot the scheme: containerd speaks HTTPS to the plain HTTP registry.
    Https,
    /// No hosts.toml: the name is looked up in DNS.
    None,
    /// kind's mapping, the runtime pulling from its own network namespace, where this
    /// machine's loopback (and so the host we push to) is not.
    HttpFromElsewhere,
    /// HTTPS to a TLS registry, the node given the registry's CA (`ca` in hosts.toml) or not.
    Tls { node_trusts: bool },
    /// A mapping to a loopback port nothing listens on: the runtime's connection is refused.
    Refused,
}

/// kind's hosts.toml: the runtime name as the server, reached at `host` over `scheme`.
fn mirror(scheme: &str, host: &str) -> String {
    format!(
        "server = \"{scheme}://{RUNTIME_HOST}\"\n[host.\"{scheme}://{host}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
    )
}

struct WhyBench {
    registry: TestRegistry,
    api: ApiServer,
    node: Arc<Containerd>,
    dir: TempDir,
    kubeconfig: std::path::PathBuf,
}

impl WhyBench {
    fn new(registry: TestRegistry, mapping: Mapping) -> Self {
        let dir = TempDir::new().unwrap();
        let hosts = dir.path().join("certs.d");
        let runtime_dir = hosts.join(RUNTIME_HOST);
        std::fs::create_dir_all(&runtime_dir).unwrap();
        let hosts_toml = match mapping {
            Mapping::Http | Mapping::HttpFromElsewhere => Some(mirror("http", &registry.host())),
            Mapping::Https => Some(mirror("https", &registry.host())),
            Mapping::Refused => Some(mirror("http", &format!("127.0.0.1:{}", unused_port()))),
            // The registry as the host and as the server (no fallback to a name this node
            // cannot resolve), with its CA for both when the node trusts it.
            Mapping::Tls { node_trusts } => {
                let ca = if node_trusts {
                    format!("ca = \"{}\"\n", registry.ca_file().display())
                } else {
                    String::new()
                };
                let url = format!("https://{}", registry.host());
                Some(format!(
                    "server = \"{url}\"\n{ca}[host.\"{url}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  {ca}"
                ))
            }
            Mapping::None => None,
        };
        if let Some(hosts_toml) = hosts_toml {
            std::fs::write(runtime_dir.join("hosts.toml"), hosts_toml).unwrap();
        }
        let node = Arc::new(Containerd::start());
        let kubelet_node = Arc::clone(&node);
        let api = cluster_with_web(&registry.host(), 2)
            .kubelet(move |image| {
                if mapping == Mapping::HttpFromElsewhere {
                    kubelet_node.pull_from_elsewhere(image, &hosts)
                } else {
                    kubelet_node.pull(image, &hosts)
                }
            })
            .start();
        let kubeconfig = api.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
        Self {
            registry,
            api,
            node,
            dir,
            kubeconfig,
        }
    }

    fn cmd(&self) -> Run {
        clean_run(self.dir.path()).kubeconfig(&self.kubeconfig)
    }

    /// Pushes `image` as `myimg:dev` with our binary; the printed ref.
    fn push(&self, image: &Image, extra_env: &[(&str, &Path)]) -> String {
        self.push_with(image, extra_env, &[])
    }

    /// Like [`Self::push`], with more arguments to push (`--ca-file`).
    fn push_with(&self, image: &Image, extra_env: &[(&str, &Path)], args: &[&str]) -> String {
        let archive = self.dir.path().join("img.tar");
        image.write(Format::DockerLegacy, &archive, &["myimg:dev"]);
        self.push_archive_with(&archive, extra_env, args)
    }

    /// Pushes `archive` as `myimg:dev` with our binary; the printed ref.
    fn push_archive(&self, archive: &Path, extra_env: &[(&str, &Path)]) -> String {
        self.push_archive_with(archive, extra_env, &[])
    }

    fn push_archive_with(
        &self,
        archive: &Path,
        extra_env: &[(&str, &Path)],
        args: &[&str],
    ) -> String {
        let run = self
            .cmd()
            .envs(extra_env.iter().copied())
            .args(["push", archive.to_str().unwrap(), "--tag", "myimg:dev"])
            .args(args)
            .output();
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.stdout.trim().to_string()
    }

    fn why(&self, args: &[&str]) -> Outcome {
        self.cmd().arg("why").args(args).output()
    }

    /// Creates pod `web` running `image`, and asks `why pod/web -o json` with `args` more.
    fn why_web(&self, image: &str, args: &[&str]) -> Outcome {
        self.api.create_pod("web", image, None);
        self.why(&[&["pod/web", "-o", "json"][..], args].concat())
    }
}

#[test]
fn a_pod_whose_image_was_pulled_has_no_cause_and_exits_0() {
    let bench = WhyBench::new(TestRegistry::start(), Mapping::Http);
    let reference = bench.push(&Image::sample(141), &[]);
    let run = bench.why_web(&reference, &[]);
    report(&run, 0, "web", NODE).finding(str![[r#"
"image": "kind-registry:5000/myimg:dev@sha256:[DIGEST]",
"cause": null,
"explanation": "its image was pulled; it waits for another reason: CreateContainerError: failed to generate container spec: no command specified",
"fix": null

"#]]);
    assert_eq!(run.stderr, "", "{run:?}");
    assert_eq!(run.json()["containers"][0]["image"], reference.as_str());
    assert!(
        bench.node.images().contains(&reference),
        "the node pulled it"
    );
}

#[test]
fn an_image_named_by_the_host_we_push_to_is_wrong_host_with_the_right_ref() {
    let bench = WhyBench::new(TestRegistry::start(), Mapping::HttpFromElsewhere);
    bench.push(&Image::sample(142), &[]);
    let image = format!("{}/myimg:dev", bench.registry.host());
    bench.api.create_pod("web", &image, None);
    let run = bench.why(&["web"]);
    assert_eq!(run.code, 3, "{run:?}");
    run.assert_stdout(str![[r#"
pod default/web on node stand-in-node
✗ web (127.0.0.1:[PORT]/myimg:dev): wrong-host
    why: the image names the registry as 127.0.0.1:[PORT], which is where it is reached from this machine; the nodes' container runtime reaches it as kind-registry:5000
    fix: use image kind-registry:5000/myimg:dev in the pod spec

"#]]);
    run.assert_stderr(str![[r#"
error: pod default/web: 1 container cannot start its image (web)

"#]]);
}

#[test]
fn a_tag_never_pushed_is_not_in_registry_with_the_push_command() {
    let bench = WhyBench::new(TestRegistry::start(), Mapping::Http);
    bench.push(&Image::sample(143), &[]);
    let run = bench.why_web("kind-registry:5000/myimg:other", &[]);
    report(&run, 5, "web", NODE).finding(str![[r#"
"image": "kind-registry:5000/myimg:other",
"cause": "not-in-registry",
"explanation": "the registry has no tag other in repository myimg",
"fix": "push it: kubectl registry push IMAGE --tag myimg:other"

"#]]);
}

#[test]
fn a_node_without_the_mapping_is_registry_not_mapped_with_the_snippet() {
    for (mapping, symptom, error) in [
        (Mapping::None, "resolve the name", "no such host"),
        (
            Mapping::Https,
            "talk HTTPS to the plain HTTP registry at",
            "server gave HTTP response to HTTPS client",
        ),
        (
            Mapping::Refused,
            "connect to",
            "dial tcp 127.0.0.1:[PORT]: connect: connection refused",
        ),
    ] {
        let bench = WhyBench::new(TestRegistry::start(), mapping);
        let reference = bench.push(&Image::sample(144), &[]);
        let run = bench.why_web(&reference, &[]);
        assert_eq!(run.code, 6, "{run:?}");
        let container = &run.json()["containers"][0];
        assert_eq!(container["cause"], "registry-not-mapped");
        let explanation = container["explanation"].as_str().unwrap();
        assert!(
            explanation.starts_with(&format!(
                "the node's container runtime cannot {symptom} kind-registry:5000: Failed: Failed to pull image"
            )) && explanation.ends_with(error),
            "{explanation}"
        );
        assert_eq!(
            container["fix"],
            "map kind-registry:5000 on each node's containerd to the registry (kind: \
             /etc/containerd/certs.d/kind-registry:5000/hosts.toml):\n\
             server = \"http://kind-registry:5000\"\n\
             [host.\"http://kind-registry:5000\"]\n  capabilities = [\"pull\", \"resolve\"]"
        );
    }
}

#[test]
fn a_node_not_trusting_the_registrys_certificate_is_registry_not_mapped_with_the_ca() {
    let bench = WhyBench::new(
        TestRegistry::with_tls(),
        Mapping::Tls { node_trusts: false },
    );
    let ca_file = bench.registry.ca_file();
    let ca_file = ca_file.to_str().unwrap();
    let reference = bench.push_with(&Image::sample(151), &[], &["--ca-file", ca_file]);
    let run = bench.why_web(&reference, &["--ca-file", ca_file]);
    report(&run, 6, "web", NODE).finding(str![[r#"
"image": "kind-registry:5000/myimg:dev@sha256:[DIGEST]",
"cause": "registry-not-mapped",
"explanation": "the node's container runtime cannot verify the TLS certificate of kind-registry:5000: Failed: Failed to pull image \"kind-registry:5000/myimg:dev@sha256:[DIGEST]\": failed to resolve reference \"kind-registry:5000/myimg:dev@sha256:[DIGEST]\": failed to do request: Head \"https://127.0.0.1:[PORT]/v2/myimg/manifests/sha256:[DIGEST]?ns=kind-registry%3A5000\": x509: certificate signed by unknown authority",
"fix": "give each node's containerd the CA that signed the registry's certificate, beside its mapping (kind: /etc/containerd/certs.d/kind-registry:5000/ca.crt and /etc/containerd/certs.d/kind-registry:5000/hosts.toml):\nserver = \"https://kind-registry:5000\"\n[host.\"https://kind-registry:5000\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"/etc/containerd/certs.d/kind-registry:5000/ca.crt\""

"#]]);
}

#[test]
fn a_tls_registry_is_asked_with_ca_file_or_insecure_as_push_asks_it() {
    let bench = WhyBench::new(TestRegistry::with_tls(), Mapping::Tls { node_trusts: true });
    let ca_file = bench.registry.ca_file();
    let ca_file = ca_file.to_str().unwrap();
    bench.push_with(&Image::sample(150), &[], &["--ca-file", ca_file]);
    // Without either flag, the registry's certificate is not trusted: it could not be asked.
    let run = bench.why_web("kind-registry:5000/myimg:other", &[]);
    report(&run, 3, "web", NODE).finding(str![[r#"
"image": "kind-registry:5000/myimg:other",
"cause": "other",
"explanation": "the kubelet says: Failed: Failed to pull image \"kind-registry:5000/myimg:other\": failed to resolve reference \"kind-registry:5000/myimg:other\": kind-registry:5000/myimg:other: not found (the registry could not be asked whether it holds the image (reaching the registry 127.0.0.1:[PORT]: the TLS certificate of 127.0.0.1:[PORT] is not trusted: invalid peer certificate: UnknownIssuer))",
"fix": null

"#]]);
    for flags in [&["--ca-file", ca_file][..], &["--insecure"][..]] {
        let args: Vec<&str> = ["pod/web", "-o", "json"]
            .iter()
            .chain(flags)
            .copied()
            .collect();
        let run = bench.why(&args);
        assert_eq!(run.code, 5, "{flags:?}: {run:?}");
        let container = &run.json()["containers"][0];
        assert_eq!(
            container["cause"], "not-in-registry",
            "{flags:?}: {container}"
        );
        assert_eq!(
            container["explanation"],
            "the registry has no tag other in repository myimg"
        );
    }
}

#[test]
fn a_registry_refusing_the_node_is_unauthorized() {
    let bench = WhyBench::new(
        TestRegistry::with_basic_auth("kind", "right"),
        Mapping::Http,
    );
    let config = docker_config_in(
        &bench.dir.path().join("docker-config"),
        &bench.registry.host(),
        "kind",
        "right",
    );
    let reference = bench.push(&Image::sample(145), &[("DOCKER_CONFIG", &config)]);
    let run = bench.why_web(&reference, &[]);
    report(&run, 5, "web", NODE).finding(str![[r#"
"image": "kind-registry:5000/myimg:dev@sha256:[DIGEST]",
"cause": "unauthorized",
"explanation": "the registry refused the node's pull: Failed: Failed to pull image \"kind-registry:5000/myimg:dev@sha256:[DIGEST]\": failed to resolve reference \"kind-registry:5000/myimg:dev@sha256:[DIGEST]\": pulling from host 127.0.0.1:[PORT] failed with status code [manifests sha256:[DIGEST]]: 401 Unauthorized",
"fix": "give the pod an imagePullSecret for kind-registry:5000 (kubectl create secret docker-registry), or let the registry serve pulls without credentials"

"#]]);
}

#[test]
fn an_unparsable_reference_is_invalid_name() {
    let bench = WhyBench::new(TestRegistry::start(), Mapping::Http);
    let run = bench.why_web("kind-registry:5000/MyImg:dev", &[]);
    report(&run, 3, "web", NODE).finding(str![[r#"
"image": "kind-registry:5000/MyImg:dev",
"cause": "invalid-name",
"explanation": "the image reference does not parse: \"kind-registry:5000/MyImg:dev\" is not an image name: each path component is lowercase letters and digits, joined by '.', '_', '__' or '-'",
"fix": "use image kind-registry:5000/myimg:dev in the pod spec (repository names are lower case; the tag is kept)"

"#]]);
}

#[test]
fn a_missing_pod_is_named_with_its_namespace() {
    let bench = WhyBench::new(TestRegistry::start(), Mapping::Http);
    let run = bench.why(&["pod/nothere"]);
    assert_eq!((run.code, run.stdout.as_str()), (3, ""), "{run:?}");
    run.assert_stderr(str![[r#"
error: pod default/nothere not found
hint: name the namespace with -n NAMESPACE; `kubectl get pods -n default` lists them

"#]]);
}

#[test]
fn an_image_without_a_build_for_the_nodes_arch_is_platform_mismatch() {
    let bench = WhyBench::new(TestRegistry::start(), Mapping::Http);
    // An index with builds for arm64 and arm/v7 only, as `buildx --platform` writes one.
    let mut layout = Layout::new();
    let arm64 = layout.image(&Image::sample_for(146, "linux/arm64"));
    let arm = layout.image(&Image::sample_for(147, "linux/arm/v7"));
    let (index, _) = layout.index(&[arm64, arm]);
    layout.entry(&index, Some("dev"));
    let archive = bench.dir.path().join("arm.tar");
    layout.write_tar(&archive);
    let reference = bench.push_archive(&archive, &[]);
    let run = bench.why_web(&reference, &[]);
    report(&run, 5, "web", NODE).finding(str![[r#"
"image": "kind-registry:5000/myimg:dev@sha256:[DIGEST]",
"cause": "platform-mismatch",
"explanation": "the image has no build for node stand-in-node's architecture amd64 (it has: linux/arm64, linux/arm/v7)",
"fix": "build it for linux/amd64 (docker buildx build --platform linux/amd64) and push it again"

"#]]);
}

/// A cluster advertising no registry, its node's runtime pulling from a network of its own
/// (no way out), as a kind node without a registry: images come by `kind load` only.
fn without_registry() -> (ApiServer, Arc<Containerd>, TempDir) {
    let dir = TempDir::new().unwrap();
    let hosts = dir.path().join("certs.d");
    std::fs::create_dir_all(&hosts).unwrap();
    let node = Arc::new(Containerd::start());
    let kubelet_node = Arc::clone(&node);
    let api = ApiServer::builder()
        .node(StandInNode::new("stand-in-node").provider_id("kind://docker/dev/stand-in-node"))
        .kubelet(move |image| kubelet_node.pull_from_elsewhere(image, &hosts))
        .start();
    (api, node, dir)
}

/// `why POD -o json` run by `cmd`.
fn why_json(run: Run, pod: &str) -> Outcome {
    run.args(["why", pod, "-o", "json"]).output()
}

#[test]
fn without_a_registry_a_digest_or_latest_after_a_load_is_named() {
    let (api, _node, dir) = without_registry();
    let kubeconfig = api.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
    let digest = format!("sha256:{}", "ab".repeat(32));
    api.create_pod("pinned", &format!("myimg:dev@{digest}"), None);
    api.create_pod("latest", "myimg:latest", None);
    api.create_pod("always", "myimg:dev-0123456789ab", Some("Always"));
    let why = |pod: &str| why_json(clean_run(dir.path()).kubeconfig(&kubeconfig), pod);
    report(&why("pod/pinned"), 6, "pinned", NODE).finding(str![[r#"
"image": "myimg:dev@sha256:[DIGEST]",
"cause": "digest-after-load",
"explanation": "the cluster has no registry, and an image loaded into the nodes is found by its name: a digest ref is looked up in a registry, which the nodes do not have",
"fix": "use the ref `kubectl registry push` printed (a content tag, NAME:TAG-<12 hex>), or the name the image was loaded under, e.g. myimg:dev, not a digest"

"#]]);
    report(&why("pod/latest"), 3, "latest", NODE).finding(str![[r#"
"image": "myimg:latest",
"cause": "pull-policy",
"explanation": "the cluster has no registry, and the kubelet pulls this image instead of using the loaded one: its tag is latest, whose default imagePullPolicy is Always",
"fix": "set imagePullPolicy: IfNotPresent (or Never), and use the content tag `kubectl registry push` printed"

"#]]);
    report(&why("always"), 3, "always", NODE).finding(str![[r#"
"image": "myimg:dev-0123456789ab",
"cause": "pull-policy",
"explanation": "the cluster has no registry, and the kubelet pulls this image instead of using the loaded one: its imagePullPolicy is Always",
"fix": "set imagePullPolicy: IfNotPresent (or Never), and use the content tag `kubectl registry push` printed"

"#]]);
}

#[test]
fn an_image_of_another_registry_is_other_with_the_kubelets_words() {
    let bench = WhyBench::new(TestRegistry::start(), Mapping::HttpFromElsewhere);
    bench.api.create_pod("web", "quay.io/someone/app:1.0", None);
    let run = bench.why(&["pod/web"]);
    run.assert_stdout(str![[r#"
pod default/web on node stand-in-node
✗ web (quay.io/someone/app:1.0): other
    why: the kubelet says: Failed: Failed to pull image "quay.io/someone/app:1.0": failed to resolve reference "quay.io/someone/app:1.0": failed to do request: Head "https://quay.io/v2/someone/app/manifests/1.0": dial tcp: lookup quay.io on 10.255.255.53:53: dial udp 10.255.255.53:53: connect: network is unreachable (the image is not on the cluster's registry)

"#]]);
    assert_eq!(run.code, 3, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines[1], "✗ web (quay.io/someone/app:1.0): other");
    assert!(
        lines[2].starts_with(
            "    why: the kubelet says: Failed: Failed to pull image \"quay.io/someone/app:1.0\": "
        ) && lines[2].ends_with("(the image is not on the cluster's registry)"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_deployment_is_explained_by_its_newest_failing_pod() {
    let registry = TestRegistry::start();
    let bench = WhyBench::new(registry, Mapping::Http);
    let reference = bench.push(&Image::sample(148), &[]);
    // The stand-in's Deployment (selector app=web); its pods are created as its ReplicaSet would.
    bench
        .api
        .create_labelled_pod("web-1", &reference, None, &[("app", "web")]);
    bench.api.create_labelled_pod(
        "web-2",
        "kind-registry:5000/myimg:next",
        None,
        &[("app", "web")],
    );
    bench.api.create_labelled_pod(
        "other",
        "kind-registry:5000/nope:1",
        None,
        &[("app", "other")],
    );
    let run = bench.why(&["deploy/web", "-o", "json"]);
    report(&run, 5, "web-2", NODE).finding(str![[r#"
"image": "kind-registry:5000/myimg:next",
"cause": "not-in-registry",
"explanation": "the registry has no tag next in repository myimg",
"fix": "push it: kubectl registry push IMAGE --tag myimg:next"

"#]]);
    let run = bench.why(&["deploy/nothere"]);
    assert_eq!((run.code, run.stdout.as_str()), (3, ""), "{run:?}");
    run.assert_stderr(str![[r#"
error: deployment default/nothere not found
hint: name the namespace with -n NAMESPACE; `kubectl get deployments -n default` lists them

"#]]);
}

#[test]
fn without_a_registry_an_image_the_node_lacks_is_not_on_node_and_a_loaded_one_is_there() {
    let node = Arc::new(Containerd::start());
    let standins = StandIns::new(&node);
    standins.add_node("stand-in-node", &node);
    let dir = TempDir::new().unwrap();
    let hosts = dir.path().join("certs.d");
    std::fs::create_dir_all(&hosts).unwrap();
    let kubelet_node = Arc::clone(&node);
    // IfNotPresent, as the kubelet does: an image the node holds is not pulled.
    let api = ApiServer::builder()
        .node(StandInNode::new("stand-in-node").provider_id("kind://docker/dev/stand-in-node"))
        .kubelet(move |image| {
            let full = if image.contains('/') {
                format!("docker.io/{image}")
            } else {
                format!("docker.io/library/{image}")
            };
            if kubelet_node.images().contains(&full) {
                Ok(())
            } else {
                kubelet_node.pull_from_elsewhere(&full, &hosts)
            }
        })
        .start();
    let kubeconfig = api.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
    // Loaded as `kind load` loads: ctr images import in the node.
    let archive = dir.path().join("img.tar");
    Image::sample(149).write(Format::DockerLegacy, &archive, &["myimg:dev"]);
    node.import(&archive);
    api.create_pod("loaded", "myimg:dev", Some("IfNotPresent"));
    api.create_pod("missing", "myimg:other", Some("IfNotPresent"));
    let why = |pod: &str| {
        why_json(
            clean_run(dir.path())
                .kubeconfig(&kubeconfig)
                .path(format!("{}:/usr/bin:/bin", standins.bin_dir().display())),
            pod,
        )
    };
    report(&why("loaded"), 0, "loaded", NODE).finding(str![[r#"
"image": "myimg:dev",
"cause": null,
"explanation": "its image was pulled; it waits for another reason: CreateContainerError: failed to generate container spec: no command specified",
"fix": null

"#]]);
    report(&why("missing"), 6, "missing", NODE).finding(str![[r#"
"image": "myimg:other",
"cause": "not-on-node",
"explanation": "the cluster has no registry, and node stand-in-node's containerd holds no docker.io/library/myimg:other (asked with ctr images ls, as node-load asks): the kubelet looked for it elsewhere: Failed: Failed to pull image \"myimg:other\": failed to resolve reference \"docker.io/library/myimg:other\": failed to do request: Head \"https://registry-1.docker.io/v2/library/myimg/manifests/other\": dial tcp: lookup registry-1.docker.io on 10.255.255.53:53: dial udp 10.255.255.53:53: connect: network is unreachable",
"fix": "load it into the nodes: kubectl registry push IMAGE --tag myimg:other (with no registry, push loads the nodes), then use the ref it prints"

"#]]);
}

#[test]
fn a_running_pod_exits_0_saying_it_runs() {
    let image = "kind-registry:5000/myimg:dev@sha256:".to_string() + &"cd".repeat(32);
    let api = ApiServer::builder()
        .hosting_v1(&hosting_yaml("127.0.0.1:5001"))
        .node(StandInNode::new("stand-in-node"))
        .pod("default", "running", "stand-in-node", &[&image], &[&image])
        .start();
    let dir = TempDir::new().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
    let run = clean_run(dir.path())
        .kubeconfig(&kubeconfig)
        .args(["why", "pod/running"])
        .output();
    assert_eq!(run.code, 0);
    run.assert_stdout(str![[r#"
pod default/running on node stand-in-node
✓ c0 (kind-registry:5000/myimg:dev@sha256:[DIGEST]): it runs

"#]]);
    run.assert_stderr(str![]);
}
