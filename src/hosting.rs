//! KEP-1755 local-registry-hosting: types, parsing, version choice, host validation. Pure.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use crate::error::{Error, ExitCode};

/// Where KEP-1755 says a cluster advertises its registry.
pub const HOSTING_NAMESPACE: &str = "kube-public";
pub const HOSTING_NAME: &str = "local-registry-hosting";
/// `namespace/name`, as messages name it.
pub const HOSTING_CONFIGMAP: &str = "kube-public/local-registry-hosting";
/// The KEP's design document, for users whose cluster advertises nothing.
pub const KEP_URL: &str = "https://github.com/kubernetes/enhancements/tree/master/keps/sig-cluster-lifecycle/generic/1755-communicating-a-local-registry";

const VERSION_KEY_PREFIX: &str = "localRegistryHosting.v";
/// The newest `localRegistryHosting.vN` this code understands.
const NEWEST_UNDERSTOOD_VERSION: u32 = 1;

/// Node annotations older tools (Tilt, kind's early script) wrote before KEP-1755.
pub const TILT_REGISTRY_ANNOTATION: &str = "tilt.dev/registry";
pub const TILT_REGISTRY_FROM_CLUSTER_ANNOTATION: &str = "tilt.dev/registry-from-cluster";
pub const KIND_REGISTRY_ANNOTATION: &str = "kind.x-k8s.io/registry";

/// A validated registry host: `host[:port]`, IPv6 literals in brackets. No scheme, path or user info.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RegistryHost(String);

/// Why a string is not a `host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{raw:?} is not a registry host[:port]: {problem}")]
pub struct BadHost {
    pub raw: String,
    pub problem: HostProblem,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostProblem {
    #[error("it is empty")]
    Empty,
    #[error("it contains a control character")]
    ControlCharacter,
    #[error("it contains a space")]
    Whitespace,
    #[error("it starts with a scheme ({0}://); give the host alone")]
    Scheme(String),
    #[error("it has user info (…@); registry credentials belong in ~/.docker/config.json")]
    UserInfo,
    #[error("it has a path ({0})")]
    Path(String),
    #[error("it has a query ({0})")]
    Query(String),
    #[error("it has a fragment ({0})")]
    Fragment(String),
    #[error("an IPv6 address needs brackets, as in [::1]:5000")]
    UnbracketedIpv6,
    #[error("{0:?} in brackets is not an IPv6 address")]
    BadIpv6(String),
    #[error("port {0:?} is not a number from 1 to 65535")]
    BadPort(String),
    #[error("{0:?} is neither a DNS name nor an IP address")]
    BadName(String),
}

impl RegistryHost {
    /// Accepts exactly `host[:port]`: a DNS name, an IPv4 address or a bracketed IPv6 address,
    /// and an optional port from 1 to 65535.
    pub fn parse(raw: &str) -> Result<Self, BadHost> {
        validate(raw)
            .map(|()| Self(raw.to_string()))
            .map_err(|problem| BadHost {
                raw: raw.to_string(),
                problem,
            })
    }

    /// Like [`RegistryHost::parse`], but also accepts the hand-written `http://host[:port]/`:
    /// returns the scheme it stripped so the caller can warn about it.
    pub fn parse_allowing_scheme(raw: &str) -> Result<(Self, Option<String>), BadHost> {
        let Some((scheme, rest)) = split_http_scheme(raw) else {
            return Self::parse(raw).map(|host| (host, None));
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        match validate(rest) {
            Ok(()) => Ok((Self(rest.to_string()), Some(scheme.to_string()))),
            Err(problem) => Err(BadHost {
                raw: raw.to_string(),
                problem,
            }),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The host without its port (brackets kept for IPv6).
    pub fn hostname(&self) -> &str {
        match self.0.rfind(':') {
            Some(i) if !self.0[i..].contains(']') => &self.0[..i],
            _ => &self.0,
        }
    }

    /// The port, when one was given.
    pub fn port(&self) -> Option<u16> {
        let hostname_len = self.hostname().len();
        self.0.get(hostname_len + 1..)?.parse().ok()
    }

    /// `localhost`, `*.localhost`, 127.0.0.0/8 or ::1 (also as IPv4-mapped ::ffff:127.x.y.z):
    /// plain HTTP is allowed by default, as docker and go-containerregistry do.
    pub fn is_loopback(&self) -> bool {
        let name = self
            .hostname()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        name == "localhost"
            || name.ends_with(".localhost")
            || name.parse::<IpAddr>().is_ok_and(|ip| match ip {
                IpAddr::V6(v6) => {
                    v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
                }
                IpAddr::V4(v4) => v4.is_loopback(),
            })
    }
}

impl fmt::Display for RegistryHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for RegistryHost {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// `http://` or `https://` (any case) and what follows it.
fn split_http_scheme(raw: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = raw.split_once("://")?;
    let is_http = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
    is_http.then_some((scheme, rest))
}

fn validate(raw: &str) -> Result<(), HostProblem> {
    if raw.is_empty() {
        return Err(HostProblem::Empty);
    }
    if raw.chars().any(char::is_control) {
        return Err(HostProblem::ControlCharacter);
    }
    if raw.chars().any(char::is_whitespace) {
        return Err(HostProblem::Whitespace);
    }
    if let Some((scheme, _)) = raw.split_once("://") {
        return Err(HostProblem::Scheme(scheme.to_string()));
    }
    if raw.contains('@') {
        return Err(HostProblem::UserInfo);
    }
    if let Some(i) = raw.find('/') {
        return Err(HostProblem::Path(raw[i..].to_string()));
    }
    if let Some(i) = raw.find('?') {
        return Err(HostProblem::Query(raw[i..].to_string()));
    }
    if let Some(i) = raw.find('#') {
        return Err(HostProblem::Fragment(raw[i..].to_string()));
    }
    let port = if let Some(bracketed) = raw.strip_prefix('[') {
        let Some((address, after)) = bracketed.split_once(']') else {
            return Err(HostProblem::BadIpv6(bracketed.to_string()));
        };
        if address.parse::<Ipv6Addr>().is_err() {
            return Err(HostProblem::BadIpv6(address.to_string()));
        }
        match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .ok_or_else(|| HostProblem::BadPort(after.to_string()))?,
            ),
        }
    } else {
        let (name, port) = match raw.split_once(':') {
            Some((_, after)) if after.contains(':') => return Err(HostProblem::UnbracketedIpv6),
            Some((name, port)) => (name, Some(port)),
            None => (raw, None),
        };
        if !is_dns_ish(name) {
            return Err(HostProblem::BadName(name.to_string()));
        }
        port
    };
    match port {
        Some(port) if !is_valid_port(port) => Err(HostProblem::BadPort(port.to_string())),
        _ => Ok(()),
    }
}

fn is_valid_port(port: &str) -> bool {
    port.len() <= 5
        && !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p))
}

/// Dot-separated labels of letters, digits and inner hyphens (also covers IPv4 literals).
fn is_dns_ish(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// Where a registry was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RegistrySource {
    Flag,
    Env,
    Configmap,
    Annotation,
    Microk8sService,
}

/// A cluster's local registry, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalRegistry {
    /// Where tools outside the cluster push.
    pub host: RegistryHost,
    /// What goes in pod image fields (defaulted to `host`).
    pub host_from_container_runtime: RegistryHost,
    /// Where pods reach it, when advertised.
    pub host_from_cluster_network: Option<RegistryHost>,
    /// The cluster's registry guide, shown when something fails.
    pub help: Option<String>,
    pub source: RegistrySource,
}

/// Something worth telling the user while reading what a cluster advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// Only with -v.
    Debug(String),
    Warning(String),
}

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
                format!("{name} {raw:?} is not a registry host"),
            )
            .with_source(bad)
            .with_hint("give host[:port], for example localhost:5001 or [::1]:5001")
        })?;
        if let Some(scheme) = scheme {
            notes.push(Note::Warning(format!(
                "{name} {raw:?} has a scheme ({scheme}://); using {host}"
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
        help: None,
        source,
    })
}

/// Reads the newest `localRegistryHosting.vN` we understand from the hosting ConfigMap's data.
/// `Ok(None)`: the ConfigMap advertises nothing this code can use (a note says why).
pub fn registry_from_configmap(
    data: &BTreeMap<String, String>,
    notes: &mut Vec<Note>,
) -> Result<Option<LocalRegistry>, Error> {
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
        return Ok(None);
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
) -> Result<Option<LocalRegistry>, Error> {
    let fields = read_v1_fields(key, value)?;
    let help = fields.help.clone();
    let field_error =
        |field: &str, problem: String| configmap_error(key, field, problem, help.as_deref());

    let Some(raw_host) = fields.host.as_deref() else {
        let mut set = Vec::new();
        if fields.host_from_container_runtime.is_some() {
            set.push("hostFromContainerRuntime");
        }
        if fields.host_from_cluster_network.is_some() {
            set.push("hostFromClusterNetwork");
        }
        if fields.help.is_some() {
            set.push("help");
        }
        if set.is_empty() {
            notes.push(Note::Warning(format!(
                "ConfigMap {HOSTING_CONFIGMAP}, key {key} names no host; treating the registry as not advertised"
            )));
            return Ok(None);
        }
        return Err(field_error(
            "host",
            format!(
                "is empty or missing, but {} {} set",
                set.join(" and "),
                if set.len() == 1 { "is" } else { "are" }
            ),
        ));
    };

    let mut parse = |field: &str, raw: &str| {
        let (host, scheme) = RegistryHost::parse_allowing_scheme(raw)
            .map_err(|bad| field_error(field, "is not a registry host".into()).with_source(bad))?;
        if let Some(scheme) = scheme {
            notes.push(Note::Warning(format!(
                "ConfigMap {HOSTING_CONFIGMAP}, key {key}, field {field} {raw:?} has a scheme ({scheme}://); using {host}"
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
    Ok(Some(LocalRegistry {
        host,
        host_from_container_runtime,
        host_from_cluster_network,
        help: fields.help,
        source: RegistrySource::Configmap,
    }))
}

fn read_v1_fields(key: &str, value: &str) -> Result<HostingV1Fields, Error> {
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
    // help first: later errors show it as their hint.
    let help = string_field(key, &mapping, "help", None)?;
    if help
        .as_deref()
        .is_some_and(|h| h.chars().any(char::is_control))
    {
        return Err(configmap_error(
            key,
            "help",
            "contains a control character".into(),
            None,
        ));
    }
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
                "node {node}, annotation {annotation} {raw:?} has a scheme ({scheme}://); using {host}"
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
        help: None,
        source: RegistrySource::Annotation,
    }))
}

/// microk8s's registry addon: its Service's NodePort, reached as `localhost:<nodePort>` from the
/// host and from the nodes' containerd alike.
pub fn registry_from_microk8s_node_port(node_port: i32) -> Result<LocalRegistry, Error> {
    let host = u16::try_from(node_port)
        .ok()
        .filter(|port| *port != 0)
        .map(|port| RegistryHost(format!("localhost:{port}")))
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
        help: None,
        source: RegistrySource::Microk8sService,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn host(raw: &str) -> RegistryHost {
        RegistryHost::parse(raw).unwrap()
    }

    fn problem(raw: &str) -> HostProblem {
        RegistryHost::parse(raw).unwrap_err().problem
    }

    fn read(pairs: &[(&str, &str)]) -> (Result<Option<LocalRegistry>, Error>, Vec<Note>) {
        let mut notes = Vec::new();
        let result = registry_from_configmap(&data(pairs), &mut notes);
        (result, notes)
    }

    fn read_ok(pairs: &[(&str, &str)]) -> (Option<LocalRegistry>, Vec<Note>) {
        let (result, notes) = read(pairs);
        (result.unwrap(), notes)
    }

    fn read_err(pairs: &[(&str, &str)]) -> Error {
        read(pairs).0.unwrap_err()
    }

    fn warnings(notes: &[Note]) -> Vec<&str> {
        notes
            .iter()
            .filter_map(|n| match n {
                Note::Warning(text) => Some(text.as_str()),
                Note::Debug(_) => None,
            })
            .collect()
    }

    #[test]
    fn accepts_names_ipv4_and_bracketed_ipv6_with_or_without_port() {
        for raw in [
            "localhost",
            "localhost:5001",
            "kind-registry:5000",
            "registry.local",
            "my-registry.example.com:443",
            "127.0.0.1:5000",
            "[::1]",
            "[::1]:5000",
            "[fe80::1:2]:65535",
            "a:1",
        ] {
            assert_eq!(host(raw).as_str(), raw);
        }
    }

    #[test]
    fn hostname_and_port_split_at_the_last_colon_outside_brackets() {
        assert_eq!(host("localhost:5001").hostname(), "localhost");
        assert_eq!(host("localhost:5001").port(), Some(5001));
        assert_eq!(host("localhost").port(), None);
        assert_eq!(host("[::1]:5000").hostname(), "[::1]");
        assert_eq!(host("[::1]:5000").port(), Some(5000));
        assert_eq!(host("[::1]").hostname(), "[::1]");
        assert_eq!(host("[::1]").port(), None);
    }

    #[test]
    fn rejects_hostile_hosts_naming_the_problem() {
        assert_eq!(problem(""), HostProblem::Empty);
        assert_eq!(
            problem("localhost:5000/v2"),
            HostProblem::Path("/v2".into())
        );
        assert_eq!(
            problem("localhost:5000?x=1"),
            HostProblem::Query("?x=1".into())
        );
        assert_eq!(
            problem("localhost:5000#top"),
            HostProblem::Fragment("#top".into())
        );
        assert_eq!(problem("user:pass@localhost:5000"), HostProblem::UserInfo);
        assert_eq!(problem("local host:5000"), HostProblem::Whitespace);
        assert_eq!(problem("localhost:5000 "), HostProblem::Whitespace);
        assert_eq!(problem("localhost\n:5000"), HostProblem::ControlCharacter);
        assert_eq!(problem("localhost\x1b[31m"), HostProblem::ControlCharacter);
        assert_eq!(problem("localhost:0"), HostProblem::BadPort("0".into()));
        assert_eq!(
            problem("localhost:65536"),
            HostProblem::BadPort("65536".into())
        );
        assert_eq!(problem("localhost:"), HostProblem::BadPort("".into()));
        assert_eq!(problem("localhost:+80"), HostProblem::BadPort("+80".into()));
        assert_eq!(
            problem("localhost:http"),
            HostProblem::BadPort("http".into())
        );
        assert_eq!(problem("::1"), HostProblem::UnbracketedIpv6);
        assert_eq!(problem("fe80::1:5000"), HostProblem::UnbracketedIpv6);
        assert_eq!(problem("[::1"), HostProblem::BadIpv6("::1".into()));
        assert_eq!(
            problem("[localhost]:5000"),
            HostProblem::BadIpv6("localhost".into())
        );
        assert_eq!(problem("[::1]5000"), HostProblem::BadPort("5000".into()));
        assert_eq!(
            problem("-bad.example"),
            HostProblem::BadName("-bad.example".into())
        );
        assert_eq!(
            problem("bad..example"),
            HostProblem::BadName("bad..example".into())
        );
        assert_eq!(
            problem("under_score"),
            HostProblem::BadName("under_score".into())
        );
        assert_eq!(problem(":5000"), HostProblem::BadName("".into()));
        assert_eq!(
            problem("http://localhost:5000"),
            HostProblem::Scheme("http".into())
        );
    }

    #[test]
    fn bad_host_message_quotes_the_input_and_the_problem() {
        let err = RegistryHost::parse("localhost:5000/v2").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#""localhost:5000/v2" is not a registry host[:port]: it has a path (/v2)"#
        );
    }

    #[test]
    fn strips_an_http_scheme_and_a_trailing_slash_only_when_asked() {
        let (h, scheme) = RegistryHost::parse_allowing_scheme("http://localhost:5000").unwrap();
        assert_eq!(
            (h.as_str(), scheme.as_deref()),
            ("localhost:5000", Some("http"))
        );
        let (h, scheme) = RegistryHost::parse_allowing_scheme("HTTPS://registry.local/").unwrap();
        assert_eq!(
            (h.as_str(), scheme.as_deref()),
            ("registry.local", Some("HTTPS"))
        );
        let (h, scheme) = RegistryHost::parse_allowing_scheme("localhost:5000").unwrap();
        assert_eq!((h.as_str(), scheme), ("localhost:5000", None));
        let err = RegistryHost::parse_allowing_scheme("http://localhost:5000/v2/").unwrap_err();
        assert_eq!(err.raw, "http://localhost:5000/v2/");
        assert_eq!(err.problem, HostProblem::Path("/v2".into()));
        assert_eq!(
            RegistryHost::parse_allowing_scheme("oci://localhost:5000")
                .unwrap_err()
                .problem,
            HostProblem::Scheme("oci".into())
        );
        assert_eq!(
            RegistryHost::parse_allowing_scheme("http://u@localhost")
                .unwrap_err()
                .problem,
            HostProblem::UserInfo
        );
    }

    #[test]
    fn loopback_covers_localhost_names_127_8_and_ipv6_loopback() {
        for raw in [
            "localhost:5000",
            "LocalHost",
            "registry.localhost:5000",
            "127.0.0.1:5000",
            "127.1.2.3",
            "[::1]:5000",
            "[::ffff:127.0.0.1]:5000",
        ] {
            assert!(host(raw).is_loopback(), "{raw} is loopback");
        }
        for raw in [
            "kind-registry:5000",
            "localhost.example.com",
            "notlocalhost",
            "10.0.0.1:5000",
            "[::2]:5000",
            "[::ffff:10.0.0.1]",
        ] {
            assert!(!host(raw).is_loopback(), "{raw} is not loopback");
        }
    }

    #[test]
    fn reads_kinds_script_and_defaults_the_runtime_host_to_host() {
        let (registry, notes) = read_ok(&[(
            "localRegistryHosting.v1",
            "host: \"localhost:5001\"\nhelp: \"https://kind.sigs.k8s.io/docs/user/local-registry/\"\n",
        )]);
        assert_eq!(
            registry,
            Some(LocalRegistry {
                host: host("localhost:5001"),
                host_from_container_runtime: host("localhost:5001"),
                host_from_cluster_network: None,
                help: Some("https://kind.sigs.k8s.io/docs/user/local-registry/".into()),
                source: RegistrySource::Configmap,
            })
        );
        assert_eq!(notes, vec![]);
    }

    #[test]
    fn reads_every_field_and_ignores_unknown_ones() {
        let (registry, notes) = read_ok(&[(
            "localRegistryHosting.v1",
            "host: localhost:5000\nhostFromContainerRuntime: registry:5000\nhostFromClusterNetwork: kind-registry:5000\nhelp: https://example.com/help\nsomethingNew: {nested: [1, 2]}\n",
        )]);
        let registry = registry.unwrap();
        assert_eq!(registry.host, host("localhost:5000"));
        assert_eq!(registry.host_from_container_runtime, host("registry:5000"));
        assert_eq!(
            registry.host_from_cluster_network,
            Some(host("kind-registry:5000"))
        );
        assert_eq!(registry.help.as_deref(), Some("https://example.com/help"));
        assert_eq!(notes, vec![]);
    }

    #[test]
    fn reads_a_json_value() {
        let (registry, _) = read_ok(&[(
            "localRegistryHosting.v1",
            r#"{"host": "[::1]:5000", "hostFromContainerRuntime": "registry.local:5000"}"#,
        )]);
        let registry = registry.unwrap();
        assert_eq!(registry.host, host("[::1]:5000"));
        assert_eq!(
            registry.host_from_container_runtime,
            host("registry.local:5000")
        );
    }

    #[test]
    fn empty_optional_fields_mean_unset() {
        let (registry, _) = read_ok(&[(
            "localRegistryHosting.v1",
            "host: localhost:5000\nhostFromContainerRuntime: \"\"\nhostFromClusterNetwork: \"\"\nhelp: ~\n",
        )]);
        let registry = registry.unwrap();
        assert_eq!(registry.host_from_container_runtime, host("localhost:5000"));
        assert_eq!(registry.host_from_cluster_network, None);
        assert_eq!(registry.help, None);
    }

    #[test]
    fn a_v2_key_beside_v1_is_ignored_with_a_debug_note() {
        let (registry, notes) = read_ok(&[
            ("localRegistryHosting.v1", "host: localhost:5000\n"),
            ("localRegistryHosting.v2", "endpoints: [{url: oci://x}]\n"),
        ]);
        assert_eq!(registry.unwrap().host, host("localhost:5000"));
        assert_eq!(warnings(&notes), Vec::<&str>::new());
        assert!(
            matches!(&notes[..], [Note::Debug(text)] if text.contains("localRegistryHosting.v2"))
        );
    }

    #[test]
    fn a_v2_key_alone_means_none_understood_with_a_warning() {
        let (registry, notes) = read_ok(&[("localRegistryHosting.v2", "host: localhost:5000\n")]);
        assert_eq!(registry, None);
        assert_eq!(
            warnings(&notes),
            vec![
                "ConfigMap kube-public/local-registry-hosting only has localRegistryHosting.v2, a version this kubectl-registry does not understand (it reads localRegistryHosting.v1); treating the registry as not advertised"
            ]
        );
    }

    #[test]
    fn no_hosting_key_at_all_is_none_with_a_warning() {
        let (registry, notes) = read_ok(&[("unrelated", "x"), ("localRegistryHosting.vNext", "x")]);
        assert_eq!(registry, None);
        assert_eq!(
            warnings(&notes),
            vec![
                "ConfigMap kube-public/local-registry-hosting has no localRegistryHosting.v1 key; treating the registry as not advertised"
            ]
        );
        assert!(
            notes
                .iter()
                .any(|n| matches!(n, Note::Debug(t) if t.contains("localRegistryHosting.vNext")))
        );
    }

    #[test]
    fn an_empty_value_names_no_host_and_is_none_with_a_warning() {
        for value in ["", "{}", "host: \"\"\n"] {
            let (registry, notes) = read_ok(&[("localRegistryHosting.v1", value)]);
            assert_eq!(registry, None, "{value:?}");
            assert_eq!(
                warnings(&notes),
                vec![
                    "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1 names no host; treating the registry as not advertised"
                ]
            );
        }
    }

    #[test]
    fn malformed_yaml_is_an_error_naming_the_configmap_and_key() {
        let err = read_err(&[(
            "localRegistryHosting.v1",
            "host: [localhost:5000\nhelp: x\n",
        )]);
        assert_eq!(
            err.message(),
            "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: the value is not valid YAML"
        );
        assert_eq!(err.exit_code(), ExitCode::Cluster);
        assert_eq!(
            err.causes(),
            vec!["illegal placement of ':' indicator at line 2, column 5"]
        );
    }

    #[test]
    fn a_value_that_is_not_a_mapping_is_an_error() {
        let err = read_err(&[("localRegistryHosting.v1", "localhost:5000")]);
        assert_eq!(
            err.message(),
            "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: the value is a string, not a mapping of host, hostFromContainerRuntime, hostFromClusterNetwork, help"
        );
    }

    #[test]
    fn a_field_of_the_wrong_type_is_blamed_by_name_with_the_help_link() {
        let err = read_err(&[(
            "localRegistryHosting.v1",
            "host: [localhost, 5000]\nhelp: https://example.com/registry\n",
        )]);
        assert_eq!(
            err.message(),
            "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field host is a list, not a string"
        );
        assert_eq!(
            err.hints(),
            vec![
                "this cluster's registry guide: https://example.com/registry (or skip discovery with --registry HOST[:PORT])"
            ]
        );
    }

    #[test]
    fn an_empty_host_with_other_fields_set_is_an_error_with_the_help_link() {
        let err = read_err(&[(
            "localRegistryHosting.v1",
            "host: \"\"\nhostFromClusterNetwork: kind-registry:5000\nhelp: https://kind.sigs.k8s.io/docs/user/local-registry/\n",
        )]);
        assert_eq!(
            err.message(),
            "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field host is empty or missing, but hostFromClusterNetwork and help are set"
        );
        assert_eq!(
            err.hints(),
            vec![
                "this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/ (or skip discovery with --registry HOST[:PORT])"
            ]
        );
    }

    #[test]
    fn a_missing_host_without_help_hints_at_editing_the_configmap() {
        let err = read_err(&[(
            "localRegistryHosting.v1",
            "hostFromContainerRuntime: registry:5000\n",
        )]);
        assert_eq!(
            err.message(),
            "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field host is empty or missing, but hostFromContainerRuntime is set"
        );
        assert_eq!(
            err.hints(),
            vec![
                "fix it with `kubectl -n kube-public edit configmap local-registry-hosting`, or skip discovery with --registry HOST[:PORT]"
            ]
        );
    }

    #[test]
    fn a_scheme_in_any_host_field_is_stripped_with_a_warning() {
        let (registry, notes) = read_ok(&[(
            "localRegistryHosting.v1",
            "host: http://localhost:5000\nhostFromClusterNetwork: https://kind-registry:5000/\n",
        )]);
        let registry = registry.unwrap();
        assert_eq!(registry.host, host("localhost:5000"));
        assert_eq!(registry.host_from_container_runtime, host("localhost:5000"));
        assert_eq!(
            registry.host_from_cluster_network,
            Some(host("kind-registry:5000"))
        );
        assert_eq!(
            warnings(&notes),
            vec![
                r#"ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1, field host "http://localhost:5000" has a scheme (http://); using localhost:5000"#,
                r#"ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1, field hostFromClusterNetwork "https://kind-registry:5000/" has a scheme (https://); using kind-registry:5000"#,
            ]
        );
    }

    #[test]
    fn a_hostile_host_field_is_an_error_naming_the_field_with_the_cause() {
        for (field, value, cause) in [
            (
                "host",
                "localhost:5000/v2",
                r#""localhost:5000/v2" is not a registry host[:port]: it has a path (/v2)"#,
            ),
            (
                "host",
                "admin:secret@localhost:5000",
                r#""admin:secret@localhost:5000" is not a registry host[:port]: it has user info (…@); registry credentials belong in ~/.docker/config.json"#,
            ),
            (
                "hostFromContainerRuntime",
                "::1:5000",
                r#""::1:5000" is not a registry host[:port]: an IPv6 address needs brackets, as in [::1]:5000"#,
            ),
            (
                "hostFromClusterNetwork",
                "registry:99999",
                r#""registry:99999" is not a registry host[:port]: port "99999" is not a number from 1 to 65535"#,
            ),
        ] {
            let yaml = if field == "host" {
                format!("host: \"{value}\"\nhelp: https://example.com/h\n")
            } else {
                format!("host: localhost:5000\n{field}: \"{value}\"\nhelp: https://example.com/h\n")
            };
            let err = read_err(&[("localRegistryHosting.v1", &yaml)]);
            assert_eq!(
                err.message(),
                format!(
                    "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field {field} is not a registry host"
                )
            );
            assert_eq!(err.causes(), vec![cause.to_string()]);
            assert_eq!(
                err.hints(),
                vec![
                    "this cluster's registry guide: https://example.com/h (or skip discovery with --registry HOST[:PORT])"
                ]
            );
        }
    }

    #[test]
    fn control_characters_in_a_host_or_help_are_errors() {
        let err = read_err(&[("localRegistryHosting.v1", "host: \"localhost\\t:5000\"\n")]);
        assert_eq!(
            err.causes(),
            vec![
                r#""localhost\t:5000" is not a registry host[:port]: it contains a control character"#
            ]
        );
        let err = read_err(&[(
            "localRegistryHosting.v1",
            "host: localhost:5000\nhelp: \"see \\e[31mthis\"\n",
        )]);
        assert_eq!(
            err.message(),
            "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field help contains a control character"
        );
    }

    #[test]
    fn annotations_prefer_tilt_then_kind_with_the_runtime_name_from_tilt() {
        let mut notes = Vec::new();
        let annotations = data(&[
            ("kind.x-k8s.io/registry", "localhost:5002"),
            ("tilt.dev/registry", "localhost:5001"),
            ("tilt.dev/registry-from-cluster", "registry:5000"),
        ]);
        let registry = registry_from_node_annotations("n1", &annotations, &mut notes)
            .unwrap()
            .unwrap();
        assert_eq!(registry.host, host("localhost:5001"));
        assert_eq!(registry.host_from_container_runtime, host("registry:5000"));
        assert_eq!(registry.source, RegistrySource::Annotation);

        let annotations = data(&[("kind.x-k8s.io/registry", "localhost:5002")]);
        let registry = registry_from_node_annotations("n1", &annotations, &mut notes)
            .unwrap()
            .unwrap();
        assert_eq!(registry.host, host("localhost:5002"));
        assert_eq!(registry.host_from_container_runtime, host("localhost:5002"));
        assert_eq!(notes, vec![]);
    }

    #[test]
    fn a_runtime_annotation_alone_names_no_registry() {
        let mut notes = Vec::new();
        let annotations = data(&[("tilt.dev/registry-from-cluster", "registry:5000")]);
        assert_eq!(
            registry_from_node_annotations("n1", &annotations, &mut notes).unwrap(),
            None
        );
        assert!(matches!(&notes[..], [Note::Debug(_)]));
        assert_eq!(
            registry_from_node_annotations("n1", &BTreeMap::new(), &mut notes).unwrap(),
            None
        );
    }

    #[test]
    fn a_bad_annotation_is_an_error_naming_node_and_annotation() {
        let annotations = data(&[("tilt.dev/registry", "localhost:5000/path")]);
        let err =
            registry_from_node_annotations("kind-control-plane", &annotations, &mut Vec::new())
                .unwrap_err();
        assert_eq!(
            err.message(),
            "node kind-control-plane: annotation tilt.dev/registry is not a registry host"
        );
        assert_eq!(err.exit_code(), ExitCode::Cluster);
    }

    #[test]
    fn microk8s_node_port_is_reached_on_localhost() {
        let registry = registry_from_microk8s_node_port(32000).unwrap();
        assert_eq!(registry.host, host("localhost:32000"));
        assert_eq!(
            registry.host_from_container_runtime,
            host("localhost:32000")
        );
        assert_eq!(registry.source, RegistrySource::Microk8sService);
        assert!(registry_from_microk8s_node_port(0).is_err());
        assert!(registry_from_microk8s_node_port(70000).is_err());
    }

    #[test]
    fn overrides_default_the_runtime_host_and_name_the_flag_in_errors() {
        let mut notes = Vec::new();
        let origin = ("--registry", "--registry-from-runtime");
        let registry = registry_from_override(
            "localhost:5000",
            None,
            RegistrySource::Flag,
            origin,
            &mut notes,
        )
        .unwrap();
        assert_eq!(registry.host_from_container_runtime, host("localhost:5000"));
        let registry = registry_from_override(
            "http://localhost:5000",
            Some("registry:5000"),
            RegistrySource::Env,
            ("KUBECTL_REGISTRY_HOST", "KUBECTL_REGISTRY_RUNTIME_HOST"),
            &mut notes,
        )
        .unwrap();
        assert_eq!(registry.host, host("localhost:5000"));
        assert_eq!(registry.host_from_container_runtime, host("registry:5000"));
        assert_eq!(registry.source, RegistrySource::Env);
        assert_eq!(
            warnings(&notes),
            vec![
                r#"KUBECTL_REGISTRY_HOST "http://localhost:5000" has a scheme (http://); using localhost:5000"#
            ]
        );
        let err = registry_from_override(
            "localhost",
            Some("a b"),
            RegistrySource::Flag,
            origin,
            &mut notes,
        )
        .unwrap_err();
        assert_eq!(
            err.message(),
            r#"--registry-from-runtime "a b" is not a registry host"#
        );
        assert_eq!(err.exit_code(), ExitCode::Usage);
    }
}
