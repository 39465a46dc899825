//! What prune keeps and deletes in the registry, decided from what was read (pure): per
//! repository the N newest tags by their image's `created` (ties and missing times kept) and
//! every tag in use; the rest deleted by manifest digest, never a digest a kept tag points at.
//! Signatures, attestations and referrers are not ranked: they stay and go with their subject.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::attached::root_subject;
use super::registry::TagEntry;
use super::usage::Usage;
use crate::image::created;
use crate::image::digest::Digest;

/// Why a tag stays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Why {
    /// Among the N newest (or as new as the Nth).
    Newest,
    /// A pod or workload names it, by tag or digest.
    InUse,
    /// Its image has no `created` time to rank it by.
    NoCreatedTime,
    /// Its manifest is also what a kept tag points at.
    SharesAKeptDigest,
    /// A signature, attestation or referrer of a kept image.
    AttachedToKept,
    /// A signature, attestation or referrer whose subject no tag of the repository names.
    SubjectUntagged,
    /// Planned for deletion, but a tag pushed since the registry was read names it now.
    TaggedMeanwhile,
}

impl Why {
    /// Why a tag stays on its own account (in use, undated, or as new as the `newest` kept),
    /// `None` when it may go. The same rule for registry tags and node content tags.
    pub(crate) fn kept(
        in_use: bool,
        created_at: Option<created::Instant>,
        newest: Option<created::Instant>,
    ) -> Option<Self> {
        if in_use {
            Some(Self::InUse)
        } else if created_at.is_none() {
            Some(Self::NoCreatedTime)
        } else if newest.is_some_and(|newest| created_at >= Some(newest)) {
            Some(Self::Newest)
        } else {
            None
        }
    }
}

/// A tag that stays.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Kept {
    pub repository: String,
    pub tag: String,
    pub digest: Digest,
    pub reason: Why,
    pub in_use_by: Vec<String>,
}

/// One manifest to delete, and the tags that go with it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Doomed {
    pub repository: String,
    pub digest: Digest,
    pub tags: Vec<String>,
    /// Config and layers of the image (as `ls` counts them).
    pub size: u64,
    /// The blobs (and an index's platform manifests) its tags reference, by size.
    #[serde(skip)]
    pub blobs: BTreeMap<Digest, u64>,
    /// Each of its tags was moved or deleted since the registry was read: none goes with it.
    #[serde(skip)]
    pub untagged_meanwhile: bool,
}

impl Plan {
    /// What only the deleted manifests reference, the kept ones aside: `unreferenced_bytes`,
    /// counted again (after a deletion is kept after all).
    pub(crate) fn count_unreferenced(&mut self) {
        let doomed: BTreeMap<&Digest, u64> = self
            .deletions
            .iter()
            .flat_map(|d| d.blobs.iter().map(|(digest, size)| (digest, *size)))
            .collect();
        self.unreferenced_bytes = doomed
            .iter()
            .filter(|(digest, _)| !self.kept_blobs.contains(*digest))
            .map(|(_, size)| size)
            .sum();
    }
}

#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub kept: Vec<Kept>,
    pub deletions: Vec<Doomed>,
    /// Blobs (and an index's platform manifests) that only the deleted manifests reference,
    /// among the repositories read: what the registry's garbage-collect can free.
    pub unreferenced_bytes: u64,
    /// The blobs (and platform manifests) the kept tags reference.
    pub kept_blobs: BTreeSet<Digest>,
}

/// Decides, repository by repository. `usage: None` (with `--ignore-usage`): nothing is known
/// to be in use.
pub(crate) fn plan(entries: &[TagEntry], usage: Option<&Usage>, keep: usize) -> Plan {
    let mut by_repository: BTreeMap<&str, Vec<&TagEntry>> = BTreeMap::new();
    for entry in entries {
        by_repository
            .entry(&entry.repository)
            .or_default()
            .push(entry);
    }
    let mut plan = Plan::default();
    for (repository, tags) in by_repository {
        let (attached, images): (Vec<&TagEntry>, Vec<&TagEntry>) =
            tags.into_iter().partition(|tag| tag.attached.is_some());
        let fate = plan_images(repository, &images, usage, keep, &mut plan);
        plan_attached(repository, &attached, usage, &fate, &mut plan);
    }
    plan.kept
        .sort_by(|a, b| (&a.repository, &a.tag).cmp(&(&b.repository, &b.tag)));
    plan.count_unreferenced();
    plan
}

/// What became of one repository's images: the manifests (and an index's platforms) kept and
/// deleted, for the tags that belong to them.
#[derive(Default)]
struct Fate<'a> {
    kept: BTreeSet<&'a Digest>,
    doomed: BTreeSet<&'a Digest>,
}

fn users_of(usage: Option<&Usage>, tag: &TagEntry) -> Vec<String> {
    usage
        .map(|usage| {
            let mut digests = vec![tag.digest.as_str()];
            digests.extend(tag.children.iter().map(Digest::as_str));
            usage.users_of(&tag.repository, &tag.tag, &digests)
        })
        .unwrap_or_default()
}

/// The images of one repository: the N newest, those in use and those undated stay, with every
/// tag of a manifest one of them points at; the rest is deleted by digest.
fn plan_images<'a>(
    repository: &str,
    tags: &[&'a TagEntry],
    usage: Option<&Usage>,
    keep: usize,
    plan: &mut Plan,
) -> Fate<'a> {
    let newest = newest_threshold(tags, keep);
    let mut fate = Fate::default();
    let mut reasons: BTreeMap<&str, (Why, Vec<String>)> = BTreeMap::new();
    for tag in tags {
        let users = users_of(usage, tag);
        let created_at = tag.created.as_deref().and_then(created::parse);
        if let Some(why) = Why::kept(!users.is_empty(), created_at, newest) {
            fate.kept.insert(&tag.digest);
            fate.kept.extend(tag.children.iter());
            reasons.insert(&tag.tag, (why, users));
        }
    }
    let mut doomed: BTreeMap<&Digest, Doomed> = BTreeMap::new();
    for tag in tags {
        let reason = reasons.remove(tag.tag.as_str()).or_else(|| {
            fate.kept
                .contains(&tag.digest)
                .then(|| (Why::SharesAKeptDigest, Vec::new()))
        });
        if let Some((why, users)) = reason {
            plan.kept.push(kept(tag, why, users));
            plan.kept_blobs.extend(tag.blobs.keys().cloned());
            continue;
        }
        fate.doomed.insert(&tag.digest);
        fate.doomed.extend(tag.children.iter());
        doom(&mut doomed, repository, tag);
    }
    plan.deletions.extend(doomed.into_values().map(sorted_tags));
    fate
}

/// The tags that belong to another manifest (signatures, attestations, referrers): never ranked
/// by age; kept with their subject, deleted with it, and kept when no image here is their
/// subject (it may be in another repository, or pushed by digest alone).
fn plan_attached<'a>(
    repository: &str,
    tags: &[&'a TagEntry],
    usage: Option<&Usage>,
    fate: &Fate<'a>,
    plan: &mut Plan,
) {
    let subject_of: HashMap<&Digest, &Digest> = tags
        .iter()
        .filter_map(|tag| Some((&tag.digest, &tag.attached.as_ref()?.subject)))
        .collect();
    let mut doomed: BTreeMap<&Digest, Doomed> = BTreeMap::new();
    let mut listed: Vec<&Digest> = Vec::new();
    for tag in tags {
        let Some(attached) = &tag.attached else {
            continue;
        };
        let users = users_of(usage, tag);
        let subject = root_subject(&attached.subject, &subject_of);
        let why = if !users.is_empty() {
            Some(Why::InUse)
        } else if fate.kept.contains(subject) {
            Some(Why::AttachedToKept)
        } else if fate.doomed.contains(subject) {
            None
        } else {
            Some(Why::SubjectUntagged)
        };
        if let Some(why) = why {
            plan.kept.push(kept(tag, why, users));
            plan.kept_blobs.extend(tag.blobs.keys().cloned());
            continue;
        }
        doom(&mut doomed, repository, tag);
        listed.extend(attached.listed.iter());
    }
    // The referrers a deleted referrers index lists (pushed by digest) go with it.
    for digest in listed {
        if !doomed.contains_key(digest) && !fate.kept.contains(digest) {
            doomed.insert(
                digest,
                Doomed {
                    repository: repository.to_string(),
                    digest: digest.clone(),
                    tags: Vec::new(),
                    size: 0,
                    blobs: BTreeMap::new(),
                    untagged_meanwhile: false,
                },
            );
        }
    }
    plan.deletions.extend(doomed.into_values().map(sorted_tags));
}

fn doom<'a>(doomed: &mut BTreeMap<&'a Digest, Doomed>, repository: &str, tag: &'a TagEntry) {
    let doomed = doomed.entry(&tag.digest).or_insert_with(|| Doomed {
        repository: repository.to_string(),
        digest: tag.digest.clone(),
        tags: Vec::new(),
        size: tag.size,
        blobs: BTreeMap::new(),
        untagged_meanwhile: false,
    });
    doomed.tags.push(tag.tag.clone());
    doomed.blobs.extend(
        tag.blobs
            .iter()
            .map(|(digest, size)| (digest.clone(), *size)),
    );
}

fn sorted_tags(mut doomed: Doomed) -> Doomed {
    doomed.tags.sort();
    doomed
}

fn kept(tag: &TagEntry, reason: Why, in_use_by: Vec<String>) -> Kept {
    Kept {
        repository: tag.repository.clone(),
        tag: tag.tag.clone(),
        digest: tag.digest.clone(),
        reason,
        in_use_by,
    }
}

/// The created time of the `keep`th newest dated image (tags of one manifest count once): tags
/// as new as it stay. `None` when none is kept for age (`--keep 0`); the oldest time when there
/// are no more than `keep`.
pub(crate) fn newest_threshold<T: Dated>(tags: &[T], keep: usize) -> Option<created::Instant> {
    if keep == 0 {
        return None;
    }
    let images: BTreeMap<&Digest, created::Instant> = tags
        .iter()
        .filter_map(|tag| Some((tag.digest(), tag.created_at()?)))
        .collect();
    let mut times: Vec<created::Instant> = images.into_values().collect();
    times.sort_unstable_by(|a, b| b.cmp(a));
    times.get(keep - 1).or(times.last()).copied()
}

/// A tag with a manifest and a created time to rank it by.
pub(crate) trait Dated {
    fn digest(&self) -> &Digest;
    fn created_at(&self) -> Option<created::Instant>;
}

impl Dated for &TagEntry {
    fn digest(&self) -> &Digest {
        &self.digest
    }

    fn created_at(&self) -> Option<created::Instant> {
        self.created.as_deref().and_then(created::parse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::client::ImageUse;
    use crate::image::reference::RegistryHost;

    fn digest(n: u8) -> Digest {
        Digest::of_bytes(&[n])
    }

    fn entry(tag: &str, digest_of: u8, created: Option<&str>, blobs: &[(u8, u64)]) -> TagEntry {
        TagEntry {
            repository: "app".to_string(),
            tag: tag.to_string(),
            digest: digest(digest_of),
            size: blobs.iter().map(|(_, s)| s).sum(),
            created: created.map(str::to_string),
            children: Vec::new(),
            blobs: blobs.iter().map(|(d, s)| (digest(*d), *s)).collect(),
            attached: None,
            attestations: Vec::new(),
        }
    }

    /// A cosign tag (`sha256-<hex>.sig`) of the manifest `digest(subject)`.
    fn signature(subject: u8, digest_of: u8) -> TagEntry {
        let subject = digest(subject);
        let mut entry = entry(
            &format!("sha256-{}.sig", subject.hex()),
            digest_of,
            None,
            &[(200 + digest_of, 7)],
        );
        entry.attached = crate::inventory::attached(&entry.tag, None);
        entry
    }

    #[test]
    fn signatures_stay_and_go_with_their_subject_never_ranked_themselves() {
        let entries = [
            entry("v1", 1, Some("2024-01-01T00:00:00Z"), &[(101, 10)]),
            entry("v2", 2, Some("2024-02-01T00:00:00Z"), &[(102, 10)]),
            signature(1, 11),
            signature(2, 12),
            // Its subject is no tag here: it may be another repository's.
            signature(9, 19),
        ];
        let plan = plan(&entries, None, 1);
        let kept: Vec<(String, Why)> = plan
            .kept
            .iter()
            .map(|k| (k.tag.clone(), k.reason))
            .collect();
        let sig = |n: u8| format!("sha256-{}.sig", digest(n).hex());
        let mut expected = vec![
            (sig(2), Why::AttachedToKept),
            (sig(9), Why::SubjectUntagged),
            ("v2".to_string(), Why::Newest),
        ];
        expected.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(kept, expected);
        let deleted: Vec<&[String]> = plan.deletions.iter().map(|d| d.tags.as_slice()).collect();
        assert_eq!(deleted, [vec!["v1".to_string()], vec![sig(1)]]);
        assert_eq!(plan.unreferenced_bytes, 10 + 7);
    }

    #[test]
    fn keeps_the_newest_ties_undated_and_used_and_deletes_the_rest_by_digest() {
        let entries = [
            entry(
                "v1",
                1,
                Some("2024-01-01T00:00:00Z"),
                &[(100, 10), (101, 1000)],
            ),
            entry(
                "v2",
                2,
                Some("2024-02-01T00:00:00Z"),
                &[(100, 10), (102, 2000)],
            ),
            entry(
                "v3",
                3,
                Some("2024-03-01T00:00:00Z"),
                &[(100, 10), (103, 3000)],
            ),
            entry("v3-tie", 4, Some("2024-03-01T00:00:00Z"), &[(104, 4)]),
            entry("v4", 5, Some("2024-04-01T00:00:00Z"), &[(105, 5)]),
            entry("nodate", 6, None, &[(106, 6)]),
            entry("alias-of-v4", 5, Some("2024-04-01T00:00:00Z"), &[(105, 5)]),
            entry(
                "old-alias-of-v2",
                2,
                Some("2024-02-01T00:00:00Z"),
                &[(100, 10), (102, 2000)],
            ),
        ];
        let uses = [ImageUse {
            kind: "Deployment",
            namespace: "default".to_string(),
            name: "web".to_string(),
            image: format!("kind-registry:5000/app@{}", digest(1)),
            node: None,
        }];
        let host = RegistryHost::parse("kind-registry:5000").unwrap();
        let usage = Usage::new(&uses, &[&host]);
        let plan = plan(&entries, Some(&usage), 2);
        let kept: Vec<(&str, Why)> = plan
            .kept
            .iter()
            .map(|k| (k.tag.as_str(), k.reason))
            .collect();
        // keep 2: v4 (and its alias) then the v3 tie; v1 is used; v2 goes.
        assert_eq!(
            kept,
            [
                ("alias-of-v4", Why::Newest),
                ("nodate", Why::NoCreatedTime),
                ("v1", Why::InUse),
                ("v3", Why::Newest),
                ("v3-tie", Why::Newest),
                ("v4", Why::Newest),
            ]
        );
        assert_eq!(plan.deletions.len(), 1);
        assert_eq!(plan.deletions[0].digest, digest(2));
        assert_eq!(plan.deletions[0].tags, ["old-alias-of-v2", "v2"]);
        // blob 100 is shared with kept tags: only v2's own layer is freed.
        assert_eq!(plan.unreferenced_bytes, 2000);
    }

    #[test]
    fn a_digest_a_kept_tag_points_at_is_never_deleted() {
        let entries = [
            entry("old", 1, Some("2024-01-01T00:00:00Z"), &[(100, 10)]),
            entry("new", 2, Some("2024-02-01T00:00:00Z"), &[(101, 10)]),
            // An older tag of the newest digest: ranked by the image, so it is as new.
            entry("dev", 2, Some("2024-02-01T00:00:00Z"), &[(101, 10)]),
        ];
        let plan = plan(&entries, None, 1);
        assert_eq!(plan.deletions.len(), 1);
        assert_eq!(plan.deletions[0].tags, ["old"]);
        let plan_zero = super::plan(&entries, None, 0);
        assert_eq!(plan_zero.kept.len(), 0);
        assert_eq!(plan_zero.deletions.len(), 2);
    }
}
