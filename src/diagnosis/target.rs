//! A pod or workload named as `kubectl get` spells it: `TYPE/NAME` where TYPE is the kind, its
//! plural or its short name, any case, alone or group-qualified (`deployments.apps`,
//! `deployments.v1.apps`, `pods.v1.`). `why` reads pods (a bare `NAME` is one) and deployments;
//! `push --rollout` rolls deployments, statefulsets and daemonsets. Pure.

use crate::cluster::client::WorkloadKind;
use crate::plumbing::error::{Error, ExitCode, Result};

/// What the user named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Pod(String),
    Deployment(String),
    Workload(WorkloadKind, String),
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

const KINDS: [Kind; 4] = [
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
    Kind {
        singular: "statefulset",
        plural: "statefulsets",
        short: "sts",
        group: "apps",
        version: "v1",
        make: |name| Target::Workload(WorkloadKind::StatefulSet, name),
    },
    Kind {
        singular: "daemonset",
        plural: "daemonsets",
        short: "ds",
        group: "apps",
        version: "v1",
        make: |name| Target::Workload(WorkloadKind::DaemonSet, name),
    },
];

/// The kinds `why` reads.
const WHY_READS: [&str; 2] = ["pod", "deployment"];
/// The kinds `push --rollout` rolls.
const ROLLED: [&str; 3] = ["deployment", "statefulset", "daemonset"];

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
        .filter(|kind| WHY_READS.contains(&kind.singular))
        .find(|kind| kind.matches(&resource))
        .map(|kind| (kind.make)(name.to_string()))
        .ok_or_else(|| unknown_kind(text, &resource))
}

/// `deploy/NAME`, `sts/NAME`, `daemonsets.apps/NAME`...: a workload `push --rollout` rolls.
pub(crate) fn parse_workload(text: &str) -> Result<(WorkloadKind, String)> {
    let refused = || {
        let kinds: Vec<String> = rolled().map(Kind::spellings).collect();
        Error::new(
            ExitCode::Usage,
            format!(
                "--rollout {text:?}: a rollout is waited for on a deployment, statefulset or daemonset, named TYPE/NAME"
            ),
        )
        .with_hint(format!(
            "name one as {}, e.g. --rollout deploy/web or --rollout deploy/web=CONTAINER",
            kinds.join(" or ")
        ))
    };
    let (resource, name) = text.split_once('/').ok_or_else(refused)?;
    if name.is_empty() || name.contains('/') {
        return Err(refused());
    }
    let resource = resource.to_ascii_lowercase();
    match rolled()
        .find(|kind| kind.matches(&resource))
        .map(|kind| (kind.make)(name.to_string()))
    {
        Some(Target::Deployment(name)) => Ok((WorkloadKind::Deployment, name)),
        Some(Target::Workload(kind, name)) => Ok((kind, name)),
        _ => Err(refused()),
    }
}

fn rolled() -> impl Iterator<Item = &'static Kind> {
    KINDS.iter().filter(|kind| ROLLED.contains(&kind.singular))
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
    let kinds: Vec<String> = KINDS
        .iter()
        .filter(|kind| WHY_READS.contains(&kind.singular))
        .map(Kind::spellings)
        .collect();
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
    fn rollout_takes_the_three_kinds_in_every_spelling_and_nothing_else() {
        for (spelling, kind) in [
            ("deploy/web", WorkloadKind::Deployment),
            ("deployment.apps/web", WorkloadKind::Deployment),
            ("sts/web", WorkloadKind::StatefulSet),
            ("StatefulSets.v1.apps/web", WorkloadKind::StatefulSet),
            ("ds/web", WorkloadKind::DaemonSet),
            ("daemonset/web", WorkloadKind::DaemonSet),
        ] {
            assert_eq!(
                parse_workload(spelling).unwrap(),
                (kind, "web".to_string()),
                "{spelling}"
            );
        }
        for bad in [
            "web",
            "pod/web",
            "svc/web",
            "deploy/",
            "deploy/a/b",
            "ds.batch/web",
        ] {
            let err = parse_workload(bad).unwrap_err();
            assert_eq!(err.exit_code(), ExitCode::Usage, "{bad}");
            assert!(err.hints().join("\n").contains("sts"), "{bad}");
        }
    }

    #[test]
    fn other_kinds_and_names_are_refused_saying_what_is_understood() {
        for bad in [
            "svc/web",
            "sts/web",
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
