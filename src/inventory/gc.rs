//! Reclaiming the registry's disk after deletes: a distribution registry frees blobs only in
//! its offline `registry garbage-collect`. Where it runs in a container we can name (kind's and
//! ctlptl's `kind-registry`, k3d's `k3d-NAME`), `docker exec` runs it there, the storage measured
//! before and after, and the container is restarted so its blob cache forgets what was freed.

use std::ffi::OsString;
use std::time::Duration;

use serde::Serialize;

use crate::cluster::hosting::LocalRegistry;
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::output::Printer;
use crate::plumbing::output::human_size;
use crate::plumbing::process::{Argv, Bound, Run};

/// Where the registry image keeps its config and its storage.
const CONFIG: &str = "/etc/docker/registry/config.yml";
const STORAGE: &str = "/var/lib/registry";
/// The engine whose containers the registries of kind, ctlptl and k3d are.
const ENGINE: &str = "docker";
/// A garbage-collect walks every manifest and blob: minutes on a large registry.
const GC_TIMEOUT: Duration = Duration::from_secs(15 * 60);
const SHORT_TIMEOUT: Duration = Duration::from_secs(60);

/// What the garbage-collect freed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Collected {
    pub container: String,
    /// The registry's storage (`du -sk`) before and after, in bytes.
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub freed_bytes: u64,
    /// Blobs it deleted, as it counted them.
    pub blobs_deleted: Option<u64>,
    /// Restarted so that its in-memory blob cache does not answer for deleted blobs.
    pub restarted: bool,
}

impl Collected {
    pub(crate) fn summary(&self) -> String {
        let blobs = self
            .blobs_deleted
            .map(|n| format!(" ({n} blobs)"))
            .unwrap_or_default();
        format!(
            "garbage-collect in {} freed {}{blobs}: {} -> {}{}",
            self.container,
            human_size(self.freed_bytes),
            human_size(self.bytes_before),
            human_size(self.bytes_after),
            if self.restarted { "; restarted it" } else { "" }
        )
    }
}

/// The containers the registry may run in, from the names it is advertised under: `kind-registry`
/// from `kind-registry:5000`, `k3d-reg` from `k3d-reg.localhost:5000`. Loopback names are not
/// container names.
fn candidates(registry: &LocalRegistry) -> Vec<String> {
    let mut names = Vec::new();
    let hosts = [
        Some(&registry.host_from_container_runtime),
        registry.host_from_cluster_network.as_ref(),
        Some(&registry.host),
    ];
    for host in hosts.into_iter().flatten() {
        let hostname = host.hostname();
        // `k3d-reg.localhost` is k3d's container `k3d-reg`; `localhost` and addresses are no name.
        let name = hostname.strip_suffix(".localhost").unwrap_or(hostname);
        if host.is_loopback() && name == hostname {
            continue;
        }
        let plausible = !name.is_empty()
            && !name.contains('.')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if plausible && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// How to reclaim the space, for a prune run without `--gc`.
pub(crate) fn hint(registry: &LocalRegistry) -> String {
    match candidates(registry).first() {
        Some(name) => format!(
            "the registry frees them only in its garbage-collect: prune --gc runs it in {name}, or run `{ENGINE} exec {name} registry garbage-collect --delete-untagged {CONFIG}` (then restart it)"
        ),
        None => "the registry frees them only in its garbage-collect (`registry garbage-collect --delete-untagged CONFIG`, where it runs)".to_string(),
    }
}

/// Finds the registry's container, runs the garbage-collect there and measures what it freed.
pub(crate) async fn collect(
    registry: &LocalRegistry,
    delete_untagged: bool,
    printer: &Printer,
) -> Result<Collected> {
    let names = candidates(registry);
    let mut tried = Vec::new();
    let mut found = None;
    for name in &names {
        match storage_bytes(name).await {
            Ok(bytes) => {
                found = Some((name.clone(), bytes));
                break;
            }
            Err(why) => {
                printer.debug(&format!("{name}: {why}"));
                tried.push(format!("{name} ({why})"));
            }
        }
    }
    let Some((container, bytes_before)) = found else {
        let named = if tried.is_empty() {
            "the registry is advertised under no name a container could have".to_string()
        } else {
            format!("no registry container answered: {}", tried.join("; "))
        };
        return Err(Error::new(
            ExitCode::Registry,
            format!("--gc: the manifests were deleted, but {named}"),
        )
        .with_hint(format!(
            "run `registry garbage-collect --delete-untagged {CONFIG}` where the registry runs, then restart it"
        )));
    };
    printer.status(&format!("running garbage-collect in {container}"));
    let mut args = vec!["registry", "garbage-collect"];
    if delete_untagged {
        args.push("--delete-untagged");
    } else {
        printer.warn(
            "garbage-collect runs without --delete-untagged: the registry holds image indexes (or was read only in part), whose platform manifests distribution 2.x would remove with it; what prune deleted is freed all the same",
        );
    }
    args.push(CONFIG);
    let gc = exec(&container, &args);
    let said = run_tool(&gc, GC_TIMEOUT).await.map_err(|why| {
        Error::new(
            ExitCode::Registry,
            format!("--gc: the garbage-collect in {container} failed"),
        )
        .with_source(why)
    })?;
    let blobs_deleted = blobs_deleted(&String::from_utf8_lossy(&said));
    let bytes_after = storage_bytes(&container).await.map_err(|why| {
        Error::new(
            ExitCode::Registry,
            format!("--gc: measuring the storage of {container} after its garbage-collect"),
        )
        .with_source(why)
    })?;
    let restart = Argv::new(ENGINE, ["restart", container.as_str()].map(OsString::from));
    let restarted = match run_tool(&restart, SHORT_TIMEOUT).await {
        Ok(_) => true,
        Err(why) => {
            printer.warn(&format!(
                "could not restart {container} ({why}); restart it before the next push, so that it does not answer for the blobs it freed"
            ));
            false
        }
    };
    Ok(Collected {
        container,
        freed_bytes: bytes_before.saturating_sub(bytes_after),
        bytes_before,
        bytes_after,
        blobs_deleted,
        restarted,
    })
}

fn exec(container: &str, args: &[&str]) -> Argv {
    let argv = ["exec", container].into_iter().chain(args.iter().copied());
    Argv::new(ENGINE, argv.map(OsString::from))
}

/// Runs `command` in the registry's container for at most `bound`: its stdout, or why it failed.
async fn run_tool(command: &Argv, bound: Duration) -> std::result::Result<Vec<u8>, String> {
    Run::new(command, Bound::Within(bound))
        .succeed()
        .await
        .map(|ran| ran.stdout)
        .map_err(|err| err.to_string())
}

/// `du -sk` of the registry's storage in its container, in bytes.
async fn storage_bytes(container: &str) -> std::result::Result<u64, String> {
    let du = exec(container, &["du", "-sk", STORAGE]);
    let out = run_tool(&du, SHORT_TIMEOUT).await?;
    let text = String::from_utf8_lossy(&out);
    text.split_whitespace()
        .next()
        .and_then(|kib| kib.parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .ok_or_else(|| format!("`{du}` printed no size"))
}

/// From `N blobs marked, M blobs and K manifests eligible for deletion`: M.
fn blobs_deleted(said: &str) -> Option<u64> {
    said.lines().find_map(|line| {
        let (_, rest) = line.split_once("blobs marked, ")?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::hosting::RegistrySource;
    use crate::image::reference::RegistryHost;

    fn registry(host: &str, runtime: &str, network: Option<&str>) -> LocalRegistry {
        LocalRegistry {
            host: RegistryHost::parse(host).unwrap(),
            host_from_container_runtime: RegistryHost::parse(runtime).unwrap(),
            host_from_cluster_network: network.map(|n| RegistryHost::parse(n).unwrap()),
            service: None,
            host_advertised: true,
            help: None,
            source: RegistrySource::Configmap,
        }
    }

    #[test]
    fn container_names_come_from_the_advertised_hosts() {
        assert_eq!(
            candidates(&registry("localhost:5001", "kind-registry:5000", None)),
            ["kind-registry"]
        );
        assert_eq!(
            candidates(&registry(
                "k3d-reg.localhost:5000",
                "k3d-reg.localhost:5000",
                Some("k3d-reg:5000")
            )),
            ["k3d-reg"]
        );
        assert!(candidates(&registry("localhost:5001", "localhost:5001", None)).is_empty());
        assert!(candidates(&registry("localhost:5001", "registry.example.com", None)).is_empty());
    }

    #[test]
    fn the_count_of_deleted_blobs_is_read_from_the_summary_line() {
        let said = "app\napp: marking manifest sha256:aa\n\n3 blobs marked, 5 blobs and 2 manifests eligible for deletion\nblob eligible for deletion: sha256:bb\n";
        assert_eq!(blobs_deleted(said), Some(5));
        assert_eq!(blobs_deleted("nothing"), None);
    }
}
