//! The engines' own TOML config files (podman's storage.conf, nerdctl.toml), read for the few
//! string keys we need, and whether we run as root (which of those files the engine reads).

/// The string values of `keys` at the top of a TOML file (before any `[table]`).
pub(super) fn top_level_strings<const N: usize>(
    text: &str,
    keys: [&str; N],
) -> [Option<String>; N] {
    let mut found = [const { None }; N];
    for line in text.lines() {
        let line = strip_comment(line).trim();
        if line.starts_with('[') {
            break;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if let Some(at) = keys.iter().position(|k| *k == key.trim()) {
            found[at] = string(value);
        }
    }
    found
}

/// Root in the sense the engines mean (effective uid 0), read from /proc: which of their
/// config files they read.
pub(super) fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

pub(super) fn strip_comment(line: &str) -> &str {
    // Good enough for paths and driver names: a `#` inside a quoted value is not expected.
    line.split_once('#').map_or(line, |(before, _)| before)
}

pub(super) fn string(value: &str) -> Option<String> {
    let value = value.trim();
    let quoted = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')));
    quoted.map(str::to_string)
}

pub(super) fn strings(value: &str) -> Vec<String> {
    let inner = value.trim().trim_start_matches('[').trim_end_matches(']');
    inner.split(',').filter_map(string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_keys_are_read_and_tables_end_them() {
        let text = "# nerdctl.toml\naddress = \"unix:///run/k3s/containerd/containerd.sock\" # k3s\nnamespace='k8s.io'\n[hosts]\nnamespace = \"other\"\n";
        assert_eq!(
            top_level_strings(text, ["address", "namespace", "snapshotter"]),
            [
                Some("unix:///run/k3s/containerd/containerd.sock".to_string()),
                Some("k8s.io".to_string()),
                None
            ]
        );
    }
}
