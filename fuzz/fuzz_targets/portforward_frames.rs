//! The API server's port-forward frames, as the tunnel reads them.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubectl_registry::fuzz_entry::portforward_frames(data));
