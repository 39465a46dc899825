//! How we reach a registry: the scheme and the certificates trusted, the shared HTTP client (`transport`),
//! the proxy a request goes through (`proxy`), a registry only the cluster reaches spoken to through a
//! tunnel by its own name (`tunnelled`), and what went wrong below HTTP (`below_http`).

pub(super) mod below_http;
pub(super) mod proxy;
pub(super) mod transport;
pub(super) mod tunnelled;
