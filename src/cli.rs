//! Command-line surface: commands and flags (clap derive only, no behaviour).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Push an image to your local cluster's registry, or load it into the nodes,
/// and print the reference a pod spec must use.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl registry",
    bin_name = "kubectl registry",
    version,
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// More detail on stderr (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

/// How to reach the cluster and its registry; kubectl passes none of its own flags to plugins.
#[derive(Debug, Clone, Default, Args)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (default: the current context).
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,

    /// Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST].
    #[arg(long, global = true, value_name = "HOST[:PORT]")]
    pub registry: Option<String>,

    /// How the nodes' container runtime names that registry (default: --registry)
    /// [env: KUBECTL_REGISTRY_RUNTIME_HOST].
    #[arg(long, global = true, value_name = "HOST[:PORT]")]
    pub registry_from_runtime: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Push an image archive (or a local engine's image) into the cluster and print its ref.
    Push(PushArgs),
    /// Show the cluster's local registry, where it was found, and what push would do.
    Info(InfoArgs),
    /// Print the version.
    Version(OutputArgs),
    /// Print a shell completion script.
    Completion(CompletionArgs),
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// An image archive (docker save, OCI archive or layout, gzip/zstd wrapped), `-` for stdin,
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
    #[arg(long, value_enum, default_value_t = Compression::Auto)]
    pub compression: Compression,

    /// Blobs uploaded at once.
    #[arg(short, long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,

    /// Allow plain HTTP to a registry that is not on loopback.
    #[arg(long)]
    pub insecure: bool,

    /// Trust this PEM CA bundle for the registry's TLS certificate.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,

    /// Fail instead of loading into the nodes when no registry is advertised.
    #[arg(long, conflicts_with = "load_command")]
    pub no_load: bool,

    /// Load with this command when no registry is advertised; `{archive}` is replaced by the
    /// archive's path, e.g. 'mycluster load {archive}'.
    #[arg(long, value_name = "COMMAND")]
    pub load_command: Option<String>,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    pub output: OutputArgs,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Compression {
    /// No compression for loopback and cluster-advertised registries, gzip elsewhere.
    Auto,
    /// Send uncompressed layers as they are.
    None,
    /// Compress uncompressed layers with gzip.
    Gzip,
    /// Compress uncompressed layers with zstd.
    Zstd,
}
