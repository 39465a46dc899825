//! Sending one registry request: its auth header, a second try after an auth challenge, retries
//! of re-sendable requests after transient failures, and the no-progress bound on every wait.

use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, HeaderMap, WWW_AUTHENTICATE};
use reqwest::{Method, Response, StatusCode, Url};

use super::auth::{
    Auth, Scope, TokenRefusal, refusal_said, unspoken_scheme, unspoken_scheme_error,
};
use super::connection::below_http::{ConnectFailure, connect_failure};
use super::connection::transport::{SendFailure, Transport, explain_send_error, stalled_error};
use super::errors::{
    RegistryResponse, Retryable, is_retryable, is_transient_status, retry_after, unexpected_answer,
};
use super::watchdog::Watchdog;
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::limits::{Limits, MAX_RETRY_DELAY};

/// What a request carries.
pub(super) enum Payload {
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

pub(super) struct Request {
    pub method: Method,
    pub url: Url,
    pub headers: HeaderMap,
    pub payload: Payload,
    pub scope: Scope,
    /// Sending it twice does no harm (HEAD, GET, a manifest PUT, starting an upload).
    pub idempotent: bool,
    /// Whether a refused connection is worth another attempt (not for the first contact: a
    /// registry that is down should be said at once).
    pub retry_unreachable: bool,
    /// The operation's no-progress bound; without one the request gets its own.
    pub watchdog: Option<Watchdog>,
}

impl Request {
    pub(super) fn new(method: Method, url: Url, scope: Scope) -> Self {
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
            retry_unreachable: true,
            watchdog: None,
        }
    }
}

/// Sends `request` and returns the registry's answer, whatever its status, except that an auth
/// refusal (401 after answering the challenge, or 403) is an error naming the credentials, and
/// that a re-sendable request is tried again while its answer is transient.
pub(super) async fn send(
    transport: &Transport,
    auth: &Auth,
    mut request: Request,
) -> Result<Response> {
    let limits = transport.limits;
    let watchdog = request
        .watchdog
        .clone()
        .unwrap_or_else(|| Watchdog::new(limits.request_timeout));
    let mut attempt = 1;
    // 1 after meeting the first challenge; 2 after one more token, fetched because the
    // registry refused one we had just been given (an expired one, said `invalid_token`).
    let mut challenges_met = 0u32;
    loop {
        let may_resend = request.payload.can_resend() && request.idempotent;
        let failure = match send_once(transport, auth, &mut request, &watchdog).await {
            Ok(Sent::Answer(response)) => return Ok(response),
            Ok(Sent::Challenged(response, said)) => {
                let again = match challenges_met {
                    0 => true,
                    1 => auth.may_fetch_again(said.as_ref()),
                    _ => false,
                };
                if request.payload.can_resend() && again {
                    challenges_met += 1;
                    continue;
                }
                let answer = read(transport, response).await;
                let refused = match challenges_met {
                    2 => auth.token_refused(transport, &request.scope, said.as_ref(), answer),
                    _ => auth.refused(transport, answer),
                };
                if request.payload.can_resend() {
                    return Err(refused);
                }
                // The body went with a token that has expired since: a new attempt fetches another.
                return Err(
                    Error::new(ExitCode::Registry, refused.message().to_string())
                        .with_source(Retryable(Box::new(refused))),
                );
            }
            Err(failure) => failure,
        };
        let retry = may_resend
            && (request.retry_unreachable
                || failure_in(&failure) != Some(ConnectFailure::Unreachable));
        match retry
            .then(|| retry_delay(&limits, &failure, attempt, &watchdog))
            .flatten()
        {
            Some(delay) => {
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
            None => return Err(failure),
        }
    }
}

/// What one attempt got back.
enum Sent {
    Answer(Response),
    /// 401 with a challenge we can answer (the token for it was dropped), and what it said of
    /// the token it refused.
    Challenged(Response, Option<TokenRefusal>),
}

async fn send_once(
    transport: &Transport,
    auth: &Auth,
    request: &mut Request,
    watchdog: &Watchdog,
) -> Result<Sent> {
    let mut builder = transport
        .http
        .request(request.method.clone(), request.url.clone())
        .headers(request.headers.clone());
    // Credentials go to the registry only, never to a storage backend a Location points at,
    // nor over a scheme other than the registry's.
    if transport.is_origin(&request.url) {
        // A credential helper has its own time limit, outside the registry's.
        auth.prepare(transport).await?;
        let header = watchdog
            .bound(auth.header(transport, &request.scope))
            .await
            .map_err(|stalled| auth.stalled(transport, stalled))??;
        if let Some(authorization) = header {
            builder = builder.header(AUTHORIZATION, authorization);
        }
    }
    if let Some(body) = request.payload.for_attempt() {
        builder = builder.body(body);
    }
    let response = match watchdog.bound(builder.send()).await {
        Ok(Ok(response)) => response,
        Ok(Err(err)) => return Err(send_error(transport, err)),
        Err(stalled) => return Err(stalled_error(transport, stalled)),
    };
    watchdog.progressed();
    let status = response.status();
    if status == StatusCode::UNAUTHORIZED {
        let challenges: Vec<String> = response
            .headers()
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .map(str::to_string)
            .collect();
        if auth.on_unauthorized(&challenges, &request.scope) {
            return Ok(Sent::Challenged(response, refusal_said(&challenges)));
        }
        if let Some(scheme) = unspoken_scheme(&challenges) {
            return Err(unspoken_scheme_error(transport, &scheme));
        }
        return Err(auth.refused(transport, read(transport, response).await));
    }
    if status == StatusCode::FORBIDDEN {
        return Err(auth.refused(transport, read(transport, response).await));
    }
    if is_transient_status(status) && request.payload.can_resend() {
        return Err(unexpected_answer(read(transport, response).await));
    }
    Ok(Sent::Answer(response))
}

async fn read(transport: &Transport, response: Response) -> RegistryResponse {
    RegistryResponse::read(response, transport.limits.request_timeout).await
}

/// A request that got no answer, marked retryable when the connection broke or was refused.
fn send_error(transport: &Transport, err: reqwest::Error) -> Error {
    let failure = connect_failure(&err);
    let explained = explain_send_error(transport, err);
    match failure {
        Some(ConnectFailure::Dropped | ConnectFailure::Unreachable) => {
            Error::new(ExitCode::Registry, explained.message().to_string())
                .with_source(Retryable(Box::new(explained)))
        }
        _ => explained,
    }
}

/// The wait before the next attempt of an operation that failed with `error` on attempt
/// `attempt`, or `None` when it must not be retried: not transient, out of attempts, or the
/// wait would outlast the operation's no-progress bound.
pub(super) fn retry_delay(
    limits: &Limits,
    error: &Error,
    attempt: u32,
    watchdog: &Watchdog,
) -> Option<Duration> {
    if !is_retryable(error) || attempt >= limits.attempts {
        return None;
    }
    let delay = retry_after(error)
        .unwrap_or_else(|| backoff(limits.retry_delay, attempt))
        .min(MAX_RETRY_DELAY);
    watchdog.allows(delay).then_some(delay)
}

/// `first`, doubled for each attempt after the first, less up to half at random so that
/// parallel uploads failing together do not come back together.
fn backoff(first: Duration, attempt: u32) -> Duration {
    let doubled = first.saturating_mul(1u32 << (attempt - 1).min(16));
    let random = RandomState::new().hash_one(attempt);
    let keep = 0.5 + (random % 1000) as f64 / 2000.0;
    doubled.mul_f64(keep)
}

/// The connection-level reason under `error`, if a request in it got no answer.
pub(super) fn failure_in(error: &Error) -> Option<ConnectFailure> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(err) = next {
        if let Some(send_failure) = err.downcast_ref::<SendFailure>() {
            return send_failure.failure;
        }
        next = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_below_the_doubled_delay() {
        let first = Duration::from_millis(100);
        for attempt in 1..6 {
            let full = first * (1 << (attempt - 1));
            let delay = backoff(first, attempt);
            assert!(delay <= full && delay >= full / 2, "{attempt}: {delay:?}");
        }
    }

    #[test]
    fn only_retryable_failures_within_attempts_and_time_are_retried() {
        let limits = Limits {
            attempts: 3,
            retry_delay: Duration::from_millis(10),
            ..Limits::default()
        };
        let watchdog = Watchdog::new(Duration::from_secs(60));
        let transient = unexpected_answer(RegistryResponse::from_parts(
            StatusCode::SERVICE_UNAVAILABLE,
            b"",
        ));
        assert!(retry_delay(&limits, &transient, 1, &watchdog).is_some());
        assert!(retry_delay(&limits, &transient, 2, &watchdog).is_some());
        assert!(retry_delay(&limits, &transient, 3, &watchdog).is_none());
        let invalid = unexpected_answer(RegistryResponse::from_parts(StatusCode::BAD_REQUEST, b""));
        assert!(retry_delay(&limits, &invalid, 1, &watchdog).is_none());
        let short = Watchdog::new(Duration::from_millis(1));
        let slow = Limits {
            retry_delay: Duration::from_secs(5),
            ..limits
        };
        assert!(retry_delay(&slow, &transient, 1, &short).is_none());
    }

    #[test]
    fn retry_after_sets_the_wait() {
        let mut answer = RegistryResponse::from_parts(StatusCode::TOO_MANY_REQUESTS, b"");
        answer.retry_after = Some(Duration::from_secs(2));
        let error = unexpected_answer(answer);
        let watchdog = Watchdog::new(Duration::from_secs(60));
        assert_eq!(
            retry_delay(&Limits::default(), &error, 1, &watchdog),
            Some(Duration::from_secs(2))
        );
    }
}
