//! Layers sent while the engine's export streams past: each large member is read past when the
//! registry already has it, else streamed straight into an upload (one PUT when its name gives
//! its digest, else a PATCH hashed on the way), and never held anywhere. The decisions and the
//! uploads are the one uploader's; an export cannot be read twice, so a failed upload is met by
//! exporting again (`from_engine`), not by a retry here.

use std::collections::HashMap;
use std::io::{self, Read};

use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::delivery::push::pipeline::manifest::Descriptor;
use crate::delivery::push::pipeline::stream::{self, Encoding};
use crate::delivery::push::pipeline::upload::{Blob, Outcome, Uploader};
use crate::image::archive::{LargeMember, MemberSink};
use crate::plumbing::error::{Error, ExitCode, Result};

/// What became of one large member.
#[derive(Debug, Clone)]
pub(crate) struct StreamedLayer {
    pub outcome: Outcome,
    pub encoding: Encoding,
    /// The blob as sent when it differs from the stored bytes (re-encoded on the way).
    pub re_encoded: Option<Descriptor>,
}

/// The sink the one-pass reader hands large members to; runs on its blocking thread and reaches
/// the registry through the runtime's handle.
pub(crate) struct ExportUploader {
    handle: Handle,
    uploader: Uploader,
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
    pub(crate) fn new(uploader: &Uploader) -> Self {
        Self {
            handle: Handle::current(),
            uploader: uploader.clone(),
            pending: HashMap::new(),
            failure: None,
        }
    }

    /// Waits for every upload; the first registry failure wins over whatever the pass said.
    pub(crate) async fn finish(self) -> Result<HashMap<u64, StreamedLayer>> {
        if let Some(failure) = self.failure {
            return Err(failure);
        }
        let mut done = HashMap::new();
        for (offset, pending) in self.pending {
            let layer = match pending {
                Pending::Done(layer) => layer,
                Pending::Uploading(task) => task.await.map_err(|err| {
                    Error::new(ExitCode::Failure, "uploading a layer").with_source(err)
                })??,
            };
            done.insert(offset, layer);
        }
        Ok(done)
    }

    /// The member as the uploader sees it, when its name gives its digest (a diff_id when it is
    /// uncompressed).
    fn blob(&self, member: &LargeMember) -> Option<Blob> {
        let named = member.named_digest.clone()?;
        Some(Blob {
            label: format!("layer {}", named.short()),
            record_key: named.clone(),
            stored: Descriptor::new("", named, member.len),
            encoding: self.uploader.encoding_for(member.compression),
        })
    }

    fn send(&mut self, member: &LargeMember, content: &mut dyn Read) -> Result<(), io::Error> {
        let blob = self.blob(member);
        let encoding = blob
            .as_ref()
            .map_or(Encoding::AsStored, |blob| blob.encoding);
        let label = blob.as_ref().map_or_else(
            || format!("layer {}", member.path),
            |blob| blob.label.clone(),
        );
        let bar = self.uploader.progress.blob(label, member.len);
        if let Some(blob) = &blob {
            match self.handle.block_on(self.uploader.found(blob)) {
                Ok(Some((known, outcome))) => {
                    io::copy(content, &mut io::sink())?;
                    bar.finish(if outcome == Outcome::Mounted {
                        "mounted"
                    } else {
                        "exists"
                    });
                    let re_encoded = (encoding != Encoding::AsStored).then_some(known);
                    let done = StreamedLayer {
                        outcome,
                        encoding,
                        re_encoded,
                    };
                    self.pending.insert(member.offset, Pending::Done(done));
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
        let uploader = self.uploader.clone();
        let task = self.handle.spawn(async move {
            let re_encoded = match &blob {
                Some(blob) => {
                    let watchdog = uploader.client.upload_watchdog();
                    let sent = uploader.upload_body(blob, body, &watchdog).await?;
                    (encoding != Encoding::AsStored).then_some(sent)
                }
                // Its digest is known once the pass has hashed it: the skeleton says it.
                None => {
                    let client = &uploader.client;
                    client
                        .push_blob_unknown_digest(&uploader.repo, body)
                        .await?;
                    None
                }
            };
            Ok(StreamedLayer {
                outcome: Outcome::Pushed,
                encoding,
                re_encoded,
            })
        });
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
