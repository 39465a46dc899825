//! Registries named without the ConfigMap: our flags and environment, the node annotations
//! Tilt still reads, and microk8s's registry Service.

use std::collections::BTreeMap;

use super::{
    KIND_REGISTRY_ANNOTATION, LocalRegistry, Note, RegistrySource, TILT_REGISTRY_ANNOTATION,
    TILT_REGISTRY_FROM_CLUSTER_ANNOTATION,
};
use crate::image::reference::{RegistryHost, shown_host};
use crate::plumbing::error::{Error, ExitCode};

/// The registry named on the command line or in the environment; `origin` names the flags or
/// variables for messages, e.g. `("--registry", "--registry-from-runtime")`.
pub fn registry_from_override(
    host: &str,
    runtime_host: Option<&str>,
    source: RegistrySource,
    origin: (&str, &str),
    notes: &mut Vec<Note>,
) -> Result<LocalRegistry, Error> {
    let parse = |raw: &str, name: &str, notes: &mut Vec<Note>| {
        let (host, scheme) = RegistryHost::parse_allowing_scheme(raw).map_err(|bad| {
            Error::new(
                ExitCode::Usage,
                format!("{name} {} is not a registry host", shown_host(raw)),
            )
            .with_source(bad)
            .with_hint("give host[:port], for example localhost:5001 or [::1]:5001")
        })?;
        if let Some(scheme) = scheme {
            notes.push(Note::Warning(format!(
                "{name} {} has a scheme ({scheme}://); using {host}",
                crate::plumbing::output::shown(raw)
            )));
        }
        Ok::<_, Error>(host)
    };
    let host = parse(host, origin.0, notes)?;
    let host_from_container_runtime = match runtime_host {
        Some(raw) => parse(raw, origin.1, notes)?,
        None => host.clone(),
    };
    Ok(LocalRegistry {
        host,
        host_from_container_runtime,
        host_from_cluster_network: None,
        service: None,
        host_advertised: true,
        help: None,
        source,
    })
}

/// The registry named by the older node annotations Tilt still reads: `tilt.dev/registry`
/// (else `kind.x-k8s.io/registry`) and `tilt.dev/registry-from-cluster` for the runtime's name.
pub fn registry_from_node_annotations(
    node: &str,
    annotations: &BTreeMap<String, String>,
    notes: &mut Vec<Note>,
) -> Result<Option<LocalRegistry>, Error> {
    let get = |name: &'static str| {
        annotations
            .get(name)
            .map(|value| (name, value.as_str()))
            .filter(|(_, value)| !value.is_empty())
    };
    let runtime = get(TILT_REGISTRY_FROM_CLUSTER_ANNOTATION);
    let Some(host) = get(TILT_REGISTRY_ANNOTATION).or_else(|| get(KIND_REGISTRY_ANNOTATION)) else {
        if runtime.is_some() {
            notes.push(Note::Debug(format!(
                "node {node} has {TILT_REGISTRY_FROM_CLUSTER_ANNOTATION} but no {TILT_REGISTRY_ANNOTATION}; ignoring it"
            )));
        }
        return Ok(None);
    };
    let mut parse = |(annotation, raw): (&str, &str)| {
        let (host, scheme) = RegistryHost::parse_allowing_scheme(raw).map_err(|bad| {
            Error::new(
                ExitCode::Cluster,
                format!("node {node}: annotation {annotation} is not a registry host"),
            )
            .with_source(bad)
            .with_hint(format!(
                "fix it with `kubectl annotate node {node} --overwrite {annotation}=HOST:PORT`, or skip discovery with --registry HOST[:PORT]"
            ))
        })?;
        if let Some(scheme) = scheme {
            notes.push(Note::Warning(format!(
                "node {node}, annotation {annotation} {} has a scheme ({scheme}://); using {host}",
                crate::plumbing::output::shown(raw)
            )));
        }
        Ok::<_, Error>(host)
    };
    let host = parse(host)?;
    let host_from_container_runtime = match runtime {
        Some(runtime) => parse(runtime)?,
        None => host.clone(),
    };
    Ok(Some(LocalRegistry {
        host,
        host_from_container_runtime,
        host_from_cluster_network: None,
        service: None,
        host_advertised: true,
        help: None,
        source: RegistrySource::Annotation,
    }))
}

/// microk8s's registry addon: its Service's NodePort, reached as `localhost:<nodePort>` from the
/// host and from the nodes' containerd alike.
pub fn registry_from_microk8s_node_port(node_port: i32) -> Result<LocalRegistry, Error> {
    let host = u16::try_from(node_port)
        .ok()
        .and_then(std::num::NonZeroU16::new)
        .map(RegistryHost::localhost)
        .ok_or_else(|| {
            Error::new(
                ExitCode::Cluster,
                format!("Service container-registry/registry: nodePort {node_port} is not a port"),
            )
        })?;
    Ok(LocalRegistry {
        host_from_container_runtime: host.clone(),
        host,
        host_from_cluster_network: None,
        service: None,
        host_advertised: true,
        help: None,
        source: RegistrySource::Microk8sService,
    })
}
