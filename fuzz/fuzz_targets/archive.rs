//! An image archive on standard input (docker-archive, oci-archive, layouts; plain, gzip, zstd, bzip2, xz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubectl_registry::fuzz_entry::archive(data));
