//! Which product a cluster is (kind, k3d, minikube, ...) from kubeconfig and node facts, and what
//! we know of each (the product table). Pure; node-load plans live in `nodes`.

mod table;

use std::fmt;

use crate::cluster::client::NodeFacts;
use crate::cluster::kubeconfig::KubeconfigFacts;
pub use table::{Destination, LoaderFallback, LoaderSpec, PRODUCTS, ProductSpec};

/// The local cluster products we know how to load images into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProductKind {
    Kind,
    K3d,
    Minikube,
    Microk8s,
    K3s,
    DockerDesktop,
    Orbstack,
    Colima,
    RancherDesktop,
    Openshift,
    /// OpenShift Local (CRC): one OpenShift node in a VM.
    OpenshiftLocal,
    Unknown,
}

/// A detected product and, where it has them, the name of its cluster (kind and k3d cluster,
/// minikube profile, colima profile).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Product {
    pub kind: ProductKind,
    pub cluster_name: Option<String>,
}

impl ProductKind {
    /// Its row in the product table.
    pub fn spec(self) -> &'static ProductSpec {
        PRODUCTS
            .iter()
            .find(|spec| spec.kind == self)
            .expect("the product table has a row for every product")
    }

    /// The name used in `-o json` and in messages: `kind`, `docker-desktop`, ...
    pub fn as_str(self) -> &'static str {
        self.spec().name
    }

    /// How the product calls itself, for sentences.
    pub fn display_name(self) -> &'static str {
        self.spec().display_name
    }

    /// The product's guide to giving the cluster a local registry (the KEP for unknown clusters).
    pub fn registry_guide(self) -> &'static str {
        self.spec().registry_guide
    }

    /// The CLI that loads images into this product's nodes, and how.
    pub fn loader_cli(self) -> Option<LoaderSpec> {
        self.spec().loader
    }

    /// `microk8s ctr`, `k3s ctr`: the local node's containerd, where the product has one.
    pub fn node_ctr(self) -> Option<&'static [&'static str]> {
        self.spec().node_ctr
    }

    /// True when the nodes run on the local docker engine's image store, so `docker load` is
    /// all it takes.
    pub fn shares_local_docker_store(self) -> bool {
        self.loader_cli()
            .is_some_and(|loader| loader.destination == Destination::SharedDockerStore)
    }
}

impl fmt::Display for ProductKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The label every OpenShift 4 node carries (`rhcos`, `rhel`, ...).
const OPENSHIFT_OS_LABEL: &str = "node.openshift.io/os_id";
/// OpenShift Local's API server name.
const OPENSHIFT_LOCAL_API_HOST: &str = "api.crc.testing";

/// Names what the kubeconfig and the nodes say about the cluster. Node facts are what the
/// product itself wrote, so they beat kubeconfig names, which users rename.
pub fn detect(kubeconfig: &KubeconfigFacts, nodes: &[NodeFacts]) -> Product {
    let by_name = from_kubeconfig(kubeconfig);
    if let Some(product) = from_nodes(nodes, by_name.as_ref()) {
        return product;
    }
    by_name.unwrap_or(Product {
        kind: ProductKind::Unknown,
        cluster_name: None,
    })
}

/// What the cluster's and context's names say, the cluster entry first: `kubectl config
/// rename-context` leaves the cluster entry as the tool wrote it.
fn from_kubeconfig(kubeconfig: &KubeconfigFacts) -> Option<Product> {
    let names = [kubeconfig.cluster.as_deref(), kubeconfig.context.as_deref()];
    let by_name = names.into_iter().flatten().find_map(from_name);
    let by_server = kubeconfig
        .server
        .as_deref()
        .and_then(|server| match server_host(server) {
            "kubernetes.docker.internal" => Some(product(ProductKind::DockerDesktop, None)),
            OPENSHIFT_LOCAL_API_HOST => Some(product(ProductKind::OpenshiftLocal, None)),
            _ => None,
        });
    by_name.or(by_server)
}

/// A context or cluster name as each tool writes it.
fn from_name(name: &str) -> Option<Product> {
    let kind = match name {
        "kind" => return Some(product(ProductKind::Kind, Some("kind"))),
        "microk8s" | "microk8s-cluster" => ProductKind::Microk8s,
        "docker-desktop" | "docker-for-desktop" | "docker-for-desktop-cluster" => {
            ProductKind::DockerDesktop
        }
        "orbstack" => ProductKind::Orbstack,
        "rancher-desktop" => ProductKind::RancherDesktop,
        "colima" => return Some(product(ProductKind::Colima, Some("default"))),
        // minikube names the context and the cluster after the profile.
        _ if name.starts_with("minikube") => {
            return Some(product(ProductKind::Minikube, Some(name)));
        }
        _ => {
            let prefixed = [
                ("kind-", ProductKind::Kind),
                ("k3d-", ProductKind::K3d),
                ("colima-", ProductKind::Colima),
            ];
            return prefixed.into_iter().find_map(|(prefix, kind)| {
                let rest = name.strip_prefix(prefix).filter(|rest| !rest.is_empty())?;
                Some(product(kind, Some(rest)))
            });
        }
    };
    Some(product(kind, None))
}

/// What the nodes say. `by_name` settles what k3s nodes alone may not: k3d, Colima, OrbStack
/// and Rancher Desktop all run k3s.
fn from_nodes(nodes: &[NodeFacts], by_name: Option<&Product>) -> Option<Product> {
    if nodes
        .iter()
        .any(|n| n.labels.contains_key(OPENSHIFT_OS_LABEL))
    {
        // OpenShift Local names its one node `crc` (`crc-<id>-master-0` before 4.12).
        let local = nodes.iter().any(|n| {
            n.name == "crc" || (n.name.starts_with("crc-") && n.name.ends_with("-master-0"))
        });
        let kind = if local || by_name.is_some_and(|p| p.kind == ProductKind::OpenshiftLocal) {
            ProductKind::OpenshiftLocal
        } else {
            ProductKind::Openshift
        };
        return Some(product(kind, None));
    }
    if let Some(cluster) = nodes.iter().find_map(kind_cluster_from_provider_id) {
        return Some(product(ProductKind::Kind, Some(cluster)));
    }
    if let Some(profile) = nodes
        .iter()
        .find_map(|node| node.labels.get("minikube.k8s.io/name"))
    {
        return Some(product(ProductKind::Minikube, Some(profile)));
    }
    let microk8s = nodes
        .iter()
        .any(|node| node.labels.get("microk8s.io/cluster").map(String::as_str) == Some("true"));
    if microk8s {
        return Some(product(ProductKind::Microk8s, None));
    }
    if let Some(cluster) = nodes
        .iter()
        .find_map(|node| k3d_cluster_from_node_name(&node.name))
    {
        return Some(product(ProductKind::K3d, Some(cluster)));
    }
    if nodes.iter().any(runs_k3s) {
        let named_k3s_product = by_name.filter(|named| {
            matches!(
                named.kind,
                ProductKind::K3d
                    | ProductKind::Colima
                    | ProductKind::RancherDesktop
                    | ProductKind::Orbstack
            )
        });
        return Some(named_k3s_product.cloned().unwrap_or_else(|| {
            nodes
                .iter()
                .find_map(|n| k3s_based_product_from_node_name(&n.name))
                .unwrap_or(product(ProductKind::K3s, None))
        }));
    }
    if nodes
        .iter()
        .any(|n| n.name == "docker-desktop" || n.name == "docker-for-desktop")
    {
        return Some(product(ProductKind::DockerDesktop, None));
    }
    if nodes.iter().any(|n| n.name == "orbstack") {
        return Some(product(ProductKind::Orbstack, None));
    }
    // kind before providerIDs (< v0.11) names its nodes NAME-control-plane: only trusted when
    // the names already say kind, as any kubeadm host could be called that.
    if by_name.is_some_and(|named| named.kind == ProductKind::Kind) {
        let cluster = nodes.iter().find_map(|n| {
            n.name
                .strip_suffix("-control-plane")
                .filter(|c| !c.is_empty())
        })?;
        return Some(product(ProductKind::Kind, Some(cluster)));
    }
    None
}

/// The desktop products that run k3s in a VM name its node after the VM.
fn k3s_based_product_from_node_name(name: &str) -> Option<Product> {
    match name {
        "lima-rancher-desktop" => Some(product(ProductKind::RancherDesktop, None)),
        "orbstack" => Some(product(ProductKind::Orbstack, None)),
        "colima" => Some(product(ProductKind::Colima, Some("default"))),
        _ => {
            let profile = name.strip_prefix("colima-").filter(|p| !p.is_empty())?;
            Some(product(ProductKind::Colima, Some(profile)))
        }
    }
}

/// `kind://<provider>/<cluster>/<node>` -> cluster.
fn kind_cluster_from_provider_id(node: &NodeFacts) -> Option<&str> {
    let path = node.provider_id.as_deref()?.strip_prefix("kind://")?;
    let mut parts = path.split('/');
    let (_provider, cluster) = (parts.next()?, parts.next()?);
    (!cluster.is_empty()).then_some(cluster)
}

/// `k3d-<cluster>-server-<n>` or `k3d-<cluster>-agent-<n>` -> cluster.
fn k3d_cluster_from_node_name(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("k3d-")?;
    let (before_index, index) = rest.rsplit_once('-')?;
    if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    ["-server", "-agent"]
        .into_iter()
        .find_map(|role| before_index.strip_suffix(role))
        .filter(|cluster| !cluster.is_empty())
}

fn runs_k3s(node: &NodeFacts) -> bool {
    node.provider_id
        .as_deref()
        .is_some_and(|id| id.starts_with("k3s://"))
        || node
            .labels
            .get("node.kubernetes.io/instance-type")
            .map(String::as_str)
            == Some("k3s")
}

/// The host of `https://host:port/path`, brackets kept for IPv6.
fn server_host(server: &str) -> &str {
    let rest = server.split_once("://").map_or(server, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or(rest);
    if authority.starts_with('[') {
        return authority.split_inclusive(']').next().unwrap_or(authority);
    }
    authority.split(':').next().unwrap_or(authority)
}

fn product(kind: ProductKind, cluster_name: Option<&str>) -> Product {
    Product {
        kind,
        cluster_name: cluster_name.map(str::to_string),
    }
}

impl Product {
    /// A cluster that serves OpenShift's `config.openshift.io` API is OpenShift, whatever else
    /// was unsure.
    pub fn on_openshift(self, serves_openshift_config: bool) -> Self {
        let already = matches!(
            self.kind,
            ProductKind::Openshift | ProductKind::OpenshiftLocal
        );
        if serves_openshift_config && !already {
            product(ProductKind::Openshift, None)
        } else {
            self
        }
    }

    pub fn registry_guide(&self) -> &'static str {
        self.kind.registry_guide()
    }

    /// The product and its cluster, for sentences: `kind cluster "dev"`, `the MicroK8s cluster`.
    pub fn target_phrase(&self) -> String {
        let name = self.cluster_name.as_deref();
        match (self.kind, name) {
            (ProductKind::Kind | ProductKind::K3d, Some(name)) => {
                format!("{} cluster \"{name}\"", self.kind.display_name())
            }
            (ProductKind::Minikube | ProductKind::Colima, Some(name)) => {
                format!("{} profile \"{name}\"", self.kind.display_name())
            }
            (ProductKind::Unknown, _) => "the cluster".to_string(),
            _ => format!("the {} cluster", self.kind.display_name()),
        }
    }
}

#[cfg(test)]
mod tests;
