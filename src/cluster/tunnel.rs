//! A tunnel through the API server to a registry only the cluster reaches: a loopback listener
//! here, each connection accepted bridged to a new port-forward stream to a ready pod of the
//! registry's Service. The registry client talks to `127.0.0.1:PORT` as to any registry; a
//! connection that drops is simply reopened by its retry, as a new stream.

use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};

use crate::cluster::client::{Cluster, Forwarder};
use crate::cluster::hosting::ServiceRef;
use crate::error::{Context, Error, ExitCode, Result};
use crate::image::reference::RegistryHost;
use crate::output::Printer;

/// An open tunnel; it closes (listener and streams) when dropped.
pub struct Tunnel {
    host: RegistryHost,
    service: ServiceRef,
    forwarder: Forwarder,
    last_failure: Arc<Mutex<Option<String>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Tunnel {
    /// Resolves `service` to a ready pod, checks that a port-forward to it opens (permission,
    /// protocol), and listens on a loopback port.
    pub async fn open(cluster: &Cluster, service: &ServiceRef, printer: &Printer) -> Result<Self> {
        let backend = cluster.service_backend(service).await?;
        let forwarder = cluster.forwarder(&backend);
        // The first stream shows at once what would fail every one: RBAC, the protocol.
        drop(forwarder.open().await?);
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.context(
            ExitCode::Failure,
            || "listening on a loopback port for the tunnel",
        )?;
        let port = listener
            .local_addr()
            .context(ExitCode::Failure, || "reading the tunnel's loopback port")?
            .port();
        let host = RegistryHost::parse(&format!("127.0.0.1:{port}")).expect("a loopback host");
        let last_failure = Arc::new(Mutex::new(None));
        printer.debug(&format!(
            "tunnel: {host} -> {} of {service}, through the API server",
            forwarder.describe()
        ));
        let accept = tokio::spawn(accept_loop(
            listener,
            forwarder.clone(),
            Arc::clone(&last_failure),
            printer.clone(),
        ));
        Ok(Self {
            host,
            service: service.clone(),
            forwarder,
            last_failure,
            accept,
        })
    }

    /// Where the registry client connects: `127.0.0.1:PORT`.
    pub fn host(&self) -> &RegistryHost {
        &self.host
    }

    /// `a port-forward to pod kube-system/registry-x port 5000 of Service kube-system/registry`.
    pub fn describe(&self) -> String {
        format!("{} of {}", self.forwarder.describe(), self.service)
    }

    /// A failure of the registry reached through the tunnel, with what the tunnel saw.
    pub fn explain(&self, error: Error) -> Error {
        let last = self
            .last_failure
            .lock()
            .expect("the tunnel's record")
            .clone();
        let said = match last {
            Some(failure) => format!("; its last failure: {failure}"),
            None => String::new(),
        };
        error.with_hint(format!(
            "the registry was reached through {}, through the API server{said}",
            self.describe()
        ))
    }
}

async fn accept_loop(
    listener: TcpListener,
    forwarder: Forwarder,
    last_failure: Arc<Mutex<Option<String>>>,
    printer: Printer,
) {
    loop {
        let Ok((connection, _)) = listener.accept().await else {
            continue;
        };
        let forwarder = forwarder.clone();
        let last_failure = Arc::clone(&last_failure);
        let printer = printer.clone();
        tokio::spawn(async move {
            if let Err(failure) = bridge(connection, &forwarder).await {
                printer.debug(&format!("tunnel: {failure}"));
                *last_failure.lock().expect("the tunnel's record") = Some(failure);
            }
        });
    }
}

/// One accepted connection, over one new stream, until either side ends.
async fn bridge(mut connection: TcpStream, forwarder: &Forwarder) -> Result<(), String> {
    let _ = connection.set_nodelay(true);
    let mut stream = forwarder
        .open()
        .await
        .map_err(|err| err.message().to_string())?;
    let error = stream.error.take();
    let copied = tokio::io::copy_bidirectional(&mut connection, &mut stream.io);
    let kubelet_said = async move {
        match error {
            Some(error) => error.await.ok(),
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        copied = copied => copied.map(drop).map_err(|err| format!("{} broke off: {err}", forwarder.describe())),
        Some(said) = kubelet_said => Err(format!("the kubelet said of {}: {said}", forwarder.describe())),
    }
}
