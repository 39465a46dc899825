//! A product's own load command: what kind, k3d, minikube, microk8s, k3s and the docker-based
//! products run to load an archive into their nodes, as a [`LoadPlan`].

use std::ffi::OsString;
use std::path::Path;

use super::plan::{Fallback, LoadPlan, PlanSource};
use crate::cluster::product::{Destination, Product};
use crate::plumbing::process::Argv;

impl LoadPlan {
    /// How `product`'s own CLI loads `archive` into its nodes; `None` for an unknown cluster.
    pub fn for_product(product: &Product, archive: &Path) -> Option<LoadPlan> {
        let cli = product.kind.loader_cli()?;
        let name = product.cluster_name.as_deref();
        let command = |before: &[&str], after: &[&str]| {
            let mut args: Vec<OsString> = before.iter().map(OsString::from).collect();
            args.push(archive.as_os_str().to_os_string());
            args.extend(after.iter().map(OsString::from));
            Argv::new(cli.program, args)
        };
        let cluster_args: Vec<&str> = match (cli.cluster_flag, name) {
            (Some(flag), Some(name)) => vec![flag, name],
            _ => Vec::new(),
        };
        let target = product.target_phrase();
        let destination = match cli.destination {
            Destination::ClusterNodes => format!("the nodes of {target}"),
            Destination::SharedDockerStore => format!(
                "the local docker image store (docker's current context), which the {} nodes share",
                product.kind.display_name()
            ),
            Destination::Phrase(phrase) => phrase.to_string(),
        };
        let primary = command(cli.load_args, &cluster_args);
        let fallback = cli.fallback.map(|fallback| Fallback {
            command: command(fallback.load_args, &[]),
            when_output_contains: fallback.when_output_contains,
        });
        let mut description = format!("load the image into {destination}: `{primary}`");
        if let (Some(fallback), Some(spec)) = (&fallback, cli.fallback) {
            description.push_str(&format!(", or `{}` {}", fallback.command, spec.releases));
        }
        Some(Self::new(
            primary,
            fallback,
            description,
            target,
            PlanSource::Product(product.kind),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::product::ProductKind;

    fn product(kind: ProductKind, cluster_name: Option<&str>) -> Product {
        Product {
            kind,
            cluster_name: cluster_name.map(str::to_string),
        }
    }

    fn plan_argv(kind: ProductKind, name: Option<&str>) -> Vec<String> {
        let plan =
            LoadPlan::for_product(&product(kind, name), Path::new("/tmp/x/img.tar")).unwrap();
        plan.command().argv()
    }

    #[test]
    fn each_product_loads_with_its_own_cli() {
        use ProductKind::*;
        let cases: [(ProductKind, Option<&str>, &str); 12] = [
            (
                Kind,
                Some("dev"),
                "kind load image-archive /tmp/x/img.tar --name dev",
            ),
            (Kind, None, "kind load image-archive /tmp/x/img.tar"),
            (K3d, Some("dev"), "k3d image import /tmp/x/img.tar -c dev"),
            (
                Minikube,
                Some("dev"),
                "minikube image load /tmp/x/img.tar -p dev",
            ),
            (Minikube, None, "minikube image load /tmp/x/img.tar"),
            (Microk8s, None, "microk8s images import /tmp/x/img.tar"),
            (K3s, None, "k3s ctr -n k8s.io images import /tmp/x/img.tar"),
            (DockerDesktop, None, "docker load -i /tmp/x/img.tar"),
            (Orbstack, None, "docker load -i /tmp/x/img.tar"),
            (Colima, Some("default"), "docker load -i /tmp/x/img.tar"),
            (RancherDesktop, None, "docker load -i /tmp/x/img.tar"),
            (K3d, None, "k3d image import /tmp/x/img.tar"),
        ];
        for (kind, name, expected) in cases {
            let expected: Vec<&str> = expected.split(' ').collect();
            assert_eq!(plan_argv(kind, name), expected, "{kind} {name:?}");
        }
        assert!(
            LoadPlan::for_product(&product(ProductKind::Unknown, None), Path::new("/a.tar"))
                .is_none()
        );
    }

    #[test]
    fn microk8s_falls_back_to_ctr_when_images_import_is_unknown() {
        let plan = LoadPlan::for_product(
            &product(ProductKind::Microk8s, None),
            Path::new("/tmp/img.tar"),
        )
        .unwrap();
        let fallback = plan.fallback().unwrap();
        assert_eq!(
            fallback.command.argv(),
            ["microk8s", "ctr", "image", "import", "/tmp/img.tar"]
        );
        assert_eq!(
            fallback.when_output_contains,
            "is not a valid MicroK8s subcommand"
        );
        assert!(
            LoadPlan::for_product(&product(ProductKind::Kind, None), Path::new("/a"))
                .unwrap()
                .fallback()
                .is_none()
        );
    }

    #[test]
    fn descriptions_say_where_the_image_goes_and_what_runs() {
        let describe = |kind, name| {
            LoadPlan::for_product(&product(kind, name), Path::new("/tmp/img.tar"))
                .unwrap()
                .description()
                .to_string()
        };
        assert_eq!(
            describe(ProductKind::Kind, Some("dev")),
            "load the image into the nodes of kind cluster \"dev\": `kind load image-archive /tmp/img.tar --name dev`"
        );
        assert_eq!(
            describe(ProductKind::DockerDesktop, None),
            "load the image into the local docker image store (docker's current context), which the Docker Desktop nodes share: `docker load -i /tmp/img.tar`"
        );
        assert_eq!(
            describe(ProductKind::Microk8s, None),
            "load the image into every MicroK8s node: `microk8s images import /tmp/img.tar`, or `microk8s ctr image import /tmp/img.tar` where MicroK8s is older than 1.25"
        );
    }
}
