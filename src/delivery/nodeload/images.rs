//! The images in each node's containerd, for `ls` and `prune` without a registry: their names and
//! manifest digests (`ctr -n k8s.io images ls`), a small blob of one (`ctr content get`), and
//! removing names (`ctr -n k8s.io images rm`). Each command bounded in time and output, killed
//! when it outlasts its bound or the run is dropped.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::exec::{self, printable};
use super::nodes::NodeCluster;
use super::plan::LoadCommand;
use crate::image::digest::Digest;

/// One node command's bound: a `ctr` listing answers in well under a second.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// The most of a command's output read: thousands of image lines, or one manifest or config.
const OUTPUT_LIMIT: usize = 16 << 20;

/// One image name in a node's containerd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeImage {
    /// As containerd records it: `docker.io/library/myimg:dev-0123456789ab`.
    pub name: String,
    /// The manifest (or index) it points at.
    pub digest: Digest,
}

/// How `ctr` reaches the nodes' containerd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeAccess {
    /// kind's and k3d's nodes, containers of the local engine: `docker exec NODE ctr ...`.
    Containers(NodeCluster),
    /// The local node of microk8s or k3s, through the product's own `ctr` (`microk8s ctr`).
    LocalCtr {
        argv: &'static [&'static str],
        node: String,
    },
}

impl NodeAccess {
    /// The nodes to ask: listed by kind or k3d, or the one local node.
    async fn nodes(&self) -> Result<Vec<String>, String> {
        match self {
            Self::Containers(cluster) => {
                let listing = cluster.list_command();
                let listed = exec::capture(&listing).await?;
                let nodes = cluster.parse_node_list(&listed.stdout)?;
                if nodes.is_empty() {
                    return Err(format!("`{listing}` names no node"));
                }
                Ok(nodes)
            }
            Self::LocalCtr { node, .. } => Ok(vec![node.clone()]),
        }
    }

    /// `ctr -n k8s.io ARGS...` on `node`.
    fn ctr(&self, node: &str, args: &[&str]) -> LoadCommand {
        match self {
            Self::Containers(cluster) => cluster.ctr(node, false, args),
            Self::LocalCtr { argv, .. } => {
                let (program, first) = argv.split_first().unwrap_or((&"ctr", &[]));
                let all = first.iter().chain(&["-n", "k8s.io"]).chain(args.iter());
                LoadCommand::new(program, all.map(std::ffi::OsString::from))
            }
        }
    }
}

/// Every node of the cluster and what it holds, listed with the product's CLI and `ctr`.
pub async fn node_images(access: &NodeAccess) -> Result<Vec<(String, Vec<NodeImage>)>, String> {
    let nodes = access.nodes().await?;
    let mut found = Vec::new();
    for node in nodes {
        let command = access.ctr(&node, &["images", "ls"]);
        let out = run(&command).await?;
        found.push((node, parse_images_ls(&String::from_utf8_lossy(&out))));
    }
    Ok(found)
}

/// `ctr content get DIGEST` on `node`: a manifest or config, checked against its digest.
pub async fn content(access: &NodeAccess, node: &str, digest: &Digest) -> Result<Vec<u8>, String> {
    let command = access.ctr(node, &["content", "get", digest.as_str()]);
    let bytes = run(&command).await?;
    if Digest::of_bytes(&bytes) != *digest {
        return Err(format!(
            "`{command}` printed bytes that do not match {digest}"
        ));
    }
    Ok(bytes)
}

/// `ctr -n k8s.io images rm NAME...` on `node`: the names go; containerd's own garbage
/// collector frees the content no name holds any more.
pub async fn remove(access: &NodeAccess, node: &str, names: &[String]) -> Result<(), String> {
    let mut args = vec!["images", "rm"];
    args.extend(names.iter().map(String::as_str));
    run(&access.ctr(node, &args)).await.map(|_| ())
}

/// `ctr images ls` lines: `REF TYPE DIGEST SIZE PLATFORMS LABELS`, the header first.
fn parse_images_ls(text: &str) -> Vec<NodeImage> {
    text.lines()
        .skip_while(|line| line.trim().is_empty())
        .skip(1)
        .filter_map(|line| {
            let mut columns = line.split_whitespace();
            let name = columns.next()?;
            let _media_type = columns.next()?;
            let digest = columns.next()?.parse().ok()?;
            Some(NodeImage {
                name: name.to_string(),
                digest,
            })
        })
        .collect()
}

async fn run(command: &LoadCommand) -> Result<Vec<u8>, String> {
    run_tool(command, COMMAND_TIMEOUT).await
}

/// Runs `command` with no stdin, for at most `timeout` (then it is killed, as it is when the
/// run is dropped); its stdout (the first 16 MiB), or why it failed (its last stderr line).
pub async fn run_tool(command: &LoadCommand, timeout: Duration) -> Result<Vec<u8>, String> {
    let mut child = tokio::process::Command::new(command.program())
        .args(command.args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| format!("could not start `{command}`: {err}"))?;
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let work = async {
        let read_out = read_bounded(stdout.as_mut());
        let read_err = read_bounded(stderr.as_mut());
        let (out, err) = tokio::join!(read_out, read_err);
        let status = child.wait().await;
        (out, err, status)
    };
    let Ok((out, err, status)) = tokio::time::timeout(timeout, work).await else {
        return Err(format!(
            "`{command}` did not finish within {} s; it was stopped",
            timeout.as_secs()
        ));
    };
    let status = status.map_err(|err| format!("waiting for `{command}`: {err}"))?;
    if status.success() {
        return Ok(out);
    }
    let said = String::from_utf8_lossy(&err);
    match said.lines().map(str::trim).rfind(|line| !line.is_empty()) {
        Some(line) => Err(format!(
            "`{command}` failed ({status}): {}",
            printable(line)
        )),
        None => Err(format!("`{command}` failed ({status})")),
    }
}

/// All of a pipe read (so the child never blocks on it), the first `OUTPUT_LIMIT` bytes kept.
async fn read_bounded(pipe: Option<&mut (impl tokio::io::AsyncRead + Unpin)>) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(pipe) = pipe else {
        return kept;
    };
    let mut buf = [0u8; 8192];
    while let Ok(read) = pipe.read(&mut buf).await {
        if read == 0 {
            break;
        }
        let room = OUTPUT_LIMIT.saturating_sub(kept.len()).min(read);
        kept.extend_from_slice(&buf[..room]);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctr_images_ls_gives_names_and_digests() {
        let digest = format!("sha256:{}", "b".repeat(64));
        let text = format!(
            "REF                                        TYPE                                                 DIGEST  SIZE    PLATFORMS   LABELS\n\
             docker.io/library/myimg:dev-0123456789ab   application/vnd.oci.image.manifest.v1+json   {digest} 1.2 MiB linux/amd64 io.cri-containerd.image=managed\n\
             broken line\n"
        );
        assert_eq!(
            parse_images_ls(&text),
            vec![NodeImage {
                name: "docker.io/library/myimg:dev-0123456789ab".to_string(),
                digest: digest.parse().unwrap(),
            }]
        );
    }
}
