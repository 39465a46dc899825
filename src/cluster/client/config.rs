//! kube's settings for the chosen context or the pod's service account: the kubeconfig's, with
//! `--namespace`, no environment proxy for a loopback API server, and the user's bearer token.

use kube::config::{AuthInfo, KubeConfigOptions};
use secrecy::{ExposeSecret, SecretString};

use super::uri_text;
use crate::cluster::ClusterOptions;
use crate::cluster::in_cluster;
use crate::cluster::kubeconfig::{self, Choice, KubeconfigFacts};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::settings::Settings;

/// kube's settings and what to report about them.
pub(super) struct ClientSettings {
    pub config: kube::Config,
    pub facts: KubeconfigFacts,
    pub in_cluster: bool,
}

/// kube's settings for the chosen context (or the pod's service account), and what to report.
pub(super) async fn client_config(
    args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Result<ClientSettings> {
    match kubeconfig::choose(args, settings, printer)? {
        Choice::Context(selected) => {
            let options = KubeConfigOptions {
                context: Some(selected.context.clone()),
                ..KubeConfigOptions::default()
            };
            let explicit_proxy = selected
                .kubeconfig
                .clusters
                .iter()
                .find(|named| Some(&named.name) == selected.facts.cluster.as_ref())
                .and_then(|named| named.cluster.as_ref())
                .is_some_and(|cluster| cluster.proxy_url.as_deref().is_some_and(|p| !p.is_empty()));
            let mut config = kube::Config::from_custom_kubeconfig(selected.kubeconfig, &options)
                .await
                .map_err(|err| {
                    Error::new(
                        ExitCode::Cluster,
                        format!(
                            "reading the settings of context {:?} from the kubeconfig",
                            selected.context
                        ),
                    )
                    .with_source(err)
                })?;
            if !explicit_proxy {
                drop_proxy_for_loopback(&mut config);
            }
            Ok(ClientSettings {
                config: with_system_roots(with_namespace(config, args)),
                facts: selected.facts,
                in_cluster: false,
            })
        }
        Choice::InCluster => {
            let mut config = in_cluster::config(settings)?.config;
            drop_proxy_for_loopback(&mut config);
            let facts = KubeconfigFacts {
                server: Some(uri_text(&config.cluster_url)),
                ..KubeconfigFacts::default()
            };
            Ok(ClientSettings {
                config: with_system_roots(with_namespace(config, args)),
                facts,
                in_cluster: true,
            })
        }
    }
}

/// A proxy from `HTTPS_PROXY` is not for an API server on this machine: a proxy elsewhere cannot
/// reach our loopback (Go's rule, which kubectl follows). A kubeconfig's own `proxy-url` stays.
fn drop_proxy_for_loopback(config: &mut kube::Config) {
    let loopback = config
        .cluster_url
        .host()
        .is_some_and(crate::image::reference::is_loopback_hostname);
    if loopback {
        config.proxy_url = None;
    }
}

/// Without a CA of its own, the API server is checked against the system's roots this process
/// already read, rather than kube's verifier reading them again (and refusing to start where the
/// system has none, even for a plain-HTTP API server).
fn with_system_roots(mut config: kube::Config) -> kube::Config {
    if config.root_cert.is_none()
        && let Some(roots) = crate::plumbing::tls_roots::system_roots()
    {
        config.root_cert = Some(roots.iter().map(|der| der.to_vec()).collect());
    }
    config
}

/// `--namespace` beats the context's (or the pod's) namespace, as in kubectl.
fn with_namespace(mut config: kube::Config, args: &ClusterOptions) -> kube::Config {
    if let Some(namespace) = args.namespace.as_deref().filter(|ns| !ns.is_empty()) {
        config.default_namespace = namespace.to_string();
    }
    config
}

/// The kubeconfig user's token, or the token file's content (read once, here).
pub(super) fn bearer_token(auth: &AuthInfo) -> Option<SecretString> {
    if let Some(token) = auth
        .token
        .as_ref()
        .filter(|t| !t.expose_secret().is_empty())
    {
        return Some(token.clone());
    }
    let text = std::fs::read_to_string(auth.token_file.as_deref()?).ok()?;
    let token = text.trim();
    (!token.is_empty()).then(|| SecretString::from(token.to_string()))
}
