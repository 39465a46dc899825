//! Test support shared by the integration tests.

pub mod registry;
pub mod token_server;
