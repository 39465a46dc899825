//! Which workloads use which image of the registry: an image names the registry when its domain
//! is any of the registry's advertised hosts (under any spelling: `127.0.0.1:PORT` is `localhost:PORT`), and names a manifest by tag or by digest (a digest
//! wins over a tag, as the kubelet pulls it). Pure.

use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::client::ImageUse;
use crate::image::reference::{DEFAULT_TAG, ImageName, RegistryHost, same_registry};

/// What one image names in the registry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Named {
    Tag(String),
    Digest(String),
}

/// The users of each repository's tags and digests.
#[derive(Debug, Default)]
pub(crate) struct Usage {
    by_repository: BTreeMap<String, BTreeMap<Named, BTreeSet<String>>>,
    /// Normalized names (`docker.io/library/myimg:dev-0123456789ab`) -> users, for node images.
    by_name: BTreeMap<String, BTreeSet<String>>,
}

impl Usage {
    /// Sorts `uses` by what they name in the registry reached by any of `hosts`; every use
    /// also counts by its normalized name, for the nodes' images.
    pub(crate) fn new(uses: &[ImageUse], hosts: &[&RegistryHost]) -> Self {
        let mut usage = Self::default();
        for found in uses {
            let image = found
                .image
                .strip_prefix("docker-pullable://")
                .unwrap_or(&found.image);
            let Ok(name) = ImageName::parse(image) else {
                continue;
            };
            usage
                .by_name
                .entry(name.normalized())
                .or_default()
                .insert(found.user());
            if name.tag.is_some() && name.digest.is_some() {
                // The node pulls by digest; the tag is there for people.
                let mut by_tag = name.clone();
                by_tag.digest = None;
                usage
                    .by_name
                    .entry(by_tag.normalized())
                    .or_default()
                    .insert(found.user());
            }
            let Some(domain) = name.domain.as_deref() else {
                continue;
            };
            if !hosts.iter().any(|host| same_registry(domain, host)) {
                continue;
            }
            let named = match (&name.digest, &name.tag) {
                (Some(digest), _) => Named::Digest(digest.clone()),
                (None, Some(tag)) => Named::Tag(tag.clone()),
                (None, None) => Named::Tag(DEFAULT_TAG.to_string()),
            };
            usage
                .by_repository
                .entry(name.path.clone())
                .or_default()
                .entry(named)
                .or_default()
                .insert(found.user());
        }
        usage
    }

    /// Who uses `repository:tag`, by its tag or by any of `digests` (its manifest's, and an
    /// index's platform manifests'), sorted, each once.
    pub(crate) fn users_of(&self, repository: &str, tag: &str, digests: &[&str]) -> Vec<String> {
        let Some(named) = self.by_repository.get(repository) else {
            return Vec::new();
        };
        let mut users = BTreeSet::new();
        if let Some(found) = named.get(&Named::Tag(tag.to_string())) {
            users.extend(found.iter().cloned());
        }
        for digest in digests {
            if let Some(found) = named.get(&Named::Digest(digest.to_string())) {
                users.extend(found.iter().cloned());
            }
        }
        users.into_iter().collect()
    }

    /// Who uses a node image by its name as containerd records it.
    pub(crate) fn users_of_name(&self, normalized: &str) -> Vec<String> {
        self.by_name
            .get(normalized)
            .map(|users| users.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(kind: &'static str, name: &str, image: &str) -> ImageUse {
        ImageUse {
            kind,
            namespace: "default".to_string(),
            name: name.to_string(),
            image: image.to_string(),
            node: None,
        }
    }

    #[test]
    fn images_naming_any_advertised_host_count_by_tag_or_digest() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let uses = [
            found("Deployment", "web", "localhost:5001/app:v1"),
            found("Pod", "web-1", "kind-registry:5000/app:v1"),
            found(
                "Deployment",
                "pinned",
                &format!("kind-registry:5000/app:old@{digest}"),
            ),
            found("Pod", "other", "docker.io/library/app:v1"),
            found("Job", "bare", "kind-registry:5000/tool"),
            found("Pod", "by-address", "127.0.0.1:5001/app:v1"),
            found("Pod", "elsewhere", "127.0.0.1:5002/app:v1"),
        ];
        let runtime = RegistryHost::parse("kind-registry:5000").unwrap();
        let host = RegistryHost::parse("localhost:5001").unwrap();
        let usage = Usage::new(&uses, &[&host, &runtime]);
        assert_eq!(
            usage.users_of("app", "v1", &[]),
            vec![
                "Deployment/default/web",
                "Pod/default/by-address",
                "Pod/default/web-1"
            ]
        );
        assert_eq!(
            usage.users_of("app", "v9", &[&digest]),
            vec!["Deployment/default/pinned"]
        );
        assert!(
            usage.users_of("app", "old", &[]).is_empty(),
            "a digest wins over the tag"
        );
        assert_eq!(
            usage.users_of("tool", "latest", &[]),
            vec!["Job/default/bare"]
        );
        assert_eq!(
            usage.users_of_name("docker.io/library/app:v1"),
            vec!["Pod/default/other"]
        );
    }
}
