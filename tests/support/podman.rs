//! A real podman and buildah per test, as root with vfs storage (or overlay, as workstations have
//! it) under the test's temp dir (DESIGN section 9): archives written as podman writes them, images built from real directories
//! with `buildah`, and podman's Docker-compatible API served on a socket (or a loopback port).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

pub(crate) struct Podman {
    dir: TempDir,
    driver: &'static str,
}

impl Podman {
    pub(crate) fn new() -> Self {
        Self::with_driver("vfs")
    }

    /// Overlay storage, as podman has it on a workstation.
    pub(crate) fn overlay() -> Self {
        Self::with_driver("overlay")
    }

    fn with_driver(driver: &'static str) -> Self {
        // Under /tmp with a short name: the API socket's path must fit in ~108 bytes.
        let dir = tempfile::Builder::new()
            .prefix("pdmn")
            .tempdir_in("/tmp")
            .expect("podman's temp dir");
        let root = dir.path();
        std::fs::write(
            root.join("storage.conf"),
            format!(
                "[storage]\ndriver = \"{driver}\"\ngraphroot = \"{}\"\nrunroot = \"{}\"\n",
                root.join("storage").display(),
                root.join("run").display()
            ),
        )
        .expect("writing storage.conf");
        std::fs::write(
            root.join("policy.json"),
            r#"{"default":[{"type":"insecureAcceptAnything"}]}"#,
        )
        .expect("writing policy.json");
        Self { dir, driver }
    }

    /// What podman and buildah need to find this test's storage; give them to the binary too.
    pub(crate) fn envs(&self) -> Vec<(&'static str, OsString)> {
        vec![
            (
                "CONTAINERS_STORAGE_CONF",
                self.dir.path().join("storage.conf").into_os_string(),
            ),
            ("STORAGE_DRIVER", self.driver.into()),
            ("BUILDAH_ISOLATION", "chroot".into()),
        ]
    }

    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `podman ARGS` against the private store; panics with podman's words on failure.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        let output = Command::new("podman")
            .envs(self.envs())
            .args(["--events-backend", "none"])
            .args(args)
            .output()
            .expect("running podman (scripts/install-test-deps installs it)");
        assert!(
            output.status.success(),
            "podman {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// `podman load -i ARCHIVE`
    pub(crate) fn load(&self, archive: &Path) {
        self.run(&["load", "-q", "-i", archive.to_str().expect("UTF-8 path")]);
    }

    /// `podman save --format FORMAT -o OUT NAME` (`docker-dir`, `oci-dir`, `docker-archive`...)
    pub(crate) fn save(&self, format: &str, name: &str, out: &Path) {
        let out = out.to_str().expect("UTF-8 path");
        self.run(&["save", "--format", format, "-o", out, name]);
    }

    /// Runs `program args...` with this storage; returns stdout, panics with stderr on failure.
    pub(crate) fn tool(&self, program: &str, args: &[&str]) -> String {
        let out = Command::new(program)
            .args(args)
            .envs(self.envs())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|err| panic!("running {program} (scripts/install-test-deps): {err}"));
        crate::support::run::stdout_of(&format!("{program} {args:?}"), out)
    }

    /// Builds `name` with buildah from scratch, one layer per directory (each committed on top
    /// of the last, as a Containerfile's COPY lines would); returns the image ID.
    pub(crate) fn build(&self, name: &str, dirs: &[&Path]) -> String {
        self.build_on("scratch", name, dirs)
    }

    /// Like `build`, on top of the image `from`. The layers under `name` are tagged
    /// `NAME-base0`, `NAME-base1`, ... so that a later build can start from one of them.
    pub(crate) fn build_on(&self, from: &str, name: &str, dirs: &[&Path]) -> String {
        let policy = self.dir.path().join("policy.json");
        let policy = policy.to_str().expect("UTF-8 path");
        let mut base = from.to_string();
        for (index, dir) in dirs.iter().enumerate() {
            let container = self.tool("buildah", &["from", "--pull-never", &base]);
            let dest = format!("/layer{index}");
            self.tool(
                "buildah",
                &["copy", &container, dir.to_str().expect("UTF-8 path"), &dest],
            );
            let tag = if index + 1 == dirs.len() {
                name.to_string()
            } else {
                format!("{name}-base{index}")
            };
            base = self.tool(
                "buildah",
                &[
                    "commit",
                    "-q",
                    "--signature-policy",
                    policy,
                    &container,
                    &tag,
                ],
            );
            self.tool("buildah", &["rm", &container]);
        }
        base
    }

    /// The image's layers' diff_ids, as podman reports them.
    pub(crate) fn diff_ids(&self, name: &str) -> Vec<String> {
        super::dockerd::rootfs_layers(&self.tool("podman", &["image", "inspect", name]))
    }

    /// The image's top layer's ID, as the store's `images.json` records it.
    pub(crate) fn top_layer(&self, name: &str) -> String {
        let id = self.tool("podman", &["image", "inspect", "--format", "{{.Id}}", name]);
        let images = self
            .dir
            .path()
            .join("storage")
            .join(format!("{}-images/images.json", self.driver));
        let images: serde_json::Value =
            serde_json::from_slice(&std::fs::read(images).expect("images.json")).expect("JSON");
        images
            .as_array()
            .expect("a list of images")
            .iter()
            .find(|image| image["id"] == id.as_str())
            .and_then(|image| image["layer"].as_str())
            .expect("the image's top layer")
            .to_string()
    }

    /// Where the store keeps a layer's files: `overlay/ID/diff`, or vfs's `vfs/dir/ID`.
    pub(crate) fn layer_files(&self, id: &str) -> PathBuf {
        let storage = self.dir.path().join("storage");
        match self.driver {
            "vfs" => storage.join("vfs/dir").join(id),
            driver => storage.join(driver).join(id).join("diff"),
        }
    }

    /// A layer's tar-split record: `<driver>-layers/ID.tar-split.gz`.
    pub(crate) fn tar_split(&self, id: &str) -> PathBuf {
        self.dir
            .path()
            .join("storage")
            .join(format!("{}-layers", self.driver))
            .join(format!("{id}.tar-split.gz"))
    }

    /// `podman system service` on `address` (`unix://PATH` or `tcp://127.0.0.1:PORT`).
    pub(crate) fn serve(&self, address: &str) -> Service {
        self.serve_in(address, false)
    }

    /// The service in its own network namespace (`unshare --net`): as podman in a VM, it cannot
    /// reach our loopback. Its socket is a file, so we still reach it.
    pub(crate) fn serve_isolated(&self, address: &str) -> Service {
        self.serve_in(address, true)
    }

    fn serve_in(&self, address: &str, own_network: bool) -> Service {
        let mut command = super::env::command_in("podman", own_network);
        let child = command
            .args(["system", "service", "--time=0", address])
            .envs(self.envs())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting podman system service");
        let mut service = Service { child };
        service.wait_until_ready(address);
        service
    }

    pub(crate) fn socket_path(&self) -> PathBuf {
        self.dir.path().join("docker.sock")
    }
}

/// Directories of real files to build layers from: `sizes` files of about these many bytes,
/// their content from `seed` (random, so that they neither compress nor repeat).
pub(crate) fn layer_dir(parent: &Path, name: &str, seed: u64, sizes: &[usize]) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).expect("creating a layer dir");
    let mut rng = crate::support::fixtures::Rng::new(seed);
    for (index, &size) in sizes.iter().enumerate() {
        let mut bytes = vec![0u8; size];
        rng.fill(&mut bytes);
        std::fs::write(dir.join(format!("file{index}")), bytes).expect("writing a file");
    }
    dir
}

/// A running `podman system service`, stopped on drop.
pub(crate) struct Service {
    child: Child,
}

impl Service {
    fn wait_until_ready(&mut self, address: &str) {
        // A guard against hanging forever, not a timing assertion.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("polling podman") {
                panic!("podman system service exited at start ({status})");
            }
            let up = match address.strip_prefix("unix://") {
                Some(path) => std::os::unix::net::UnixStream::connect(path).is_ok(),
                None => std::net::TcpStream::connect(
                    address.strip_prefix("tcp://").expect("a tcp:// address"),
                )
                .is_ok(),
            };
            if up {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "podman never listened on {address}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
