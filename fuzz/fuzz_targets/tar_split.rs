//! podman's tar-split records, replayed over a layer's files.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubectl_registry::fuzz_entry::tar_split(data));
