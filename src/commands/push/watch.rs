//! `push SRC --watch`: after the first round, another each time the source changes — the
//! archive at that path written or replaced (inotify on its directory), or the engine's image by
//! that name given a new image ID (its event stream) — each round printing its own ref line
//! (and rolling out). A round that fails is reported and the next change awaited; a change
//! during a round is taken up right after it. Ctrl-C ends it (lib.rs: exit 130, the round in
//! flight dropped as any push is).

use std::path::Path;

use crate::cli::PushArgs;
use crate::cluster::ClusterOptions;
use crate::error::{Error, ExitCode, Result};
use crate::image::archive::changes::{FileWatch, identity};
use crate::image::engine::{self, Source};
use crate::output::Printer;
use crate::settings::Settings;

pub(super) async fn run(
    args: &PushArgs,
    cluster_args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    // One cluster client for every round.
    let kept = tokio::sync::Mutex::new(None);
    let round = || async {
        let mut kept = kept.lock().await;
        if let Err(err) = super::round(args, cluster_args, settings, printer, &mut kept).await {
            printer.error(&err);
            printer.note("push --watch: waiting for the next change");
        }
    };
    match Source::classify(&args.source) {
        Source::Stdin => Err(Error::new(
            ExitCode::Usage,
            "--watch needs an archive's path or an engine's image: stdin is read once",
        )),
        Source::Path(path) => {
            let path = Path::new(&path);
            let mut watch = FileWatch::new(path);
            printer.debug(&format!("watching {}: {}", path.display(), watch.how));
            let mut pushed = None;
            loop {
                let now = identity(path);
                if now.is_some() && now != pushed {
                    pushed = now;
                    round().await;
                }
                watch.changed().await;
            }
        }
        Source::EngineImage(image) => {
            let lookup = settings.engine_lookup();
            let found = engine::find(&image, lookup, printer).await?;
            let mut events = found.image_events().await;
            printer.debug(&format!("watching {image}: {}", events.how));
            let mut pushed = None;
            loop {
                // Asked again at each event: a rebuild shows as a new ID under the same name.
                if let Ok(now) = engine::find(&image, lookup, printer).await
                    && pushed.as_ref() != Some(&now.facts.id)
                {
                    pushed = Some(now.facts.id);
                    round().await;
                }
                events.next().await;
            }
        }
    }
}
