//! One layer to the registry, cheapest way first: already there (HEAD), mounted from another
//! repository we pushed it to, else streamed from the archive, verified, compressed if asked.

use std::future::Future;
use std::sync::Mutex;

use super::cache::{SentBlob, SentBlobs};
use super::manifest::Descriptor;
use super::progress::BlobProgress;
use super::stream::{self, Encoding};
use crate::error::{Error, ExitCode, Result};
use crate::image::archive::{self, Archive, Compression, Layer};
use crate::image::digest::Digest;
use crate::image::registry::{RegistryClient, Watchdog};
use crate::limits::seconds_text;
use crate::output::Printer;

/// What happened to one blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Pushed,
    AlreadyThere,
    /// Linked from another repository of the same registry: no bytes sent.
    Mounted,
}

/// Everything a layer upload needs besides the layer.
pub(super) struct Uploader<'a> {
    pub client: &'a RegistryClient,
    pub repo: &'a str,
    pub archive: &'a Archive,
    pub encoding: Encoding,
    /// Read for what the registry may have already; each layer is recorded as it lands.
    pub sent_before: &'a Mutex<SentBlobs>,
    pub printer: &'a Printer,
}

/// A layer as it now is in the registry.
pub(super) struct SentLayer {
    /// The layer's stored digest, as the manifest builder looks it up.
    pub key: Digest,
    pub descriptor: Descriptor,
    pub outcome: Outcome,
}

impl Uploader<'_> {
    pub(super) async fn send(&self, layer: Layer, bar: BlobProgress) -> Result<SentLayer> {
        let key = layer.stored_digest().clone();
        let encoding = if layer.compression == Compression::None {
            self.encoding
        } else {
            Encoding::AsStored
        };
        let result = self.send_cheapest(&layer, &key, encoding, &bar).await;
        match result {
            Ok((descriptor, outcome)) => {
                self.remember(&layer.diff_id, encoding, &descriptor);
                bar.finish(match outcome {
                    Outcome::Pushed => "pushed",
                    Outcome::AlreadyThere => "exists",
                    Outcome::Mounted => "mounted",
                });
                Ok(SentLayer {
                    key,
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

    async fn send_cheapest(
        &self,
        layer: &Layer,
        key: &Digest,
        encoding: Encoding,
        bar: &BlobProgress,
    ) -> Result<(Descriptor, Outcome)> {
        let record = lock(self.sent_before)
            .get(self.client.host(), &layer.diff_id, encoding)
            .cloned();
        // As stored, the digest is known without reading; re-encoded, only a record knows it.
        let known = match encoding {
            Encoding::AsStored => Some(Descriptor::new(
                layer.media_type_or_default(),
                key.clone(),
                layer.size(),
            )),
            Encoding::Gzip | Encoding::Zstd => record
                .as_ref()
                .map(|r| Descriptor::new(&r.media_type, r.digest.clone(), r.size)),
        };
        if let Some(descriptor) = known {
            match self
                .client
                .blob_exists(self.repo, &descriptor.digest)
                .await?
            {
                Some(size) if size == descriptor.size => {
                    return Ok((descriptor, Outcome::AlreadyThere));
                }
                _ => {}
            }
            if let Some(from) =
                record.filter(|r| r.repository != self.repo && r.digest == descriptor.digest)
            {
                // The record is a hint: a refused or failed mount falls back to an upload.
                match self
                    .client
                    .mount_blob(self.repo, &descriptor.digest, &from.repository)
                    .await
                {
                    Ok(true) => {
                        self.printer.debug(&format!(
                            "mounted {} from {}",
                            descriptor.digest, from.repository
                        ));
                        return Ok((descriptor, Outcome::Mounted));
                    }
                    Ok(false) => {}
                    Err(err) => self.printer.debug(&format!(
                        "not mounted, uploading instead: {}",
                        innermost(&err)
                    )),
                }
            }
        }
        retrying(self.client, self.printer, &layer.describe(), |watchdog| {
            self.upload(layer, key, encoding, bar, watchdog)
        })
        .await
    }

    /// One attempt at streaming the layer from the archive, from its first byte. When the archive
    /// side failed, that is the error (bad input, not retried), whatever the request made of it.
    async fn upload(
        &self,
        layer: &Layer,
        key: &Digest,
        encoding: Encoding,
        bar: &BlobProgress,
        watchdog: Watchdog,
    ) -> Result<(Descriptor, Outcome)> {
        bar.rewind();
        let reader = self
            .archive
            .layer_reader(layer)
            .map_err(|err| reading(layer, err))?;
        let (body, source_failure) = stream::body(reader, encoding, bar.clone());
        let pushed = self.push_body(layer, key, encoding, body, &watchdog).await;
        pushed.map_err(|err| match source_failure.take() {
            Some(read_error) => archive_fault(layer, read_error),
            None => err,
        })
    }

    async fn push_body(
        &self,
        layer: &Layer,
        key: &Digest,
        encoding: Encoding,
        body: impl futures_util::Stream<Item = std::io::Result<bytes::Bytes>> + Send + 'static,
        watchdog: &Watchdog,
    ) -> Result<(Descriptor, Outcome)> {
        match encoding {
            Encoding::AsStored => {
                self.client
                    .push_blob_within(self.repo, key, layer.size(), body, watchdog)
                    .await?;
                let descriptor =
                    Descriptor::new(layer.media_type_or_default(), key.clone(), layer.size());
                Ok((descriptor, Outcome::Pushed))
            }
            Encoding::Gzip | Encoding::Zstd => {
                let (digest, size) = self
                    .client
                    .push_blob_unknown_digest_within(self.repo, body, watchdog)
                    .await?;
                let compression = if encoding == Encoding::Zstd {
                    Compression::Zstd
                } else {
                    Compression::Gzip
                };
                let descriptor =
                    Descriptor::new(archive::oci_layer_type(compression).as_str(), digest, size);
                Ok((descriptor, Outcome::Pushed))
            }
        }
    }

    /// Records a layer the registry now holds, and saves the record at once: a push that fails
    /// later (or is interrupted) must not cost this layer's upload again.
    pub(super) fn remember(&self, diff_id: &Digest, encoding: Encoding, descriptor: &Descriptor) {
        let blob = SentBlob {
            digest: descriptor.digest.clone(),
            size: descriptor.size,
            media_type: descriptor.media_type.clone(),
            repository: self.repo.to_string(),
        };
        let mut record = lock(self.sent_before);
        record.record(self.client.host(), diff_id, encoding, blob);
        if let Err(err) = record.save() {
            self.printer
                .debug(&format!("could not save the record of sent blobs: {err}"));
        }
    }
}

/// Runs `attempt` until it succeeds or fails for good: a transient failure (a dropped
/// connection, 408, 429, 5xx, an expired token) is tried again from the start after a backoff,
/// within the client's attempts and the upload's no-progress bound, which spans every attempt.
pub(super) async fn retrying<T, F, Fut>(
    client: &RegistryClient,
    printer: &Printer,
    what: &str,
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
        printer.debug(&format!(
            "{what}: attempt {tried} of {} failed ({}); trying again in {}",
            client.attempts(),
            innermost(&err),
            seconds_text(delay)
        ));
        tokio::time::sleep(delay).await;
        tried += 1;
    }
}

/// The deepest cause of `err`, which says what actually happened.
fn innermost(err: &Error) -> String {
    err.causes()
        .pop()
        .unwrap_or_else(|| err.message().to_string())
}

fn lock(record: &Mutex<SentBlobs>) -> std::sync::MutexGuard<'_, SentBlobs> {
    // Every update is one call on a consistent value; a poisoned lock still holds one.
    record
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A layer whose bytes failed mid-upload: corrupt (it does not hash to its digest) or unreadable.
fn archive_fault(layer: &Layer, err: std::io::Error) -> Error {
    if !archive::is_verification_failure(&err) {
        return reading(layer, err);
    }
    Error::new(
        ExitCode::Input,
        format!("{} is corrupt; nothing was tagged", layer.describe()),
    )
    .with_source(err)
    .with_hint(
        "the archive was damaged after it was written: write it again (docker save, skopeo copy)",
    )
}

fn reading(layer: &Layer, err: std::io::Error) -> Error {
    Error::new(
        ExitCode::Input,
        format!(
            "reading {} from {}",
            layer.describe(),
            layer.location.archive
        ),
    )
    .with_source(err)
}

/// A blob already in memory (a config, an attachment), sent whole unless the registry has it.
pub(super) async fn send_small_blob(
    client: &RegistryClient,
    printer: &Printer,
    repo: &str,
    digest: &Digest,
    bytes: &[u8],
) -> Result<Outcome> {
    if client.blob_exists(repo, digest).await?.is_some() {
        return Ok(Outcome::AlreadyThere);
    }
    let bytes = bytes::Bytes::copy_from_slice(bytes);
    let what = format!("the config {}", digest.short());
    retrying(client, printer, &what, |watchdog| {
        let size = bytes.len() as u64;
        let body = futures_util::stream::once(std::future::ready(Ok(bytes.clone())));
        async move {
            client
                .push_blob_within(repo, digest, size, body, &watchdog)
                .await
        }
    })
    .await?;
    Ok(Outcome::Pushed)
}
