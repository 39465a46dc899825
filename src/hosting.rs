//! KEP-1755 local-registry-hosting: types, parsing, version choice, host validation. Pure.

use std::fmt;

/// A validated registry host: `host[:port]`, IPv6 literals in brackets. No scheme, path or user info.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RegistryHost(String);

impl RegistryHost {
    /// SKELETON: the discovery work replaces this with full validation.
    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw.is_empty() || raw.contains(['/', '@', ' ', '?', '#']) {
            return Err(format!("{raw:?} is not a host[:port]"));
        }
        Ok(Self(raw.to_string()))
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

    /// `localhost`, `*.localhost`, 127.0.0.0/8 or ::1: plain HTTP is allowed by default.
    pub fn is_loopback(&self) -> bool {
        let name = self
            .hostname()
            .trim_start_matches('[')
            .trim_end_matches(']');
        name == "localhost"
            || name.ends_with(".localhost")
            || name
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for RegistryHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
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
