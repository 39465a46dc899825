//! The push source: an archive path, stdin, or an image in a local engine (docker, podman,
//! nerdctl), found by asking each engine to inspect it, through its API socket where one is
//! reachable and its CLI otherwise.

mod api;
mod cli;
mod config_file;
mod containerd;
mod daemon;
mod endpoint;
mod events;
mod export;
mod facts;
mod kind;
mod store;

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use cli::CliPush;
pub use containerd::{ContentBlob, ContentImage, ContentManifest};
pub use daemon::{Daemon, DaemonPushed, EnginePushFailure, EngineTag, LayerEnd, PushEvent};
pub use endpoint::{Endpoint, EngineEnv};
pub use events::ImageEvents;
pub use facts::ImageFacts;
pub use kind::Engine;
pub(crate) use store::{ReadLock, StoreFault, store_fault};
pub use store::{StoreImage, StoreLayer, StoreMiss};

use crate::image::digest::Digest;
use crate::image::registry::{Stalled, Watchdog};
use crate::plumbing::error::{Context, Error, ExitCode, Result};
use crate::plumbing::limits::{Limits, REQUEST_TIMEOUT_ENV, STALL_TIMEOUT_ENV, seconds_text};
use crate::plumbing::output::Printer;
use export::{Ended, Export, ExportBound};

/// What the fuzz targets reach (`fuzz/`, `crate::fuzz_entry`): the decoders of engines' answers.
#[cfg(fuzzing)]
pub(crate) mod fuzzing {
    pub(crate) use super::containerd::{
        get_image_response, grpc_status, info_response, next_message, read_nerdctl_toml,
        read_response,
    };
    pub(crate) use super::daemon::PushAnswer;
    pub(crate) use super::store::{LayerReader, parse_storage_conf};
}

/// What may follow the end of an export's tar: its writer's padding (tar pads to 10 KiB records).
const TRAILER_LIMIT: u64 = 1 << 20;

/// What the user named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Stdin,
    Path(PathBuf),
    EngineImage(String),
}

impl Source {
    /// An existing path is a path; so is anything that looks like one (a typo must not reach docker):
    /// Windows' too (`C:\dist\img.tar`, `C:/dist`, `\\server\share\img.tar`: no image reference
    /// holds a backslash, nor a one-letter host with an empty port).
    pub fn classify(raw: &str) -> Self {
        let drive = matches!(raw.as_bytes(), [letter, b':', b'/' | b'\\', ..] if letter.is_ascii_alphabetic());
        let looks_like_path = raw.starts_with(['.', '/', '~'])
            || raw.contains('\\')
            || drive
            || [".tar", ".tgz", ".gz", ".zst", ".xz", ".bz2"]
                .iter()
                .any(|ext| raw.ends_with(ext));
        match raw {
            "-" => Self::Stdin,
            _ if looks_like_path || Path::new(raw).exists() => Self::Path(PathBuf::from(raw)),
            _ => Self::EngineImage(raw.to_string()),
        }
    }
}

/// An image a local engine has, and how to reach that engine again for its export.
#[derive(Debug, Clone)]
pub struct Found {
    pub engine: Engine,
    pub endpoint: Endpoint,
    /// The reference as the user typed it.
    pub image: String,
    pub facts: ImageFacts,
    /// Where the engine's CLI may spool (its TMPDIR, a directory of ours in there).
    big_files_dir: PathBuf,
    limits: Limits,
    /// Where podman's store is, as podman would find it.
    env: EngineEnv,
    /// nerdctl's image as containerd holds it, when its content store answered.
    content: Option<Arc<ContentImage>>,
}

impl Found {
    /// Which engine answered and how, for `-v` and errors.
    pub fn describe(&self) -> String {
        describe(self.engine, &self.endpoint)
    }

    /// The Docker daemon behind this image's endpoint, when it is one (not podman's service).
    pub async fn docker_daemon(&self) -> Option<Daemon> {
        daemon::connect(&self.endpoint, &self.limits).await
    }

    /// The image in podman's store (containers-storage), read directly; `Err` says why not.
    pub fn store_image(&self) -> std::result::Result<StoreImage, StoreMiss> {
        store::find_image(&self.env, &self.facts)
    }

    /// The image in containerd's content store (nerdctl's), when it was found there.
    pub fn content_image(&self) -> Option<&ContentImage> {
        self.content.as_deref()
    }

    /// The engine's CLI pushes the image from its own store to `destination` (`HOST/REPO:TAG`);
    /// the digest it pushed, when it said.
    pub async fn cli_push(
        &self,
        destination: &str,
        how: &CliPush<'_>,
    ) -> std::result::Result<Option<Digest>, EnginePushFailure> {
        // The ID, not the name: the image we inspected, even if the name moved since.
        let id = self
            .facts
            .id
            .strip_prefix("sha256:")
            .unwrap_or(&self.facts.id);
        cli::push(
            self.engine.program(),
            id,
            destination,
            how,
            &self.big_files_dir,
            self.limits.stall_timeout,
        )
        .await
    }

    /// Runs `pass` over the engine's export on a blocking thread, as the engine produces it.
    /// Returns what `pass` returned and how the engine ended. An export that brings no bytes for
    /// the stall bound is stopped (the pass then meets the end of its input); so is one whose
    /// future is dropped (a signal): the CLI is killed and its temporary files removed.
    pub async fn read_export<T, F>(&self, pass: F) -> Result<(T, Result<(), EngineFailure>)>
    where
        F: FnOnce(&mut dyn Read) -> T + Send + 'static,
        T: Send + 'static,
    {
        let Export {
            mut reader,
            mut running,
        } = self.start_export().await?;
        reader.bound(self.facts.size.map(ExportBound::of));
        let mut reading = tokio::task::spawn_blocking(move || {
            let out = pass(&mut reader);
            // A tar ends before its writer's last padding: read that too, or the engine dies of
            // SIGPIPE mid-write. More than padding left means the pass stopped early.
            let _ = io::copy(&mut (&mut reader).take(TRAILER_LIMIT), &mut io::sink());
            let at_end = matches!(reader.read(&mut [0u8; 1]), Ok(0));
            (out, at_end)
        });
        let joined = match running.bound(&mut reading).await {
            Ok(joined) => joined,
            Err(Stalled(limit)) => {
                running.stop().await;
                let joined = reading.await;
                let (out, _) = joined.context(ExitCode::Failure, || "reading the export")?;
                let stalled = EngineFailure {
                    error: self.failed(format!(
                        "no bytes came for {} ({STALL_TIMEOUT_ENV})",
                        seconds_text(limit)
                    )),
                    cut_off: false,
                };
                return Ok((out, Err(stalled)));
            }
        };
        let (out, at_end) = joined.context(ExitCode::Failure, || "reading the export")?;
        if !at_end {
            // The pass stopped early (it had its answer, or the export broke a bound): the
            // engine is stopped, not waited for, as one that ignores SIGPIPE would never end.
            running.stop().await;
            let stopped = EngineFailure {
                error: self.failed("it was stopped before the end of its export".to_string()),
                cut_off: true,
            };
            return Ok((out, Err(stopped)));
        }
        let ended = running.finish().await.map_err(|ended| match ended {
            Ended::Failed(said) => EngineFailure {
                error: self.failed(said),
                cut_off: false,
            },
            Ended::CutOff(said) => EngineFailure {
                error: self.failed(said),
                cut_off: true,
            },
        });
        Ok((out, ended))
    }

    async fn start_export(&self) -> Result<Export> {
        let watchdog = Watchdog::new(self.limits.stall_timeout);
        match &self.endpoint {
            Endpoint::Socket { path, .. } => {
                let client = api::EngineApi::new(path).map_err(|said| self.failed(said))?;
                match client.export(&self.image, watchdog).await {
                    Ok(api::Answer::Found(export)) => Ok(export),
                    Ok(api::Answer::NoSuchImage(said)) | Err(said) => Err(self.failed(said)),
                }
            }
            Endpoint::Cli => cli::export(
                self.engine.program(),
                &self.image,
                &self.big_files_dir,
                watchdog,
            )
            .map_err(|err| self.failed(err.to_string())),
        }
    }

    fn failed(&self, reason: String) -> Error {
        Error::new(
            ExitCode::Input,
            format!("exporting {} from {}", self.image, self.describe()),
        )
        .with_source(Error::new(ExitCode::Input, reason))
    }
}

/// An export that did not end well.
#[derive(Debug)]
pub struct EngineFailure {
    pub error: Error,
    /// We stopped reading first (the engine was stopped, or died of SIGPIPE writing to our
    /// pipe): what stopped us explains the failure better than this.
    pub cut_off: bool,
}

/// Where to look for a named image: which engine first, where the engines listen, the bounds.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    /// `KUBECTL_REGISTRY_ENGINE`.
    pub preferred: Option<Engine>,
    pub env: &'a EngineEnv,
    pub limits: Limits,
}

/// Asks each engine in turn to inspect `image`; the first that has it answers.
pub async fn find(image: &str, lookup: Lookup<'_>, printer: &Printer) -> Result<Found> {
    let found = |engine, endpoint, facts| Found {
        engine,
        endpoint,
        image: image.to_string(),
        facts,
        big_files_dir: lookup.env.big_files_dir(),
        limits: lookup.limits,
        env: lookup.env.clone(),
        content: None,
    };
    let mut failures = Vec::new();
    for engine in Engine::in_order(lookup.preferred) {
        let endpoint = match engine {
            Engine::Docker => endpoint::docker(lookup.env),
            Engine::Podman => endpoint::podman(lookup.env),
            Engine::Nerdctl => Endpoint::Cli,
        };
        // podman's own store answers without starting podman (its CLI takes a tenth of a second).
        if engine == Engine::Podman
            && endpoint == Endpoint::Cli
            && let Some(facts) = store::inspect(lookup.env, image)
        {
            printer.debug(&format!(
                "podman's store has {image} (image {}): podman not asked",
                facts.id
            ));
            return Ok(found(engine, endpoint, facts));
        }
        // nerdctl's images are containerd's: its content store answers without nerdctl.
        if engine == Engine::Nerdctl {
            match containerd::find(lookup.env, image, &lookup.limits).await {
                Ok((content, facts)) => {
                    printer.debug(&format!(
                        "{} has {image} (image {}): nerdctl not asked",
                        content.describe, facts.id
                    ));
                    return Ok(Found {
                        content: Some(Arc::new(content)),
                        ..found(engine, endpoint, facts)
                    });
                }
                Err(miss) => printer.debug(&format!("not reading containerd: {miss}")),
            }
        }
        let how = describe(engine, &endpoint);
        printer.debug(&format!("asking {how} for {image}"));
        match inspect(engine, &endpoint, image, lookup.limits.request_timeout).await {
            Some(Ok(facts)) => {
                printer.debug(&format!("{how} has {image} (image {})", facts.id));
                return Ok(found(engine, endpoint, facts));
            }
            Some(Err(said)) => failures.push(format!("{engine}: {said}")),
            None => {}
        }
    }
    let message = if failures.is_empty() {
        format!(
            "{image:?} is neither a file nor an image of a local engine: no docker, podman or nerdctl on PATH"
        )
    } else {
        format!(
            "{image:?} is not a file, and no local engine has it:\n  {}",
            failures.join("\n  ")
        )
    };
    Err(Error::new(ExitCode::Input, message).with_hint(
        "pass an archive (`docker save IMAGE -o image.tar`), `-` for stdin, or an image your engine has",
    ))
}

fn describe(engine: Engine, endpoint: &Endpoint) -> String {
    match endpoint {
        Endpoint::Socket { path, origin } => {
            format!(
                "{engine} engine API at {} ({origin})",
                endpoint::url_of(path)
            )
        }
        Endpoint::Cli => format!("the {engine} CLI"),
    }
}

/// The engine's facts, its own words when it has no such image, `None` when its CLI is absent.
async fn inspect(
    engine: Engine,
    endpoint: &Endpoint,
    image: &str,
    limit: Duration,
) -> Option<std::result::Result<ImageFacts, String>> {
    match endpoint {
        Endpoint::Socket { path, .. } => {
            let answer = match api::EngineApi::new(path) {
                Ok(client) => tokio::time::timeout(limit, client.inspect(image))
                    .await
                    .unwrap_or_else(|_| {
                        Err(format!(
                            "its API did not answer within {} ({REQUEST_TIMEOUT_ENV})",
                            seconds_text(limit)
                        ))
                    }),
                Err(said) => Err(said),
            };
            Some(match answer {
                Ok(api::Answer::Found(facts)) => Ok(facts),
                Ok(api::Answer::NoSuchImage(said)) | Err(said) => Err(said),
            })
        }
        Endpoint::Cli => match cli::inspect(engine.program(), image, limit).await {
            cli::Outcome::Found(facts) => Some(Ok(facts)),
            cli::Outcome::Failed(said) => Some(Err(said)),
            cli::Outcome::NotInstalled => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_tells_paths_from_image_names() {
        assert_eq!(Source::classify("-"), Source::Stdin);
        assert_eq!(Source::classify("./img"), Source::Path("./img".into()));
        assert_eq!(Source::classify("img.tar"), Source::Path("img.tar".into()));
        assert_eq!(
            Source::classify("img.tar.zst"),
            Source::Path("img.tar.zst".into())
        );
        assert_eq!(
            Source::classify("/abs/dir"),
            Source::Path("/abs/dir".into())
        );
        for windows in [
            r"C:\dist\img",
            "C:/dist/img",
            r"\\server\share\img",
            r".\img",
            "img.tar.xz",
            "img.tar.bz2",
        ] {
            assert_eq!(Source::classify(windows), Source::Path(windows.into()));
        }
        assert_eq!(
            Source::classify("myimg:dev"),
            Source::EngineImage("myimg:dev".into())
        );
        assert_eq!(
            Source::classify("localhost:5000/myimg:dev"),
            Source::EngineImage("localhost:5000/myimg:dev".into())
        );
        assert_eq!(
            Source::classify("gcr.io/proj/app:v1"),
            Source::EngineImage("gcr.io/proj/app:v1".into())
        );
    }
}
