//! The Docker Engine API over a unix socket, or on Windows a named pipe (docker, and podman's
//! Docker-compatible service):
//! `GET /images/{name}/json` to inspect, `GET /images/{name}/get` for the streamed export.

use std::path::Path;

use futures_util::StreamExt;
use reqwest::StatusCode;
use serde::Deserialize;

use super::export::{Export, StreamReader};
use super::facts::ImageFacts;
use crate::image::http_body::{
    ENGINE_ERROR_BODY_LIMIT, INSPECT_BODY_LIMIT, read_capped, read_start,
};
use crate::image::registry::{Stalled, Watchdog};
use crate::plumbing::limits::{STALL_TIMEOUT_ENV, seconds_text};

/// What asking an engine API for an image gave.
pub(super) enum Answer<T> {
    Found(T),
    /// The engine answered that it has no such image, in its own words.
    NoSuchImage(String),
}

/// An Engine API client bound to one socket.
pub(super) struct EngineApi {
    pub(super) client: reqwest::Client,
}

impl EngineApi {
    #[cfg(unix)]
    pub(super) fn new(socket: &Path) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .unix_socket(socket)
            // A unix socket speaks no TLS: no system roots to read for it.
            .tls_certs_only([])
            .no_proxy()
            .build()
            .map_err(|err| err.to_string())?;
        Ok(Self { client })
    }

    /// Docker Desktop's engine listens on a named pipe (`\\.\pipe\docker_engine`), reached as
    /// its CLI reaches it; a unix socket's path cannot be reached from a Windows build.
    #[cfg(windows)]
    pub(super) fn new(socket: &Path) -> Result<Self, String> {
        if !super::endpoint::is_pipe(socket) {
            return Err(format!(
                "{} is a unix socket, which this Windows build cannot reach: point DOCKER_HOST at the engine's named pipe (npipe:////./pipe/docker_engine) or unset it to use the docker CLI",
                super::endpoint::url_of(socket)
            ));
        }
        let client = reqwest::Client::builder()
            .windows_named_pipe(socket.as_os_str().to_owned())
            // A local pipe speaks no TLS: no system roots to read for it.
            .tls_certs_only([])
            .no_proxy()
            .build()
            .map_err(|err| err.to_string())?;
        Ok(Self { client })
    }

    pub(super) async fn inspect(&self, image: &str) -> Result<Answer<ImageFacts>, String> {
        let response = self.get(image, "json").await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(Answer::NoSuchImage(message_of(response).await));
        }
        if !response.status().is_success() {
            return Err(failure(response).await);
        }
        // Inspect answers are small; anything bigger is not an image description.
        let bytes = read_capped(response, INSPECT_BODY_LIMIT)
            .await
            .map_err(|err| format!("reading the inspect answer: {err}"))?;
        ImageFacts::parse(&bytes)
            .map(Answer::Found)
            .map_err(|err| format!("the inspect answer is not an image: {err}"))
    }

    /// Starts the export; its body is read as it arrives, from a blocking thread. podman's
    /// service writes the whole archive before it answers, so the wait for the answer is bounded
    /// by `watchdog` (no progress for the stall bound), like the body after it.
    pub(super) async fn export(
        &self,
        image: &str,
        watchdog: Watchdog,
    ) -> Result<Answer<Export>, String> {
        let response = match watchdog.bound(self.get(image, "get")).await {
            Ok(response) => response?,
            Err(Stalled(limit)) => {
                return Err(format!(
                    "the engine did not answer within {} ({STALL_TIMEOUT_ENV})",
                    seconds_text(limit)
                ));
            }
        };
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(Answer::NoSuchImage(message_of(response).await));
        }
        if !response.status().is_success() {
            return Err(failure(response).await);
        }
        let (reader, sender) = StreamReader::new();
        let mut body = response.bytes_stream();
        let task = tokio::spawn(async move {
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(std::io::Error::other);
                let failed = chunk.is_err();
                if sender.send(chunk).await.is_err() || failed {
                    break;
                }
            }
        });
        Ok(Answer::Found(Export::from_api(reader, task, watchdog)))
    }

    async fn get(&self, image: &str, what: &str) -> Result<reqwest::Response, String> {
        // Image references are made of URL-safe characters; anything else names nothing.
        if !image
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/:@".contains(c))
        {
            return Err(format!(
                "{} is not an image reference",
                crate::plumbing::output::shown(image)
            ));
        }
        self.client
            .get(format!("http://engine/images/{image}/{what}"))
            .send()
            .await
            .map_err(|err| connect_failure(&err))
    }
}

#[derive(Deserialize)]
struct ErrorJson {
    message: String,
}

async fn message_of(response: reqwest::Response) -> String {
    let bytes = read_start(response, ENGINE_ERROR_BODY_LIMIT).await;
    serde_json::from_slice::<ErrorJson>(&bytes)
        .map(|json| json.message)
        .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).trim().to_string())
}

pub(super) async fn failure(response: reqwest::Response) -> String {
    let status = response.status();
    format!(
        "the engine answered {status}: {}",
        message_of(response).await
    )
}

/// reqwest's own text is "error sending request for url (http://engine/...)": name the cause.
pub(super) fn connect_failure(err: &reqwest::Error) -> String {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let mut deepest = err.to_string();
    while let Some(current) = cause {
        deepest = current.to_string();
        cause = current.source();
    }
    format!("cannot reach its API: {deepest}")
}
