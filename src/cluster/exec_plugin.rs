//! A kubeconfig's exec credential plugin (client.authentication.k8s.io), run by us within a
//! bound and killed when it outlasts it (kube's own run waits forever), its answer handed to
//! the API client as a token or a client certificate.

use std::io::IsTerminal;
use std::time::Duration;

use base64::Engine as _;
use kube::config::{AuthInfo, ExecConfig, ExecInteractiveMode};
use secrecy::SecretString;
use serde::Deserialize;

use crate::plumbing::process::{Argv, Bound, Out, ProcessError, Run, Stdin};

/// How long a plugin that cannot be talking to a person may take: as long as an API read.
pub const UNATTENDED_BOUND: Duration = Duration::from_secs(15);
/// How long a plugin that may be waiting for a person (a login in a browser, a prompt at this
/// terminal) may take.
pub const ATTENDED_BOUND: Duration = Duration::from_secs(300);

/// The most of a plugin's stdout or stderr we read: an ExecCredential is a few KiB.
const OUTPUT_LIMIT: usize = 1 << 20;

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
pub(crate) struct ExecCredential {
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
    let argv = Argv::of(&command, exec.args.iter().flatten());
    let bound = if attended {
        ATTENDED_BOUND
    } else {
        UNATTENDED_BOUND
    };
    let mut run = Run::new(&argv, Bound::Within(bound)).stdout(Out::Keep { cap: OUTPUT_LIMIT });
    for pair in exec.env.iter().flatten() {
        if let (Some(name), Some(value)) = (pair.get("name"), pair.get("value")) {
            run = run.env(name, value);
        }
    }
    run = if attended {
        run.stdin(Stdin::Inherit).stderr(Out::Inherit)
    } else {
        run.stdin(Stdin::Null)
            .stderr(Out::Keep { cap: OUTPUT_LIMIT })
    };
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
    run = run.env("KUBERNETES_EXEC_INFO", info.to_string());
    for name in exec.drop_env.iter().flatten() {
        run = run.env_remove(name);
    }
    let output = run.output().await.map_err(|err| match err {
        ProcessError::NotFound { source, .. } | ProcessError::Start { source, .. } => {
            PluginFailure::Start(command.clone(), source)
        }
        ProcessError::TimedOut { .. } | ProcessError::LeftOpen { .. } => {
            PluginFailure::Hung(command.clone(), bound)
        }
        err => PluginFailure::Start(command.clone(), std::io::Error::other(err)),
    })?;
    if !output.status.success() {
        return Err(PluginFailure::Failed(
            output.status,
            output.stderr_text().trim().to_string(),
        ));
    }
    let answer = parse_answer(&output.stdout)
        .map_err(|why| PluginFailure::BadAnswer(command.clone(), why))?;
    answer
        .status
        .ok_or_else(|| PluginFailure::BadAnswer(command, "its ExecCredential has no status".into()))
}

/// The plugin's answer: JSON, or YAML, as client-go reads it. A broken answer is told by what
/// JSON makes of it.
pub(crate) fn parse_answer(stdout: &[u8]) -> Result<ExecCredential, String> {
    let json = match serde_json::from_slice(stdout) {
        Ok(answer) => return Ok(answer),
        Err(err) => err,
    };
    let not_one = || format!("its answer is not an ExecCredential ({json})");
    let text = std::str::from_utf8(stdout).map_err(|_| not_one())?;
    if text.trim().is_empty() {
        return Err(not_one());
    }
    // Into JSON's values first, as client-go does (sigs.k8s.io/yaml): `token: 5` is a number
    // there, not a string.
    let options = serde_saphyr::options! { with_snippet: false };
    let value: serde_json::Value =
        serde_saphyr::from_str_with_options(text, options).map_err(|_| not_one())?;
    serde_json::from_value(value).map_err(|_| not_one())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(stdout: &str) -> Result<Option<String>, String> {
        parse_answer(stdout.as_bytes()).map(|answer| answer.status.and_then(|s| s.token))
    }

    #[test]
    fn the_answer_is_read_as_json_or_yaml() {
        let json = r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t1"}}"#;
        assert_eq!(token(json), Ok(Some("t1".into())));
        let yaml = "apiVersion: client.authentication.k8s.io/v1\nkind: ExecCredential\nstatus:\n  token: t2\n  expirationTimestamp: 2030-01-01T00:00:00Z\n";
        assert_eq!(token(yaml), Ok(Some("t2".into())));
        let yaml =
            "---\nkind: ExecCredential\nstatus: {clientCertificateData: c, clientKeyData: k}\n";
        let status = parse_answer(yaml.as_bytes()).unwrap().status.unwrap();
        assert_eq!(
            (status.client_certificate_data, status.client_key_data),
            (Some("c".into()), Some("k".into()))
        );
    }

    #[test]
    fn a_broken_answer_is_told_by_what_json_makes_of_it() {
        for broken in [
            "",
            "  \n",
            "session expired",
            "status: [1, 2",
            "{\"status\": {\"token\": 5}}",
        ] {
            let err = token(broken).unwrap_err();
            assert!(
                err.starts_with("its answer is not an ExecCredential ("),
                "{broken:?}: {err}"
            );
        }
    }
}
