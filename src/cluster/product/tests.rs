//! Product detection from what each tool really writes, and every load plan's argv.

use super::*;
use crate::cluster::hosting::KEP_URL;

fn kubeconfig(context: &str, cluster: &str, server: &str) -> KubeconfigFacts {
    KubeconfigFacts {
        context: Some(context.into()),
        cluster: Some(cluster.into()),
        server: Some(server.into()),
    }
}

fn node(name: &str, provider_id: Option<&str>, labels: &[(&str, &str)]) -> NodeFacts {
    let mut all_labels: std::collections::BTreeMap<String, String> = [
        ("kubernetes.io/hostname", name),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
    ]
    .iter()
    .chain(labels)
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    all_labels.insert("beta.kubernetes.io/os".into(), "linux".into());
    NodeFacts {
        name: name.into(),
        provider_id: provider_id.map(str::to_string),
        labels: all_labels,
        annotations: Default::default(),
        container_runtime: None,
    }
}

const K3S_LABELS: &[(&str, &str)] = &[
    ("node.kubernetes.io/instance-type", "k3s"),
    ("node-role.kubernetes.io/control-plane", "true"),
];

fn detected(kind: ProductKind, name: Option<&str>) -> Product {
    product(kind, name)
}

#[test]
fn kind_from_what_kind_writes() {
    let nodes = [
        node(
            "dev-control-plane",
            Some("kind://docker/dev/dev-control-plane"),
            &[("node-role.kubernetes.io/control-plane", "")],
        ),
        node("dev-worker", Some("kind://docker/dev/dev-worker"), &[]),
    ];
    let config = kubeconfig("kind-dev", "kind-dev", "https://127.0.0.1:41235");
    assert_eq!(
        detect(&config, &nodes),
        detected(ProductKind::Kind, Some("dev"))
    );
}

#[test]
fn kind_on_podman_and_kind_before_provider_ids() {
    let podman = [node(
        "dev-control-plane",
        Some("kind://podman/dev/dev-control-plane"),
        &[],
    )];
    let renamed = kubeconfig("work", "work", "https://127.0.0.1:41235");
    assert_eq!(
        detect(&renamed, &podman),
        detected(ProductKind::Kind, Some("dev"))
    );

    // kind < 0.6 wrote `kubernetes-admin@kind` / cluster `kind`, and no providerID.
    let old = kubeconfig("kubernetes-admin@kind", "kind", "https://127.0.0.1:41235");
    let nodes = [node("kind-control-plane", None, &[])];
    assert_eq!(
        detect(&old, &nodes),
        detected(ProductKind::Kind, Some("kind"))
    );
}

#[test]
fn k3d_from_what_k3d_writes() {
    let nodes = [
        node(
            "k3d-dev-server-0",
            Some("k3s://k3d-dev-server-0"),
            K3S_LABELS,
        ),
        node("k3d-dev-agent-0", Some("k3s://k3d-dev-agent-0"), &[]),
    ];
    let config = kubeconfig("k3d-dev", "k3d-dev", "https://0.0.0.0:6550");
    assert_eq!(
        detect(&config, &nodes),
        detected(ProductKind::K3d, Some("dev"))
    );

    let dashed = [node(
        "k3d-my-team-server-12",
        Some("k3s://k3d-my-team-server-12"),
        K3S_LABELS,
    )];
    assert_eq!(
        detect(&config, &dashed),
        detected(ProductKind::K3d, Some("my-team"))
    );
}

#[test]
fn minikube_from_its_profile_label() {
    let labels = [
        ("minikube.k8s.io/name", "minikube"),
        ("minikube.k8s.io/primary", "true"),
        ("minikube.k8s.io/version", "v1.34.0"),
    ];
    let nodes = [node("minikube", None, &labels)];
    let config = kubeconfig("minikube", "minikube", "https://192.168.49.2:8443");
    assert_eq!(
        detect(&config, &nodes),
        detected(ProductKind::Minikube, Some("minikube"))
    );

    // `minikube start -p dev` names everything after the profile; only the label says minikube.
    let labels = [
        ("minikube.k8s.io/name", "dev"),
        ("minikube.k8s.io/primary", "true"),
    ];
    let nodes = [node("dev", None, &labels), node("dev-m02", None, &labels)];
    let config = kubeconfig("dev", "dev", "https://192.168.58.2:8443");
    assert_eq!(
        detect(&config, &nodes),
        detected(ProductKind::Minikube, Some("dev"))
    );
}

#[test]
fn microk8s_from_its_label() {
    let labels = [
        ("microk8s.io/cluster", "true"),
        (
            "node.kubernetes.io/microk8s-controlplane",
            "microk8s-controlplane",
        ),
    ];
    let nodes = [node("laptop", None, &labels)];
    let config = kubeconfig("microk8s", "microk8s-cluster", "https://127.0.0.1:16443");
    assert_eq!(
        detect(&config, &nodes),
        detected(ProductKind::Microk8s, None)
    );
    let renamed = kubeconfig("home", "home", "https://10.0.0.5:16443");
    assert_eq!(
        detect(&renamed, &nodes),
        detected(ProductKind::Microk8s, None)
    );
}

#[test]
fn plain_k3s_from_its_provider_id() {
    let nodes = [node("laptop", Some("k3s://laptop"), K3S_LABELS)];
    let config = kubeconfig("default", "default", "https://127.0.0.1:6443");
    assert_eq!(detect(&config, &nodes), detected(ProductKind::K3s, None));
}

#[test]
fn docker_desktop_from_its_names_node_and_server() {
    let nodes = [node(
        "docker-desktop",
        None,
        &[("node-role.kubernetes.io/control-plane", "")],
    )];
    let config = kubeconfig(
        "docker-desktop",
        "docker-desktop",
        "https://kubernetes.docker.internal:6443",
    );
    let expected = detected(ProductKind::DockerDesktop, None);
    assert_eq!(detect(&config, &nodes), expected);
    let renamed = kubeconfig("laptop", "laptop", "https://127.0.0.1:6443");
    assert_eq!(detect(&renamed, &nodes), expected);
    let renamed_no_nodes = kubeconfig(
        "laptop",
        "laptop",
        "https://kubernetes.docker.internal:6443",
    );
    assert_eq!(detect(&renamed_no_nodes, &[]), expected);
    let old = kubeconfig(
        "docker-for-desktop",
        "docker-for-desktop-cluster",
        "https://localhost:6443",
    );
    assert_eq!(detect(&old, &[]), expected);
}

#[test]
fn orbstack_colima_and_rancher_desktop_are_k3s_told_apart_by_names() {
    let config = kubeconfig("orbstack", "orbstack", "https://127.0.0.1:26443");
    let nodes = [node("orbstack", Some("k3s://orbstack"), K3S_LABELS)];
    assert_eq!(
        detect(&config, &nodes),
        detected(ProductKind::Orbstack, None)
    );

    let config = kubeconfig("colima", "colima", "https://127.0.0.1:6443");
    let nodes = [node("colima", Some("k3s://colima"), K3S_LABELS)];
    assert_eq!(
        detect(&config, &nodes),
        detected(ProductKind::Colima, Some("default"))
    );
    let config = kubeconfig("colima-work", "colima-work", "https://127.0.0.1:6443");
    let nodes = [node("colima-work", Some("k3s://colima-work"), K3S_LABELS)];
    assert_eq!(
        detect(&config, &nodes),
        detected(ProductKind::Colima, Some("work"))
    );

    let config = kubeconfig(
        "rancher-desktop",
        "rancher-desktop",
        "https://127.0.0.1:6443",
    );
    let nodes = [node(
        "lima-rancher-desktop",
        Some("k3s://lima-rancher-desktop"),
        K3S_LABELS,
    )];
    assert_eq!(
        detect(&config, &nodes),
        detected(ProductKind::RancherDesktop, None)
    );

    // Renamed contexts: the VM's node name still tells.
    let renamed = kubeconfig("local", "local", "https://127.0.0.1:6443");
    assert_eq!(
        detect(&renamed, &nodes),
        detected(ProductKind::RancherDesktop, None)
    );
    let nodes = [node("colima", Some("k3s://colima"), K3S_LABELS)];
    assert_eq!(
        detect(&renamed, &nodes),
        detected(ProductKind::Colima, Some("default"))
    );
}

#[test]
fn unknown_clusters_stay_unknown() {
    let config = kubeconfig(
        "gke_acme_us-central1-a_prod",
        "gke_acme_us-central1-a_prod",
        "https://34.1.2.3",
    );
    let nodes = [node(
        "gke-prod-pool-1-8f2a",
        Some("gce://acme/us-central1-a/gke-prod-pool-1-8f2a"),
        &[],
    )];
    assert_eq!(
        detect(&config, &nodes),
        detected(ProductKind::Unknown, None)
    );
    // A kubeadm host called `*-control-plane` is not kind unless the names say kind.
    let kubeadm = kubeconfig("kubernetes-admin@lab", "lab", "https://10.0.0.2:6443");
    let nodes = [node("lab-control-plane", None, &[])];
    assert_eq!(
        detect(&kubeadm, &nodes),
        detected(ProductKind::Unknown, None)
    );
    assert_eq!(
        detect(&KubeconfigFacts::default(), &[]),
        detected(ProductKind::Unknown, None)
    );
}

#[test]
fn node_facts_beat_renamed_or_contradicting_names() {
    let kind_nodes = [node(
        "blue-control-plane",
        Some("kind://docker/blue/blue-control-plane"),
        &[],
    )];
    let stale = kubeconfig("kind-green", "kind-green", "https://127.0.0.1:40000");
    assert_eq!(
        detect(&stale, &kind_nodes),
        detected(ProductKind::Kind, Some("blue"))
    );

    let k3d_nodes = [node(
        "k3d-dev-server-0",
        Some("k3s://k3d-dev-server-0"),
        K3S_LABELS,
    )];
    let renamed = kubeconfig("staging", "staging", "https://0.0.0.0:6550");
    assert_eq!(
        detect(&renamed, &k3d_nodes),
        detected(ProductKind::K3d, Some("dev"))
    );

    let minikube_nodes = [node("m", None, &[("minikube.k8s.io/name", "m")])];
    let says_kind = kubeconfig("kind-m", "kind-m", "https://127.0.0.1:40000");
    assert_eq!(
        detect(&says_kind, &minikube_nodes),
        detected(ProductKind::Minikube, Some("m"))
    );

    // Old kind without providerIDs: the node name beats a stale context name.
    let old_nodes = [node("blue-control-plane", None, &[])];
    assert_eq!(
        detect(&stale, &old_nodes),
        detected(ProductKind::Kind, Some("blue"))
    );
}

#[test]
fn names_alone_decide_when_nodes_cannot_be_read() {
    let cases = [
        ("kind-dev", ProductKind::Kind, Some("dev")),
        ("k3d-dev", ProductKind::K3d, Some("dev")),
        ("minikube", ProductKind::Minikube, Some("minikube")),
        ("microk8s", ProductKind::Microk8s, None),
        ("docker-desktop", ProductKind::DockerDesktop, None),
        ("orbstack", ProductKind::Orbstack, None),
        ("colima-ci", ProductKind::Colima, Some("ci")),
        ("rancher-desktop", ProductKind::RancherDesktop, None),
        ("kind-", ProductKind::Unknown, None),
    ];
    for (context, kind, name) in cases {
        let config = KubeconfigFacts {
            context: Some(context.into()),
            ..Default::default()
        };
        assert_eq!(
            detect(&config, &[]),
            detected(kind, name),
            "context {context}"
        );
    }
    // The cluster entry survives `kubectl config rename-context`.
    let renamed = kubeconfig("mine", "kind-dev", "https://127.0.0.1:40000");
    assert_eq!(
        detect(&renamed, &[]),
        detected(ProductKind::Kind, Some("dev"))
    );
}

#[test]
fn every_product_has_a_guide_and_every_known_one_a_cli_to_install() {
    let all = [
        ProductKind::Kind,
        ProductKind::K3d,
        ProductKind::Minikube,
        ProductKind::Microk8s,
        ProductKind::K3s,
        ProductKind::DockerDesktop,
        ProductKind::Orbstack,
        ProductKind::Colima,
        ProductKind::RancherDesktop,
    ];
    for kind in all {
        assert!(kind.registry_guide().starts_with("https://"), "{kind}");
        let cli = kind.loader_cli().unwrap();
        assert!(cli.install_url.starts_with("https://"), "{kind}");
        assert_eq!(
            kind.shares_local_docker_store(),
            cli.program == "docker",
            "{kind}"
        );
    }
    assert_eq!(
        ProductKind::Kind.registry_guide(),
        "https://kind.sigs.k8s.io/docs/user/local-registry/"
    );
    assert_eq!(
        ProductKind::K3d.registry_guide(),
        "https://k3d.io/stable/usage/registries/"
    );
    assert_eq!(
        ProductKind::Minikube.registry_guide(),
        "https://minikube.sigs.k8s.io/docs/handbook/registry/"
    );
    assert_eq!(
        ProductKind::Microk8s.registry_guide(),
        "https://microk8s.io/docs/registry-built-in"
    );
    assert_eq!(ProductKind::Unknown.registry_guide(), KEP_URL);
    assert!(ProductKind::Unknown.loader_cli().is_none());
}

#[test]
fn serialises_in_kebab_case_for_json_output() {
    let json = serde_json::to_string(&product(ProductKind::DockerDesktop, None)).unwrap();
    assert_eq!(json, r#"{"kind":"docker-desktop","clusterName":null}"#);
    for kind in [
        ProductKind::Kind,
        ProductKind::K3d,
        ProductKind::Microk8s,
        ProductKind::RancherDesktop,
        ProductKind::Unknown,
    ] {
        assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
    }
}

const OPENSHIFT_NODE_LABELS: &[(&str, &str)] = &[
    ("node.openshift.io/os_id", "rhcos"),
    ("node-role.kubernetes.io/master", ""),
];

#[test]
fn openshift_from_its_node_label_and_openshift_local_from_its_node_or_api_name() {
    // `oc login` names the cluster entry after the API server and the context project/cluster/user.
    let cluster = kubeconfig(
        "myproject/api-prod-example-com:6443/developer",
        "api-prod-example-com:6443",
        "https://api.prod.example.com:6443",
    );
    let workers = [
        node("ip-10-0-1-5.ec2.internal", None, OPENSHIFT_NODE_LABELS),
        node("ip-10-0-1-6.ec2.internal", None, OPENSHIFT_NODE_LABELS),
    ];
    assert_eq!(
        detect(&cluster, &workers),
        detected(ProductKind::Openshift, None)
    );

    let local = kubeconfig(
        "myproject/api-crc-testing:6443/developer",
        "api-crc-testing:6443",
        "https://api.crc.testing:6443",
    );
    let crc = [node("crc", None, OPENSHIFT_NODE_LABELS)];
    let before_4_12 = [node("crc-8bb6w-master-0", None, OPENSHIFT_NODE_LABELS)];
    let renamed_node = [node("master-0", None, OPENSHIFT_NODE_LABELS)];
    for nodes in [&crc[..], &before_4_12, &renamed_node] {
        assert_eq!(
            detect(&local, nodes),
            detected(ProductKind::OpenshiftLocal, None)
        );
    }
    assert_eq!(
        detect(&cluster, &crc),
        detected(ProductKind::OpenshiftLocal, None)
    );
    // Without node facts (no right to list nodes), the API server's name still tells.
    assert_eq!(
        detect(&local, &[]),
        detected(ProductKind::OpenshiftLocal, None)
    );
}

#[test]
fn serving_openshifts_image_config_makes_an_unsure_product_openshift() {
    let unsure = detect(&kubeconfig("dev", "dev", "https://10.0.0.1:6443"), &[]);
    assert_eq!(unsure.kind, ProductKind::Unknown);
    assert_eq!(
        unsure.on_openshift(true),
        detected(ProductKind::Openshift, None)
    );
    let local = detected(ProductKind::OpenshiftLocal, None);
    assert_eq!(local.clone().on_openshift(true), local);
    let kind = detected(ProductKind::Kind, Some("dev"));
    assert_eq!(kind.clone().on_openshift(false), kind);
}

#[test]
fn the_product_table_has_one_row_per_product_and_its_names_are_the_json_names() {
    let mut names = std::collections::BTreeSet::new();
    for row in &PRODUCTS {
        assert!(
            std::ptr::eq(row.kind.spec(), row),
            "{} has two rows",
            row.name
        );
        assert!(names.insert(row.name), "{} named twice", row.name);
        assert_eq!(serde_json::to_value(row.kind).unwrap(), row.name);
    }
}
