//! Image names as docker normalises them (`myimg` is `docker.io/library/myimg:latest`), for
//! matching `--image` against the names an archive records and for writing names containerd reads.

/// A parsed image reference with docker's defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reference {
    domain: String,
    path: String,
    tag: Option<String>,
    digest: Option<String>,
}

const DEFAULT_DOMAIN: &str = "docker.io";

impl Reference {
    /// Parses `[domain/]path[:tag][@digest]`; `None` when it is not a valid reference.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (name, digest) = match text.split_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (text, None),
        };
        let last_slash = name.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name[last_slash..].rfind(':') {
            Some(colon) => (
                &name[..last_slash + colon],
                Some(&name[last_slash + colon + 1..]),
            ),
            None => (name, None),
        };
        let (domain, mut path) = match name.split_once('/') {
            Some((first, rest)) if is_domain(first) => (first.to_string(), rest.to_string()),
            _ => (DEFAULT_DOMAIN.to_string(), name.to_string()),
        };
        let domain = if domain == "index.docker.io" {
            DEFAULT_DOMAIN.to_string()
        } else {
            domain
        };
        if domain == DEFAULT_DOMAIN && !path.contains('/') {
            path = format!("library/{path}");
        }
        let valid = path.split('/').all(is_path_component)
            && tag.is_none_or(is_tag)
            && digest.is_none_or(|d| d.contains(':'));
        valid.then(|| Self {
            domain,
            path,
            tag: tag.map(str::to_string),
            digest: digest.map(str::to_string),
        })
    }

    /// `docker.io/library/myimg:latest`: a bare name gets `latest`, as docker and containerd do.
    pub(crate) fn normalized(&self) -> String {
        let mut text = format!("{}/{}", self.domain, self.path);
        match (&self.tag, &self.digest) {
            (Some(tag), _) => text = format!("{text}:{tag}"),
            (None, None) => text.push_str(":latest"),
            (None, Some(_)) => {}
        }
        if let Some(digest) = &self.digest {
            text = format!("{text}@{digest}");
        }
        text
    }

    /// `myimg:dev`: the short form docker prints and writes in `RepoTags`.
    pub(crate) fn familiar(&self) -> String {
        let path = if self.domain == DEFAULT_DOMAIN {
            self.path
                .strip_prefix("library/")
                .filter(|rest| !rest.contains('/'))
                .unwrap_or(&self.path)
                .to_string()
        } else {
            format!("{}/{}", self.domain, self.path)
        };
        format!("{path}:{}", self.tag.as_deref().unwrap_or("latest"))
    }

    /// The tag, `latest` when none was given.
    pub(crate) fn tag(&self) -> &str {
        self.tag.as_deref().unwrap_or("latest")
    }
}

/// Whether two names denote the same image once normalised.
pub(crate) fn same_image(a: &str, b: &str) -> bool {
    match (Reference::parse(a), Reference::parse(b)) {
        (Some(a), Some(b)) => a.normalized() == b.normalized(),
        _ => a == b,
    }
}

/// Docker treats the first component as a registry host when it looks like one.
fn is_domain(first: &str) -> bool {
    first.contains('.')
        || first.contains(':')
        || first == "localhost"
        || first.chars().any(|c| c.is_ascii_uppercase())
}

fn is_path_component(part: &str) -> bool {
    !part.is_empty()
        && part.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        })
        && part
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
}

fn is_tag(tag: &str) -> bool {
    (1..=128).contains(&tag.len())
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        && !tag.starts_with(['.', '-'])
}

/// Whether an `org.opencontainers.image.ref.name` value is a whole reference (jib, rules_oci)
/// rather than just a tag (docker, containerd): containerd's own test, any of `/`, `:`, `@`.
pub(crate) fn ref_name_is_reference(ref_name: &str) -> bool {
    ref_name.contains(['/', ':', '@'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalized(text: &str) -> String {
        Reference::parse(text).unwrap().normalized()
    }

    #[test]
    fn normalises_like_docker() {
        assert_eq!(normalized("myimg"), "docker.io/library/myimg:latest");
        assert_eq!(normalized("myimg:dev"), "docker.io/library/myimg:dev");
        assert_eq!(normalized("user/app:1"), "docker.io/user/app:1");
        assert_eq!(
            normalized("index.docker.io/library/x:1"),
            "docker.io/library/x:1"
        );
        assert_eq!(
            normalized("localhost:5000/app"),
            "localhost:5000/app:latest"
        );
        assert_eq!(normalized("localhost/app:2"), "localhost/app:2");
        assert_eq!(normalized("gcr.io/p/app:v1"), "gcr.io/p/app:v1");
        assert!(Reference::parse("My/App").is_none());
        assert!(Reference::parse("app:").is_none());
        assert!(Reference::parse("").is_none());
    }

    #[test]
    fn familiar_form_drops_docker_hub_defaults() {
        let familiar = |t: &str| Reference::parse(t).unwrap().familiar();
        assert_eq!(familiar("docker.io/library/myimg:dev"), "myimg:dev");
        assert_eq!(familiar("myimg"), "myimg:latest");
        assert_eq!(familiar("docker.io/user/app:1"), "user/app:1");
        assert_eq!(
            familiar("kind-registry:5000/app:dev"),
            "kind-registry:5000/app:dev"
        );
    }

    #[test]
    fn same_image_compares_normalised_names() {
        assert!(same_image("myimg", "docker.io/library/myimg:latest"));
        assert!(!same_image("myimg:dev", "myimg:latest"));
    }

    #[test]
    fn ref_name_with_slash_colon_or_at_is_a_reference() {
        assert!(ref_name_is_reference("gcr.io/p/app:v1"));
        assert!(ref_name_is_reference("app:v1"));
        assert!(!ref_name_is_reference("v1.2"));
    }
}
