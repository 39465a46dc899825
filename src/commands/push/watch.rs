//! `push SRC --watch`: after the first round, another each time the source changes — the
//! archive at that path written or replaced (its directory watched: `archive::changes`), or the engine's image by
//! that name given a new image ID (its event stream) — each round printing its own ref line
//! (and rolling out). A round that fails is reported and the next change awaited; a change
//! during a round is taken up right after it, once the file has settled. Ctrl-C ends it (lib.rs:
//! exit 130, the round in flight dropped as any push is; between rounds, without a word).

use std::path::Path;
use std::time::Duration;

use crate::cli::PushArgs;
use crate::cluster::session::Session;
use crate::image::archive::changes::{FileWatch, Identity, identity};
use crate::image::engine::{self, Source};
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::interrupt;
use crate::plumbing::laps::Laps;
use crate::plumbing::output::Printer;
use crate::settings::Settings;

pub(super) async fn run(
    args: &PushArgs,
    session: &Session<'_>,
    settings: &Settings,
    printer: &Printer,
) -> Result<()> {
    // Every round through the session's cluster client and tunnels.
    let round = |found: Option<engine::Found>, laps: Laps| async move {
        let round = super::round(args, session, settings, printer, found, laps).await;
        interrupt::idle();
        match round {
            Ok(()) => printer.debug("push --watch: waiting for the next change"),
            Err(err) => {
                printer.error(&err);
                printer.note("push --watch: waiting for the next change");
            }
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
            if identity(path).is_none() {
                // A typo must not look like a hang.
                printer.warn(&format!(
                    "{} does not exist yet; push --watch waits for it to be written",
                    path.display()
                ));
            }
            let mut pushed = None;
            let mut first = true;
            loop {
                let mut laps = Laps::start();
                let mut now = identity(path);
                if !first {
                    now = settled(path, now).await;
                    laps.lap("settle");
                }
                first = false;
                if now.is_some() && now != pushed {
                    pushed = now;
                    round(None, laps).await;
                }
                watch.changed().await;
            }
        }
        Source::EngineImage(image) => {
            let lookup = settings.engine_lookup();
            let mut laps = Laps::start();
            let first = engine::find(&image, lookup, printer).await?;
            laps.lap("inspect");
            let mut events = first.image_events().await;
            printer.debug(&format!("watching {image}: {}", events.how));
            let mut pushed = None;
            let mut found = Some(first);
            loop {
                // The round pushes what this inspect found: the engine is asked once a round.
                if let Some(now) = found.take()
                    && pushed.as_ref() != Some(&now.facts.id)
                {
                    pushed = Some(now.facts.id.clone());
                    round(Some(now), laps).await;
                }
                events.next().await;
                // Asked again at each event: a rebuild shows as a new ID under the same name.
                laps = Laps::start();
                found = engine::find(&image, lookup, printer).await.ok();
                laps.lap("inspect");
            }
        }
    }
}

/// How long a changed archive must stay the same before it is pushed: a writer still at it
/// (an archive rewritten in place, in several writes) is waited for, not pushed half-written.
const SETTLE: Duration = Duration::from_millis(150);

/// The file's identity once it has stopped changing for [`SETTLE`].
async fn settled(path: &Path, mut now: Option<Identity>) -> Option<Identity> {
    loop {
        tokio::time::sleep(SETTLE).await;
        let again = identity(path);
        if again == now {
            return now;
        }
        now = again;
    }
}
