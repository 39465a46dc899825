//! Blobs: the HEAD that skips a present blob, the cross-repo mount, the monolithic streamed PUT,
//! and the streamed PATCH for content whose digest is known only at its end.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, LOCATION};
use reqwest::{Method, Response, StatusCode, Url};
use sha2::{Digest as _, Sha256};

use super::RegistryClient;
use super::auth::Scope;
use super::open_uploads::OpenUpload;
use super::request::{Payload, Request};
use super::watchdog::Watchdog;
use crate::image::digest::Digest;
use crate::plumbing::error::{Error, ExitCode, Result};

const OCTET_STREAM: HeaderValue = HeaderValue::from_static("application/octet-stream");
/// How long a best-effort cancel of a failed upload may take.
const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl RegistryClient {
    /// `HEAD /v2/<repo>/blobs/<digest>`: the blob's size when the repository has it.
    pub async fn blob_exists(&self, repo: &str, digest: &Digest) -> Result<Option<u64>> {
        let what = || {
            format!(
                "checking for blob {} in {}",
                digest.short(),
                self.target(repo)
            )
        };
        let attempt = async {
            let url = self.repo_url(repo, &format!("blobs/{digest}"))?;
            let response = self
                .send(Request::new(Method::HEAD, url, Scope::push(repo)))
                .await?;
            match response.status() {
                StatusCode::OK => Ok(Some(header_length(&response).unwrap_or(0))),
                StatusCode::NOT_FOUND => Ok(None),
                _ => Err(self.answer_error(response).await),
            }
        };
        attempt.await.map_err(|cause| self.failed(what(), cause))
    }

    /// Mounts `digest` from `from_repo` into `repo` without sending it. False when the registry
    /// declined (it started an upload instead, which we cancel): push the blob then.
    pub async fn mount_blob(&self, repo: &str, digest: &Digest, from_repo: &str) -> Result<bool> {
        let what = || {
            format!(
                "mounting blob {} from {} into {}",
                digest.short(),
                self.target(from_repo),
                self.target(repo)
            )
        };
        let attempt = async {
            super::check_repository(from_repo)?;
            let mut url = self.repo_url(repo, "blobs/uploads/")?;
            url.query_pairs_mut()
                .append_pair("mount", digest.as_str())
                .append_pair("from", from_repo);
            let mut request = Request::new(
                Method::POST,
                url,
                Scope::push_with_pull_from(repo, from_repo),
            );
            request.idempotent = true;
            let response = self.send(request).await?;
            match response.status() {
                StatusCode::CREATED => Ok(true),
                StatusCode::ACCEPTED => {
                    if let Ok(location) = self.location(&response) {
                        self.cancel_upload(repo, location).await;
                    }
                    Ok(false)
                }
                _ => Err(self.answer_error(response).await),
            }
        };
        attempt.await.map_err(|cause| self.failed(what(), cause))
    }

    /// Uploads a blob of known digest and size in one streamed PUT (no chunks). The registry checks
    /// the digest. If `body` yields an error, the upload is aborted and that error is the source of ours.
    pub async fn push_blob<S>(&self, repo: &str, digest: &Digest, size: u64, body: S) -> Result<()>
    where
        S: Stream<Item = std::io::Result<Bytes>> + Send + 'static,
    {
        self.push_blob_within(repo, digest, size, body, &self.upload_watchdog())
            .await
    }

    /// [`push_blob`](Self::push_blob) as one attempt of an upload whose no-progress bound
    /// `watchdog` spans all its attempts.
    pub async fn push_blob_within<S>(
        &self,
        repo: &str,
        digest: &Digest,
        size: u64,
        body: S,
        watchdog: &Watchdog,
    ) -> Result<()>
    where
        S: Stream<Item = std::io::Result<Bytes>> + Send + 'static,
    {
        let what = format!("pushing blob {} to {}", digest.short(), self.target(repo));
        let location = self
            .start_upload(repo, watchdog)
            .await
            .map_err(|cause| self.failed(what.clone(), cause))?;
        let open = OpenUpload::register(self, repo, &location);
        let mut url = location.clone();
        url.query_pairs_mut().append_pair("digest", digest.as_str());
        let tap = Tap::new(Some(size), false, watchdog.clone());
        let mut request = Request::new(Method::PUT, url, Scope::push(repo));
        request.headers.insert(CONTENT_TYPE, OCTET_STREAM);
        request
            .headers
            .insert(CONTENT_LENGTH, HeaderValue::from(size));
        request.payload = Payload::Stream(Some(tap.wrap(body)));
        request.watchdog = Some(watchdog.clone());
        let sent = self.send(request).await;
        let result = match self.finish(sent, &tap, StatusCode::CREATED).await {
            Ok(_) => Ok(()),
            Err(failure) => {
                self.cancel_upload(repo, location).await;
                Err(failure.into_error(self, what))
            }
        };
        open.close();
        result
    }

    /// Uploads content whose digest is known only at its end (compressed on the fly): one streamed
    /// PATCH, hashing what is sent, then an empty PUT with the digest. Returns the digest and size.
    pub async fn push_blob_unknown_digest<S>(&self, repo: &str, body: S) -> Result<(Digest, u64)>
    where
        S: Stream<Item = std::io::Result<Bytes>> + Send + 'static,
    {
        self.push_blob_unknown_digest_within(repo, body, &self.upload_watchdog())
            .await
    }

    /// [`push_blob_unknown_digest`](Self::push_blob_unknown_digest) as one attempt of an upload
    /// whose no-progress bound `watchdog` spans all its attempts.
    pub async fn push_blob_unknown_digest_within<S>(
        &self,
        repo: &str,
        body: S,
        watchdog: &Watchdog,
    ) -> Result<(Digest, u64)>
    where
        S: Stream<Item = std::io::Result<Bytes>> + Send + 'static,
    {
        let what = format!("pushing a blob to {}", self.target(repo));
        let location = self
            .start_upload(repo, watchdog)
            .await
            .map_err(|cause| self.failed(what.clone(), cause))?;
        let open = OpenUpload::register(self, repo, &location);
        let result = self
            .patch_then_commit(repo, location, body, watchdog, &open)
            .await;
        open.close();
        result
    }

    /// The streamed PATCH and the empty PUT that commits it; a failure cancels the upload.
    async fn patch_then_commit<S>(
        &self,
        repo: &str,
        location: Url,
        body: S,
        watchdog: &Watchdog,
        open: &OpenUpload,
    ) -> Result<(Digest, u64)>
    where
        S: Stream<Item = std::io::Result<Bytes>> + Send + 'static,
    {
        let what = format!("pushing a blob to {}", self.target(repo));
        let tap = Tap::new(None, true, watchdog.clone());
        let mut request = Request::new(Method::PATCH, location.clone(), Scope::push(repo));
        request.headers.insert(CONTENT_TYPE, OCTET_STREAM);
        request.payload = Payload::Stream(Some(tap.wrap(body)));
        request.watchdog = Some(watchdog.clone());
        let sent = self.send(request).await;
        let patched = match self.finish(sent, &tap, StatusCode::ACCEPTED).await {
            Ok(response) => response,
            Err(failure) => {
                self.cancel_upload(repo, location).await;
                return Err(failure.into_error(self, what));
            }
        };
        let (digest, size) = tap.digest_and_size();
        let what = format!("pushing blob {} to {}", digest.short(), self.target(repo));
        // The spec says each answer's Location is where the upload continues.
        let next = match self.location(&patched) {
            Ok(next) => next,
            Err(cause) => {
                self.cancel_upload(repo, location).await;
                return Err(self.failed(what, cause));
            }
        };
        open.moved_to(&next);
        let mut url = next.clone();
        url.query_pairs_mut().append_pair("digest", digest.as_str());
        let mut request = Request::new(Method::PUT, url, Scope::push(repo));
        request
            .headers
            .insert(CONTENT_LENGTH, HeaderValue::from(0u64));
        request.idempotent = false;
        request.watchdog = Some(watchdog.clone());
        let committed = async {
            let response = self.send(request).await?;
            if response.status() == StatusCode::CREATED {
                Ok(())
            } else {
                Err(self.answer_error(response).await)
            }
        };
        match committed.await {
            Ok(()) => Ok((digest, size)),
            Err(cause) => {
                self.cancel_upload(repo, next).await;
                Err(self.failed(what, cause))
            }
        }
    }

    /// `POST /v2/<repo>/blobs/uploads/`: where to send the blob.
    async fn start_upload(&self, repo: &str, watchdog: &Watchdog) -> Result<Url> {
        let url = self.repo_url(repo, "blobs/uploads/")?;
        let mut request = Request::new(Method::POST, url, Scope::push(repo));
        request.watchdog = Some(watchdog.clone());
        // A repeated start only leaves an unused upload behind, which the registry expires.
        request.idempotent = true;
        request
            .headers
            .insert(CONTENT_LENGTH, HeaderValue::from(0u64));
        let response = self.send(request).await?;
        if response.status() != StatusCode::ACCEPTED {
            return Err(self.answer_error(response).await);
        }
        self.location(&response)
    }

    /// The answer's `Location`, relative or absolute, as a URL.
    fn location(&self, response: &Response) -> Result<Url> {
        let missing = || {
            Error::new(
                ExitCode::Registry,
                "the registry started an upload without saying where (no Location)",
            )
        };
        let value = response.headers().get(LOCATION).ok_or_else(missing)?;
        let url = location_in(&self.transport().url("")?, value)?;
        self.transport().check_no_downgrade(&url)?;
        Ok(url)
    }

    /// Best effort: tells the registry to drop an unfinished upload.
    pub(super) async fn cancel_upload(&self, repo: &str, location: Url) {
        let mut request = Request::new(Method::DELETE, location, Scope::push(repo));
        // Not worth a retry's wait: the registry expires abandoned uploads anyway.
        request.idempotent = false;
        // Nor a long wait: the upload already failed, and the registry may be why.
        let wait = self.transport().limits.request_timeout.min(CANCEL_WAIT);
        request.watchdog = Some(Watchdog::new(wait));
        let _ = self.send(request).await;
    }

    /// Turns a streamed request's outcome into the answer or the reason it failed, looking first at
    /// whether the caller's stream failed (then its error, not the transport's, is the cause).
    async fn finish(
        &self,
        sent: Result<Response>,
        tap: &Tap,
        expected: StatusCode,
    ) -> std::result::Result<Response, UploadFailure> {
        if let Some(err) = tap.take_caller_error() {
            return Err(UploadFailure::Body(err));
        }
        match sent {
            Ok(response) if response.status() == expected => Ok(response),
            Ok(response) => Err(UploadFailure::Registry(self.answer_error(response).await)),
            Err(cause) => Err(UploadFailure::Registry(cause)),
        }
    }
}

fn header_length(response: &Response) -> Option<u64> {
    response
        .headers()
        .get(CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

enum UploadFailure {
    /// The caller's content failed (its verifier, its reader, or a wrong declared size).
    Body(std::io::Error),
    Registry(Error),
}

impl UploadFailure {
    fn into_error(self, client: &RegistryClient, what: String) -> Error {
        match self {
            // The content, not the registry, is at fault: the registry's guide would mislead here.
            UploadFailure::Body(err) => Error::new(
                ExitCode::Input,
                format!("{what}: reading the blob's content failed, so the upload was aborted"),
            )
            .with_source(err),
            UploadFailure::Registry(cause) => client.failed(what, cause),
        }
    }
}

/// Watches the bytes a request body carries: counts them, optionally hashes them, keeps the
/// caller's stream error (hyper only sees a stand-in) and stops a stream longer or shorter than declared.
#[derive(Clone)]
struct Tap(Arc<Mutex<TapState>>);

struct TapState {
    watchdog: Watchdog,
    sent: u64,
    limit: Option<u64>,
    hasher: Option<Sha256>,
    caller_error: Option<std::io::Error>,
}

/// What hyper sees when the caller's stream failed; the real error waits in the tap.
#[derive(Debug, thiserror::Error)]
#[error("the blob's content stream failed")]
struct BodyAborted;

impl Tap {
    fn new(limit: Option<u64>, hash: bool, watchdog: Watchdog) -> Self {
        Self(Arc::new(Mutex::new(TapState {
            watchdog,
            sent: 0,
            limit,
            hasher: hash.then(Sha256::new),
            caller_error: None,
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, TapState> {
        // Every update is a single step; a poisoned state is still consistent.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn wrap<S>(&self, body: S) -> reqwest::Body
    where
        S: Stream<Item = std::io::Result<Bytes>> + Send + 'static,
    {
        let tap = self.clone();
        let watched = body.map(move |item| {
            let mut state = tap.state();
            match item {
                Ok(chunk) => {
                    state.watchdog.progressed();
                    state.sent += chunk.len() as u64;
                    if let Some(limit) = state.limit
                        && state.sent > limit
                    {
                        state.caller_error = Some(std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!("the blob's content is longer than its declared size of {limit} bytes"),
                        ));
                        return Err(BodyAborted);
                    }
                    if let Some(hasher) = state.hasher.as_mut() {
                        hasher.update(&chunk);
                    }
                    Ok(chunk)
                }
                Err(err) => {
                    state.caller_error = Some(err);
                    Err(BodyAborted)
                }
            }
        });
        // After the caller's last chunk: a stream shorter than declared fails here, in our words.
        let tap = self.clone();
        let end_check = stream::once(async move { tap.check_complete() })
            .filter_map(|failed| async move { failed });
        reqwest::Body::wrap_stream(watched.chain(end_check))
    }

    fn check_complete(&self) -> Option<std::result::Result<Bytes, BodyAborted>> {
        let mut state = self.state();
        let limit = state.limit?;
        if state.sent >= limit || state.caller_error.is_some() {
            return None;
        }
        state.caller_error = Some(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!(
                "the blob's content ended after {} bytes; its declared size is {limit}",
                state.sent
            ),
        ));
        Some(Err(BodyAborted))
    }

    fn take_caller_error(&self) -> Option<std::io::Error> {
        self.state().caller_error.take()
    }

    fn digest_and_size(&self) -> (Digest, u64) {
        let mut state = self.state();
        let hasher = state.hasher.take().unwrap_or_default();
        (Digest::from_sha256(hasher), state.sent)
    }
}

/// An upload's `Location` header, relative to the registry's `base` or absolute, as a URL.
pub(crate) fn location_in(base: &Url, value: &HeaderValue) -> Result<Url> {
    let text = value.to_str().map_err(|err| {
        Error::new(
            ExitCode::Registry,
            "the registry's upload Location is not ASCII",
        )
        .with_source(err)
    })?;
    base.join(text).map_err(|err| {
        Error::new(
            ExitCode::Registry,
            format!(
                "the registry's upload Location {} is not a URL",
                crate::plumbing::output::shown(text)
            ),
        )
        .with_source(err)
    })
}
