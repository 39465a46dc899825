//! An image's bytes where they are: an engine's export, podman's store, containerd's content store, the daemon's or podman's own push, and the engine's store the nodes share.

pub(crate) mod by_daemon;
pub(crate) mod by_podman;
pub(crate) mod export_upload;
pub(crate) mod from_containerd;
pub(crate) mod from_engine;
pub(crate) mod from_store;
pub(crate) mod shared_store;
