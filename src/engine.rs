//! The push source: an archive path, stdin, or an image in the local docker/podman engine (saved to a temp file).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::error::{Error, ExitCode, Result};
use crate::output::Printer;

/// Engines asked for a named image, in order; the preferred one (`KUBECTL_REGISTRY_ENGINE`) first.
const ENGINES: [&str; 3] = ["docker", "podman", "nerdctl"];

/// What the user named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Stdin,
    Path(PathBuf),
    EngineImage(String),
}

impl Source {
    /// An existing path is a path; so is anything that looks like one (a typo must not reach docker).
    pub fn classify(raw: &str) -> Self {
        let looks_like_path = raw.starts_with(['.', '/', '~'])
            || [".tar", ".tgz", ".gz", ".zst", ".tar.gz", ".tar.zst"]
                .iter()
                .any(|ext| raw.ends_with(ext));
        match raw {
            "-" => Self::Stdin,
            _ if looks_like_path || Path::new(raw).exists() => Self::Path(PathBuf::from(raw)),
            _ => Self::EngineImage(raw.to_string()),
        }
    }
}

/// Saves `image` from the first local engine that has it into `dir`, returning the archive path.
pub async fn save(
    image: &str,
    preferred: Option<&str>,
    dir: &Path,
    printer: &Printer,
) -> Result<PathBuf> {
    let archive = dir.join("engine-image.tar");
    let mut failures = Vec::new();
    for engine in engine_order(preferred) {
        printer.debug(&format!("asking {engine} for {image}"));
        let output = tokio::process::Command::new(&engine)
            .args(["image", "save", "-o"])
            .arg(&archive)
            .arg(image)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output()
            .await;
        match output {
            Ok(out) if out.status.success() => {
                printer.status(&format!("saved {image} from {engine}"));
                return Ok(archive);
            }
            Ok(out) => failures.push(format!(
                "{engine}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => failures.push(format!("{engine}: {err}")),
        }
    }
    let message = if failures.is_empty() {
        format!(
            "{image:?} is neither a file nor an image a local engine can save: no docker, podman or nerdctl on PATH"
        )
    } else {
        format!(
            "{image:?} is not a file, and no local engine could save it:\n  {}",
            failures.join("\n  ")
        )
    };
    Err(Error::new(ExitCode::Input, message).with_hint(
        "pass an archive (`docker save IMAGE -o image.tar`), `-` for stdin, or an image your engine has",
    ))
}

fn engine_order(preferred: Option<&str>) -> Vec<String> {
    preferred
        .into_iter()
        .chain(
            ENGINES
                .into_iter()
                .filter(|engine| Some(*engine) != preferred),
        )
        .map(str::to_string)
        .collect()
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
        assert_eq!(
            Source::classify("myimg:dev"),
            Source::EngineImage("myimg:dev".into())
        );
        assert_eq!(
            Source::classify("gcr.io/proj/app:v1"),
            Source::EngineImage("gcr.io/proj/app:v1".into())
        );
    }
}
