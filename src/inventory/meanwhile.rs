//! What a prune finds right before each delete: deleting a manifest by digest removes every tag
//! on it, and a push may have tagged that same content since the registry was read (a new tag,
//! or one the plan saw moved onto it). The repository's tags are read again and each resolved
//! (its own first, then at most [`MOST_CHECKED`] others, the new ones first): others that now
//! name the doomed digest keep it, and the plan is told so; its own that no longer name it are
//! not deleted with it, and the plan is told that too.

use std::collections::BTreeMap;

use futures_util::stream::{self, StreamExt, TryStreamExt};

use crate::image::digest::Digest;
use crate::image::registry::RegistryClient;
use crate::plumbing::error::Result;

use super::pruning::{Doomed, Kept, Plan, Why};

/// Tags resolved per delete at most (one request each); more are not looked at.
pub(crate) const MOST_CHECKED: usize = 100;
/// Tags resolved at once.
const AT_ONCE: usize = 8;

/// What the re-read right before one delete found.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The tags that now name the doomed digest, though the plan did not delete them with it.
    pub naming: Vec<String>,
    /// The tags the plan deletes with it that still name it (the others were moved or deleted
    /// meanwhile: its delete does not remove them).
    pub still: Vec<String>,
    /// Tags left unresolved past [`MOST_CHECKED`].
    pub unchecked: usize,
}

/// The tags of `doomed`'s repository that now name its digest, but those the plan (`planned`:
/// each tag of the repository it saw, and the digest it saw it name) deletes with it; empty
/// when none does or the repository is gone.
pub(crate) async fn tagged_meanwhile(
    client: &RegistryClient,
    doomed: &Doomed,
    planned: &BTreeMap<String, Digest>,
) -> Result<Found> {
    let Some(now) = client.tags(&doomed.repository).await? else {
        return Ok(Found::default());
    };
    let own: Vec<&String> = doomed.tags.iter().filter(|t| now.contains(t)).collect();
    let (others, unchecked) = to_check(&now, planned, &doomed.digest);
    let checked = own.iter().copied().chain(others);
    let resolved: Vec<(&String, bool)> = stream::iter(checked)
        .map(|tag| async move {
            let found = client.manifest(&doomed.repository, tag).await?;
            Ok::<_, crate::plumbing::error::Error>((
                tag,
                found.is_some_and(|found| found.digest == doomed.digest),
            ))
        })
        .buffered(AT_ONCE)
        .try_collect()
        .await?;
    let (still, naming): (Vec<String>, Vec<String>) = resolved
        .into_iter()
        .filter(|(_, names)| *names)
        .map(|(tag, _)| tag.clone())
        .partition(|tag| doomed.tags.contains(tag));
    Ok(Found {
        naming,
        still,
        unchecked,
    })
}

/// The tags of `now` to resolve before deleting `digest`: every one but those the plan saw
/// naming it (they go with it), the new ones first, the first [`MOST_CHECKED`]; and how many
/// are left.
fn to_check<'a>(
    now: &'a [String],
    planned: &BTreeMap<String, Digest>,
    digest: &Digest,
) -> (Vec<&'a String>, usize) {
    let (new, seen): (Vec<&String>, Vec<&String>) = now
        .iter()
        .filter(|tag| planned.get(*tag) != Some(digest))
        .partition(|tag| !planned.contains_key(*tag));
    let mut all: Vec<&String> = new.into_iter().chain(seen).collect();
    let left = all.len().saturating_sub(MOST_CHECKED);
    all.truncate(MOST_CHECKED);
    (all, left)
}

impl Plan {
    /// Each tag of `repository` the plan saw, kept or deleted, and the digest it saw it name.
    pub(crate) fn digests_of(&self, repository: &str) -> BTreeMap<String, Digest> {
        let kept = self.kept.iter().filter(|k| k.repository == repository);
        let doomed = self.deletions.iter().filter(|d| d.repository == repository);
        kept.map(|k| (k.tag.clone(), k.digest.clone()))
            .chain(doomed.flat_map(|d| d.tags.iter().map(|t| (t.clone(), d.digest.clone()))))
            .collect()
    }

    /// The deletion at `index` kept after all, its own tags with it: `tags` now name it too
    /// (taken from where the plan had them); what only deleted manifests reference is counted
    /// again.
    ///
    /// A doomed manifest left with no tag that way is still deleted: untagged meanwhile.
    pub(crate) fn keep_after_all(&mut self, index: usize, tags: Vec<String>) {
        // (a tag that moved from another doomed manifest no longer goes with it)
        let doomed = self.deletions.remove(index);
        let repository = doomed.repository.clone();
        self.kept
            .retain(|k| k.repository != repository || !tags.contains(&k.tag));
        for other in self.deletions.iter_mut() {
            if other.repository == repository {
                let before = other.tags.len();
                other.tags.retain(|tag| !tags.contains(tag));
                other.untagged_meanwhile |= before > 0 && other.tags.is_empty();
            }
        }
        for tag in doomed.tags.iter().cloned().chain(tags) {
            self.kept.push(Kept {
                repository: repository.clone(),
                tag,
                digest: doomed.digest.clone(),
                reason: Why::TaggedMeanwhile,
                in_use_by: Vec::new(),
            });
        }
        self.kept
            .sort_by(|a, b| (&a.repository, &a.tag).cmp(&(&b.repository, &b.tag)));
        self.kept_blobs.extend(doomed.blobs.into_keys());
        self.count_unreferenced();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u8) -> Digest {
        Digest::of_bytes(&[n])
    }

    #[test]
    fn every_tag_but_those_going_with_it_is_checked_new_ones_first_at_most_a_hundred() {
        let planned: BTreeMap<String, Digest> = [("v1", 1), ("v2", 2), ("v3", 3)]
            .map(|(t, d)| (t.to_string(), digest(d)))
            .into();
        let now: Vec<String> = ["v1", "v2", "hotfix", "v3"].map(String::from).into();
        let (checked, left) = to_check(&now, &planned, &digest(1));
        assert_eq!(
            checked,
            ["hotfix", "v2", "v3"],
            "its own, v1, is resolved apart"
        );
        assert_eq!(left, 0);
        let many: Vec<String> = (0..130).map(|n| format!("t{n}")).collect();
        let (checked, left) = to_check(&many, &planned, &digest(1));
        assert_eq!((checked.len(), left), (MOST_CHECKED, 30));
    }

    #[test]
    fn a_kept_deletion_takes_its_moved_tags_and_its_blobs_from_the_count() {
        let doomed = |tag: &str, n: u8, blob: u8| Doomed {
            repository: "app".into(),
            digest: digest(n),
            tags: vec![tag.into()],
            size: 10,
            blobs: [(digest(blob), 100)].into(),
            untagged_meanwhile: false,
        };
        let mut plan = Plan {
            kept: vec![Kept {
                repository: "app".into(),
                tag: "v3".into(),
                digest: digest(3),
                reason: Why::Newest,
                in_use_by: Vec::new(),
            }],
            deletions: vec![doomed("v1", 1, 11), doomed("v2", 2, 12)],
            ..Plan::default()
        };
        plan.count_unreferenced();
        assert_eq!(plan.unreferenced_bytes, 200);
        plan.keep_after_all(0, vec!["v3".into()]);
        let kept: Vec<(&str, &Digest, Why)> = plan
            .kept
            .iter()
            .map(|k| (k.tag.as_str(), &k.digest, k.reason))
            .collect();
        assert_eq!(
            kept,
            [
                ("v1", &digest(1), Why::TaggedMeanwhile),
                ("v3", &digest(1), Why::TaggedMeanwhile)
            ]
        );
        assert_eq!(plan.unreferenced_bytes, 100);
        assert_eq!(plan.digests_of("app")["v3"], digest(1));
        // v2 pushed again onto v3's (now v1's) digest too: v2's manifest goes untagged.
        plan.deletions.push(doomed("v9", 9, 19));
        plan.keep_after_all(1, vec!["v2".into()]);
        assert_eq!(plan.deletions[0].tags, Vec::<String>::new());
        assert!(plan.deletions[0].untagged_meanwhile);
        assert_eq!(plan.deletions.len(), 1, "v9 is kept, with v2");
    }
}
