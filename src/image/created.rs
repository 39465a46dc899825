//! An image config's `created` time (RFC 3339, as Go writes it), read into a sortable instant
//! without a date library: seconds since the epoch and nanoseconds. The placeholders tools
//! write when they keep no time (Go's zero time `0001-01-01T00:00:00Z`, as cosign does; the
//! epoch and nix's epoch + 1 s, as reproducible builds do) are no time: never "the oldest".

/// Seconds since 1970-01-01T00:00:00Z and the nanoseconds after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Instant(i64, u32);

/// Times before this (the epoch's first day) stand for "unknown".
const PLACEHOLDERS_BEFORE: i64 = 86_400;

/// `2024-05-01T12:00:00Z`, `2024-05-01T12:00:00.123456789+02:00`; `None` for anything else,
/// and for a placeholder (a time before 1970-01-02).
pub(crate) fn parse(text: &str) -> Option<Instant> {
    read(text).filter(|instant| instant.0 >= PLACEHOLDERS_BEFORE)
}

/// Whether `text` is a time that stands for "unknown" (see [`PLACEHOLDERS_BEFORE`]).
pub(crate) fn is_placeholder(text: &str) -> bool {
    read(text).is_some_and(|instant| instant.0 < PLACEHOLDERS_BEFORE)
}

fn read(text: &str) -> Option<Instant> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || bytes[13] != b':' {
        return None;
    }
    if !matches!(bytes[10], b'T' | b't' | b' ') || bytes[16] != b':' {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut nanos = 0u32;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let kept = &fraction[..digits.min(9)];
        nanos = kept.parse::<u32>().ok()? * 10u32.pow(9 - kept.len() as u32);
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let zone = &rest[1..];
            if zone.len() != 5 || zone.as_bytes()[2] != b':' {
                return None;
            }
            let hours: i64 = zone[..2].parse().ok()?;
            let minutes: i64 = zone[3..].parse().ok()?;
            sign * (hours * 3600 + minutes * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some(Instant(seconds, nanos))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The `created` of an image config, when it has one that is a time: a missing one, Go's zero
/// time (cosign's `0001-01-01T00:00:00Z`) and the epoch (reproducible builds) are unknown.
pub(crate) fn created_of(config: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Config {
        created: Option<String>,
    }
    serde_json::from_slice::<Config>(config)
        .ok()
        .and_then(|config| config.created)
        .filter(|created| !created.is_empty() && !is_placeholder(created))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_times_parse_to_the_same_instant_whatever_the_zone() {
        assert_eq!(parse("1970-01-02T00:00:00Z"), Some(Instant(86_400, 0)));
        assert_eq!(
            parse("2024-05-01T12:00:00Z"),
            Some(Instant(1_714_564_800, 0))
        );
        assert_eq!(
            parse("2024-05-01T14:00:00+02:00"),
            parse("2024-05-01T12:00:00Z")
        );
        assert_eq!(
            parse("2024-05-01T12:00:00.5Z"),
            Some(Instant(1_714_564_800, 500_000_000))
        );
        assert!(parse("2024-05-01T12:00:00.000000001Z") > parse("2024-05-01T12:00:00Z"));
        assert_eq!(parse("2000-02-29T00:00:00Z"), Some(Instant(951_782_400, 0)));
    }

    #[test]
    fn the_zero_time_and_the_epoch_are_no_time() {
        for placeholder in [
            "0001-01-01T00:00:00Z",
            "1970-01-01T00:00:00Z",
            "1970-01-01T00:00:01Z",
            "1970-01-01T01:00:00+01:00",
        ] {
            assert_eq!(parse(placeholder), None, "{placeholder}");
            assert!(is_placeholder(placeholder), "{placeholder}");
        }
        assert!(!is_placeholder("2024-05-01T12:00:00Z"));
        assert!(!is_placeholder("yesterday"));
    }

    #[test]
    fn anything_else_is_no_time() {
        for bad in [
            "",
            "yesterday",
            "2024-05-01",
            "2024-13-01T00:00:00Z",
            "2024-05-01T12:00:00",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
