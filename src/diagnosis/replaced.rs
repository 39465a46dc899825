//! A pushed ref another writer replaced in a workload's template before it rolled out: the
//! error naming each container, what it runs now, who set it and when (from managedFields), a
//! hint that fits that writer (a GitOps controller reverts live changes), and the facts as
//! `-o json`'s `replacedBy`. Pure.

use serde::Serialize;

use crate::cluster::rollout::{Replaced, Writer};
use crate::plumbing::error::{Error, ExitCode};
use crate::plumbing::output::shown_bare as shown;

/// `-o json`'s `rollout[].replacedBy`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReplacedBy {
    pub container: String,
    pub image: String,
    /// The managedFields manager that owns the container's image; none when no entry does.
    pub manager: Option<String>,
    pub operation: Option<String>,
    pub time: Option<String>,
}

impl From<&Replaced> for ReplacedBy {
    fn from(replaced: &Replaced) -> Self {
        let by = replaced.by.as_ref();
        Self {
            container: replaced.container.clone(),
            image: replaced.image.clone(),
            manager: by.map(|w| w.manager.clone()),
            operation: by.map(|w| w.operation.clone()),
            time: by.and_then(|w| w.time.clone()),
        }
    }
}

/// The error for `label` (`deployment/web` in `namespace`): exit 1, each container said, the
/// hint for the first writer named.
pub(crate) fn replaced_error(label: &str, namespace: &str, replaced: &[Replaced]) -> Error {
    let each: Vec<String> = replaced.iter().map(said).collect();
    let error = Error::new(
        ExitCode::Failure,
        format!(
            "{label}: the pushed ref did not roll out: {}",
            each.join("; ")
        ),
    );
    let writer = replaced.iter().find_map(|r| r.by.as_ref());
    error.with_hint(hint(label, namespace, writer))
}

/// `container web now runs r/app:other, set by kubectl-set (Update) at 2026-12-07T17:10:03Z`
fn said(replaced: &Replaced) -> String {
    let runs = format!(
        "container {} now runs {}",
        replaced.container,
        shown(&replaced.image)
    );
    match &replaced.by {
        Some(Writer {
            manager,
            operation,
            time,
        }) => {
            let when = time
                .as_deref()
                .map_or_else(String::new, |t| format!(" at {t}"));
            format!("{runs}, set by {} ({operation}){when}", shown(manager))
        }
        None => format!("{runs}, set by a writer the server did not record"),
    }
}

/// What to do, by who wrote it: GitOps controllers revert live changes.
fn hint(label: &str, namespace: &str, writer: Option<&Writer>) -> String {
    let Some(writer) = writer else {
        return format!(
            "`kubectl get {label} -n {namespace} --show-managed-fields -o yaml` shows who writes it; push again once nothing else sets its image"
        );
    };
    let manager = writer.manager.as_str();
    if manager.starts_with("argocd") {
        format!(
            "Argo CD syncs {label} and reverts live changes: change the image in Git, or turn off its Application's automated sync (self-heal) while you iterate"
        )
    } else if manager == "kustomize-controller" {
        format!(
            "Flux applies {label} from Git and reverts live changes: change the image in Git, or suspend its Kustomization (`flux suspend kustomization NAME`) and any image policy that updates it while you iterate"
        )
    } else if manager == "helm-controller" {
        format!(
            "Flux's helm-controller upgrades {label} from its HelmRelease and reverts live changes: change the image in the release's values in Git, or suspend it (`flux suspend helmrelease NAME`) while you iterate"
        )
    } else if manager == "helm" {
        format!(
            "a Helm upgrade set {label}'s image: set it in the release's values (`helm upgrade ... --set`), or push again after the upgrade"
        )
    } else if manager.starts_with("kubectl") {
        format!(
            "someone changed {label}'s image with kubectl ({}) after our patch: push again to set ours, or agree with them who sets it",
            shown(manager)
        )
    } else {
        format!(
            "{} sets {label}'s image: stop it from setting it (or change it where {} reads it), then push again",
            shown(manager),
            shown(manager)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by(manager: &str) -> Replaced {
        Replaced {
            container: "web".into(),
            image: "r/app:other".into(),
            by: Some(Writer {
                manager: manager.into(),
                operation: "Apply".into(),
                time: Some("2026-12-07T17:10:03Z".into()),
            }),
        }
    }

    #[test]
    fn the_error_names_the_container_image_writer_and_time() {
        let error = replaced_error("deployment/web", "dev", &[by("kustomize-controller")]);
        assert_eq!(
            error.message(),
            "deployment/web: the pushed ref did not roll out: container web now runs r/app:other, set by kustomize-controller (Apply) at 2026-12-07T17:10:03Z"
        );
        assert_eq!(error.exit_code(), ExitCode::Failure);
    }

    #[test]
    fn each_writer_gets_its_own_hint() {
        let hint_of = |manager: &str| hint("deployment/web", "dev", by(manager).by.as_ref());
        assert!(hint_of("argocd-controller").starts_with("Argo CD"));
        assert!(hint_of("kustomize-controller").contains("flux suspend kustomization"));
        assert!(hint_of("helm-controller").contains("flux suspend helmrelease"));
        assert!(hint_of("helm").contains("helm upgrade"));
        assert!(hint_of("kubectl-set").contains("with kubectl"));
        assert!(hint_of("my-operator").starts_with("my-operator sets"));
        assert!(hint("deployment/web", "dev", None).contains("--show-managed-fields"));
    }
}
