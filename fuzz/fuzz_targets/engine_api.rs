//! The Engine API's JSON: `image inspect`, a push's progress stream.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubectl_registry::fuzz_entry::engine_api(data));
