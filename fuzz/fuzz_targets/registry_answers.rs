//! Registry error bodies and the headers we act on (Location, Link, Docker-Content-Digest, Retry-After).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubectl_registry::fuzz_entry::registry_answers(data));
