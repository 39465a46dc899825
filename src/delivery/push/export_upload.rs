//! Layers sent while the engine's export streams past: each large member is read past when the
//! registry already has it, else streamed straight into an upload (one PUT when its name gives
//! its digest, else a PATCH hashed on the way), and never held anywhere.

use std::collections::HashMap;
use std::io::{self, Read};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use super::cache::SentBlobs;
use super::layer_upload::Outcome;
use super::manifest::Descriptor;
use super::progress::Progress;
use super::stream::{self, Encoding};
use crate::error::{Error, Result};
use crate::image::archive::{self, Compression, LargeMember, MemberSink};
use crate::image::registry::RegistryClient;
use crate::output::Printer;

/// What became of one large member.
#[derive(Debug, Clone)]
pub(super) struct StreamedLayer {
    pub outcome: Outcome,
    pub encoding: Encoding,
    /// The blob as sent when it differs from the stored bytes (re-encoded on the way).
    pub re_encoded: Option<Descriptor>,
}

/// The sink the one-pass reader hands large members to; runs on its blocking thread and reaches
/// the registry through the runtime's handle.
pub(super) struct ExportUploader {
    handle: Handle,
    client: RegistryClient,
    repo: String,
    encoding: Encoding,
    sent_before: Arc<Mutex<SentBlobs>>,
    progress: Arc<Progress>,
    printer: Printer,
    /// By the member's offset in the skeleton.
    pending: HashMap<u64, Pending>,
    /// A registry failure met while deciding; it explains the pass stopping.
    failure: Option<Error>,
}

enum Pending {
    Done(StreamedLayer),
    Uploading(JoinHandle<Result<StreamedLayer>>),
}

impl ExportUploader {
    pub(super) fn new(
        client: RegistryClient,
        repo: &str,
        encoding: Encoding,
        sent_before: Arc<Mutex<SentBlobs>>,
        progress: Arc<Progress>,
        printer: &Printer,
    ) -> Self {
        Self {
            handle: Handle::current(),
            client,
            repo: repo.to_string(),
            encoding,
            sent_before,
            progress,
            printer: printer.clone(),
            pending: HashMap::new(),
            failure: None,
        }
    }

    /// Waits for every upload; the first registry failure wins over whatever the pass said.
    pub(super) async fn finish(self) -> Result<HashMap<u64, StreamedLayer>> {
        if let Some(failure) = self.failure {
            return Err(failure);
        }
        let mut done = HashMap::new();
        for (offset, pending) in self.pending {
            let layer = match pending {
                Pending::Done(layer) => layer,
                Pending::Uploading(task) => task.await.map_err(|err| {
                    Error::new(crate::error::ExitCode::Failure, "uploading a layer")
                        .with_source(err)
                })??,
            };
            done.insert(offset, layer);
        }
        Ok(done)
    }

    /// The blob the registry would hold for this member, when known before reading it.
    fn known_blob(&self, member: &LargeMember, encoding: Encoding) -> Option<Descriptor> {
        let named = member.named_digest.clone()?;
        match encoding {
            Encoding::AsStored => Some(Descriptor::new("", named, member.len)),
            // Re-encoded, only the record knows the digest; the member is uncompressed, so its
            // name is its diff_id.
            Encoding::Gzip | Encoding::Zstd => self
                .record()
                .get(self.client.host(), &named, encoding)
                .map(|r| Descriptor::new(&r.media_type, r.digest.clone(), r.size)),
        }
    }

    /// Already in the repository, or mounted from another one we sent it to.
    fn already_there(
        &mut self,
        member: &LargeMember,
        known: &Descriptor,
        encoding: Encoding,
    ) -> Result<Option<Outcome>> {
        let exists = self
            .handle
            .block_on(self.client.blob_exists(&self.repo, &known.digest))?;
        if exists == Some(known.size) {
            return Ok(Some(Outcome::AlreadyThere));
        }
        let from = member.named_digest.as_ref().and_then(|diff_id| {
            self.record()
                .get(self.client.host(), diff_id, encoding)
                .filter(|r| r.repository != self.repo && r.digest == known.digest)
                .map(|r| r.repository.clone())
        });
        let Some(from) = from else {
            return Ok(None);
        };
        // The record is a hint: a refused or failed mount falls back to an upload.
        match self
            .handle
            .block_on(self.client.mount_blob(&self.repo, &known.digest, &from))
        {
            Ok(true) => {
                self.printer
                    .debug(&format!("mounted {} from {from}", known.digest));
                Ok(Some(Outcome::Mounted))
            }
            Ok(false) => Ok(None),
            Err(err) => {
                self.printer
                    .debug(&format!("not mounted, uploading instead: {err}"));
                Ok(None)
            }
        }
    }

    fn record(&self) -> MutexGuard<'_, SentBlobs> {
        // Every update is one call on a consistent value; a poisoned lock still holds one.
        self.sent_before
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn send(&mut self, member: &LargeMember, content: &mut dyn Read) -> Result<(), io::Error> {
        let encoding = if member.compression == Compression::None {
            self.encoding
        } else {
            Encoding::AsStored
        };
        let label = match &member.named_digest {
            Some(digest) => format!("layer {}", digest.short()),
            None => format!("layer {}", member.path),
        };
        let bar = self.progress.blob(label, member.len);
        if let Some(known) = self.known_blob(member, encoding) {
            match self.already_there(member, &known, encoding) {
                Ok(Some(outcome)) => {
                    io::copy(content, &mut io::sink())?;
                    bar.finish(if outcome == Outcome::Mounted {
                        "mounted"
                    } else {
                        "exists"
                    });
                    let re_encoded = (encoding != Encoding::AsStored).then_some(known);
                    self.pending.insert(
                        member.offset,
                        Pending::Done(StreamedLayer {
                            outcome,
                            encoding,
                            re_encoded,
                        }),
                    );
                    return Ok(());
                }
                Ok(None) => {}
                Err(err) => {
                    self.failure = Some(err);
                    return Err(io::Error::other("the registry check failed"));
                }
            }
        }
        let (writer, body) = stream::channel();
        let client = self.client.clone();
        let repo = self.repo.clone();
        let task = match (encoding, member.named_digest.clone()) {
            (Encoding::AsStored, Some(digest)) => {
                let size = member.len;
                self.handle.spawn(async move {
                    client.push_blob(&repo, &digest, size, body).await?;
                    Ok(StreamedLayer {
                        outcome: Outcome::Pushed,
                        encoding,
                        re_encoded: None,
                    })
                })
            }
            _ => self.handle.spawn(async move {
                let (digest, size) = client.push_blob_unknown_digest(&repo, body).await?;
                let re_encoded = match encoding {
                    Encoding::AsStored => None,
                    Encoding::Gzip => Some(Compression::Gzip),
                    Encoding::Zstd => Some(Compression::Zstd),
                }
                .map(|c| Descriptor::new(archive::oci_layer_type(c).as_str(), digest, size));
                Ok(StreamedLayer {
                    outcome: Outcome::Pushed,
                    encoding,
                    re_encoded,
                })
            }),
        };
        self.pending.insert(member.offset, Pending::Uploading(task));
        let pumped = stream::encode_into(
            content,
            writer,
            encoding,
            &bar,
            &stream::SourceFailure::default(),
        );
        match &pumped {
            Ok(()) => bar.finish("pushed"),
            Err(_) => bar.abandon(),
        }
        pumped
    }
}

impl MemberSink for ExportUploader {
    fn large_member(&mut self, member: &LargeMember, content: &mut dyn Read) -> io::Result<()> {
        self.send(member, content)
    }
}
