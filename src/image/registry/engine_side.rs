//! What a Docker daemon pushing on our behalf needs from our client, and what we read back after
//! it: the `X-Registry-Auth` header (base64url JSON) from the same credentials our own requests
//! use, and the manifest it pushed, by digest, bounded.

use base64::Engine as _;
use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use reqwest::{Method, StatusCode};
use serde_json::json;

use super::auth::Scope;
use super::credentials::Secret;
use super::request::Request;
use super::{RegistryClient, check_reference};
use crate::error::{Error, ExitCode, Result};
use crate::image::oci::MediaType;

/// distribution refuses manifests over 4 MiB; nothing bigger is read back.
const MANIFEST_LIMIT: usize = 4 << 20;

/// Every manifest type, as an `Accept` header: a daemon pushes docker's or OCI's.
fn accept_manifests() -> HeaderValue {
    HeaderValue::from_str(&MediaType::manifests_accept())
        .unwrap_or_else(|_| HeaderValue::from_static("*/*"))
}

/// A manifest as the registry stores it.
#[derive(Debug, Clone)]
pub struct StoredManifest {
    pub media_type: String,
    pub bytes: Vec<u8>,
}

impl RegistryClient {
    /// The `X-Registry-Auth` value for a daemon pushing here: `{}` (`e30=`) while the registry
    /// has not challenged our ping, else who we log in as. Call after [`RegistryClient::ping`].
    pub async fn engine_auth(&self) -> Result<String> {
        let login = self
            .inner
            .auth
            .login_for_engine(&self.inner.transport)
            .await?;
        let server = self.host().to_string();
        let json = match login.map(|found| found.secret) {
            None => json!({}),
            Some(Secret::Basic { username, password }) => {
                json!({"username": username, "password": password, "serveraddress": server})
            }
            Some(Secret::IdentityToken(token)) => {
                json!({"identitytoken": token, "serveraddress": server})
            }
        };
        Ok(base64::engine::general_purpose::URL_SAFE.encode(json.to_string()))
    }

    /// A containers auth file (`auth.json`, as `podman login` writes it) for an engine's CLI
    /// pushing here: no entry while the registry has not challenged our ping, else who we log in
    /// as. Call after [`RegistryClient::ping`]; write it where only we can read it.
    pub async fn engine_authfile(&self) -> Result<String> {
        let login = self
            .inner
            .auth
            .login_for_engine(&self.inner.transport)
            .await?;
        let entry = match login.map(|found| found.secret) {
            None => return Ok(json!({"auths": {}}).to_string()),
            Some(Secret::Basic { username, password }) => json!({
                "auth": base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"))
            }),
            Some(Secret::IdentityToken(token)) => json!({"identitytoken": token}),
        };
        let mut auths = serde_json::Map::new();
        auths.insert(self.host().to_string(), entry);
        Ok(json!({ "auths": auths }).to_string())
    }

    /// `GET /v2/<repo>/manifests/<digest>`, its bytes checked against the digest.
    pub async fn stored_manifest(&self, repo: &str, digest: &str) -> Result<StoredManifest> {
        let what = || format!("reading back manifest {digest} in {}/{repo}", self.host());
        let attempt = async {
            check_reference(digest)?;
            let url = self.repo_url(repo, &format!("manifests/{digest}"))?;
            let mut request = Request::new(Method::GET, url, Scope::push(repo));
            request.headers.insert(ACCEPT, accept_manifests());
            let response = self.send(request).await?;
            if response.status() != StatusCode::OK {
                return Err(self.answer_error(response).await);
            }
            let media_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let mut body = response.bytes_stream();
            let mut bytes = Vec::new();
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|err| {
                    Error::new(ExitCode::Registry, "the answer broke off").with_source(err)
                })?;
                if bytes.len() + chunk.len() > MANIFEST_LIMIT {
                    return Err(Error::new(
                        ExitCode::Registry,
                        format!("the manifest is over {MANIFEST_LIMIT} bytes"),
                    ));
                }
                bytes.extend_from_slice(&chunk);
            }
            if crate::image::digest::Digest::of_bytes(&bytes).as_str() != digest {
                return Err(Error::new(
                    ExitCode::Registry,
                    "the registry answered bytes that do not match the digest",
                ));
            }
            Ok(StoredManifest { media_type, bytes })
        };
        attempt.await.map_err(|cause| self.failed(what(), cause))
    }
}
