//! The manifests of a push, once every blob they name is in: the children by digest, then the
//! tag, last: the one commit point, whatever the source.

use bytes::Bytes;

use crate::image::archive::RawBlob;
use crate::image::digest::Digest;
use crate::image::engine::ContentManifest;
use crate::image::registry::{FetchedManifest, RegistryClient};
use crate::plumbing::error::Result;

/// A manifest as a source holds it: built by us (`RawBlob`), containerd's own bytes, or what
/// an engine's own push left in the registry.
pub(crate) trait Manifest {
    /// Its media type, digest and bytes.
    fn parts(&self) -> (&str, &Digest, Bytes);
}

impl Manifest for RawBlob {
    fn parts(&self) -> (&str, &Digest, Bytes) {
        (
            &self.media_type,
            &self.digest,
            Bytes::from(self.bytes.clone()),
        )
    }
}

impl Manifest for FetchedManifest {
    fn parts(&self) -> (&str, &Digest, Bytes) {
        (&self.media_type, &self.digest, self.bytes.clone())
    }
}

impl Manifest for ContentManifest {
    fn parts(&self) -> (&str, &Digest, Bytes) {
        (&self.media_type, &self.digest, self.bytes.clone())
    }
}

/// PUTs each of `children` by its digest, then `tagged` under `tag`; returns the tagged digest.
pub(crate) async fn tag_last<M: Manifest>(
    client: &RegistryClient,
    repo: &str,
    tag: &str,
    children: &[M],
    tagged: &M,
) -> Result<Digest> {
    for child in children {
        put_by_digest(client, repo, child).await?;
    }
    crate::plumbing::interrupt::doing(
        format!("tagging {}/{repo}:{tag}", client.known_as()),
        "the tag may or may not have been set",
    );
    put(client, repo, tag, tagged).await
}

/// A manifest that a later one names (a platform's, an attachment's), under its digest.
pub(crate) async fn put_by_digest(
    client: &RegistryClient,
    repo: &str,
    manifest: &impl Manifest,
) -> Result<Digest> {
    let (_, digest, _) = manifest.parts();
    put(client, repo, digest.as_str(), manifest).await
}

async fn put(
    client: &RegistryClient,
    repo: &str,
    reference: &str,
    manifest: &impl Manifest,
) -> Result<Digest> {
    let (media_type, _, bytes) = manifest.parts();
    client
        .put_manifest(repo, reference, media_type, bytes)
        .await
}
