//! A real containerd per test, private to it (root, state and socket in a temp dir), standing for
//! a node's container runtime; stopped on Drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The containerd namespace the kubelet's CRI uses; what node-load tools import into.
pub(crate) const K8S_NAMESPACE: &str = "k8s.io";

pub(crate) struct Containerd {
    child: Child,
    socket: PathBuf,
    dir: tempfile::TempDir,
}

impl Containerd {
    /// Starts containerd and waits until it answers on its socket.
    pub(crate) fn start() -> Self {
        // Under /tmp with a short name: a unix socket path must fit in ~108 bytes.
        let dir = tempfile::Builder::new()
            .prefix("ctrd")
            .tempdir_in("/tmp")
            .expect("creating containerd's temp dir");
        let socket = dir.path().join("c.sock");
        let config = dir.path().join("config.toml");
        // The CRI plugin is off: it is not needed to import or pull, and it would want CNI,
        // ports and the host's paths.
        let toml = format!(
            "version = 2\nroot = \"{root}\"\nstate = \"{state}\"\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n[grpc]\n  address = \"{socket}\"\n",
            root = dir.path().join("root").display(),
            state = dir.path().join("state").display(),
            socket = socket.display(),
        );
        std::fs::write(&config, toml).expect("writing containerd's config");
        let log = std::fs::File::create(dir.path().join("containerd.log")).expect("creating log");
        let child = Command::new("containerd")
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("cloning log handle"))
            .stderr(log)
            .spawn()
            .expect("starting containerd (is it installed? scripts/install-test-deps)");
        let mut containerd = Self { child, socket, dir };
        containerd.wait_until_ready();
        containerd
    }

    fn wait_until_ready(&mut self) {
        // A guard against hanging forever, not a timing assertion.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("polling containerd") {
                panic!("containerd exited at start ({status}):\n{}", self.log());
            }
            if self.socket.exists() && self.ctr(&["version"]).status.success() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "containerd never answered:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }

    /// The config it was started with, for `containerd --config ... config dump`.
    pub(crate) fn config(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("containerd.log")).unwrap_or_default()
    }

    /// `ctr -a SOCKET -n k8s.io ARGS...`
    pub(crate) fn ctr(&self, args: &[&str]) -> std::process::Output {
        Command::new("ctr")
            .arg("-a")
            .arg(&self.socket)
            .args(["-n", K8S_NAMESPACE])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("running ctr")
    }

    /// Imports an archive exactly as `kind load` and `k3d image import` do inside each node.
    pub(crate) fn import(&self, archive: &Path) {
        let archive = archive.to_str().expect("UTF-8 archive path");
        let out = self.ctr(&["images", "import", "--all-platforms", "--digests", archive]);
        assert!(
            out.status.success(),
            "ctr import failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The image names in the k8s.io namespace.
    pub(crate) fn images(&self) -> Vec<String> {
        let out = self.ctr(&["images", "ls", "-q"]);
        assert!(
            out.status.success(),
            "ctr images ls failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Pulls `reference` as a node would, registries mapped by `hosts_dir` (`HOST/hosts.toml`).
    pub(crate) fn pull(&self, reference: &str, hosts_dir: &Path) -> Result<(), String> {
        let hosts_dir = hosts_dir.to_str().expect("UTF-8 hosts dir");
        let out = self.ctr(&["images", "pull", "--hosts-dir", hosts_dir, reference]);
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }
}

impl Containerd {
    /// `pull` from a node's own network, where this machine's loopback is not: `ctr` runs in a
    /// new network namespace (`unshare -n`), as the kubelet's runtime in a kind node would.
    pub(crate) fn pull_from_elsewhere(
        &self,
        reference: &str,
        hosts_dir: &Path,
    ) -> Result<(), String> {
        let hosts_dir = hosts_dir.to_str().expect("UTF-8 hosts dir");
        let out = Command::new("unshare")
            .args(["-n", "ctr", "-a"])
            .arg(&self.socket)
            .args([
                "-n",
                K8S_NAMESPACE,
                "images",
                "pull",
                "--hosts-dir",
                hosts_dir,
                reference,
            ])
            .stdin(Stdio::null())
            .output()
            .expect("running unshare -n ctr");
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
