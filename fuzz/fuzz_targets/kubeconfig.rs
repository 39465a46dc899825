//! A kubeconfig file and an exec credential plugin's answer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubectl_registry::fuzz_entry::kubeconfig(data));
