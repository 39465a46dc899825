//! The Windows build run under Wine, as a user on Windows runs it: `scripts/windows` builds the
//! `.exe` (and the PRNG shim Wine 8 needs beside it), makes a Wine prefix and runs this binary
//! (`cargo test --test wine`); plain `cargo test` never builds it (Cargo.toml: `test = false`).
//! The registry, the stand-in API server and the fixtures are the Linux tests' own; paths are
//! handed over as Windows writes them (`Z:\tmp\...`, `C:\...`).

// The bench is shared with tests/it; this binary uses a part of it.
#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

mod interrupt;
mod on_windows;
mod push;
mod refusals;
mod runs;
