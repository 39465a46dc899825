//! One layer to the registry, cheapest way first: already there (HEAD), mounted from another
//! repository we pushed it to, else streamed from the archive, verified, compressed if asked.

use super::cache::{SentBlob, SentBlobs};
use super::manifest::Descriptor;
use super::progress::BlobProgress;
use super::stream::{self, Encoding};
use crate::archive::{self, Archive, Compression, Layer};
use crate::digest::Digest;
use crate::error::{Error, ExitCode, Result};
use crate::output::Printer;
use crate::registry::RegistryClient;

/// What happened to one blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pushed,
    AlreadyThere,
    /// Linked from another repository of the same registry: no bytes sent.
    Mounted,
}

/// Everything a layer upload needs besides the layer.
pub struct Uploader<'a> {
    pub client: &'a RegistryClient,
    pub repo: &'a str,
    pub archive: &'a Archive,
    pub encoding: Encoding,
    pub sent_before: &'a SentBlobs,
    pub printer: &'a Printer,
}

/// A layer as it now is in the registry.
pub struct SentLayer {
    /// The layer's stored digest, as the manifest builder looks it up.
    pub key: Digest,
    pub diff_id: Digest,
    /// How it went over the wire (what the record of sent blobs is keyed by).
    pub encoding: Encoding,
    pub descriptor: Descriptor,
    pub outcome: Outcome,
}

impl Uploader<'_> {
    pub async fn send(&self, layer: Layer, bar: BlobProgress) -> Result<SentLayer> {
        let key = layer.stored_digest().clone();
        let encoding = if layer.compression == Compression::None {
            self.encoding
        } else {
            Encoding::AsStored
        };
        let result = self.send_cheapest(&layer, &key, encoding, &bar).await;
        match result {
            Ok((descriptor, outcome)) => {
                bar.finish(match outcome {
                    Outcome::Pushed => "pushed",
                    Outcome::AlreadyThere => "exists",
                    Outcome::Mounted => "mounted",
                });
                Ok(SentLayer {
                    key,
                    diff_id: layer.diff_id.clone(),
                    encoding,
                    descriptor,
                    outcome,
                })
            }
            Err(err) => {
                bar.abandon();
                Err(corrupt_input_or(err, &layer))
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
        let record = self
            .sent_before
            .get(self.client.host(), &layer.diff_id, encoding);
        // As stored, the digest is known without reading; re-encoded, only a record knows it.
        let known = match encoding {
            Encoding::AsStored => Some(Descriptor::new(
                layer.media_type_or_default(),
                key.clone(),
                layer.size(),
            )),
            Encoding::Gzip | Encoding::Zstd => {
                record.map(|r| Descriptor::new(&r.media_type, r.digest.clone(), r.size))
            }
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
                && self
                    .client
                    .mount_blob(self.repo, &descriptor.digest, &from.repository)
                    .await?
            {
                self.printer.debug(&format!(
                    "mounted {} from {}",
                    descriptor.digest, from.repository
                ));
                return Ok((descriptor, Outcome::Mounted));
            }
        }
        let reader = self
            .archive
            .layer_reader(layer)
            .map_err(|err| reading(layer, err))?;
        let body = stream::body(reader, encoding, bar.clone());
        match encoding {
            Encoding::AsStored => {
                self.client
                    .push_blob(self.repo, key, layer.size(), body)
                    .await?;
                let descriptor =
                    Descriptor::new(layer.media_type_or_default(), key.clone(), layer.size());
                Ok((descriptor, Outcome::Pushed))
            }
            Encoding::Gzip | Encoding::Zstd => {
                let (digest, size) = self
                    .client
                    .push_blob_unknown_digest(self.repo, body)
                    .await?;
                let compression = if encoding == Encoding::Zstd {
                    Compression::Zstd
                } else {
                    Compression::Gzip
                };
                let descriptor =
                    Descriptor::new(archive::oci_layer_type(compression), digest, size);
                Ok((descriptor, Outcome::Pushed))
            }
        }
    }
}

impl SentLayer {
    /// What the record of sent blobs keeps for this layer.
    pub fn as_sent_blob(&self, repository: &str) -> SentBlob {
        SentBlob {
            digest: self.descriptor.digest.clone(),
            size: self.descriptor.size,
            media_type: self.descriptor.media_type.clone(),
            repository: repository.to_string(),
        }
    }
}

/// A layer that fails verification mid-upload is the archive's fault, not the registry's:
/// report it as bad input, keeping the upload error as the cause.
fn corrupt_input_or(err: Error, layer: &Layer) -> Error {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && archive::is_verification_failure(io)
        {
            return Error::new(
                ExitCode::Input,
                format!("{} is corrupt; nothing was tagged", layer.describe()),
            )
            .with_source(err)
            .with_hint(
                "the archive was damaged after it was written: write it again (docker save, skopeo copy)",
            );
        }
        source = cause.source();
    }
    err
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
