//! Whether the API server answers: what `doctor` asks before anything else.

use super::Cluster;
use crate::plumbing::error::Result;

impl Cluster {
    /// `GET /version`: the server's `gitVersion` (`v1.32.0`).
    pub async fn server_version(&self) -> Result<String> {
        self.client
            .apiserver_version()
            .await
            .map(|info| info.git_version)
            .map_err(|err| self.request_error("asking the API server its version".to_string(), err))
    }
}
