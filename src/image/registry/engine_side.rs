//! What an engine pushing on our behalf needs from our client: the Docker daemon's
//! `X-Registry-Auth` header (base64url JSON) and podman's auth file, from the same credentials
//! our own requests use. What it pushed is read back with `RegistryClient::manifest_in_push`.

use base64::Engine as _;
use serde_json::json;

use super::RegistryClient;
use super::credentials::Secret;
use crate::plumbing::error::Result;

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
}
