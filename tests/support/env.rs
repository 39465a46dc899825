//! A clean environment for the programs the tests run: a private HOME, no colour, and none of
//! the machine's cluster, registry, cache or proxy variables.

use std::path::Path;
use std::process::Command;

/// Variables that would make a run depend on the machine running the tests.
const SCRUBBED: [&str; 31] = [
    "KUBECONFIG",
    "KUBECTL_REGISTRY_HOST",
    "KUBECTL_REGISTRY_RUNTIME_HOST",
    "KUBECTL_REGISTRY_ENGINE",
    "KUBECTL_REGISTRY_CACHE_DIR",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
    "DOCKER_CONFIG",
    "REGISTRY_AUTH_FILE",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "ALL_PROXY",
    "all_proxy",
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
    "KUBECTL_REGISTRY_SERVICEACCOUNT_DIR",
    "NO_COLOR",
    "KUBECTL_REGISTRY_STALL_TIMEOUT",
    "KUBECTL_REGISTRY_REQUEST_TIMEOUT",
    "KUBECTL_REGISTRY_ATTEMPTS",
    "KUBECTL_REGISTRY_RETRY_DELAY",
    "KUBECTL_REGISTRY_HELPER_TIMEOUT",
    "KUBECTL_REGISTRY_NODE_TIMEOUT",
    "CONTAINERS_STORAGE_CONF",
    "STORAGE_DRIVER",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
];

/// Scrubs `cmd`'s environment and gives it `home` as HOME; `NO_COLOR` is set.
pub(crate) fn clean_env<'a>(cmd: &'a mut Command, home: &Path) -> &'a mut Command {
    for var in SCRUBBED {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home).env("NO_COLOR", "1")
}

/// The built `kubectl-registry` with a clean environment.
pub(crate) fn plugin_cmd(home: &Path) -> assert_cmd::Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("kubectl-registry"));
    clean_env(&mut cmd, home);
    assert_cmd::Command::from_std(cmd)
}
