//! Registry answers turned into readable causes: distribution error bodies, status lines, the retryable mark.

use std::fmt;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use reqwest::header::RETRY_AFTER;
use reqwest::{Response, StatusCode};
use serde::Deserialize;

use crate::image::go_json::null_as_empty;
use crate::plumbing::error::{Cause, Error, ExitCode};

/// How much of a non-JSON error body we quote: enough for a proxy's one-line message.
const QUOTED_BODY_LIMIT: usize = 300;
/// Error bodies are small JSON; we never read more than this of one.
const BODY_READ_LIMIT: usize = 64 * 1024;

/// A registry answer we did not expect, summarised: `400 Bad Request: MANIFEST_INVALID: manifest invalid`.
#[derive(Debug, Clone)]
pub struct RegistryResponse {
    pub status: StatusCode,
    /// The distribution error codes in the body (`MANIFEST_INVALID`, `BLOB_UNKNOWN`, ...), in order.
    pub codes: Vec<String>,
    summary: String,
    /// The start of the body, for callers that recognise a server by its words.
    body: Bytes,
    /// `Retry-After` in seconds, when the registry said how long to wait.
    pub retry_after: Option<Duration>,
}

impl RegistryResponse {
    /// Reads the start of `response`'s body, for at most `wait`, and summarises it.
    pub async fn read(mut response: Response, wait: Duration) -> Self {
        let status = response.status();
        let retry_after = retry_after_of(response.headers().get(RETRY_AFTER));
        let mut body = BytesMut::new();
        // A broken or silent body still leaves the status to report.
        let reading = async {
            while body.len() < BODY_READ_LIMIT
                && let Ok(Some(chunk)) = response.chunk().await
            {
                body.extend_from_slice(&chunk);
            }
        };
        let _ = tokio::time::timeout(wait, reading).await;
        let mut answer = Self::from_parts(status, &body);
        answer.retry_after = retry_after;
        answer
    }

    pub fn body(&self) -> &[u8] {
        &self.body
    }

    pub fn from_parts(status: StatusCode, body: &[u8]) -> Self {
        let parsed = serde_json::from_slice::<ErrorBody>(body)
            .ok()
            .filter(|parsed| !parsed.errors.is_empty());
        let (codes, details) = match parsed {
            Some(parsed) => {
                let codes = parsed.errors.iter().map(|e| e.code.clone()).collect();
                let details: Vec<String> = parsed.errors.iter().map(ErrorEntry::describe).collect();
                (codes, details.join("; "))
            }
            None => (Vec::new(), quote_plain_body(body)),
        };
        let status_line = match status.canonical_reason() {
            Some(reason) => format!("{} {reason}", status.as_str()),
            None => status.as_str().to_string(),
        };
        let summary = if details.is_empty() {
            format!("the registry answered {status_line}")
        } else {
            format!("the registry answered {status_line}: {details}")
        };
        Self {
            status,
            codes,
            summary,
            body: Bytes::copy_from_slice(&body[..body.len().min(BODY_READ_LIMIT)]),
            retry_after: None,
        }
    }

    pub fn has_code(&self, code: &str) -> bool {
        self.codes.iter().any(|c| c == code)
    }

    /// A timeout, overload, server or gateway answer that a later attempt may not get.
    pub fn is_transient(&self) -> bool {
        is_transient_status(self.status)
    }
}

impl fmt::Display for RegistryResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary)
    }
}

impl std::error::Error for RegistryResponse {}

/// `Retry-After` in seconds, when that is what it holds (its HTTP-date form is not read).
pub(crate) fn retry_after_of(value: Option<&reqwest::header::HeaderValue>) -> Option<Duration> {
    value
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

pub(super) fn is_transient_status(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::REQUEST_TIMEOUT
            | StatusCode::TOO_MANY_REQUESTS
            | StatusCode::INTERNAL_SERVER_ERROR
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT
    )
}

/// The distribution spec's error body: `{"errors":[{"code","message","detail"}]}`.
#[derive(Debug, Deserialize)]
struct ErrorBody {
    #[serde(default, deserialize_with = "null_as_empty")]
    errors: Vec<ErrorEntry>,
}

#[derive(Debug, Deserialize)]
struct ErrorEntry {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    detail: serde_json::Value,
}

impl ErrorEntry {
    fn describe(&self) -> String {
        let mut text = match (self.code.is_empty(), self.message.is_empty()) {
            (false, false) => format!("{}: {}", self.code, self.message),
            (false, true) => self.code.clone(),
            (true, _) => self.message.clone(),
        };
        let detail = match &self.detail {
            serde_json::Value::Null => String::new(),
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if !detail.is_empty() && detail != self.message {
            text.push_str(&format!(" ({})", truncate(&detail, QUOTED_BODY_LIMIT)));
        }
        text
    }
}

fn quote_plain_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    truncate(&one_line, QUOTED_BODY_LIMIT)
}

fn truncate(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Marks a failure that a fresh attempt may not meet (a dropped connection, a 503 mid-upload). The
/// blob's body was consumed, so the caller must reopen its reader to try again. Reads as its cause.
#[derive(Debug)]
pub(super) struct Retryable(pub Cause);

impl fmt::Display for Retryable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Retryable {
    // The wrapped cause stays in the chain (its hints too); its repeated text is dropped when shown.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// True when `error` failed for a reason that a new attempt (with a reopened blob reader) may not meet.
pub fn is_retryable(error: &Error) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(err) = next {
        if err.is::<Retryable>() {
            return true;
        }
        next = err.source();
    }
    false
}

/// How long the registry asked us to wait (`Retry-After`), if an answer in `error`'s chain said so.
pub(super) fn retry_after(error: &Error) -> Option<Duration> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(err) = next {
        if let Some(answer) = err.downcast_ref::<RegistryResponse>() {
            return answer.retry_after;
        }
        next = err.source();
    }
    None
}

/// The cause for an answer that is neither success nor an auth refusal, with what we know it means.
pub(super) fn unexpected_answer(answer: RegistryResponse) -> Error {
    let mut message = answer.to_string();
    let mut hint = None;
    if answer.status == StatusCode::PAYLOAD_TOO_LARGE {
        message.push_str(
            " (the request body is too large for the registry or a proxy in front of it)",
        );
        hint = Some("raise the body size limit of the proxy in front of the registry");
    } else if answer.has_code("NAME_INVALID") {
        hint = Some("repository names are lowercase letters, digits and . _ - / separators");
    }
    let transient = answer.is_transient();
    let slow_down = answer.status == StatusCode::TOO_MANY_REQUESTS;
    let error = Error::new(ExitCode::Registry, message).with_source(answer);
    let error = match hint {
        Some(hint) => error.with_hint(hint),
        None => error,
    };
    if transient {
        let summary = if slow_down {
            "the registry asks us to slow down"
        } else {
            "the registry is overloaded, failing or restarting"
        };
        Error::new(ExitCode::Registry, summary).with_source(Retryable(Box::new(error)))
    } else {
        error
    }
}

/// Go's HTTP server answers a plain request on a TLS port with this 400 body.
pub(super) fn is_plain_http_to_tls_answer(status: reqwest::StatusCode, body: &[u8]) -> bool {
    status == reqwest::StatusCode::BAD_REQUEST
        && String::from_utf8_lossy(body).contains("HTTP request to an HTTPS server")
}

/// The cause to show when we spoke plain HTTP to a TLS port and may not switch.
pub(super) fn plain_http_to_tls_error(
    transport: &super::connection::transport::Transport,
) -> Error {
    let host = transport.known_as();
    Error::new(
        ExitCode::Registry,
        format!("{host} speaks HTTPS, but we spoke plain HTTP to it"),
    )
    .with_hint("pass --ca-file with the registry's CA to use HTTPS (or --insecure to skip the certificate check)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_error_bodies_read_as_code_message_and_detail() {
        let body = br#"{"errors":[{"code":"MANIFEST_INVALID","message":"manifest invalid","detail":{"reason":"too big"}}]}"#;
        let answer = RegistryResponse::from_parts(StatusCode::BAD_REQUEST, body);
        assert_eq!(
            answer.to_string(),
            r#"the registry answered 400 Bad Request: MANIFEST_INVALID: manifest invalid ({"reason":"too big"})"#
        );
        assert!(answer.has_code("MANIFEST_INVALID"));
        assert!(!answer.has_code("BLOB_UNKNOWN"));
    }

    #[test]
    fn several_errors_are_all_named() {
        let body = br#"{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown to registry","detail":"sha256:ab"},{"code":"DIGEST_INVALID","message":"provided digest did not match uploaded content"}]}"#;
        let answer = RegistryResponse::from_parts(StatusCode::BAD_REQUEST, body);
        assert_eq!(
            answer.to_string(),
            "the registry answered 400 Bad Request: BLOB_UNKNOWN: blob unknown to registry (sha256:ab); \
             DIGEST_INVALID: provided digest did not match uploaded content"
        );
    }

    #[test]
    fn a_plain_text_body_is_quoted_on_one_line() {
        let answer = RegistryResponse::from_parts(
            StatusCode::BAD_GATEWAY,
            b"<html>\n  <body>upstream down</body>\n</html>\n",
        );
        assert_eq!(
            answer.to_string(),
            "the registry answered 502 Bad Gateway: <html> <body>upstream down</body> </html>"
        );
        assert!(answer.is_transient());
    }

    #[test]
    fn an_empty_body_gives_the_status_alone() {
        let answer = RegistryResponse::from_parts(StatusCode::NOT_FOUND, b"");
        assert_eq!(answer.to_string(), "the registry answered 404 Not Found");
    }

    #[test]
    fn gateway_answers_are_retryable_and_client_errors_are_not() {
        let overloaded = unexpected_answer(RegistryResponse::from_parts(
            StatusCode::SERVICE_UNAVAILABLE,
            b"",
        ));
        assert!(is_retryable(&overloaded));
        let wrapped = Error::new(ExitCode::Registry, "pushing").with_source(overloaded);
        assert!(is_retryable(&wrapped));
        let invalid = unexpected_answer(RegistryResponse::from_parts(StatusCode::BAD_REQUEST, b""));
        assert!(!is_retryable(&invalid));
        for status in [408, 429, 500, 502, 503, 504] {
            let status = StatusCode::from_u16(status).unwrap();
            let answer = unexpected_answer(RegistryResponse::from_parts(status, b""));
            assert!(is_retryable(&answer), "{status}");
        }
        for status in [400, 404, 405, 413, 501] {
            let status = StatusCode::from_u16(status).unwrap();
            let answer = unexpected_answer(RegistryResponse::from_parts(status, b""));
            assert!(!is_retryable(&answer), "{status}");
        }
    }

    #[test]
    fn too_large_says_so() {
        let error = unexpected_answer(RegistryResponse::from_parts(
            StatusCode::PAYLOAD_TOO_LARGE,
            b"",
        ));
        assert!(error.message().contains("too large"), "{}", error.message());
    }
}
