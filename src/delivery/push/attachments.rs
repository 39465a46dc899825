//! The manifests an image index carries beside its platforms (buildx attestations, signatures):
//! their small blobs, then each manifest by digest, so that the index can be tagged unchanged
//! and the printed digest is the source's.

use bytes::Bytes;

use super::layer_upload::send_small_blob;
use crate::error::Result;
use crate::image::archive::Attachment;
use crate::image::registry::RegistryClient;
use crate::output::Printer;

pub(super) async fn push(
    client: &RegistryClient,
    printer: &Printer,
    repo: &str,
    attachments: &[Attachment],
) -> Result<()> {
    for attachment in attachments {
        for blob in &attachment.blobs {
            send_small_blob(client, printer, repo, &blob.digest, &blob.bytes).await?;
        }
        let manifest = &attachment.manifest;
        client
            .put_manifest(
                repo,
                manifest.digest.as_str(),
                &manifest.media_type,
                Bytes::from(manifest.bytes.clone()),
            )
            .await?;
    }
    Ok(())
}
