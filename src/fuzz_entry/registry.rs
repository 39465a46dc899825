//! Targets for what registries and docker's credential store hand us: `WWW-Authenticate`
//! challenges and token answers, error bodies and the headers we act on, `config.json` and
//! credential helpers' answers.

use std::path::Path;

use reqwest::StatusCode;
use reqwest::Url;
use reqwest::header::HeaderValue;

use crate::image::digest::Digest;
use crate::image::reference::RegistryHost;
use crate::image::registry::RegistryResponse;
use crate::image::registry::fuzzing::{
    Wanted, check_answered_digest, find_entry, from_auths, helper_answer, helper_reason,
    location_in, next_page, parse_challenge, parse_config, retry_after_of, token_of,
    unspoken_scheme,
};

/// `WWW-Authenticate` values (one per NUL-separated field) as a 401 carries them: the challenge
/// we meet, the scheme we cannot; and the realm's answer to a token request.
pub fn auth(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let values: Vec<String> = text.split('\0').map(str::to_string).collect();
    for value in &values {
        let _ = parse_challenge(value);
    }
    let _ = unspoken_scheme(&values);
    if let Err(err) = token_of(data, "fetching a token from the fuzz realm") {
        super::assert_bounded(&err);
    }
}

/// A registry's answer that we read beyond its status: the error body (any status), and the
/// headers we act on: `Location` (where an upload goes on), `Link` (the next page of a
/// listing), `Docker-Content-Digest` (checked against the bytes), `Retry-After`. The input is
/// a status byte, then body and headers separated by NULs. Every summary and error quotes
/// what came from outside shortened.
pub fn registry_answers(data: &[u8]) {
    let Some((&status, rest)) = data.split_first() else {
        return;
    };
    let mut parts = rest.splitn(5, |&b| b == 0);
    let body = parts.next().unwrap_or_default();
    let status = StatusCode::from_u16(400 + u16::from(status % 200)).unwrap_or(StatusCode::OK);
    let answer = RegistryResponse::from_parts(status, body);
    let summary = answer.to_string();
    assert!(
        summary.len() <= super::ERROR_TEXT_LIMIT,
        "a summary of {} bytes",
        summary.len()
    );
    let _ = (answer.is_transient(), answer.has_code("BLOB_UNKNOWN"));

    let header = |bytes: Option<&[u8]>| bytes.and_then(|b| HeaderValue::from_bytes(b).ok());
    let (location, link, digest, retry) = (
        header(parts.next()),
        header(parts.next()),
        header(parts.next()),
        header(parts.next()),
    );
    let Ok(base) = Url::parse("http://127.0.0.1:5000/v2/library/app/blobs/uploads/") else {
        return;
    };
    if let Some(location) = &location {
        match location_in(&base, location) {
            Ok(url) => {
                let _ = url.as_str();
            }
            Err(err) => super::assert_bounded(&err),
        }
    }
    match next_page(&base, link.as_ref()) {
        Ok(Some(next)) => {
            let _ = next.as_str();
        }
        Ok(None) => {}
        Err(err) => super::assert_bounded(&err),
    }
    let sent = Digest::of_bytes(body);
    let answered = digest.as_ref().and_then(|value| value.to_str().ok());
    match check_answered_digest(&sent, answered) {
        Ok(()) => assert!(answered.is_none_or(|answered| answered == sent.as_str())),
        Err(err) => super::assert_bounded(&err),
    }
    let _ = retry_after_of(retry.as_ref());
}

/// A docker `config.json` (or podman's `auth.json`) and a credential helper's answer, split at
/// the first NUL: the entry for a few hosts as `lookup` finds it (credHelpers, credsStore,
/// auths with their `auth`, identity token or user and password), the helper's secret, and
/// what we would say of a failed helper.
pub fn docker_config(data: &[u8]) {
    let mut parts = data.splitn(2, |&b| b == 0);
    let config = parts.next().unwrap_or_default();
    let helper = parts.next().unwrap_or_default();
    let path = Path::new("/fuzz/config.json");
    match parse_config(config, path) {
        Ok(config) => {
            for (raw, default_port) in [
                ("localhost:5001", 80),
                ("registry.example.com", 443),
                ("[::1]:5000", 80),
            ] {
                let Ok(host) = RegistryHost::parse(raw) else {
                    continue;
                };
                let wanted = Wanted {
                    host: &host,
                    default_port,
                };
                let _ = find_entry(&config.cred_helpers, &wanted);
                let _ = config.creds_store.as_deref();
                if let Err(err) = from_auths(&config, &wanted, path) {
                    super::assert_bounded(&err);
                }
            }
        }
        Err(err) => super::assert_bounded(&err),
    }
    let _ = helper_answer(helper);
    if let Some(reason) = helper_reason(helper) {
        assert!(reason.chars().count() <= 301, "{} characters", reason.len());
    }
}
