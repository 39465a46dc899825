//! Test support shared by the integration tests.

pub mod apiserver;
pub mod containerd;
pub mod dockerd;
pub mod doctor_output;
pub mod env;
pub mod fault_proxy;
pub mod fixtures;
pub mod http1;
pub mod layouts;
pub mod openshift_registry;
pub mod podman;
pub mod push;
pub mod registry;
pub mod standins;
pub mod token_server;
