//! Moving an image's bytes to where the cluster pulls from: the push pipeline to a registry, and
//! per-node loads where no registry is advertised.

pub mod nodeload;
pub mod push;
