//! Every environment variable the tool reads or hands on, once: its name, its default and what
//! it does. `settings` reads them by these names; `--help` and docs/reference.md's table are
//! rendered from the table, and the tests scrub each of them.

/// One variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variable {
    pub name: &'static str,
    /// Other spellings read in its place (the lowercase proxies, as curl and Go read them).
    pub also: &'static [&'static str],
    /// What holds when it is unset, in words; empty when nothing does.
    pub default: &'static str,
    pub meaning: &'static str,
}

macro_rules! variables {
    ($($constant:ident = $name:literal $(, also $also:expr)?, default $default:literal: $meaning:literal;)*) => {
        $(pub const $constant: &str = $name;)*
        /// Every variable, in the order the docs list them.
        pub const VARIABLES: &[Variable] = &[$(Variable {
            name: $name,
            also: variables!(@also $($also)?),
            default: $default,
            meaning: $meaning,
        }),*];
    };
    (@also) => { &[] };
    (@also $also:expr) => { $also };
}

variables! {
    KUBECONFIG = "KUBECONFIG", default "`~/.kube/config`":
        "kubeconfig files, `:`-separated, merged";
    REGISTRY_HOST = "KUBECTL_REGISTRY_HOST", default "":
        "the registry to push to, skipping discovery, as `--registry`";
    REGISTRY_RUNTIME_HOST = "KUBECTL_REGISTRY_RUNTIME_HOST", default "the registry host":
        "how the nodes' container runtime names that registry, as `--registry-from-runtime`";
    SERVICE_HOST = "KUBERNETES_SERVICE_HOST", default "":
        "set by the kubelet in a pod, with `KUBERNETES_SERVICE_PORT`: without a kubeconfig, the pod's service account is used";
    SERVICE_PORT = "KUBERNETES_SERVICE_PORT", default "":
        "the API server's port seen from a pod";
    SERVICE_ACCOUNT_DIR = "KUBECTL_REGISTRY_SERVICEACCOUNT_DIR", default "`/var/run/secrets/kubernetes.io/serviceaccount`":
        "where the service account's `token`, `ca.crt` and `namespace` are (for tests)";
    ENGINE = "KUBECTL_REGISTRY_ENGINE", default "docker, podman, nerdctl in turn":
        "the engine asked first for a named image (`docker`, `podman`, `nerdctl`)";
    DOCKER_HOST = "DOCKER_HOST", default "the current docker context":
        "where docker's Engine API listens (`unix://` is spoken to directly; anything else through the CLI)";
    DOCKER_CONTEXT = "DOCKER_CONTEXT", default "the docker config's `currentContext`":
        "which docker context names the Engine API";
    DOCKER_CERT_PATH = "DOCKER_CERT_PATH", default "":
        "the TLS client files of a `tcp://` docker host; read by the docker CLI we run";
    DOCKER_TLS_VERIFY = "DOCKER_TLS_VERIFY", default "":
        "TLS to a `tcp://` docker host; read by the docker CLI we run";
    CONTAINER_HOST = "CONTAINER_HOST", default "podman's rootless or rootful socket":
        "where podman's API listens";
    CONTAINERD_ADDRESS = "CONTAINERD_ADDRESS", default "nerdctl.toml's `address`, else `/run/containerd/containerd.sock`":
        "containerd's socket, where nerdctl's images are read";
    CONTAINERD_NAMESPACE = "CONTAINERD_NAMESPACE", default "nerdctl.toml's `namespace`, else `default`":
        "containerd's namespace of nerdctl's images";
    NERDCTL_TOML = "NERDCTL_TOML", default "`/etc/nerdctl/nerdctl.toml` for root, else `~/.config/nerdctl/nerdctl.toml`":
        "nerdctl's config file";
    STORAGE_CONF = "CONTAINERS_STORAGE_CONF", default "podman's `storage.conf` search":
        "podman's storage.conf, where its store is read directly";
    STORAGE_DRIVER = "STORAGE_DRIVER", default "storage.conf's `driver`":
        "podman's storage driver (`overlay`, `vfs`)";
    DOCKER_CONFIG = "DOCKER_CONFIG", default "`~/.docker`":
        "docker's config directory: registry credentials (`config.json`, credential helpers) and contexts";
    REGISTRY_AUTH_FILE = "REGISTRY_AUTH_FILE", default "`$XDG_RUNTIME_DIR/containers/auth.json`":
        "podman's registry credentials";
    XDG_RUNTIME_DIR = "XDG_RUNTIME_DIR", default "":
        "podman's runtime directory: its socket and `auth.json`";
    XDG_CONFIG_HOME = "XDG_CONFIG_HOME", default "`~/.config`":
        "podman's and nerdctl's per-user config";
    XDG_DATA_HOME = "XDG_DATA_HOME", default "`~/.local/share`":
        "podman's rootless store";
    TMPDIR = "TMPDIR", default "`/tmp`":
        "where engine exports and node-load archives are spooled";
    HOME = "HOME", default "":
        "the home directory the defaults above start from";
    PATH = "PATH", default "":
        "where engine CLIs, credential helpers and product CLIs are found";
    NO_COLOR = "NO_COLOR", default "":
        "no colour on stderr when set to anything";
    HTTPS_PROXY = "HTTPS_PROXY", also &["https_proxy"], default "":
        "the proxy for HTTPS to the API server and registry; never for loopback (`localhost`, 127.0.0.0/8, `::1`), as Go's net/http, kubectl, docker and skopeo do. A kubeconfig's own `proxy-url` is always used";
    HTTP_PROXY = "HTTP_PROXY", also &["http_proxy"], default "":
        "the proxy for plain HTTP, with the same exceptions";
    ALL_PROXY = "ALL_PROXY", also &["all_proxy"], default "":
        "the proxy for both when the one for the scheme is unset";
    NO_PROXY = "NO_PROXY", also &["no_proxy"], default "":
        "hosts reached without a proxy";
    CACHE_DIR = "KUBECTL_REGISTRY_CACHE_DIR", default "`$XDG_CACHE_HOME/kubectl-registry`, else `~/.cache/kubectl-registry`":
        "where the records of what was sent live";
    XDG_CACHE_HOME = "XDG_CACHE_HOME", default "`~/.cache`":
        "the cache directory's parent";
    STALL_TIMEOUT = "KUBECTL_REGISTRY_STALL_TIMEOUT", default "120":
        "seconds: a blob upload, its retries included, ends when none of its bytes moved for this long; so does an engine's export (`push NAME`), whose engine is then stopped; podman's own push (where its store is elsewhere) has ten times it to finish";
    REQUEST_TIMEOUT = "KUBECTL_REGISTRY_REQUEST_TIMEOUT", default "30":
        "seconds: each answer of the API server, and of the registry to a request without a streamed body (the first `GET /v2/`, a HEAD, a token, a manifest), must arrive whole within this, so an answer that trickles ends here (a watch's stream is bounded otherwise); so does an engine's `image inspect`";
    ATTEMPTS = "KUBECTL_REGISTRY_ATTEMPTS", default "5":
        "attempts per request or blob, the first included (a whole number, 1 to 100)";
    RETRY_DELAY = "KUBECTL_REGISTRY_RETRY_DELAY", default "0.5":
        "seconds: the wait before the first retry; it doubles for each next one, up to 30 s";
    HELPER_TIMEOUT = "KUBECTL_REGISTRY_HELPER_TIMEOUT", default "30":
        "seconds: a credential helper (`docker-credential-*`) or exec credential plugin run";
    NODE_TIMEOUT = "KUBECTL_REGISTRY_NODE_TIMEOUT", default "60":
        "seconds: a node command: listing the nodes (`kind get nodes`, `k3d node list`), each `ctr` asked of a node (`docker exec NODE ctr ...`, `minikube ssh -n NODE -- sudo ctr ...` or `-- docker ...`, `microk8s ctr ...`), removing images in `prune`; an import streamed into a node may take no byte for this long, and once the archive is in has ten times it to finish (unpacking); a product's whole-archive load (`kind load image-archive`, `minikube image load`, a `--load-command`) may print nothing for ten times it. A command past its bound is stopped and named";
}

/// Every name a variable is read under: what a clean environment removes.
pub fn all_names() -> impl Iterator<Item = &'static str> {
    VARIABLES
        .iter()
        .flat_map(|variable| std::iter::once(variable.name).chain(variable.also.iter().copied()))
}

/// The table as docs/reference.md shows it.
pub fn markdown_table() -> String {
    let mut table = String::from("| variable | default | effect |\n|---|---|---|\n");
    for variable in VARIABLES {
        let names = std::iter::once(variable.name)
            .chain(variable.also.iter().copied())
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ");
        table.push_str(&format!(
            "| {names} | {} | {} |\n",
            variable.default, variable.meaning
        ));
    }
    table
}

/// The list `--help` ends with: each name and the first clause of its meaning.
pub fn help_text() -> String {
    let width = VARIABLES.iter().map(|v| v.name.len()).max().unwrap_or(0);
    let mut text = String::from("Environment:\n");
    for variable in VARIABLES {
        let first = variable.meaning.split(';').next().unwrap_or_default();
        let plain = first.replace('`', "");
        text.push_str(&format!("  {:width$}  {plain}\n", variable.name));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFERENCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reference.md");
    const BEGIN: &str = "<!-- environment table: src/plumbing/environment.rs -->\n";
    const END: &str = "<!-- end of environment table -->";

    /// docs/reference.md's table is the table; `UPDATE_DOCS=1 cargo test --lib environment`
    /// writes it.
    #[test]
    fn the_reference_shows_every_variable_as_the_table_says() {
        let text = std::fs::read_to_string(REFERENCE).unwrap();
        let start = text.find(BEGIN).expect("the table's start marker") + BEGIN.len();
        let end = start + text[start..].find(END).expect("the table's end marker");
        let expected = markdown_table();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            let updated = format!("{}{expected}{}", &text[..start], &text[end..]);
            std::fs::write(REFERENCE, updated).unwrap();
            return;
        }
        assert_eq!(
            text[start..end],
            expected,
            "run UPDATE_DOCS=1 cargo test --lib environment"
        );
    }

    #[test]
    fn each_name_is_listed_once() {
        let mut names: Vec<&str> = all_names().collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
        assert!(names.contains(&"https_proxy"));
    }
}
