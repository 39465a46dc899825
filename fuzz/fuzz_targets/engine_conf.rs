//! podman's `storage.conf` and `nerdctl.toml`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubectl_registry::fuzz_entry::engine_conf(data));
