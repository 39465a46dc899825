//! The one uploader every source pushes through. A blob is found in the repository (HEAD) or
//! mounted from another one we sent it to; else it is streamed from its first byte, verified on
//! the way, retried from the first byte when the registry fails transiently, shown, and recorded
//! as it lands. What a source adds is only how to open a blob (`BlobSource`).

use std::future::Future;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::{StreamExt, TryStreamExt};

use crate::delivery::push::pipeline::manifest::Descriptor;
use crate::delivery::push::pipeline::progress::{BlobProgress, Progress};
use crate::delivery::push::pipeline::records::{SentBlob, SentBlobs};
use crate::delivery::push::pipeline::stream::{Encoding, SourceFailure};
use crate::image::archive::{self, Compression};
use crate::image::digest::Digest;
use crate::image::registry::{RegistryClient, Watchdog};
use crate::plumbing::error::{Error, Result};
use crate::plumbing::limits::seconds_text;
use crate::plumbing::output::Printer;

/// What happened to one blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Pushed,
    AlreadyThere,
    /// Linked from another repository of the same registry: no bytes sent.
    Mounted,
}

impl Outcome {
    fn said(self) -> &'static str {
        match self {
            Outcome::Pushed => "pushed",
            Outcome::AlreadyThere => "exists",
            Outcome::Mounted => "mounted",
        }
    }
}

/// One blob as its source holds it.
#[derive(Debug, Clone)]
pub(crate) struct Blob {
    /// For progress and messages: `layer 2/5`, `blob 3b0c5037`.
    pub label: String,
    /// What the record of sent blobs knows it by: a layer's diff_id.
    pub record_key: Digest,
    /// The bytes as stored: digest, size, media type.
    pub stored: Descriptor,
    /// As stored, or compressed on the way (uncompressed layers only).
    pub encoding: Encoding,
}

/// A blob's bytes from the first, and where its source keeps why it failed mid-stream.
pub(crate) struct Opened {
    pub body: BoxStream<'static, io::Result<Bytes>>,
    pub source_failure: Option<SourceFailure>,
}

/// Where a source's blobs are read: an archive (and what adapts to one: podman's store), or
/// containerd's content store.
pub(crate) trait BlobSource: Sync {
    type Item: Sync;
    /// `item`'s bytes from the first, encoded as `blob.encoding` says, counted on `bar`.
    fn open(&self, item: &Self::Item, blob: &Blob, bar: &BlobProgress) -> Result<Opened>;
    /// What a failure of the source itself mid-stream means: bad input, not retried.
    fn fault(&self, item: &Self::Item, err: io::Error) -> Error;
}

/// A blob as it now is in the registry.
pub(crate) struct SentLayer {
    /// The blob's stored digest, as the manifest builder looks it up.
    pub key: Digest,
    pub descriptor: Descriptor,
    pub outcome: Outcome,
}

/// Everything an upload needs besides the blob; cheap to clone into the export's thread.
#[derive(Clone)]
pub(crate) struct Uploader {
    pub client: RegistryClient,
    pub repo: String,
    /// How uncompressed layers go: as stored, or compressed on the way.
    pub encoding: Encoding,
    /// Read for what the registry may have already; each blob is recorded as it lands.
    sent_before: Arc<Mutex<SentBlobs>>,
    pub progress: Arc<Progress>,
    pub printer: Printer,
}

impl Uploader {
    pub(crate) fn new(
        client: &RegistryClient,
        repo: &str,
        encoding: Encoding,
        cache_dir: Option<&Path>,
        printer: &Printer,
    ) -> Self {
        Self {
            client: client.clone(),
            repo: repo.to_string(),
            encoding,
            sent_before: Arc::new(Mutex::new(SentBlobs::load_in(cache_dir))),
            progress: Arc::new(Progress::new(printer)),
            printer: printer.clone(),
        }
    }

    /// How a blob stored with `compression` goes: only uncompressed ones are re-encoded.
    pub(crate) fn encoding_for(&self, compression: Compression) -> Encoding {
        if compression == Compression::None {
            self.encoding
        } else {
            Encoding::AsStored
        }
    }

    /// Every one of `blobs` in the registry, at most `jobs` at once, the largest started first:
    /// the longest upload sets the wall time, so it should not wait for a free slot.
    pub(crate) async fn send_all<S: BlobSource>(
        &self,
        source: &S,
        mut blobs: Vec<(Blob, &S::Item)>,
        jobs: usize,
    ) -> Result<Vec<SentLayer>> {
        blobs.sort_by_key(|(blob, _)| std::cmp::Reverse(blob.stored.size));
        futures_util::stream::iter(
            blobs
                .iter()
                .map(|(blob, item)| self.send(source, *item, blob)),
        )
        .buffer_unordered(jobs.max(1))
        .try_collect()
        .await
    }

    /// `blob` in the registry, the cheapest way there is.
    pub(crate) async fn send<S: BlobSource>(
        &self,
        source: &S,
        item: &S::Item,
        blob: &Blob,
    ) -> Result<SentLayer> {
        let bar = self.progress.blob(blob.label.clone(), blob.stored.size);
        let sent = match self.found(blob).await {
            Ok(Some(found)) => Ok(found),
            Ok(None) => {
                let what = format!("{} to {}", blob.label, self.client.known_as());
                retrying(
                    &self.client,
                    &self.printer,
                    &what,
                    "sending it again",
                    |watchdog| self.upload(source, item, blob, &bar, watchdog),
                )
                .await
                .map(|descriptor| (descriptor, Outcome::Pushed))
            }
            Err(err) => Err(err),
        };
        match sent {
            Ok((descriptor, outcome)) => {
                self.remember(blob, &descriptor);
                bar.finish(outcome.said());
                Ok(SentLayer {
                    key: blob.stored.digest.clone(),
                    descriptor,
                    outcome,
                })
            }
            Err(err) => {
                bar.abandon();
                Err(err)
            }
        }
    }

    /// The blob as the registry would hold it, when known without reading it: as stored, its
    /// own descriptor; re-encoded, only a record knows it.
    pub(crate) fn known(&self, blob: &Blob) -> Option<Descriptor> {
        match blob.encoding {
            Encoding::AsStored => Some(blob.stored.clone()),
            Encoding::Gzip | Encoding::Zstd => self
                .record()
                .get(self.client.host(), &blob.record_key, blob.encoding)
                .map(|r| Descriptor::new(&r.media_type, r.digest.clone(), r.size)),
        }
    }

    /// Already in the repository, or mounted from another one we sent it to: no bytes to send.
    pub(crate) async fn found(&self, blob: &Blob) -> Result<Option<(Descriptor, Outcome)>> {
        let Some(known) = self.known(blob) else {
            return Ok(None);
        };
        if self.client.blob_exists(&self.repo, &known.digest).await? == Some(known.size) {
            return Ok(Some((known, Outcome::AlreadyThere)));
        }
        let from = self
            .record()
            .get(self.client.host(), &blob.record_key, blob.encoding)
            .filter(|r| r.repository != self.repo && r.digest == known.digest)
            .map(|r| r.repository.clone());
        let Some(from) = from else {
            return Ok(None);
        };
        // The record is a hint: a refused or failed mount falls back to an upload.
        match self
            .client
            .mount_blob(&self.repo, &known.digest, &from)
            .await
        {
            Ok(true) => {
                self.printer
                    .debug(&format!("mounted {} from {from}", known.digest));
                Ok(Some((known, Outcome::Mounted)))
            }
            Ok(false) => Ok(None),
            Err(err) => {
                self.printer.debug(&format!(
                    "not mounted, uploading instead: {}",
                    innermost(&err)
                ));
                Ok(None)
            }
        }
    }

    /// One attempt, from the first byte. When the source failed, that is the error (bad input,
    /// not retried), whatever the request made of it.
    async fn upload<S: BlobSource>(
        &self,
        source: &S,
        item: &S::Item,
        blob: &Blob,
        bar: &BlobProgress,
        watchdog: Watchdog,
    ) -> Result<Descriptor> {
        bar.rewind();
        let opened = source.open(item, blob, bar)?;
        let pushed = self.upload_body(blob, opened.body, &watchdog).await;
        pushed.map_err(|err| match opened.source_failure.and_then(|f| f.take()) {
            Some(read_error) => source.fault(item, read_error),
            None => err,
        })
    }

    /// Streams `body` (the blob encoded as `blob.encoding` says) into one upload: by its stored
    /// digest, or hashed on the way when it is re-encoded. Returns the blob as the registry holds it.
    pub(crate) async fn upload_body(
        &self,
        blob: &Blob,
        body: impl futures_util::Stream<Item = io::Result<Bytes>> + Send + 'static,
        watchdog: &Watchdog,
    ) -> Result<Descriptor> {
        let compression = match blob.encoding {
            Encoding::AsStored => {
                let stored = &blob.stored;
                self.client
                    .push_blob_within(&self.repo, &stored.digest, stored.size, body, watchdog)
                    .await?;
                return Ok(stored.clone());
            }
            Encoding::Gzip => Compression::Gzip,
            Encoding::Zstd => Compression::Zstd,
        };
        let (digest, size) = self
            .client
            .push_blob_unknown_digest_within(&self.repo, body, watchdog)
            .await?;
        let media_type = archive::oci_layer_type(compression);
        Ok(Descriptor::new(media_type.as_str(), digest, size))
    }

    /// Records a blob the registry now holds, and saves the record at once: a push that fails
    /// later (or is interrupted) must not cost this blob's upload again.
    pub(crate) fn remember(&self, blob: &Blob, descriptor: &Descriptor) {
        let sent = SentBlob {
            digest: descriptor.digest.clone(),
            size: descriptor.size,
            media_type: descriptor.media_type.clone(),
            repository: self.repo.clone(),
        };
        let mut record = self.record();
        record.record(self.client.host(), &blob.record_key, blob.encoding, sent);
        if let Err(err) = record.save() {
            self.printer
                .debug(&format!("could not save the record of sent blobs: {err}"));
        }
    }

    fn record(&self) -> MutexGuard<'_, SentBlobs> {
        // Every update is one call on a consistent value; a poisoned lock still holds one.
        self.sent_before
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A blob already in memory (a config, an attachment), sent whole unless the registry has it.
    pub(crate) async fn send_small_blob(&self, digest: &Digest, bytes: &[u8]) -> Result<Outcome> {
        if self.client.blob_exists(&self.repo, digest).await?.is_some() {
            return Ok(Outcome::AlreadyThere);
        }
        let bytes = Bytes::copy_from_slice(bytes);
        let what = format!("the config {}", digest.short());
        retrying(
            &self.client,
            &self.printer,
            &what,
            "sending it again",
            |watchdog| {
                let size = bytes.len() as u64;
                let body = futures_util::stream::once(std::future::ready(Ok(bytes.clone())));
                async move {
                    self.client
                        .push_blob_within(&self.repo, digest, size, body, &watchdog)
                        .await
                }
            },
        )
        .await?;
        Ok(Outcome::Pushed)
    }
}

/// The one retry policy of uploads: `attempt` is run until it succeeds or fails for good. A
/// transient failure (a dropped connection, 408, 429, 5xx, an expired token) is tried again from
/// the start after a backoff, within the client's attempts and the no-progress bound of the
/// watchdog every attempt is given. `what` names what failed, `again` what is done about it.
pub(crate) async fn retrying<T, F, Fut>(
    client: &RegistryClient,
    printer: &Printer,
    what: &str,
    again: &str,
    mut attempt: F,
) -> Result<T>
where
    F: FnMut(Watchdog) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let watchdog = client.upload_watchdog();
    let mut tried = 1;
    loop {
        let err = match attempt(watchdog.clone()).await {
            Ok(done) => return Ok(done),
            Err(err) => err,
        };
        let Some(delay) = client.retry_delay(&err, tried, &watchdog) else {
            return Err(err);
        };
        printer.status(&format!(
            "{what} failed ({}); {again} in {} (attempt {} of {})",
            innermost(&err),
            seconds_text(delay),
            tried + 1,
            client.attempts()
        ));
        tokio::time::sleep(delay).await;
        tried += 1;
    }
}

/// The deepest cause of `err`, which says what actually happened.
pub(crate) fn innermost(err: &Error) -> String {
    err.causes()
        .pop()
        .unwrap_or_else(|| err.message().to_string())
}
