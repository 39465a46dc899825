//! What each node of a cluster holds: the blobs in its containerd's content store and the
//! snapshotter it unpacks into, asked of every node at once. `survey` and `NodeHoldings::lacks`
//! tell, for any set of blob digests, what each node lacks.

use std::collections::BTreeSet;

use futures_util::future::join_all;

use super::cluster::{NodeCluster, snapshotter_in_config};
use super::exec::{self, Failure};
use crate::image::digest::Digest;

/// One node's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeSurvey {
    Known(NodeHoldings),
    /// The node could not be asked: it gets the whole archive, by the product's CLI.
    Unknown {
        node: String,
        why: Failure,
    },
}

impl NodeSurvey {
    pub fn node(&self) -> &str {
        match self {
            Self::Known(holdings) => &holdings.node,
            Self::Unknown { node, .. } => node,
        }
    }
}

/// What one node's containerd holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHoldings {
    pub node: String,
    /// Where the node's CRI unpacks images; `None`: ctr's default.
    pub snapshotter: Option<String>,
    pub blobs: BTreeSet<Digest>,
}

impl NodeHoldings {
    /// The digests among `wanted` this node does not hold, in order, each once.
    pub fn lacks<'a>(&self, wanted: impl IntoIterator<Item = &'a Digest>) -> Vec<&'a Digest> {
        let mut seen = BTreeSet::new();
        wanted
            .into_iter()
            .filter(|digest| !self.blobs.contains(*digest) && seen.insert(*digest))
            .collect()
    }
}

/// Lists the cluster's nodes with the product's CLI, then asks every node at once what it
/// holds. `Err` when the nodes cannot be listed (or there are none): nothing is known.
pub async fn survey(cluster: &NodeCluster) -> Result<Vec<NodeSurvey>, Failure> {
    let listing = cluster.list_command();
    let listed = exec::capture(&listing, cluster.bound()).await?;
    let nodes = cluster.parse_node_list(&listed.stdout_text())?;
    if nodes.is_empty() {
        return Err(format!("`{listing}` names no node"));
    }
    Ok(join_all(nodes.into_iter().map(|node| survey_node(cluster, node))).await)
}

async fn survey_node(cluster: &NodeCluster, node: String) -> NodeSurvey {
    let content = cluster.ctr(&node, false, &["content", "ls", "-q"]);
    let snapshotter = async {
        let Some(dump) = cluster.config_dump(&node) else {
            return Ok(None);
        };
        let out = exec::capture(&dump, cluster.bound()).await?;
        snapshotter_in_config(&out.stdout_text())
            .map(Some)
            .ok_or_else(|| format!("`{dump}` names no snapshotter for the CRI plugin"))
    };
    let (content, snapshotter) =
        tokio::join!(exec::capture(&content, cluster.bound()), snapshotter);
    match (content, snapshotter) {
        (Ok(content), Ok(snapshotter)) => NodeSurvey::Known(NodeHoldings {
            blobs: content
                .stdout_text()
                .lines()
                .filter_map(|line| line.trim().parse().ok())
                .collect(),
            node,
            snapshotter,
        }),
        (Err(why), _) | (_, Err(why)) => NodeSurvey::Unknown { node, why },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(byte: u8) -> Digest {
        Digest::of_bytes(&[byte])
    }

    #[test]
    fn lacks_names_each_missing_digest_once_in_order() {
        let holdings = NodeHoldings {
            node: "n".to_string(),
            snapshotter: None,
            blobs: [digest(1), digest(3)].into_iter().collect(),
        };
        let wanted = [digest(4), digest(1), digest(2), digest(4), digest(3)];
        assert_eq!(holdings.lacks(&wanted), vec![&digest(4), &digest(2)]);
    }
}
