//! A real Docker Engine per test (Debian's `docker.io`, DESIGN section 12), on its own socket,
//! data root and exec root under a short temp dir, with no networking of its own: overlay2, vfs
//! where overlay is refused. `isolated()` puts it in a network namespace of its own, as a daemon
//! in a VM is: the registry on our loopback is not on its.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

pub(crate) struct Dockerd {
    dir: TempDir,
    child: Child,
}

impl Dockerd {
    pub(crate) fn start() -> Self {
        Self::start_in(false)
    }

    /// In its own network namespace (`unshare --net`): it cannot reach our loopback.
    pub(crate) fn isolated() -> Self {
        Self::start_in(true)
    }

    fn start_in(own_network: bool) -> Self {
        let mut last_log = String::new();
        for driver in ["overlay2", "vfs"] {
            // Short: containerd's socket goes under the exec root and must fit in ~108 bytes.
            let dir = tempfile::Builder::new()
                .prefix("dk")
                .tempdir_in("/tmp")
                .expect("dockerd's temp dir");
            let root = dir.path();
            let log = std::fs::File::create(root.join("log")).expect("dockerd's log");
            let mut command = super::env::command_in("dockerd", own_network);
            let child = command
                .arg("--data-root")
                .arg(root.join("root"))
                .arg("--exec-root")
                .arg(root.join("exec"))
                .arg("-H")
                .arg(format!("unix://{}", root.join("docker.sock").display()))
                .arg("--pidfile")
                .arg(root.join("pid"))
                .args([
                    "--iptables=false",
                    "--ip6tables=false",
                    "--bridge=none",
                    "--storage-driver",
                    driver,
                ])
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log handle"))
                .stderr(log)
                .spawn()
                .expect("starting dockerd (scripts/install-test-deps installs docker.io)");
            let mut daemon = Self { dir, child };
            if daemon.wait_until_ready() {
                return daemon;
            }
            last_log = std::fs::read_to_string(daemon.dir.path().join("log")).unwrap_or_default();
        }
        panic!("dockerd did not start with overlay2 or vfs; its log:\n{last_log}");
    }

    /// True once it answers `docker version`; false when it exited (a refused storage driver).
    fn wait_until_ready(&mut self) -> bool {
        // A guard against hanging forever, not a timing assertion.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if self.child.try_wait().expect("polling dockerd").is_some() {
                return false;
            }
            if self.socket().exists() && self.try_docker(&["version"]).status.success() {
                return true;
            }
            assert!(Instant::now() < deadline, "dockerd never answered");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.path().join("docker.sock")
    }

    /// `unix://SOCKET`, for DOCKER_HOST.
    pub(crate) fn host(&self) -> String {
        format!("unix://{}", self.socket().display())
    }

    fn try_docker(&self, args: &[&str]) -> Output {
        Command::new("docker")
            .env("DOCKER_HOST", self.host())
            .env("DOCKER_BUILDKIT", "0")
            .env("DOCKER_CONFIG", self.dir.path().join("cli-config"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("running the docker CLI")
    }

    /// `docker ARGS` against this daemon; its stdout, or a panic with its stderr.
    pub(crate) fn docker(&self, args: &[&str]) -> String {
        crate::support::run::stdout_of(&format!("docker {args:?}"), self.try_docker(args))
    }

    /// `DOCKER_BUILDKIT=0 docker build` of `FROM from` plus one `COPY` per directory (each one
    /// layer), tagged `name`; returns the image ID. No network is needed.
    pub(crate) fn build(&self, from: &str, name: &str, dirs: &[&Path]) -> String {
        let context = tempfile::tempdir_in(self.dir.path()).expect("a build context");
        let mut dockerfile = format!("FROM {from}\n");
        for (index, dir) in dirs.iter().enumerate() {
            let copy = format!("layer{index}");
            copy_dir(dir, &context.path().join(&copy));
            dockerfile.push_str(&format!("COPY {copy} /{copy}-{index}\n"));
        }
        std::fs::write(context.path().join("Dockerfile"), dockerfile).expect("a Dockerfile");
        self.docker(&[
            "build",
            "-q",
            "-t",
            name,
            context.path().to_str().expect("UTF-8 path"),
        ])
    }

    /// The image ID `name` points at, `None` when it names no image.
    pub(crate) fn image_id(&self, name: &str) -> Option<String> {
        let out = self.try_docker(&["image", "inspect", "--format", "{{.Id}}", name]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// The image's layers' diff_ids, as the daemon reports them.
    pub(crate) fn diff_ids(&self, name: &str) -> Vec<String> {
        rootfs_layers(&self.docker(&["image", "inspect", name]))
    }

    /// Every name the daemon knows, sorted.
    pub(crate) fn tags(&self) -> Vec<String> {
        let mut tags: Vec<String> = self
            .docker(&["image", "ls", "--format", "{{.Repository}}:{{.Tag}}"])
            .lines()
            .filter(|line| !line.ends_with(":<none>"))
            .map(str::to_string)
            .collect();
        tags.sort();
        tags
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("creating a context dir");
    for entry in std::fs::read_dir(from).expect("reading a layer dir") {
        let entry = entry.expect("a dir entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copying a file");
    }
}

impl Drop for Dockerd {
    fn drop(&mut self) {
        // SIGTERM: the daemon stops the containerd it started, then exits.
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The diff_ids in an `image inspect` answer (docker's and podman's alike).
pub(crate) fn rootfs_layers(inspect: &str) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_str(inspect).expect("inspect JSON");
    value[0]["RootFS"]["Layers"]
        .as_array()
        .expect("layers")
        .iter()
        .map(|d| d.as_str().expect("digest").to_string())
        .collect()
}
