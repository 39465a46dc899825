//! A kubeconfig's exec credential plugin (client.authentication.k8s.io), run by us within a
//! bound and killed when it outlasts it (kube's own run waits forever), its answer handed to
//! the API client as a token or a client certificate.

use std::io::IsTerminal;
use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use kube::config::{AuthInfo, ExecConfig, ExecInteractiveMode};
use secrecy::SecretString;
use serde::Deserialize;
use tokio::io::AsyncReadExt;

/// How long a plugin that cannot be talking to a person may take: as long as an API read.
pub const UNATTENDED_BOUND: Duration = Duration::from_secs(15);
/// How long a plugin that may be waiting for a person (a login in a browser, a prompt at this
/// terminal) may take.
pub const ATTENDED_BOUND: Duration = Duration::from_secs(300);

/// The most of a plugin's stdout or stderr we read: an ExecCredential is a few KiB.
const OUTPUT_LIMIT: u64 = 1 << 20;

/// Why the plugin gave no credentials.
#[derive(Debug)]
pub enum PluginFailure {
    /// It could not be started.
    Start(String, std::io::Error),
    /// It did not answer within the bound, and was killed.
    Hung(String, Duration),
    /// It exited unsuccessfully; what it said on stderr (when not shown to the user already).
    Failed(std::process::ExitStatus, String),
    /// Its answer is not an ExecCredential with a token or a client certificate.
    BadAnswer(String, String),
}

#[derive(Deserialize)]
struct ExecCredential {
    status: Option<Status>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    token: Option<String>,
    client_certificate_data: Option<String>,
    client_key_data: Option<String>,
}

/// Runs the exec plugin `auth` names, if any, and puts its credentials in `auth` in its place,
/// so the client never runs it again (a command runs for minutes, not past a token's life).
pub async fn resolve(auth: &mut AuthInfo) -> Result<(), PluginFailure> {
    let Some(exec) = auth.exec.take() else {
        return Ok(());
    };
    let status = run(&exec).await?;
    let command = exec.command.clone().unwrap_or_default();
    if let Some(token) = status.token.filter(|token| !token.is_empty()) {
        auth.token = Some(SecretString::from(token));
        return Ok(());
    }
    match (status.client_certificate_data, status.client_key_data) {
        (Some(certificate), Some(key)) => {
            let base64 = base64::engine::general_purpose::STANDARD;
            auth.client_certificate_data = Some(base64.encode(certificate));
            auth.client_key_data = Some(SecretString::from(base64.encode(key)));
            Ok(())
        }
        _ => Err(PluginFailure::BadAnswer(
            command,
            "its ExecCredential holds neither a token nor a client certificate and key".into(),
        )),
    }
}

/// Whether a person may be answering the plugin: its mode allows it and stdin is a terminal.
fn attended(exec: &ExecConfig) -> bool {
    exec.interactive_mode != Some(ExecInteractiveMode::Never) && std::io::stdin().is_terminal()
}

async fn run(exec: &ExecConfig) -> Result<Status, PluginFailure> {
    let command = exec.command.clone().unwrap_or_default();
    let attended = attended(exec);
    let mut cmd = tokio::process::Command::new(&command);
    cmd.args(exec.args.iter().flatten())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    for pair in exec.env.iter().flatten() {
        if let (Some(name), Some(value)) = (pair.get("name"), pair.get("value")) {
            cmd.env(name, value);
        }
    }
    if attended {
        cmd.stdin(Stdio::inherit()).stderr(Stdio::inherit());
    } else {
        cmd.stdin(Stdio::null()).stderr(Stdio::piped());
    }
    let mut spec = serde_json::json!({"interactive": attended});
    if exec.provide_cluster_info
        && let Some(cluster) = &exec.cluster
        && let Ok(cluster) = serde_json::to_value(cluster)
    {
        spec["cluster"] = cluster;
    }
    let info = serde_json::json!({
        "apiVersion": exec.api_version.as_deref().unwrap_or("client.authentication.k8s.io/v1"),
        "kind": "ExecCredential",
        "spec": spec,
    });
    cmd.env("KUBERNETES_EXEC_INFO", info.to_string());
    for name in exec.drop_env.iter().flatten() {
        cmd.env_remove(name);
    }
    let mut child = cmd
        .spawn()
        .map_err(|err| PluginFailure::Start(command.clone(), err))?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let answered = async move {
        let (stdout, stderr) = tokio::join!(read_up_to(stdout), read_up_to(stderr));
        let status = child.wait().await;
        (status, stdout, stderr)
    };
    let bound = if attended {
        ATTENDED_BOUND
    } else {
        UNATTENDED_BOUND
    };
    // Dropping the unfinished wait kills the plugin (kill_on_drop).
    let (status, stdout, stderr) = tokio::time::timeout(bound, answered)
        .await
        .map_err(|_| PluginFailure::Hung(command.clone(), bound))?;
    let status = status.map_err(|err| PluginFailure::Start(command.clone(), err))?;
    if !status.success() {
        return Err(PluginFailure::Failed(
            status,
            String::from_utf8_lossy(&stderr).trim().to_string(),
        ));
    }
    let answer: ExecCredential = serde_json::from_slice(&stdout).map_err(|err| {
        PluginFailure::BadAnswer(
            command.clone(),
            format!("its answer is not an ExecCredential ({err})"),
        )
    })?;
    answer
        .status
        .ok_or_else(|| PluginFailure::BadAnswer(command, "its ExecCredential has no status".into()))
}

async fn read_up_to(stream: Option<impl tokio::io::AsyncRead + Unpin>) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Some(stream) = stream {
        let _ = stream.take(OUTPUT_LIMIT).read_to_end(&mut bytes).await;
    }
    bytes
}
