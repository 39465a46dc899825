//! What each layout users hand us says about its images: a docker archive's `manifest.json` (`docker`),
//! an OCI layout's `index.json` (`oci`), containers/image's `dir:` transport (`dir`).

pub(super) mod dir;
pub(super) mod docker;
pub(super) mod oci;
