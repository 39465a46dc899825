//! What an image is pushed as: `--tag`, else the name the archive records or the user typed,
//! else the one name the engine knows an image ID by; and what of an archive's index a push
//! leaves out, said.

use crate::image::archive::{self, Image};
use crate::image::engine;
use crate::image::reference::{IdNames, ImageName, id_names};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;

/// What the archive's index names that this push leaves out: platforms whose blobs are absent
/// (routine in containerd-store exports, so a note rather than a warning), platforms
/// `--platform` did not choose, and manifests attached to an index that is rewritten.
pub(crate) fn tell_left_out(image: &Image, printer: &Printer) {
    let absent = image.absent_platforms.iter().map(|absent| {
        let platform = absent
            .platform
            .as_ref()
            .map_or_else(|| absent.manifest.to_string(), ToString::to_string);
        format!("{platform} (its blobs are not in the archive)")
    });
    let dropped = image.dropped.iter().map(|dropped| match dropped.why {
        archive::DropReason::NotInArchive => dropped.what.clone(),
        archive::DropReason::PlatformChosen => {
            format!("{} (not the platform chosen)", dropped.what)
        }
    });
    let left_out: Vec<String> = absent.chain(dropped).collect();
    if !left_out.is_empty() {
        printer.status(&format!("leaving out: {}", left_out.join(", ")));
    }
}

/// `--tag`, else the reference as typed (what the user calls the image), else, when they typed
/// an image ID, the one name the engine knows it by (several: `--tag` must say which).
pub(crate) fn engine_image_name(
    tag_flag: Option<&str>,
    found: &engine::Found,
) -> Result<ImageName> {
    let typed_id = found.image.starts_with("sha256:")
        || (found.image.len() >= 12 && found.image.chars().all(|c| c.is_ascii_hexdigit()));
    let names = || id_names(&found.facts.repo_tags);
    let (raw, from, exit) = match (tag_flag, typed_id) {
        (Some(flag), _) => (flag, "--tag", ExitCode::Usage),
        (None, false) => (found.image.as_str(), "the command line", ExitCode::Input),
        (None, true) => match names() {
            IdNames::One(name) => (name, "the engine", ExitCode::Input),
            IdNames::Several(names) => return Err(several_names(found, &names)),
            IdNames::None => {
                return Err(Error::new(
                    ExitCode::Input,
                    format!(
                        "the image {} has no name in {}",
                        found.image,
                        found.describe()
                    ),
                )
                .with_hint("name it with --tag NAME[:TAG], e.g. --tag myimg:dev"));
            }
        },
    };
    ImageName::parse(raw).map_err(|err| {
        Error::new(exit, format!("the image name from {from} is not usable"))
            .with_source(err)
            .with_hint("pass a valid name with --tag NAME[:TAG]")
    })
}

/// An image ID typed without `--tag` whose image has several names: each would land elsewhere.
fn several_names(found: &engine::Found, names: &[&str]) -> Error {
    Error::new(
        ExitCode::Usage,
        format!(
            "the image {} has {} names in {} ({}); an ID does not say which one to push as",
            found.image,
            names.len(),
            found.describe(),
            names.join(", ")
        ),
    )
    .with_hint(format!(
        "say which with --tag NAME[:TAG], e.g. --tag {}, or push it by that name",
        names[0]
    ))
}

/// `--tag`, else the first name the archive records; an unnamed image needs `--tag`. A bad
/// `--tag` is the command line's fault (usage), a bad recorded name the input's.
pub(crate) fn image_name(tag_flag: Option<&str>, image: &Image) -> Result<ImageName> {
    let (raw, from, exit) = match (tag_flag, image.names.first()) {
        (Some(flag), _) => (flag, "--tag", ExitCode::Usage),
        (None, Some(recorded)) => (recorded.as_str(), "the archive", ExitCode::Input),
        (None, None) => {
            return Err(Error::new(
                ExitCode::Input,
                format!("the archive does not name its image ({})", image.label()),
            )
            .with_hint("name it with --tag NAME[:TAG], e.g. --tag myimg:dev"));
        }
    };
    ImageName::parse(raw).map_err(|err| {
        Error::new(exit, format!("the image name from {from} is not usable"))
            .with_source(err)
            .with_hint("pass a valid name with --tag NAME[:TAG]")
    })
}
