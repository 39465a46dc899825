//! Where podman's image store is, decided as podman decides: `CONTAINERS_STORAGE_CONF`, else the
//! user's `storage.conf` (rootless) or the system's (`/etc/containers`, then `/usr/share/containers`);
//! `STORAGE_DRIVER` over the file's `driver`; the rootless and rootful default graphroots; the
//! file's `additionalimagestores`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::super::config_file::{is_root, read};
use super::super::endpoint::EngineEnv;

const SYSTEM_CONFS: [&str; 2] = [
    "/etc/containers/storage.conf",
    "/usr/share/containers/storage.conf",
];
const ROOTFUL_GRAPHROOT: &str = "/var/lib/containers/storage";
/// The drivers whose layers we can read as plain directories.
pub(super) const READABLE_DRIVERS: [&str; 2] = ["overlay", "vfs"];

/// The stores to look in, main one first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StoreConf {
    /// `None` when neither the environment nor the file names it: found by looking.
    pub driver: Option<String>,
    pub graphroot: PathBuf,
    pub additional: Vec<PathBuf>,
    /// Where that came from, for -v.
    pub origin: String,
}

/// What the settings in `storage.conf` we read say.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct FileSettings {
    driver: Option<String>,
    graphroot: Option<String>,
    rootless_storage_path: Option<String>,
    additional: Vec<String>,
}

/// The keys of `storage.conf` we read: `driver`, `graphroot`, `rootless_storage_path` in
/// `[storage]`, `additionalimagestores` in `[storage.options]`. Anything else is skipped.
#[derive(Debug, Default, Deserialize)]
struct StorageToml {
    #[serde(default)]
    storage: Storage,
}

#[derive(Debug, Default, Deserialize)]
struct Storage {
    driver: Option<String>,
    graphroot: Option<String>,
    rootless_storage_path: Option<String>,
    #[serde(default)]
    options: StorageOptions,
}

#[derive(Debug, Default, Deserialize)]
struct StorageOptions {
    #[serde(default)]
    additionalimagestores: Vec<String>,
}

pub(super) fn locate(env: &EngineEnv) -> StoreConf {
    let rootless = !is_root();
    let (file, origin) = match &env.storage_conf {
        Some(path) => (Some(path.clone()), "CONTAINERS_STORAGE_CONF".to_string()),
        None => {
            let user = env
                .config_home
                .clone()
                .or_else(|| env.home.as_ref().map(|home| home.join(".config")))
                .map(|dir| dir.join("containers/storage.conf"))
                .filter(|path| rootless && path.is_file());
            match user {
                Some(path) => (Some(path), "the user's storage.conf".to_string()),
                None => match SYSTEM_CONFS.iter().map(PathBuf::from).find(|p| p.is_file()) {
                    Some(path) => (Some(path), "the system's storage.conf".to_string()),
                    None => (None, "podman's defaults".to_string()),
                },
            }
        }
    };
    let settings = file
        .as_deref()
        .and_then(|path| std::fs::read_to_string(path).ok())
        .map(|text| parse(&text))
        .unwrap_or_default();
    let rootless_default = || {
        env.data_home
            .clone()
            .or_else(|| env.home.as_ref().map(|home| home.join(".local/share")))
            .map_or_else(
                || PathBuf::from(ROOTFUL_GRAPHROOT),
                |dir| dir.join("containers/storage"),
            )
    };
    // Rootless podman takes only the driver and `rootless_storage_path` from the system's file.
    let graphroot = if rootless && env.storage_conf.is_none() && is_system(file.as_deref()) {
        settings
            .rootless_storage_path
            .map_or_else(rootless_default, PathBuf::from)
    } else {
        match settings.graphroot {
            Some(root) => PathBuf::from(root),
            None if rootless => rootless_default(),
            None => PathBuf::from(ROOTFUL_GRAPHROOT),
        }
    };
    let origin = match &file {
        Some(path) => format!("{origin}: {}", path.display()),
        None => origin,
    };
    StoreConf {
        driver: env.storage_driver.clone().or(settings.driver),
        graphroot,
        additional: settings.additional.into_iter().map(PathBuf::from).collect(),
        origin,
    }
}

fn is_system(file: Option<&Path>) -> bool {
    file.is_some_and(|path| SYSTEM_CONFS.iter().any(|system| path == Path::new(system)))
}

pub(crate) fn parse(text: &str) -> FileSettings {
    let storage = read::<StorageToml>(text).storage;
    let set = |value: Option<String>| value.filter(|value| !value.is_empty());
    FileSettings {
        driver: set(storage.driver),
        graphroot: set(storage.graphroot),
        rootless_storage_path: set(storage.rootless_storage_path),
        additional: storage.options.additionalimagestores,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_podman_reads_are_read_and_the_rest_skipped() {
        let text = r#"
# a comment
[storage]
driver = "overlay"   # the default
runroot = "/run/containers/storage"
graphroot = "/srv/containers"
rootless_storage_path = '/home/$USER/s'

[storage.options]
additionalimagestores = [
  "/usr/lib/containers/storage",
  "/mnt/images",
]
mount_program = "/usr/bin/fuse-overlayfs"
"#;
        assert_eq!(
            parse(text),
            FileSettings {
                driver: Some("overlay".into()),
                graphroot: Some("/srv/containers".into()),
                rootless_storage_path: Some("/home/$USER/s".into()),
                additional: vec!["/usr/lib/containers/storage".into(), "/mnt/images".into()],
            }
        );
    }

    #[test]
    fn dotted_keys_escapes_and_a_hash_inside_a_string_are_read_as_toml() {
        let text = r#"
[storage]
driver = "overlay"
graphroot = "/srv/with#hash"
rootless_storage_path = "/home/\u0061/s\\x"
options.additionalimagestores = ["/a", '/b#c'] # two
"#;
        assert_eq!(
            parse(text),
            FileSettings {
                driver: Some("overlay".into()),
                graphroot: Some("/srv/with#hash".into()),
                rootless_storage_path: Some("/home/a/s\\x".into()),
                additional: vec!["/a".into(), "/b#c".into()],
            }
        );
        let dotted = "storage.driver = \"vfs\"\nstorage.options.additionalimagestores = [\"/x\"]\n";
        assert_eq!(
            parse(dotted),
            FileSettings {
                driver: Some("vfs".into()),
                additional: vec!["/x".into()],
                ..FileSettings::default()
            }
        );
        // An empty value is unset, as podman takes it.
        assert_eq!(parse("[storage]\ndriver = \"\"\n"), FileSettings::default());
    }

    #[test]
    fn the_environment_names_the_file_and_the_driver() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("storage.conf");
        std::fs::write(
            &conf,
            "[storage]\ndriver = \"overlay\"\ngraphroot = \"/g\"\n",
        )
        .unwrap();
        let env = EngineEnv {
            storage_conf: Some(conf.clone()),
            storage_driver: Some("vfs".into()),
            ..EngineEnv::default()
        };
        let found = locate(&env);
        assert_eq!(found.driver.as_deref(), Some("vfs"));
        assert_eq!(found.graphroot, PathBuf::from("/g"));
        assert_eq!(
            found.origin,
            format!("CONTAINERS_STORAGE_CONF: {}", conf.display())
        );
    }
}
