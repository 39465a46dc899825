//! Node access, below the commands and the delivery: which nodes a kind or k3d cluster has and
//! how to reach each one's runtime (`cluster`), how a command reaches them where no registry is
//! advertised (`reach`), what each node holds (`survey`: blobs and snapshotter; `images`: names,
//! digests, a small blob, removal), the content tags a node-loaded image gets and how they are
//! read back (`tags`), and the product's own load command (`plan`, `product_plan`) that `info`,
//! `doctor` and the push show and run. Every node command goes through `exec`, on the one runner.

mod cluster;
mod exec;
mod images;
mod plan;
mod product_plan;
mod reach;
mod survey;
mod tags;

use crate::cluster::hosting::{HOSTING_CONFIGMAP, KEP_URL};
use crate::cluster::product::Product;
use crate::plumbing::error::{Error, ExitCode};

pub use cluster::NodeCluster;
pub(crate) use exec::{FINISH_FACTOR, Failure, capture, stream_into};
pub use images::{
    DockerImage, ImageStore, NodeAccess, NodeImage, content as node_content, docker_images,
    node_images, node_names, remove as remove_node_images,
};
pub use plan::{ARCHIVE_PLACEHOLDER, Fallback, LoadPlan, PlanSource};
pub(crate) use reach::{node_cluster, reach_nodes};
pub use survey::{NodeHoldings, NodeSurvey, survey};
pub use tags::node_load_tag;
pub(crate) use tags::{NodeTag, read as read_node_tags};

/// No registry advertised and no product we can load into: the ways out.
pub fn nothing_advertised(context: Option<&str>) -> Error {
    Error::new(
        ExitCode::Load,
        format!(
            "no way to get the image into {}: it advertises no local registry (no ConfigMap {HOSTING_CONFIGMAP}) and is no product whose nodes we know how to load into",
            cluster_phrase(context)
        ),
    )
    .with_hint(format!(
        "give the cluster a registry and advertise it in {HOSTING_CONFIGMAP} (KEP-1755): {KEP_URL}"
    ))
    .with_hint("or push to a registry its nodes can pull from: --registry HOST[:PORT]")
    .with_hint(format!(
        "or load the image your own way: --load-command 'PROGRAM ARGS... {ARCHIVE_PLACEHOLDER}'"
    ))
}

/// No registry advertised and `--no-load` given: the ways out, with this product's guide.
pub fn loading_refused(context: Option<&str>, product: &Product) -> Error {
    let error = Error::new(
        ExitCode::Load,
        format!(
            "no way to get the image into {}: it advertises no local registry (no ConfigMap {HOSTING_CONFIGMAP}), and --no-load forbids loading it into the nodes",
            cluster_phrase(context)
        ),
    )
    .with_hint(format!(
        "give the cluster a registry and advertise it in {HOSTING_CONFIGMAP}: {}",
        product.registry_guide()
    ))
    .with_hint("or push to a registry its nodes can pull from: --registry HOST[:PORT]");
    match product.kind.loader_cli() {
        Some(cli) => error.with_hint(format!(
            "or drop --no-load to load it into {} with `{}`",
            product.target_phrase(),
            cli.program
        )),
        None => error.with_hint(format!(
            "or drop --no-load and load it your own way: --load-command 'PROGRAM ARGS... {ARCHIVE_PLACEHOLDER}'"
        )),
    }
}

fn cluster_phrase(context: Option<&str>) -> String {
    context.map_or("the current cluster".to_string(), |c| {
        format!("cluster \"{c}\"")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_advertised_names_the_configmap_and_every_way_out() {
        let err = nothing_advertised(Some("prod-like"));
        assert_eq!(err.exit_code(), ExitCode::Load);
        assert!(err.message().contains("cluster \"prod-like\""));
        assert!(err.message().contains("kube-public/local-registry-hosting"));
        let hints = err.hints().join("\n");
        assert!(hints.contains(KEP_URL));
        assert!(hints.contains("--registry HOST[:PORT]"));
        assert!(hints.contains("--load-command 'PROGRAM ARGS... {archive}'"));
    }
}
