//! Targets for what image tools write: archives (every format, every compression), OCI layouts'
//! and registries' manifest, index and config JSON with platform selection, and references.

use std::io::{self, Read};

use crate::image::archive::{Archive, PlatformImage, RawBlob, Source, oci_manifest};
use crate::image::digest::Digest;
use crate::image::oci::{Platform, parse_index_json, parse_manifest};
use crate::image::reference::{ImageName, RegistryHost, Target};

/// The most of one layer a target reads: the archive is at most the fuzzer's input, inflated.
const LAYER_READ_LIMIT: u64 = 64 << 20;

/// An archive on standard input, as `push -` reads it: sniffed, decompressed (gzip, zstd,
/// bzip2, xz), indexed, its images resolved (docker's `manifest.json`, an OCI layout's
/// `index.json`, the manifests, indexes and configs they name); an image and platform chosen;
/// each layer read and verified. Whatever reads whole is written back as the single-platform
/// archive `push` hands node loaders, which must read back as the same image.
pub fn archive(data: &[u8]) {
    let Ok(archive) = Archive::from_reader(data, "fuzz input") else {
        return;
    };
    for image in archive.images() {
        let _ = image.label_with_id();
        for platform in &image.platforms {
            for layer in &platform.layers {
                if let Ok(reader) = archive.layer_reader(layer) {
                    let _ = io::copy(&mut reader.take(LAYER_READ_LIMIT), &mut io::sink());
                }
            }
        }
    }
    for wanted in [None, Some("linux/amd64"), Some("linux/arm64/v8")] {
        let _ = archive.select(None, wanted);
    }
    if let Ok(image) = archive.select(None, None)
        && let Some(platform) = image.platforms.first()
    {
        written_reads_back(&archive, platform);
    }
}

/// `write_docker_archive` of `platform`, opened again: the same config, layers and platform.
fn written_reads_back(archive: &Archive, platform: &PlatformImage) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let out = dir.path().join("written.tar");
    let name = "fuzz.local:5000/round/trip:1".to_string();
    if archive
        .write_docker_archive(platform, std::slice::from_ref(&name), &out)
        .is_err()
    {
        return;
    }
    let again = match Archive::open(&Source::Path(out)) {
        Ok(again) => again,
        Err(err) => panic!("what we wrote does not open: {err}"),
    };
    let image = match again.select(Some(&name), None) {
        Ok(image) => image,
        Err(err) => panic!("what we wrote has no image {name}: {err}"),
    };
    let [read] = image.platforms.as_slice() else {
        panic!("what we wrote holds {} platforms", image.platforms.len());
    };
    assert_eq!(read.config.digest, platform.config.digest);
    assert_eq!(read.platform, platform.platform);
    let diff_ids = |image: &PlatformImage| -> Vec<Digest> {
        image.layers.iter().map(|l| l.diff_id.clone()).collect()
    };
    assert_eq!(diff_ids(read), diff_ids(platform));
}

/// A blob of JSON as an OCI layout or a registry hands it: an `index.json`, a manifest or
/// index (its media type, artifact kind, children, platforms chosen among), an image config.
/// And the manifest we write for a config and layers reads back as the same descriptors.
pub fn oci_json(data: &[u8]) {
    if let Ok(entries) = parse_index_json(data) {
        for entry in &entries {
            let _ = entry.platform();
            let _ = entry.is_attachment();
            let _ = entry.attestation_subject();
            let _ = entry.blob_path();
        }
    }
    if let Ok(manifest) = parse_manifest(data) {
        let _ = manifest.is_index();
        let _ = manifest.own_media_type();
        let _ = manifest.artifact_kind();
        let _ = manifest.subject_digest();
        let wanted: [Platform; 2] = [
            Platform::host(),
            "linux/arm/v7".parse().unwrap_or_else(|_| Platform::host()),
        ];
        for child in manifest.children() {
            if let Some(platform) = child.platform() {
                let _ = platform.to_string();
                for wanted in &wanted {
                    let _ = platform.satisfies(wanted);
                }
            }
        }
        let layers: Vec<(&str, &Digest, u64)> = manifest
            .layers()
            .iter()
            .map(|layer| {
                (
                    layer.media_type.as_deref().unwrap_or_default(),
                    &layer.digest,
                    layer.size,
                )
            })
            .collect();
        if let Some(config) = &manifest.config {
            written_manifest_reads_back(config.media_type.as_deref(), data, &layers);
        }
    }
    if let Ok(config) = crate::image::archive::ConfigFacts::from_bytes(data) {
        let _ = config.platform.to_string();
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(platform) = text.parse::<Platform>() {
            let again: Platform = match platform.to_string().parse() {
                Ok(again) => again,
                Err(err) => panic!("{platform} does not read back: {err}"),
            };
            assert_eq!(again, platform);
        }
    }
}

/// `oci_manifest` for a config (these bytes, as its blob) and the layers read: parsed again,
/// the same config and the same layers, in order.
fn written_manifest_reads_back(
    config_type: Option<&str>,
    config: &[u8],
    layers: &[(&str, &Digest, u64)],
) {
    let config = RawBlob::new(config_type.unwrap_or("application/json"), config.to_vec());
    let manifest = oci_manifest(&config, layers);
    let read = match parse_manifest(&manifest.bytes) {
        Ok(read) => read,
        Err(err) => panic!("the manifest we write does not parse: {err}"),
    };
    assert!(!read.is_index());
    let read_config = read.config.as_ref().map(|c| (&c.digest, c.size));
    assert_eq!(read_config, Some((&config.digest, config.size())));
    let read_layers: Vec<(&str, &Digest, u64)> = read
        .layers()
        .iter()
        .map(|l| {
            (
                l.media_type.as_deref().unwrap_or_default(),
                &l.digest,
                l.size,
            )
        })
        .collect();
    assert_eq!(read_layers, layers);
}

/// A reference and a registry host as users, archives and ConfigMaps write them: parsed,
/// retargeted at a host as `push` names its target, and written back; what we write parses
/// back to the same name, and an error quotes the input shortened.
pub fn reference(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match ImageName::parse(text) {
        Ok(name) => {
            let written = name.to_string();
            let again = match ImageName::parse(&written) {
                Ok(again) => again,
                Err(err) => panic!("{written:?} (written from {text:?}) does not parse: {err}"),
            };
            assert_eq!(again.normalized(), written);
            let _ = name.familiar();
            let host = RegistryHost::parse("localhost:5001").ok();
            if let Some(host) = host {
                let target = Target::for_name(&name, &[&host]);
                let tagged = target.tagged(&host);
                if let Err(err) = ImageName::parse(&tagged) {
                    panic!("the target {tagged:?} we name for {text:?} does not parse: {err}");
                }
            }
        }
        Err(err) => {
            let shown = err.to_string();
            assert!(
                shown.len() <= super::ERROR_TEXT_LIMIT,
                "{} bytes",
                shown.len()
            );
        }
    }
    let _ = crate::image::reference::corrected(text);
    let _ = crate::image::reference::check_tag_or_digest(text);
    let _ = crate::image::reference::check_repository(text);
    for parsed in [
        RegistryHost::parse(text),
        RegistryHost::parse_allowing_scheme(text).map(|(host, _)| host),
    ] {
        match parsed {
            Ok(host) => {
                let again = RegistryHost::parse(host.as_str());
                assert_eq!(
                    again.as_ref().ok(),
                    Some(&host),
                    "{host} does not read back"
                );
                let _ = (host.hostname(), host.port(), host.is_loopback());
            }
            Err(err) => {
                let shown = err.to_string();
                assert!(
                    shown.len() <= super::ERROR_TEXT_LIMIT,
                    "{} bytes",
                    shown.len()
                );
            }
        }
    }
}
