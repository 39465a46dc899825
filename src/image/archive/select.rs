//! Choosing the image (`--image`: a name, a tag, or a digest or unique prefix of one) and the
//! platform (`--platform`) to push, refusing ambiguity with a list of what the archive holds.

use super::Archive;
use super::error::ArchiveError;
use super::formats::oci;
use super::image::{DropReason, Dropped, Image, OtherEntry, OtherKind};
use crate::image::digest::Digest;
use crate::image::oci::Platform;
use crate::image::reference::selects;

/// A digest prefix shorter than this is too likely to be a name that matched nothing.
const MIN_DIGEST_PREFIX: usize = 4;

impl Archive {
    /// The image `wanted` names, or the only image. Names match as a push would name them
    /// (`myimg:dev` is `docker.io/library/myimg:dev` and podman's `localhost/myimg:dev`); a
    /// bare OCI tag matches too; failing that, a digest or unique digest prefix of the image's
    /// index, manifests or configs. With `platform`, only the first platform that satisfies
    /// it is kept; without, every platform whose blobs are present.
    pub fn select(
        &self,
        wanted: Option<&str>,
        platform: Option<&str>,
    ) -> Result<Image, ArchiveError> {
        let wanted_platform = platform.map(str::parse::<Platform>).transpose()?;
        let mut chosen = self.choose_image(wanted)?;
        if chosen.platforms.is_empty() {
            return Err(ArchiveError::NoPlatformPresent {
                archive: self.name().to_string(),
                image: chosen.label(),
                absent: chosen
                    .absent_platforms
                    .iter()
                    .map(|absent| {
                        let platform = absent
                            .platform
                            .as_ref()
                            .map_or_else(|| absent.manifest.to_string(), ToString::to_string);
                        format!("{platform}: {} is missing", absent.missing)
                    })
                    .collect(),
            });
        }
        if let Some(wanted) = wanted_platform {
            let Some(position) = chosen
                .platforms
                .iter()
                .position(|candidate| candidate.platform.satisfies(&wanted))
            else {
                return Err(self.no_such_platform(&chosen, &wanted));
            };
            let keep = chosen.platforms.remove(position);
            let left_out: Vec<Dropped> = chosen
                .platforms
                .drain(..)
                .map(|other| Dropped {
                    what: other.platform.to_string(),
                    why: DropReason::PlatformChosen,
                })
                .collect();
            if !left_out.is_empty() || !chosen.absent_platforms.is_empty() {
                chosen.index = None;
                chosen.dropped.extend(left_out);
                oci::drop_attachments(&mut chosen, DropReason::PlatformChosen);
            }
            chosen.platforms = vec![keep];
            chosen.absent_platforms.clear();
        }
        Ok(chosen)
    }

    fn choose_image(&self, wanted: Option<&str>) -> Result<Image, ArchiveError> {
        let Some(wanted) = wanted else {
            if self.images().is_empty() {
                return Err(self.no_image());
            }
            let unreadable = self
                .others
                .iter()
                .any(|other| matches!(other.kind, OtherKind::Unreadable(_)));
            return match self.images() {
                [only] if !unreadable => Ok(only.clone()),
                images => Err(self.ambiguous(images.iter().collect(), &self.others)),
            };
        };
        let by_name = |names: &[String], tags: &[String]| {
            names.iter().any(|name| selects(name, wanted)) || tags.iter().any(|tag| tag == wanted)
        };
        let mut images: Vec<&Image> = self
            .images()
            .iter()
            .filter(|image| by_name(&image.names, &image.bare_tags))
            .collect();
        let mut others: Vec<&OtherEntry> = self
            .others
            .iter()
            .filter(|other| by_name(&other.names, &other.bare_tags))
            .collect();
        if images.is_empty()
            && others.is_empty()
            && let Some(prefix) = digest_prefix(wanted)
        {
            images = self
                .images()
                .iter()
                .filter(|image| ids(image).any(|id| id.hex().starts_with(prefix)))
                .collect();
            others = self
                .others
                .iter()
                .filter(|other| other.digest.hex().starts_with(prefix))
                .collect();
        }
        match (images.as_slice(), others.as_slice()) {
            ([only], []) => Ok((*only).clone()),
            ([], [other]) => oci::image_of(&self.container, other),
            ([], []) => Err(ArchiveError::NoSuchImage {
                archive: self.name().to_string(),
                wanted: wanted.to_string(),
                images: self.images().iter().map(Image::label).collect(),
                others: self.others.iter().map(OtherEntry::label).collect(),
            }),
            _ => Err(self.ambiguous(images, &others.into_iter().cloned().collect::<Vec<_>>())),
        }
    }

    /// An archive without an image, none having been named: why its one entry is not one, or
    /// what each of its entries is.
    fn no_image(&self) -> ArchiveError {
        if let [only] = self.others.as_slice() {
            return match oci::image_of(&self.container, only) {
                Err(err) => err,
                Ok(_) => ArchiveError::NoImages {
                    archive: self.name().to_string(),
                    looks_truncated: self.container.looks_truncated(),
                    others: vec![only.label()],
                },
            };
        }
        ArchiveError::NoImages {
            archive: self.name().to_string(),
            looks_truncated: self.container.looks_truncated(),
            others: self.others.iter().map(OtherEntry::label).collect(),
        }
    }

    fn ambiguous(&self, images: Vec<&Image>, others: &[OtherEntry]) -> ArchiveError {
        let artifacts = others
            .iter()
            .filter(|other| matches!(other.kind, OtherKind::Artifact(_)))
            .count();
        let labels: Vec<String> = images.iter().map(|image| image.label()).collect();
        let same_names = (1..labels.len()).any(|i| labels[..i].contains(&labels[i]));
        let labels = if same_names {
            images.iter().map(|image| image.label_with_id()).collect()
        } else {
            labels
        };
        ArchiveError::Ambiguous {
            archive: self.name().to_string(),
            images: labels,
            artifacts,
            unreadable: others.len() - artifacts,
            others: others.iter().map(OtherEntry::label).collect(),
        }
    }

    fn no_such_platform(&self, image: &Image, wanted: &Platform) -> ArchiveError {
        let absent = image.absent_platforms.iter().filter_map(|absent| {
            absent
                .platform
                .as_ref()
                .map(|platform| format!("{platform} (blobs not in the archive)"))
        });
        ArchiveError::NoSuchPlatform {
            archive: self.name().to_string(),
            image: image.label(),
            wanted: wanted.to_string(),
            platforms: image.platform_names().into_iter().chain(absent).collect(),
        }
    }
}

/// Every digest an image answers to: its index's, and each platform's manifest and config
/// (the config digest is the image ID docker and podman print).
fn ids(image: &Image) -> impl Iterator<Item = &Digest> {
    let platforms = image.platforms.iter().flat_map(|platform| {
        platform
            .manifest
            .iter()
            .map(|manifest| &manifest.digest)
            .chain([&platform.config.digest])
    });
    image
        .index
        .iter()
        .map(|index| &index.digest)
        .chain(platforms)
}

/// The hex of `sha256:<hex>` or a bare hex string long enough to mean a digest prefix.
fn digest_prefix(wanted: &str) -> Option<&str> {
    let hex = wanted.strip_prefix("sha256:").unwrap_or(wanted);
    let is_hex = hex
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    (is_hex && (MIN_DIGEST_PREFIX..=64).contains(&hex.len())).then_some(hex)
}
