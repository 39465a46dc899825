//! Uploads started at a registry and not yet finished, so that a run that stops early (a signal,
//! or a failure that drops the other uploads) can cancel them there instead of leaving them behind.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::Url;

use super::RegistryClient;

/// A stopped run drops the futures that own its uploads: what they started has to be findable
/// from outside them, hence a global.
static OPEN: Mutex<Option<HashMap<u64, Upload>>> = Mutex::new(None);
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// The client that started an upload, the repository, and where the upload is now.
type Upload = (RegistryClient, String, Url);

/// An upload in progress. Call [`OpenUpload::close`] once it is committed or cancelled; one
/// dropped without that (its future was cancelled) stays listed for [`cancel_all`].
pub(super) struct OpenUpload(u64);

impl OpenUpload {
    pub(super) fn register(client: &RegistryClient, repo: &str, location: &Url) -> Self {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        lock()
            .get_or_insert_with(HashMap::new)
            .insert(id, (client.clone(), repo.to_string(), location.clone()));
        Self(id)
    }

    /// The registry moved the upload on to `location` (each PATCH answer names the next one).
    pub(super) fn moved_to(&self, location: &Url) {
        if let Some(entry) = lock().as_mut().and_then(|open| open.get_mut(&self.0)) {
            entry.2 = location.clone();
        }
    }

    pub(super) fn close(self) {
        if let Some(open) = lock().as_mut() {
            open.remove(&self.0);
        }
    }
}

/// Asks the registry to drop every upload still open, all at once, within `wait` in all.
pub async fn cancel_all(wait: Duration) {
    let open: Vec<Upload> = lock()
        .take()
        .map(|open| open.into_values().collect())
        .unwrap_or_default();
    if open.is_empty() {
        return;
    }
    let cancels = open
        .into_iter()
        .map(|(client, repo, location)| async move { client.cancel_upload(&repo, location).await });
    let _ = tokio::time::timeout(wait, futures_util::future::join_all(cancels)).await;
}

fn lock() -> std::sync::MutexGuard<'static, Option<HashMap<u64, Upload>>> {
    // Every change is one map operation: a poisoned map is still whole.
    OPEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
