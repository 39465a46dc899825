//! OCI `index.json`, manifests, indexes, configs, platforms; the manifest we write reads back.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubectl_registry::fuzz_entry::oci_json(data));
