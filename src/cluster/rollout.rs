//! A workload's rollout in the Kubernetes layer: what it needs allowed, asked before the push
//! (`access`), its objects through kube's `Api<K>` (`api`: the workload read and patched as
//! `kubectl set image` does, its pods, both followed, a previous log), the typed workload
//! (`workload`), kubectl's rollout status rules over it (`rules`), and the wait (`wait`): the
//! workload and its new pods followed by list-then-watch until the rules say done, a new pod shows
//! it will not become ready (a failed pull, a crash loop), another writer replaces the pushed ref
//! in the template (`replaced`: who, from managedFields), or the time is up; what it found as plain
//! data, with what keeps the pods from ready when it did not finish (`stuck`).

pub mod access;
pub mod api;
pub mod replaced;
pub mod rules;
pub mod stuck;
pub mod wait;
pub mod workload;

pub use access::{Access, access};
pub use api::{Crash, Patched, RolloutApi, RolloutPod};
pub use replaced::{Replaced, Writer};
pub use rules::Status;
pub use stuck::{Holds, Stuck, probe_failure, stuck};
pub use wait::{Ended, Follow, Target, Telling, wait};
pub use workload::{TemplateContainer, Workload, WorkloadKind};
