//! The Docker daemon's own push, through its Engine API: the image tagged in the engine for the
//! registry (`POST /images/{id}/tag`), pushed by the daemon (`POST /images/{ref}/push`, its JSON
//! progress lines read one bounded line at a time), and the engine's tag put back as it was
//! however the run ends. The daemon records which layers each registry holds, so after a rebuild
//! it sends only what changed: the one per-layer access to a store only root can read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::StatusCode;
use serde::Deserialize;

use super::api::{EngineApi, connect_failure, failure};
use super::endpoint::Endpoint;
use crate::image::digest::Digest;
use crate::image::registry::Watchdog;
use crate::plumbing::limits::{Limits, STALL_TIMEOUT_ENV, seconds_text};

/// A progress line is ~200 bytes and an error a few KiB: a longer line is not the daemon's.
const LINE_LIMIT: usize = 64 * 1024;

/// A Docker Engine (not podman's Docker-compatible service) on a unix socket.
pub struct Daemon {
    api: EngineApi,
    socket: PathBuf,
    request_timeout: Duration,
    stall_timeout: Duration,
}

/// How one layer of a daemon push ended, by the layer's short id (12 hex of its diff_id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerEnd {
    Pushed,
    AlreadyThere,
    Mounted,
}

/// What the daemon's push said as it went, for bars and `-v`.
#[derive(Debug, Clone, Copy)]
pub enum PushEvent<'a> {
    /// Bytes of one layer sent so far, of about `total` (its uncompressed size).
    Sending {
        id: &'a str,
        current: u64,
        total: u64,
    },
    Ended {
        id: &'a str,
        end: &'a LayerEnd,
    },
}

/// A push the daemon finished.
#[derive(Debug)]
pub struct DaemonPushed {
    /// The manifest digest the registry's tag now names.
    pub digest: Digest,
    pub layers: HashMap<String, LayerEnd>,
}

/// A push the engine (its daemon, or its CLI) did not finish.
#[derive(Debug)]
pub enum EnginePushFailure {
    /// It could not reach the registry at all (its own network, its TLS or HTTP rules): another
    /// way may, so this is a reason to use one, not an error.
    Unreachable(String),
    /// It failed, or we could not follow it: the reason, in words.
    Failed(String),
}

/// The Docker daemon at `endpoint`, when it is one. podman's compatible service answers
/// `Server: Libpod/...` and reads its own store instead.
pub(super) async fn connect(endpoint: &Endpoint, limits: &Limits) -> Option<Daemon> {
    let Endpoint::Socket { path, .. } = endpoint else {
        return None;
    };
    let api = EngineApi::new(path).ok()?;
    let ping = api
        .client
        .get("http://engine/_ping")
        .timeout(limits.request_timeout)
        .send()
        .await
        .ok()?;
    let server = ping.headers().get("server")?.to_str().ok()?;
    server.starts_with("Docker/").then(|| Daemon {
        api,
        socket: path.clone(),
        request_timeout: limits.request_timeout,
        stall_timeout: limits.stall_timeout,
    })
}

impl Daemon {
    /// Points `repo:tag` in the engine at `image_id` until the returned guard is dropped, which
    /// puts back what the name pointed at before (or removes it).
    pub async fn tag(&self, image_id: &str, repo: &str, tag: &str) -> Result<EngineTag, String> {
        let reference = format!("{repo}:{tag}");
        let before = self.image_id_of(&reference).await?;
        let mut guard = EngineTag {
            socket: self.socket.clone(),
            repo: repo.to_string(),
            tag: tag.to_string(),
            before: before.clone(),
            limit: self.request_timeout,
            changed: false,
        };
        if before.as_deref() == Some(image_id) {
            return Ok(guard);
        }
        guard.changed = true;
        let response = self
            .api
            .client
            .post(format!(
                "http://engine/images/{}/tag?repo={}&tag={}",
                checked(image_id)?,
                checked(repo)?,
                checked(tag)?
            ))
            .timeout(self.request_timeout)
            .send()
            .await
            .map_err(|err| connect_failure(&err))?;
        if !response.status().is_success() {
            return Err(failure(response).await);
        }
        Ok(guard)
    }

    /// The image ID `reference` names in the engine, `None` when it names none.
    async fn image_id_of(&self, reference: &str) -> Result<Option<String>, String> {
        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct Inspected {
            id: String,
        }
        let response = self
            .api
            .client
            .get(format!("http://engine/images/{}/json", checked(reference)?))
            .timeout(self.request_timeout)
            .send()
            .await
            .map_err(|err| connect_failure(&err))?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(failure(response).await);
        }
        let bytes = response.bytes().await.map_err(|err| err.to_string())?;
        serde_json::from_slice::<Inspected>(&bytes)
            .map(|inspected| Some(inspected.id))
            .map_err(|err| format!("the inspect answer is not an image: {err}"))
    }

    /// Has the daemon push `repo:tag` with `auth` (an `X-Registry-Auth` value) and follows its
    /// progress to the digest it pushed. Ends when no line came for the stall bound.
    pub async fn push(
        &self,
        repo: &str,
        tag: &str,
        auth: &str,
        on_event: &mut dyn FnMut(PushEvent<'_>),
    ) -> Result<DaemonPushed, EnginePushFailure> {
        let failed = EnginePushFailure::Failed;
        let watchdog = Watchdog::new(self.stall_timeout);
        let stalled = |limit: Duration| {
            EnginePushFailure::Failed(format!(
                "the daemon's push brought no progress for {} ({STALL_TIMEOUT_ENV})",
                seconds_text(limit)
            ))
        };
        let request = self
            .api
            .client
            .post(format!(
                "http://engine/images/{}/push?tag={}",
                checked(repo).map_err(failed)?,
                checked(tag).map_err(failed)?
            ))
            .header("X-Registry-Auth", auth)
            .send();
        let response = match watchdog.bound(request).await {
            Ok(response) => {
                response.map_err(|err| EnginePushFailure::Failed(connect_failure(&err)))?
            }
            Err(stalled_at) => return Err(stalled(stalled_at.0)),
        };
        if !response.status().is_success() {
            return Err(EnginePushFailure::Failed(failure(response).await));
        }
        let mut body = response.bytes_stream();
        let mut answer = PushAnswer::default();
        loop {
            let chunk = match watchdog.bound(body.next()).await {
                Ok(Some(chunk)) => chunk.map_err(|err| {
                    EnginePushFailure::Failed(format!("the daemon's answer broke off: {err}"))
                })?,
                Ok(None) => break,
                Err(stalled_at) => return Err(stalled(stalled_at.0)),
            };
            watchdog.progressed();
            answer.read(&chunk, on_event)?;
        }
        answer.end(on_event)
    }
}

/// The daemon's answer to a push, decoded as it comes: JSON progress lines, however the
/// chunks split them, to each layer's end and the digest pushed. No I/O.
#[derive(Default)]
pub(crate) struct PushAnswer {
    lines: Lines,
    progress: Progress,
}

impl PushAnswer {
    /// Reads the next chunk of the answer.
    pub(crate) fn read(
        &mut self,
        chunk: &[u8],
        on_event: &mut dyn FnMut(PushEvent<'_>),
    ) -> Result<(), EnginePushFailure> {
        for line in self.lines.push(chunk).map_err(EnginePushFailure::Failed)? {
            self.progress.read(&line, on_event)?;
        }
        Ok(())
    }

    /// The answer ended: what it said was pushed.
    pub(crate) fn end(
        mut self,
        on_event: &mut dyn FnMut(PushEvent<'_>),
    ) -> Result<DaemonPushed, EnginePushFailure> {
        if let Some(line) = self.lines.rest() {
            self.progress.read(&line, on_event)?;
        }
        match self.progress.digest {
            Some(digest) => Ok(DaemonPushed {
                digest,
                layers: self.progress.layers,
            }),
            None => Err(EnginePushFailure::Failed(
                "the daemon's push ended without naming the digest it pushed".to_string(),
            )),
        }
    }
}

/// A name the engine points at our image for its push; put back as it was when dropped, with a
/// blocking request of its own (this runs on a signal too, when the async side is gone).
pub struct EngineTag {
    socket: PathBuf,
    repo: String,
    tag: String,
    /// The image ID the name pointed at before, if any.
    before: Option<String>,
    limit: Duration,
    /// Whether the name was changed at all (it may have pointed at our image already).
    changed: bool,
}

impl EngineTag {
    /// The name stays as it is now, pointing at our image.
    pub fn keep(mut self) {
        self.changed = false;
    }

    /// Puts the name back now; what failed, in words.
    pub fn restore(&mut self) -> Result<(), String> {
        if !std::mem::take(&mut self.changed) {
            return Ok(());
        }
        let reference = format!("{}:{}", self.repo, self.tag);
        let target = match &self.before {
            // The name was someone else's image: point it back there.
            Some(before) => format!(
                "/images/{}/tag?repo={}&tag={}",
                checked(before)?,
                checked(&self.repo)?,
                checked(&self.tag)?
            ),
            None => format!("/images/{}?noprune=1", checked(&reference)?),
        };
        let method = if self.before.is_some() {
            "POST"
        } else {
            "DELETE"
        };
        let status = blocking_request(&self.socket, method, &target, self.limit)
            .map_err(|err| format!("asking the engine to put back {reference}: {err}"))?;
        if (200..300).contains(&status) || (status == 404 && self.before.is_none()) {
            Ok(())
        } else {
            Err(format!(
                "the engine answered {status} when asked to put back {reference}"
            ))
        }
    }
}

impl Drop for EngineTag {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// One request without a body over the engine's socket, answered by its status.
#[cfg(unix)]
fn blocking_request(
    socket: &Path,
    method: &str,
    target: &str,
    limit: Duration,
) -> std::io::Result<u16> {
    let stream = std::os::unix::net::UnixStream::connect(socket)?;
    stream.set_read_timeout(Some(limit))?;
    stream.set_write_timeout(Some(limit))?;
    ask(stream, method, target)
}

/// One request without a body over the engine's named pipe, answered by its status: a pipe
/// opens as a file does (its reads are not bounded in time, as the engine answers at once).
#[cfg(windows)]
fn blocking_request(
    socket: &Path,
    method: &str,
    target: &str,
    _limit: Duration,
) -> std::io::Result<u16> {
    let pipe = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(socket)?;
    ask(pipe, method, target)
}

fn ask(
    mut stream: impl std::io::Read + std::io::Write,
    method: &str,
    target: &str,
) -> std::io::Result<u16> {
    use std::io::Read;
    write!(
        stream,
        "{method} {target} HTTP/1.1\r\nHost: engine\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut head = Vec::new();
    (&mut stream).take(64).read_to_end(&mut head)?;
    let line = String::from_utf8_lossy(&head);
    line.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| {
            std::io::Error::other(format!(
                "not an HTTP answer: {}",
                crate::plumbing::output::shown(&line)
            ))
        })
}

/// Image references and IDs are made of URL-safe characters; anything else names nothing.
fn checked(name: &str) -> Result<&str, String> {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/:@".contains(c))
    {
        Ok(name)
    } else {
        Err(format!(
            "{} is not an image reference",
            crate::plumbing::output::shown(name)
        ))
    }
}

/// Splits the answer into lines, none longer than the limit.
#[derive(Default)]
struct Lines {
    partial: Vec<u8>,
}

impl Lines {
    fn push(&mut self, chunk: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let mut complete = Vec::new();
        for piece in chunk.split_inclusive(|b| *b == b'\n') {
            self.partial.extend_from_slice(piece);
            if self.partial.len() > LINE_LIMIT + 1 {
                return Err(format!(
                    "the daemon sent a progress line over {LINE_LIMIT} bytes"
                ));
            }
            if piece.ends_with(b"\n") {
                complete.push(std::mem::take(&mut self.partial));
            }
        }
        Ok(complete)
    }

    fn rest(&mut self) -> Option<Vec<u8>> {
        let rest = std::mem::take(&mut self.partial);
        (!rest.iter().all(u8::is_ascii_whitespace)).then_some(rest)
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ProgressLine {
    status: Option<String>,
    id: Option<String>,
    progress_detail: Option<ProgressDetail>,
    error: Option<String>,
    error_detail: Option<ErrorDetail>,
    aux: Option<Aux>,
}

#[derive(Deserialize)]
struct ProgressDetail {
    current: Option<u64>,
    total: Option<u64>,
}

#[derive(Deserialize)]
struct ErrorDetail {
    message: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Aux {
    digest: Option<String>,
}

/// What the lines said so far.
#[derive(Default)]
struct Progress {
    layers: HashMap<String, LayerEnd>,
    /// A layer was looked at or sent: the daemon reached the registry.
    reached: bool,
    digest: Option<Digest>,
}

impl Progress {
    fn read(
        &mut self,
        line: &[u8],
        on_event: &mut dyn FnMut(PushEvent<'_>),
    ) -> Result<(), EnginePushFailure> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let line: ProgressLine = serde_json::from_slice(line).map_err(|err| {
            EnginePushFailure::Failed(format!(
                "the daemon sent a line that is not progress: {err}"
            ))
        })?;
        if let Some(error) = line.error_detail.and_then(|d| d.message).or(line.error) {
            return Err(if !self.reached && is_unreachable(&error) {
                EnginePushFailure::Unreachable(error)
            } else {
                EnginePushFailure::Failed(error)
            });
        }
        if let Some(digest) = line.aux.and_then(|aux| aux.digest) {
            self.digest = Some(digest.parse().map_err(|_| {
                EnginePushFailure::Failed(format!(
                    "the daemon named a digest that is not one: {}",
                    crate::plumbing::output::shown(&digest)
                ))
            })?);
        }
        let (Some(id), Some(status)) = (line.id, line.status) else {
            return Ok(());
        };
        self.reached = true;
        let end = match status.as_str() {
            "Pushed" => LayerEnd::Pushed,
            "Layer already exists" => LayerEnd::AlreadyThere,
            s if s.starts_with("Mounted from") => LayerEnd::Mounted,
            "Pushing" => {
                if let Some(ProgressDetail {
                    current: Some(current),
                    total: Some(total),
                }) = line.progress_detail
                {
                    on_event(PushEvent::Sending {
                        id: &id,
                        current,
                        total,
                    });
                }
                return Ok(());
            }
            _ => return Ok(()),
        };
        on_event(PushEvent::Ended { id: &id, end: &end });
        self.layers.insert(id, end);
        Ok(())
    }
}

/// The daemon's words when it could not reach the registry (its ping of `/v2/` failed): no
/// route from where it runs, a TLS or plain-HTTP rule of its own, a name it cannot resolve.
pub(super) fn is_unreachable(error: &str) -> bool {
    [
        "/v2/\": ",
        "dial tcp",
        "connection refused",
        "network is unreachable",
        "no route to host",
        "no such host",
        "i/o timeout",
        "server gave HTTP response to HTTPS client",
        "x509: ",
        "tls: ",
    ]
    .iter()
    .any(|sign| error.contains(sign))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &str) -> Result<Progress, EnginePushFailure> {
        let mut lines = Lines::default();
        let mut progress = Progress::default();
        for line in lines
            .push(text.as_bytes())
            .map_err(EnginePushFailure::Failed)?
        {
            progress.read(&line, &mut |_| {})?;
        }
        Ok(progress)
    }

    #[test]
    fn the_digest_and_each_layers_end_are_read_from_the_stream() {
        let digest = "sha256:0193b253fe9629549167e87014411eb969a4f42f92bacacb99dcf786dc316168";
        let progress = read_all(&format!(
            "{{\"status\":\"The push refers to repository [127.0.0.1:5555/myimg]\"}}\n\
             {{\"status\":\"Preparing\",\"progressDetail\":{{}},\"id\":\"16b8ab3422de\"}}\n\
             {{\"status\":\"Pushing\",\"progressDetail\":{{\"current\":33280,\"total\":1000000}},\"id\":\"16b8ab3422de\"}}\n\
             {{\"status\":\"Pushed\",\"progressDetail\":{{}},\"id\":\"16b8ab3422de\"}}\n\
             {{\"status\":\"Layer already exists\",\"progressDetail\":{{}},\"id\":\"aaaaaaaaaaaa\"}}\n\
             {{\"status\":\"Mounted from other\",\"progressDetail\":{{}},\"id\":\"bbbbbbbbbbbb\"}}\n\
             {{\"progressDetail\":{{}},\"aux\":{{\"Tag\":\"dev\",\"Digest\":\"{digest}\",\"Size\":528}}}}\n"
        ))
        .unwrap();
        assert_eq!(progress.digest.unwrap().as_str(), digest);
        assert_eq!(progress.layers["16b8ab3422de"], LayerEnd::Pushed);
        assert_eq!(progress.layers["aaaaaaaaaaaa"], LayerEnd::AlreadyThere);
        assert_eq!(progress.layers["bbbbbbbbbbbb"], LayerEnd::Mounted);
    }

    #[test]
    fn an_error_before_any_layer_that_says_unreachable_is_a_reason_to_go_another_way() {
        let unreachable = read_all(
            "{\"status\":\"The push refers to repository [127.0.0.1:5555/myimg]\"}\n\
             {\"errorDetail\":{\"message\":\"Get \\\"http://127.0.0.1:5555/v2/\\\": dial tcp 127.0.0.1:5555: connect: network is unreachable\"},\"error\":\"x\"}\n",
        );
        assert!(
            matches!(unreachable, Err(EnginePushFailure::Unreachable(m)) if m.contains("network is unreachable"))
        );
        let midway = read_all(
            "{\"status\":\"Pushing\",\"progressDetail\":{\"current\":1,\"total\":2},\"id\":\"16b8ab3422de\"}\n\
             {\"errorDetail\":{\"message\":\"dial tcp 127.0.0.1:5555: connection refused\"},\"error\":\"x\"}\n",
        );
        assert!(matches!(midway, Err(EnginePushFailure::Failed(_))));
    }

    #[test]
    fn a_line_over_the_limit_is_refused() {
        let mut lines = Lines::default();
        assert!(lines.push(&vec![b'x'; LINE_LIMIT + 10]).is_err());
        let mut lines = Lines::default();
        let split = lines.push(b"{\"a\":1}\n{\"b\"").unwrap();
        assert_eq!(split, vec![b"{\"a\":1}\n".to_vec()]);
        assert_eq!(lines.push(b":2}\n").unwrap(), vec![b"{\"b\":2}\n".to_vec()]);
    }
}
