//! The manifests an image index carries beside its platforms (buildx attestations, signatures):
//! their small blobs, then each manifest by digest, so that the index can be tagged unchanged
//! and the printed digest is the source's.

use crate::delivery::push::pipeline::commit::put_by_digest;
use crate::delivery::push::pipeline::upload::Uploader;
use crate::image::archive::Attachment;
use crate::plumbing::error::Result;

pub(crate) async fn push(uploader: &Uploader, attachments: &[Attachment]) -> Result<()> {
    for attachment in attachments {
        for blob in &attachment.blobs {
            uploader.send_small_blob(&blob.digest, &blob.bytes).await?;
        }
        put_by_digest(&uploader.client, &uploader.repo, &attachment.manifest).await?;
    }
    Ok(())
}
