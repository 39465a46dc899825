//! Image references, the one place they are parsed: the distribution grammar
//! (`[domain/]path[:tag][@digest]`), Docker Hub's defaults and aliases, and the checks the
//! registry client runs on repository names and tags. `--image`, `--tag`, archive names, the
//! names written for node loaders and the registry's URLs all go through here. Pure.

mod host;
mod id_names;
mod retag;

use std::fmt;

pub use host::{
    BadHost, HostProblem, RegistryHost, is_loopback_hostname, is_loopback_url, shown_host,
};
pub use id_names::{IdNames, id_names};
pub use retag::{Target, same_registry};

pub const DEFAULT_TAG: &str = "latest";
/// Docker Hub's canonical domain, its aliases, and its namespace for official images.
const DOCKER_HUB: &str = "docker.io";
const DOCKER_HUB_ALIASES: [&str; 2] = ["index.docker.io", "registry-1.docker.io"];
const OFFICIAL_NAMESPACE: &str = "library/";
const MAX_TAG_LEN: usize = 128;

/// A parsed image reference as users and archives write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageName {
    /// The registry part, when the first component is one: it has a `.` or `:`, is
    /// `localhost`, or has an uppercase letter (the grammar's rule, as docker applies it).
    pub domain: Option<String>,
    /// The repository path, e.g. `library/myimg` or `proj/app`, as written.
    pub path: String,
    pub tag: Option<String>,
    /// `sha256:<hex>` when the reference pins one.
    pub digest: Option<String>,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{} is not {what}: {why}", crate::plumbing::output::shown(raw))]
pub struct NameError {
    raw: String,
    what: &'static str,
    why: &'static str,
}

const TAG_RULE: &str =
    "a tag is up to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'";
const PATH_RULE: &str =
    "each path component is lowercase letters and digits, joined by '.', '_', '__' or '-'";
const DIGEST_RULE: &str = "a digest is ALGORITHM:HEX, e.g. sha256: and 64 hex digits";

impl ImageName {
    pub fn parse(raw: &str) -> Result<Self, NameError> {
        let invalid = |why| NameError {
            raw: raw.to_string(),
            what: "an image name",
            why,
        };
        let (name, digest) = match raw.split_once('@') {
            Some((name, digest)) if is_valid_digest(digest) => (name, Some(digest.to_string())),
            Some(_) => return Err(invalid(DIGEST_RULE)),
            None => (raw, None),
        };
        let (name, tag) = split_tag(name);
        if tag.is_some_and(|tag| !is_valid_tag(tag)) {
            return Err(invalid(TAG_RULE));
        }
        let (domain, path) = match name.split_once('/') {
            Some((first, rest)) if is_domain(first) => (Some(first.to_string()), rest),
            _ => (None, name),
        };
        if !is_valid_path(path) {
            return Err(invalid(PATH_RULE));
        }
        Ok(Self {
            domain,
            path: path.to_string(),
            tag: tag.map(str::to_string),
            digest,
        })
    }

    /// True for Docker Hub names, written (under any of its aliases) or implied.
    pub fn is_docker_hub(&self) -> bool {
        self.domain
            .as_deref()
            .is_none_or(|domain| domain == DOCKER_HUB || DOCKER_HUB_ALIASES.contains(&domain))
    }

    /// The tag, `latest` when none was given.
    pub fn tag_or_default(&self) -> &str {
        self.tag.as_deref().unwrap_or(DEFAULT_TAG)
    }

    /// The repository as docker prints it and a pod spec may write it: `myimg`, `someone/app`,
    /// `gcr.io/proj/app` (no `docker.io/library/`).
    pub fn familiar_repository(&self) -> String {
        match &self.domain {
            _ if self.is_docker_hub() => self
                .path
                .strip_prefix(OFFICIAL_NAMESPACE)
                .filter(|rest| !rest.contains('/'))
                .unwrap_or(&self.path)
                .to_string(),
            Some(domain) => format!("{domain}/{}", self.path),
            None => self.path.clone(),
        }
    }

    /// `myimg:dev`: the short form docker prints and writes in `RepoTags`.
    pub fn familiar(&self) -> String {
        format!("{}:{}", self.familiar_repository(), self.tag_or_default())
    }

    /// `docker.io/library/myimg:latest[@digest]`: the full name containerd records and the
    /// kubelet looks up; a bare name gets `latest`, as docker and containerd do.
    pub fn normalized(&self) -> String {
        let (domain, path) = if self.is_docker_hub() {
            let path = if self.path.contains('/') {
                self.path.clone()
            } else {
                format!("{OFFICIAL_NAMESPACE}{}", self.path)
            };
            (DOCKER_HUB, path)
        } else {
            (
                self.domain.as_deref().unwrap_or(DOCKER_HUB),
                self.path.clone(),
            )
        };
        let mut text = format!("{domain}/{path}");
        match (&self.tag, &self.digest) {
            (Some(tag), _) => text = format!("{text}:{tag}"),
            (None, None) => text = format!("{text}:{DEFAULT_TAG}"),
            (None, Some(_)) => {}
        }
        if let Some(digest) = &self.digest {
            text = format!("{text}@{digest}");
        }
        text
    }
}

impl fmt::Display for ImageName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.normalized())
    }
}

/// Whether two names denote the same image once normalised (`myimg` and
/// `index.docker.io/library/myimg:latest` do); unparsable names compare as text.
pub fn same_image(a: &str, b: &str) -> bool {
    match (ImageName::parse(a), ImageName::parse(b)) {
        (Ok(a), Ok(b)) => a.normalized() == b.normalized(),
        _ => a == b,
    }
}

/// Whether `recorded` (a name an archive records) is what `wanted` (`--image`) asks for, by
/// the normalisation a push applies: both land as the same repository and tag, so `myimg:dev`
/// picks `localhost/myimg:dev` (podman's) and `docker.io/library/myimg:dev` alike.
pub fn selects(recorded: &str, wanted: &str) -> bool {
    match (ImageName::parse(recorded), ImageName::parse(wanted)) {
        (Ok(recorded), Ok(wanted)) => {
            Target::for_name(&recorded, &[]) == Target::for_name(&wanted, &[])
        }
        _ => recorded == wanted,
    }
}

/// Whether an `org.opencontainers.image.ref.name` value is a whole reference (jib, rules_oci)
/// rather than just a tag (docker, containerd): containerd's own test, any of `/`, `:`, `@`.
pub fn ref_name_is_reference(ref_name: &str) -> bool {
    ref_name.contains(['/', ':', '@'])
}

/// A repository path as the registry's URLs take it (`team/app`): the grammar's path
/// components, so nothing can break out of `/v2/<name>/`.
pub fn check_repository(repo: &str) -> Result<(), NameError> {
    if is_valid_path(repo) {
        Ok(())
    } else {
        Err(NameError {
            raw: repo.to_string(),
            what: "a valid repository name",
            why: PATH_RULE,
        })
    }
}

/// A manifest reference: a tag, or a digest.
pub fn check_tag_or_digest(reference: &str) -> Result<(), NameError> {
    if is_valid_tag(reference) || is_valid_digest(reference) {
        Ok(())
    } else {
        Err(NameError {
            raw: reference.to_string(),
            what: "a tag or a digest",
            why: TAG_RULE,
        })
    }
}

/// `raw` as it was most likely meant, when it does not parse: surrounding spaces and an
/// `http(s)://` dropped, the repository path in lower case (the registry, the tag and the digest
/// kept). `None` when that does not parse either, or changes nothing.
pub fn corrected(raw: &str) -> Option<String> {
    let text = raw.trim();
    let text = ["http://", "https://"]
        .iter()
        .find_map(|scheme| {
            text.get(..scheme.len())
                .filter(|head| head.eq_ignore_ascii_case(scheme))
                .map(|_| &text[scheme.len()..])
        })
        .unwrap_or(text);
    let (name, digest) = match text.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (text, None),
    };
    let (name, tag) = split_tag(name);
    // A registry has a `.` or `:`, or is localhost; a capitalised first component is a path
    // written in the wrong case, not a registry.
    let (domain, path) = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => {
            (Some(first), rest)
        }
        _ => (None, name),
    };
    let mut fixed = domain.map_or_else(String::new, |domain| format!("{domain}/"));
    fixed.push_str(&path.to_lowercase());
    if let Some(tag) = tag {
        fixed = format!("{fixed}:{tag}");
    }
    if let Some(digest) = digest {
        fixed = format!("{fixed}@{digest}");
    }
    (fixed != raw && ImageName::parse(&fixed).is_ok()).then_some(fixed)
}

/// Splits `name:tag`, minding that a `:` before the last `/` belongs to a registry port.
fn split_tag(name: &str) -> (&str, Option<&str>) {
    match name.rsplit_once(':') {
        Some((head, tag)) if !tag.contains('/') => (head, Some(tag)),
        _ => (name, None),
    }
}

fn is_domain(first: &str) -> bool {
    first.contains(['.', ':']) || first == "localhost" || first != first.to_lowercase()
}

/// `[\w][\w.-]{0,127}`
fn is_valid_tag(tag: &str) -> bool {
    let mut chars = tag.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    first_ok
        && tag.len() <= MAX_TAG_LEN
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// `[a-z0-9]+([+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}`, the grammar's digest.
fn is_valid_digest(digest: &str) -> bool {
    let Some((algorithm, encoded)) = digest.split_once(':') else {
        return false;
    };
    let algorithm_ok = algorithm.split(['+', '.', '_', '-']).all(|part| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    });
    let encoded_ok = encoded.len() >= 32
        && encoded
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'=' | b'_' | b'-'));
    algorithm_ok && encoded_ok
}

fn is_valid_path(path: &str) -> bool {
    !path.is_empty() && path.split('/').all(is_valid_path_component)
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

#[cfg(test)]
mod tests;
