//! The hosting ConfigMap's `localRegistryHosting.vN` keys: version choice, YAML/JSON fields,
//! defaulting, and errors that name the ConfigMap, key and field.

use std::collections::BTreeMap;

use super::{
    HOSTING_CONFIGMAP, HOSTING_NAME, HOSTING_NAMESPACE, LocalRegistry, Note, RegistrySource,
    ServiceRef,
};
use crate::image::reference::RegistryHost;
use crate::plumbing::error::{Error, ExitCode};

pub(super) const VERSION_KEY_PREFIX: &str = "localRegistryHosting.v";
/// The newest `localRegistryHosting.vN` this code understands.
pub(super) const NEWEST_UNDERSTOOD_VERSION: u32 = 1;

/// What the hosting ConfigMap says: the registry, if it advertises one, and its `help` link,
/// which microk8s sets alone while its registry addon is off: the guide to setting one up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostingConfigMap {
    pub registry: Option<LocalRegistry>,
    pub help: Option<String>,
}

/// Reads the newest `localRegistryHosting.vN` we understand from the hosting ConfigMap's data.
/// No registry: the ConfigMap advertises nothing this code can use (a note says why, unless
/// it is the help-only ConfigMap, which is a normal state).
pub fn registry_from_configmap(
    data: &BTreeMap<String, String>,
    notes: &mut Vec<Note>,
) -> Result<HostingConfigMap, Error> {
    let mut understood: Option<(u32, &str, &str)> = None;
    let mut newer = Vec::new();
    for (key, value) in data {
        let Some(version) = key.strip_prefix(VERSION_KEY_PREFIX) else {
            continue;
        };
        match parse_version(version) {
            Some(n) if n > NEWEST_UNDERSTOOD_VERSION => newer.push(key.as_str()),
            Some(n) if understood.is_none_or(|(best, _, _)| n > best) => {
                understood = Some((n, key, value));
            }
            Some(_) => {}
            None => notes.push(Note::Debug(format!(
                "ignoring key {key} of ConfigMap {HOSTING_CONFIGMAP}: not a localRegistryHosting.vN key"
            ))),
        }
    }
    let Some((_, key, value)) = understood else {
        let why = if newer.is_empty() {
            format!("has no {VERSION_KEY_PREFIX}{NEWEST_UNDERSTOOD_VERSION} key")
        } else {
            format!(
                "only has {}, a version this kubectl-registry does not understand (it reads {VERSION_KEY_PREFIX}{NEWEST_UNDERSTOOD_VERSION})",
                newer.join(", ")
            )
        };
        notes.push(Note::Warning(format!(
            "ConfigMap {HOSTING_CONFIGMAP} {why}; treating the registry as not advertised"
        )));
        return Ok(HostingConfigMap::default());
    };
    for key in newer {
        notes.push(Note::Debug(format!(
            "ignoring {key} of ConfigMap {HOSTING_CONFIGMAP}: newer than this kubectl-registry understands; reading {VERSION_KEY_PREFIX}{NEWEST_UNDERSTOOD_VERSION}"
        )));
    }
    parse_hosting_v1(key, value, notes)
}

/// `1` for `v1`; no sign, no leading zeros.
fn parse_version(text: &str) -> Option<u32> {
    let digits_only = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    if !digits_only || text.starts_with('0') {
        return None;
    }
    text.parse().ok()
}

/// The fields of `localRegistryHosting.v1`, each one optional.
struct HostingV1Fields {
    host: Option<String>,
    host_from_container_runtime: Option<String>,
    host_from_cluster_network: Option<String>,
    help: Option<String>,
}

fn parse_hosting_v1(
    key: &str,
    value: &str,
    notes: &mut Vec<Note>,
) -> Result<HostingConfigMap, Error> {
    let fields = read_v1_fields(key, value, notes)?;
    let help = fields.help.clone();
    let field_error =
        |field: &str, problem: String| configmap_error(key, field, problem, help.as_deref());

    // Every field is optional (KEP-1755): without `host` nothing says where to push from
    // here, so no registry is advertised; only a `host` that is there and malformed is an error.
    let Some(raw_host) = fields.host.as_deref() else {
        if let Some(registry) = service_only(key, &fields, notes)? {
            return Ok(HostingConfigMap {
                registry: Some(registry),
                help,
            });
        }
        notes.push(no_host_note(key, &fields, help.as_deref()));
        return Ok(HostingConfigMap {
            registry: None,
            help,
        });
    };

    let mut parse = |field: &str, raw: &str| {
        let (host, scheme) = RegistryHost::parse_allowing_scheme(raw)
            .map_err(|bad| field_error(field, "is not a registry host".into()).with_source(bad))?;
        if let Some(scheme) = scheme {
            notes.push(Note::Warning(format!(
                "ConfigMap {HOSTING_CONFIGMAP}, key {key}, field {field} {} has a scheme ({scheme}://); using {host}",
                crate::plumbing::output::shown(raw)
            )));
        }
        Ok::<_, Error>(host)
    };
    let host = parse("host", raw_host)?;
    let host_from_container_runtime = match fields.host_from_container_runtime.as_deref() {
        Some(raw) => parse("hostFromContainerRuntime", raw)?,
        None => host.clone(),
    };
    let host_from_cluster_network = fields
        .host_from_cluster_network
        .as_deref()
        .map(|raw| parse("hostFromClusterNetwork", raw))
        .transpose()?;
    let service = host_from_cluster_network
        .as_ref()
        .and_then(ServiceRef::from_cluster_host);
    Ok(HostingConfigMap {
        registry: Some(LocalRegistry {
            host,
            host_from_container_runtime,
            host_from_cluster_network,
            service,
            host_advertised: true,
            help: fields.help.clone(),
            source: RegistrySource::Configmap,
        }),
        help: fields.help,
    })
}

/// What a ConfigMap without `host` (and no Service to tunnel to) is said as: only its help
/// (-v), nothing at all, or hosts that pushing from outside the cluster cannot use.
fn no_host_note(key: &str, fields: &HostingV1Fields, help: Option<&str>) -> Note {
    let mut set = Vec::new();
    if fields.host_from_container_runtime.is_some() {
        set.push("hostFromContainerRuntime");
    }
    if fields.host_from_cluster_network.is_some() {
        set.push("hostFromClusterNetwork");
    }
    match (set.as_slice(), help) {
        ([], Some(help)) => Note::Debug(format!(
            "ConfigMap {HOSTING_CONFIGMAP}, key {key} has only help ({help}): no registry advertised"
        )),
        ([], None) => Note::Warning(format!(
            "ConfigMap {HOSTING_CONFIGMAP}, key {key} names no host; treating the registry as not advertised"
        )),
        (set, _) => Note::Warning(format!(
            "ConfigMap {HOSTING_CONFIGMAP}, key {key} sets {} but no host, which pushing from outside the cluster needs; treating the registry as not advertised",
            set.join(" and ")
        )),
    }
}

/// No `host`, and `hostFromClusterNetwork` names a Service: reachable from outside the cluster
/// only through the API server. `hostFromContainerRuntime` defaults to the Service's name.
fn service_only(
    key: &str,
    fields: &HostingV1Fields,
    notes: &mut Vec<Note>,
) -> Result<Option<LocalRegistry>, Error> {
    let Some(raw) = fields.host_from_cluster_network.as_deref() else {
        return Ok(None);
    };
    let Ok((cluster_host, _)) = RegistryHost::parse_allowing_scheme(raw) else {
        return Ok(None);
    };
    let Some(service) = ServiceRef::from_cluster_host(&cluster_host) else {
        return Ok(None);
    };
    let runtime = match fields.host_from_container_runtime.as_deref() {
        Some(raw) => RegistryHost::parse_allowing_scheme(raw)
            .map(|(host, _)| host)
            .map_err(|bad| {
                configmap_error(
                    key,
                    "hostFromContainerRuntime",
                    "is not a registry host".into(),
                    fields.help.as_deref(),
                )
                .with_source(bad)
            })?,
        None => cluster_host.clone(),
    };
    notes.push(Note::Debug(format!(
        "ConfigMap {HOSTING_CONFIGMAP}, key {key} sets no host; {cluster_host} is {service}, reached from outside the cluster through the API server"
    )));
    Ok(Some(LocalRegistry {
        host: cluster_host.clone(),
        host_from_container_runtime: runtime,
        host_from_cluster_network: Some(cluster_host),
        service: Some(service),
        host_advertised: false,
        help: fields.help.clone(),
        source: RegistrySource::Configmap,
    }))
}

fn read_v1_fields(key: &str, value: &str, notes: &mut Vec<Note>) -> Result<HostingV1Fields, Error> {
    // Parsed into a generic value first so a wrong type can be blamed on its field by name.
    let options = serde_saphyr::options! { with_snippet: false };
    let document: serde_json::Value =
        serde_saphyr::from_str_with_options(value, options).map_err(|err| {
            Error::new(
                ExitCode::Cluster,
                format!("ConfigMap {HOSTING_CONFIGMAP}, key {key}: the value is not valid YAML"),
            )
            .with_source(err)
            .with_hint(fix_hint(None))
        })?;
    let mapping = match document {
        serde_json::Value::Object(mapping) => mapping,
        serde_json::Value::Null => serde_json::Map::new(),
        other => {
            return Err(Error::new(
                ExitCode::Cluster,
                format!(
                    "ConfigMap {HOSTING_CONFIGMAP}, key {key}: the value is {}, not a mapping of host, hostFromContainerRuntime, hostFromClusterNetwork, help",
                    kind_of(&other)
                ),
            )
            .with_hint(fix_hint(None)));
        }
    };
    // help first: later errors show it as their hint. It only informs: a bad one is dropped
    // with a warning, and the rest of the ConfigMap is read.
    let help = match string_field(key, &mapping, "help", None) {
        Ok(Some(help)) if help.chars().any(char::is_control) => {
            notes.push(Note::Warning(format!(
                "ConfigMap {HOSTING_CONFIGMAP}, key {key}: field help {} contains a control character; ignoring it",
                crate::plumbing::output::shown(&help)
            )));
            None
        }
        Ok(help) => help,
        Err(err) => {
            notes.push(Note::Warning(format!("{}; ignoring it", err.message())));
            None
        }
    };
    let help_hint = help.as_deref();
    Ok(HostingV1Fields {
        host: string_field(key, &mapping, "host", help_hint)?,
        host_from_container_runtime: string_field(
            key,
            &mapping,
            "hostFromContainerRuntime",
            help_hint,
        )?,
        host_from_cluster_network: string_field(
            key,
            &mapping,
            "hostFromClusterNetwork",
            help_hint,
        )?,
        help,
    })
}

/// A string field; absent, null and "" all mean "not set" (the KEP's defaulting).
fn string_field(
    key: &str,
    mapping: &serde_json::Map<String, serde_json::Value>,
    field: &str,
    help: Option<&str>,
) -> Result<Option<String>, Error> {
    match mapping.get(field) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(text)) if text.is_empty() => Ok(None),
        Some(serde_json::Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(configmap_error(
            key,
            field,
            format!("is {}, not a string", kind_of(other)),
            help,
        )),
    }
}

fn kind_of(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "empty",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
    }
}

fn configmap_error(key: &str, field: &str, problem: String, help: Option<&str>) -> Error {
    Error::new(
        ExitCode::Cluster,
        format!("ConfigMap {HOSTING_CONFIGMAP}, key {key}: field {field} {problem}"),
    )
    .with_hint(fix_hint(help))
}

fn fix_hint(help: Option<&str>) -> String {
    match help {
        Some(help) => format!(
            "this cluster's registry guide: {help} (or skip discovery with --registry HOST[:PORT])"
        ),
        None => format!(
            "fix it with `kubectl -n {HOSTING_NAMESPACE} edit configmap {HOSTING_NAME}`, or skip discovery with --registry HOST[:PORT]"
        ),
    }
}
