//! The KEP-1755 ConfigMap and the older node annotations; what `advertise` writes reads back.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubectl_registry::fuzz_entry::hosting(data));
