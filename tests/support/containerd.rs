//! A real containerd private to one test (DESIGN section 8): its own root, state and socket in a
//! temp dir, the CRI plugin off, killed on drop. `ctr` talks to it as a kind node's loader does.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub struct Containerd {
    dir: tempfile::TempDir,
    child: Child,
}

impl Containerd {
    /// Starts containerd and waits until `ctr version` answers.
    pub fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let config = format!(
            r#"version = 2
root = "{root}/root"
state = "{root}/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "{root}/containerd.sock"
[ttrpc]
  address = "{root}/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{root}/opt"
"#,
            root = root.display()
        );
        std::fs::write(root.join("config.toml"), config).unwrap();
        let log = std::fs::File::create(root.join("containerd.log")).unwrap();
        let child = Command::new("containerd")
            .arg("--config")
            .arg(root.join("config.toml"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("starting containerd (scripts/install-test-deps installs it)");
        let containerd = Self { dir, child };
        containerd.wait_ready();
        containerd
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if self.ctr(&["version"]).status.success() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "containerd did not answer within 30s; its log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("containerd.sock")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("containerd.log")).unwrap_or_default()
    }

    /// Runs `ctr -a SOCKET -n k8s.io ARGS...`.
    pub fn ctr(&self, args: &[&str]) -> Output {
        Command::new("ctr")
            .arg("-a")
            .arg(self.socket())
            .args(["-n", "k8s.io"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("running ctr")
    }

    /// Imports an archive as `kind load image-archive` does on a node.
    pub fn import(&self, archive: &Path) -> Output {
        let archive = archive.to_str().unwrap();
        self.ctr(&["images", "import", "--all-platforms", "--digests", archive])
    }

    /// The image names the k8s.io namespace holds (`ctr images ls -q`).
    pub fn image_names(&self) -> Vec<String> {
        let output = self.ctr(&["images", "ls", "-q"]);
        assert!(
            output.status.success(),
            "ctr images ls: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
