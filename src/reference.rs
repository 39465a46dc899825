//! Image naming: a source name -> the repository and tag on the local registry -> the refs we print. Pure.

use std::fmt;

use crate::digest::Digest;
use crate::hosting::RegistryHost;

/// Docker Hub's implicit domain and namespace, dropped when retagging (`myimg:dev`, not `library/myimg:dev`).
const DOCKER_HUB: &str = "docker.io";
const DOCKER_HUB_ALIASES: [&str; 2] = ["index.docker.io", "registry-1.docker.io"];
const OFFICIAL_NAMESPACE: &str = "library/";
pub const DEFAULT_TAG: &str = "latest";
const PODMAN_LOCAL: &str = "localhost";

/// A parsed image name as users and archives write it: `[domain/]path[:tag][@digest]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageName {
    /// The registry part, when the first component looks like one (has `.` or `:`, or is `localhost`).
    pub domain: Option<String>,
    /// The repository path, e.g. `library/myimg` or `proj/app`.
    pub path: String,
    pub tag: Option<String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NameError {
    #[error("{0:?} is not an image name: {1}")]
    Invalid(String, &'static str),
}

impl ImageName {
    pub fn parse(raw: &str) -> Result<Self, NameError> {
        let invalid = |why| NameError::Invalid(raw.to_string(), why);
        // A digest pins content we are about to rewrite, so it never names the target: drop it.
        let without_digest = raw.split_once('@').map_or(raw, |(name, _)| name);
        let (name, tag) = split_tag(without_digest);
        if tag.is_some_and(|tag| !is_valid_tag(tag)) {
            return Err(invalid(
                "a tag is up to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'",
            ));
        }
        let (domain, path) = match name.split_once('/') {
            Some((first, rest))
                if first.contains(['.', ':'])
                    || first == "localhost"
                    || first != first.to_lowercase() =>
            {
                (Some(first.to_string()), rest.to_string())
            }
            _ => (None, name.to_string()),
        };
        if path.is_empty() || !path.split('/').all(is_valid_path_component) {
            return Err(invalid(
                "each path component is lowercase letters and digits, joined by '.', '_', '__' or '-'",
            ));
        }
        Ok(Self {
            domain,
            path,
            tag: tag.map(str::to_string),
        })
    }

    /// The repository as docker prints it and a pod spec may write it: `myimg`, `someone/app`,
    /// `gcr.io/proj/app` (no `docker.io/library/`).
    pub fn familiar_repository(&self) -> String {
        match &self.domain {
            _ if self.is_docker_hub() => self
                .path
                .strip_prefix(OFFICIAL_NAMESPACE)
                .unwrap_or(&self.path)
                .to_string(),
            Some(domain) => format!("{domain}/{}", self.path),
            None => self.path.clone(),
        }
    }

    /// True for Docker Hub names, written or implied.
    pub fn is_docker_hub(&self) -> bool {
        match &self.domain {
            None => true,
            Some(domain) => domain == DOCKER_HUB || DOCKER_HUB_ALIASES.contains(&domain.as_str()),
        }
    }
}

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

/// Splits `name:tag`, minding that a `:` before the last `/` belongs to a registry port.
fn split_tag(name: &str) -> (&str, Option<&str>) {
    match name.rsplit_once(':') {
        Some((head, tag)) if !tag.contains('/') => (head, Some(tag)),
        _ => (name, None),
    }
}

fn is_valid_tag(tag: &str) -> bool {
    let mut chars = tag.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    first_ok
        && tag.len() <= 128
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`, the distribution spec's path component.
fn is_valid_path_component(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !bytes.first().is_some_and(alnum) || !bytes.last().is_some_and(alnum) {
        return false;
    }
    let mut run = String::new();
    for &b in bytes {
        if alnum(&b) {
            if !matches!(run.as_str(), "" | "." | "_" | "__") && !run.bytes().all(|s| s == b'-') {
                return false;
            }
            run.clear();
        } else if matches!(b, b'.' | b'_' | b'-') {
            run.push(b as char);
        } else {
            return false;
        }
    }
    true
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
    fn familiar_repository_is_how_docker_prints_it() {
        let familiar = |raw| ImageName::parse(raw).unwrap().familiar_repository();
        assert_eq!(familiar("docker.io/library/myimg:dev"), "myimg");
        assert_eq!(familiar("someone/app"), "someone/app");
        assert_eq!(familiar("gcr.io/proj/app:v1"), "gcr.io/proj/app");
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

    #[test]
    fn invalid_names_are_refused() {
        for bad in [
            "", "x/UPPER", "my img", "a//b", "app:-bad", "app:", "-lead", "a..b",
        ] {
            assert!(ImageName::parse(bad).is_err(), "{bad:?} should be refused");
        }
        for good in ["a", "a-b", "a--b", "a__b", "a.b/c_d", "my-app:1.0_rc-2"] {
            assert!(ImageName::parse(good).is_ok(), "{good:?} should parse");
        }
    }
}
