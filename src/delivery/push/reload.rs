//! An engine's image the nodes already hold, known without exporting it: the record of what was
//! loaded (per kube context, name and engine image ID: the manifest the nodes got and the content
//! tag printed), confirmed by asking every node what it holds. Without that confirmation (a
//! product whose nodes cannot be asked, a node that does not answer), the image is loaded again.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::summary::{Method, PushReport, Transfer};
use crate::cluster::client::NodeFacts;
use crate::cluster::product::Product;
use crate::delivery::push::pipeline::record_file::RecordFile;
use crate::image::digest::Digest;
use crate::nodes::{self, NodeCluster, NodeSurvey};
use crate::plumbing::output::Printer;

const FILE_NAME: &str = "loaded-images-v1.json";
/// A load costs ~300 bytes; the oldest entries go past this.
const MAX_ENTRIES: usize = 1_000;

/// Which load a record is about: the cluster's context, the name loaded and the engine's ID.
pub(super) struct LoadKey<'a> {
    pub context: Option<&'a str>,
    pub name: &'a str,
    pub image_id: &'a str,
}

impl LoadKey<'_> {
    fn text(&self) -> String {
        format!(
            "{} {} {}",
            self.context.unwrap_or("-"),
            self.name,
            self.image_id
        )
    }
}

/// What a node-load printed, kept to print it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Loaded {
    reference: String,
    manifest: Digest,
    repository: String,
    tag: String,
    platforms: Vec<String>,
}

impl Loaded {
    fn report(self) -> PushReport {
        PushReport {
            reference: self.reference,
            push_ref: None,
            cluster_network_ref: None,
            digest: self.manifest,
            repository: self.repository,
            tag: self.tag,
            method: Method::NodeLoad,
            network: None,
            platforms: self.platforms,
            transfer: Transfer::default(),
        }
    }
}

/// The report of the load recorded under `key`, when every node of the cluster confirms it
/// still holds that manifest.
pub(super) async fn still_loaded(
    records: Option<&Path>,
    key: &LoadKey<'_>,
    product: &Product,
    nodes: &[NodeFacts],
    node_timeout: std::time::Duration,
    printer: &Printer,
) -> Option<PushReport> {
    let loaded = load(records).get(&key.text())?.clone();
    let cluster = NodeCluster::of(product, nodes)?.bounded(node_timeout);
    let surveyed = match nodes::survey(&cluster).await {
        Ok(surveyed) => surveyed,
        Err(why) => {
            printer.debug(&format!("cannot ask the nodes what they hold ({why})"));
            return None;
        }
    };
    let wanted = [&loaded.manifest];
    let all_hold = surveyed.iter().all(|node| match node {
        NodeSurvey::Known(holdings) => holdings.lacks(wanted).is_empty(),
        NodeSurvey::Unknown { .. } => false,
    });
    if !all_hold {
        printer.debug("a node lacks what was loaded before: loading again");
        return None;
    }
    printer.status(&format!(
        "every node holds {} already (image {}): not exported, not loaded again",
        loaded.reference, key.image_id
    ));
    Some(loaded.report())
}

/// Remembers a load of an engine's image; a failure to write only costs a later re-load.
pub(super) fn record(
    records: Option<&Path>,
    key: &LoadKey<'_>,
    report: &PushReport,
    printer: &Printer,
) {
    let mut file = load(records);
    file.record(
        key.text(),
        Loaded {
            reference: report.reference.clone(),
            manifest: report.digest.clone(),
            repository: report.repository.clone(),
            tag: report.tag.clone(),
            platforms: report.platforms.clone(),
        },
    );
    if let Err(err) = file.save() {
        printer.debug(&format!(
            "could not save the record of loaded images: {err}"
        ));
    }
}

/// The record in the settings' cache directory (merged under its lock when saved); no directory
/// means no record.
fn load(records: Option<&Path>) -> RecordFile<Loaded> {
    RecordFile::load(records.map(|dir| dir.join(FILE_NAME)), MAX_ENTRIES, |_| {
        true
    })
}
