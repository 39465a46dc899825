//! Command-line surface: commands and flags (clap derive only, no behaviour); `candidates`: what
//! shell completion offers for the words typed, read from clap's own description of them (pure).

pub mod candidates;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use crate::cluster::network::Network;
pub use crate::delivery::push::LayerCompression;
use crate::plumbing::environment;
pub use crate::plumbing::output::OutputFormat;

/// Push an image to your local cluster's registry, or load it into the nodes,
/// and print the reference a pod spec must use.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl registry",
    bin_name = "kubectl registry",
    version,
    propagate_version = true,
    disable_help_subcommand = true,
    long_about = LONG_ABOUT,
    after_help = ROOT_AFTER_HELP,
    after_long_help = format!("{ROOT_AFTER_HELP}\n{}", environment::help_text())
)]
pub struct Cli {
    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// More detail on stderr (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Nothing on stderr but errors: no progress, notes, warnings or summary.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

/// How to reach the cluster and its registry; kubectl passes none of its own flags to plugins.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Cluster options")]
pub struct ClusterArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (default: the current context).
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,

    #[arg(
        long,
        global = true,
        value_name = "HOST[:PORT]",
        help = format!("Registry to push to, skipping discovery [env: {}]", environment::REGISTRY_HOST)
    )]
    pub registry: Option<String>,

    #[arg(
        long,
        global = true,
        value_name = "HOST[:PORT]",
        help = format!(
            "How the nodes' container runtime names that registry (default: --registry) [env: {}]",
            environment::REGISTRY_RUNTIME_HOST
        )
    )]
    pub registry_from_runtime: Option<String>,

    /// Where this command runs, which decides the registry host it pushes to: `host` (outside
    /// the cluster: the advertised host) or `cluster` (in the cluster network: its
    /// hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host.
    #[arg(long, global = true, value_enum, value_name = "WHERE")]
    pub network: Option<Network>,

    /// The namespace (OpenShift project) images go to on OpenShift's registry (default: the
    /// context's namespace, or the pod's).
    #[arg(short = 'n', long, global = true, value_name = "NAME")]
    pub namespace: Option<String>,
}

impl From<&ClusterArgs> for crate::cluster::ClusterOptions {
    fn from(args: &ClusterArgs) -> Self {
        Self {
            kubeconfig: args.kubeconfig.clone(),
            context: args.context.clone(),
            registry: args.registry.clone(),
            registry_from_runtime: args.registry_from_runtime.clone(),
            network: args.network,
            namespace: args.namespace.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Push an image archive (or a local engine's image) into the cluster and print its ref.
    #[command(long_about = PUSH_LONG_ABOUT, after_help = PUSH_EXAMPLES)]
    Push(PushArgs),
    /// Show the cluster's local registry, where it was found, and what push would do.
    #[command(after_help = INFO_EXAMPLES)]
    Info(InfoArgs),
    /// Advertise a registry in the cluster (KEP-1755 ConfigMap), or remove the advertisement.
    #[command(long_about = ADVERTISE_LONG_ABOUT, after_help = ADVERTISE_EXAMPLES)]
    Advertise(AdvertiseArgs),
    /// Check every hop a push takes, one line per check, and name the one that is broken.
    #[command(long_about = DOCTOR_LONG_ABOUT, after_help = DOCTOR_EXAMPLES)]
    Doctor(DoctorArgs),
    /// List the registry's repositories and tags (or the nodes' content tags) and who uses them.
    #[command(long_about = LS_LONG_ABOUT, after_help = LS_EXAMPLES)]
    Ls(LsArgs),
    /// Delete old tags from the registry (or the nodes), never what a workload uses.
    #[command(long_about = PRUNE_LONG_ABOUT, after_help = PRUNE_EXAMPLES)]
    Prune(PruneArgs),
    /// Say why a pod's image does not start (pod/NAME or deploy/NAME), with the evidence and the fix.
    #[command(long_about = WHY_LONG_ABOUT, after_help = WHY_EXAMPLES)]
    Why(WhyArgs),
    /// Print the version.
    #[command(after_help = VERSION_EXAMPLES)]
    Version(OutputArgs),
    /// Print a shell completion script.
    #[command(long_about = COMPLETION_LONG_ABOUT, after_help = COMPLETION_EXAMPLES)]
    Completion(CompletionArgs),
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// An image archive (docker save, OCI archive or layout, compressed or not), `-` for stdin,
    /// or an image name in the local docker/podman engine.
    #[arg(value_name = "IMAGE|ARCHIVE|-")]
    pub source: String,

    /// Name to push as, NAME[:TAG] (default: the name recorded in the archive).
    #[arg(short, long, value_name = "NAME[:TAG]")]
    pub tag: Option<String>,

    /// Which image of a multi-image archive to push, NAME[:TAG].
    #[arg(long, value_name = "NAME[:TAG]")]
    pub image: Option<String>,

    /// Push only this platform of a multi-platform image, OS/ARCH[/VARIANT].
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,

    /// How to send uncompressed layers.
    #[arg(long, value_enum, default_value_t = LayerCompression::Auto)]
    pub compression: LayerCompression,

    /// Blobs uploaded at once.
    #[arg(short, long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,

    #[command(flatten)]
    pub access: RegistryAccessArgs,

    /// Fail instead of loading into the nodes when no registry is advertised.
    #[arg(long, conflicts_with = "load_command")]
    pub no_load: bool,

    /// Load with this command when no registry is advertised; `{archive}` is replaced by the
    /// archive's path, e.g. 'mycluster load {archive}'.
    #[arg(long, value_name = "COMMAND")]
    pub load_command: Option<String>,

    /// After the push, set the ref on this workload's containers that run the image (or on
    /// CONTAINER) and wait for its rollout; a Deployment, StatefulSet or DaemonSet (repeatable).
    #[arg(long, value_name = "KIND/NAME[=CONTAINER]")]
    pub rollout: Vec<String>,

    /// How long to wait for each rollout, e.g. 90s, 5m.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::plumbing::limits::parse_duration)]
    pub timeout: std::time::Duration,

    /// Keep running: push again (and roll out) each time the engine's image or the archive
    /// changes, one ref line per round; Ctrl-C ends it.
    #[arg(long)]
    pub watch: bool,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Only these repositories (default: every repository in the registry's catalog).
    #[arg(value_name = "REPOSITORY")]
    pub repositories: Vec<String>,

    #[command(flatten)]
    pub access: RegistryAccessArgs,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Only these repositories (default: every repository in the registry's catalog).
    #[arg(value_name = "REPOSITORY")]
    pub repositories: Vec<String>,

    /// Images kept per repository, newest first by their created time (a manifest's tags count
    /// once).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub keep: u32,

    /// Say what would be deleted; delete nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Prune the nodes' content tags, even when a registry is advertised.
    #[arg(long)]
    pub nodes: bool,

    /// Go on when the workloads cannot be read (images they use may be deleted).
    #[arg(long)]
    pub ignore_usage: bool,

    /// Then run `registry garbage-collect --delete-untagged` in the registry's container
    /// (kind-registry, k3d's registry) to free the disk.
    #[arg(long, conflicts_with = "dry_run")]
    pub gc: bool,

    #[command(flatten)]
    pub access: RegistryAccessArgs,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct AdvertiseArgs {
    /// Where tools outside the cluster push (KEP-1755 `host`).
    #[arg(value_name = "HOST[:PORT]", required_unless_present = "delete")]
    pub host: Option<String>,

    /// How the nodes' container runtime names the registry (`hostFromContainerRuntime`).
    #[arg(long, value_name = "HOST[:PORT]")]
    pub from_runtime: Option<String>,

    /// Where pods reach the registry (`hostFromClusterNetwork`).
    #[arg(long, value_name = "HOST[:PORT]")]
    pub from_cluster_network: Option<String>,

    /// The registry's guide, shown to users when something fails (`help`; http or https).
    #[arg(long, value_name = "URL")]
    pub help_url: Option<String>,

    /// Print the ConfigMap as YAML instead of writing it.
    #[arg(long, conflicts_with = "delete")]
    pub dry_run: bool,

    /// Remove the advertisement (other keys of the ConfigMap are kept).
    #[arg(long, conflicts_with_all = ["host", "from_runtime", "from_cluster_network", "help_url"])]
    pub delete: bool,

    /// Do not check first that HOST answers like a registry from here.
    #[arg(long, conflicts_with = "delete")]
    pub no_verify: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Also run a short-lived pod that pulls a probe image, the nodes' own check.
    #[arg(long)]
    pub pod: bool,

    #[command(flatten)]
    pub access: RegistryAccessArgs,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct WhyArgs {
    /// The pod (pod/NAME, or NAME) or deployment (deploy/NAME: its newest failing pod), in the
    /// namespace of -n or the context.
    #[arg(value_name = "pod/NAME|deploy/NAME")]
    pub target: String,

    #[command(flatten)]
    pub access: RegistryAccessArgs,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// How to reach the registry beyond what the environment says (push, ls, prune, doctor, why).
#[derive(Debug, Clone, Default, Args)]
pub struct RegistryAccessArgs {
    /// Allow plain HTTP to a registry that is not on loopback.
    #[arg(long)]
    pub insecure: bool,

    /// Trust this PEM CA bundle for the registry's TLS certificate.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
}

impl From<&RegistryAccessArgs> for crate::inventory::RegistryAccess {
    fn from(args: &RegistryAccessArgs) -> Self {
        Self {
            insecure: args.insecure,
            ca_file: args.ca_file.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, Args)]
pub struct OutputArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

// Prose is one line per paragraph (clap wraps it to the terminal); example lines stay under 80
// columns so that they are never wrapped and copy-paste as they are.

const LONG_ABOUT: &str = "\
Push an image into your local cluster and print the reference a pod spec must use.

Finds the current cluster's local registry (the KEP-1755 ConfigMap \
kube-public/local-registry-hosting, then older conventions), pushes the image there over the OCI \
distribution API, and prints on stdout only the reference to put in a pod spec. Where the \
cluster advertises no registry, loads the image into the nodes with the cluster's own CLI \
(kind, k3d, minikube, microk8s). Progress, warnings and errors go to stderr.";

const ROOT_AFTER_HELP: &str = "\
Examples:
  # Push an image archive and print the ref a pod spec must use
  kubectl registry push ./myimg.tar

  # Roll a deployment onto an image from the local engine
  kubectl set image deploy/app app=$(kubectl registry push myimg:dev)

  # Show the current cluster's local registry and what push would do
  kubectl registry info

  # Find out which hop is broken when a pod cannot pull
  kubectl registry doctor

Exit codes:
  0  success
  1  failure with no more specific code
  2  the command line was wrong
  3  the cluster (kubeconfig or API server) could not be read, or refused a write
  4  the image input (archive or engine) is unreadable or invalid
  5  the registry refused, failed or could not be reached
  6  no way in: nothing advertised (for this network) and no node loader, or the loader failed
  130  stopped by SIGINT (Ctrl-C), temp files removed
  143  stopped by SIGTERM, temp files removed";

const PUSH_LONG_ABOUT: &str = "\
Push an image archive, or an image from the local docker or podman engine, into the cluster \
and print the ref a pod spec must use.

The image goes to the registry the cluster advertises (or --registry), blobs first and the \
manifest last, so nothing is tagged until every blob is there. Where no registry is \
advertised, the image is loaded into the nodes with the cluster's own CLI, unless --no-load. \
stdout carries only the ref, or a JSON document with -o json.";

const PUSH_EXAMPLES: &str = "\
Examples:
  # Push an archive made by docker save; print the ref a pod spec must use
  kubectl registry push ./myimg.tar

  # Push an image from the local docker or podman engine
  kubectl registry push myimg:dev

  # Roll a deployment onto the image just pushed
  kubectl set image deploy/app app=$(kubectl registry push myimg:dev)

  # Push from stdin under another name
  docker save myimg:dev | kubectl registry push - --tag myapp:v1

  # Push one image, for one platform, of a multi-image archive; print JSON
  kubectl registry push ./all.tar --image web:dev --platform linux/arm64 -o json

  # Push to a registry the cluster does not advertise
  kubectl registry push ./myimg.tar --registry localhost:5001";

const INFO_EXAMPLES: &str = "\
Examples:
  # Show the current cluster's local registry, where it was found, and what
  # push would do
  kubectl registry info

  # The same for another kubeconfig context, as JSON
  kubectl registry info --context kind-dev -o json";

const ADVERTISE_LONG_ABOUT: &str = "\
Advertise a local registry in the cluster: write the KEP-1755 ConfigMap \
kube-public/local-registry-hosting that push, Tilt, Skaffold and other tools read.

The key localRegistryHosting.v1 is created or updated (with a retry when someone else wrote at the \
same time); other keys of the ConfigMap are kept. Hosts are validated with the rules discovery \
reads them with. Before writing, HOST is asked GET /v2/ and a warning says when it does not \
answer like a registry from here. --dry-run prints the ConfigMap instead; --delete removes the \
advertisement.";

const ADVERTISE_EXAMPLES: &str = "\
Examples:
  # Advertise kind's local registry, with a guide for users it fails for
  kubectl registry advertise localhost:5001 --help-url https://kind.sigs.k8s.io

  # Pods name the registry differently from the laptop (k3d)
  kubectl registry advertise localhost:5000 --from-runtime registry:5000

  # Print the ConfigMap instead of writing it
  kubectl registry advertise localhost:5001 --dry-run

  # Remove the advertisement
  kubectl registry advertise --delete";

const DOCTOR_LONG_ABOUT: &str = "\
Walk every hop a push takes and print one line per check: the kubeconfig and its context, the \
API server, what discovery finds, the registry from here, a round trip of a tiny probe image, what \
the nodes will pull from, and the node loader when there is no registry. It never stops early, \
and exits 0 only when push would work.

A check shows ✓ when it passed, ✗ when it failed (push would not work) and – when \
it does not apply or could not be checked. --pod also runs a short-lived pod that pulls the probe \
image, the definitive check of what the nodes can pull.";

const DOCTOR_EXAMPLES: &str = "\
Examples:
  # Check the current cluster, one line per hop
  kubectl registry doctor

  # The same for another context, as JSON
  kubectl registry doctor --context kind-dev -o json

  # Also pull a probe image from a pod, as the nodes would
  kubectl registry doctor --pod";

const LS_LONG_ABOUT: &str = "\
List every repository and tag in the cluster's registry (its /v2/_catalog and tags/list), with \
each tag's manifest digest, its size (config and layers; an index summed over its platforms), \
its image's created time, and the pods and workloads (in every namespace) whose image names this \
registry under any of its advertised hosts, by tag or by digest.

Where the cluster advertises no registry, lists the content tags (NAME:TAG-<12 hex>) that push \
loaded into each node of a kind or k3d cluster instead.";

const LS_EXAMPLES: &str = "\
Examples:
  # Every repository and tag, and who uses it
  kubectl registry ls

  # One repository, as JSON
  kubectl registry ls myimg -o json";

const PRUNE_LONG_ABOUT: &str = "\
Delete old tags from the cluster's registry: per repository, the tags of the --keep newest images \
(by their created time; tags as new as the last of them, or with no time, are kept) and every tag a pod or workload \
uses are kept, and the rest are deleted by manifest digest, never a digest a kept tag points at. \
Reading the workloads is required (exit 3 when it is forbidden) unless --ignore-usage.

A registry frees the blobs only in its offline garbage-collect: --gc runs `registry \
garbage-collect --delete-untagged` in the registry's container (kind's and ctlptl's \
kind-registry, k3d's registry) and says what it freed. Deletes must be enabled in the registry \
(REGISTRY_STORAGE_DELETE_ENABLED=true).

Without a registry (or with --nodes), removes the older content tags push loaded into each node \
of a kind or k3d cluster, or the local node of microk8s or k3s (ctr images rm), keeping the --keep newest per name and any a pod or \
workload uses; containerd frees the content itself. OpenShift's image streams are not pruned.";

const PRUNE_EXAMPLES: &str = "\
Examples:
  # Show what would be deleted, delete nothing
  kubectl registry prune --dry-run

  # Keep the 5 newest tags of myimg, and reclaim the disk in kind-registry
  kubectl registry prune myimg --keep 5 --gc

  # The nodes' content tags, with no registry
  kubectl registry prune --nodes";
const WHY_LONG_ABOUT: &str = "\
Say why a pod's image does not start: for each container that waits on its image, one cause \
with its evidence and the fix, from the pod's status and the kubelet's events, what the cluster \
advertises, what the registry holds and what the node is. Causes: wrong-host, not-in-registry, \
registry-not-mapped, platform-mismatch, unauthorized, digest-after-load, not-on-node, \
pull-policy, invalid-name, other.

Exits 0 when every container's image is there; else with the exit code of the first cause's \
area (3 the pod spec or cluster, 5 the registry, 6 the nodes).";

const WHY_EXAMPLES: &str = "\
Examples:
  # Why does this pod say ImagePullBackOff?
  kubectl registry why pod/web-7d4b9c7f-x2x8q

  # A deployment's newest failing pod, in another namespace, as JSON
  kubectl registry why deploy/web -n shop -o json";

const VERSION_EXAMPLES: &str = "\
Examples:
  # Print the plugin's version
  kubectl registry version";

const COMPLETION_LONG_ABOUT: &str = "\
Print a shell completion script for kubectl-registry, the plugin's binary called directly.

`kubectl registry <TAB>` needs no script: kubectl 1.26+ (with its own completion enabled) asks \
an executable named kubectl_complete-registry on PATH, and this binary answers under that \
name. Link it once next to the plugin, as the first example shows.";

const COMPLETION_EXAMPLES: &str = "\
Examples:
  # Complete `kubectl registry <TAB>`: link the helper next to the plugin
  dir=\"$(dirname \"$(command -v kubectl-registry)\")\"
  ln -s kubectl-registry \"$dir/kubectl_complete-registry\"

  # Complete `kubectl-registry <TAB>` in bash (add this to ~/.bashrc)
  source <(kubectl registry completion bash)

  # ... in zsh, from a directory on $fpath
  kubectl registry completion zsh > \"${fpath[1]}/_kubectl-registry\"

  # ... in fish (add this to ~/.config/fish/config.fish)
  kubectl registry completion fish | source

  # ... in PowerShell (add this to $PROFILE)
  kubectl registry completion powershell | Out-String | Invoke-Expression";
