//! Reading `ctr images check`: whether a node holds an image under given names, every blob
//! present and unpacked into its snapshotter.

use crate::image::digest::Digest;

/// True when `output` (`ctr images check` with name filters) lists every one of `names`
/// pointing at `manifest`, complete and unpacked.
pub(super) fn image_ready(output: &str, names: &[String], manifest: &Digest) -> bool {
    names.iter().all(|name| {
        output
            .lines()
            .skip(1)
            .any(|line| row_is_ready(line, name, manifest))
    })
}

/// `REF TYPE DIGEST STATUS SIZE UNPACKED`, where STATUS (`complete (4/4)`) and SIZE
/// (`1.2 MiB/1.2 MiB`) hold spaces: the first three words and the last one are safe.
fn row_is_ready(line: &str, name: &str, manifest: &Digest) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        [reference, _, digest, status, .., unpacked] => {
            *reference == name
                && *digest == manifest.as_str()
                && *status == "complete"
                && *unpacked == "true"
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str =
        "sha256:0948b4542753c8021ae78c55ec164246fc653cd526e3fe73ce4db9cd9a80a15d";

    fn output(rows: &[(&str, &str, &str)]) -> String {
        let mut text = "REF TYPE DIGEST STATUS SIZE UNPACKED \n".to_string();
        for (name, status, unpacked) in rows {
            text.push_str(&format!(
                "{name} application/vnd.oci.image.manifest.v1+json {MANIFEST} {status} 100.3 KiB/300.3 KiB {unpacked}\n"
            ));
        }
        text
    }

    #[test]
    fn ready_needs_every_name_complete_and_unpacked() {
        let manifest: Digest = MANIFEST.parse().unwrap();
        let names = [
            "docker.io/library/a:1".to_string(),
            "docker.io/library/a:2".to_string(),
        ];
        let both = output(&[
            ("docker.io/library/a:1", "complete (4/4)", "true"),
            ("docker.io/library/a:2", "complete (4/4)", "true"),
        ]);
        assert!(image_ready(&both, &names, &manifest));
        let one = output(&[("docker.io/library/a:1", "complete (4/4)", "true")]);
        assert!(!image_ready(&one, &names, &manifest));
        let incomplete = output(&[
            ("docker.io/library/a:1", "incomplete (2/4)", "false"),
            ("docker.io/library/a:2", "complete (4/4)", "true"),
        ]);
        assert!(!image_ready(&incomplete, &names, &manifest));
        let packed = output(&[
            ("docker.io/library/a:1", "complete (4/4)", "false"),
            ("docker.io/library/a:2", "complete (4/4)", "true"),
        ]);
        assert!(!image_ready(&packed, &names, &manifest));
        let other: Digest = Digest::of_bytes(b"x");
        assert!(!image_ready(&both, &names, &other));
    }
}
