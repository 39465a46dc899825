//! The manifest PUT: the commit point that makes a tag visible. Exact bytes, exact media type,
//! and the registry's digest checked against ours.

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use reqwest::{Method, StatusCode};

use super::auth::Scope;
use super::request::{Payload, Request};
use super::{RegistryClient, check_reference};
use crate::image::digest::Digest;
use crate::plumbing::error::{Error, ExitCode, Result};

/// distribution refuses larger manifests (400 MANIFEST_INVALID); most registries use the same limit.
const MANIFEST_SIZE_LIMIT: usize = 4 * 1024 * 1024;

const DIGEST_HEADER: &str = "Docker-Content-Digest";

impl RegistryClient {
    /// `PUT /v2/<repo>/manifests/<reference>` with `bytes` as they are. Returns their sha256, which
    /// the registry must have answered too.
    pub async fn put_manifest(
        &self,
        repo: &str,
        reference: &str,
        media_type: &str,
        bytes: Bytes,
    ) -> Result<Digest> {
        let digest = Digest::of_bytes(&bytes);
        let what = format!(
            "pushing manifest {} ({reference}) to {}",
            digest.short(),
            self.target(repo)
        );
        let size = bytes.len();
        let attempt = async {
            check_reference(reference)?;
            let content_type = HeaderValue::from_str(media_type).map_err(|err| {
                Error::new(
                    ExitCode::Input,
                    format!(
                        "{} is not a valid media type",
                        crate::plumbing::output::shown(media_type)
                    ),
                )
                .with_source(err)
            })?;
            let url = self.repo_url(repo, &format!("manifests/{reference}"))?;
            let mut request = Request::new(Method::PUT, url, Scope::push(repo));
            request.headers.insert(CONTENT_TYPE, content_type);
            request.payload = Payload::Bytes(bytes);
            let response = self.send(request).await?;
            // The spec says 201; some registries and proxies answer 200 or 202 for the same success.
            let accepted = matches!(
                response.status(),
                StatusCode::OK | StatusCode::CREATED | StatusCode::ACCEPTED
            );
            if !accepted {
                let too_big = response.status() == StatusCode::PAYLOAD_TOO_LARGE
                    || size > MANIFEST_SIZE_LIMIT;
                let cause = self.answer_error(response).await;
                return Err(if too_big {
                    Error::new(
                        ExitCode::Registry,
                        format!("the manifest is {size} bytes, more than the registry accepts (distribution takes at most 4 MiB)"),
                    )
                    .with_source(cause)
                } else {
                    cause
                });
            }
            let answered = response
                .headers()
                .get(DIGEST_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            check_answered_digest(&digest, answered.as_deref())
        };
        attempt.await.map_err(|cause| self.failed(what, cause))?;
        Ok(digest)
    }
}

/// The registry stored what we hashed, or it says another digest and the pin we print would be wrong.
pub(crate) fn check_answered_digest(sent: &Digest, answered: Option<&str>) -> Result<()> {
    match answered {
        // Registries SHOULD answer it; one that does not leaves us our own hash.
        None => Ok(()),
        Some(answered) if answered == sent.as_str() => Ok(()),
        Some(answered) => Err(Error::new(
            ExitCode::Registry,
            format!(
                "the registry stored the manifest as {}, but the bytes sent hash to {sent}",
                crate::plumbing::output::shown(answered)
            ),
        )
        .with_hint("a proxy or the registry rewrote the manifest; pin the digest the registry reports, or push to it directly")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answered_digest_must_be_the_hash_of_the_bytes() {
        let sent = Digest::of_bytes(b"{}");
        assert!(check_answered_digest(&sent, Some(sent.as_str())).is_ok());
        assert!(check_answered_digest(&sent, None).is_ok());
        let other = Digest::of_bytes(b"{ }");
        let err = check_answered_digest(&sent, Some(other.as_str())).unwrap_err();
        assert!(err.message().contains(other.as_str()) && err.message().contains(sent.as_str()));
    }
}
