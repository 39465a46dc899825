//! Retagging: the repository and tag an image gets on the local registry, and the refs printed
//! for it. A small policy over the names `reference` parses.

use std::fmt;

use super::{DEFAULT_TAG, ImageName};
use crate::image::digest::Digest;
use crate::image::reference::RegistryHost;

/// podman's domain for an image built here, from no registry at all.
const PODMAN_LOCAL: &str = "localhost";

/// Where an image goes on the local registry: `repository:tag` under some host.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Target {
    pub repository: String,
    pub tag: String,
}

impl Target {
    /// Retags `name` for a local registry known as `hosts` (its push and runtime names).
    ///
    /// Docker Hub names lose `docker.io/library/`; a name already on one of `hosts` loses that host;
    /// podman's `localhost/` (built here, no registry) is dropped like Docker Hub's domain;
    /// any other registry's name keeps its whole path under the local host, its domain made a legal
    /// path component (`gcr.io/proj/app` -> `gcr.io/proj/app`, `localhost:5000/app` -> `localhost-5000/app`).
    pub fn for_name(name: &ImageName, hosts: &[&RegistryHost]) -> Self {
        let repository = match &name.domain {
            _ if name.is_docker_hub() => name.familiar_repository(),
            Some(domain) if hosts.iter().any(|host| host.as_str() == domain) => name.path.clone(),
            // podman's name for an image built locally, from no registry at all.
            Some(domain) if domain == PODMAN_LOCAL => name.path.clone(),
            Some(domain) => format!("{}/{}", domain_as_path_component(domain), name.path),
            None => name.path.clone(),
        };
        let tag = name.tag.clone().unwrap_or_else(|| DEFAULT_TAG.to_string());
        Self { repository, tag }
    }

    /// `host/repository:tag`
    pub fn tagged(&self, host: &RegistryHost) -> String {
        format!("{host}/{}:{}", self.repository, self.tag)
    }

    /// `host/repository:tag@digest`: what a pod spec uses to run exactly this content.
    pub fn pinned(&self, host: &RegistryHost, digest: &Digest) -> String {
        format!("{}@{digest}", self.tagged(host))
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.repository, self.tag)
    }
}

/// `gcr.io` stays; `localhost:5000` becomes `localhost-5000`; case folds.
fn domain_as_path_component(domain: &str) -> String {
    domain.to_lowercase().replace(':', "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(raw: &str) -> RegistryHost {
        RegistryHost::parse(raw).unwrap()
    }

    fn target(raw: &str) -> Target {
        let local = host("localhost:5001");
        Target::for_name(&ImageName::parse(raw).unwrap(), &[&local])
    }

    #[test]
    fn docker_hub_names_drop_domain_and_library() {
        assert_eq!(target("myimg:dev").to_string(), "myimg:dev");
        assert_eq!(
            target("docker.io/library/myimg:dev").to_string(),
            "myimg:dev"
        );
        assert_eq!(
            target("index.docker.io/library/myimg:dev").to_string(),
            "myimg:dev"
        );
        assert_eq!(
            target("docker.io/someone/app:1").to_string(),
            "someone/app:1"
        );
    }

    #[test]
    fn other_registries_keep_their_path_under_the_local_host() {
        assert_eq!(
            target("gcr.io/proj/app:v1").to_string(),
            "gcr.io/proj/app:v1"
        );
        assert_eq!(
            target("registry.example.com:8443/team/app:v2").to_string(),
            "registry.example.com-8443/team/app:v2"
        );
        assert_eq!(
            target("localhost:5000/app:x").to_string(),
            "localhost-5000/app:x"
        );
    }

    #[test]
    fn podmans_local_images_lose_their_localhost_prefix() {
        assert_eq!(target("localhost/myimg:dev").to_string(), "myimg:dev");
        assert_eq!(
            target("localhost:5000/myimg:dev").to_string(),
            "localhost-5000/myimg:dev"
        );
    }

    #[test]
    fn a_name_already_on_the_local_registry_keeps_its_path() {
        assert_eq!(
            target("localhost:5001/team/app:dev").to_string(),
            "team/app:dev"
        );
    }

    #[test]
    fn missing_tag_is_latest_and_digest_is_dropped() {
        assert_eq!(target("myimg").to_string(), "myimg:latest");
        let digest = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            target(&format!("myimg:dev@{digest}")).to_string(),
            "myimg:dev"
        );
    }

    #[test]
    fn refs_use_the_given_host() {
        let t = target("myimg:dev");
        let digest = Digest::of_bytes(b"manifest");
        assert_eq!(
            t.tagged(&host("localhost:5001")),
            "localhost:5001/myimg:dev"
        );
        assert_eq!(
            t.pinned(&host("kind-registry:5000"), &digest),
            format!("kind-registry:5000/myimg:dev@{digest}")
        );
    }
}
