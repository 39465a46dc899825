//! What went wrong below HTTP, read from an error's chain: nothing listening, a connection cut,
//! a server speaking plain HTTP to our TLS hello, a certificate not trusted, expired or for
//! other names; and for those, the names the certificate has (as rustls reports them) and the
//! date it expired on.

use super::tunnelled::TunnelEndpoint;
use crate::image::reference::RegistryHost;

/// What went wrong below HTTP, as far as we can tell from the error chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnectFailure {
    /// Nothing listens, the name does not resolve, or the network drops us.
    Unreachable,
    /// We spoke TLS and the server answered in plain HTTP.
    ServerSpeaksHttp,
    /// The server's certificate did not verify.
    UntrustedCertificate,
    /// The server's certificate does not name the host we reached.
    WrongName,
    /// The server's certificate is past its `notAfter` (seconds since the epoch, when told).
    ExpiredCertificate(Option<u64>),
    /// Some other TLS failure.
    Tls,
    /// The connection broke after it was made (reset, closed mid-request).
    Dropped,
    /// A timeout.
    TimedOut,
}

/// Reads a reqwest error's chain for the reason underneath.
pub(crate) fn connect_failure(err: &reqwest::Error) -> Option<ConnectFailure> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let mut found = None;
    while let Some(current) = next {
        if let Some(tls) = as_rustls_error(current) {
            return Some(match tls {
                rustls::Error::InvalidMessage(_) => ConnectFailure::ServerSpeaksHttp,
                rustls::Error::InvalidCertificate(rustls::CertificateError::Expired) => {
                    ConnectFailure::ExpiredCertificate(None)
                }
                rustls::Error::InvalidCertificate(rustls::CertificateError::ExpiredContext {
                    not_after,
                    ..
                }) => ConnectFailure::ExpiredCertificate(Some(not_after.as_secs())),
                rustls::Error::InvalidCertificate(
                    rustls::CertificateError::NotValidForName
                    | rustls::CertificateError::NotValidForNameContext { .. },
                ) => ConnectFailure::WrongName,
                rustls::Error::InvalidCertificate(_) => ConnectFailure::UntrustedCertificate,
                _ => ConnectFailure::Tls,
            });
        }
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            found = match io.kind() {
                ConnectionRefused | NotFound | HostUnreachable | NetworkUnreachable
                | AddrNotAvailable => Some(ConnectFailure::Unreachable),
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => {
                    Some(ConnectFailure::Dropped)
                }
                TimedOut => Some(ConnectFailure::TimedOut),
                _ => found,
            };
        }
        next = current.source();
    }
    if found.is_some() {
        return found;
    }
    if err.is_timeout() {
        Some(ConnectFailure::TimedOut)
    } else if err.is_connect() {
        Some(ConnectFailure::Unreachable)
    } else if err.is_request() || err.is_body() {
        // Sent, at least in part, and no answer came back: hyper's "connection closed before
        // message completed" and its kin.
        Some(ConnectFailure::Dropped)
    } else {
        None
    }
}

/// rustls errors travel inside (nested) `io::Error`s, whose `source()` skips the wrapped error itself.
pub(crate) fn as_rustls_error<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> Option<&'a rustls::Error> {
    if let Some(tls) = err.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let inner = err.downcast_ref::<std::io::Error>()?.get_ref()?;
    as_rustls_error(inner)
}

/// The most names of a certificate a message lists.
const NAMES_SHOWN: usize = 8;

/// The names a certificate presented when it did not name the host we asked for, as rustls
/// (webpki) reported them: `DnsName("a.example")` and `IpAddress(127.0.0.1)` made plain.
pub(crate) fn presented_names(err: &reqwest::Error) -> Option<Vec<String>> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = next {
        if let Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidForNameContext { presented, .. },
        )) = as_rustls_error(current)
        {
            return Some(presented.iter().map(|name| plain_name(name)).collect());
        }
        next = current.source();
    }
    None
}

fn plain_name(presented: &str) -> String {
    let inner = presented
        .strip_prefix("DnsName(\"")
        .and_then(|rest| rest.strip_suffix("\")"))
        .or_else(|| {
            presented
                .strip_prefix("IpAddress(")
                .and_then(|rest| rest.strip_suffix(')'))
        })
        .unwrap_or(presented);
    crate::plumbing::output::shown_bare(inner)
}

/// `a, b and c`; `nothing (no subjectAltName)` for none; the first few of many.
fn listed(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(NAMES_SHOWN).map(String::as_str).collect();
    let more = names.len().saturating_sub(NAMES_SHOWN);
    match (shown.as_slice(), more) {
        ([], _) => "nothing (no subjectAltName)".to_string(),
        ([one], 0) => (*one).to_string(),
        ([rest @ .., last], 0) => format!("{} and {last}", rest.join(", ")),
        (all, more) => format!("{} and {more} more", all.join(", ")),
    }
}

/// The certificate does not name the host we reached: what it names, and what to do.
pub(crate) fn wrong_name(
    host: &RegistryHost,
    tunnel: Option<&TunnelEndpoint>,
    presented: Option<&[String]>,
) -> (String, String) {
    let names = match presented {
        Some(names) => format!("names {}", listed(names)),
        None => "names other hosts".to_string(),
    };
    match tunnel {
        Some(tunnel) => {
            let name = tunnel.dns_name();
            (
                format!(
                    "the TLS certificate of the registry behind {} {names}, not {name}, the Service's name in the cluster",
                    tunnel.service()
                ),
                format!(
                    "the registry's certificate must name {name}, as pods pull from it by that name: reissue it with {name} among its DNS names (cert-manager: the Certificate's dnsNames; OpenShift: the Service's annotation service.beta.openshift.io/serving-cert-secret-name), or pass --insecure to skip the check"
                ),
            )
        }
        None => (
            format!(
                "the TLS certificate of {host} {names}, not {}",
                host.hostname()
            ),
            format!(
                "reach the registry by a name its certificate has, or have the certificate reissued to name {}; --insecure skips the check",
                host.hostname()
            ),
        ),
    }
}

/// `2020-01-02 00:00:00 UTC` for seconds since the Unix epoch (proleptic Gregorian calendar).
pub(crate) fn utc_text(seconds: u64) -> String {
    let days = seconds / 86_400;
    let rest = seconds % 86_400;
    // Howard Hinnant's civil_from_days, for days since 1970-01-01 (never negative here).
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_text_is_the_calendar_date() {
        assert_eq!(utc_text(0), "1970-01-01 00:00:00 UTC");
        // `date -u -d @1577923200`, `date -u -d @951782399`, `date -u -d @4107542400`
        assert_eq!(utc_text(1_577_923_200), "2020-01-02 00:00:00 UTC");
        assert_eq!(utc_text(951_782_399), "2000-02-28 23:59:59 UTC");
        assert_eq!(utc_text(951_868_800), "2000-03-01 00:00:00 UTC");
        assert_eq!(utc_text(4_107_542_400), "2100-03-01 00:00:00 UTC");
    }

    #[test]
    fn presented_names_are_made_plain_and_listed() {
        assert_eq!(
            plain_name("DnsName(\"registry.example\")"),
            "registry.example"
        );
        assert_eq!(plain_name("IpAddress(127.0.0.1)"), "127.0.0.1");
        assert_eq!(plain_name("DnsName(\"a\u{202e}b\")"), "a\\u{202e}b");
        assert_eq!(listed(&[]), "nothing (no subjectAltName)");
        assert_eq!(listed(&["a".into()]), "a");
        assert_eq!(listed(&["a".into(), "b".into(), "c".into()]), "a, b and c");
        let many: Vec<String> = (0..10).map(|i| format!("n{i}")).collect();
        assert_eq!(listed(&many), "n0, n1, n2, n3, n4, n5, n6, n7 and 2 more");
    }
}
