//! Which name an image typed by its ID is pushed under: an engine knows one image by every tag it
//! was given, and only one of them can be meant. Pure.

use super::{ImageName, Target};

/// The names an engine knows an image ID by, as a push may take them.
#[derive(Debug, PartialEq, Eq)]
pub enum IdNames<'a> {
    /// No name at all: `--tag` must give one.
    None,
    /// One name (or several spellings that land as the same repository and tag): use it.
    One(&'a str),
    /// Names that land in different places: which one is meant is the user's to say.
    Several(Vec<&'a str>),
}

/// Reads an image's `RepoTags` (docker's and podman's): `<none>:<none>` is no name, and names
/// that land as the same repository and tag (`localhost/app:v1`, `app:v1`) are one.
pub fn id_names(repo_tags: &[String]) -> IdNames<'_> {
    let mut kept: Vec<(&str, Option<Target>)> = Vec::new();
    for raw in repo_tags.iter().map(String::as_str) {
        if raw.starts_with("<none>") {
            continue;
        }
        let lands = ImageName::parse(raw)
            .ok()
            .map(|name| Target::for_name(&name, &[]));
        let same = |(seen, seen_lands): &(&str, Option<Target>)| match (&lands, seen_lands) {
            (Some(a), Some(b)) => a == b,
            _ => *seen == raw,
        };
        if !kept.iter().any(same) {
            kept.push((raw, lands));
        }
    }
    match kept.as_slice() {
        [] => IdNames::None,
        [(only, _)] => IdNames::One(only),
        _ => IdNames::Several(kept.into_iter().map(|(raw, _)| raw).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(raw: &[&str]) -> Vec<String> {
        raw.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn one_name_is_taken_and_spellings_of_one_place_are_one_name() {
        assert_eq!(id_names(&names(&["app:v1"])), IdNames::One("app:v1"));
        let spellings = names(&["localhost/app:v1", "docker.io/library/app:v1", "app:v1"]);
        assert_eq!(id_names(&spellings), IdNames::One("localhost/app:v1"));
        assert_eq!(id_names(&names(&["<none>:<none>"])), IdNames::None);
        assert_eq!(id_names(&[]), IdNames::None);
    }

    #[test]
    fn names_that_land_apart_are_all_listed() {
        let two = names(&["app:v1", "app:latest", "<none>:<none>", "other/app:v1"]);
        assert_eq!(
            id_names(&two),
            IdNames::Several(vec!["app:v1", "app:latest", "other/app:v1"])
        );
    }
}
