//! `ls`'s rows for a registry: one per tag of an image, with what belongs to its manifest
//! (signatures, attestations, referrers, an index's BuildKit attestations) listed under it rather
//! than as images of their own. A tag whose subject no tag here names stays a row of its own,
//! saying whose it is.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use super::Row;
use crate::image::digest::Digest;
use crate::inventory::{TagEntry, attestation_kind, root_subject, subjects};

/// Something that belongs to a row's manifest (`-o json`'s `attachments`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AttachmentRow {
    /// Its tag; `null` for a manifest inside the index (BuildKit's attestations).
    pub tag: Option<String>,
    pub digest: String,
    pub kind: String,
    pub size: u64,
}

/// The rows of `entries` (one repository's or many, in repository and tag order); `users` says
/// who uses a tag (`None`: the workloads could not be read).
pub(crate) fn registry_rows(
    mut entries: Vec<TagEntry>,
    users: impl Fn(&TagEntry) -> Option<Vec<String>>,
) -> Vec<Row> {
    // What belongs to a manifest goes under its first tag in name order.
    entries.sort_by(|a, b| (&a.repository, &a.tag).cmp(&(&b.repository, &b.tag)));
    let subject_of = subjects(&entries);
    // Where each manifest (and an index's platforms) is first shown: (repository, digest) -> row.
    let mut shown_at: HashMap<(&str, &Digest), usize> = HashMap::new();
    let mut rows: Vec<Row> = Vec::new();
    let mut described: BTreeSet<(&str, &Digest)> = BTreeSet::new();
    for entry in entries.iter().filter(|entry| entry.attached.is_none()) {
        let at = rows.len();
        let key = (entry.repository.as_str(), &entry.digest);
        let mut attachments = Vec::new();
        if described.insert(key) {
            attachments.extend(
                entry
                    .attestations
                    .iter()
                    .map(|(digest, subject)| AttachmentRow {
                        tag: None,
                        digest: digest.to_string(),
                        kind: attestation_kind(subject.as_ref()),
                        size: 0,
                    }),
            );
        }
        for digest in std::iter::once(&entry.digest).chain(&entry.children) {
            shown_at
                .entry((entry.repository.as_str(), digest))
                .or_insert(at);
        }
        rows.push(row(entry, users(entry), Some(attachments), None));
    }
    for entry in &entries {
        let Some(attached) = &entry.attached else {
            continue;
        };
        let root = root_subject(&attached.subject, &subject_of);
        match shown_at.get(&(entry.repository.as_str(), root)) {
            Some(&at) => {
                if let Some(list) = rows[at].attachments.as_mut() {
                    list.push(AttachmentRow {
                        tag: Some(entry.tag.clone()),
                        digest: entry.digest.to_string(),
                        kind: attached.kind.clone(),
                        size: entry.size,
                    });
                }
            }
            None => rows.push(row(entry, users(entry), Some(Vec::new()), Some(entry))),
        }
    }
    rows.sort_by(|a, b| (&a.repository, &a.tag).cmp(&(&b.repository, &b.tag)));
    for row in &mut rows {
        if let Some(list) = row.attachments.as_mut() {
            list.sort_by(|a, b| (&a.tag, &a.digest).cmp(&(&b.tag, &b.digest)));
        }
    }
    rows
}

fn row(
    entry: &TagEntry,
    in_use_by: Option<Vec<String>>,
    attachments: Option<Vec<AttachmentRow>>,
    orphan: Option<&TagEntry>,
) -> Row {
    let orphan = orphan.and_then(|entry| entry.attached.as_ref());
    Row {
        node: None,
        repository: entry.repository.clone(),
        tag: entry.tag.clone(),
        digest: entry.digest.to_string(),
        size: Some(entry.size),
        created: entry.created.clone(),
        in_use_by,
        attachments,
        attached_to: orphan.map(|attached| attached.subject.to_string()),
        kind: orphan.map(|attached| attached.kind.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::attached;

    fn entry(tag: &str, digest: &Digest) -> TagEntry {
        TagEntry {
            repository: "app".to_string(),
            tag: tag.to_string(),
            digest: digest.clone(),
            size: 1,
            created: None,
            children: Vec::new(),
            blobs: Default::default(),
            attached: attached(tag, None),
            attestations: Vec::new(),
        }
    }

    #[test]
    fn attachments_go_under_their_image_following_chains_and_orphans_stay_rows() {
        let image = Digest::of_bytes(b"image");
        let signature = Digest::of_bytes(b"signature");
        let nowhere = Digest::of_bytes(b"nowhere");
        let entries = vec![
            entry("v1", &image),
            entry("latest", &image),
            entry(&format!("sha256-{}.sig", image.hex()), &signature),
            // A signature of the signature: still the image's.
            entry(
                &format!("sha256-{}.sig", signature.hex()),
                &Digest::of_bytes(b"sig of sig"),
            ),
            entry(
                &format!("sha256-{}.att", nowhere.hex()),
                &Digest::of_bytes(b"orphan"),
            ),
        ];
        let rows = registry_rows(entries, |_| Some(Vec::new()));
        let shown: Vec<(&str, usize, Option<&str>)> = rows
            .iter()
            .map(|row| {
                (
                    row.tag.as_str(),
                    row.attachments.as_ref().map_or(0, Vec::len),
                    row.attached_to.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("latest", 2, None),
                (
                    format!("sha256-{}.att", nowhere.hex()).as_str(),
                    0,
                    Some(nowhere.as_str())
                ),
                ("v1", 0, None),
            ]
        );
    }
}
