//! Sending one registry request: its auth header, a second try after an auth challenge, and
//! retries of re-sendable requests after connection failures and gateway errors.

use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, HeaderMap, WWW_AUTHENTICATE};
use reqwest::{Method, Response, StatusCode, Url};

use super::auth::{Auth, Scope};
use super::errors::{RegistryResponse, Retryable, is_transient_status};
use super::transport::{
    ConnectFailure, SendFailure, Transport, connect_failure, explain_send_error,
};
use crate::error::{Error, ExitCode, Result};

/// Attempts for a request we may send again (the first one included).
const MAX_ATTEMPTS: u32 = 3;
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// Bound on a request without a streamed body: they are small, so a silent registry is a stuck one.
/// Streamed uploads get none; a dead peer still ends them with a connection error.
const SMALL_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// What a request carries.
pub enum Payload {
    Empty,
    /// Held bytes: the request can be sent again.
    Bytes(Bytes),
    /// A stream: sent once; a failure after it is consumed is for the caller to retry.
    Stream(Option<reqwest::Body>),
}

impl Payload {
    fn can_resend(&self) -> bool {
        !matches!(self, Payload::Stream(_))
    }

    fn for_attempt(&mut self) -> Option<reqwest::Body> {
        match self {
            Payload::Empty => None,
            Payload::Bytes(bytes) => Some(reqwest::Body::from(bytes.clone())),
            Payload::Stream(body) => body.take(),
        }
    }
}

pub struct Request {
    pub method: Method,
    pub url: Url,
    pub headers: HeaderMap,
    pub payload: Payload,
    pub scope: Scope,
    /// Sending it twice does no harm (HEAD, GET, a manifest PUT, starting an upload).
    pub idempotent: bool,
}

impl Request {
    pub fn new(method: Method, url: Url, scope: Scope) -> Self {
        let idempotent = matches!(
            method,
            Method::GET | Method::HEAD | Method::PUT | Method::DELETE
        );
        Self {
            method,
            url,
            headers: HeaderMap::new(),
            payload: Payload::Empty,
            scope,
            idempotent,
        }
    }
}

/// Sends `request` and returns the registry's answer, whatever its status, except that an auth
/// refusal (401 after answering the challenge, or 403) is an error naming the credentials.
pub async fn send(transport: &Transport, auth: &Auth, mut request: Request) -> Result<Response> {
    let mut attempt = 1;
    let mut answered_challenge = false;
    loop {
        let may_resend = request.payload.can_resend();
        let mut builder = transport
            .http
            .request(request.method.clone(), request.url.clone())
            .headers(request.headers.clone());
        // Credentials go to the registry only, never to a storage backend a Location points at.
        if same_origin(transport, &request.url)
            && let Some(authorization) = auth.header(transport, &request.scope).await?
        {
            builder = builder.header(AUTHORIZATION, authorization);
        }
        if may_resend {
            builder = builder.timeout(SMALL_REQUEST_TIMEOUT);
        }
        if let Some(body) = request.payload.for_attempt() {
            builder = builder.body(body);
        }
        let outcome = builder.send().await;
        let retry_allowed = may_resend && request.idempotent && attempt < MAX_ATTEMPTS;
        match outcome {
            Err(err) => {
                let failure = connect_failure(&err);
                let transient = matches!(
                    failure,
                    Some(
                        ConnectFailure::Unreachable
                            | ConnectFailure::Dropped
                            | ConnectFailure::TimedOut
                    )
                );
                if transient && retry_allowed {
                    backoff(attempt).await;
                    attempt += 1;
                    continue;
                }
                let explained = explain_send_error(transport, err);
                return Err(match failure {
                    Some(ConnectFailure::Dropped | ConnectFailure::TimedOut) => {
                        Error::new(ExitCode::Registry, explained.message().to_string())
                            .with_source(Retryable(Box::new(explained)))
                    }
                    _ => explained,
                });
            }
            Ok(response) if response.status() == StatusCode::UNAUTHORIZED => {
                let challenge = response
                    .headers()
                    .get(WWW_AUTHENTICATE)
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_string);
                let understood = auth.on_unauthorized(challenge.as_deref(), &request.scope);
                if understood && may_resend && !answered_challenge {
                    answered_challenge = true;
                    continue;
                }
                return Err(auth.refused(transport, RegistryResponse::read(response).await));
            }
            Ok(response) if response.status() == StatusCode::FORBIDDEN => {
                return Err(auth.refused(transport, RegistryResponse::read(response).await));
            }
            Ok(response) if is_transient_status(response.status()) && retry_allowed => {
                backoff(attempt).await;
                attempt += 1;
            }
            Ok(response) => return Ok(response),
        }
    }
}

fn same_origin(transport: &Transport, url: &Url) -> bool {
    let authority = match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        (None, _) => return false,
    };
    authority.eq_ignore_ascii_case(transport.host.as_str())
}

async fn backoff(attempt: u32) {
    tokio::time::sleep(FIRST_BACKOFF * 3u32.pow(attempt - 1)).await;
}

/// The connection-level reason under `error`, if a request in it got no answer.
pub fn failure_in(error: &Error) -> Option<ConnectFailure> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(err) = next {
        if let Some(send_failure) = err.downcast_ref::<SendFailure>() {
            return send_failure.failure;
        }
        next = err.source();
    }
    None
}
