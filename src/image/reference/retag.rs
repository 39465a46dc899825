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
    /// Retags `name` for a local registry known as `hosts` (its push, runtime and cluster names).
    ///
    /// Docker Hub names lose `docker.io/library/`; a name already on the local registry, under any
    /// of its spellings (see [`same_registry`]), loses that host; podman's `localhost/` (built
    /// here, no registry) is dropped like Docker Hub's domain; any other registry's name keeps its
    /// whole path under the local host, its domain made a legal path component
    /// (`gcr.io/proj/app` -> `gcr.io/proj/app`, `localhost:5000/app` -> `localhost-5000/app`).
    pub fn for_name(name: &ImageName, hosts: &[&RegistryHost]) -> Self {
        Self::placed(name, hosts).0
    }

    /// [`Target::for_name`], and the domain of `name` when it is another registry's: one that
    /// keeps its path under the local host (what a caller may want to say).
    pub fn placed(name: &ImageName, hosts: &[&RegistryHost]) -> (Self, Option<String>) {
        let tag = name.tag.clone().unwrap_or_else(|| DEFAULT_TAG.to_string());
        let (repository, foreign) = match &name.domain {
            _ if name.is_docker_hub() => (name.familiar_repository(), None),
            Some(domain) if hosts.iter().any(|host| same_registry(domain, host)) => {
                (name.path.clone(), None)
            }
            // podman's name for an image built locally, from no registry at all.
            Some(domain) if domain == PODMAN_LOCAL => (name.path.clone(), None),
            Some(domain) => (
                format!("{}/{}", domain_as_path_component(domain), name.path),
                Some(domain.clone()),
            ),
            None => (name.path.clone(), None),
        };
        (Self { repository, tag }, foreign)
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

/// Whether `domain` (as a name writes it) is `host`: the same text, case aside (DNS names are
/// not case-sensitive), or both on this machine's loopback (`localhost`, any 127.x, `[::1]`)
/// with the same port: one registry, reached under several spellings.
pub fn same_registry(domain: &str, host: &RegistryHost) -> bool {
    if domain.eq_ignore_ascii_case(host.as_str()) {
        return true;
    }
    let Ok(domain) = RegistryHost::parse(domain) else {
        return false;
    };
    domain.is_loopback() && host.is_loopback() && domain.port() == host.port()
}

/// `gcr.io` stays; `localhost:5000` becomes `localhost-5000`; case folds.
fn domain_as_path_component(domain: &str) -> String {
    // A component is lowercase letters and digits joined by `.`, `_`, `__` or dashes: a lone
    // `.` between two of them stays (`gcr.io`), any other run of other characters becomes one
    // dash (`localhost:5000` -> `localhost-5000`, `[::1]:5000` -> `1-5000`), none at either end.
    let lower = domain.to_lowercase();
    let mut component = String::with_capacity(lower.len());
    let mut run = String::new();
    for c in lower.chars() {
        if c.is_ascii_alphanumeric() {
            if !component.is_empty() && !run.is_empty() {
                component.push_str(if run == "." { "." } else { "-" });
            }
            run.clear();
            component.push(c);
        } else {
            run.push(c);
        }
    }
    if component.is_empty() {
        "registry".to_string()
    } else {
        component
    }
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
    fn every_spelling_of_the_local_registry_is_the_local_registry() {
        for spelling in [
            "localhost:5001",
            "LOCALHOST:5001",
            "127.0.0.1:5001",
            "127.1.2.3:5001",
            "[::1]:5001",
            "[::ffff:127.0.0.1]:5001",
        ] {
            let name = ImageName::parse(&format!("{spelling}/app:v7")).unwrap();
            let local = host("localhost:5001");
            let (target, foreign) = Target::placed(&name, &[&local]);
            assert_eq!(
                (target.to_string(), foreign),
                ("app:v7".into(), None),
                "{spelling}"
            );
        }
        let runtime = host("kind-registry:5000");
        let name = ImageName::parse("Kind-Registry:5000/team/app:v7").unwrap();
        assert_eq!(
            Target::for_name(&name, &[&runtime]).to_string(),
            "team/app:v7"
        );
    }

    #[test]
    fn another_port_or_host_is_another_registry_and_is_said_to_be() {
        let local = host("localhost:5001");
        for (raw, lands, foreign) in [
            (
                "127.0.0.1:5002/app:v7",
                "127.0.0.1-5002/app:v7",
                Some("127.0.0.1:5002"),
            ),
            ("localhost/app:v7", "app:v7", None),
            ("docker.io/library/app:v7", "app:v7", None),
            (
                "registry.example.com:5001/app:v7",
                "registry.example.com-5001/app:v7",
                Some("registry.example.com:5001"),
            ),
        ] {
            let placed = Target::placed(&ImageName::parse(raw).unwrap(), &[&local]);
            assert_eq!(placed.0.to_string(), lands, "{raw}");
            assert_eq!(placed.1.as_deref(), foreign, "{raw}");
        }
        let kind = host("kind-registry:5000");
        assert!(
            !same_registry("127.0.0.1:5000", &kind),
            "loopback is not a DNS name"
        );
    }

    #[test]
    fn an_ipv6_registrys_name_becomes_a_legal_path_component() {
        // Found by the `reference` fuzz target: the brackets were kept, and no registry takes
        // `localhost:5001/[--1]-5000/x:y`.
        let ipv6 = target("[::1]:5000/x:y");
        assert_eq!(ipv6.to_string(), "1-5000/x:y");
        assert!(ImageName::parse(&ipv6.tagged(&host("localhost:5001"))).is_ok());
        assert_eq!(target("[fe80::1]/app:1").to_string(), "fe80-1/app:1");
        // Found next (minimised): a domain is any first component with a `.` or `:`.
        let odd = target("[::1\\:5000/x:y");
        assert_eq!(odd.to_string(), "1-5000/x:y");
        assert!(ImageName::parse(&odd.tagged(&host("localhost:5001"))).is_ok());
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
