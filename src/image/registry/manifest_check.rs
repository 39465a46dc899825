//! Reading a manifest back by digest (HEAD) and deleting a tag or manifest: what `doctor`'s round
//! trip needs beyond a push.

use reqwest::header::{ACCEPT, HeaderValue};
use reqwest::{Method, StatusCode};

use super::auth::Scope;
use super::request::Request;
use super::{RegistryClient, check_reference};
use crate::image::oci::MediaType;
use crate::plumbing::error::Result;

/// What a DELETE did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deletion {
    Deleted,
    /// The registry does not delete this way (deletes disabled, or tags not deletable): its words.
    Refused(String),
}

impl RegistryClient {
    /// `HEAD /v2/<repo>/manifests/<reference>`: the digest the registry names (or, when it names
    /// none, the one asked for), `None` when it has no such manifest.
    pub async fn manifest_digest(&self, repo: &str, reference: &str) -> Result<Option<String>> {
        let what = || format!("checking for manifest {reference} in {}", self.target(repo));
        let attempt = async {
            check_reference(reference)?;
            let url = self.repo_url(repo, &format!("manifests/{reference}"))?;
            let mut request = Request::new(Method::HEAD, url, Scope::push(repo));
            // Every manifest type we push: distribution answers 404 to a HEAD that does not accept OCI.
            request.headers.insert(
                ACCEPT,
                HeaderValue::from_str(&MediaType::manifests_accept())
                    .expect("media types are header-safe ASCII"),
            );
            let response = self.send(request).await?;
            match response.status() {
                StatusCode::OK => Ok(Some(
                    response
                        .headers()
                        .get("Docker-Content-Digest")
                        .and_then(|value| value.to_str().ok())
                        .unwrap_or(reference)
                        .to_string(),
                )),
                StatusCode::NOT_FOUND => Ok(None),
                _ => Err(self.answer_error(response).await),
            }
        };
        attempt.await.map_err(|cause| self.failed(what(), cause))
    }

    /// `DELETE /v2/<repo>/manifests/<reference>` (a tag, or a digest).
    pub async fn delete_manifest(&self, repo: &str, reference: &str) -> Result<Deletion> {
        let what = || format!("deleting manifest {reference} in {}", self.target(repo));
        let attempt = async {
            check_reference(reference)?;
            let url = self.repo_url(repo, &format!("manifests/{reference}"))?;
            let response = self
                .send(Request::new(Method::DELETE, url, Scope::push(repo)))
                .await?;
            let status = response.status();
            if status.is_success() {
                return Ok(Deletion::Deleted);
            }
            let refused = matches!(
                status,
                StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
            );
            let cause = self.answer_error(response).await;
            if refused {
                Ok(Deletion::Refused(cause.message().to_string()))
            } else {
                Err(cause)
            }
        };
        attempt.await.map_err(|cause| self.failed(what(), cause))
    }

    /// `https` or `http`: what `ping` settled on.
    pub fn scheme_name(&self) -> &'static str {
        match self.transport().scheme() {
            super::connection::transport::Scheme::Http => "http",
            super::connection::transport::Scheme::Https => "https",
        }
    }
}

/// What a DELETE of a manifest by digest did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removal {
    Deleted,
    /// Already gone (another prune, or the registry's own cleanup).
    Gone,
    /// The registry does not delete (405 `UNSUPPORTED`: distribution's default,
    /// `storage.delete.enabled: false`): its words.
    DeletesDisabled(String),
}

impl RegistryClient {
    /// `DELETE /v2/<repo>/manifests/<digest>`: the manifest and every tag pointing at it go.
    pub async fn delete_manifest_digest(
        &self,
        repo: &str,
        digest: &crate::image::digest::Digest,
    ) -> Result<Removal> {
        let what = || format!("deleting manifest {digest} in {}", self.target(repo));
        let attempt = async {
            let url = self.repo_url(repo, &format!("manifests/{digest}"))?;
            let response = self
                .send(Request::new(Method::DELETE, url, Scope::delete(repo)))
                .await?;
            let status = response.status();
            if status.is_success() {
                return Ok(Removal::Deleted);
            }
            if status == StatusCode::NOT_FOUND {
                return Ok(Removal::Gone);
            }
            let answer = super::errors::RegistryResponse::read(
                response,
                self.transport().limits.request_timeout,
            )
            .await;
            if status == StatusCode::METHOD_NOT_ALLOWED || answer.has_code("UNSUPPORTED") {
                return Ok(Removal::DeletesDisabled(answer.to_string()));
            }
            Err(super::errors::unexpected_answer(answer))
        };
        attempt.await.map_err(|cause| self.failed(what(), cause))
    }
}
