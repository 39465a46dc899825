//! Test support shared by the integration tests.

pub mod apiserver;
pub mod containerd;
pub mod standins;
