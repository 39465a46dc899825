//! Where a push goes and how: the name it lands under, the registry's host and login, and which way an engine's image takes.

pub(crate) mod naming;
pub(crate) mod registry_plan;
pub(crate) mod route;
