//! The pod `portforward` subresource over WebSocket (what `kubectl port-forward` asks for):
//! one upgraded connection to one pod port per call (its frames are the tunnel's), and the
//! failures told as what to do.

use std::time::Duration;

use kube::client::Connection;

use super::services::{Backend, forbidden};
use crate::cluster::client::Cluster;
use crate::plumbing::error::{Error, ExitCode};
use crate::plumbing::limits::seconds_text;

/// How long opening one stream may take (the upgrade's answer).
const OPEN_TIMEOUT: Duration = Duration::from_secs(15);

/// Opens streams to one pod port; cheap to clone, one per connection bridged.
#[derive(Clone)]
pub(super) struct Forwarder {
    client: kube::Client,
    pub(super) backend: Backend,
    server: String,
}

/// Whether RBAC lets us create `pods/portforward` in `namespace`: a SelfSubjectAccessReview,
/// as `kubectl auth can-i create pods/portforward` asks.
pub async fn may_port_forward(
    cluster: &Cluster,
    namespace: &str,
) -> crate::plumbing::error::Result<bool> {
    cluster
        .may("create", "", "pods/portforward", namespace)
        .await
}

impl Forwarder {
    /// A forwarder to `backend`'s pod and port.
    pub(super) fn new(cluster: &Cluster, backend: &Backend) -> Self {
        Self {
            client: cluster.client.clone(),
            backend: backend.clone(),
            server: cluster.target.describe(),
        }
    }

    /// One new stream, opened within [`OPEN_TIMEOUT`]: the upgraded WebSocket, whose frames
    /// are the caller's to speak.
    pub(super) async fn open(&self) -> Result<Connection, Error> {
        let Backend {
            namespace,
            pod,
            port,
        } = &self.backend;
        let request = kube::core::Request::new(format!("/api/v1/namespaces/{namespace}/pods"))
            .portforward(pod, &[*port])
            .map_err(|err| self.failure(err.to_string()))?;
        let opened = tokio::time::timeout(OPEN_TIMEOUT, self.client.connect(request)).await;
        match opened {
            Err(_) => Err(self.failure(format!(
                "the API server of {} did not open it within {}",
                self.server,
                seconds_text(OPEN_TIMEOUT)
            ))),
            Ok(Err(err)) => Err(self.error(err)),
            Ok(Ok(connection)) => Ok(connection),
        }
    }

    /// `a port-forward to pod kube-system/registry-x port 5000`.
    pub(super) fn describe(&self) -> String {
        let Backend {
            namespace,
            pod,
            port,
        } = &self.backend;
        format!("a port-forward to pod {namespace}/{pod} port {port}")
    }

    fn failure(&self, why: String) -> Error {
        Error::new(
            ExitCode::Cluster,
            format!("opening {} through the API server: {why}", self.describe()),
        )
    }

    fn error(&self, err: kube::Error) -> Error {
        match err {
            kube::Error::Api(status) if status.is_forbidden() || status.code == 403 => {
                forbidden("create", "pods/portforward", &self.backend.namespace)
                    .with_source(status.message)
            }
            kube::Error::Api(status) => self
                .failure(format!("the API server answered {} {}", status.code, status.reason))
                .with_source(status.message)
                .with_hint(not_the_protocol_hint()),
            kube::Error::UpgradeConnection(upgrade) => self
                .failure(format!(
                    "the API server of {} does not speak the port-forward protocol (WebSocket, v4.channel.k8s.io)",
                    self.server
                ))
                .with_source(upgrade)
                .with_hint(not_the_protocol_hint()),
            other => self
                .failure(format!("cannot reach the API server of {}", self.server))
                .with_source(other),
        }
    }
}

fn not_the_protocol_hint() -> String {
    "a proxy between here and the API server may not pass WebSocket upgrades on; `kubectl port-forward` fails the same way there. Push to a registry reachable from here with --registry HOST[:PORT]".to_string()
}
