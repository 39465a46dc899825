//! docker's `config.json` and credential helpers' answers.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubectl_registry::fuzz_entry::docker_config(data));
