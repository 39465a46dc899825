//! Test support shared by the integration tests.

pub(crate) mod apiserver;
pub(crate) mod cluster_objects;
pub(crate) mod cluster_scene;
pub(crate) mod containerd;
pub(crate) mod controllers;
pub(crate) mod dockerd;
pub(crate) mod env;
pub(crate) mod fault_proxy;
pub(crate) mod fixtures;
pub(crate) mod http1;
pub(crate) mod info_report;
pub(crate) mod layouts;
pub(crate) mod openshift_registry;
pub(crate) mod podman;
pub(crate) mod portforward;
pub(crate) mod push;
pub(crate) mod registry;
pub(crate) mod run;
pub(crate) mod spdy;
pub(crate) mod standins;
pub(crate) mod token_server;
pub(crate) mod why_report;
