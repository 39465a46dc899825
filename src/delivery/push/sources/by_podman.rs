//! podman where its store cannot be read here (a podman machine's VM, a remote service, a driver
//! whose layers are not plain directories): podman pushes from its own store, which it reads
//! per layer and checks against the registry, so a rebuild costs what its new layer costs. We
//! hand it our credentials in an auth file only we can read, and print the ref pinned by the
//! digest it pushed. Where podman cannot reach the registry, the export goes instead (-v says so).

use std::collections::HashSet;
use std::io::Write;

use crate::delivery::push::options::LayerCompression;
use crate::delivery::push::pipeline::records::{SentBlob, SentBlobs};
use crate::delivery::push::pipeline::stream::Encoding;
use crate::delivery::push::pipeline::to_registry::RegistryPush;
use crate::delivery::push::pipeline::upload::Outcome;
use crate::delivery::push::sources::from_engine::{
    Pushed, Selection, record_engine_push, record_manifest, repush_unchanged,
};
use crate::delivery::push::summary::Transfer;
use crate::image::digest::Digest;
use crate::image::engine::{CliPush, EnginePushFailure, Found};
use crate::image::oci;
use crate::image::registry::{FetchedManifest, RegistryClient};
use crate::plumbing::error::{Context, Error, ExitCode, Result};
use crate::plumbing::interrupt;
use crate::plumbing::output::{Printer, escape_control};

/// podman's own push; `None` (the reason said with -v) when the export must go.
pub(crate) async fn push(
    plan: &RegistryPush<'_>,
    found: &Found,
    selection: &Selection<'_>,
    compression: LayerCompression,
    printer: &Printer,
) -> Result<Option<Pushed>> {
    let Some(zstd) = own_push_zstd(plan, selection, compression, printer) else {
        return Ok(None);
    };
    let encoding = if zstd { Encoding::Zstd } else { Encoding::Gzip };
    let client = RegistryClient::new(plan.host, &plan.transport)?;
    client.ping().await?;
    if let Some(name) = client.checked_tls_name() {
        printer.debug(&format!(
            "not podman's own push: the registry is reached through the API server, its certificate checked for {name}, which a push to {} would not check",
            client.host()
        ));
        return Ok(None);
    }
    if let Some(pushed) = repush_unchanged(plan, &client, found, encoding, printer).await? {
        return Ok(Some(pushed));
    }
    let repo = plan.target.repository.as_str();
    let there_before = layers_there(plan, &client, found, encoding).await?;
    let authfile = authfile(&client).await?;
    let destination = format!("{}/{repo}:{}", client.host(), plan.target.tag);
    let how = CliPush {
        authfile: authfile.path(),
        // Plain HTTP needs podman's consent as it needs ours: loopback, or --insecure.
        tls_verify: !(plan.host.is_loopback() || plan.transport.insecure),
        zstd,
    };
    printer.status(&format!(
        "podman pushes {} to {destination} from its own store",
        found.image
    ));
    interrupt::doing(
        format!("podman was pushing {} to {destination}", found.image),
        "its push was stopped; the registry's tag may or may not have been set",
    );
    let Some(said) = podman_pushes(found, &destination, &how, &client, printer).await? else {
        return Ok(None);
    };
    drop(authfile);
    let (digest, stored) = match said {
        Some(digest) => {
            let stored = record_engine_push(plan, &client, found, encoding, &digest, printer).await;
            (digest, stored)
        }
        None => {
            let tagged = tagged_manifest(&client, plan, found).await?;
            record_manifest(plan, &client, found, encoding, &tagged, printer);
            (tagged.digest.clone(), Some(tagged))
        }
    };
    let transfer = match &stored {
        Some(stored) => remember_layers(
            plan,
            &client,
            found,
            encoding,
            stored,
            &there_before,
            printer,
        ),
        None => Transfer::default(),
    };
    Ok(Some(Pushed {
        digest,
        transfer,
        platforms: found.facts.platform.iter().cloned().collect(),
    }))
}

/// Whether podman's own push can do what was asked, and with zstd; `None`, said with -v, when not.
fn own_push_zstd(
    plan: &RegistryPush<'_>,
    selection: &Selection<'_>,
    compression: LayerCompression,
    printer: &Printer,
) -> Option<bool> {
    let zstd = match compression {
        LayerCompression::Auto | LayerCompression::Gzip => false,
        LayerCompression::Zstd => true,
        LayerCompression::None => {
            printer.debug(
                "not podman's own push: it compresses, and --compression none was asked for",
            );
            return None;
        }
    };
    if selection.chooses() {
        printer.debug("not podman's own push: --image and --platform choose inside an export");
        return None;
    }
    if plan.transport.ca_file.is_some() {
        printer.debug("not podman's own push: it trusts its own certs.d, not --ca-file");
        return None;
    }
    Some(zstd)
}

/// `podman push`, and the digest it said it pushed; `None` when podman cannot reach the
/// registry (the export takes over).
async fn podman_pushes(
    found: &Found,
    destination: &str,
    how: &CliPush<'_>,
    client: &RegistryClient,
    printer: &Printer,
) -> Result<Option<Option<Digest>>> {
    match found.cli_push(destination, how).await {
        Ok(said) => Ok(Some(said)),
        Err(EnginePushFailure::Unreachable(said)) => {
            printer.debug(&format!(
                "podman cannot reach {} ({}): exporting instead",
                client.host(),
                escape_control(&said)
            ));
            Ok(None)
        }
        Err(EnginePushFailure::Failed(said)) => Err(Error::new(
            ExitCode::Registry,
            format!("podman's push of {} to {destination}", found.image),
        )
        .with_source(Error::new(
            ExitCode::Registry,
            escape_control(&said).into_owned(),
        ))),
    }
}

/// The manifest the tag points to now (one GET), which must be one of the image podman pushed
/// (its config is the image ID): podman's remote client does not say what it pushed.
async fn tagged_manifest(
    client: &RegistryClient,
    plan: &RegistryPush<'_>,
    found: &Found,
) -> Result<FetchedManifest> {
    let repo = plan.target.repository.as_str();
    let tag = plan.target.tag.as_str();
    let raced = || {
        Error::new(
            ExitCode::Registry,
            format!(
                "after podman's push, {}/{repo}:{tag} is not image {}: another push to that tag raced ours",
                client.host(),
                found.facts.id
            ),
        )
        .with_hint("push again")
    };
    let tagged = client
        .manifest_in_push(repo, tag)
        .await?
        .ok_or_else(raced)?;
    let config = oci::parse_manifest(&tagged.bytes)
        .ok()
        .and_then(|manifest| manifest.config.map(|config| config.digest));
    match config {
        Some(config) if config.as_str() == found.facts.id => Ok(tagged),
        _ => Err(raced()),
    }
}

/// Our credentials for the registry as a containers auth file, readable by us alone (the temp
/// file's mode is 0600) and removed when dropped, Ctrl-C included.
async fn authfile(client: &RegistryClient) -> Result<tempfile::NamedTempFile> {
    let contents = client.engine_authfile().await?;
    let mut file = tempfile::Builder::new()
        .prefix("kubectl-registry-auth-")
        .suffix(".json")
        .tempfile()
        .context(ExitCode::Failure, || "writing podman's auth file")?;
    file.write_all(contents.as_bytes())
        .context(ExitCode::Failure, || "writing podman's auth file")?;
    Ok(file)
}

/// The layers (by diff_id) the registry already holds as podman sent them before, by our record,
/// and the config if it is there: podman does not say what it skipped.
async fn layers_there(
    plan: &RegistryPush<'_>,
    client: &RegistryClient,
    found: &Found,
    encoding: Encoding,
) -> Result<HashSet<Digest>> {
    let sent = SentBlobs::load_in(plan.cache_dir);
    let mut there = HashSet::new();
    let repo = plan.target.repository.as_str();
    if let Ok(config) = found.facts.id.parse::<Digest>()
        && client.blob_exists(repo, &config).await?.is_some()
    {
        there.insert(config);
    }
    for diff_id in &found.facts.diff_ids {
        if let Some(blob) = sent.get(client.host(), diff_id, encoding)
            && client.blob_exists(repo, &blob.digest).await? == Some(blob.size)
        {
            there.insert(diff_id.clone());
        }
    }
    Ok(there)
}

/// Records each layer as podman sent it (the manifest's layers are the image's, in order), and
/// counts what moved.
fn remember_layers(
    plan: &RegistryPush<'_>,
    client: &RegistryClient,
    found: &Found,
    encoding: Encoding,
    stored: &FetchedManifest,
    there_before: &HashSet<Digest>,
    printer: &Printer,
) -> Transfer {
    let mut transfer = Transfer::default();
    let Ok(manifest) = oci::parse_manifest(&stored.bytes) else {
        return transfer;
    };
    if let Some(config) = &manifest.config {
        let outcome = if there_before.contains(&config.digest) {
            Outcome::AlreadyThere
        } else {
            Outcome::Pushed
        };
        transfer.count(outcome, config.size);
    }
    let mut sent = SentBlobs::load_in(plan.cache_dir);
    let mut seen = HashSet::new();
    for (diff_id, layer) in found.facts.diff_ids.iter().zip(manifest.layers()) {
        if !seen.insert(diff_id) {
            continue;
        }
        let outcome = if there_before.contains(diff_id) {
            Outcome::AlreadyThere
        } else {
            Outcome::Pushed
        };
        transfer.count(outcome, layer.size);
        if let Some(media_type) = &layer.media_type {
            sent.record(
                client.host(),
                diff_id,
                encoding,
                SentBlob {
                    digest: layer.digest.clone(),
                    size: layer.size,
                    media_type: media_type.clone(),
                    repository: plan.target.repository.to_string(),
                },
            );
        }
    }
    if let Err(err) = sent.save() {
        printer.debug(&format!("could not save the record of sent blobs: {err}"));
    }
    transfer
}
