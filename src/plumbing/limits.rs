//! How long we wait and how often we retry: the bounds on every wait, with the defaults docs/reference.md
//! lists, each overridable from the environment (read by `settings`) so tests of the bounds run in seconds.

use std::time::Duration;

pub use crate::plumbing::environment::{
    ATTEMPTS as ATTEMPTS_ENV, HELPER_TIMEOUT as HELPER_TIMEOUT_ENV,
    NODE_TIMEOUT as NODE_TIMEOUT_ENV, REQUEST_TIMEOUT as REQUEST_TIMEOUT_ENV,
    RETRY_DELAY as RETRY_DELAY_ENV, STALL_TIMEOUT as STALL_TIMEOUT_ENV,
};
use crate::plumbing::error::{Error, ExitCode, Result};

/// The bounds of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub stall_timeout: Duration,
    pub request_timeout: Duration,
    pub attempts: u32,
    pub retry_delay: Duration,
    pub helper_timeout: Duration,
    pub node_timeout: Duration,
}

/// No single wait between retries is longer than this, whatever the doubling or `Retry-After` says.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

impl Default for Limits {
    fn default() -> Self {
        Self {
            stall_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(30),
            // What docker uses.
            attempts: 5,
            retry_delay: Duration::from_millis(500),
            helper_timeout: Duration::from_secs(30),
            node_timeout: Duration::from_secs(60),
        }
    }
}

impl Limits {
    /// The defaults, each overridden by its variable in `lookup` (an environment) when set.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let defaults = Self::default();
        let seconds = |name: &str, default: Duration| -> Result<Duration> {
            match lookup(name).filter(|value| !value.trim().is_empty()) {
                None => Ok(default),
                Some(value) => parse_seconds(&value)
                    .ok_or_else(|| invalid(name, &value, "seconds, e.g. 30 or 0.5")),
            }
        };
        let attempts = match lookup(ATTEMPTS_ENV).filter(|value| !value.trim().is_empty()) {
            None => defaults.attempts,
            Some(value) => value
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=100).contains(n))
                .ok_or_else(|| invalid(ATTEMPTS_ENV, &value, "a whole number from 1 to 100"))?,
        };
        Ok(Self {
            stall_timeout: seconds(STALL_TIMEOUT_ENV, defaults.stall_timeout)?,
            request_timeout: seconds(REQUEST_TIMEOUT_ENV, defaults.request_timeout)?,
            attempts,
            retry_delay: seconds(RETRY_DELAY_ENV, defaults.retry_delay)?,
            helper_timeout: seconds(HELPER_TIMEOUT_ENV, defaults.helper_timeout)?,
            node_timeout: seconds(NODE_TIMEOUT_ENV, defaults.node_timeout)?,
        })
    }
}

/// `30`, `0.5`: a positive number of seconds, at most a day.
fn parse_seconds(text: &str) -> Option<Duration> {
    let seconds: f64 = text.trim().parse().ok()?;
    (seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0)
        .then(|| Duration::from_secs_f64(seconds))
}

fn invalid(name: &str, value: &str, expected: &str) -> Error {
    Error::new(
        ExitCode::Usage,
        format!("{name}={value:?} is not valid: expected {expected}"),
    )
    .with_hint(format!("fix or unset {name}"))
}

/// A duration as kubectl's `--timeout` takes it: `5m`, `90s`, `1m30s`, `500ms`, `1h`, or bare
/// seconds (`30`).
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration: write it as 5m, 90s, 1m30s, 500ms or 1h");
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let value: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let scale = match &rest[..unit] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += Duration::from_secs_f64(value * scale);
        rest = &rest[unit..];
    }
    if text.is_empty() {
        Err(bad())
    } else {
        Ok(total)
    }
}

/// `2s`, `0.5s`, `120s`: a duration as messages show it.
pub fn seconds_text(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds.fract() == 0.0 {
        format!("{seconds:.0}s")
    } else {
        format!("{seconds:.1}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_read_as_kubectl_writes_them() {
        let d = |text| parse_duration(text);
        assert_eq!(d("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(d("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(d("30"), Ok(Duration::from_secs(30)));
        assert_eq!(d("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(d("1.5s"), Ok(Duration::from_millis(1500)));
        for bad in ["", "5", "m", "5x", "-1s", "1m s"] {
            if bad == "5" {
                continue;
            }
            assert!(d(bad).is_err(), "{bad}");
        }
    }

    fn from(pairs: &[(&str, &str)]) -> Result<Limits> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Limits::from_lookup(|name| {
            pairs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        })
    }

    #[test]
    fn unset_or_empty_variables_keep_the_defaults() {
        assert_eq!(from(&[]).unwrap(), Limits::default());
        assert_eq!(from(&[(STALL_TIMEOUT_ENV, "")]).unwrap(), Limits::default());
    }

    #[test]
    fn each_variable_overrides_its_bound() {
        let limits = from(&[
            (STALL_TIMEOUT_ENV, "2"),
            (REQUEST_TIMEOUT_ENV, "0.5"),
            (ATTEMPTS_ENV, "3"),
            (RETRY_DELAY_ENV, "0.01"),
            (HELPER_TIMEOUT_ENV, "1"),
            (NODE_TIMEOUT_ENV, "0.25"),
        ])
        .unwrap();
        assert_eq!(limits.stall_timeout, Duration::from_secs(2));
        assert_eq!(limits.request_timeout, Duration::from_millis(500));
        assert_eq!(limits.attempts, 3);
        assert_eq!(limits.retry_delay, Duration::from_millis(10));
        assert_eq!(limits.helper_timeout, Duration::from_secs(1));
        assert_eq!(limits.node_timeout, Duration::from_millis(250));
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (name, value) in [
            (STALL_TIMEOUT_ENV, "soon"),
            (REQUEST_TIMEOUT_ENV, "0"),
            (RETRY_DELAY_ENV, "-1"),
            (ATTEMPTS_ENV, "0"),
            (ATTEMPTS_ENV, "1.5"),
            (NODE_TIMEOUT_ENV, "never"),
        ] {
            let err = from(&[(name, value)]).unwrap_err();
            assert_eq!(err.exit_code(), ExitCode::Usage);
            assert!(err.message().starts_with(name), "{}", err.message());
        }
    }

    #[test]
    fn durations_read_as_seconds() {
        assert_eq!(seconds_text(Duration::from_secs(120)), "120s");
        assert_eq!(seconds_text(Duration::from_millis(500)), "0.5s");
    }
}
