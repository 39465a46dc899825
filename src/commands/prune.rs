//! `kubectl registry prune`: delete old tags from the cluster's registry (or the nodes' content
//! tags), keeping the N newest per repository and everything a workload uses; `--gc` then runs
//! the registry's own garbage-collect in its container.

mod nodes;
mod report;

use crate::cli::PruneArgs;
use crate::cluster::ClusterOptions;
use crate::cluster::hosting::{LocalRegistry, RegistrySource};
use crate::cluster::session::Session;
use crate::image::registry::{RegistryClient, Removal};
use crate::inventory::gc;
use crate::inventory::meanwhile;
use crate::inventory::pruning::{self, Plan};
use crate::inventory::{self, Usage, UsageNeed};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::settings::Settings;
use report::Report;

pub async fn run(
    args: &PruneArgs,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    let session = Session::new(cluster_args, settings, printer);
    let discovered = session.discover().await?;
    let need = if args.ignore_usage {
        UsageNeed::Ignored
    } else {
        UsageNeed::Required { command: "prune" }
    };
    let registry = match (&discovered.registry, args.nodes) {
        (Some(registry), false) => registry,
        _ => {
            if args.gc {
                return Err(Error::new(
                    ExitCode::Usage,
                    "--gc frees a registry's disk; the nodes' containerd frees its own",
                )
                .with_hint("drop --gc when pruning the nodes"));
            }
            let uses = inventory::read_uses(&session, printer, need).await?;
            return nodes::prune(args, &discovered, uses.as_deref(), settings, printer).await;
        }
    };
    if registry.source == RegistrySource::Openshift {
        return Err(openshift_refusal(registry));
    }
    let uses = inventory::read_uses(&session, printer, need).await?;
    let (client, _reach) = inventory::open_registry(
        &session,
        &discovered,
        registry,
        &(&args.access).into(),
        settings,
        printer,
    )
    .await?;
    let reader = inventory::Reader("prune");
    let entries = inventory::read(&client, &args.repositories, reader, printer).await?;
    let usage = uses
        .as_deref()
        .map(|uses| Usage::new(uses, &inventory::hosts(registry)));
    let keep = usize::try_from(args.keep).unwrap_or(usize::MAX);
    let plan = pruning::plan(&entries, usage.as_ref(), keep);
    let mut report = Report::new(args.dry_run, !args.repositories.is_empty(), plan);
    if !args.dry_run {
        delete(&client, &mut report.plan, printer).await?;
        if args.gc {
            // distribution 2.x's --delete-untagged also removes the platform manifests of a
            // kept index (a known 2.x bug): only when the whole registry was read and holds none.
            let delete_untagged =
                args.repositories.is_empty() && entries.iter().all(|e| e.children.is_empty());
            report.gc = Some(gc::collect(registry, delete_untagged, printer).await?);
        } else {
            report.gc_hint = gc::hint(registry);
        }
    }
    report.print(args.output.output, printer)
}

/// Deletes each manifest in turn, unless a tag pushed or moved since the listing names it now
/// (kept then, said so). A registry that refuses deletes refuses the first: nothing is changed then,
/// and the error says how to enable them.
async fn delete(client: &RegistryClient, plan: &mut Plan, printer: &Printer) -> Result<()> {
    let (mut at, mut done) = (0, 0);
    let mut said_unchecked = std::collections::BTreeSet::new();
    while let Some(manifest) = plan.deletions.get(at) {
        let planned = plan.digests_of(&manifest.repository);
        let found = meanwhile::tagged_meanwhile(client, manifest, &planned).await?;
        if found.unchecked > 0 && said_unchecked.insert(manifest.repository.clone()) {
            printer.note(&format!(
                "{}: {} tags more than the {} read again before each delete; a tag among them moved onto a deleted manifest goes with it",
                manifest.repository,
                found.unchecked,
                meanwhile::MOST_CHECKED
            ));
        }
        let naming = found.naming;
        if naming.is_empty() && found.still.len() < manifest.tags.len() {
            // Its own tags moved or deleted meanwhile do not go with it.
            let doomed = &mut plan.deletions[at];
            doomed.untagged_meanwhile |= found.still.is_empty();
            doomed.tags.retain(|tag| found.still.contains(tag));
        }
        let Some(manifest) = plan.deletions.get(at) else {
            break;
        };
        if !naming.is_empty() {
            printer.note(&format!(
                "kept {}@{}: tagged {} since the registry was read",
                manifest.repository,
                manifest.digest,
                naming.join(", ")
            ));
            plan.keep_after_all(at, naming);
            continue;
        }
        match client
            .delete_manifest_digest(&manifest.repository, &manifest.digest)
            .await?
        {
            Removal::Deleted => printer.debug(&format!(
                "deleted {}@{} ({})",
                manifest.repository,
                manifest.digest,
                manifest.tags.join(", ")
            )),
            Removal::Gone => printer.debug(&format!(
                "{}@{} was already gone",
                manifest.repository, manifest.digest
            )),
            Removal::DeletesDisabled(said) => {
                return Err(deletes_disabled(client, said, done));
            }
        }
        (at, done) = (at + 1, done + 1);
    }
    Ok(())
}

fn deletes_disabled(client: &RegistryClient, said: String, done: usize) -> Error {
    let changed = if done == 0 {
        "nothing was deleted".to_string()
    } else {
        format!("{done} manifests were deleted before it refused")
    };
    Error::new(
        ExitCode::Registry,
        format!(
            "the registry {} does not allow deletes; {changed}",
            client.host()
        ),
    )
    .with_source(said)
    .with_hint(
        "a distribution registry deletes only with storage.delete.enabled: run it with REGISTRY_STORAGE_DELETE_ENABLED=true (kind: docker run ... -e REGISTRY_STORAGE_DELETE_ENABLED=true registry:2), then prune again",
    )
}

/// OpenShift's registry serves image streams; prune leaves them to OpenShift.
fn openshift_refusal(registry: &LocalRegistry) -> Error {
    Error::new(
        ExitCode::Usage,
        format!(
            "prune does not prune OpenShift's integrated registry ({}): its images belong to image streams, which prune does not touch",
            registry.host
        ),
    )
    .with_hint("delete image stream tags with `oc tag -d PROJECT/NAME:TAG` (or `oc delete istag`), then `oc adm prune images --confirm` frees the registry's storage")
}
