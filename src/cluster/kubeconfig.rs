//! Which kubeconfig and context to use, chosen as kubectl chooses: `--kubeconfig`, else the files
//! in `KUBECONFIG` merged (missing ones skipped), else `~/.kube/config`; then `--context` or the
//! current context, or the in-cluster service account when there is no kubeconfig at all.

use std::fmt;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use kube::config::{Kubeconfig, KubeconfigError};

use crate::cluster::ClusterOptions;
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::settings::Settings;

/// What the kubeconfig says about the current cluster (plain data, no client).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeconfigFacts {
    pub context: Option<String>,
    /// The kubeconfig's name for the context's cluster.
    pub cluster: Option<String>,
    pub server: Option<String>,
}

/// What to connect with.
pub enum Choice {
    /// A context of a kubeconfig.
    Context(Box<Selected>),
    /// No kubeconfig, but running in a pod: the service account's config.
    InCluster,
}

/// A kubeconfig and the context chosen in it.
pub struct Selected {
    pub kubeconfig: Kubeconfig,
    /// The file(s) read, as messages name them.
    pub source: String,
    pub context: String,
    pub facts: KubeconfigFacts,
}

/// The kubeconfig files kubectl would read, merged, and where they came from.
struct Loaded {
    merged: Kubeconfig,
    origin: Origin,
    any_file_read: bool,
}

/// Which files were asked for, to name them in messages.
enum Origin {
    Flag(PathBuf),
    Env(Vec<PathBuf>),
    Default(PathBuf),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Flag(path) | Self::Default(path) => write!(f, "{}", path.display()),
            Self::Env(paths) => write!(f, "{} (from KUBECONFIG)", list(paths)),
        }
    }
}

impl Origin {
    fn nothing_there(&self) -> String {
        match self {
            Self::Env(paths) => format!(
                "no kubeconfig: none of the files in KUBECONFIG exists ({})",
                list(paths)
            ),
            Self::Flag(path) | Self::Default(path) => {
                format!("no kubeconfig: {} does not exist", path.display())
            }
        }
    }
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

const SKIP_HINT: &str = "or skip discovery with --registry HOST[:PORT]";

/// Reads the kubeconfig and picks the context, without contacting any server.
pub fn choose(args: &ClusterOptions, settings: &Settings, printer: &Printer) -> Result<Choice> {
    let loaded = load(args, settings, printer)?;
    let nothing_configured = loaded.merged.contexts.is_empty() && loaded.merged.clusters.is_empty();
    if nothing_configured
        && args.kubeconfig.is_none()
        && args.context.is_none()
        && settings.in_a_pod
    {
        printer.debug("no kubeconfig; using the pod's service account (in-cluster config)");
        return Ok(Choice::InCluster);
    }
    select_context(loaded, args.context.as_deref())
        .map(|selected| Choice::Context(Box::new(selected)))
}

/// The current context's names and server, when a kubeconfig can be read; never an error.
pub fn facts_if_available(
    args: &ClusterOptions,
    settings: &Settings,
    printer: &Printer,
) -> KubeconfigFacts {
    match choose(args, settings, printer) {
        Ok(Choice::Context(selected)) => selected.facts,
        Ok(Choice::InCluster) => KubeconfigFacts::default(),
        Err(err) => {
            printer.debug(&format!("no kubeconfig facts: {}", err.message()));
            KubeconfigFacts::default()
        }
    }
}

fn load(args: &ClusterOptions, settings: &Settings, printer: &Printer) -> Result<Loaded> {
    if let Some(path) = &args.kubeconfig {
        // An explicit file must exist, as with kubectl --kubeconfig.
        return Ok(Loaded {
            merged: read_file(path)?,
            origin: Origin::Flag(path.clone()),
            any_file_read: true,
        });
    }
    if !settings.kubeconfig_files.is_empty() {
        let files = settings.kubeconfig_files.clone();
        return merge_skipping_missing(Origin::Env(files), printer);
    }
    let default = settings.default_kubeconfig.clone();
    merge_skipping_missing(Origin::Default(default), printer)
}

/// kubectl skips files of KUBECONFIG that do not exist; the first file to set a value wins.
fn merge_skipping_missing(origin: Origin, printer: &Printer) -> Result<Loaded> {
    let paths = match &origin {
        Origin::Env(paths) => paths.as_slice(),
        Origin::Flag(path) | Origin::Default(path) => std::slice::from_ref(path),
    };
    let mut merged = Kubeconfig::default();
    let mut any_file_read = false;
    for path in paths {
        if !path.exists() {
            printer.debug(&format!(
                "kubeconfig {} does not exist; skipped",
                path.display()
            ));
            continue;
        }
        let next = read_file(path)?;
        merged = merged.merge(next).map_err(|err| {
            Error::new(
                ExitCode::Cluster,
                format!(
                    "merging kubeconfig {} into the files before it",
                    path.display()
                ),
            )
            .with_source(err)
        })?;
        any_file_read = true;
    }
    Ok(Loaded {
        merged,
        origin,
        any_file_read,
    })
}

fn read_file(path: &Path) -> Result<Kubeconfig> {
    if is_cut_short_utf16(path) {
        return Err(Error::new(
            ExitCode::Cluster,
            format!("reading kubeconfig {}", path.display()),
        )
        .with_source(
            "it starts with a UTF-16 byte order mark but holds an odd number of bytes: it was cut short",
        )
        .with_hint(format!("fix or replace that file, {SKIP_HINT}")));
    }
    Kubeconfig::read_from(path).map_err(|err| {
        let message = format!("reading kubeconfig {}", path.display());
        let error = match err {
            KubeconfigError::ReadConfig(io, _) if io.kind() == ErrorKind::NotFound => {
                return Error::new(ExitCode::Cluster, message)
                    .with_source(io)
                    .with_hint(format!("check the path, or unset --kubeconfig to use KUBECONFIG or ~/.kube/config; {SKIP_HINT}"));
            }
            KubeconfigError::ReadConfig(io, _) => Error::new(ExitCode::Cluster, message).with_source(io),
            KubeconfigError::Parse(yaml) => {
                // The bare parser message; its source snippet does not fit a `caused by:` line.
                Error::new(ExitCode::Cluster, message).with_source(yaml.without_snippet().to_string())
            }
            other => Error::new(ExitCode::Cluster, message).with_source(other),
        };
        error.with_hint(format!("fix or replace that file, {SKIP_HINT}"))
    })
}

/// A file kube's reader would panic on: it decodes UTF-16 (after a byte order mark) two bytes at
/// a time and indexes past the end of an odd-length file (kube-client 5.0.0, `read_path`).
fn is_cut_short_utf16(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| {
        matches!(bytes.as_slice(), [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..]) && bytes.len() % 2 == 1
    })
}

/// The fuzz targets' way in: one kubeconfig file read as `--kubeconfig FILE` reads it, and
/// its current context chosen.
#[cfg(fuzzing)]
pub(crate) fn read_and_select(path: &Path) -> Result<Selected> {
    let loaded = Loaded {
        merged: read_file(path)?,
        origin: Origin::Flag(path.to_path_buf()),
        any_file_read: true,
    };
    select_context(loaded, None)
}

fn select_context(loaded: Loaded, wanted: Option<&str>) -> Result<Selected> {
    let Loaded {
        merged,
        origin,
        any_file_read,
    } = loaded;
    if !any_file_read {
        return Err(Error::new(ExitCode::Cluster, origin.nothing_there()).with_hint(format!(
            "create a cluster (`kind create cluster` writes one) or point --kubeconfig at one, {SKIP_HINT}"
        )));
    }
    let available: Vec<&str> = merged.contexts.iter().map(|c| c.name.as_str()).collect();
    let choose_hint = || {
        if available.is_empty() {
            format!(
                "the kubeconfig has no contexts: create a cluster or point --kubeconfig at another file, {SKIP_HINT}"
            )
        } else {
            format!(
                "contexts available: {}; choose one with --context NAME",
                available.join(", ")
            )
        }
    };
    let name = match (wanted, merged.current_context.as_deref()) {
        (Some(name), _) => name,
        (None, Some(current)) if !current.is_empty() => current,
        (None, _) if available.is_empty() => {
            return Err(Error::new(
                ExitCode::Cluster,
                format!("kubeconfig {origin} has no contexts"),
            )
            .with_hint(choose_hint()));
        }
        (None, _) => {
            return Err(Error::new(
                ExitCode::Cluster,
                format!("kubeconfig {origin} sets no current-context"),
            )
            .with_hint(choose_hint()));
        }
    };
    let Some(context) = merged
        .contexts
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.context.as_ref())
    else {
        return Err(Error::new(
            ExitCode::Cluster,
            format!("context {name:?} is not in kubeconfig {origin}"),
        )
        .with_hint(choose_hint()));
    };
    let cluster_name = context.cluster.clone();
    let Some(cluster) = merged
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.as_ref())
    else {
        return Err(Error::new(
            ExitCode::Cluster,
            format!("context {name:?} names cluster {cluster_name:?}, which is not in kubeconfig {origin}"),
        )
        .with_hint(format!("fix the kubeconfig, or choose another context with --context NAME, {SKIP_HINT}")));
    };
    let facts = KubeconfigFacts {
        context: Some(name.to_string()),
        cluster: Some(cluster_name),
        server: cluster.server.clone(),
    };
    Ok(Selected {
        source: origin.to_string(),
        context: name.to_string(),
        kubeconfig: merged,
        facts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_utf16_kubeconfig_cut_short_is_an_error_not_a_panic() {
        // Found by the `kubeconfig` fuzz target (minimised): kube's reader panicked on it.
        let dir = tempfile::tempdir().unwrap();
        for bytes in [&[0xfe, 0xff, 0x41][..], &[0xff, 0xfe, 0x41, 0x00, 0x42][..]] {
            let path = dir.path().join("config");
            std::fs::write(&path, bytes).unwrap();
            let Err(err) = read_file(&path) else {
                panic!("a UTF-16 file cut short was read");
            };
            assert_eq!(
                err.causes(),
                vec![
                    "it starts with a UTF-16 byte order mark but holds an odd number of bytes: it was cut short"
                ]
            );
        }
        // Whole UTF-16 still reads (kube decodes it).
        let path = dir.path().join("config");
        let text: Vec<u8> = [0xff, 0xfe]
            .into_iter()
            .chain(
                "apiVersion: v1\nkind: Config\n"
                    .encode_utf16()
                    .flat_map(u16::to_le_bytes),
            )
            .collect();
        std::fs::write(&path, text).unwrap();
        assert!(read_file(&path).is_ok());
    }
}
