//! The pod `portforward` subresource over WebSocket (what `kubectl port-forward` asks for):
//! one stream to one pod port per call, and the failures told as what to do.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use tokio::io::DuplexStream;

use super::Cluster;
use super::services::{Backend, forbidden};
use crate::error::{Error, ExitCode};
use crate::limits::seconds_text;

/// How long opening one stream may take (the upgrade's answer).
pub(super) const OPEN_TIMEOUT: Duration = Duration::from_secs(15);

/// Opens streams to one pod port; cheap to clone, one per connection bridged.
#[derive(Clone)]
pub struct Forwarder {
    pods: Api<Pod>,
    pub backend: Backend,
    server: String,
}

/// One open stream: its bytes, and the kubelet's error message for it (when it sends one).
pub struct Stream {
    pub io: DuplexStream,
    pub error: Option<tokio::sync::oneshot::Receiver<String>>,
    pub forwarder: kube::api::Portforwarder,
}

impl Cluster {
    /// A forwarder to `backend`'s pod and port.
    pub fn forwarder(&self, backend: &Backend) -> Forwarder {
        Forwarder {
            pods: Api::namespaced(self.client.clone(), &backend.namespace),
            backend: backend.clone(),
            server: self.target.describe(),
        }
    }
}

impl Cluster {
    /// Whether RBAC lets us create `pods/portforward` in `namespace`: a SelfSubjectAccessReview,
    /// as `kubectl auth can-i create pods/portforward` asks.
    pub async fn may_port_forward(&self, namespace: &str) -> crate::error::Result<bool> {
        self.may("create", "", "pods/portforward", namespace).await
    }
}

impl Forwarder {
    /// One new stream, opened within [`OPEN_TIMEOUT`].
    pub async fn open(&self) -> Result<Stream, Error> {
        let Backend { pod, port, .. } = &self.backend;
        let opened = tokio::time::timeout(OPEN_TIMEOUT, self.pods.portforward(pod, &[*port])).await;
        let mut forwarder = match opened {
            Err(_) => {
                return Err(self.failure(format!(
                    "the API server of {} did not open it within {}",
                    self.server,
                    seconds_text(OPEN_TIMEOUT)
                )));
            }
            Ok(Err(err)) => return Err(self.error(err)),
            Ok(Ok(forwarder)) => forwarder,
        };
        let io = forwarder.take_stream(*port).expect("the port asked for");
        let error = forwarder.take_error(*port).map(|error| {
            let (sender, receiver) = tokio::sync::oneshot::channel();
            tokio::spawn(async move {
                if let Some(message) = error.await {
                    let _ = sender.send(message);
                }
            });
            receiver
        });
        Ok(Stream {
            io,
            error,
            forwarder,
        })
    }

    /// `a port-forward to pod kube-system/registry-x port 5000`.
    pub fn describe(&self) -> String {
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
