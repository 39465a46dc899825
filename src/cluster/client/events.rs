//! The events about one pod as the API server lists them (core/v1, which also carries what
//! components wrote through events.k8s.io: `eventTime`, `series`, no `count`), each with the
//! container it is about (`involvedObject.fieldPath`), how many times it happened and when last.

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};

use super::{Cluster, Lookup};
use crate::plumbing::error::Result;

/// One event about a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodEvent {
    /// `Unhealthy`, `Failed`, `FailedScheduling`...
    pub reason: String,
    pub message: String,
    /// `spec.containers{web}`: `web`.
    pub container: Option<String>,
    /// `count` (core/v1) or `series.count` (events.k8s.io); 1 when neither is there.
    pub count: i32,
    /// When it last happened, RFC 3339: `lastTimestamp`, `series.lastObservedTime`,
    /// `eventTime` or `firstTimestamp`, the first there is.
    pub last: Option<String>,
}

impl PodEvent {
    fn of(event: Event) -> Self {
        let series = event.series.as_ref();
        let last = event
            .last_timestamp
            .map(|t| t.0.to_string())
            .or_else(|| {
                series
                    .and_then(|s| s.last_observed_time.as_ref())
                    .map(|t| t.0.to_string())
            })
            .or_else(|| event.event_time.as_ref().map(|t| t.0.to_string()))
            .or_else(|| event.first_timestamp.map(|t| t.0.to_string()));
        let container = event
            .involved_object
            .field_path
            .as_deref()
            .and_then(|path| {
                let inner = path
                    .strip_prefix("spec.containers{")
                    .or_else(|| path.strip_prefix("spec.initContainers{"))?;
                inner.strip_suffix('}').map(str::to_string)
            });
        Self {
            reason: event.reason.unwrap_or_default(),
            message: event.message.unwrap_or_default().trim().to_string(),
            container,
            count: event
                .count
                .or_else(|| series.and_then(|s| s.count))
                .unwrap_or(1),
            last,
        }
    }
}

impl Cluster {
    /// The events about pod `name`, oldest first by when they last happened; empty when RBAC
    /// forbids reading them.
    pub async fn pod_event_records(&self, namespace: &str, name: &str) -> Result<Vec<PodEvent>> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        let params = ListParams::default()
            .fields(&format!(
                "involvedObject.kind=Pod,involvedObject.name={name}"
            ))
            .limit(500);
        let lookup = self.lookup(api.list(&params).await, || {
            format!("listing the events of pod {namespace}/{name}")
        })?;
        let mut events: Vec<PodEvent> = match lookup {
            Lookup::Found(events) => events.items.into_iter().map(PodEvent::of).collect(),
            Lookup::NotFound | Lookup::Forbidden => Vec::new(),
        };
        // RFC 3339 times in UTC sort as text; the list's order breaks ties.
        events.sort_by(|a, b| a.last.cmp(&b.last));
        Ok(events)
    }
}
