//! OCI layouts as oras, cosign, regclient and buildx write them, byte-exact from the image-spec:
//! images beside artifacts (signatures, SBOMs, charts, `application/vnd.oci.empty.v1+json`
//! configs), image indexes carrying buildx attestation manifests, and members rewritten in
//! place (docker 25's `"manifests": null`, jib's lowercase keys, a descriptor's media type).

use std::io::Read;
use std::path::Path;

use serde_json::{Value, json};

use super::fixtures::{self, Entry, Image, Kind, LayerCompression, OCI_CONFIG, OCI_INDEX, sha256};

pub(crate) const OCI_EMPTY: &str = "application/vnd.oci.empty.v1+json";
pub(crate) const COSIGN_SIGNATURE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
pub(crate) const IN_TOTO: &str = "application/vnd.in-toto+json";
pub(crate) const SPDX: &str = "application/spdx+json";
pub(crate) const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
pub(crate) const HELM_CHART: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";

/// An OCI layout being assembled: blobs by digest, and the entries of `index.json`.
#[derive(Default)]
pub(crate) struct Layout {
    blobs: Vec<(String, Vec<u8>)>,
    entries: Vec<Value>,
}

impl Layout {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Stores `bytes` as a blob; returns its descriptor (`mediaType`, `digest`, `size`).
    pub(crate) fn blob(&mut self, media_type: &str, bytes: &[u8]) -> Value {
        let digest = sha256(bytes);
        if !self.blobs.iter().any(|(known, _)| *known == digest) {
            self.blobs.push((digest.clone(), bytes.to_vec()));
        }
        json!({"mediaType": media_type, "digest": digest, "size": bytes.len()})
    }

    /// Stores `image` (uncompressed OCI layers, its config, its OCI manifest); returns the
    /// manifest's descriptor with the image's platform.
    pub(crate) fn image(&mut self, image: &Image) -> Value {
        for index in 0..image.layer_count() {
            self.blob(fixtures::OCI_LAYER, image.layer(index));
        }
        self.blob(OCI_CONFIG, image.config_bytes());
        let manifest = image.manifest(LayerCompression::None);
        let mut descriptor = self.blob(fixtures::OCI_MANIFEST, &manifest);
        let mut platform = json!({"architecture": image.architecture, "os": image.os});
        if let Some(variant) = &image.variant {
            platform["variant"] = json!(variant);
        }
        descriptor["platform"] = platform;
        descriptor
    }

    /// An artifact manifest: `config` (media type, bytes) and one layer (media type, bytes),
    /// with `artifactType` when given (image-spec 1.1, as oras writes).
    pub(crate) fn artifact(
        &mut self,
        config: (&str, &[u8]),
        layer: (&str, &[u8]),
        artifact_type: Option<&str>,
    ) -> Value {
        let config = self.blob(config.0, config.1);
        let layer = self.blob(layer.0, layer.1);
        let mut manifest = json!({
            "schemaVersion": 2,
            "mediaType": fixtures::OCI_MANIFEST,
            "config": config,
            "layers": [layer],
        });
        if let Some(artifact_type) = artifact_type {
            manifest["artifactType"] = json!(artifact_type);
        }
        let bytes = serde_json::to_vec(&manifest).unwrap();
        let mut descriptor = self.blob(fixtures::OCI_MANIFEST, &bytes);
        if let Some(artifact_type) = artifact_type {
            descriptor["artifactType"] = json!(artifact_type);
        }
        descriptor
    }

    /// An SPDX SBOM as `oras push --artifact-type` writes it: the empty config.
    pub(crate) fn sbom(&mut self, seed: u8) -> Value {
        let document = format!("{{\"spdxVersion\":\"SPDX-2.3\",\"name\":\"sbom-{seed}\"}}");
        self.artifact((OCI_EMPTY, b"{}"), (SPDX, document.as_bytes()), Some(SPDX))
    }

    /// A cosign signature as cosign before 2.0 writes it: an image config type over a
    /// simple-signing payload layer.
    pub(crate) fn cosign_signature(&mut self, signed: &Value) -> Value {
        let payload = json!({"critical": {"image": {"docker-manifest-digest": signed["digest"]}}});
        let payload = serde_json::to_vec(&payload).unwrap();
        let config = json!({"architecture": "", "os": "", "config": {},
            "rootfs": {"type": "layers", "diff_ids": [sha256(&payload)]}});
        let config = serde_json::to_vec(&config).unwrap();
        self.artifact((OCI_CONFIG, &config), (COSIGN_SIGNATURE, &payload), None)
    }

    /// A Helm chart as `helm push` writes it.
    pub(crate) fn helm_chart(&mut self) -> Value {
        let chart = fixtures::compress(b"apiVersion: v2\nname: demo\n", LayerCompression::Gzip);
        self.artifact(
            (HELM_CONFIG, br#"{"name":"demo","version":"0.1.0"}"#),
            (HELM_CHART, &chart),
            None,
        )
    }

    /// An entry regclient writes for a bare artifact: an image config type holding `{}`.
    pub(crate) fn bare_config_artifact(&mut self) -> Value {
        self.artifact(
            (OCI_CONFIG, b"{}"),
            (fixtures::OCI_LAYER, b"not a tar, just notes"),
            None,
        )
    }

    /// A buildx attestation manifest for the platform manifest `subject`.
    pub(crate) fn attestation(&mut self, subject: &Value) -> Value {
        let statement = json!({"_type": "https://in-toto.io/Statement/v0.1",
            "subject": [{"digest": {"sha256": subject["digest"].as_str().unwrap().trim_start_matches("sha256:")}}]});
        let statement = serde_json::to_vec(&statement).unwrap();
        let config = json!({"architecture": "unknown", "os": "unknown", "config": {},
            "rootfs": {"type": "layers", "diff_ids": [sha256(&statement)]}});
        let config = serde_json::to_vec(&config).unwrap();
        let mut descriptor = self.artifact((OCI_CONFIG, &config), (IN_TOTO, &statement), None);
        descriptor["platform"] = json!({"architecture": "unknown", "os": "unknown"});
        descriptor["annotations"] = json!({
            "vnd.docker.reference.digest": subject["digest"],
            "vnd.docker.reference.type": "attestation-manifest",
        });
        descriptor
    }

    /// An OCI image index over `children`; returns its descriptor and bytes.
    pub(crate) fn index(&mut self, children: &[Value]) -> (Value, Vec<u8>) {
        let index = json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": children});
        let bytes = serde_json::to_vec(&index).unwrap();
        (self.blob(OCI_INDEX, &bytes), bytes)
    }

    /// Lists `descriptor` in `index.json`, named `ref_name` when given.
    pub(crate) fn entry(&mut self, descriptor: &Value, ref_name: Option<&str>) {
        let mut entry = descriptor.clone();
        if let Some(name) = ref_name {
            entry["annotations"] = json!({"org.opencontainers.image.ref.name": name});
        }
        self.entries.push(entry);
    }

    /// A stored blob's bytes.
    pub(crate) fn blob_bytes(&self, digest: &str) -> &[u8] {
        let (_, bytes) = self
            .blobs
            .iter()
            .find(|(known, _)| known == digest)
            .expect("a blob of the layout");
        bytes
    }

    /// Removes a blob, as an export of only some platforms leaves it out.
    pub(crate) fn remove_blob(&mut self, digest: &str) {
        self.blobs.retain(|(known, _)| known != digest);
    }

    /// Replaces a blob's bytes with others of another size (a damaged blob).
    pub(crate) fn damage_blob(&mut self, digest: &str) {
        for (known, bytes) in &mut self.blobs {
            if known == digest {
                bytes.extend_from_slice(b"damaged");
            }
        }
    }

    fn members(&self) -> Vec<(String, Vec<u8>)> {
        let mut members = vec![(
            "oci-layout".to_string(),
            br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec(),
        )];
        for (digest, bytes) in &self.blobs {
            let hex = digest.trim_start_matches("sha256:");
            members.push((format!("blobs/sha256/{hex}"), bytes.clone()));
        }
        let index = json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": self.entries});
        members.push((
            "index.json".to_string(),
            serde_json::to_vec(&index).unwrap(),
        ));
        members
    }

    pub(crate) fn write_dir(&self, dir: &Path) {
        for (path, bytes) in self.members() {
            let target = dir.join(path);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(target, bytes).unwrap();
        }
    }

    pub(crate) fn write_tar(&self, path: &Path) {
        let entries: Vec<Entry> = self
            .members()
            .into_iter()
            .map(|(path, bytes)| Entry {
                path,
                kind: Kind::File(bytes),
            })
            .collect();
        fixtures::write_tar(path, &entries);
    }
}

/// Rewrites the tar at `path` with `member`'s bytes replaced by `edit(old bytes)`.
pub(crate) fn rewrite_member(path: &Path, member: &str, edit: impl Fn(&[u8]) -> Vec<u8>) {
    let mut archive = tar::Archive::new(std::fs::File::open(path).unwrap());
    let mut entries = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let target = |entry: &tar::Entry<_>| {
            let target = entry.link_name().unwrap().unwrap();
            target.to_string_lossy().into_owned()
        };
        let kind = match entry.header().entry_type() {
            tar::EntryType::Symlink => Kind::Symlink(target(&entry)),
            tar::EntryType::Link => Kind::Hardlink(target(&entry)),
            _ => {
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).unwrap();
                Kind::File(if name == member { edit(&bytes) } else { bytes })
            }
        };
        entries.push(Entry { path: name, kind });
    }
    fixtures::write_tar(path, &entries);
}
