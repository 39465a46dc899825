//! What a push did, as the one result line on stdout (or one JSON object) and a summary on stderr.

use serde::Serialize;

use crate::cluster::network::Network;
use crate::delivery::push::pipeline::upload::Outcome;
use crate::image::digest::Digest;
use crate::plumbing::error::Result;
use crate::plumbing::output::OutputFormat;
use crate::plumbing::output::Printer;

/// Blobs and bytes moved or found already there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Transfer {
    pub blobs_pushed: u32,
    pub blobs_skipped: u32,
    pub bytes_pushed: u64,
    pub bytes_skipped: u64,
}

impl Transfer {
    pub(crate) fn count(&mut self, outcome: Outcome, size: u64) {
        match outcome {
            Outcome::Pushed => {
                self.blobs_pushed += 1;
                self.bytes_pushed += size;
            }
            Outcome::AlreadyThere | Outcome::Mounted => {
                self.blobs_skipped += 1;
                self.bytes_skipped += size;
            }
        }
    }
}

/// How the image reached the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Method {
    Registry,
    NodeLoad,
    /// Tagged in the engine whose image store the nodes use: nothing moved.
    EngineStore,
}

/// The result of a push, as `-o json` prints it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PushReport {
    /// What a pod spec uses: the runtime's view, pinned (registry) or content-tagged (node-load).
    #[serde(rename = "ref")]
    pub reference: String,
    /// The same image on the host it was pushed to; null after a node-load, and where that host
    /// lives only as long as the run (a loopback port through the API server).
    pub push_ref: Option<String>,
    /// As pods reach it over the cluster network, when the cluster advertises that.
    pub cluster_network_ref: Option<String>,
    /// The manifest (or index) digest the ref names.
    pub digest: Digest,
    pub repository: String,
    pub tag: String,
    pub method: Method,
    /// Where the push ran from: `host` pushes to the advertised host, `cluster` to
    /// hostFromClusterNetwork, `tunnel` through the API server; null after a node-load.
    pub network: Option<Network>,
    pub platforms: Vec<String>,
    #[serde(flatten)]
    pub transfer: Transfer,
}

impl PushReport {
    /// stdout: the ref alone, or the JSON object. stderr (terminal or -v): a one-line summary.
    pub(crate) fn print(
        &self,
        format: OutputFormat,
        printer: &Printer,
        seconds: f64,
    ) -> Result<()> {
        let t = &self.transfer;
        let summary = match self.method {
            Method::Registry => format!(
                "pushed {} ({}), {} already there, in {seconds:.1}s",
                blobs(t.blobs_pushed),
                human_bytes(t.bytes_pushed),
                blobs(t.blobs_skipped),
            ),
            Method::NodeLoad => format!("loaded into the nodes in {seconds:.1}s"),
            Method::EngineStore => {
                format!("tagged in the engine the nodes run on, nothing moved, in {seconds:.1}s")
            }
        };
        printer.status(&summary);
        match format {
            OutputFormat::Text => printer.result(&self.reference),
            OutputFormat::Json => printer.result(
                &serde_json::to_string_pretty(self)
                    .expect("a report of strings and numbers serialises"),
            ),
        }
    }
}

fn blobs(count: u32) -> String {
    match count {
        1 => "1 blob".to_string(),
        n => format!("{n} blobs"),
    }
}

pub(super) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes_uses_decimal_units() {
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(1_500), "1.5 KB");
        assert_eq!(human_bytes(312_400_000), "312.4 MB");
    }

    #[test]
    fn transfer_counts_pushed_and_skipped_apart() {
        let mut t = Transfer::default();
        t.count(Outcome::Pushed, 10);
        t.count(Outcome::AlreadyThere, 5);
        t.count(Outcome::Pushed, 1);
        assert_eq!(
            (
                t.blobs_pushed,
                t.bytes_pushed,
                t.blobs_skipped,
                t.bytes_skipped
            ),
            (2, 11, 1, 5)
        );
    }
}
