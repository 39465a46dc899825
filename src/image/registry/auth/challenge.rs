//! A registry's `WWW-Authenticate` challenge, parsed: Basic, or Bearer with the token realm and
//! service; and the schemes we cannot meet (Kerberos, NTLM), to name them.

use std::collections::HashMap;

/// What the registry asked for in `WWW-Authenticate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Challenge {
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
    },
}

/// Parses `Basic realm="x"` or `Bearer realm="https://..",service="..",scope=".."`.
pub(crate) fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let params = parse_params(rest);
    let realm = params.get("realm")?.clone();
    Some(Challenge::Bearer {
        realm,
        service: params.get("service").cloned(),
    })
}

/// What a Bearer challenge says of the token it refused (RFC 6750 §3: `error="invalid_token"`,
/// `error_description="..."`, as distribution sends them); `None` when it says nothing.
pub(crate) fn refusal_said(www_authenticate: &[String]) -> Option<TokenRefusal> {
    www_authenticate.iter().find_map(|value| {
        let value = value.trim();
        let (scheme, rest) = value.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let params = parse_params(rest);
        Some(TokenRefusal {
            error: params.get("error")?.clone(),
            description: params.get("error_description").cloned(),
        })
    })
}

/// A Bearer challenge's `error` and `error_description`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TokenRefusal {
    pub error: String,
    pub description: Option<String>,
}

impl TokenRefusal {
    /// `insufficient_scope`: the token is good, its holder may not do this.
    pub(crate) fn is_scope(&self) -> bool {
        self.error == "insufficient_scope"
    }
}

/// The scheme of a challenge we cannot meet and should name: Kerberos or NTLM through SPNEGO
/// (`Negotiate`), or `NTLM` and `Kerberos` themselves (as IIS and some corporate proxies ask).
pub(crate) fn unspoken_scheme(www_authenticate: &[String]) -> Option<String> {
    www_authenticate.iter().find_map(|value| {
        let scheme = value.trim().split([' ', ',']).next().unwrap_or_default();
        ["Negotiate", "NTLM", "Kerberos"]
            .iter()
            .find(|known| known.eq_ignore_ascii_case(scheme))
            .map(|known| (*known).to_string())
    })
}

/// `key="quoted, with commas",key2=bare` → map with lowercase keys.
fn parse_params(text: &str) -> HashMap<String, String> {
    let mut params = HashMap::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let Some((key, after_eq)) = rest.split_once('=') else {
            break;
        };
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let (value, after_value) = if let Some(quoted) = after_eq.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, &quoted[end.min(quoted.len())..])
        } else {
            let end = after_eq.find(',').unwrap_or(after_eq.len());
            (after_eq[..end].trim().to_string(), &after_eq[end..])
        };
        params.insert(key, value);
        rest = after_value.trim_start_matches([',', ' ']);
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_refusal_says_its_error_and_description() {
        let header = r#"Bearer realm="https://auth.example/token",service="registry",scope="repository:app:pull,push",error="invalid_token",error_description="token expired""#;
        assert_eq!(
            refusal_said(&[header.to_string()]),
            Some(TokenRefusal {
                error: "invalid_token".into(),
                description: Some("token expired".into()),
            })
        );
        assert_eq!(
            refusal_said(&[r#"Bearer realm="https://a/token""#.to_string()]),
            None
        );
        let scope = r#"Bearer realm="r",error="insufficient_scope""#.to_string();
        assert!(refusal_said(&[scope]).is_some_and(|r| r.is_scope()));
    }

    #[test]
    fn bearer_challenges_give_realm_and_service() {
        let parsed = parse_challenge(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#,
        );
        assert_eq!(
            parsed,
            Some(Challenge::Bearer {
                realm: "https://auth.example/token".into(),
                service: Some("registry.example".into())
            })
        );
    }

    #[test]
    fn basic_and_unknown_schemes() {
        assert_eq!(
            parse_challenge(r#"Basic realm="test-registry""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge("Negotiate abc"), None);
        assert_eq!(
            parse_challenge(r#"Bearer service="x""#),
            None,
            "a realm is required"
        );
    }

    #[test]
    fn unquoted_and_escaped_params() {
        let params = parse_params(r#"realm=http://a/token, service="s\"q", Scope="x""#);
        assert_eq!(params["realm"], "http://a/token");
        assert_eq!(params["service"], "s\"q");
        assert_eq!(params["scope"], "x");
    }
}
