//! The engines' own TOML config files (podman's storage.conf, nerdctl.toml), read with `toml`
//! into the few keys we need, and whether we run as root (which of those files the engine reads).

use serde::de::DeserializeOwned;

/// The keys `T` names, read from `text`; `T`'s default (every key unset) when `text` is not
/// TOML, as the engine would not read it either.
pub(super) fn read<T: DeserializeOwned + Default>(text: &str) -> T {
    toml::from_str(text).unwrap_or_default()
}

/// Root in the sense the engines mean (effective uid 0): which of their config files they read.
#[cfg(unix)]
pub(super) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(not(unix))]
pub(super) fn is_root() -> bool {
    false
}
