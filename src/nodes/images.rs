//! The images in each node's containerd, for `ls` and `prune` without a registry: their names and
//! manifest digests (`ctr -n k8s.io images ls`), a small blob of one (`ctr content get`), and
//! removing names (`ctr -n k8s.io images rm`); on minikube nodes of the docker runtime, the
//! node's dockerd instead (`docker image ls`, `docker image inspect`, `docker image rm`). Each
//! command is run by the one runner (`exec`): bounded in time and output, killed when it
//! outlasts its bound or the run is dropped.

use std::collections::HashMap;
use std::ffi::OsString;
use std::time::Duration;

use super::cluster::NodeCluster;
use super::exec;
use crate::image::digest::Digest;
use crate::image::reference::ImageName;
use crate::plumbing::process::{Argv, shell_quote};

/// One image name in a node's containerd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeImage {
    /// As containerd records it: `docker.io/library/myimg:dev-0123456789ab`.
    pub name: String,
    /// The manifest (or index) it points at.
    pub digest: Digest,
}

/// One image name in a node's dockerd (minikube's docker runtime).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerImage {
    /// Normalized as containerd records names: `docker.io/library/myimg:dev-0123456789ab`.
    pub name: String,
    /// The image ID: its config's digest.
    pub id: Digest,
    /// The config's `created`, as docker reports it; `None` when it has none.
    pub created: Option<String>,
}

/// Where a node's kubelet finds its images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageStore {
    /// containerd's `k8s.io` namespace.
    Containerd,
    /// The node's dockerd (minikube's default runtime, through cri-dockerd).
    Docker,
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
        bound: Duration,
    },
    /// minikube's nodes (the cluster's Nodes), each through `minikube ssh -p PROFILE -n NODE --
    /// sudo ctr ...`, as minikube itself runs `ctr` in its nodes.
    Minikube {
        profile: String,
        nodes: Vec<String>,
        store: ImageStore,
        bound: Duration,
    },
}

impl NodeAccess {
    /// The nodes to ask: listed by kind or k3d, or the one local node.
    async fn nodes(&self) -> Result<Vec<String>, String> {
        match self {
            Self::Containers(cluster) => {
                let listing = cluster.list_command();
                let listed = exec::capture(&listing, cluster.bound()).await?;
                let nodes = cluster.parse_node_list(&listed.stdout_text())?;
                if nodes.is_empty() {
                    return Err(format!("`{listing}` names no node"));
                }
                Ok(nodes)
            }
            Self::LocalCtr { node, .. } => Ok(vec![node.clone()]),
            Self::Minikube { nodes, .. } => Ok(nodes.clone()),
        }
    }

    /// Where the nodes keep their images.
    pub fn store(&self) -> ImageStore {
        match self {
            Self::Minikube { store, .. } => *store,
            _ => ImageStore::Containerd,
        }
    }

    /// How long each node command may take.
    fn bound(&self) -> Duration {
        match self {
            Self::Containers(cluster) => cluster.bound(),
            Self::LocalCtr { bound, .. } | Self::Minikube { bound, .. } => *bound,
        }
    }

    /// `ctr -n k8s.io ARGS...` on `node`.
    fn ctr(&self, node: &str, args: &[&str]) -> Argv {
        match self {
            Self::Containers(cluster) => cluster.ctr(node, false, args),
            Self::LocalCtr { argv, .. } => {
                let (program, first) = argv.split_first().unwrap_or((&"ctr", &[]));
                let all = first.iter().chain(&["-n", "k8s.io"]).chain(args.iter());
                Argv::new(program, all.map(OsString::from))
            }
            Self::Minikube { profile, .. } => {
                let remote = ["sudo", "ctr", "-n", "k8s.io"]
                    .into_iter()
                    .chain(args.iter().copied());
                minikube_ssh(profile, node, remote)
            }
        }
    }

    /// `docker ARGS...` in a minikube node (its user is in the docker group).
    fn docker(&self, node: &str, args: &[&str]) -> Argv {
        let profile = match self {
            Self::Minikube { profile, .. } => profile.as_str(),
            _ => "minikube",
        };
        minikube_ssh(
            profile,
            node,
            std::iter::once("docker").chain(args.iter().copied()),
        )
    }
}

/// `minikube ssh -p PROFILE -n NODE -- WORDS...`. minikube joins the words after `--` with
/// spaces for the node's shell: each is quoted for it (names read from the node included).
fn minikube_ssh<'a>(profile: &str, node: &str, remote: impl Iterator<Item = &'a str>) -> Argv {
    let words = ["ssh", "-p", profile, "-n", node, "--"]
        .into_iter()
        .map(OsString::from)
        .chain(remote.map(|word| OsString::from(shell_quote(word))));
    Argv::new("minikube", words)
}

/// Every node and the images in its dockerd, with their IDs and created times: `docker image
/// ls` names them, one `docker image inspect` dates them.
pub async fn docker_images(access: &NodeAccess) -> Result<Vec<(String, Vec<DockerImage>)>, String> {
    let nodes = access.nodes().await?;
    let mut found = Vec::new();
    for node in nodes {
        let listing = access.docker(
            &node,
            &[
                "image",
                "ls",
                "--no-trunc",
                "--format",
                "{{.Repository}}:{{.Tag}} {{.ID}}",
            ],
        );
        let listed = parse_docker_ls(&String::from_utf8_lossy(&run(access, &listing).await?));
        let mut ids: Vec<String> = listed.iter().map(|(_, id)| id.to_string()).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut created = HashMap::new();
        if !ids.is_empty() {
            let mut args = vec!["image", "inspect", "--format", "{{.Id}} {{.Created}}"];
            args.extend(ids.iter().map(String::as_str));
            let inspected = run(access, &access.docker(&node, &args)).await?;
            created = parse_docker_created(&String::from_utf8_lossy(&inspected));
        }
        let images = listed
            .into_iter()
            .map(|(name, id)| DockerImage {
                created: created.get(&id).cloned().flatten(),
                name,
                id,
            })
            .collect();
        found.push((node, images));
    }
    Ok(found)
}

/// Every node and the image names it holds (normalized), from containerd or dockerd.
pub async fn node_names(access: &NodeAccess) -> Result<Vec<(String, Vec<String>)>, String> {
    Ok(match access.store() {
        ImageStore::Containerd => node_images(access)
            .await?
            .into_iter()
            .map(|(node, images)| (node, images.into_iter().map(|i| i.name).collect()))
            .collect(),
        ImageStore::Docker => docker_images(access)
            .await?
            .into_iter()
            .map(|(node, images)| (node, images.into_iter().map(|i| i.name).collect()))
            .collect(),
    })
}

/// `REPOSITORY:TAG ID` lines; untagged images (`<none>`) and names that do not parse are left out.
fn parse_docker_ls(text: &str) -> Vec<(String, Digest)> {
    text.lines()
        .filter_map(|line| {
            let (name, id) = line.trim().rsplit_once(' ')?;
            if name.contains("<none>") {
                return None;
            }
            let name = ImageName::parse(name).ok()?;
            Some((name.normalized(), id.trim().parse().ok()?))
        })
        .collect()
}

/// `ID CREATED` lines; the zero time docker gives an image without `created` is no time.
fn parse_docker_created(text: &str) -> HashMap<Digest, Option<String>> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let id = words.next()?.parse().ok()?;
            let created = words
                .next()
                .filter(|created| !created.starts_with("0001-01-01"))
                .map(str::to_string);
            Some((id, created))
        })
        .collect()
}

/// Every node of the cluster and what it holds, listed with the product's CLI and `ctr`.
pub async fn node_images(access: &NodeAccess) -> Result<Vec<(String, Vec<NodeImage>)>, String> {
    let nodes = access.nodes().await?;
    let mut found = Vec::new();
    for node in nodes {
        let command = access.ctr(&node, &["images", "ls"]);
        let out = run(access, &command).await?;
        found.push((node, parse_images_ls(&String::from_utf8_lossy(&out))));
    }
    Ok(found)
}

/// `ctr content get DIGEST` on `node`: a manifest or config, checked against its digest.
pub async fn content(access: &NodeAccess, node: &str, digest: &Digest) -> Result<Vec<u8>, String> {
    let command = access.ctr(node, &["content", "get", digest.as_str()]);
    let bytes = run(access, &command).await?;
    if Digest::of_bytes(&bytes) != *digest {
        return Err(format!(
            "`{command}` printed bytes that do not match {digest}"
        ));
    }
    Ok(bytes)
}

/// `ctr -n k8s.io images rm NAME...` on `node`: the names go; containerd's own garbage
/// collector frees the content no name holds any more. On a docker node, `docker image rm
/// NAME...`: a name goes, and its image with its last name.
pub async fn remove(access: &NodeAccess, node: &str, names: &[String]) -> Result<(), String> {
    let mut args = vec!["image", "rm"];
    args.extend(names.iter().map(String::as_str));
    let command = match access.store() {
        ImageStore::Containerd => {
            args[0] = "images";
            access.ctr(node, &args)
        }
        ImageStore::Docker => access.docker(node, &args),
    };
    run(access, &command).await.map(|_| ())
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

async fn run(access: &NodeAccess, command: &Argv) -> Result<Vec<u8>, String> {
    let out = exec::capture(command, access.bound()).await?.stdout;
    Ok(match access {
        NodeAccess::Minikube { .. } => from_terminal(&out),
        _ => out,
    })
}

/// What a command printed, from what came through the terminal `minikube ssh` opens on the
/// node (its native client always asks for one): the terminal's output processing turned each
/// `\n` into `\r\n`, which this undoes exactly (a `\r\n` the command printed came as
/// `\r\r\n`). A manifest read this way is still checked against its digest.
fn from_terminal(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'\r' && bytes.get(at + 1) == Some(&b'\n') {
            at += 1;
            continue;
        }
        out.push(bytes[at]);
        at += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminals_newlines_are_undone_exactly() {
        assert_eq!(from_terminal(b"{\r\n  \"a\": 1\r\n}"), b"{\n  \"a\": 1\n}");
        assert_eq!(from_terminal(b"a\r\r\nb\rc\r"), b"a\r\nb\rc\r");
    }

    #[test]
    fn minikube_nodes_are_asked_through_minikube_ssh() {
        let access = NodeAccess::Minikube {
            profile: "dev".to_string(),
            nodes: vec!["dev-m02".to_string()],
            store: ImageStore::Containerd,
            bound: Duration::from_secs(1),
        };
        assert_eq!(
            access
                .ctr("dev-m02", &["images", "rm", "docker.io/library/a:b", "x;y"])
                .argv(),
            [
                "minikube",
                "ssh",
                "-p",
                "dev",
                "-n",
                "dev-m02",
                "--",
                "sudo",
                "ctr",
                "-n",
                "k8s.io",
                "images",
                "rm",
                "docker.io/library/a:b",
                "'x;y'"
            ]
        );
    }

    #[test]
    fn docker_listings_give_normalized_names_ids_and_created_times() {
        let id = format!("sha256:{}", "c".repeat(64));
        let other = format!("sha256:{}", "d".repeat(64));
        let listed = format!(
            "myimg:dev-0123456789ab {id}\r\nregistry.k8s.io/pause:3.10 {other}\r\n<none>:<none> {other}\r\nbroken\r\n"
        );
        assert_eq!(
            parse_docker_ls(&listed),
            vec![
                (
                    "docker.io/library/myimg:dev-0123456789ab".to_string(),
                    id.parse().unwrap()
                ),
                (
                    "registry.k8s.io/pause:3.10".to_string(),
                    other.parse().unwrap()
                ),
            ]
        );
        let created = parse_docker_created(&format!(
            "{id} 2024-01-01T00:00:00Z\n{other} 0001-01-01T00:00:00Z\n"
        ));
        assert_eq!(
            created.get(&id.parse().unwrap()),
            Some(&Some("2024-01-01T00:00:00Z".to_string()))
        );
        assert_eq!(created.get(&other.parse().unwrap()), Some(&None));
    }

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
