//! The image layer: digests and references, archives and engine stores that images are read from,
//! a config's `created` time, and the OCI distribution client that pushes them.

pub mod archive;
pub mod created;
pub mod digest;
pub mod engine;
pub(crate) mod go_json;
pub mod http_body;
pub mod oci;
pub mod reference;
pub mod registry;
