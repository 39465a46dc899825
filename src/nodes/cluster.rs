//! Which nodes a kind or k3d cluster has and how to reach each one's containerd: the nodes are
//! containers of the local engine, so `ENGINE exec [-i] NODE ctr -n k8s.io ...`, as the
//! products' own load commands do inside them.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::cluster::client::NodeFacts;
use crate::cluster::product::{Product, ProductKind};
use crate::plumbing::process::Argv;

/// The containerd namespace the kubelet's CRI reads images from.
const K8S_NAMESPACE: &str = "k8s.io";

/// A cluster whose nodes we can ask what they hold and load one by one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeCluster {
    product: ProductKind,
    name: String,
    /// The engine whose containers the nodes are: `docker`, or `podman`/`nerdctl` for kind's
    /// other providers.
    engine: String,
    /// How long each command run in or about a node may take.
    bound: Duration,
}

impl NodeCluster {
    /// kind and k3d clusters with a known name; `None` for products whose nodes we cannot
    /// reach one by one (their own CLI loads the whole archive, as before).
    pub fn of(product: &Product, nodes: &[NodeFacts]) -> Option<Self> {
        let name = product.cluster_name.clone()?;
        let engine = match product.kind {
            ProductKind::Kind => kind_provider(nodes).unwrap_or("docker"),
            ProductKind::K3d => "docker",
            _ => return None,
        };
        Some(Self {
            product: product.kind,
            name,
            engine: engine.to_string(),
            bound: crate::plumbing::limits::Limits::default().node_timeout,
        })
    }

    /// Each node command bounded by `bound` (`KUBECTL_REGISTRY_NODE_TIMEOUT`).
    pub fn bounded(mut self, bound: Duration) -> Self {
        self.bound = bound;
        self
    }

    pub fn bound(&self) -> Duration {
        self.bound
    }

    /// `kind get nodes --name NAME`, `k3d node list -o json`.
    pub fn list_command(&self) -> Argv {
        let args: Vec<&str> = match self.product {
            ProductKind::K3d => vec!["node", "list", "-o", "json"],
            _ => vec!["get", "nodes", "--name", &self.name],
        };
        Argv::new(self.product.as_str(), args.into_iter().map(OsString::from))
    }

    /// The node names in what `list_command` printed: kind's one per line, without the
    /// external load balancer of an HA cluster; k3d's JSON list, keeping this cluster's
    /// servers and agents. Load balancers and registries run no containerd.
    pub fn parse_node_list(&self, stdout: &str) -> Result<Vec<String>, String> {
        if self.product != ProductKind::K3d {
            let load_balancer = format!("{}-external-load-balancer", self.name);
            return Ok(stdout
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && *line != load_balancer)
                .map(str::to_string)
                .collect());
        }
        let listed: Vec<K3dNode> = serde_json::from_str(stdout)
            .map_err(|err| format!("`{}` printed no node list: {err}", self.list_command()))?;
        Ok(listed
            .into_iter()
            .filter(|node| matches!(node.role.as_str(), "server" | "agent"))
            .filter(|node| node.runtime_labels.cluster.as_deref() == Some(self.name.as_str()))
            .map(|node| node.name)
            .collect())
    }

    /// The product's guide to giving the cluster a registry, for hints.
    pub fn registry_guide(&self) -> &'static str {
        self.product.registry_guide()
    }

    /// `ENGINE exec NODE ctr -n k8s.io ARGS...`; with `-i` when stdin carries an archive.
    pub fn ctr(&self, node: &str, with_stdin: bool, args: &[&str]) -> Argv {
        let mut argv = vec!["exec"];
        if with_stdin {
            argv.push("-i");
        }
        argv.extend([node, "ctr", "-n", K8S_NAMESPACE]);
        argv.extend(args);
        Argv::new(&self.engine, argv.into_iter().map(OsString::from))
    }

    /// kind imports with the snapshotter the node's CRI uses, read from `containerd config
    /// dump` (kind's own way); k3d imports with ctr's default, as `k3d image import` does.
    pub fn config_dump(&self, node: &str) -> Option<Argv> {
        (self.product == ProductKind::Kind).then(|| {
            Argv::new(
                &self.engine,
                ["exec", node, "containerd", "config", "dump"].map(OsString::from),
            )
        })
    }

    /// The product's own load of the whole archive, into `nodes` where the CLI can pick nodes
    /// (kind's `--nodes`), else into every node (k3d).
    pub fn whole_archive_command(&self, archive: &Path, nodes: &[String]) -> Argv {
        let archive = archive.as_os_str().to_os_string();
        let mut args: Vec<OsString> = match self.product {
            ProductKind::K3d => vec!["image".into(), "import".into(), archive],
            _ => vec!["load".into(), "image-archive".into(), archive],
        };
        match self.product {
            ProductKind::K3d => args.extend(["-c".into(), self.name.clone().into()]),
            _ => {
                args.extend(["--name".into(), self.name.clone().into()]);
                args.extend(["--nodes".into(), nodes.join(",").into()]);
            }
        }
        Argv::new(self.product.as_str(), args)
    }
}

/// `kind://PROVIDER/CLUSTER/NODE`: the engine kind created the node containers with.
fn kind_provider(nodes: &[NodeFacts]) -> Option<&'static str> {
    let provider_id = nodes.iter().find_map(|node| node.provider_id.as_deref())?;
    let provider = provider_id.strip_prefix("kind://")?.split('/').next()?;
    ["docker", "podman", "nerdctl"]
        .into_iter()
        .find(|known| *known == provider)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct K3dNode {
    name: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    runtime_labels: K3dLabels,
}

#[derive(Deserialize, Default)]
struct K3dLabels {
    #[serde(rename = "k3d.cluster")]
    cluster: Option<String>,
}

/// The snapshotter the node's CRI unpacks into, from `containerd config dump`: containerd 1.x
/// (`[plugins."io.containerd.grpc.v1.cri".containerd]`) or 2.x
/// (`[plugins.'io.containerd.cri.v1.images']`).
pub(super) fn snapshotter_in_config(dump: &str) -> Option<String> {
    let mut in_cri_section = false;
    for line in dump.lines().map(str::trim) {
        if line.starts_with('[') {
            let section: String = line.chars().filter(|c| !matches!(c, '"' | '\'')).collect();
            in_cri_section = section == "[plugins.io.containerd.grpc.v1.cri.containerd]"
                || section == "[plugins.io.containerd.cri.v1.images]";
            continue;
        }
        if !in_cri_section {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() == "snapshotter" {
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            return (!value.is_empty()).then(|| value.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(kind: ProductKind, provider_id: Option<&str>) -> NodeCluster {
        let product = Product {
            kind,
            cluster_name: Some("dev".to_string()),
        };
        let node = NodeFacts {
            name: "dev-control-plane".to_string(),
            provider_id: provider_id.map(str::to_string),
            labels: Default::default(),
            annotations: Default::default(),
            container_runtime: None,
        };
        NodeCluster::of(&product, &[node]).unwrap()
    }

    #[test]
    fn kind_nodes_are_reached_through_the_engine_their_provider_id_names() {
        let docker = cluster(
            ProductKind::Kind,
            Some("kind://docker/dev/dev-control-plane"),
        );
        assert_eq!(
            docker.list_command().to_string(),
            "kind get nodes --name dev"
        );
        assert_eq!(
            docker
                .ctr("dev-worker", true, &["images", "import", "-"])
                .to_string(),
            "docker exec -i dev-worker ctr -n k8s.io images import -"
        );
        let podman = cluster(
            ProductKind::Kind,
            Some("kind://podman/dev/dev-control-plane"),
        );
        assert_eq!(
            podman.ctr("n", false, &["content", "ls", "-q"]).to_string(),
            "podman exec n ctr -n k8s.io content ls -q"
        );
        assert_eq!(
            podman.config_dump("n").unwrap().to_string(),
            "podman exec n containerd config dump"
        );
        assert_eq!(
            docker
                .whole_archive_command(Path::new("/t/i.tar"), &["a".into(), "b".into()])
                .to_string(),
            "kind load image-archive /t/i.tar --name dev --nodes a,b"
        );
    }

    #[test]
    fn other_products_and_unnamed_clusters_are_not_reached_node_by_node() {
        for kind in [
            ProductKind::Minikube,
            ProductKind::Microk8s,
            ProductKind::K3s,
        ] {
            let product = Product {
                kind,
                cluster_name: Some("x".to_string()),
            };
            assert_eq!(NodeCluster::of(&product, &[]), None);
        }
        let unnamed = Product {
            kind: ProductKind::Kind,
            cluster_name: None,
        };
        assert_eq!(NodeCluster::of(&unnamed, &[]), None);
    }

    #[test]
    fn kind_lists_a_node_per_line_without_its_load_balancer() {
        let kind = cluster(ProductKind::Kind, None);
        assert_eq!(
            kind.parse_node_list("dev-control-plane\ndev-external-load-balancer\ndev-worker\n\n"),
            Ok(vec!["dev-control-plane".into(), "dev-worker".into()])
        );
    }

    #[test]
    fn k3d_keeps_this_clusters_servers_and_agents() {
        let k3d = cluster(ProductKind::K3d, None);
        let listed = r#"[
            {"name":"k3d-dev-server-0","role":"server","runtimeLabels":{"k3d.cluster":"dev"}},
            {"name":"k3d-dev-agent-0","role":"agent","runtimeLabels":{"k3d.cluster":"dev"}},
            {"name":"k3d-dev-serverlb","role":"loadbalancer","runtimeLabels":{"k3d.cluster":"dev"}},
            {"name":"k3d-other-server-0","role":"server","runtimeLabels":{"k3d.cluster":"other"}}
        ]"#;
        assert_eq!(
            k3d.parse_node_list(listed),
            Ok(vec!["k3d-dev-server-0".into(), "k3d-dev-agent-0".into()])
        );
        assert!(k3d.parse_node_list("not json").is_err());
        assert_eq!(k3d.config_dump("k3d-dev-server-0"), None);
        assert_eq!(
            k3d.whole_archive_command(Path::new("/i.tar"), &[])
                .to_string(),
            "k3d image import /i.tar -c dev"
        );
    }

    #[test]
    fn the_snapshotter_comes_from_the_cri_section_of_either_config_version() {
        let v2 = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  default_runtime_name = \"runc\"\n  snapshotter = \"overlayfs\"\n[plugins.\"io.containerd.snapshotter.v1.native\"]\n  snapshotter = \"no\"\n";
        assert_eq!(snapshotter_in_config(v2), Some("overlayfs".to_string()));
        let v3 = "version = 3\n[plugins.'io.containerd.cri.v1.images']\n  snapshotter = 'native'\n";
        assert_eq!(snapshotter_in_config(v3), Some("native".to_string()));
        assert_eq!(
            snapshotter_in_config(
                "[plugins.\"io.containerd.snapshotter.v1.native\"]\n  snapshotter = \"x\"\n"
            ),
            None
        );
    }
}
