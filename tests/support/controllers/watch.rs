//! Watches as a real API server streams them: from a resourceVersion (every write after it,
//! replayed from the history), or from none (each object ADDED, then the writes), in any
//! namespace, by field (`metadata.name=`) or label selector; ended after `timeoutSeconds`
//! (a BOOKMARK first when asked for), or at once when the test cuts watches. A resourceVersion
//! the history no longer holds is answered the real way: HTTP 200 and an ERROR event with a
//! 410 Status ("too old resource version").

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Controllers;
use super::wire::{named_in, query_value};

/// What one watch follows.
pub(super) struct Wanted<'a> {
    pub resource: &'a str,
    pub namespace: &'a str,
    pub query: &'a str,
}

impl Wanted<'_> {
    fn matches(&self, resource: &str, namespace: &str, object: &Value) -> bool {
        if resource != self.resource || namespace != self.namespace {
            return false;
        }
        if let Some(name) = named_in(self.query)
            && object["metadata"]["name"] != name.as_str()
        {
            return false;
        }
        let labels = query_value(self.query, "labelSelector").unwrap_or_default();
        labels
            .split(',')
            .filter_map(|term| term.split_once('='))
            .all(|(key, value)| object["metadata"]["labels"][key] == value)
    }
}

fn send(stream: &mut dyn Write, event: &Value) -> bool {
    let event = event.to_string() + "\n";
    let chunk = format!("{:x}\r\n{event}\r\n", event.len());
    stream
        .write_all(chunk.as_bytes())
        .and_then(|()| stream.flush())
        .is_ok()
}

impl Controllers {
    pub(super) fn watch(&self, wanted: &Wanted<'_>, stream: &mut dyn Write) {
        let query = wanted.query;
        let seconds: u64 = query_value(query, "timeoutSeconds")
            .and_then(|s| s.parse().ok())
            .unwrap_or(1800);
        let cap = *self.0.watch_cap.lock().unwrap();
        let mut deadline = Instant::now() + Duration::from_secs(seconds.min(3600));
        if let Some(cap) = cap {
            deadline = deadline.min(Instant::now() + cap);
        }
        let bookmarks = query_value(query, "allowWatchBookmarks").is_some_and(|b| b == "true");
        let header = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nCache-Control: no-cache, private\r\n\r\n";
        if stream
            .write_all(header.as_bytes())
            .and_then(|()| stream.flush())
            .is_err()
        {
            return;
        }
        let from: Option<u64> = query_value(query, "resourceVersion")
            .and_then(|v| v.parse().ok())
            .filter(|v| *v > 0);
        let mut state = self.0.state.lock().unwrap();
        let cut = state.cut;
        let mut cursor = match from {
            Some(version) if version < state.compacted => {
                let message = format!("too old resource version: {version} ({})", state.compacted);
                let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": message, "reason": "Expired", "code": 410});
                drop(state);
                let _ = send(stream, &json!({"type": "ERROR", "object": status}));
                let _ = stream.write_all(b"0\r\n\r\n");
                return;
            }
            Some(version) => version,
            None => {
                let mut added = Vec::new();
                let objects = state
                    .workloads
                    .iter()
                    .map(|((namespace, resource, _), object)| {
                        (resource.as_str(), namespace.as_str(), object)
                    })
                    .chain(
                        state
                            .pods
                            .iter()
                            .map(|((namespace, _), pod)| ("pods", namespace.as_str(), pod)),
                    );
                for (resource, namespace, object) in objects {
                    if wanted.matches(resource, namespace, object) {
                        added.push(json!({"type": "ADDED", "object": object}));
                    }
                }
                let version = state.version;
                drop(state);
                for event in added {
                    if !send(stream, &event) {
                        return;
                    }
                }
                state = self.0.state.lock().unwrap();
                version
            }
        };
        loop {
            let events: Vec<Value> = state
                .history
                .iter()
                .filter(|w| {
                    w.version > cursor && wanted.matches(&w.resource, &w.namespace, &w.object)
                })
                .map(|w| json!({"type": w.kind, "object": w.object}))
                .collect();
            cursor = state.version;
            let ended = state.cut != cut;
            drop(state);
            for event in events {
                if !send(stream, &event) {
                    return;
                }
            }
            let now = Instant::now();
            if ended {
                let _ = stream.write_all(b"0\r\n\r\n");
                return;
            }
            if now >= deadline {
                if bookmarks {
                    let (api_version, kind) = match wanted.resource {
                        "pods" => ("v1", "Pod".to_string()),
                        other => ("apps/v1", super::wire::kind_names(other).1.to_string()),
                    };
                    let bookmark = json!({"type": "BOOKMARK", "object": {"apiVersion": api_version, "kind": kind,
                        "metadata": {"resourceVersion": cursor.to_string()}}});
                    let _ = send(stream, &bookmark);
                }
                let _ = stream.write_all(b"0\r\n\r\n");
                return;
            }
            state = self.0.state.lock().unwrap();
            if state.version == cursor && state.cut == cut {
                state = self
                    .0
                    .changed
                    .wait_timeout(state, (deadline - now).min(Duration::from_millis(200)))
                    .unwrap()
                    .0;
            }
        }
    }
}
