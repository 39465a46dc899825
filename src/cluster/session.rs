//! One command run's hold on the cluster: its client (connected at most once, kept across
//! `push --watch` rounds), each round's discovery through that client, the tunnels the run
//! opened (one per Service: every round goes through the same one), and the access reviews it
//! was granted. Nothing process-wide.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use crate::cluster::ClusterOptions;
use crate::cluster::client::Cluster;
use crate::cluster::discovery::{self, Discovered};
use crate::cluster::hosting::{LocalRegistry, ServiceRef};
use crate::cluster::reach::{self, Decided, Reach};
use crate::cluster::tunnel::Tunnel;
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::settings::Settings;

/// What one command run opened in the cluster; dropped (tunnels closed) when the run ends.
pub struct Session<'a> {
    args: &'a ClusterOptions,
    settings: &'a Settings,
    printer: &'a Printer,
    client: tokio::sync::Mutex<Option<Cluster>>,
    tunnels: Mutex<Vec<(ServiceRef, Arc<Tunnel>)>>,
    /// `[verb, group, resource, namespace]` the API server said these credentials may.
    granted: Mutex<HashSet<[String; 4]>>,
}

impl<'a> Session<'a> {
    /// Nothing is connected yet.
    pub fn new(args: &'a ClusterOptions, settings: &'a Settings, printer: &'a Printer) -> Self {
        Self {
            args,
            settings,
            printer,
            client: tokio::sync::Mutex::new(None),
            tunnels: Mutex::new(Vec::new()),
            granted: Mutex::new(HashSet::new()),
        }
    }

    /// The cluster's client, connected on first use; each caller gets its own node list.
    pub async fn cluster(&self) -> Result<Cluster> {
        let mut client = self.client.lock().await;
        if let Some(cluster) = client.as_ref() {
            return Ok(cluster.clone());
        }
        let cluster = Cluster::connect(self.args, self.settings, self.printer).await?;
        *client = Some(cluster.clone());
        Ok(cluster)
    }

    /// Whether these credentials may `verb` `resource` (`pods/log`: a subresource) of `group` in
    /// `namespace`, by a SelfSubjectAccessReview. A grant is kept for the run (a `push --watch`
    /// asks before its first round only); a refusal is asked again, so that a fix made while
    /// a watch runs is seen at its next round.
    pub async fn may(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
    ) -> Result<bool> {
        let asked = [verb, group, resource, namespace].map(str::to_string);
        if self.granted().contains(&asked) {
            return Ok(true);
        }
        let allowed = self
            .cluster()
            .await?
            .may(verb, group, resource, namespace)
            .await?;
        if allowed {
            self.granted().insert(asked);
        }
        Ok(allowed)
    }

    /// Forgets every grant: the API server refused a request a kept grant allowed, so RBAC
    /// changed while the run went on, and the next round asks again before it pushes.
    pub fn forget_grants(&self) {
        self.granted().clear();
    }

    fn granted(&self) -> std::sync::MutexGuard<'_, HashSet<[String; 4]>> {
        self.granted.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// This round's discovery, through the session's client. With `--registry` or
    /// `KUBECTL_REGISTRY_HOST` the cluster is not contacted.
    pub async fn discover(&self) -> Result<Discovered> {
        discovery::discover(self.args, self.settings, self.printer, self.cluster()).await
    }

    /// Where this run reaches `registry`: the host the route picks, or a tunnel through the API
    /// server to its Service, opened once per run and Service.
    pub async fn reach(&self, discovered: &Discovered, registry: &LocalRegistry) -> Result<Reach> {
        let printer = self.printer;
        let (service, why) = match reach::decide(discovered, registry, printer).await? {
            Decided::Direct(host, field) => {
                return Ok(Reach {
                    host,
                    field,
                    tunnel: None,
                });
            }
            Decided::Tunnel(service, why) => (service, why),
        };
        printer.debug(&format!(
            "pushing through a tunnel to {service} through the API server: {}",
            why.text(registry)
        ));
        let Some(cluster) = &discovered.cluster else {
            return Err(Error::new(
                ExitCode::Usage,
                "a tunnel needs the cluster, which was not asked (--registry or KUBECTL_REGISTRY_HOST named the registry)",
            ));
        };
        let opened = self
            .tunnels()
            .iter()
            .find(|(open, _)| *open == service)
            .map(|(_, tunnel)| Arc::clone(tunnel));
        let tunnel = match opened {
            Some(tunnel) => {
                printer.debug(&format!("tunnel: {} again", tunnel.host()));
                tunnel
            }
            None => {
                let tunnel = Arc::new(Tunnel::open(cluster, &service, registry, printer).await?);
                self.tunnels().push((service, Arc::clone(&tunnel)));
                tunnel
            }
        };
        Ok(Reach {
            host: tunnel.host().clone(),
            field: None,
            tunnel: Some(tunnel),
        })
    }

    fn tunnels(&self) -> std::sync::MutexGuard<'_, Vec<(ServiceRef, Arc<Tunnel>)>> {
        self.tunnels.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
