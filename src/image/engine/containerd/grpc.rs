//! gRPC over containerd's unix socket: HTTP/2 without TLS, each message behind a 5-byte length
//! prefix, the outcome in the `grpc-status` trailer, the namespace in `containerd-namespace`.

use std::path::Path;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue, TE};

/// The largest message we take: content is read in chunks far smaller (containerd's are 1 MiB),
/// and an image answer is a few hundred bytes.
const MESSAGE_LIMIT: usize = 16 << 20;
/// gRPC's code for "no such image" or "no such content".
pub(super) const NOT_FOUND: u32 = 5;
/// gRPC's code for a call the peer refused for want of permission.
pub(super) const PERMISSION_DENIED: u32 = 7;

/// Why a call failed: gRPC's code where containerd answered, `None` where it could not be asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub code: Option<u32>,
    pub message: String,
}

impl Failure {
    fn unanswered(message: String) -> Self {
        Self {
            code: None,
            message,
        }
    }
}

/// A client of one containerd socket, in one namespace.
#[derive(Debug, Clone)]
pub(super) struct Grpc {
    client: reqwest::Client,
    namespace: String,
}

impl Grpc {
    /// `stall` bounds each wait for bytes; `connect` the connection.
    #[cfg(unix)]
    pub(super) fn new(
        socket: &Path,
        namespace: &str,
        connect: Duration,
        stall: Duration,
    ) -> Result<Self, Failure> {
        let client = reqwest::Client::builder()
            .unix_socket(socket)
            // A unix socket speaks no TLS: no system roots to read for it.
            .tls_certs_only([])
            .http2_prior_knowledge()
            .no_proxy()
            .connect_timeout(connect)
            .read_timeout(stall)
            .build()
            .map_err(|err| Failure::unanswered(err.to_string()))?;
        Ok(Self {
            client,
            namespace: namespace.to_string(),
        })
    }

    /// containerd listens on a unix socket, which this system does not have: nerdctl's images
    /// are then read through nothing of ours.
    #[cfg(not(unix))]
    pub(super) fn new(
        socket: &Path,
        _namespace: &str,
        _connect: Duration,
        _stall: Duration,
    ) -> Result<Self, Failure> {
        Err(Failure::unanswered(format!(
            "{} is a unix socket, which this system does not have",
            socket.display()
        )))
    }

    /// A call with one answer.
    pub(super) async fn unary(&self, method: &str, request: Vec<u8>) -> Result<Bytes, Failure> {
        let mut answers = self.call(method, request).await?;
        let answer = answers.next().await?.ok_or_else(|| Failure {
            code: None,
            message: format!("containerd gave no answer to {method}"),
        })?;
        while answers.next().await?.is_some() {}
        Ok(answer)
    }

    /// A call whose answers stream.
    pub(super) async fn call(&self, method: &str, request: Vec<u8>) -> Result<Answers, Failure> {
        let mut body = Vec::with_capacity(request.len() + 5);
        body.push(0);
        body.extend_from_slice(&(request.len() as u32).to_be_bytes());
        body.extend_from_slice(&request);
        let namespace = HeaderValue::from_str(&self.namespace).map_err(|_| {
            Failure::unanswered(format!(
                "{} is not a namespace name",
                crate::plumbing::output::shown(&self.namespace)
            ))
        })?;
        let response = self
            .client
            .post(format!("http://containerd/{method}"))
            .header(CONTENT_TYPE, "application/grpc")
            .header(TE, "trailers")
            .header("containerd-namespace", namespace)
            .body(body)
            .send()
            .await
            .map_err(|err| Failure::unanswered(describe(&err)))?;
        if !response.status().is_success() {
            return Err(Failure::unanswered(format!(
                "containerd answered {} to {method}",
                response.status()
            )));
        }
        // A call that fails at once answers with its status in the headers and no body.
        status(response.headers())?;
        let response: http::Response<reqwest::Body> = response.into();
        Ok(Answers {
            body: response.into_body(),
            buffer: BytesMut::new(),
            ended: false,
        })
    }
}

/// The answers of one call, as they come.
pub(super) struct Answers {
    body: reqwest::Body,
    buffer: BytesMut,
    ended: bool,
}

impl Answers {
    /// The next answer; `None` once the call ended well.
    pub(super) async fn next(&mut self) -> Result<Option<Bytes>, Failure> {
        loop {
            if let Some(message) = next_message(&mut self.buffer)? {
                return Ok(Some(message));
            }
            if self.ended {
                return match self.buffer.is_empty() {
                    true => Ok(None),
                    false => Err(Failure::unanswered(
                        "containerd's answer ended mid-message".into(),
                    )),
                };
            }
            let frame = match self.body.frame().await {
                Some(frame) => frame.map_err(|err| Failure::unanswered(describe(&err)))?,
                None => {
                    return Err(Failure::unanswered(
                        "containerd's answer ended without its status".into(),
                    ));
                }
            };
            match frame.into_data() {
                Ok(data) => self.buffer.extend_from_slice(&data),
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        status(&trailers)?;
                        self.ended = true;
                    }
                }
            }
        }
    }
}

/// The first whole message of gRPC's framing (a compressed flag, a 4-byte big-endian length,
/// the message) taken from the front of `buffer`; `None` until one is whole. A length over
/// `MESSAGE_LIMIT` is refused before anything is buffered for it. No I/O.
pub(crate) fn next_message(buffer: &mut BytesMut) -> Result<Option<Bytes>, Failure> {
    if buffer.len() < 5 {
        return Ok(None);
    }
    if buffer[0] != 0 {
        return Err(Failure::unanswered(
            "containerd sent a compressed message, which was not asked for".into(),
        ));
    }
    let len = u32::from_be_bytes([buffer[1], buffer[2], buffer[3], buffer[4]]) as usize;
    if len > MESSAGE_LIMIT {
        return Err(Failure::unanswered(format!(
            "containerd sent a message of {len} bytes (more than {MESSAGE_LIMIT})"
        )));
    }
    if buffer.len() < 5 + len {
        return Ok(None);
    }
    buffer.advance(5);
    Ok(Some(buffer.split_to(len).freeze()))
}

/// The call's outcome as `grpc-status` says; `Ok` when it is 0 or not said here.
pub(crate) fn status(headers: &HeaderMap) -> Result<(), Failure> {
    let Some(code) = headers.get("grpc-status") else {
        return Ok(());
    };
    let code = code
        .to_str()
        .ok()
        .and_then(|code| code.parse::<u32>().ok())
        .unwrap_or(2);
    if code == 0 {
        return Ok(());
    }
    let message = headers
        .get("grpc-message")
        .map(|m| percent_decoded(m.as_bytes()))
        .unwrap_or_default();
    Err(Failure {
        code: Some(code),
        message,
    })
}

/// `grpc-message` is percent-encoded.
fn percent_decoded(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut at = 0;
    while at < raw.len() {
        let hex = raw
            .get(at + 1..at + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (raw[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The innermost cause: reqwest's own words hide "permission denied" and "no such file".
fn describe(err: &(dyn std::error::Error + 'static)) -> String {
    let mut innermost = err;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    innermost.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_in_the_headers_is_the_calls_failure() {
        let mut headers = HeaderMap::new();
        headers.insert("grpc-status", HeaderValue::from_static("5"));
        headers.insert(
            "grpc-message",
            HeaderValue::from_static("image %22docker.io/library/x:1%22: not found"),
        );
        assert_eq!(
            status(&headers),
            Err(Failure {
                code: Some(NOT_FOUND),
                message: "image \"docker.io/library/x:1\": not found".into()
            })
        );
        headers.insert("grpc-status", HeaderValue::from_static("0"));
        assert_eq!(status(&headers), Ok(()));
    }
}
