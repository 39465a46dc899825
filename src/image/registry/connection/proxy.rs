//! Which proxy a registry request goes through: the environment's, as curl and Go read it, except
//! that loopback is never proxied (Go's rule, which kubectl, docker and skopeo follow): a proxy on
//! another machine cannot reach our 127.0.0.1.

use reqwest::{NoProxy, Proxy, Url};

use crate::image::reference::is_loopback_url;
use crate::plumbing::environment::{ALL_PROXY, HTTP_PROXY, HTTPS_PROXY, NO_PROXY};

/// `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` (or their lowercase forms), as read at start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proxies {
    pub https: Option<Url>,
    pub http: Option<Url>,
    pub all: Option<Url>,
    pub no_proxy: Option<String>,
}

impl Proxies {
    /// Reads each variable from `lookup` (an environment), the uppercase name first as Go does.
    /// A value that is not a URL is ignored, as it would be by curl.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let variable = |upper: &str| {
            lookup(upper)
                .or_else(|| lookup(&upper.to_ascii_lowercase()))
                .filter(|value| !value.trim().is_empty())
        };
        let url = |upper: &str| variable(upper).and_then(|value| Url::parse(value.trim()).ok());
        Self {
            https: url(HTTPS_PROXY),
            http: url(HTTP_PROXY),
            all: url(ALL_PROXY),
            no_proxy: variable(NO_PROXY),
        }
    }

    /// The proxy rule for our HTTP clients; `spared` (a tunnel's Service name, resolved to
    /// loopback) is never proxied either.
    pub(crate) fn to_reqwest(&self, spared: Option<&str>) -> Proxy {
        let Self {
            https, http, all, ..
        } = self.clone();
        let spared = spared.map(str::to_ascii_lowercase);
        Proxy::custom(move |url| {
            let is_spared = spared.as_deref().is_some_and(|name| {
                url.host_str()
                    .is_some_and(|host| host.eq_ignore_ascii_case(name))
            });
            if is_loopback_url(url) || is_spared {
                return None;
            }
            match url.scheme() {
                "https" => https.clone().or_else(|| all.clone()),
                _ => http.clone().or_else(|| all.clone()),
            }
        })
        .no_proxy(self.no_proxy.as_deref().and_then(NoProxy::from_string))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uppercase_wins_and_lowercase_is_read_and_junk_is_ignored() {
        let vars = [
            ("HTTPS_PROXY", "http://corp:3128"),
            ("https_proxy", "http://other:1"),
            ("http_proxy", "http://lower:8080"),
            ("ALL_PROXY", "not a url"),
            ("no_proxy", ".internal"),
        ];
        let proxies = Proxies::from_lookup(|name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
        });
        assert_eq!(proxies.https.unwrap().as_str(), "http://corp:3128/");
        assert_eq!(proxies.http.unwrap().as_str(), "http://lower:8080/");
        assert_eq!(proxies.all, None);
        assert_eq!(proxies.no_proxy.as_deref(), Some(".internal"));
    }
}
