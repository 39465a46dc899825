//! Image references and registry hosts; what we write parses back.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubectl_registry::fuzz_entry::reference(data));
