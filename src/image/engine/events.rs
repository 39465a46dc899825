//! Noticing that an engine's images changed, for `push --watch`, at no cost while nothing
//! happens: docker's `/events` stream filtered to image events; for podman, its store's
//! `images.json` (rewritten by podman and buildah alike on every image change, where podman's
//! own events miss buildah's commits) watched as an archive is (`archive::changes`). Elsewhere (nerdctl, an API reached through a
//! CLI only) or once a stream ends: a tick each second that the caller answers with an inspect.

use std::time::Duration;

use super::api::EngineApi;
use super::{Endpoint, Engine, Found};
use crate::image::archive::changes::FileWatch;

/// The fallback's period.
const POLL: Duration = Duration::from_secs(1);
/// `{"type":["image"]}`, URL-encoded.
const IMAGE_FILTER: &str = "%7B%22type%22%3A%5B%22image%22%5D%7D";

/// The engine's image events, as they come.
pub struct ImageEvents {
    stream: Option<reqwest::Response>,
    file: Option<FileWatch>,
    poll: tokio::time::Interval,
    /// How the events are heard, for `-v`.
    pub how: String,
}

impl Found {
    /// Subscribes to the engine's image events (its `/events` stream when it has an API socket).
    pub async fn image_events(&self) -> ImageEvents {
        let mut poll = tokio::time::interval(POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        if self.engine == Engine::Podman
            && let Some(index) = super::store::images_index(&self.env)
        {
            let file = FileWatch::new(&index);
            let how = format!("podman's store: {}", file.how);
            return ImageEvents {
                stream: None,
                file: Some(file),
                poll,
                how,
            };
        }
        let subscribed = match self.engine {
            Engine::Docker => subscribe(&self.endpoint).await,
            _ => Err(format!("{} has no event stream we read", self.engine)),
        };
        let (stream, how) = match subscribed {
            Ok(response) => (
                Some(response),
                format!("the image events of {}", self.describe()),
            ),
            Err(why) => (
                None,
                format!("a check of {} each second ({why})", self.describe()),
            ),
        };
        ImageEvents {
            stream,
            file: None,
            poll,
            how,
        }
    }
}

async fn subscribe(endpoint: &Endpoint) -> Result<reqwest::Response, String> {
    let Endpoint::Socket { path, .. } = endpoint else {
        return Err("its API is reached through its CLI".to_string());
    };
    let api = EngineApi::new(path)?;
    let response = api
        .client
        .get(format!("http://engine/events?filters={IMAGE_FILTER}"))
        .send()
        .await
        .map_err(|err| super::api::connect_failure(&err))?;
    if !response.status().is_success() {
        return Err(super::api::failure(response).await);
    }
    Ok(response)
}

impl ImageEvents {
    /// Returns when an image event arrives (or, polling, at the next tick): time to look again.
    pub async fn next(&mut self) {
        if let Some(file) = self.file.as_mut() {
            return file.changed().await;
        }
        if let Some(stream) = self.stream.as_mut() {
            match stream.chunk().await {
                Ok(Some(_)) => return,
                // The engine went away or closed the stream: poll from now on.
                Ok(None) | Err(_) => {
                    self.stream = None;
                    self.how = "a check each second (the engine's event stream ended)".to_string();
                }
            }
        }
        self.poll.tick().await;
    }
}
