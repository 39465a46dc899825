//! The product table: one row per cluster product, everything we know of it that is data (its
//! names, its registry guide, its loader CLI and how that CLI loads an archive and says its version).

use super::ProductKind;
use crate::cluster::hosting::{KEP_URL, OPENSHIFT_REGISTRY_GUIDE};

/// What we know of one product.
#[derive(Debug)]
pub struct ProductSpec {
    pub kind: ProductKind,
    /// The name in `-o json` and messages: `kind`, `docker-desktop`, ...
    pub name: &'static str,
    /// How the product calls itself, for sentences.
    pub display_name: &'static str,
    /// The product's guide to giving the cluster a local registry.
    pub registry_guide: &'static str,
    /// The CLI that loads images into its nodes; `None` where nodes are never loaded by hand.
    pub loader: Option<LoaderSpec>,
    /// How to run `ctr` against the local node's containerd (`microk8s ctr`, `k3s ctr`), for
    /// `ls` and `prune` of node images; kind's and k3d's nodes are reached by `docker exec`.
    pub node_ctr: Option<&'static [&'static str]>,
}

/// A product's node-load CLI: where to get it, how it loads an archive, how it says its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoaderSpec {
    pub program: &'static str,
    pub install_url: &'static str,
    /// The arguments before the archive.
    pub load_args: &'static [&'static str],
    /// The flag after the archive that names the cluster (kind's `--name`, k3d's `-c`, ...).
    pub cluster_flag: Option<&'static str>,
    /// Where the archive goes, for the plan's description.
    pub destination: Destination,
    /// The arguments that make it print its version.
    pub version_args: &'static [&'static str],
    /// An extra hint when its load fails.
    pub failure_hint: Option<&'static str>,
    /// What older releases run instead, when the load's output says the subcommand is unknown.
    pub fallback: Option<LoaderFallback>,
}

/// An older release's load command (MicroK8s before 1.25 has no `images import`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoaderFallback {
    pub load_args: &'static [&'static str],
    /// Text in the first command's output that means "unknown subcommand".
    pub when_output_contains: &'static str,
    /// Which releases need it, for the plan's description: `where MicroK8s is older than 1.25`.
    pub releases: &'static str,
}

/// Where a product's loader puts the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// The nodes of the named cluster or profile.
    ClusterNodes,
    /// The local docker engine's image store, which the nodes share.
    SharedDockerStore,
    /// A fixed phrase: `every MicroK8s node`.
    Phrase(&'static str),
}

const DOCKER_VERSION: &[&str] = &["version", "--format", "{{.Client.Version}}"];
const NERDCTL_HINT: &str =
    "on the containerd runtime, load with --load-command 'nerdctl -n k8s.io load -i {archive}'";

const fn docker_store(install_url: &'static str, failure_hint: Option<&'static str>) -> LoaderSpec {
    LoaderSpec {
        program: "docker",
        install_url,
        load_args: &["load", "-i"],
        cluster_flag: None,
        destination: Destination::SharedDockerStore,
        version_args: DOCKER_VERSION,
        failure_hint,
        fallback: None,
    }
}

/// Every product, one row each. Adding a product: a `ProductKind` variant, its row here, and how
/// to recognise it in `detect` (names, node facts), each with its tests.
pub static PRODUCTS: [ProductSpec; 12] = [
    ProductSpec {
        kind: ProductKind::Kind,
        name: "kind",
        display_name: "kind",
        registry_guide: "https://kind.sigs.k8s.io/docs/user/local-registry/",
        node_ctr: None,
        loader: Some(LoaderSpec {
            program: "kind",
            install_url: "https://kind.sigs.k8s.io/docs/user/quick-start/#installation",
            load_args: &["load", "image-archive"],
            cluster_flag: Some("--name"),
            destination: Destination::ClusterNodes,
            version_args: &["version"],
            failure_hint: None,
            fallback: None,
        }),
    },
    ProductSpec {
        kind: ProductKind::K3d,
        name: "k3d",
        display_name: "k3d",
        registry_guide: "https://k3d.io/stable/usage/registries/",
        node_ctr: None,
        loader: Some(LoaderSpec {
            program: "k3d",
            install_url: "https://k3d.io/stable/#installation",
            load_args: &["image", "import"],
            cluster_flag: Some("-c"),
            destination: Destination::ClusterNodes,
            version_args: &["version"],
            failure_hint: None,
            fallback: None,
        }),
    },
    ProductSpec {
        kind: ProductKind::Minikube,
        name: "minikube",
        display_name: "minikube",
        registry_guide: "https://minikube.sigs.k8s.io/docs/handbook/registry/",
        node_ctr: None,
        loader: Some(LoaderSpec {
            program: "minikube",
            install_url: "https://minikube.sigs.k8s.io/docs/start/",
            load_args: &["image", "load"],
            cluster_flag: Some("-p"),
            destination: Destination::ClusterNodes,
            version_args: &["version", "--short"],
            failure_hint: None,
            fallback: None,
        }),
    },
    ProductSpec {
        kind: ProductKind::Microk8s,
        name: "microk8s",
        display_name: "MicroK8s",
        registry_guide: "https://microk8s.io/docs/registry-built-in",
        node_ctr: Some(&["microk8s", "ctr"]),
        loader: Some(LoaderSpec {
            program: "microk8s",
            install_url: "https://microk8s.io/docs/getting-started",
            load_args: &["images", "import"],
            cluster_flag: None,
            destination: Destination::Phrase("every MicroK8s node"),
            version_args: &["version"],
            failure_hint: None,
            fallback: Some(LoaderFallback {
                load_args: &["ctr", "image", "import"],
                // What `microk8s` before 1.25 prints (on stdout, exit 1) for `microk8s images`.
                when_output_contains: "is not a valid MicroK8s subcommand",
                releases: "where MicroK8s is older than 1.25",
            }),
        }),
    },
    ProductSpec {
        kind: ProductKind::K3s,
        name: "k3s",
        display_name: "K3s",
        registry_guide: "https://docs.k3s.io/installation/private-registry",
        node_ctr: Some(&["k3s", "ctr"]),
        loader: Some(LoaderSpec {
            program: "k3s",
            install_url: "https://docs.k3s.io/quick-start",
            load_args: &["ctr", "-n", "k8s.io", "images", "import"],
            cluster_flag: None,
            destination: Destination::Phrase("this K3s node's containerd"),
            version_args: &["--version"],
            failure_hint: Some(
                "k3s ctr needs root on the node: run as root, or --load-command 'sudo k3s ctr -n k8s.io images import {archive}'",
            ),
            fallback: None,
        }),
    },
    ProductSpec {
        kind: ProductKind::DockerDesktop,
        name: "docker-desktop",
        display_name: "Docker Desktop",
        registry_guide: "https://docs.docker.com/desktop/features/kubernetes/",
        node_ctr: None,
        loader: Some(docker_store("https://docs.docker.com/desktop/", None)),
    },
    ProductSpec {
        kind: ProductKind::Orbstack,
        name: "orbstack",
        display_name: "OrbStack",
        registry_guide: "https://docs.orbstack.dev/kubernetes/",
        node_ctr: None,
        loader: Some(docker_store("https://docs.orbstack.dev/install", None)),
    },
    ProductSpec {
        kind: ProductKind::Colima,
        name: "colima",
        display_name: "Colima",
        registry_guide: "https://github.com/abiosoft/colima#kubernetes",
        node_ctr: None,
        loader: Some(docker_store(
            "https://docs.docker.com/engine/install/binaries/",
            Some(NERDCTL_HINT),
        )),
    },
    ProductSpec {
        kind: ProductKind::RancherDesktop,
        name: "rancher-desktop",
        display_name: "Rancher Desktop",
        registry_guide: "https://docs.rancherdesktop.io/",
        node_ctr: None,
        loader: Some(docker_store(
            "https://docs.rancherdesktop.io/getting-started/installation/",
            Some(NERDCTL_HINT),
        )),
    },
    // OpenShift's nodes are reached through its registry, never loaded by hand.
    ProductSpec {
        kind: ProductKind::Openshift,
        name: "openshift",
        display_name: "OpenShift",
        registry_guide: OPENSHIFT_REGISTRY_GUIDE,
        node_ctr: None,
        loader: None,
    },
    ProductSpec {
        kind: ProductKind::OpenshiftLocal,
        name: "openshift-local",
        display_name: "OpenShift Local",
        registry_guide: OPENSHIFT_REGISTRY_GUIDE,
        node_ctr: None,
        loader: None,
    },
    ProductSpec {
        kind: ProductKind::Unknown,
        name: "unknown",
        display_name: "an unknown cluster",
        registry_guide: KEP_URL,
        node_ctr: None,
        loader: None,
    },
];
