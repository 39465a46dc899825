//! The connected client (kubeconfig or in-cluster), its failures told as the cluster names
//! them, and the reads discovery, `info`, `ls` and `why` share (the hosting ConfigMap, OpenShift's
//! image config, nodes, pods, events, who uses which image) -> plain facts. Small typed modules
//! over kube's `Api<K>` sit near their callers on its client: `HostingWrites` (advertise) and
//! `ProbePods` (doctor) here, `rollout::RolloutApi` beside the wait, the tunnel's Service reads
//! and port-forward in `tunnel`.

mod access;
mod answers;
mod config;
mod events;
mod follow;
mod health;
mod hosting_write;
mod minikube_addon;
mod pod_status;
mod pods;
mod workloads;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Node, Service};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::client::AuthError;
use secrecy::SecretString;
use tokio::sync::OnceCell;

use crate::cluster::ClusterOptions;
use crate::cluster::exec_plugin::{self, PluginFailure};
use crate::cluster::hosting::{HOSTING_CONFIGMAP, HOSTING_NAME, HOSTING_NAMESPACE};
use crate::cluster::kubeconfig::KubeconfigFacts;
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::limits::{REQUEST_TIMEOUT_ENV, seconds_text};
use crate::plumbing::output::Printer;
use crate::settings::Settings;

pub use crate::cluster::rollout::WorkloadKind;
use config::ClientSettings;
pub use events::PodEvent;
pub use follow::{Change, WATCH_SECONDS};
pub(in crate::cluster) use follow::{follow, watch_config};
pub use hosting_write::{HostingWrites, Written};
pub use pod_status::{ContainerFacts, ContainerState, DeploymentPods, PodFacts, replica_failure};
pub(crate) use pods::PULL_FAILURES;
pub use pods::{ProbePod, ProbePods, PullState};
pub use workloads::{ImageUse, ImageUses, usage_forbidden};

/// An unreachable API server fails in seconds, never hangs.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const READ_TIMEOUT: Duration = Duration::from_secs(15);
/// Nodes per list request (kubectl's page size).
const NODE_PAGE: u32 = 500;

/// microk8s's registry addon Service.
pub const MICROK8S_REGISTRY_NAMESPACE: &str = "container-registry";
pub const MICROK8S_REGISTRY_SERVICE: &str = "registry";

/// What the product detector needs to know about one node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFacts {
    pub name: String,
    pub provider_id: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// `status.nodeInfo.containerRuntimeVersion`: `containerd://1.7.24`, `docker://27.4.1`,
    /// `cri-o://1.29.1`.
    pub container_runtime: Option<String>,
}

/// OpenShift's `images.config.openshift.io/cluster`: where its integrated registry is reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenshiftImageConfig {
    /// `status.internalRegistryHostname`: what nodes and pods use; absent when the registry is removed.
    pub internal_registry_hostname: Option<String>,
    /// `status.externalRegistryHostnames`: the routes users push to, first one first.
    pub external_registry_hostnames: Vec<String>,
}

/// The OpenShift object naming the integrated registry, as messages name it.
pub const OPENSHIFT_IMAGE_CONFIG: &str = "images.config.openshift.io/cluster";

/// The answer to a read that may legitimately find nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup<T> {
    Found(T),
    NotFound,
    /// RBAC forbids the read; for discovery the same as absent.
    Forbidden,
}

impl<T> Lookup<T> {
    /// The found value made into another.
    pub fn map<U>(self, make: impl FnOnce(T) -> U) -> Lookup<U> {
        match self {
            Self::Found(found) => Lookup::Found(make(found)),
            Self::NotFound => Lookup::NotFound,
            Self::Forbidden => Lookup::Forbidden,
        }
    }
}

/// A connected client for the chosen context, with the node list read at most once. Cheap to
/// clone (the tunnel keeps one to find a registry's pod again).
#[derive(Clone)]
pub struct Cluster {
    pub(in crate::cluster) client: kube::Client,
    facts: KubeconfigFacts,
    /// The context's namespace (`default` when it sets none), or the pod's in a pod.
    namespace: String,
    /// Connected through the pod's service account rather than a kubeconfig.
    in_cluster: bool,
    /// The bearer token we present to the API server, when it is a plain token (OpenShift's
    /// registry accepts the same one).
    bearer_token: Option<SecretString>,
    pub(in crate::cluster) target: Target,
    pub(in crate::cluster) printer: Printer,
    nodes: OnceCell<Vec<NodeFacts>>,
}

impl Cluster {
    /// Builds a client for the chosen context; no request is sent yet.
    pub async fn connect(
        args: &ClusterOptions,
        settings: &Settings,
        printer: &Printer,
    ) -> Result<Self> {
        let ClientSettings {
            mut config,
            facts,
            in_cluster,
        } = config::client_config(args, settings, printer).await?;
        let namespace = config.default_namespace.clone();
        let bearer_token = config::bearer_token(&config.auth_info);
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        config.read_timeout = Some(READ_TIMEOUT);
        config.write_timeout = Some(READ_TIMEOUT);
        // The read timeout counts from each request, not from when a pooled connection went idle.
        config.reset_reader_on_write = true;
        let target = Target {
            context: facts.context.clone(),
            server: uri_text(&config.cluster_url),
            proxy: config.proxy_url.as_ref().map(uri_text),
        };
        // An exec credential plugin is run here, bounded, so that kube's client (which would
        // run it without a bound) gets its token instead.
        exec_plugin::resolve(&mut config.auth_info)
            .await
            .map_err(|failure| target.plugin_error(failure))?;
        let builder = kube::client::ClientBuilder::try_from(config).map_err(|err| match err {
            kube::Error::Auth(auth) => target.credentials_error(auth),
            other => Error::new(
                ExitCode::Cluster,
                format!("setting up a client for {}", target.describe()),
            )
            .with_source(other),
        })?;
        // kube's client buffers whole answers: each is capped, and a web page is told as one.
        let client = builder
            .with_layer(&answers::Guard {
                limit: answers::API_ANSWER_LIMIT,
                within: settings.limits.request_timeout,
            })
            .build();
        Ok(Self {
            client,
            facts,
            namespace,
            in_cluster,
            bearer_token,
            target,
            printer: printer.clone(),
            nodes: OnceCell::new(),
        })
    }

    /// The node list is read again when next asked (a client kept across `--watch` rounds).
    pub fn forget_nodes(&mut self) {
        self.nodes = OnceCell::new();
    }

    pub fn facts(&self) -> &KubeconfigFacts {
        &self.facts
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// True when reached with the pod's service account (in-cluster config).
    pub fn in_cluster(&self) -> bool {
        self.in_cluster
    }

    /// The plain bearer token the API server gets from us; `None` for client certificates and
    /// exec plugins, whose tokens only kube's client sees.
    pub fn bearer_token(&self) -> Option<&SecretString> {
        self.bearer_token.as_ref()
    }

    /// OpenShift's cluster-scoped image config. An API server without the
    /// `config.openshift.io` group answers 404, like a missing object.
    pub async fn openshift_image_config(&self) -> Result<Lookup<OpenshiftImageConfig>> {
        let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", "Image");
        let resource = ApiResource::from_gvk_with_plural(&gvk, "images");
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let lookup = self.lookup(api.get("cluster").await, || {
            format!("reading {OPENSHIFT_IMAGE_CONFIG}")
        })?;
        Ok(match lookup {
            Lookup::Found(object) => Lookup::Found(openshift_image_config(&object.data)),
            Lookup::NotFound => Lookup::NotFound,
            Lookup::Forbidden => Lookup::Forbidden,
        })
    }

    /// The data of ConfigMap `kube-public/local-registry-hosting`.
    pub async fn hosting_configmap(&self) -> Result<Lookup<BTreeMap<String, String>>> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), HOSTING_NAMESPACE);
        let lookup = self.lookup(api.get(HOSTING_NAME).await, || {
            format!("reading ConfigMap {HOSTING_CONFIGMAP}")
        })?;
        Ok(match lookup {
            Lookup::Found(configmap) => Lookup::Found(configmap.data.unwrap_or_default()),
            Lookup::NotFound => Lookup::NotFound,
            Lookup::Forbidden => Lookup::Forbidden,
        })
    }

    /// Every node, listed once and shared by all callers. A user RBAC forbids to list nodes sees none.
    pub async fn nodes(&self) -> Result<Vec<NodeFacts>> {
        let nodes = self
            .nodes
            .get_or_try_init(|| async {
                let api: Api<Node> = Api::all(self.client.clone());
                let mut facts = Vec::new();
                let mut page = ListParams::default().limit(NODE_PAGE);
                // In pages, as kubectl lists: each answer stays far under the cap.
                loop {
                    let listed = api.list(&page).await;
                    match self.lookup(listed, || "listing nodes".to_string())? {
                        Lookup::Found(list) => {
                            facts.extend(list.items.into_iter().map(node_facts));
                            match list.metadata.continue_.filter(|token| !token.is_empty()) {
                                Some(token) => page = page.continue_token(&token),
                                None => return Ok::<_, Error>(facts),
                            }
                        }
                        Lookup::NotFound | Lookup::Forbidden => {
                            self.printer
                                .debug("listing nodes is not allowed here; no node facts");
                            return Ok(Vec::new());
                        }
                    }
                }
            })
            .await?;
        Ok(nodes.clone())
    }

    /// The first NodePort of microk8s's Service `container-registry/registry`, when it has one.
    pub async fn microk8s_registry_node_port(&self) -> Result<Lookup<Option<i32>>> {
        let api: Api<Service> = Api::namespaced(self.client.clone(), MICROK8S_REGISTRY_NAMESPACE);
        let lookup = self.lookup(api.get(MICROK8S_REGISTRY_SERVICE).await, || {
            format!("reading Service {MICROK8S_REGISTRY_NAMESPACE}/{MICROK8S_REGISTRY_SERVICE}")
        })?;
        Ok(match lookup {
            Lookup::Found(service) => Lookup::Found(
                service
                    .spec
                    .and_then(|spec| spec.ports)
                    .unwrap_or_default()
                    .into_iter()
                    .find_map(|port| port.node_port),
            ),
            Lookup::NotFound => Lookup::NotFound,
            Lookup::Forbidden => Lookup::Forbidden,
        })
    }

    /// Sorts an answer into found / not found / forbidden, or an error naming the context and server.
    pub(crate) fn lookup<T>(
        &self,
        answer: kube::Result<T>,
        doing: impl FnOnce() -> String,
    ) -> Result<Lookup<T>> {
        match answer {
            Ok(found) => Ok(Lookup::Found(found)),
            // By code too: a group the server does not serve answers a bare `404 page not
            // found`, which kube wraps in a Status without the NotFound reason.
            Err(kube::Error::Api(status)) if status.is_not_found() || status.code == 404 => {
                Ok(Lookup::NotFound)
            }
            Err(kube::Error::Api(status)) if status.is_forbidden() => Ok(Lookup::Forbidden),
            Err(err) => Err(self.request_error(doing(), err)),
        }
    }

    fn request_error(&self, doing: String, err: kube::Error) -> Error {
        let target = self.target.describe();
        let check = self.target.check();
        match err {
            kube::Error::Api(status) if status.code == 401 => Error::new(
                ExitCode::Cluster,
                format!("{doing}: the API server of {target} does not accept our credentials"),
            )
            .with_source(status.message.clone())
            .with_hint(format!(
                "log in again (your credentials may have expired), then try {check}"
            )),
            kube::Error::Api(status) => Error::new(
                ExitCode::Cluster,
                format!(
                    "{doing}: the API server of {target} answered {} {}",
                    status.code, status.reason
                ),
            )
            .with_source(status.message.clone()),
            kube::Error::Auth(auth) => self.target.credentials_error(auth),
            other => self.transport_error(doing, other),
        }
    }

    /// A request that got no usable answer: a web page instead of the API, an answer over the
    /// cap, no answer in time, or no connection at all.
    fn transport_error(&self, doing: String, err: kube::Error) -> Error {
        let target = self.target.describe();
        let check = self.target.check();
        let through = if self.target.proxy.is_some() {
            "cluster (and the proxy)"
        } else {
            "cluster"
        };
        if let Some(page) = find_in_chain::<answers::NotTheApi>(&err) {
            return Error::new(
                ExitCode::Cluster,
                format!("{doing}: {target} is not answered by a Kubernetes API server: {page}"),
            )
            .with_hint(format!(
                "something else answers at that address (a login page of a proxy or VPN?): log in \
                 to it, or fix the server (or proxy-url) of the kubeconfig, then try {check}"
            ));
        }
        if find_in_chain::<http_body_util::LengthLimitError>(&err).is_some() {
            return Error::new(
                ExitCode::Cluster,
                format!(
                    "{doing}: the API server of {target} sent more than {} MiB; we stopped reading there",
                    answers::API_ANSWER_LIMIT >> 20
                ),
            )
            .with_hint(format!(
                "no answer we ask for is that large: check what answers at that address, then try {check}"
            ));
        }
        if let Some(slow) = find_in_chain::<answers::AnswerTooSlow>(&err) {
            return Error::new(
                ExitCode::Cluster,
                format!("{doing}: the API server of {target} answered too slowly: {slow}"),
            )
            .with_hint(format!(
                "its answer kept coming, a little at a time: is the {through} overloaded or stuck? \
                 {check} shows whether it answers; {REQUEST_TIMEOUT_ENV} sets how long to wait"
            ));
        }
        let connecting = find_in_chain::<hyper_util::client::legacy::Error>(&err)
            .is_some_and(hyper_util::client::legacy::Error::is_connect);
        let timed_out = chain(&err).any(|cause| {
            cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        });
        if timed_out && !connecting {
            return Error::new(
                ExitCode::Cluster,
                format!(
                    "{doing}: the API server of {target} did not answer within {}",
                    seconds_text(READ_TIMEOUT)
                ),
            )
            .with_hint(format!(
                "the connection was made but no answer came: is the {through} overloaded or stuck? \
                 {check} shows whether it answers"
            ));
        }
        let unreachable = Error::new(
            ExitCode::Cluster,
            format!("{doing}: cannot reach the API server of {target}"),
        )
        .with_hint(format!(
            "is the {through} running? {check} shows whether it answers"
        ));
        // The transport's own chain says more than kube's wrapper around it.
        match err {
            kube::Error::Service(transport) => unreachable.with_source(transport),
            kube::Error::HyperError(transport) => unreachable.with_source(transport),
            other => unreachable.with_source(other),
        }
    }
}

/// Which API server we talk to, and how, for messages.
#[derive(Clone)]
pub(in crate::cluster) struct Target {
    context: Option<String>,
    server: String,
    /// From the kubeconfig's proxy-url or HTTPS_PROXY (unless NO_PROXY matches).
    proxy: Option<String>,
}

impl Target {
    /// `context "kind-dev" (https://127.0.0.1:6443)`, naming the proxy when there is one.
    pub(in crate::cluster) fn describe(&self) -> String {
        let how = match &self.proxy {
            Some(proxy) => format!("{} through proxy {proxy}", self.server),
            None => self.server.clone(),
        };
        match &self.context {
            Some(context) => format!("context {context:?} ({how})"),
            None => format!("the in-cluster API server ({how})"),
        }
    }

    /// What the user can run to try the same server without us.
    fn check(&self) -> String {
        match &self.context {
            Some(context) => format!("`kubectl --context {context} get nodes`"),
            None => "`kubectl get nodes` from this pod".to_string(),
        }
    }

    fn plugin_error(&self, failure: PluginFailure) -> Error {
        let message = format!("getting credentials for {}", self.describe());
        let log_in_again = format!(
            "log in again with that plugin's tool, then try {}",
            self.check()
        );
        match failure {
            PluginFailure::Failed(status, said) => {
                let failed = Error::new(
                    ExitCode::Cluster,
                    format!("{message}: the kubeconfig's exec credential plugin failed ({status})"),
                )
                .with_hint(log_in_again);
                if said.is_empty() {
                    failed
                } else {
                    failed.with_source(said)
                }
            }
            PluginFailure::Hung(command, bound) => Error::new(
                ExitCode::Cluster,
                format!(
                    "{message}: the kubeconfig's exec credential plugin {command:?} did not answer within {}; it was stopped",
                    seconds_text(bound)
                ),
            )
            .with_hint(format!(
                "run {command:?} yourself to see what it waits for (a login, a prompt, the network), then try {}",
                self.check()
            )),
            PluginFailure::Start(command, err) => Error::new(
                ExitCode::Cluster,
                format!("{message}: the kubeconfig's exec credential plugin {command:?} could not be run"),
            )
            .with_source(err)
            .with_hint(format!(
                "install it, or fix the user entry of the kubeconfig, then try {}",
                self.check()
            )),
            PluginFailure::BadAnswer(command, why) => Error::new(
                ExitCode::Cluster,
                format!("{message}: the kubeconfig's exec credential plugin {command:?} gave no credentials: {why}"),
            )
            .with_hint(log_in_again),
        }
    }

    fn credentials_error(&self, auth: AuthError) -> Error {
        let message = format!("getting credentials for {}", self.describe());
        match auth {
            AuthError::AuthExecRun { out, .. } => {
                let failed = Error::new(
                    ExitCode::Cluster,
                    format!(
                        "{message}: the kubeconfig's exec credential plugin failed ({})",
                        out.status
                    ),
                )
                .with_hint(format!(
                    "log in again with that plugin's tool, then try {}",
                    self.check()
                ));
                // What the plugin said is the useful part; kube's own text is its debug dump.
                let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
                if said.is_empty() {
                    failed
                } else {
                    failed.with_source(said)
                }
            }
            other => Error::new(ExitCode::Cluster, message)
                .with_source(other)
                .with_hint(format!(
                    "check the user entry of the kubeconfig, then try {}",
                    self.check()
                )),
        }
    }
}

/// `err` and each error under it.
fn chain<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(err), |current| current.source())
}

/// The first error of type `T` in `err`'s chain.
fn find_in_chain<T: std::error::Error + 'static>(err: &kube::Error) -> Option<&T> {
    chain(err).find_map(|cause| cause.downcast_ref::<T>())
}

fn openshift_image_config(data: &serde_json::Value) -> OpenshiftImageConfig {
    let status = &data["status"];
    OpenshiftImageConfig {
        internal_registry_hostname: status["internalRegistryHostname"]
            .as_str()
            .filter(|host| !host.is_empty())
            .map(str::to_string),
        external_registry_hostnames: status["externalRegistryHostnames"]
            .as_array()
            .map(|hosts| {
                hosts
                    .iter()
                    .filter_map(serde_json::Value::as_str)
                    .filter(|host| !host.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// A URI as users write it: kube's URI type adds a `/` path to a bare authority.
fn uri_text(uri: &impl std::fmt::Display) -> String {
    let text = uri.to_string();
    text.strip_suffix('/').map(str::to_string).unwrap_or(text)
}

fn node_facts(node: Node) -> NodeFacts {
    NodeFacts {
        name: node.metadata.name.unwrap_or_default(),
        provider_id: node.spec.and_then(|spec| spec.provider_id),
        labels: node.metadata.labels.unwrap_or_default(),
        annotations: node.metadata.annotations.unwrap_or_default(),
        container_runtime: node
            .status
            .and_then(|status| status.node_info)
            .map(|info| info.container_runtime_version)
            .filter(|runtime| !runtime.is_empty()),
    }
}
