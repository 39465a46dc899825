//! Writing KEP-1755: the `localRegistryHosting.v1` value and the ConfigMap that holds it, from
//! hosts checked with the rules discovery reads them with.

use std::fmt;

use super::configmap::{NEWEST_UNDERSTOOD_VERSION, VERSION_KEY_PREFIX};
use super::{HOSTING_NAME, HOSTING_NAMESPACE};
use crate::image::reference::{RegistryHost, shown_host};

/// What `advertise` writes: `host`, and the optional fields KEP-1755 defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advertisement {
    pub host: RegistryHost,
    pub host_from_container_runtime: Option<RegistryHost>,
    pub host_from_cluster_network: Option<RegistryHost>,
    pub help: Option<HelpUrl>,
}

/// A `help` link users can open: `http://` or `https://`, no spaces or control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpUrl(String);

/// Why a string is not a help link.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is not a help URL: {problem}", shown_host(raw))]
pub struct BadHelpUrl {
    pub raw: String,
    pub problem: &'static str,
}

impl HelpUrl {
    pub fn parse(raw: &str) -> Result<Self, BadHelpUrl> {
        let bad = |problem| BadHelpUrl {
            raw: raw.to_string(),
            problem,
        };
        if raw.chars().any(char::is_control) {
            return Err(bad("it contains a control character"));
        }
        if raw.chars().any(char::is_whitespace) {
            return Err(bad("it contains a space"));
        }
        let rest = strip_prefix_ignore_case(raw, "https://")
            .or_else(|| strip_prefix_ignore_case(raw, "http://"))
            .ok_or_else(|| bad("it must start with https:// or http://"))?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(bad("it names no host"));
        }
        Ok(Self(raw.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for HelpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// The key `advertise` owns; every other key of the ConfigMap belongs to someone else.
pub fn hosting_v1_key() -> String {
    format!("{VERSION_KEY_PREFIX}{NEWEST_UNDERSTOOD_VERSION}")
}

impl Advertisement {
    /// The value of `localRegistryHosting.v1`: one `field: "value"` line per field set, in the
    /// KEP's order, as kind's local-registry script writes it.
    pub fn v1_value(&self) -> String {
        let fields = [
            ("host", Some(self.host.as_str())),
            (
                "hostFromContainerRuntime",
                self.host_from_container_runtime
                    .as_ref()
                    .map(RegistryHost::as_str),
            ),
            (
                "hostFromClusterNetwork",
                self.host_from_cluster_network
                    .as_ref()
                    .map(RegistryHost::as_str),
            ),
            ("help", self.help.as_ref().map(HelpUrl::as_str)),
        ];
        fields
            .iter()
            .filter_map(|(field, value)| Some(format!("{field}: {}\n", quoted(value.as_ref()?))))
            .collect()
    }

    /// The whole ConfigMap as YAML, ready for `kubectl apply -f -`.
    pub fn configmap_yaml(&self) -> String {
        let value: String = self
            .v1_value()
            .lines()
            .map(|line| format!("    {line}\n"))
            .collect();
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {HOSTING_NAME}\n  namespace: {HOSTING_NAMESPACE}\ndata:\n  {}: |\n{value}",
            hosting_v1_key()
        )
    }
}

/// A YAML double-quoted scalar. Hosts and help links hold no control characters, so only the
/// quote and the backslash need escaping (JSON's rules, which YAML shares).
fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::hosting::{LocalRegistry, RegistrySource, registry_from_configmap};
    use std::collections::BTreeMap;

    fn host(raw: &str) -> RegistryHost {
        RegistryHost::parse(raw).unwrap()
    }

    fn read_back(advertisement: &Advertisement) -> (Option<LocalRegistry>, usize) {
        let data = BTreeMap::from([(hosting_v1_key(), advertisement.v1_value())]);
        let mut notes = Vec::new();
        let read = registry_from_configmap(&data, &mut notes).unwrap();
        (read.registry, notes.len())
    }

    #[test]
    fn every_field_written_is_read_back_by_discovery_without_a_note() {
        let advertisement = Advertisement {
            host: host("localhost:5001"),
            host_from_container_runtime: Some(host("kind-registry:5000")),
            host_from_cluster_network: Some(host("[fd00::1]:5000")),
            help: Some(
                HelpUrl::parse("https://kind.sigs.k8s.io/docs/user/local-registry/").unwrap(),
            ),
        };
        assert_eq!(
            advertisement.v1_value(),
            "host: \"localhost:5001\"\nhostFromContainerRuntime: \"kind-registry:5000\"\nhostFromClusterNetwork: \"[fd00::1]:5000\"\nhelp: \"https://kind.sigs.k8s.io/docs/user/local-registry/\"\n"
        );
        let (registry, notes) = read_back(&advertisement);
        assert_eq!(
            registry,
            Some(LocalRegistry {
                host: host("localhost:5001"),
                host_from_container_runtime: host("kind-registry:5000"),
                host_from_cluster_network: Some(host("[fd00::1]:5000")),
                service: None,
                host_advertised: true,
                help: Some("https://kind.sigs.k8s.io/docs/user/local-registry/".to_string()),
                source: RegistrySource::Configmap,
            })
        );
        assert_eq!(notes, 0);
    }

    #[test]
    fn unset_fields_are_left_out_and_default_as_the_kep_says() {
        let advertisement = Advertisement {
            host: host("localhost:5001"),
            host_from_container_runtime: None,
            host_from_cluster_network: None,
            help: None,
        };
        assert_eq!(advertisement.v1_value(), "host: \"localhost:5001\"\n");
        let (registry, _) = read_back(&advertisement);
        let registry = registry.unwrap();
        assert_eq!(registry.host_from_container_runtime, host("localhost:5001"));
        assert_eq!(registry.host_from_cluster_network, None);
    }

    #[test]
    fn the_configmap_nests_the_value_as_a_block() {
        let advertisement = Advertisement {
            host: host("localhost:5001"),
            host_from_container_runtime: None,
            host_from_cluster_network: None,
            help: Some(HelpUrl::parse("https://example.com/a\"b").unwrap()),
        };
        assert_eq!(
            advertisement.configmap_yaml(),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local-registry-hosting\n  namespace: kube-public\ndata:\n  localRegistryHosting.v1: |\n    host: \"localhost:5001\"\n    help: \"https://example.com/a\\\"b\"\n"
        );
        let (registry, _) = read_back(&advertisement);
        assert_eq!(
            registry.unwrap().help.as_deref(),
            Some("https://example.com/a\"b")
        );
    }

    #[test]
    fn help_urls_are_http_or_https_links() {
        for good in ["https://kind.sigs.k8s.io/", "HTTP://intranet/registry"] {
            assert!(HelpUrl::parse(good).is_ok(), "{good}");
        }
        for (bad, problem) in [
            ("ftp://x/", "it must start with https:// or http://"),
            ("kind.sigs.k8s.io", "it must start with https:// or http://"),
            (
                "javascript:alert(1)",
                "it must start with https:// or http://",
            ),
            ("https://", "it names no host"),
            ("https://a b", "it contains a space"),
            ("https://a\u{1b}[2J", "it contains a control character"),
        ] {
            assert_eq!(HelpUrl::parse(bad).unwrap_err().problem, problem, "{bad}");
        }
    }
}
