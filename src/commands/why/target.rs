//! What `why` is pointed at, spelled as `kubectl get` spells it: `TYPE/NAME` where TYPE is the
//! kind, its plural or its short name, any case, alone or group-qualified (`deployments.apps`,
//! `deployments.v1.apps`, `pods.v1.`); a bare `NAME` is a pod. Pure.

use crate::error::{Error, ExitCode, Result};

/// What the user named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Pod(String),
    Deployment(String),
}

/// A kind `why` reads, as the API server's discovery names it.
struct Kind {
    singular: &'static str,
    plural: &'static str,
    short: &'static str,
    /// The API group (`""` for the core group) and its one served version.
    group: &'static str,
    version: &'static str,
    make: fn(String) -> Target,
}

const KINDS: [Kind; 2] = [
    Kind {
        singular: "pod",
        plural: "pods",
        short: "po",
        group: "",
        version: "v1",
        make: Target::Pod,
    },
    Kind {
        singular: "deployment",
        plural: "deployments",
        short: "deploy",
        group: "apps",
        version: "v1",
        make: Target::Deployment,
    },
];

impl Kind {
    /// `deployments.apps`, `deployment.v1.apps`, `deploy`, `pods.v1.`: whether `resource` (lower
    /// case) names this kind, as kubectl's resource argument does.
    fn matches(&self, resource: &str) -> bool {
        let (name, qualifier) = match resource.split_once('.') {
            Some((name, qualifier)) => (name, Some(qualifier)),
            None => (resource, None),
        };
        let named = [self.singular, self.plural, self.short].contains(&name);
        let versioned = format!("{}.{}", self.version, self.group);
        named && qualifier.is_none_or(|qualifier| qualifier == self.group || qualifier == versioned)
    }

    /// `deployment (deployments, deploy, deployments.apps)`.
    fn spellings(&self) -> String {
        let qualified = if self.group.is_empty() {
            format!("{}.{}.", self.plural, self.version)
        } else {
            format!("{}.{}", self.plural, self.group)
        };
        format!(
            "{}/NAME ({}, {}, {qualified})",
            self.singular, self.plural, self.short
        )
    }
}

/// `pod/NAME` or `NAME`, `deploy/NAME`, `deployments.apps/NAME`, ...: kubectl's spellings.
pub(crate) fn parse_target(text: &str) -> Result<Target> {
    let (resource, name) = text.split_once('/').unwrap_or(("pod", text));
    if name.is_empty() || name.contains('/') {
        return Err(bad_name(text));
    }
    let resource = resource.to_ascii_lowercase();
    KINDS
        .iter()
        .find(|kind| kind.matches(&resource))
        .map(|kind| (kind.make)(name.to_string()))
        .ok_or_else(|| unknown_kind(text, &resource))
}

fn bad_name(text: &str) -> Error {
    Error::new(
        ExitCode::Usage,
        format!("{text:?} is not TYPE/NAME or NAME"),
    )
    .with_hint(understood())
}

fn unknown_kind(text: &str, resource: &str) -> Error {
    Error::new(
        ExitCode::Usage,
        format!("{text:?}: why does not read {resource}; it reads pods and deployments"),
    )
    .with_hint(understood())
    .with_hint(
        "for another workload, name one of its pods: `kubectl get pods -l SELECTOR` lists them",
    )
}

fn understood() -> String {
    let kinds: Vec<String> = KINDS.iter().map(Kind::spellings).collect();
    format!(
        "name one as {}, or a pod by NAME alone, e.g. kubectl registry why deploy/web",
        kinds.join(" or ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_kubectl_get_takes_names_the_kind() {
        let pod = Target::Pod("web".into());
        for spelling in [
            "web",
            "pod/web",
            "pods/web",
            "po/web",
            "Pod/web",
            "pods.v1./web",
        ] {
            assert_eq!(parse_target(spelling).unwrap(), pod, "{spelling}");
        }
        let deployment = Target::Deployment("web".into());
        for spelling in [
            "deploy/web",
            "deployment/web",
            "deployments/web",
            "Deployment/web",
            "deployment.apps/web",
            "deployments.apps/web",
            "deployments.v1.apps/web",
            "deploy.apps/web",
        ] {
            assert_eq!(parse_target(spelling).unwrap(), deployment, "{spelling}");
        }
    }

    #[test]
    fn other_kinds_and_names_are_refused_saying_what_is_understood() {
        for bad in [
            "svc/web",
            "deployments.extensions/web",
            "pods.apps/web",
            "pod/",
            "pod/a/b",
        ] {
            let err = parse_target(bad).unwrap_err();
            assert_eq!(err.exit_code(), ExitCode::Usage, "{bad}");
            let hints = err.hints().join("\n");
            assert!(
                hints.contains("deployments.apps") && hints.contains("pod/NAME"),
                "{hints}"
            );
        }
    }
}
