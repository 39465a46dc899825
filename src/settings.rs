//! What the environment says, read once at start into one value passed down: the only module that
//! reads environment variables, so the rest of the code (and its tests) sees plain data.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::image::engine::{Engine, EngineEnv, Lookup};
use crate::image::registry::{CredentialSources, Proxies, TransportOptions};
use crate::plumbing::environment as var;
use crate::plumbing::error::Result;
use crate::plumbing::limits::Limits;

pub use crate::plumbing::environment::{
    REGISTRY_HOST as REGISTRY_HOST_ENV, REGISTRY_RUNTIME_HOST as REGISTRY_RUNTIME_HOST_ENV,
};
/// Where the kubelet mounts a pod's service account.
pub const DEFAULT_SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Everything read from the environment, resolved to what the code uses.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `KUBECONFIG`, split as kubectl splits it (empty entries dropped).
    pub kubeconfig_files: Vec<PathBuf>,
    /// `~/.kube/config`, where kubectl looks without `KUBECONFIG`.
    pub default_kubeconfig: PathBuf,
    /// `KUBERNETES_SERVICE_HOST` is set: running in a pod.
    pub in_a_pod: bool,
    /// `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`: the API server seen from a pod.
    pub service_host: Option<OsString>,
    pub service_port: Option<OsString>,
    /// The pod's service account files: `KUBECTL_REGISTRY_SERVICEACCOUNT_DIR` (for tests), else
    /// where the kubelet mounts them.
    pub service_account_dir: PathBuf,
    /// `NO_COLOR` is set to anything but the empty string.
    pub no_color: bool,
    /// `KUBECTL_REGISTRY_HOST` and `KUBECTL_REGISTRY_RUNTIME_HOST`, raw (checked by discovery).
    pub registry_host: Option<OsString>,
    pub registry_runtime_host: Option<OsString>,
    /// `PATH`, where programs we only look for (not run through the OS) are searched.
    pub path: Option<OsString>,
    /// `KUBECTL_REGISTRY_ENGINE`: the engine asked first for a named image.
    pub preferred_engine: Option<Engine>,
    /// Docker's and podman's credential files.
    pub credentials: CredentialSources,
    /// Where docker's and podman's Engine APIs listen (`DOCKER_HOST`, `DOCKER_CONTEXT`, the docker
    /// config dir with its contexts, `CONTAINER_HOST`, `XDG_RUNTIME_DIR`).
    pub engine_env: EngineEnv,
    /// Where the record of sent blobs lives: `$KUBECTL_REGISTRY_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/kubectl-registry`, else `~/.cache/kubectl-registry`; `None`: no record kept.
    pub cache_dir: Option<PathBuf>,
    /// How long we wait and how often we retry (`KUBECTL_REGISTRY_STALL_TIMEOUT` and the rest).
    pub limits: Limits,
    /// `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`.
    pub proxies: Proxies,
}

impl Settings {
    /// Reads the process environment; fails (exit 2) on a malformed bound such as
    /// `KUBECTL_REGISTRY_ATTEMPTS=many`.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|name| std::env::var_os(name), std::env::home_dir())
    }

    /// Resolves settings from `lookup` (an environment) and the home directory.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<OsString>,
        home: Option<PathBuf>,
    ) -> Result<Self> {
        let set = |name: &str| lookup(name).filter(|value| !value.is_empty());
        let text = |name: &str| lookup(name).and_then(|value| value.into_string().ok());
        let docker_dir = set(var::DOCKER_CONFIG)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|home| home.join(".docker")));
        let podman_auth_file = set(var::REGISTRY_AUTH_FILE).map(PathBuf::from).or_else(|| {
            set(var::XDG_RUNTIME_DIR).map(|dir| PathBuf::from(dir).join("containers/auth.json"))
        });
        let cache_dir = set(var::CACHE_DIR)
            .map(PathBuf::from)
            .or_else(|| {
                set(var::XDG_CACHE_HOME).map(|dir| PathBuf::from(dir).join("kubectl-registry"))
            })
            .or_else(|| {
                home.as_ref()
                    .map(|home| home.join(".cache/kubectl-registry"))
            });
        Ok(Self {
            kubeconfig_files: set(var::KUBECONFIG)
                .map(|value| {
                    std::env::split_paths(&value)
                        .filter(|path| !path.as_os_str().is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            default_kubeconfig: home
                .as_ref()
                .map(|home| home.join(".kube").join("config"))
                .unwrap_or_else(|| PathBuf::from(".kube/config")),
            in_a_pod: set(var::SERVICE_HOST).is_some(),
            service_host: set(var::SERVICE_HOST),
            service_port: set(var::SERVICE_PORT),
            service_account_dir: set(var::SERVICE_ACCOUNT_DIR)
                .map_or_else(|| PathBuf::from(DEFAULT_SERVICE_ACCOUNT_DIR), PathBuf::from),
            no_color: set(var::NO_COLOR).is_some(),
            registry_host: set(var::REGISTRY_HOST),
            registry_runtime_host: set(var::REGISTRY_RUNTIME_HOST),
            path: set(var::PATH),
            preferred_engine: set(var::ENGINE)
                .map(|engine| Engine::from_setting(var::ENGINE, &engine.to_string_lossy()))
                .transpose()?,
            credentials: CredentialSources {
                docker_config: docker_dir.as_ref().map(|dir| dir.join("config.json")),
                podman_auth_file,
                helper_path: None,
            },
            engine_env: EngineEnv {
                docker_host: set(var::DOCKER_HOST).and_then(|v| v.into_string().ok()),
                docker_context: set(var::DOCKER_CONTEXT).and_then(|v| v.into_string().ok()),
                docker_config_dir: docker_dir,
                container_host: set(var::CONTAINER_HOST).and_then(|v| v.into_string().ok()),
                runtime_dir: set(var::XDG_RUNTIME_DIR).map(PathBuf::from),
                tmp_dir: set(var::TMPDIR).map(PathBuf::from),
                storage_conf: set(var::STORAGE_CONF).map(PathBuf::from),
                storage_driver: set(var::STORAGE_DRIVER).and_then(|v| v.into_string().ok()),
                config_home: set(var::XDG_CONFIG_HOME).map(PathBuf::from),
                data_home: set(var::XDG_DATA_HOME).map(PathBuf::from),
                home: home.clone(),
                containerd_address: set(var::CONTAINERD_ADDRESS).and_then(|v| v.into_string().ok()),
                containerd_namespace: set(var::CONTAINERD_NAMESPACE)
                    .and_then(|v| v.into_string().ok()),
                nerdctl_toml: set(var::NERDCTL_TOML).map(PathBuf::from),
            },
            cache_dir,
            limits: Limits::from_lookup(text)?,
            proxies: Proxies::from_lookup(text),
        })
    }

    /// Where to look for an engine's image: the preferred engine first, where each listens.
    pub fn engine_lookup(&self) -> Lookup<'_> {
        Lookup {
            preferred: self.preferred_engine,
            env: &self.engine_env,
            limits: self.limits,
        }
    }

    /// How to reach a registry as far as the environment decides it (credentials, bounds,
    /// proxies); the command line adds the rest.
    pub fn transport_options(&self) -> TransportOptions {
        TransportOptions {
            credentials: self.credentials.clone(),
            limits: self.limits,
            proxies: self.proxies.clone(),
            ..TransportOptions::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)], home: Option<&str>) -> Settings {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(name, value)| (name.to_string(), OsString::from(value)))
            .collect();
        Settings::from_lookup(|name| vars.get(name).cloned(), home.map(PathBuf::from)).unwrap()
    }

    #[test]
    fn defaults_follow_the_home_directory() {
        let s = settings(&[], Some("/home/dev"));
        assert_eq!(
            s.default_kubeconfig,
            PathBuf::from("/home/dev/.kube/config")
        );
        assert!(s.kubeconfig_files.is_empty());
        assert_eq!(
            s.credentials.docker_config,
            Some(PathBuf::from("/home/dev/.docker/config.json"))
        );
        assert_eq!(s.credentials.podman_auth_file, None);
        assert_eq!(
            s.cache_dir,
            Some(PathBuf::from("/home/dev/.cache/kubectl-registry"))
        );
        assert!(!s.in_a_pod && !s.no_color);
        assert_eq!(s.preferred_engine, None);
    }

    #[test]
    fn variables_override_in_the_documented_order_and_empty_means_unset() {
        let s = settings(
            &[
                ("KUBECONFIG", "/a:/b::/c"),
                ("DOCKER_CONFIG", "/dc"),
                ("XDG_RUNTIME_DIR", "/run/user/1"),
                ("XDG_CACHE_HOME", "/xdg"),
                ("KUBERNETES_SERVICE_HOST", "10.0.0.1"),
                ("NO_COLOR", ""),
                (var::ENGINE, "podman"),
                (REGISTRY_HOST_ENV, ""),
            ],
            None,
        );
        let files: Vec<PathBuf> = ["/a", "/b", "/c"].map(PathBuf::from).into();
        assert_eq!(s.kubeconfig_files, files);
        assert_eq!(s.default_kubeconfig, PathBuf::from(".kube/config"));
        assert_eq!(
            s.credentials.docker_config,
            Some(PathBuf::from("/dc/config.json"))
        );
        assert_eq!(
            s.credentials.podman_auth_file,
            Some(PathBuf::from("/run/user/1/containers/auth.json"))
        );
        assert_eq!(s.cache_dir, Some(PathBuf::from("/xdg/kubectl-registry")));
        assert!(s.in_a_pod);
        assert!(!s.no_color, "an empty NO_COLOR is unset");
        assert_eq!(s.preferred_engine, Some(Engine::Podman));
        assert_eq!(s.registry_host, None);

        let s = settings(
            &[
                (var::CACHE_DIR, "/mine"),
                ("XDG_CACHE_HOME", "/xdg"),
                ("REGISTRY_AUTH_FILE", "/auth.json"),
            ],
            Some("/h"),
        );
        assert_eq!(s.cache_dir, Some(PathBuf::from("/mine")));
        assert_eq!(
            s.credentials.podman_auth_file,
            Some(PathBuf::from("/auth.json"))
        );
    }
}
