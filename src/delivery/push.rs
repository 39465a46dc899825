//! The push pipeline, planned then carried out: `open` the source (while the command reads the
//! cluster), `plan` where it lands and how (the registry reached through the session, or the
//! nodes), `carry_out` the plan; the report is the ref a pod spec must use.

mod options;
mod pipeline;
mod planning;
mod reload;
mod sources;
mod summary;
mod to_nodes;

use std::path::Path;
use std::sync::Arc;

use crate::cluster::discovery::Discovered;
use crate::cluster::hosting::LocalRegistry;
use crate::cluster::product;
use crate::cluster::session::Session;
use crate::image::archive::{self, Archive, Image};
use crate::image::engine::{self, Source};
use crate::image::reference::{ImageName, Target};
use crate::plumbing::error::{Context, Error, ExitCode, Result};
use crate::plumbing::interrupt;
use crate::plumbing::output::Printer;
use crate::settings::Settings;
pub use options::{LayerCompression, PushOptions};
use planning::naming::{engine_image_name, image_name, tell_left_out};
use planning::registry_plan::{
    RegistryPlan, registry_plan, registry_push, registry_report, with_ingress_hint,
};
pub(crate) use summary::PushReport;

/// What every step of one push needs.
pub(crate) struct Run<'a> {
    pub(crate) args: &'a PushOptions,
    pub(crate) settings: &'a Settings,
    /// Where node loaders get their files.
    pub(crate) scratch: &'a Path,
    pub(crate) printer: &'a Printer,
}

/// Where a push is about to put the image: the repository on the registry, or (no registry)
/// the repository the nodes get.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Landing<'a> {
    pub(crate) registry: Option<&'a LocalRegistry>,
    pub(crate) repository: &'a str,
}

/// The image as the source holds it, read while the cluster is.
pub(crate) enum Opened {
    /// An archive file or stdin, indexed.
    Archive(Arc<Archive>),
    /// A local engine's image, as its inspect found it.
    Engine(Box<engine::Found>),
}

/// Opens `source`: an archive indexed once, or the engine asked about its image.
pub(crate) async fn open(source: Source, settings: &Settings, printer: &Printer) -> Result<Opened> {
    Ok(match source {
        Source::EngineImage(image) => Opened::Engine(Box::new(
            engine::find(&image, settings.engine_lookup(), printer).await?,
        )),
        Source::Stdin => Opened::Archive(open_archive(archive::Source::Stdin).await?),
        Source::Path(path) => Opened::Archive(open_archive(archive::Source::Path(path)).await?),
    })
}

/// A push decided, nothing sent yet: where the image lands, and the way there.
pub(crate) struct PushPlan<'a> {
    repository: String,
    discovered: &'a Discovered,
    way: Way<'a>,
}

enum Way<'a> {
    Registry {
        plan: RegistryPlan<'a>,
        target: Target,
        image: Chosen,
    },
    Nodes {
        target: NodeTarget,
        name: ImageName,
        image: Chosen,
    },
}

/// The image chosen from what was opened.
#[expect(
    clippy::large_enum_variant,
    reason = "one per push, moved, never copied"
)]
enum Chosen {
    Archive(Arc<Archive>, Image),
    Engine(Box<engine::Found>),
}

impl PushPlan<'_> {
    /// Where the image will land: asked before any byte moves (`push --rollout` refuses an
    /// image no container of the workload runs).
    pub(crate) fn landing(&self) -> Landing<'_> {
        Landing {
            registry: self.discovered.registry.as_ref(),
            repository: &self.repository,
        }
    }
}

/// Plans the push of `opened` into the cluster as this round `discovered` it: the name it lands
/// under and, with a registry, the way this run reaches it (through `session`).
pub(crate) async fn plan<'a>(
    run: &Run<'_>,
    opened: Opened,
    discovered: &'a Discovered,
    session: &Session<'_>,
) -> Result<PushPlan<'a>> {
    let Run { args, printer, .. } = *run;
    let (name, image) = match opened {
        Opened::Archive(archive) => {
            let image = archive
                .select(args.image.as_deref(), args.platform.as_deref())
                .map_err(Error::from)?;
            tell_left_out(&image, printer);
            Chosen::Archive(archive, image)
        }
        Opened::Engine(found) => Chosen::Engine(found),
    }
    .into_named(args)?;
    let Some(registry) = &discovered.registry else {
        let target = node_target(args, discovered, printer)
            .await
            .map_err(|err| with_registry_guide(err, discovered.help.as_deref()))?;
        return Ok(PushPlan {
            repository: name.familiar_repository(),
            discovered,
            way: Way::Nodes {
                target,
                name,
                image,
            },
        });
    };
    let reach = session.reach(discovered, registry).await?;
    let (plan, target) = registry_plan(
        &name,
        args.tag.is_some(),
        registry,
        reach,
        discovered,
        printer,
    )?;
    Ok(PushPlan {
        repository: target.repository.clone(),
        discovered,
        way: Way::Registry {
            plan,
            target,
            image,
        },
    })
}

impl Chosen {
    /// The name the image goes by: `--tag`, else what the archive or the engine recorded.
    fn into_named(self, args: &PushOptions) -> Result<(ImageName, Self)> {
        let name = match &self {
            Self::Archive(_, image) => image_name(args.tag.as_deref(), image)?,
            Self::Engine(found) => engine_image_name(args.tag.as_deref(), found)?,
        };
        Ok((name, self))
    }
}

/// Carries out `plan`: every blob the registry lacks, then the manifest (or the nodes loaded).
pub(crate) async fn carry_out(run: &Run<'_>, plan: PushPlan<'_>) -> Result<PushReport> {
    let PushPlan {
        discovered, way, ..
    } = plan;
    let Run {
        args,
        settings,
        printer,
        ..
    } = *run;
    match way {
        Way::Nodes {
            target,
            name,
            image: Chosen::Archive(archive, image),
        } => load_into(run, discovered, &target, &name, archive, image).await,
        Way::Nodes {
            target,
            name,
            image: Chosen::Engine(found),
        } => load_engine_image(run, discovered, &target, &name, &found).await,
        Way::Registry {
            plan,
            target,
            image: Chosen::Archive(archive, image),
        } => {
            let attempt = || {
                let (archive, image) = (Arc::clone(&archive), image.clone());
                push_to_registry(args, settings, &plan, &target, archive, image, printer)
            };
            plan.reach.once_more_if_moved(printer, attempt).await
        }
        Way::Registry {
            plan,
            target,
            image: Chosen::Engine(found),
        } => push_engine_image(run, &plan, &target, &found).await,
    }
    .map_err(|err| match discovered.registry {
        Some(_) => err,
        None => with_registry_guide(err, discovered.help.as_deref()),
    })
}

/// A local engine's image to the registry, the way `route` picks.
async fn push_engine_image(
    run: &Run<'_>,
    plan: &RegistryPlan<'_>,
    target: &Target,
    found: &engine::Found,
) -> Result<PushReport> {
    let Run {
        args,
        settings,
        printer,
        ..
    } = *run;
    let push = registry_push(args, settings, plan, target);
    let selection = sources::from_engine::Selection {
        image: args.image.as_deref(),
        platform: args.platform.as_deref(),
    };
    let attempt = || async {
        planning::route::push(&push, found, &selection, args.compression, printer)
            .await
            .map_err(|err| with_ingress_hint(err, plan.registry))
    };
    let pushed = plan.reach.once_more_if_moved(printer, attempt).await?;
    Ok(registry_report(
        plan,
        target,
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
        pipeline::to_registry::push(&push, &client, &archive, &*archive, image, printer).await
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

/// The nodes loaded from where the engine keeps the image (containerd's content store,
/// podman's store), without its export; `None` when neither can be read.
async fn load_without_export(
    run: &Run<'_>,
    discovered: &Discovered,
    target: &NodeTarget,
    name: &ImageName,
    found: &engine::Found,
) -> Result<Option<PushReport>> {
    let Run { args, printer, .. } = *run;
    if let Some(content) = found.content_image()
        && !args.selects()
    {
        let archive = sources::from_containerd::archive_for_nodes(found, content, printer)?;
        let image = archive.select(None, None).map_err(Error::from)?;
        return Ok(Some(
            load_into(run, discovered, target, name, archive, image).await?,
        ));
    }
    let Some(store) = nodes_from_store(args, found, printer) else {
        return Ok(None);
    };
    // Held until the nodes are loaded: no layer read from the store is removed meanwhile.
    let (archive, _locks) = sources::from_store::archive_for_nodes(found, store, printer).await?;
    let image = archive.select(None, None).map_err(Error::from)?;
    match load_into(run, discovered, target, name, archive, image).await {
        Err(err) => match sources::from_store::denied(&err) {
            Some(fault) => {
                printer.debug(&sources::from_store::left_to_the_export(fault));
                Ok(None)
            }
            None => Err(err),
        },
        Ok(report) => Ok(Some(report)),
    }
}

/// A local engine's image into the nodes: not exported at all when every node confirms it
/// holds what was loaded for this image ID before.
async fn load_engine_image(
    run: &Run<'_>,
    discovered: &Discovered,
    target: &NodeTarget,
    name: &ImageName,
    found: &engine::Found,
) -> Result<PushReport> {
    let Run {
        args,
        settings,
        printer,
        ..
    } = *run;
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
            sources::shared_store::tag_in_engine(&target.product, found, name, printer).await?
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
    let report = match load_without_export(run, discovered, target, name, found).await? {
        Some(report) => report,
        None => {
            let archive = exported_archive(found).await?;
            let image = archive
                .select(args.image.as_deref(), args.platform.as_deref())
                .map_err(Error::from)?;
            load_into(run, discovered, target, name, archive, image).await?
        }
    };
    if args.load_command.is_none() {
        reload::record(records, &key, &report, printer);
    }
    Ok(report)
}
