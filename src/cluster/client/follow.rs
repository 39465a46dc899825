//! Objects followed as kubectl and client-go follow them: listed, then watched from the list's
//! resourceVersion with kube's runtime watcher (a watch the server ends is reopened from the
//! last version seen, a 410 Gone relists, bookmarks are taken, its default backoff between
//! failures), each watch asked to end within [`WATCH_SECONDS`], under our client's read timeout.

use std::fmt::Debug;

use futures_util::stream::{BoxStream, StreamExt};
use kube::Resource;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;

/// What the server is asked to keep one watch open for: under our client's read timeout, so
/// that a quiet watch is ended by the server (and reopened) rather than cut by us.
pub const WATCH_SECONDS: u32 = 10;

/// What a follow of objects says next.
#[derive(Debug, Clone)]
pub enum Change<T> {
    /// Everything there is now (a list, or a relist after the watch lost its place).
    All(Vec<T>),
    Applied(T),
    Deleted(T),
    /// The watch failed; the watcher tries again after its backoff. What went wrong, for `-v`.
    Trouble(String),
    /// The API server refused the watch (403): trying again will not help.
    Forbidden(String),
}

/// Lists in kubectl's pages, watches ended by the server after [`WATCH_SECONDS`], bookmarks
/// asked for.
pub(in crate::cluster) fn watch_config() -> watcher::Config {
    watcher::Config::default()
        .timeout(WATCH_SECONDS)
        .page_size(500)
}

/// kube's watcher over `api` (a list, then a watch from its resourceVersion; a watch the
/// server ends is reopened from the last version seen, a 410 Gone relists; its default
/// backoff between failures), each object made into `T`.
pub(in crate::cluster) fn follow<K, T>(
    api: Api<K>,
    config: watcher::Config,
    make: fn(K) -> T,
) -> BoxStream<'static, Change<T>>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    T: Send + 'static,
{
    let mut listing: Vec<T> = Vec::new();
    watcher(api, config)
        .default_backoff()
        .map(move |event| match event {
            Ok(watcher::Event::Init) => {
                listing.clear();
                None
            }
            Ok(watcher::Event::InitApply(object)) => {
                listing.push(make(object));
                None
            }
            Ok(watcher::Event::InitDone) => Some(Change::All(std::mem::take(&mut listing))),
            Ok(watcher::Event::Apply(object)) => Some(Change::Applied(make(object))),
            Ok(watcher::Event::Delete(object)) => Some(Change::Deleted(make(object))),
            Err(err) if forbidden(&err) => Some(Change::Forbidden(err.to_string())),
            Err(err) => Some(Change::Trouble(format!("{err}; trying again"))),
        })
        .filter_map(futures_util::future::ready)
        .boxed()
}

/// A 403: RBAC refuses the list or the watch, whatever an access review said.
fn forbidden(err: &watcher::Error) -> bool {
    match err {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.is_forbidden(),
        watcher::Error::WatchError(status) => status.code == 403,
        _ => false,
    }
}
