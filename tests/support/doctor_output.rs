//! What changes between runs of `doctor` and is redacted before its output is pinned.

/// `answered in 12 ms` -> `answered in N ms`, `sha256:96e66b1e3211…` -> `sha256:DIGEST…`: the
/// time changes between runs, the probe's digest with the machine's architecture.
pub(crate) fn redact_timing(text: &str) -> String {
    let mut text = text.to_string();
    for (mark, len, with) in [
        ("answered in ", None, "N"),
        ("digest sha256:", Some(12), "DIGEST"),
    ] {
        let Some(start) = text.find(mark).map(|i| i + mark.len()) else {
            continue;
        };
        let end = start
            + len.unwrap_or_else(|| text[start..].bytes().take_while(u8::is_ascii_digit).count());
        text.replace_range(start..end, with);
    }
    text
}
