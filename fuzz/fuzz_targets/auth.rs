//! `WWW-Authenticate` challenges and token answers.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubectl_registry::fuzz_entry::auth(data));
