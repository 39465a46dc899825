//! A registry host as KEP-1755 and our flags write it: `host[:port]`, validated once.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

/// A validated registry host: `host[:port]`, IPv6 literals in brackets. No scheme, path or user info.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RegistryHost(String);

/// Why a string is not a `host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is not a registry host[:port]: {problem}", shown_host(raw))]
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
    #[error("it has a path ({})", crate::plumbing::output::shown_bare(.0))]
    Path(String),
    #[error("it has a query ({})", crate::plumbing::output::shown_bare(.0))]
    Query(String),
    #[error("it has a fragment ({})", crate::plumbing::output::shown_bare(.0))]
    Fragment(String),
    #[error("an IPv6 address needs brackets, as in [::1]:5000")]
    UnbracketedIpv6,
    #[error("{} in brackets is not an IPv6 address", shown_host(.0))]
    BadIpv6(String),
    #[error("port {} is not a number from 1 to 65535", shown_host(.0))]
    BadPort(String),
    #[error("{} is neither a DNS name nor an IP address{}", shown_host(.0), non_ascii_note(.0))]
    BadName(String),
}

impl RegistryHost {
    /// `localhost:PORT`, valid for every port.
    pub fn localhost(port: std::num::NonZeroU16) -> Self {
        Self(format!("localhost:{port}"))
    }

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
        is_loopback_hostname(self.hostname())
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

/// A host as a message shows it, quoted: a password in its user info replaced by `xxxxx` (as
/// Go's `URL.Redacted` does), and every character but printable ASCII escaped (`\u{43e}`), so a
/// look-alike letter, a zero-width or a bidi character is seen for what it is; a long one cut
/// short ([`crate::plumbing::output::shown`]).
pub fn shown_host(raw: &str) -> String {
    crate::plumbing::output::shown(&redacted(raw))
}

/// `raw` with the password of any `user:password@` before the host replaced by `xxxxx`.
fn redacted(raw: &str) -> std::borrow::Cow<'_, str> {
    let start = raw.find("://").map_or(0, |i| i + "://".len());
    let end = raw[start..]
        .find(['/', '?', '#'])
        .map_or(raw.len(), |i| start + i);
    let authority = &raw[start..end];
    let Some(at) = authority.rfind('@') else {
        return raw.into();
    };
    let Some(colon) = authority[..at].find(':') else {
        return raw.into();
    };
    format!("{}xxxxx{}", &raw[..start + colon + 1], &raw[start + at..]).into()
}

/// Says that a name holds characters other than ASCII, which look-alikes hide.
fn non_ascii_note(name: &str) -> &'static str {
    if name.is_ascii() {
        ""
    } else {
        " (it holds characters other than ASCII, shown escaped)"
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

/// `localhost` (and names under it), 127.0.0.0/8 and ::1 (bracketed or not, IPv4-mapped too):
/// the names that never leave this machine.
/// Whether `url` points at this machine.
pub fn is_loopback_url(url: &reqwest::Url) -> bool {
    url.host_str().is_some_and(is_loopback_hostname)
}

pub fn is_loopback_hostname(hostname: &str) -> bool {
    let name = hostname
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
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
