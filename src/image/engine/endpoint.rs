//! Where each engine's API listens, found the way its own CLI finds it: `DOCKER_HOST`, then
//! `DOCKER_CONTEXT`, then the docker config's `currentContext` (its endpoint in
//! `contexts/meta/<sha256 of the name>/meta.json`), then the default socket; podman's
//! `CONTAINER_HOST`, then its rootless and rootful sockets.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest as _, Sha256};

const DOCKER_DEFAULT_SOCKET: &str = "/var/run/docker.sock";
const PODMAN_ROOTFUL_SOCKET: &str = "/run/podman/podman.sock";

/// How an engine is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// Its API over a unix socket; `origin` says where the path came from, for `-v`.
    Socket { path: PathBuf, origin: String },
    /// Its CLI: the API is elsewhere (tcp://, ssh://) or no socket was found, and the CLI knows
    /// how to reach it.
    Cli,
}

/// What the environment says about where the engines listen (read once, by the settings).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineEnv {
    pub docker_host: Option<String>,
    pub docker_context: Option<String>,
    /// `DOCKER_CONFIG`, else `~/.docker`: where the contexts are.
    pub docker_config_dir: Option<PathBuf>,
    pub container_host: Option<String>,
    /// `XDG_RUNTIME_DIR`: where podman's rootless socket is.
    pub runtime_dir: Option<PathBuf>,
    /// `TMPDIR`: where podman spools big files when set (else `/var/tmp`).
    pub tmp_dir: Option<PathBuf>,
    /// `CONTAINERS_STORAGE_CONF` and `STORAGE_DRIVER`: podman's image store, as podman reads them.
    pub storage_conf: Option<PathBuf>,
    pub storage_driver: Option<String>,
    /// `XDG_CONFIG_HOME`, `XDG_DATA_HOME` and `HOME`: where a rootless store and its file are.
    pub config_home: Option<PathBuf>,
    pub data_home: Option<PathBuf>,
    pub home: Option<PathBuf>,
    /// `CONTAINERD_ADDRESS`, `CONTAINERD_NAMESPACE` and `NERDCTL_TOML`: where nerdctl's images are.
    pub containerd_address: Option<String>,
    pub containerd_namespace: Option<String>,
    pub nerdctl_toml: Option<PathBuf>,
}

impl EngineEnv {
    /// Where an engine's CLI writes its big temporary files: `TMPDIR`, else `/var/tmp`, as
    /// podman decides (`/tmp` is often a small tmpfs).
    pub fn big_files_dir(&self) -> PathBuf {
        self.tmp_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("/var/tmp"))
    }
}

/// Where docker's API is, as the docker CLI would decide.
pub(super) fn docker(env: &EngineEnv) -> Endpoint {
    if let Some(host) = &env.docker_host {
        return from_host(host, "DOCKER_HOST");
    }
    let config_dir = env.docker_config_dir.as_deref();
    let context = env
        .docker_context
        .clone()
        .or_else(|| config_dir.and_then(current_context));
    if let (Some(context), Some(dir)) = (context.filter(|c| c != "default"), config_dir) {
        return match context_host(dir, &context) {
            Some(host) => from_host(&host, &format!("docker context {context}")),
            // A context we cannot read: its CLI will say what is wrong with it.
            None => Endpoint::Cli,
        };
    }
    existing_socket(Path::new(DOCKER_DEFAULT_SOCKET), "docker's default socket")
}

/// Where podman's API is: `CONTAINER_HOST`, else the rootless socket, else the rootful one.
pub(super) fn podman(env: &EngineEnv) -> Endpoint {
    if let Some(host) = &env.container_host {
        return from_host(host, "CONTAINER_HOST");
    }
    if let Some(runtime) = &env.runtime_dir {
        let rootless = runtime.join("podman/podman.sock");
        if let found @ Endpoint::Socket { .. } = existing_socket(&rootless, "podman's socket") {
            return found;
        }
    }
    existing_socket(Path::new(PODMAN_ROOTFUL_SOCKET), "podman's socket")
}

fn from_host(host: &str, origin: &str) -> Endpoint {
    match host.strip_prefix("unix://") {
        Some(path) => Endpoint::Socket {
            path: PathBuf::from(path),
            origin: origin.to_string(),
        },
        None => Endpoint::Cli,
    }
}

fn existing_socket(path: &Path, origin: &str) -> Endpoint {
    if path.exists() {
        Endpoint::Socket {
            path: path.to_path_buf(),
            origin: origin.to_string(),
        }
    } else {
        Endpoint::Cli
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigFile {
    current_context: Option<String>,
}

fn current_context(config_dir: &Path) -> Option<String> {
    let bytes = std::fs::read(config_dir.join("config.json")).ok()?;
    let config: ConfigFile = serde_json::from_slice(&bytes).ok()?;
    config.current_context.filter(|c| !c.is_empty())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ContextMeta {
    endpoints: std::collections::HashMap<String, EndpointMeta>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct EndpointMeta {
    host: Option<String>,
}

/// The docker endpoint of context `name`: the CLI stores it under the sha256 of the name.
fn context_host(config_dir: &Path, name: &str) -> Option<String> {
    let id = hex::encode(Sha256::digest(name.as_bytes()));
    let meta = config_dir.join("contexts/meta").join(id).join("meta.json");
    let meta: ContextMeta = serde_json::from_slice(&std::fs::read(meta).ok()?).ok()?;
    meta.endpoints.get("docker")?.host.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_endpoint_is_read_from_the_hashed_meta_directory() {
        let dir = tempfile::tempdir().unwrap();
        let id = hex::encode(Sha256::digest(b"colima"));
        let meta_dir = dir.path().join("contexts/meta").join(id);
        std::fs::create_dir_all(&meta_dir).unwrap();
        std::fs::write(
            meta_dir.join("meta.json"),
            r#"{"Name":"colima","Metadata":{},"Endpoints":{"docker":{"Host":"unix:///x/docker.sock","SkipTLSVerify":false}}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("config.json"),
            r#"{"currentContext":"colima"}"#,
        )
        .unwrap();
        assert_eq!(current_context(dir.path()).as_deref(), Some("colima"));
        assert_eq!(
            context_host(dir.path(), "colima").as_deref(),
            Some("unix:///x/docker.sock")
        );
        assert_eq!(context_host(dir.path(), "other"), None);
    }

    #[test]
    fn only_unix_hosts_are_spoken_to_directly() {
        assert_eq!(
            from_host("unix:///run/user/1/docker.sock", "DOCKER_HOST"),
            Endpoint::Socket {
                path: "/run/user/1/docker.sock".into(),
                origin: "DOCKER_HOST".into()
            }
        );
        assert_eq!(
            from_host("tcp://10.0.0.1:2376", "DOCKER_HOST"),
            Endpoint::Cli
        );
        assert_eq!(from_host("ssh://me@box", "DOCKER_HOST"), Endpoint::Cli);
    }
}
