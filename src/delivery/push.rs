//! The push pipeline: open the image and read the cluster at once, then push to the advertised
//! registry or load into the nodes, and report the ref a pod spec must use.

mod attachments;
mod by_daemon;
mod by_podman;
mod commit;
mod export_upload;
mod from_containerd;
mod from_engine;
mod from_store;
mod manifest;
mod naming;
mod options;
mod progress;
mod record_file;
mod records;
mod registry_plan;
mod reload;
mod route;
mod shared_store;
mod stream;
mod summary;
mod to_nodes;
mod to_registry;
mod upload;

use std::path::Path;
use std::sync::Arc;

use crate::cluster::ClusterOptions;
use crate::cluster::discovery::{self, Discovered};
use crate::cluster::hosting::LocalRegistry;
use crate::cluster::product;
use crate::cluster::reach;
use crate::error::{Context, Error, ExitCode, Result};
use crate::image::archive::{self, Archive, Image};
use crate::image::engine;
use crate::image::reference::{ImageName, Target};
use crate::interrupt;
use crate::output::Printer;
use crate::settings::Settings;
use naming::{engine_image_name, image_name, tell_left_out};
pub use options::{LayerCompression, PushOptions};
use registry_plan::{
    RegistryPlan, registry_plan, registry_push, registry_report, with_ingress_hint,
};
pub(crate) use summary::PushReport;

/// What every step of one push needs.
pub(crate) struct Run<'a> {
    pub(crate) args: &'a PushOptions,
    pub(crate) cluster_args: &'a ClusterOptions,
    pub(crate) settings: &'a Settings,
    /// Where node loaders get their files.
    pub(crate) scratch: &'a Path,
    pub(crate) printer: &'a Printer,
    /// Asked where the image will land once that is known and before any byte moves: an
    /// error stops the push with nothing sent (`push --rollout` refusing an image no
    /// container of the workload runs).
    pub(crate) before_push: Option<&'a BeforePush<'a>>,
    /// The cluster as this round already read it (`push --rollout` reads it first): not read again.
    pub(crate) discovered: Option<&'a Discovered>,
}

/// [`Run::before_push`]'s check.
pub(crate) type BeforePush<'a> = dyn Fn(Landing<'_>) -> Result<()> + Sync + 'a;

/// Where a push is about to put the image: the repository on the registry, or (no registry)
/// the repository the nodes get.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Landing<'a> {
    pub(crate) registry: Option<&'a LocalRegistry>,
    pub(crate) repository: &'a str,
}

impl Run<'_> {
    /// The round's discovery, or a new one.
    async fn discovered(&self) -> Result<Found<'_>> {
        Ok(match self.discovered {
            Some(discovered) => Found::Shared(discovered),
            None => Found::Own(Box::new(
                discovery::discover(self.cluster_args, self.settings, self.printer).await?,
            )),
        })
    }

    fn landing(&self, registry: Option<&LocalRegistry>, repository: &str) -> Result<()> {
        self.before_push.map_or(Ok(()), |check| {
            check(Landing {
                registry,
                repository,
            })
        })
    }
}

/// A discovery made for this push, or the round's.
enum Found<'a> {
    Shared(&'a Discovered),
    Own(Box<Discovered>),
}

impl std::ops::Deref for Found<'_> {
    type Target = Discovered;

    fn deref(&self) -> &Discovered {
        match self {
            Self::Shared(discovered) => discovered,
            Self::Own(discovered) => discovered,
        }
    }
}

/// An archive file or stdin: open it and read the cluster at once.
pub(crate) async fn from_archive(run: &Run<'_>, source: archive::Source) -> Result<PushReport> {
    let Run {
        args,
        settings,
        printer,
        ..
    } = *run;
    let (archive, discovered) = tokio::try_join!(open_archive(source), run.discovered())?;
    let image = archive
        .select(args.image.as_deref(), args.platform.as_deref())
        .map_err(Error::from)?;
    tell_left_out(&image, printer);
    let name = image_name(args.tag.as_deref(), &image)?;
    match &discovered.registry {
        Some(registry) => {
            let reach = reach::reach(&discovered, registry, printer).await?;
            let (plan, target) = registry_plan(
                &name,
                args.tag.is_some(),
                registry,
                &reach,
                &discovered,
                printer,
            )?;
            run.landing(Some(registry), &target.repository)?;
            let moves = reach.moves();
            let pushed = push_to_registry(
                args,
                settings,
                &plan,
                &target,
                Arc::clone(&archive),
                image.clone(),
                printer,
            )
            .await;
            match pushed {
                Err(err) if reach.moved_since(moves, &err, printer) => {
                    push_to_registry(args, settings, &plan, &target, archive, image, printer).await
                }
                pushed => pushed,
            }
            .map_err(|err| reach.explain(err))
        }
        None => load_into_nodes(run, &discovered, &name, archive, image)
            .await
            .map_err(|err| with_registry_guide(err, discovered.help.as_deref())),
    }
}

/// A local engine's image: ask the engine and read the cluster at once; export only if needed.
pub(crate) async fn from_engine(run: &Run<'_>, image: &str) -> Result<PushReport> {
    let Run {
        args,
        settings,
        printer,
        ..
    } = *run;
    let (found, discovered) = tokio::try_join!(
        engine::find(image, settings.engine_lookup(), printer),
        run.discovered(),
    )?;
    let Some(registry) = &discovered.registry else {
        return load_engine_image(run, &discovered, &found)
            .await
            .map_err(|err| with_registry_guide(err, discovered.help.as_deref()));
    };
    let name = engine_image_name(args.tag.as_deref(), &found)?;
    let reach = reach::reach(&discovered, registry, printer).await?;
    let (plan, target) = registry_plan(
        &name,
        args.tag.is_some(),
        registry,
        &reach,
        &discovered,
        printer,
    )?;
    run.landing(Some(registry), &target.repository)?;
    let push = registry_push(args, settings, &plan, &target);
    let selection = from_engine::Selection {
        image: args.image.as_deref(),
        platform: args.platform.as_deref(),
    };
    let moves = reach.moves();
    let pushed = match route::push(&push, &found, &selection, args.compression, printer).await {
        Err(err) if reach.moved_since(moves, &err, printer) => {
            route::push(&push, &found, &selection, args.compression, printer).await
        }
        pushed => pushed,
    }
    .map_err(|err| reach.explain(with_ingress_hint(err, registry)))?;
    Ok(registry_report(
        &plan,
        &target,
        pushed.digest,
        pushed.platforms,
        pushed.transfer,
    ))
}

/// podman's store, when the nodes' layers can be read from it (said with -v when not).
fn nodes_from_store(
    args: &PushOptions,
    found: &engine::Found,
    printer: &Printer,
) -> Option<engine::StoreImage> {
    if found.engine != engine::Engine::Podman || args.selects() {
        return None;
    }
    found
        .store_image()
        .map_err(|reason| {
            printer.debug(&format!("not reading podman's store: {reason}; exporting"))
        })
        .ok()
}

/// The engine's whole export as an archive, for the node loaders that read files. It is spooled
/// to an anonymous temporary file, which leaves nothing behind however the process ends.
async fn exported_archive(found: &engine::Found) -> Result<Arc<Archive>> {
    let name = format!("{}'s export of {}", found.engine, found.image);
    let (opened, engine) = found
        .read_export(move |export| Archive::from_reader(export, &name))
        .await?;
    if let Err(failure) = engine {
        // Cut off: the pass stopped reading first, and its reason is the better one.
        if failure.cut_off {
            opened.map_err(Error::from)?;
        }
        return Err(failure.error);
    }
    Ok(Arc::new(opened.map_err(Error::from)?))
}

/// The archive named on the command line, or stdin.
async fn open_archive(source: archive::Source) -> Result<Arc<Archive>> {
    let archive = tokio::task::spawn_blocking(move || Archive::open(&source))
        .await
        .context(ExitCode::Failure, || "opening the archive")?
        .map_err(Error::from)?;
    Ok(Arc::new(archive))
}

/// The hosting ConfigMap's help link on a failed node-load (microk8s sets it alone while its
/// registry addon is off): how to give the cluster a registry instead. Once per error.
fn with_registry_guide(error: Error, guide: Option<&str>) -> Error {
    match guide {
        Some(guide) if !error.hints().iter().any(|hint| hint.contains(guide)) => {
            error.with_hint(format!("this cluster's registry guide: {guide}"))
        }
        _ => error,
    }
}

async fn push_to_registry(
    args: &PushOptions,
    settings: &Settings,
    plan: &RegistryPlan<'_>,
    target: &Target,
    archive: Arc<Archive>,
    image: Image,
    printer: &Printer,
) -> Result<PushReport> {
    let push = registry_push(args, settings, plan, target);
    let platforms = image.platform_names();
    let pushed = async {
        let client = push.client().await?;
        to_registry::push(&push, &client, &archive, &*archive, image, printer).await
    };
    let committed = pushed
        .await
        .map_err(|err| with_ingress_hint(err, plan.registry))?;
    Ok(registry_report(
        plan,
        target,
        committed.digest,
        platforms,
        committed.transfer,
    ))
}

/// The cluster the image goes into when no registry is advertised.
struct NodeTarget {
    product: product::Product,
    nodes: Vec<crate::cluster::client::NodeFacts>,
}

async fn node_target(
    args: &PushOptions,
    discovered: &Discovered,
    printer: &Printer,
) -> Result<NodeTarget> {
    let context = discovered.kubeconfig.context.as_deref();
    let nodes = match &discovered.cluster {
        Some(cluster) => cluster.nodes().await?,
        None => Vec::new(),
    };
    let product = product::detect(&discovered.kubeconfig, &nodes);
    if args.no_load {
        return Err(crate::nodes::loading_refused(context, &product));
    }
    printer.debug(&format!(
        "no registry advertised; the cluster is {}",
        product.target_phrase()
    ));
    interrupt::doing(
        format!("loading the image into {}", product.target_phrase()),
        "the nodes may or may not hold it",
    );
    Ok(NodeTarget { product, nodes })
}

async fn load_into_nodes(
    run: &Run<'_>,
    discovered: &Discovered,
    name: &ImageName,
    archive: Arc<Archive>,
    image: Image,
) -> Result<PushReport> {
    let target = node_target(run.args, discovered, run.printer).await?;
    run.landing(None, &name.familiar_repository())?;
    load_into(run, discovered, &target, name, archive, image).await
}

async fn load_into(
    run: &Run<'_>,
    discovered: &Discovered,
    target: &NodeTarget,
    name: &ImageName,
    archive: Arc<Archive>,
    image: Image,
) -> Result<PushReport> {
    let args = run.args;
    let plan = to_nodes::NodeLoad {
        product: &target.product,
        nodes: &target.nodes,
        repository: &name.familiar_repository(),
        tag: name
            .tag
            .as_deref()
            .unwrap_or(crate::image::reference::DEFAULT_TAG),
        load_command: args.load_command.as_deref(),
        context: discovered.kubeconfig.context.as_deref(),
        node_timeout: run.settings.limits.node_timeout,
    };
    to_nodes::load(&plan, archive, image, run.scratch, run.printer).await
}

/// A local engine's image into the nodes: not exported at all when every node confirms it
/// holds what was loaded for this image ID before.
async fn load_engine_image(
    run: &Run<'_>,
    discovered: &Discovered,
    found: &engine::Found,
) -> Result<PushReport> {
    let Run {
        args,
        settings,
        printer,
        ..
    } = *run;
    let target = node_target(args, discovered, printer).await?;
    let name = engine_image_name(args.tag.as_deref(), found)?;
    run.landing(None, &name.familiar_repository())?;
    let loaded_as = format!(
        "{}:{}",
        name.familiar_repository(),
        name.tag
            .as_deref()
            .unwrap_or(crate::image::reference::DEFAULT_TAG)
    );
    // A --load-command is the user's own loader; --image and --platform choose inside an export.
    if args.load_command.is_none()
        && !args.selects()
        && let Some(report) =
            shared_store::tag_in_engine(&target.product, found, &name, printer).await?
    {
        return Ok(report);
    }
    let records = settings.cache_dir.as_deref();
    let key = reload::LoadKey {
        context: discovered.kubeconfig.context.as_deref(),
        name: &loaded_as,
        image_id: &found.facts.id,
    };
    // A --load-command is the user's own loader: what it did is not ours to vouch for.
    if args.load_command.is_none()
        && let Some(report) = reload::still_loaded(
            records,
            &key,
            &target.product,
            &target.nodes,
            settings.limits.node_timeout,
            printer,
        )
        .await
    {
        return Ok(report);
    }
    let mut loaded = None;
    if let Some(content) = found.content_image()
        && !args.selects()
    {
        let archive = from_containerd::archive_for_nodes(found, content, printer)?;
        let image = archive.select(None, None).map_err(Error::from)?;
        loaded = Some(load_into(run, discovered, &target, &name, archive, image).await?);
    } else if let Some(store) = nodes_from_store(args, found, printer) {
        // Held until the nodes are loaded: no layer read from the store is removed meanwhile.
        let (archive, _locks) = from_store::archive_for_nodes(found, store, printer).await?;
        let image = archive.select(None, None).map_err(Error::from)?;
        match load_into(run, discovered, &target, &name, archive, image).await {
            Err(err) => match from_store::denied(&err) {
                Some(fault) => printer.debug(&from_store::left_to_the_export(fault)),
                None => return Err(err),
            },
            Ok(report) => loaded = Some(report),
        }
    }
    let report = match loaded {
        Some(report) => report,
        None => {
            let archive = exported_archive(found).await?;
            let image = archive
                .select(args.image.as_deref(), args.platform.as_deref())
                .map_err(Error::from)?;
            load_into(run, discovered, &target, &name, archive, image).await?
        }
    };
    if args.load_command.is_none() {
        reload::record(records, &key, &report, printer);
    }
    Ok(report)
}
