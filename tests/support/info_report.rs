//! The report `kubectl registry info` prints, written once for every test that pins it: a
//! [`Report`] says what differs from one cluster to the next (its context, the product, the
//! registry found), and [`Report::text`] and [`Report::json`] are the whole text and `-o json`
//! documents the command prints for it, to compare with `Outcome::assert_stdout`.

/// kind's `local-registry-hosting` value as kind's local-registry script writes it.
pub(crate) const KIND_SCRIPT_V1: &str =
    "host: \"localhost:5001\"\nhelp: \"https://kind.sigs.k8s.io/docs/user/local-registry/\"\n";
/// kind's guide to a local registry (the `help` of [`KIND_SCRIPT_V1`]).
pub(crate) const KIND_HELP: &str = "https://kind.sigs.k8s.io/docs/user/local-registry/";

/// The product a report names: as `-o json` names it, as the text says it, how push loads an
/// image into its nodes when no registry is advertised, and its registry guide.
pub(crate) struct Product {
    kind: &'static str,
    cluster_name: Option<String>,
    shown: String,
    load: Option<String>,
    guide: Option<&'static str>,
}

impl Product {
    /// kind, cluster `name`.
    pub(crate) fn kind(name: &str) -> Self {
        Self::named("kind", name, "cluster")
            .load(format!("load the image into the nodes of kind cluster \"{name}\": `kind load image-archive <archive> --name {name}`"))
            .guide(KIND_HELP)
    }

    /// k3d, cluster `name`.
    pub(crate) fn k3d(name: &str) -> Self {
        Self::named("k3d", name, "cluster")
            .load(format!("load the image into the nodes of k3d cluster \"{name}\": `k3d image import <archive> -c {name}`"))
            .guide("https://k3d.io/stable/usage/registries/")
    }

    /// minikube, profile `name`.
    pub(crate) fn minikube(name: &str) -> Self {
        Self::named("minikube", name, "profile")
            .load(format!("load the image into the nodes of minikube profile \"{name}\": `minikube image load <archive> -p {name}`"))
            .guide("https://minikube.sigs.k8s.io/docs/handbook/registry/")
    }

    pub(crate) fn microk8s() -> Self {
        Self::unnamed("microk8s", "MicroK8s")
            .load("load the image into every MicroK8s node: `microk8s images import <archive>`, or `microk8s ctr image import <archive>` where MicroK8s is older than 1.25".to_string())
            .guide("https://microk8s.io/docs/registry-built-in")
    }

    pub(crate) fn docker_desktop() -> Self {
        Self::unnamed("docker-desktop", "Docker Desktop")
            .load("load the image into the local docker image store (docker's current context), which the Docker Desktop nodes share: `docker load -i <archive>`".to_string())
            .guide("https://docs.docker.com/desktop/features/kubernetes/")
    }

    /// A cluster of no product known: no way to load an image, no guide.
    pub(crate) fn unknown() -> Self {
        Self::unnamed("unknown", "unknown")
    }

    fn named(kind: &'static str, name: &str, noun: &str) -> Self {
        Self {
            kind,
            cluster_name: Some(name.to_string()),
            shown: format!("{kind} ({noun} \"{name}\")"),
            load: None,
            guide: None,
        }
    }

    fn unnamed(kind: &'static str, shown: &str) -> Self {
        Self {
            kind,
            cluster_name: None,
            shown: shown.to_string(),
            load: None,
            guide: None,
        }
    }

    fn load(mut self, description: String) -> Self {
        self.load = Some(description);
        self
    }

    fn guide(mut self, guide: &'static str) -> Self {
        self.guide = Some(guide);
        self
    }
}

/// The registry a report names; its runtime host is its host unless [`Registry::runtime`] says.
pub(crate) struct Registry {
    host: String,
    runtime: Option<String>,
    network: Option<String>,
    help: Option<String>,
    /// The source as `-o json` names it, and as the text says it.
    source: (&'static str, &'static str),
}

impl Registry {
    /// Found in the KEP-1755 ConfigMap.
    pub(crate) fn configmap(host: &str) -> Self {
        Self::from(
            host,
            "configmap",
            "ConfigMap kube-public/local-registry-hosting (KEP-1755)",
        )
    }

    /// Found in a node's annotation.
    pub(crate) fn annotation(host: &str) -> Self {
        Self::from(
            host,
            "annotation",
            "first node's annotation (tilt.dev/registry or kind.x-k8s.io/registry)",
        )
    }

    /// Found as microk8s's registry addon Service.
    pub(crate) fn microk8s_service(host: &str) -> Self {
        Self::from(
            host,
            "microk8s-service",
            "Service container-registry/registry (microk8s registry addon)",
        )
    }

    /// Named by `--registry`.
    pub(crate) fn flag(host: &str) -> Self {
        Self::from(host, "flag", "--registry flag")
    }

    /// Named by `KUBECTL_REGISTRY_HOST`.
    pub(crate) fn env(host: &str) -> Self {
        Self::from(host, "env", "KUBECTL_REGISTRY_HOST environment variable")
    }

    fn from(host: &str, json: &'static str, text: &'static str) -> Self {
        Self {
            host: host.to_string(),
            runtime: None,
            network: None,
            help: None,
            source: (json, text),
        }
    }

    /// The host the container runtime pulls from, where it is not [`Self::host`].
    pub(crate) fn runtime(mut self, host: &str) -> Self {
        self.runtime = Some(host.to_string());
        self
    }

    /// The host on the cluster's network.
    pub(crate) fn network(mut self, host: &str) -> Self {
        self.network = Some(host.to_string());
        self
    }

    /// The help link advertised with it (the report's registry guide too).
    pub(crate) fn help(mut self, url: &str) -> Self {
        self.help = Some(url.to_string());
        self
    }

    fn runtime_host(&self) -> &str {
        self.runtime.as_deref().unwrap_or(&self.host)
    }
}

/// What `info` reports of one cluster.
pub(crate) struct Report {
    /// The context and its cluster; `None` when no kubeconfig was read.
    context: Option<(String, String)>,
    /// `None`: not detected, the cluster was not contacted.
    product: Option<Product>,
    registry: Option<Registry>,
    /// A registry guide with no registry (a help-only ConfigMap).
    guide: Option<String>,
    /// The registry was named (flag, environment), not discovered through a kubeconfig.
    named: bool,
}

const NO_WAY: &str =
    "fail: no registry is advertised and no way to load images into this cluster's nodes is known";

impl Report {
    /// Context `context`, of a cluster of the same name, at the stand-in API server.
    pub(crate) fn of(context: &str, product: Product) -> Self {
        Self {
            context: Some((context.to_string(), context.to_string())),
            product: Some(product),
            registry: None,
            guide: None,
            named: false,
        }
    }

    /// Context `kind-dev` of kind's cluster `dev`, with the registry [`KIND_SCRIPT_V1`] advertises.
    pub(crate) fn kinds_script() -> Self {
        Self::of("kind-dev", Product::kind("dev"))
            .registry(Registry::configmap("localhost:5001").help(KIND_HELP))
    }

    /// A registry named by a flag or the environment: the cluster was not contacted (no product).
    pub(crate) fn named(context: Option<&str>, registry: Registry) -> Self {
        Self {
            context: context.map(|name| (name.to_string(), name.to_string())),
            product: None,
            registry: Some(registry),
            guide: None,
            named: true,
        }
    }

    /// The context's cluster is named `cluster`.
    pub(crate) fn cluster(mut self, cluster: &str) -> Self {
        if let Some((_, named)) = &mut self.context {
            *named = cluster.to_string();
        }
        self
    }

    pub(crate) fn registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// No registry, but a help-only ConfigMap's guide.
    pub(crate) fn guide(mut self, url: &str) -> Self {
        self.guide = Some(url.to_string());
        self
    }

    /// The registry guide: the registry's help, or a help-only ConfigMap's.
    fn registry_guide(&self) -> Option<&str> {
        match &self.registry {
            Some(registry) => registry.help.as_deref(),
            None => self.guide.as_deref(),
        }
    }

    /// How push goes: `-o json`'s method and host, and the description both forms print.
    fn push(&self) -> (&'static str, Option<&str>, String) {
        if let Some(registry) = &self.registry {
            let description = format!(
                "push to {} and print refs on {}",
                registry.host,
                registry.runtime_host()
            );
            return ("registry", Some(&registry.host), description);
        }
        match self.product.as_ref().and_then(|p| p.load.as_ref()) {
            Some(load) => ("node-load", None, load.clone()),
            None => ("none", None, NO_WAY.to_string()),
        }
    }

    /// The whole of `info -o json`'s stdout.
    pub(crate) fn json(&self) -> String {
        let (context, cluster, server) = match &self.context {
            Some((context, cluster)) => (
                quote(Some(context)),
                quote(Some(cluster)),
                quote(Some("http://127.0.0.1:[PORT]")),
            ),
            None => (quote(None), quote(None), quote(None)),
        };
        let product = match &self.product {
            Some(product) => format!(
                "{{\n    \"kind\": {},\n    \"clusterName\": {}\n  }}",
                quote(Some(product.kind)),
                quote(product.cluster_name.as_deref())
            ),
            None => "null".to_string(),
        };
        let registry = match &self.registry {
            Some(registry) => format!(
                "{{
    \"host\": {},
    \"hostFromContainerRuntime\": {},
    \"hostFromClusterNetwork\": {},
    \"help\": {},
    \"source\": {}
  }}",
                quote(Some(&registry.host)),
                quote(Some(registry.runtime_host())),
                quote(registry.network.as_deref()),
                quote(registry.help.as_deref()),
                quote(Some(registry.source.0)),
            ),
            None => "null".to_string(),
        };
        let (method, host, description) = self.push();
        let reason = if self.named {
            "registry-named"
        } else {
            "kubeconfig"
        };
        format!(
            "{{
  \"context\": {context},
  \"cluster\": {cluster},
  \"server\": {server},
  \"product\": {product},
  \"registry\": {registry},
  \"registryGuide\": {guide},
  \"push\": {{
    \"method\": \"{method}\",
    \"network\": \"host\",
    \"networkReason\": \"{reason}\",
    \"host\": {host},
    \"description\": {description}
  }}
}}
",
            guide = quote(self.registry_guide()),
            host = quote(host),
            description = quote(Some(&description)),
        )
    }

    /// The whole of `info`'s stdout.
    pub(crate) fn text(&self) -> String {
        let (context, cluster, server) = match &self.context {
            Some((context, cluster)) => (
                context.as_str(),
                cluster.as_str(),
                "http://127.0.0.1:[PORT]",
            ),
            None => ("(none)", "(none)", "(none)"),
        };
        let product = match &self.product {
            Some(product) => product.shown.as_str(),
            None => "(not detected: the cluster was not contacted)",
        };
        let mut text = format!(
            "context:              {context}
cluster:              {cluster}
server:               {server}
product:              {product}
"
        );
        match &self.registry {
            Some(registry) => text.push_str(&format!(
                "registry host:        {}
runtime host:         {}
cluster-network host: {}
help:                 {}
source:               {}
",
                registry.host,
                registry.runtime_host(),
                registry.network.as_deref().unwrap_or("(not advertised)"),
                registry.help.as_deref().unwrap_or("(none)"),
                registry.source.1,
            )),
            None => {
                text.push_str("registry:             none advertised\n");
                if let Some(guide) = &self.guide {
                    text.push_str(&format!("set one up:           {guide}\n"));
                }
            }
        }
        let network = if self.named {
            "host (the registry was named, not discovered)"
        } else {
            "host (outside the cluster: a kubeconfig context)"
        };
        let (_, _, push) = self.push();
        text.push_str(&format!(
            "network:              {network}\npush:                 {push}\n"
        ));
        if self.registry.is_none() {
            text.push_str(&self.none_advertised());
        }
        text
    }

    /// What the text says after the table when no registry is advertised: why, and the way on.
    fn none_advertised(&self) -> String {
        let why = if self.guide.is_some() {
            "No local registry advertised: ConfigMap kube-public/local-registry-hosting has a help link but no
host, and neither OpenShift's image config, a node annotation nor a microk8s registry
Service names one."
        } else {
            "No local registry advertised: nothing in ConfigMap kube-public/local-registry-hosting,
OpenShift's image config, node annotations or a microk8s registry Service names one."
        };
        let product = self.product.as_ref();
        let way_on = match product.filter(|p| p.load.is_some()) {
            Some(product) => format!(
                "tip: give the cluster a registry and push uses it instead: {}",
                self.guide.as_deref().or(product.guide).unwrap_or_default()
            ),
            None => {
                let setup = match &self.guide {
                    Some(guide) => format!("set one up with this cluster's guide:\n    {guide}"),
                    None => "run a registry that advertises itself in that ConfigMap (KEP-1755):
    https://github.com/kubernetes/enhancements/tree/master/keps/sig-cluster-lifecycle/generic/1755-communicating-a-local-registry".to_string(),
                };
                format!(
                    "Ways out:
  - {setup}
  - or name one: --registry HOST[:PORT] (or KUBECTL_REGISTRY_HOST)
  - or load the image your own way: push --load-command 'PROGRAM ARGS... {{archive}}'"
                )
            }
        };
        format!("\n{why}\n{way_on}\n")
    }
}

/// A JSON string, or `null`.
fn quote(value: Option<&str>) -> String {
    serde_json::to_string(&value).expect("a string is JSON")
}
