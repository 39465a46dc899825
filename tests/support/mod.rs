//! Helpers shared by the integration tests; each test binary uses a part of them.
#![allow(dead_code)]

pub mod containerd;
pub mod fixtures;
