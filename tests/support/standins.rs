//! Stand-in `kind`, `k3d`, `minikube`, `microk8s`, `k3s` and `docker` CLIs: each records its argv
//! and hands the archive to a real containerd, as the real tools do inside each node.
#![allow(dead_code)]

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::containerd::{Containerd, K8S_NAMESPACE};

/// Each stand-in: its name and the argv prefix of its load command (the archive follows it).
const LOADERS: &[(&str, &[&str])] = &[
    ("kind", &["load", "image-archive"]),
    ("k3d", &["image", "import"]),
    ("minikube", &["image", "load"]),
    ("microk8s", &["images", "import"]),
    ("k3s", &["ctr", "-n", "k8s.io", "images", "import"]),
    ("docker", &["load", "-i"]),
];

/// What `microk8s` before 1.25 says about `images` (then its list of subcommands), on stdout.
pub const OLD_MICROK8S_SAYS: &str = "'images' is not a valid MicroK8s subcommand.";

pub struct StandIns {
    dir: tempfile::TempDir,
    ctr: PathBuf,
    socket: PathBuf,
}

impl StandIns {
    /// Writes every stand-in into a fresh bin dir, importing into `runtime`.
    pub fn new(runtime: &Containerd) -> Self {
        let dir = tempfile::tempdir().expect("creating the stand-ins' dir");
        std::fs::create_dir(dir.path().join("bin")).expect("creating bin dir");
        let standins = Self {
            dir,
            ctr: find_on_path("ctr").expect("ctr is not installed (scripts/install-test-deps)"),
            socket: runtime.socket().to_path_buf(),
        };
        for (program, prefix) in LOADERS {
            standins.write(program, &standins.importer(prefix, ""));
        }
        standins
    }

    /// The PATH a child should get: the stand-ins alone, so that no real CLI is found instead.
    pub fn path(&self) -> OsString {
        self.bin_dir().into_os_string()
    }

    pub fn bin_dir(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// Makes `program` fail: prints `stdout` and `stderr`, exits 1.
    pub fn fail(&self, program: &str, stdout: &str, stderr: &str) {
        let body = format!(
            "printf '%s' {} \nprintf '%s' {} >&2\nexit 1\n",
            quote(stdout),
            quote(stderr)
        );
        self.write(program, &body);
    }

    /// Takes `program` off PATH.
    pub fn remove(&self, program: &str) {
        std::fs::remove_file(self.bin_dir().join(program)).expect("removing a stand-in");
    }

    /// Makes `microk8s` behave as before 1.25: no `images` subcommand, only `ctr image import`.
    pub fn old_microk8s(&self) {
        let mut help = String::from("Available subcommands are:\n");
        for sub in [
            "add-node",
            "addons",
            "config",
            "ctr",
            "dashboard-proxy",
            "dbctl",
            "disable",
        ] {
            help.push_str(&format!("\t{sub}\n"));
        }
        for sub in [
            "enable", "helm", "helm3", "istioctl", "join", "juju", "kubectl", "leave",
        ] {
            help.push_str(&format!("\t{sub}\n"));
        }
        for sub in [
            "linkerd",
            "refresh-certs",
            "remove-node",
            "reset",
            "start",
            "status",
            "stop",
        ] {
            help.push_str(&format!("\t{sub}\n"));
        }
        let unknown = format!(
            "if [ \"$1\" = images ]; then\n  printf '%s\\n' {} {}\n  exit 1\nfi\n",
            quote(OLD_MICROK8S_SAYS),
            quote(help.trim_end())
        );
        self.write(
            "microk8s",
            &self.importer(&["ctr", "image", "import"], &unknown),
        );
    }

    /// Every recorded invocation, in order, program first.
    pub fn calls(&self) -> Vec<Vec<String>> {
        let log = std::fs::read_to_string(self.log()).unwrap_or_default();
        log.lines()
            .map(|line| {
                line.split('\t')
                    .filter(|w| !w.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .collect()
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("calls.log")
    }

    /// A script body that imports the archive after `prefix` into the runtime, else says
    /// what it did not expect. `before` runs first.
    fn importer(&self, prefix: &[&str], before: &str) -> String {
        let mut test = format!("[ \"$#\" -gt {} ]", prefix.len());
        for (i, word) in prefix.iter().enumerate() {
            test.push_str(&format!(" && [ \"${}\" = {} ]", i + 1, quote(word)));
        }
        format!(
            "{before}if {test}; then\n  shift {n}\n  exec {ctr} -a {sock} -n {ns} images import --all-platforms --digests \"$1\"\nfi\necho \"$0 (stand-in): unexpected arguments: $*\" >&2\nexit 2\n",
            n = prefix.len(),
            ctr = quote(&self.ctr.to_string_lossy()),
            sock = quote(&self.socket.to_string_lossy()),
            ns = K8S_NAMESPACE,
        )
    }

    /// Writes an executable `#!/bin/sh` stand-in that logs its argv, then runs `body`.
    fn write(&self, program: &str, body: &str) {
        let script = format!(
            "#!/bin/sh\n{{ printf '%s\\t' {program} \"$@\"; printf '\\n'; }} >> {log}\n{body}",
            program = quote(program),
            log = quote(&self.log().to_string_lossy()),
        );
        let path = self.bin_dir().join(program);
        // Write a new file and rename it over the old: rewriting a script in place while it
        // could run is asking for ETXTBSY.
        let tmp = self.bin_dir().join(format!(".{program}.new"));
        std::fs::write(&tmp, script).expect("writing a stand-in");
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::rename(&tmp, &path).expect("installing a stand-in");
    }
}

/// Single-quoted for sh.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The first executable `name` on this process's PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
