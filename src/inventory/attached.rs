//! What a registry holds besides images, and whose it is: cosign's tags named after the digest
//! they sign (`sha256-<hex>.sig`, `.att`, `.sbom`), OCI 1.1 referrers (a manifest with a
//! `subject`, and the referrers tag schema's `sha256-<hex>` index listing them), Notation's
//! signatures among them, and BuildKit's attestation manifests inside an index. Each belongs to
//! its subject: listed under it, kept while it is kept, deleted with it. Pure.

use std::collections::HashMap;

use crate::image::digest::Digest;
use crate::image::oci::{ManifestOrIndex, describe_artifact};

/// Notation's `artifactType` (notaryproject specifications, signature storage).
const NOTATION_SIGNATURE: &str = "application/vnd.cncf.notary.signature";

/// A tag that belongs to another manifest, its subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attached {
    pub subject: Digest,
    /// For people: `cosign signature`, `Notation signature (application/vnd.cncf.notary.signature)`.
    pub kind: String,
    /// An OCI referrers-tag index: the referrers it lists, which go with it.
    pub listed: Vec<Digest>,
}

/// The subject of a tag named by convention: `sha256-<hex>` (the OCI 1.1 referrers tag schema)
/// or `sha256-<hex>.<suffix>` (cosign's), and the suffix.
fn named_after_digest(tag: &str) -> Option<(Digest, Option<&str>)> {
    let rest = tag.strip_prefix("sha256-")?;
    let (hex, suffix) = match rest.split_once('.') {
        Some((hex, suffix)) => (hex, Some(suffix)),
        None => (rest, None),
    };
    let digest = format!("sha256:{hex}").parse().ok()?;
    Some((digest, suffix))
}

/// Whose `tag` is, from its name and its manifest; `None` for an image of its own.
pub(crate) fn attached(tag: &str, manifest: Option<&ManifestOrIndex>) -> Option<Attached> {
    if let Some(subject) = manifest.and_then(ManifestOrIndex::subject_digest) {
        return Some(Attached {
            subject,
            kind: referrer_kind(manifest?),
            listed: Vec::new(),
        });
    }
    let (subject, suffix) = named_after_digest(tag)?;
    let (kind, listed) = match (suffix, manifest) {
        (Some("sig"), _) => ("cosign signature".to_string(), Vec::new()),
        (Some("att"), _) => ("cosign attestation".to_string(), Vec::new()),
        (Some("sbom"), _) => ("cosign SBOM".to_string(), Vec::new()),
        (Some(other), _) => (format!("attachment (.{other})"), Vec::new()),
        (None, Some(index)) if index.is_index() => referrers_index(index),
        (None, _) => (
            "attachment (tagged by its subject's digest)".to_string(),
            Vec::new(),
        ),
    };
    Some(Attached {
        subject,
        kind,
        listed,
    })
}

/// The referrers tag schema's index: what it lists, and the kinds of those.
fn referrers_index(index: &ManifestOrIndex) -> (String, Vec<Digest>) {
    let mut kinds: Vec<String> = index
        .children()
        .iter()
        .map(|child| match child.artifact_type.as_deref() {
            Some(NOTATION_SIGNATURE) => format!("Notation signature ({NOTATION_SIGNATURE})"),
            Some(artifact_type) => describe_artifact(artifact_type),
            None => "referrer".to_string(),
        })
        .collect();
    kinds.dedup();
    let listed = index
        .children()
        .iter()
        .map(|child| child.digest.clone())
        .collect();
    let kind = if kinds.is_empty() {
        "OCI referrers index (empty)".to_string()
    } else {
        format!("OCI referrers index: {}", kinds.join(", "))
    };
    (kind, listed)
}

/// What a manifest with a `subject` is, by its `artifactType`, else its config's type (which
/// notation 1.0's `--image-spec v1.1-image` sets to the signature's type instead).
fn referrer_kind(manifest: &ManifestOrIndex) -> String {
    let config_type = manifest
        .config
        .as_ref()
        .and_then(|config| config.media_type.as_deref());
    match manifest.artifact_type.as_deref().or(config_type) {
        Some(NOTATION_SIGNATURE) => format!("Notation signature ({NOTATION_SIGNATURE})"),
        Some(artifact_type) => format!("referrer: {}", describe_artifact(artifact_type)),
        None => match manifest.artifact_kind() {
            Some(kind) => format!("referrer: {kind}"),
            None => "referrer".to_string(),
        },
    }
}

/// A BuildKit attestation inside an index, for `ls`: the platform manifest it describes.
pub(crate) fn attestation_kind(subject: Option<&Digest>) -> String {
    match subject {
        Some(subject) => format!("BuildKit attestation of {}", subject.short()),
        None => "BuildKit attestation".to_string(),
    }
}

/// Subjects followed from an attachment to the image it belongs to (a signature of an
/// attestation of an image); deeper chains stop here.
const MAX_CHAIN: usize = 4;

/// The image a subject belongs to, following attachments of attachments: `subject` itself when
/// it is no attachment's digest.
pub(crate) fn root_subject<'a>(
    subject: &'a Digest,
    subject_of: &HashMap<&'a Digest, &'a Digest>,
) -> &'a Digest {
    let mut at = subject;
    for _ in 0..MAX_CHAIN {
        match subject_of.get(at) {
            Some(next) => at = next,
            None => break,
        }
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::oci::parse_manifest;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn digest() -> Digest {
        format!("sha256:{HEX}").parse().unwrap()
    }

    #[test]
    fn cosign_tags_belong_to_the_digest_they_are_named_after() {
        for (suffix, kind) in [
            ("sig", "cosign signature"),
            ("att", "cosign attestation"),
            ("sbom", "cosign SBOM"),
        ] {
            let found = attached(&format!("sha256-{HEX}.{suffix}"), None).unwrap();
            assert_eq!((found.subject, found.kind.as_str()), (digest(), kind));
        }
        assert_eq!(attached("v1", None), None);
        assert_eq!(attached("sha256-abc.sig", None), None, "not a digest");
    }

    #[test]
    fn a_subject_or_the_referrers_tag_names_the_subject() {
        let signature = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",
            "artifactType":"{NOTATION_SIGNATURE}","config":{{"mediaType":"application/vnd.oci.empty.v1+json",
            "digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2}},
            "layers":[],"subject":{{"mediaType":"application/vnd.oci.image.manifest.v1+json",
            "digest":"sha256:{HEX}","size":7}}}}"#
        );
        let parsed = parse_manifest(signature.as_bytes()).unwrap();
        let found = attached("whatever", Some(&parsed)).unwrap();
        assert_eq!(found.subject, digest());
        assert!(
            found.kind.starts_with("Notation signature"),
            "{}",
            found.kind
        );
        let index = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
            {{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:{HEX}","size":1,
              "artifactType":"{NOTATION_SIGNATURE}"}}]}}"#
        );
        let parsed = parse_manifest(index.as_bytes()).unwrap();
        let found = attached(&format!("sha256-{HEX}"), Some(&parsed)).unwrap();
        assert_eq!(found.listed, [digest()]);
        assert!(found.kind.contains("Notation signature"), "{}", found.kind);
    }
}
