//! The integration tests, one binary: a module per area, the shared bench in `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod advertise;
mod archive;
mod cluster_answers;
mod completion;
mod doctor;
mod help;
mod hostile_peers;
mod in_cluster;
mod info;
mod kubectl_plugin;
mod ls_prune;
mod names;
mod nodeload;
mod openshift;
mod packaging;
mod push;
mod push_by_node;
mod push_cache;
mod push_daemon;
mod push_engine;
mod push_errors;
mod push_faults;
mod push_formats;
mod push_inputs;
mod push_memory;
mod push_messages;
mod push_multi;
mod push_nerdctl;
mod push_nodeload;
mod push_secrets;
mod push_signals;
mod push_store;
mod push_wild;
mod registry_attached;
mod registry_client;
mod rollout;
mod rollout_late;
mod rollout_shapes;
mod tunnel;
mod watch;
mod watch_rewrites;
mod why;
mod why_status;
