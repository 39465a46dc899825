//! The pod's service account as kube settings (in-cluster config): the API server from
//! `KUBERNETES_SERVICE_HOST`/`_PORT`, and the token, CA and namespace files of the account's
//! directory (both as the settings read them).

use std::io::ErrorKind;
use std::net::IpAddr;
use std::path::Path;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::plumbing::error::{Error, ExitCode, Result};
use crate::settings::{DEFAULT_SERVICE_ACCOUNT_DIR, Settings};

use crate::plumbing::environment::{SERVICE_HOST as HOST_ENV, SERVICE_PORT as PORT_ENV};

/// What the pod's service account gives us.
pub struct InCluster {
    pub config: kube::Config,
    /// The pod's namespace (`default` when the file is absent, as client-go does).
    pub namespace: String,
}

/// Builds kube's in-cluster settings the way client-go does, from the account's directory.
pub fn config(settings: &Settings) -> Result<InCluster> {
    let dir = &settings.service_account_dir;
    let cluster_url = server_url(settings)?;
    let cluster_url = cluster_url.parse().map_err(|_| {
        Error::new(
            ExitCode::Cluster,
            format!("reading the pod's in-cluster config: {HOST_ENV} does not make a URL ({cluster_url})"),
        )
    })?;
    let ca_file = dir.join("ca.crt");
    let token_file = dir.join("token");
    // Read now so that a missing token fails here, naming the file, not at the first request.
    read(&token_file)?;
    let mut config = kube::Config::new(cluster_url);
    config.root_cert = Some(read_certificates(&ca_file)?);
    // kube re-reads both files as they rotate.
    config.root_cert_file = Some(ca_file);
    config.auth_info.token_file = Some(token_file.display().to_string());
    let namespace = match std::fs::read_to_string(dir.join("namespace")) {
        Ok(text) if !text.trim().is_empty() => text.trim().to_string(),
        Ok(_) => "default".to_string(),
        Err(err) if err.kind() == ErrorKind::NotFound => "default".to_string(),
        Err(err) => return Err(reading(&dir.join("namespace")).with_source(err)),
    };
    config.default_namespace = namespace.clone();
    Ok(InCluster { config, namespace })
}

/// `https://HOST:PORT` from the kubelet's variables, brackets around an IPv6 address.
fn server_url(settings: &Settings) -> Result<String> {
    let variable = |name: &str| {
        let value = match name {
            HOST_ENV => &settings.service_host,
            _ => &settings.service_port,
        };
        value
            .as_ref()
            .and_then(|value| value.to_str())
            .map(str::to_string)
            .ok_or_else(|| {
                Error::new(
                    ExitCode::Cluster,
                    format!("reading the pod's in-cluster config: {name} is not set"),
                )
                .with_hint(format!(
                    "in a pod the kubelet sets {HOST_ENV} and {PORT_ENV}; elsewhere unset {HOST_ENV} or use a kubeconfig"
                ))
            })
    };
    let host = variable(HOST_ENV)?;
    let port = variable(PORT_ENV)?;
    let bad = |what: String| {
        Error::new(
            ExitCode::Cluster,
            format!("reading the pod's in-cluster config: {what}"),
        )
    };
    let port: u16 = port
        .parse()
        .map_err(|_| bad(format!("{PORT_ENV} {port:?} is not a port")))?;
    let authority = match host.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) => format!("[{v6}]:{port}"),
        _ => format!("{host}:{port}"),
    };
    Ok(format!("https://{authority}"))
}

fn read_certificates(path: &Path) -> Result<Vec<Vec<u8>>> {
    let pem = read(path)?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .map(|cert| cert.map(|der| der.to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| reading(path).with_source(err))?;
    if certificates.is_empty() {
        return Err(reading(path).with_source("it holds no PEM certificate"));
    }
    Ok(certificates)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|err| reading(path).with_source(err))
}

fn reading(path: &Path) -> Error {
    Error::new(
        ExitCode::Cluster,
        format!("reading the pod's service account: {}", path.display()),
    )
    .with_hint(format!(
        "a pod finds its service account in {DEFAULT_SERVICE_ACCOUNT_DIR} unless the pod spec sets automountServiceAccountToken: false; or skip discovery with --registry HOST[:PORT]"
    ))
}
