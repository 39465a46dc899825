//! Choosing the image (`--image`) and platform (`--platform`) to push, refusing ambiguity with
//! a list of what the archive holds.

use super::Archive;
use super::error::ArchiveError;
use super::image::Image;
use super::names::same_image;
use super::platform::Platform;

impl Archive {
    /// The image named `image` (docker's normalisation: `myimg` is
    /// `docker.io/library/myimg:latest`; a bare OCI tag matches too), or the only image.
    /// With `platform`, only the first platform that satisfies it is kept; without, every
    /// platform whose blobs are present.
    pub fn select(
        &self,
        image: Option<&str>,
        platform: Option<&str>,
    ) -> Result<Image, ArchiveError> {
        let wanted_platform = platform.map(str::parse::<Platform>).transpose()?;
        let mut chosen = self.choose_image(image)?.clone();
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
            let keep = chosen.platforms.swap_remove(position);
            if !chosen.platforms.is_empty() || !chosen.absent_platforms.is_empty() {
                chosen.index = None;
            }
            chosen.platforms = vec![keep];
            chosen.absent_platforms.clear();
        }
        Ok(chosen)
    }

    fn choose_image(&self, wanted: Option<&str>) -> Result<&Image, ArchiveError> {
        let images = self.images();
        let Some(wanted) = wanted else {
            return match images {
                [only] => Ok(only),
                _ => Err(ArchiveError::Ambiguous {
                    archive: self.name().to_string(),
                    images: images.iter().map(Image::label).collect(),
                }),
            };
        };
        let matching: Vec<&Image> = images
            .iter()
            .filter(|image| {
                image.names.iter().any(|name| same_image(name, wanted))
                    || image.bare_tags.iter().any(|tag| tag == wanted)
            })
            .collect();
        match matching.as_slice() {
            [only] => Ok(only),
            [] => Err(ArchiveError::NoSuchImage {
                archive: self.name().to_string(),
                wanted: wanted.to_string(),
                images: images.iter().map(Image::label).collect(),
            }),
            several => Err(ArchiveError::Ambiguous {
                archive: self.name().to_string(),
                images: several.iter().map(|image| image.label()).collect(),
            }),
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
