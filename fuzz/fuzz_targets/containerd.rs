//! containerd's gRPC frames and answers.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubectl_registry::fuzz_entry::containerd(data));
