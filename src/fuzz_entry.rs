//! The fuzz targets' way in (`fuzz/`, built only under `cargo fuzz`: `cfg(fuzzing)`): each
//! function hands arbitrary bytes to the parsers the tool runs on outside input, through the same
//! entry points it calls, and checks what they promise beyond not panicking: what we write reads
//! back equal, and an error quotes what came from outside shortened. The parsers stay private to
//! their modules; their modules lend them here (`fuzzing` re-exports, `pub(crate)` at most).

mod cluster;
mod engines;
mod image;
mod registry;

pub use cluster::{hosting, kubeconfig, portforward_frames};
pub use engines::{containerd, engine_api, engine_conf, tar_split};
pub use image::{archive, oci_json, reference};
pub use registry::{auth, docker_config, registry_answers};

use crate::plumbing::error::Error;

/// The most an error's text may hold when it quotes a value from outside: a few shortened
/// values and our own words, never the value whole.
const ERROR_TEXT_LIMIT: usize = 4096;

/// An error's message, causes and hints, as the user would read them, are not a flood.
fn assert_bounded(error: &Error) {
    let text = error.with_causes();
    let hints: usize = error.hints().iter().map(|hint| hint.len()).sum();
    assert!(
        text.len() + hints <= ERROR_TEXT_LIMIT,
        "an error of {} bytes: {}...",
        text.len() + hints,
        text.chars().take(300).collect::<String>()
    );
}

/// The input split into up to `n` fields at NUL bytes (the rest stays in the last), each as
/// text; `None` when a field is not UTF-8.
fn fields(data: &[u8], n: usize) -> Option<Vec<&str>> {
    data.splitn(n, |&b| b == 0)
        .map(|field| std::str::from_utf8(field).ok())
        .collect()
}
