//! What a prune finds right before each delete: deleting a manifest by digest removes every tag
//! on it, and a push may have tagged that same content since the registry was read. The
//! repository's tags are read again and each tag the plan never saw (at most [`MOST_CHECKED`])
//! resolved: those that now name the doomed digest keep it.

use std::collections::BTreeSet;

use crate::image::registry::RegistryClient;
use crate::plumbing::error::Result;

use super::pruning::Doomed;

/// New tags resolved per delete at most (one GET each); more are not looked at.
pub(crate) const MOST_CHECKED: usize = 50;

/// The tags outside the plan (`planned`: every tag of the repository it read) that now name
/// `doomed`'s digest, in order; empty when none does or the repository is gone.
pub(crate) async fn tagged_meanwhile(
    client: &RegistryClient,
    doomed: &Doomed,
    planned: &BTreeSet<String>,
) -> Result<Vec<String>> {
    let Some(now) = client.tags(&doomed.repository).await? else {
        return Ok(Vec::new());
    };
    let mut naming = Vec::new();
    for tag in new_tags(&now, planned) {
        if let Some(found) = client.manifest(&doomed.repository, tag).await?
            && found.digest == doomed.digest
        {
            naming.push(tag.clone());
        }
    }
    Ok(naming)
}

/// The tags of `now` the plan did not see, the first [`MOST_CHECKED`].
fn new_tags<'a>(now: &'a [String], planned: &BTreeSet<String>) -> Vec<&'a String> {
    now.iter()
        .filter(|tag| !planned.contains(*tag))
        .take(MOST_CHECKED)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tags_the_plan_never_saw_are_checked_and_at_most_fifty() {
        let planned: BTreeSet<String> = ["v1", "v2"].map(String::from).into();
        let now: Vec<String> = ["v1", "hotfix", "v2", "v3"].map(String::from).into();
        assert_eq!(new_tags(&now, &planned), ["hotfix", "v3"]);
        let many: Vec<String> = (0..80).map(|n| format!("t{n}")).collect();
        assert_eq!(new_tags(&many, &planned).len(), MOST_CHECKED);
    }
}
