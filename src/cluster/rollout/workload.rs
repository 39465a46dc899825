//! A workload `push --rollout` sets and waits for, as the API server returns it: a typed
//! k8s-openapi Deployment, StatefulSet or DaemonSet, its kind's names, its pod template's
//! containers and its label selector. Pure.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

/// The kinds a rollout is waited for, as `kubectl rollout status` knows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum WorkloadKind {
    Deployment,
    StatefulSet,
    DaemonSet,
}

impl WorkloadKind {
    /// `Deployment`
    pub fn kind(self) -> &'static str {
        match self {
            Self::Deployment => "Deployment",
            Self::StatefulSet => "StatefulSet",
            Self::DaemonSet => "DaemonSet",
        }
    }

    /// `deployments`
    pub fn plural(self) -> &'static str {
        match self {
            Self::Deployment => "deployments",
            Self::StatefulSet => "statefulsets",
            Self::DaemonSet => "daemonsets",
        }
    }

    /// `deployment` (as kubectl prints `deployment.apps/NAME`).
    pub fn singular(self) -> &'static str {
        match self {
            Self::Deployment => "deployment",
            Self::StatefulSet => "statefulset",
            Self::DaemonSet => "daemonset",
        }
    }
}

/// One container of a pod template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateContainer {
    pub name: String,
    pub image: String,
    /// An init container (`spec.template.spec.initContainers`).
    pub init: bool,
}

/// A workload as the API server returned it (a GET, a PATCH's answer, a watch event).
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    Deployment(Deployment),
    StatefulSet(StatefulSet),
    DaemonSet(DaemonSet),
}

impl Workload {
    pub fn kind(&self) -> WorkloadKind {
        match self {
            Self::Deployment(_) => WorkloadKind::Deployment,
            Self::StatefulSet(_) => WorkloadKind::StatefulSet,
            Self::DaemonSet(_) => WorkloadKind::DaemonSet,
        }
    }

    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            Self::Deployment(d) => &d.metadata,
            Self::StatefulSet(s) => &s.metadata,
            Self::DaemonSet(d) => &d.metadata,
        }
    }

    pub fn name(&self) -> &str {
        self.metadata().name.as_deref().unwrap_or_default()
    }

    /// `metadata.generation`: the version of the spec the API server stored.
    pub fn generation(&self) -> i64 {
        self.metadata().generation.unwrap_or(0)
    }

    fn template_and_selector(&self) -> Option<(&PodTemplateSpec, &LabelSelector)> {
        match self {
            Self::Deployment(d) => d.spec.as_ref().map(|s| (&s.template, &s.selector)),
            Self::StatefulSet(s) => s.spec.as_ref().map(|s| (&s.template, &s.selector)),
            Self::DaemonSet(d) => d.spec.as_ref().map(|s| (&s.template, &s.selector)),
        }
    }

    /// The template's containers, init containers first.
    pub fn containers(&self) -> Vec<TemplateContainer> {
        let Some(spec) = self
            .template_and_selector()
            .and_then(|(template, _)| template.spec.as_ref())
        else {
            return Vec::new();
        };
        let init = spec.init_containers.iter().flatten().map(|c| (c, true));
        init.chain(spec.containers.iter().map(|c| (c, false)))
            .map(|(container, init)| TemplateContainer {
                name: container.name.clone(),
                image: container.image.clone().unwrap_or_default(),
                init,
            })
            .collect()
    }

    /// `app=web,tier=front`, from `spec.selector.matchLabels`.
    pub fn selector(&self) -> String {
        self.template_and_selector()
            .and_then(|(_, selector)| selector.match_labels.as_ref())
            .into_iter()
            .flatten()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// A Deployment's `ReplicaFailure` condition (`client::replica_failure`); `None` for the
    /// other kinds.
    pub fn replica_failure(&self) -> Option<String> {
        match self {
            Self::Deployment(d) => crate::cluster::client::replica_failure(d),
            _ => None,
        }
    }

    /// A Deployment's `spec.paused`.
    pub fn paused(&self) -> bool {
        match self {
            Self::Deployment(d) => d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_templates_containers_are_read_init_first_with_the_selector() {
        let deployment: Deployment = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "generation": 4},
            "spec": {
                "selector": {"matchLabels": {"app": "web", "tier": "front"}},
                "template": {"spec": {
                    "initContainers": [{"name": "setup", "image": "a"}],
                    "containers": [{"name": "web", "image": "b"}, {"name": "side", "image": "c"}],
                }},
            },
        }))
        .unwrap();
        let workload = Workload::Deployment(deployment);
        let names: Vec<(&str, bool)> = workload
            .containers()
            .iter()
            .map(|c| (c.name.clone().leak() as &str, c.init))
            .collect();
        assert_eq!(names, [("setup", true), ("web", false), ("side", false)]);
        assert_eq!(workload.selector(), "app=web,tier=front");
        assert_eq!((workload.name(), workload.generation()), ("web", 4));
        assert!(!workload.paused());
    }
}
