//! Where nerdctl's containerd listens and which namespace holds its images, found as nerdctl
//! finds them: `CONTAINERD_ADDRESS` and `CONTAINERD_NAMESPACE`, else nerdctl.toml's `address` and
//! `namespace` (`NERDCTL_TOML`, else the system's file for root, the user's otherwise), else
//! containerd's default socket and the `default` namespace.

use std::path::PathBuf;

use serde::Deserialize;

use super::super::config_file::{is_root, read};
use super::super::endpoint::EngineEnv;

const DEFAULT_SOCKET: &str = "/run/containerd/containerd.sock";
const DEFAULT_NAMESPACE: &str = "default";
const SYSTEM_NERDCTL_TOML: &str = "/etc/nerdctl/nerdctl.toml";

/// The keys of nerdctl.toml we read: at its top, before any table.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
struct NerdctlToml {
    address: Option<String>,
    namespace: Option<String>,
}

/// Where nerdctl's containerd listens, and in which namespace it keeps its images.
pub(super) fn address(env: &EngineEnv) -> (PathBuf, String) {
    let toml = env.nerdctl_toml.clone().or_else(|| {
        if is_root() {
            Some(PathBuf::from(SYSTEM_NERDCTL_TOML))
        } else {
            env.config_home
                .clone()
                .or_else(|| env.home.as_ref().map(|home| home.join(".config")))
                .map(|dir| dir.join("nerdctl/nerdctl.toml"))
        }
    });
    let (file_address, file_namespace) = toml
        .and_then(|file| std::fs::read_to_string(file).ok())
        .map(|text| read_nerdctl_toml(&text))
        .unwrap_or_default();
    let socket = env
        .containerd_address
        .clone()
        .or(file_address)
        .unwrap_or_else(|| DEFAULT_SOCKET.to_string());
    let socket = socket
        .strip_prefix("unix://")
        .unwrap_or(&socket)
        .to_string();
    let namespace = env
        .containerd_namespace
        .clone()
        .or(file_namespace)
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string());
    (PathBuf::from(socket), namespace)
}

/// nerdctl.toml's `address` and `namespace`, each when set; neither when it is not TOML.
pub(crate) fn read_nerdctl_toml(text: &str) -> (Option<String>, Option<String>) {
    let file = read::<NerdctlToml>(text);
    (file.address, file.namespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nerdctl_toml_is_read_as_toml_top_level_keys_only() {
        let text = r#"# nerdctl.toml
address = "unix:///run/k3s/containerd/containerd.sock" # k3s
namespace='k8s.io'
snapshotter = "overlay#fs"
[hosts]
namespace = "other"
"#;
        assert_eq!(
            read::<NerdctlToml>(text),
            NerdctlToml {
                address: Some("unix:///run/k3s/containerd/containerd.sock".into()),
                namespace: Some("k8s.io".into()),
            }
        );
        // Escapes, a `#` inside a string, a quoted key.
        let text = "\"address\" = \"/run/a\\\"b#c.sock\" # the socket\nnamespace = \"\\u006bs\"\n";
        assert_eq!(
            read::<NerdctlToml>(text),
            NerdctlToml {
                address: Some("/run/a\"b#c.sock".into()),
                namespace: Some("ks".into()),
            }
        );
        // Not TOML: nothing read, as nerdctl would refuse it.
        assert_eq!(read::<NerdctlToml>("address = "), NerdctlToml::default());
    }

    #[test]
    fn the_socket_and_namespace_are_found_as_nerdctl_finds_them() {
        let dir = tempfile::tempdir().unwrap();
        let toml = dir.path().join("nerdctl.toml");
        std::fs::write(
            &toml,
            "address = \"unix:///run/k3s/containerd/containerd.sock\"\nnamespace = \"k8s.io\"\n",
        )
        .unwrap();
        let mut env = EngineEnv {
            nerdctl_toml: Some(toml),
            ..EngineEnv::default()
        };
        assert_eq!(
            address(&env),
            (
                PathBuf::from("/run/k3s/containerd/containerd.sock"),
                "k8s.io".to_string()
            )
        );
        env.containerd_address = Some("/tmp/c.sock".into());
        env.containerd_namespace = Some("buildkit".into());
        assert_eq!(
            address(&env),
            (PathBuf::from("/tmp/c.sock"), "buildkit".to_string())
        );
        env.nerdctl_toml = Some(dir.path().join("absent.toml"));
        env.containerd_address = None;
        env.containerd_namespace = None;
        assert_eq!(
            address(&env),
            (PathBuf::from(DEFAULT_SOCKET), DEFAULT_NAMESPACE.to_string())
        );
    }
}
