//! `push --rollout KIND/NAME[=CONTAINER]`: before the push, each workload read, the containers
//! to set chosen and the permissions asked (a refusal stops the push with nothing sent); after
//! it, the ref set as `kubectl set image` sets it (every workload's patch tried as a dry run
//! first, so none is patched half-way) and the rollout waited for as `kubectl rollout status`
//! waits, watching the new pods.

mod choose;
mod status;
mod wait;

use std::time::Duration;

use serde::Serialize;

use crate::cli::RegistryAccessArgs;
use crate::cluster::ClusterOptions;
use crate::cluster::client::{Cluster, Lookup, TemplateContainer, WorkloadFacts};
use crate::cluster::discovery::{self, Discovered};
use crate::delivery::push::{Landing, PushReport};
use crate::error::{Error, ExitCode, Result};
use crate::output::Printer;
use crate::settings::Settings;
use choose::Wanted;

/// What a round's rollouts need besides the workloads.
pub(crate) struct Setting<'a> {
    pub access: &'a RegistryAccessArgs,
    pub settings: &'a Settings,
    pub printer: &'a Printer,
    pub timeout: Duration,
}

/// The workloads of one round, read before its push.
pub(crate) struct Rollouts<'a> {
    discovered: Discovered,
    connected: Option<Cluster>,
    namespace: String,
    workloads: Vec<(Wanted, WorkloadFacts)>,
    setting: Setting<'a>,
}

/// How one workload's rollout ended, as `-o json` reports it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Outcome {
    /// `deployment/web`
    pub workload: String,
    pub namespace: String,
    /// The containers set to the ref.
    pub containers: Vec<String>,
    /// False when they already ran it.
    pub patched: bool,
    pub status: Ended,
    /// kubectl's words for the last status, or what stopped the wait.
    pub message: String,
    /// The new pod the outcome is about (a failed pull, a crash loop, no node).
    pub pod: Option<String>,
    /// `why`'s report on that pod when its image does not pull.
    pub why: Option<serde_json::Value>,
    /// The last lines of the crashed container's previous log.
    pub log: Vec<String>,
    pub seconds: f64,
    #[serde(skip)]
    pub error: Option<Error>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Ended {
    RolledOut,
    Unchanged,
    ImagePull,
    CrashLoop,
    TimedOut,
    Failed,
}

impl<'a> Rollouts<'a> {
    /// Parses `--rollout`s, reads each workload and asks whether these credentials may patch
    /// it and read its pods and their logs. Nothing is pushed yet.
    pub(crate) async fn read(
        texts: &[String],
        cluster_args: &ClusterOptions,
        setting: Setting<'a>,
    ) -> Result<Self> {
        let wanted: Vec<Wanted> = texts
            .iter()
            .map(|text| choose::parse(text))
            .collect::<Result<_>>()?;
        let printer = setting.printer;
        let discovered = discovery::discover(cluster_args, setting.settings, printer).await?;
        let connected = match discovered.cluster {
            Some(_) => None,
            None => Some(Cluster::connect(cluster_args, setting.settings, printer).await?),
        };
        let mut rollouts = Self {
            discovered,
            connected,
            namespace: String::new(),
            workloads: Vec::new(),
            setting,
        };
        rollouts.namespace = rollouts.cluster()?.namespace().to_string();
        for wanted in wanted {
            let facts = rollouts.read_one(&wanted).await?;
            rollouts.workloads.push((wanted, facts));
        }
        rollouts.check_permissions().await?;
        Ok(rollouts)
    }

    fn cluster(&self) -> Result<&Cluster> {
        self.discovered
            .cluster
            .as_ref()
            .or(self.connected.as_ref())
            .ok_or_else(|| Error::new(ExitCode::Cluster, "no connection to the cluster"))
    }

    async fn read_one(&self, wanted: &Wanted) -> Result<WorkloadFacts> {
        let namespace = &self.namespace;
        let what = format!("{} {namespace}/{}", wanted.kind.singular(), wanted.name);
        match self
            .cluster()?
            .workload(wanted.kind, namespace, &wanted.name)
            .await?
        {
            Lookup::Found(facts) => Ok(facts),
            Lookup::NotFound => Err(Error::new(
                ExitCode::Cluster,
                format!("{what} not found; nothing was pushed"),
            )
            .with_hint(format!(
                "name the namespace with -n NAMESPACE; `kubectl get {} -n {namespace}` lists them",
                wanted.kind.plural()
            ))),
            Lookup::Forbidden => {
                Err(self.not_allowed("get", &format!("{}.apps", wanted.kind.plural())))
            }
        }
    }

    /// Every permission the rollout needs, asked before the push.
    async fn check_permissions(&self) -> Result<()> {
        let cluster = self.cluster()?;
        let mut asked: Vec<(&str, &str, String)> = vec![
            ("list", "", "pods".to_string()),
            ("get", "", "pods/log".to_string()),
        ];
        for (wanted, _) in &self.workloads {
            asked.push(("patch", "apps", wanted.kind.plural().to_string()));
        }
        for (verb, group, resource) in asked {
            if !cluster.may(verb, group, &resource, &self.namespace).await? {
                let named = if group.is_empty() {
                    resource
                } else {
                    format!("{resource}.{group}")
                };
                return Err(self.not_allowed(verb, &named));
            }
        }
        Ok(())
    }

    fn not_allowed(&self, verb: &str, resource: &str) -> Error {
        let namespace = &self.namespace;
        Error::new(
            ExitCode::Cluster,
            format!(
                "these credentials may not {verb} {resource} in namespace {namespace}; nothing was pushed or patched"
            ),
        )
        .with_hint(format!(
            "push --rollout needs get and patch on the workload, list on pods and get on pods/log in {namespace} (`kubectl auth can-i {verb} {resource} -n {namespace}`)"
        ))
    }

    /// The push's gate: each workload has the containers to set for where the image lands.
    pub(crate) fn check(&self, landing: Landing<'_>) -> Result<()> {
        for (wanted, facts) in &self.workloads {
            choose::containers(wanted, &self.namespace, facts, &landing)?;
        }
        Ok(())
    }

    /// Sets the pushed ref on every workload (dry runs first), then waits for each rollout.
    pub(crate) async fn apply(&self, report: &PushReport) -> Result<Vec<Outcome>> {
        let landing = Landing {
            registry: self.discovered.registry.as_ref(),
            repository: &report.repository,
        };
        let reference = report.reference.as_str();
        let mut changes = Vec::new();
        for (wanted, facts) in &self.workloads {
            let chosen = choose::containers(wanted, &self.namespace, facts, &landing)?;
            let patch: Vec<(String, String, bool)> = chosen
                .iter()
                .filter(|c| c.image != reference)
                .map(|c| (c.name.clone(), reference.to_string(), c.init))
                .collect();
            changes.push((wanted, facts, chosen, patch));
        }
        for dry_run in [true, false] {
            for (wanted, _, _, patch) in changes.iter().filter(|change| !change.3.is_empty()) {
                self.patch(wanted, patch, dry_run).await?;
            }
        }
        let waits = changes.iter().map(|(wanted, facts, chosen, patch)| {
            self.settle(wanted, facts, chosen, patch, reference)
        });
        Ok(futures_util::future::join_all(waits).await)
    }

    async fn patch(
        &self,
        wanted: &Wanted,
        patch: &[(String, String, bool)],
        dry_run: bool,
    ) -> Result<()> {
        let cluster = self.cluster()?;
        match cluster
            .set_images(wanted.kind, &self.namespace, &wanted.name, patch, dry_run)
            .await?
        {
            Lookup::Found(()) => Ok(()),
            Lookup::NotFound => Err(Error::new(
                ExitCode::Cluster,
                format!(
                    "{} {}/{} was deleted during the push; nothing was patched",
                    wanted.kind.singular(),
                    self.namespace,
                    wanted.name
                ),
            )),
            Lookup::Forbidden => {
                Err(self.not_allowed("patch", &format!("{}.apps", wanted.kind.plural())))
            }
        }
    }

    /// One workload after its patch: said unchanged, or waited for.
    async fn settle(
        &self,
        wanted: &Wanted,
        facts: &WorkloadFacts,
        chosen: &[TemplateContainer],
        patch: &[(String, String, bool)],
        reference: &str,
    ) -> Outcome {
        let containers: Vec<String> = chosen.iter().map(|c| c.name.clone()).collect();
        let printer = self.setting.printer;
        if patch.is_empty() {
            let message = format!(
                "{} already runs {reference} ({}); nothing patched",
                wanted.label(),
                containers.join(", ")
            );
            printer.note(&message);
            return Outcome {
                workload: wanted.label(),
                namespace: self.namespace.clone(),
                containers,
                patched: false,
                status: Ended::Unchanged,
                message,
                pod: None,
                why: None,
                log: Vec::new(),
                seconds: 0.0,
                error: None,
            };
        }
        let set: Vec<String> = containers
            .iter()
            .map(|c| format!("{c}={reference}"))
            .collect();
        printer.note(&format!("{}: set {}", wanted.label(), set.join(" ")));
        let watch = wait::Watch {
            rollouts: self,
            wanted,
            selector: &facts.selector,
            containers: &containers,
            reference,
        };
        let mut outcome = watch.until_done().await;
        outcome.containers = containers;
        outcome
    }
}
