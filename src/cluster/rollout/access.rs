//! What a rollout needs allowed, asked before the push, all at once (one SelfSubjectAccessReview
//! each, as `kubectl auth can-i` asks, through the session, which keeps what it was granted): get, list and patch on each workload's kind, get and list
//! on pods, get on pods/log; and whether watches on them are allowed too (else the wait reads
//! once a second).

use super::workload::WorkloadKind;
use crate::cluster::session::Session;
use crate::plumbing::error::Result;

/// The answer for the rollout as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// The first permission refused: `patch`, `deployments.apps`.
    Refused {
        verb: &'static str,
        resource: String,
    },
    /// Everything needed is allowed; `watch`: the watches too.
    Allowed { watch: bool },
}

/// Asks every permission the rollouts of `kinds` in `namespace` need.
pub async fn access(
    session: &Session<'_>,
    namespace: &str,
    kinds: &[WorkloadKind],
) -> Result<Access> {
    let mut kinds = kinds.to_vec();
    kinds.sort_by_key(|kind| kind.plural());
    kinds.dedup();
    let mut needed: Vec<(&'static str, &str, &str)> = Vec::new();
    for kind in &kinds {
        for verb in ["get", "list", "patch"] {
            needed.push((verb, "apps", kind.plural()));
        }
    }
    needed.extend([
        ("get", "", "pods"),
        ("list", "", "pods"),
        ("get", "", "pods/log"),
    ]);
    let mut watched: Vec<(&str, &str, &str)> = kinds
        .iter()
        .map(|kind| ("watch", "apps", kind.plural()))
        .collect();
    watched.push(("watch", "", "pods"));
    let asks = needed
        .iter()
        .chain(&watched)
        .map(|(verb, group, resource)| session.may(verb, group, resource, namespace));
    let answers = futures_util::future::try_join_all(asks).await?;
    let (must, may_watch) = answers.split_at(needed.len());
    if let Some(((verb, group, resource), _)) =
        needed.iter().zip(must).find(|(_, allowed)| !**allowed)
    {
        let resource = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        };
        return Ok(Access::Refused { verb, resource });
    }
    Ok(Access::Allowed {
        watch: may_watch.iter().all(|allowed| *allowed),
    })
}
