//! Stand-in `kind`, `k3d`, `minikube`, `microk8s`, `k3s` and `docker` CLIs: each records its argv
//! and hands the archive to a real containerd, as the real tools do inside each node. Nodes added
//! with `add_node` are containers as kind and k3d see them: `kind get nodes` and `k3d node list`
//! name them, `docker exec [-i] NODE ctr ...` runs the real ctr against that node's containerd
//! (keeping every archive streamed into an import), and `kind load image-archive` imports into
//! each of them (or those `--nodes` names). minikube's nodes are reached by `minikube ssh -n
//! NODE`, under a real terminal as minikube's own ssh client runs a command.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::containerd::{Containerd, K8S_NAMESPACE};
use super::dockerd::Dockerd;

/// Each stand-in: its name and the argv prefix of its load command (the archive follows it).
const LOADERS: &[(&str, &[&str])] = &[
    ("kind", &["load", "image-archive"]),
    ("k3d", &["image", "import"]),
    ("minikube", &["image", "load"]),
    ("microk8s", &["images", "import"]),
    ("k3s", &["ctr", "-n", "k8s.io", "images", "import"]),
    ("docker", &["load", "-i"]),
];

/// POSIX's `PIPE_BUF` on Linux: the most one `write(2)` is promised to append whole, newline
/// included.
const PIPE_BUF: usize = 4096;

/// What `microk8s` before 1.25 says about `images` (then its list of subcommands), on stdout.
pub(crate) const OLD_MICROK8S_SAYS: &str = "'images' is not a valid MicroK8s subcommand.";

pub(crate) struct StandIns {
    dir: tempfile::TempDir,
    ctr: PathBuf,
    socket: PathBuf,
    /// The real docker CLI, for minikube nodes of the docker runtime.
    docker: Option<PathBuf>,
}

impl StandIns {
    /// Writes every stand-in into a fresh bin dir, importing into `runtime`.
    pub(crate) fn new(runtime: &Containerd) -> Self {
        let dir = tempfile::tempdir().expect("creating the stand-ins' dir");
        std::fs::create_dir(dir.path().join("bin")).expect("creating bin dir");
        let standins = Self {
            dir,
            ctr: find_on_path("ctr").expect("ctr is not installed (scripts/install-test-deps)"),
            socket: runtime.socket().to_path_buf(),
            docker: find_on_path("docker"),
        };
        for (program, prefix) in LOADERS {
            // `microk8s ctr ...` and `k3s ctr ...` (other than an import) run the real ctr on
            // the single runtime, as those products' own ctr runs on the local node's.
            let passthrough = match *program {
                "microk8s" | "k3s" => format!(
                    "if [ \"$1\" = ctr ] && [ \"$4 $5\" != \"images import\" ]; then shift; exec {} -a {} \"$@\"; fi\n",
                    quote(&standins.ctr.to_string_lossy()),
                    quote(&standins.socket.to_string_lossy()),
                ),
                _ => String::new(),
            };
            standins.write(program, &standins.importer(prefix, &passthrough));
        }
        std::fs::create_dir(standins.nodes_dir()).expect("creating the nodes dir");
        standins.write("kind", &standins.kind_script());
        standins.write("k3d", &standins.k3d_script());
        standins.write("minikube", &standins.minikube_script());
        standins.write("docker", &standins.docker_script());
        standins
    }

    /// The PATH a child should get: the stand-ins alone, so that no real CLI is found instead.
    pub(crate) fn path(&self) -> OsString {
        self.bin_dir().into_os_string()
    }

    pub(crate) fn bin_dir(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// Makes `program` fail: prints `stdout` and `stderr`, exits 1.
    pub(crate) fn fail(&self, program: &str, stdout: &str, stderr: &str) {
        let body = format!(
            "printf '%s' {} \nprintf '%s' {} >&2\nexit 1\n",
            quote(stdout),
            quote(stderr)
        );
        self.write(program, &body);
    }

    /// Makes `program` print `says` on stdout, then nothing more, without end (its PATH may hold
    /// only the stand-ins: `tail` is named by its path).
    pub(crate) fn go_silent(&self, program: &str, says: &str) {
        self.write(
            program,
            &format!(
                "printf '%s\\n' {}\nexec {} -f /dev/null\n",
                quote(says),
                quote(&find_on_path("tail").expect("tail").to_string_lossy())
            ),
        );
    }

    /// Takes `program` off PATH.
    pub(crate) fn remove(&self, program: &str) {
        std::fs::remove_file(self.bin_dir().join(program)).expect("removing a stand-in");
    }

    /// Makes `microk8s` behave as before 1.25: no `images` subcommand, only `ctr image import`.
    pub(crate) fn old_microk8s(&self) {
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

    /// Makes `name` a node container whose containerd is `runtime`, its CRI unpacking into the
    /// `native` snapshotter (so an import that does not name it leaves the image unpacked for
    /// the kubelet). Nodes are listed in name order.
    pub(crate) fn add_node(&self, name: &str, runtime: &Containerd) {
        let facts = format!(
            "sock={}\nconf={}\nsnap=native\n",
            quote(&runtime.socket().to_string_lossy()),
            quote(&runtime.config().to_string_lossy()),
        );
        std::fs::write(self.nodes_dir().join(name), facts).expect("adding a node");
        std::fs::create_dir_all(self.received_dir().join(name)).expect("creating received dir");
    }

    /// Makes `name` a minikube node of the docker runtime whose dockerd is `daemon`: `minikube
    /// ssh -n NAME -- docker ...` runs the real docker CLI against it, and `minikube image load`
    /// loads into it with `docker load`, as minikube does on such a node.
    pub(crate) fn add_docker_node(&self, name: &str, daemon: &Dockerd) {
        let facts = format!("dockerhost={}\n", quote(&daemon.host()));
        std::fs::write(self.nodes_dir().join(name), facts).expect("adding a node");
        std::fs::create_dir_all(self.received_dir().join(name)).expect("creating received dir");
    }

    /// Makes `name` the container a registry runs in, as kind's `kind-registry` (the
    /// `registry:2` image): `docker exec NAME registry garbage-collect ARGS` runs the real
    /// registry binary's garbage-collect with `config` in place of the image's
    /// `/etc/docker/registry/config.yml`, `docker exec NAME du -sk /var/lib/registry` measures
    /// `storage`, and `docker restart NAME` is recorded and answered as docker does.
    pub(crate) fn add_registry_container(&self, name: &str, config: &Path, storage: &Path) {
        std::fs::create_dir_all(self.registries_dir()).expect("creating the registries dir");
        let facts = format!(
            "conf={}\ndata={}\n",
            quote(&config.to_string_lossy()),
            quote(&storage.to_string_lossy()),
        );
        std::fs::write(self.registries_dir().join(name), facts).expect("adding a registry");
    }

    fn registries_dir(&self) -> PathBuf {
        self.dir.path().join("registries")
    }

    /// Takes every node away: `kind get nodes` lists none.
    pub(crate) fn remove_nodes(&self) {
        for entry in std::fs::read_dir(self.nodes_dir()).expect("reading the nodes dir") {
            std::fs::remove_file(entry.expect("a node entry").path()).expect("removing a node");
        }
    }

    /// Makes `ctr` queries of the node's content fail as when its containerd does not answer;
    /// imports still work.
    pub(crate) fn unqueryable(&self, node: &str) {
        std::fs::write(self.nodes_dir().join(format!(".{node}.unqueryable")), "")
            .expect("marking a node");
    }

    /// Makes the node's `ctr content ls -q` also name `digest`, which its store does not hold:
    /// a listing gone stale (containerd's garbage collector removed the blob since).
    pub(crate) fn stale_listing(&self, node: &str, digest: &str) {
        std::fs::write(
            self.nodes_dir().join(format!(".{node}.stale")),
            format!("{digest}\n"),
        )
        .expect("marking a node");
    }

    /// Makes every `ctr` asked of the node through `docker exec` hang without end, as when its
    /// containerd accepts the connection and never answers (the process is the one we run,
    /// so stopping it leaves nothing behind).
    pub(crate) fn hanging(&self, node: &str) {
        std::fs::write(self.nodes_dir().join(format!(".{node}.hangs")), "")
            .expect("marking a node");
    }

    /// Makes every import into the node take nothing of the archive and never end.
    pub(crate) fn import_hangs(&self, node: &str) {
        std::fs::write(self.nodes_dir().join(format!(".{node}.import-hangs")), "")
            .expect("marking a node");
    }

    /// Makes every import into the node fail, ctr saying `says` (a full disk, say).
    pub(crate) fn failing_import(&self, node: &str, says: &str) {
        std::fs::write(self.nodes_dir().join(format!(".{node}.import-fails")), says)
            .expect("marking a node");
    }

    /// Every archive streamed into `docker exec -i NODE ctr ... import -`, in order.
    pub(crate) fn received(&self, node: &str) -> Vec<PathBuf> {
        let mut files: Vec<(u32, PathBuf)> = std::fs::read_dir(self.received_dir().join(node))
            .map(|dir| {
                dir.map(|entry| entry.unwrap().path())
                    .filter_map(|path| {
                        let seq = path.file_stem()?.to_str()?.parse().ok()?;
                        Some((seq, path))
                    })
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files.into_iter().map(|(_, path)| path).collect()
    }

    fn nodes_dir(&self) -> PathBuf {
        self.dir.path().join("nodes")
    }

    fn received_dir(&self) -> PathBuf {
        self.dir.path().join("received")
    }

    /// `kind get nodes --name NAME` lists the nodes; `kind load image-archive FILE --name NAME
    /// [--nodes A,B]` imports FILE into each with the node's snapshotter, as kind does
    /// (into the single runtime when no node was added).
    fn kind_script(&self) -> String {
        format!(
            r#"nodes={nodes}
if [ "$#" -eq 4 ] && [ "$1" = get ] && [ "$2" = nodes ] && [ "$3" = --name ]; then
  found=
  for f in "$nodes"/*; do [ -f "$f" ] || continue; basename "$f"; found=1; done
  [ -n "$found" ] || echo "No kind nodes found for cluster "$4"." >&2
  exit 0
fi
if [ "$#" -ge 3 ] && [ "$1" = load ] && [ "$2" = image-archive ]; then
  archive=$3; shift 3; targets=
  while [ "$#" -ge 2 ]; do
    case "$1" in
      --name) shift 2;;
      --nodes) targets=$(printf '%s' "$2" | tr , ' '); shift 2;;
      *) break;;
    esac
  done
  if [ "$#" -eq 0 ]; then
    if ! ls "$nodes"/* >/dev/null 2>&1; then
      exec {ctr} -a {sock} -n {ns} images import --all-platforms --digests "$archive"
    fi
    [ -n "$targets" ] || targets=$(cd "$nodes" && ls)
    for node in $targets; do
      . "$nodes/$node" || exit 1
      {ctr} -a "$sock" -n {ns} images import --all-platforms --digests --snapshotter="$snap" "$archive" || exit 1
    done
    exit 0
  fi
fi
echo "$0 (stand-in): unexpected arguments: $*" >&2
exit 2
"#,
            nodes = quote(&self.nodes_dir().to_string_lossy()),
            ctr = quote(&self.ctr.to_string_lossy()),
            sock = quote(&self.socket.to_string_lossy()),
            ns = K8S_NAMESPACE,
        )
    }

    /// `k3d node list -o json` as k3d prints it: the added nodes as servers of cluster `dev`,
    /// and its load balancer; `k3d image import FILE -c NAME` as before.
    fn k3d_script(&self) -> String {
        format!(
            r#"nodes={nodes}
if [ "$*" = "node list -o json" ]; then
  printf '['
  for f in "$nodes"/*; do
    [ -f "$f" ] || continue
    printf '{{"name":"%s","role":"server","runtimeLabels":{{"k3d.cluster":"dev","k3d.role":"server"}}}},' "$(basename "$f")"
  done
  printf '{{"name":"k3d-dev-serverlb","role":"loadbalancer","runtimeLabels":{{"k3d.cluster":"dev"}}}}]
'
  exit 0
fi
{importer}"#,
            nodes = quote(&self.nodes_dir().to_string_lossy()),
            importer = self.importer(&["image", "import"], ""),
        )
    }

    /// `minikube image load FILE [-p PROFILE]` imports FILE into each added node (the single
    /// runtime when none was added), as minikube loads every node of the profile;
    /// `minikube ssh [-p PROFILE] [-n NODE] -- WORDS...` runs WORDS joined by spaces in the
    /// node's shell, as minikube's native ssh client does: under a terminal (it always asks
    /// for one, so the command's stdout and stderr both come on stdout, each `\n` as `\r\n`;
    /// here a real one, by `script`), `sudo ctr` being the real ctr against the node's
    /// containerd. A failed command is followed by minikube's `ssh: Process exited with status
    /// N` on stderr and exit 1; an unknown node is minikube's `Node NODE does not exist.`
    fn minikube_script(&self) -> String {
        format!(
            r#"nodes={nodes}
if [ "$1" = ssh ]; then
  shift; profile=minikube; node=
  while [ "$#" -gt 0 ]; do
    case "$1" in
      -p|--profile) profile=$2; shift 2;;
      -n|--node) node=$2; shift 2;;
      --) shift; break;;
      *) break;;
    esac
  done
  [ -n "$node" ] || node=$profile
  if [ ! -f "$nodes/$node" ]; then
    echo "❌  Exiting due to GUEST_NODE_RETRIEVE: Node $node does not exist." >&2
    exit 85
  fi
  sock= dockerhost=
  . "$nodes/$node"
  export sock dockerhost ctr={ctr} realdocker={docker}
  shim='sudo() {{ if [ "$1" = ctr ] && [ -n "$sock" ]; then shift; exec "$ctr" -a "$sock" "$@"; fi; echo "sudo: $1: command not found" >&2; return 1; }}'
  shim="$shim"'; docker() {{ if [ -n "$dockerhost" ]; then exec "$realdocker" -H "$dockerhost" "$@"; fi; echo "sh: docker: not found" >&2; return 127; }}'
  SHELL=/bin/sh script -qec "$shim; $*" /dev/null
  status=$?
  if [ "$status" -ne 0 ]; then
    echo "ssh: Process exited with status $status" >&2
    exit 1
  fi
  exit 0
fi
if [ "$#" -ge 3 ] && [ "$1 $2" = "image load" ] && ls "$nodes"/* >/dev/null 2>&1; then
  for f in "$nodes"/*; do
    [ -f "$f" ] || continue
    sock= dockerhost=
    . "$f" || exit 1
    if [ -n "$dockerhost" ]; then
      {docker} -H "$dockerhost" load -i "$3" || exit 1
      continue
    fi
    {ctr} -a "$sock" -n {ns} images import --all-platforms --digests "$3" || exit 1
  done
  exit 0
fi
{importer}"#,
            nodes = quote(&self.nodes_dir().to_string_lossy()),
            ctr = quote(&self.ctr.to_string_lossy()),
            docker = quote(
                &self
                    .docker
                    .as_deref()
                    .unwrap_or(Path::new("docker"))
                    .to_string_lossy()
            ),
            ns = K8S_NAMESPACE,
            importer = self.importer(&["image", "load"], ""),
        )
    }

    /// `docker exec [-i] NODE ctr ARGS...` runs the real ctr against the node's containerd;
    /// `docker exec NODE containerd config dump` dumps its real config with the CRI section a
    /// kind node has; `docker load -i FILE` imports into the single runtime.
    fn docker_script(&self) -> String {
        format!(
            r#"nodes={nodes}
received={received}
registries={registries}
if [ "$1" = restart ] && [ "$#" -eq 2 ] && [ -f "$registries/$2" ]; then
  echo "$2"
  exit 0
fi
if [ "$1" = exec ] && [ -f "$registries/$2" ]; then
  . "$registries/$2"
  shift 2
  if [ "$1 $2" = "registry garbage-collect" ]; then
    shift 2
    args=
    for arg do
      [ "$arg" = /etc/docker/registry/config.yml ] && arg=$conf
      args="$args $arg"
    done
    exec docker-registry garbage-collect $args
  fi
  if [ "$*" = "du -sk /var/lib/registry" ]; then
    du -sk "$data" | sed "s|$data|/var/lib/registry|"
    exit 0
  fi
  echo "OCI runtime exec failed: exec: "$1": executable file not found in \$PATH" >&2
  exit 126
fi
if [ "$1" = exec ]; then
  shift
  stdin=
  if [ "$1" = -i ]; then stdin=1; shift; fi
  node=$1; shift
  if [ ! -f "$nodes/$node" ]; then
    echo "Error response from daemon: No such container: $node" >&2
    exit 1
  fi
  . "$nodes/$node"
  if [ "$1" = containerd ] && [ "$2 $3" = "config dump" ]; then
    containerd --config "$conf" config dump || exit 1
    printf '[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "%s"
' "$snap"
    exit 0
  fi
  if [ "$1" = ctr ]; then
    shift
    if [ -f "$nodes/.$node.unqueryable" ] && [ "$3" = content ]; then
      echo 'ctr: failed to dial "/run/containerd/containerd.sock": context deadline exceeded' >&2
      exit 1
    fi
    if [ -f "$nodes/.$node.stale" ] && [ "$3 $4 $5" = "content ls -q" ]; then
      {ctr} -a "$sock" "$@" || exit 1
      cat "$nodes/.$node.stale"
      exit 0
    fi
    if [ -f "$nodes/.$node.hangs" ]; then
      exec tail -f /dev/null
    fi
    if [ -f "$nodes/.$node.import-hangs" ] && [ "$3 $4" = "images import" ]; then
      exec tail -f /dev/null
    fi
    if [ -f "$nodes/.$node.import-fails" ] && [ "$3 $4" = "images import" ]; then
      cat > /dev/null
      cat "$nodes/.$node.import-fails" >&2
      exit 1
    fi
    if [ -n "$stdin" ]; then
      n=$(ls "$received/$node" | wc -l)
      # The next free number, claimed with O_EXCL: two imports at once never share a file.
      until (set -C; : > "$received/$node/$n.tar") 2>/dev/null; do n=$((n + 1)); done
      kept="$received/$node/$n.tar"
      cat > "$kept"
      exec {ctr} -a "$sock" "$@" < "$kept"
    fi
    exec {ctr} -a "$sock" "$@"
  fi
  echo "OCI runtime exec failed: exec: "$1": executable file not found in \$PATH" >&2
  exit 126
fi
{importer}"#,
            nodes = quote(&self.nodes_dir().to_string_lossy()),
            received = quote(&self.received_dir().to_string_lossy()),
            registries = quote(&self.registries_dir().to_string_lossy()),
            ctr = quote(&self.ctr.to_string_lossy()),
            importer = self.importer(&["load", "-i"], ""),
        )
    }

    /// Every recorded invocation, in order, program first.
    pub(crate) fn calls(&self) -> Vec<Vec<String>> {
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
    ///
    /// Stand-ins run at once (one per node), so each appends its record in one `write(2)`:
    /// the line is built first, then one `printf` to an `O_APPEND` file, kept under `PIPE_BUF`
    /// so that no other record can land inside it.
    fn write(&self, program: &str, body: &str) {
        let script = format!(
            "#!/bin/sh\nrecord={program}\nfor arg do record=\"$record\t$arg\"; done\n\
             if [ \"${{#record}}\" -ge {PIPE_BUF} ]; then echo \"$0 (stand-in): call record too long to append whole\" >&2; exit 2; fi\n\
             printf '%s\\n' \"$record\" >> {log}\n{body}",
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
/// Writes `bin/PROGRAM`: a script that appends `PROGRAM ARGS...` to `calls`, then runs `real`
/// with those arguments.
pub(crate) fn spy(bin: &Path, program: &str, real: &str, calls: &Path) {
    let script = bin.join(program);
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"{program} $*\" >> '{}'\nexec {real} \"$@\"\n",
            calls.display()
        ),
    )
    .expect("writing a spy");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .expect("making a spy executable");
}

pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
