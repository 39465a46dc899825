//! `push --rollout KIND/NAME[=CONTAINER]`: before the push, each workload read, the containers to
//! set chosen and the permissions asked (`cluster::rollout::access`; a refusal stops the push with
//! nothing sent); after it, the ref set as `kubectl set image` sets it (every workload's patch
//! tried as a dry run first, so none is patched half-way) and each rollout waited for in the
//! Kubernetes layer (`cluster::rollout::wait`), what it found said here (`settle`).

mod choose;
mod settle;

use std::time::Duration;

use serde::Serialize;

use crate::cli::RegistryAccessArgs;
use crate::cluster::client::{Cluster, Lookup};
use crate::cluster::discovery::Discovered;
use crate::cluster::rollout::{self, Access, Patched, RolloutApi, Workload, WorkloadKind};
use crate::cluster::session::Session;
use crate::delivery::push::{Landing, PushReport};
use crate::diagnosis;
use crate::plumbing::error::{Error, ExitCode, Result};
use crate::plumbing::interrupt;
use crate::plumbing::output::{Printer, paragraph};
use crate::settings::Settings;
use choose::Wanted;

/// A refusal before the push.
const NOTHING_SENT: &str = "nothing was pushed or patched";

/// What a round's rollouts need besides the workloads.
pub(crate) struct Setting<'a> {
    pub access: &'a RegistryAccessArgs,
    pub settings: &'a Settings,
    pub printer: &'a Printer,
    pub timeout: Duration,
}

/// The workloads of one round, read before its push.
pub(crate) struct Rollouts<'a> {
    session: &'a Session<'a>,
    discovered: &'a Discovered,
    /// The session's client: also when `--registry` named the registry and discovery asked nothing.
    cluster: Cluster,
    namespace: String,
    workloads: Vec<(Wanted, Workload)>,
    /// Watches on the workloads and pods are allowed (else they are read once a second).
    watch: bool,
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
    /// What keeps the pods from ready when the rollout did not finish: one per pod.
    pub not_ready: Vec<diagnosis::NotReady>,
    /// Another writer's image in a container we set: what, who, when (the first one).
    pub replaced_by: Option<diagnosis::ReplacedBy>,
    /// Each container we set that now runs another writer's image (`replaced_by` is the first).
    pub replacements: Vec<diagnosis::ReplacedBy>,
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
    /// A paused Deployment: patched, not rolled until resumed.
    Paused,
    TimedOut,
    Failed,
    /// Another writer replaced the pushed ref in the template.
    Replaced,
}

impl<'a> Rollouts<'a> {
    /// Parses `--rollout`s, reads each workload and asks whether these credentials may patch
    /// it and read its pods and their logs. Nothing is pushed yet.
    pub(crate) async fn read(
        texts: &[String],
        session: &'a Session<'a>,
        discovered: &'a Discovered,
        setting: Setting<'a>,
    ) -> Result<Self> {
        let wanted: Vec<Wanted> = texts
            .iter()
            .map(|text| choose::parse(text))
            .collect::<Result<_>>()?;
        interrupt::doing("reading the workloads", "nothing was pushed");
        let cluster = session.cluster().await?;
        let mut rollouts = Self {
            session,
            discovered,
            namespace: cluster.namespace().to_string(),
            cluster,
            workloads: Vec::new(),
            watch: true,
            setting,
        };
        // One round trip: the workloads and the permissions at once; a missing workload is said first.
        let kinds: Vec<WorkloadKind> = wanted.iter().map(|wanted| wanted.kind).collect();
        let read = futures_util::future::try_join_all(wanted.iter().map(|w| rollouts.read_one(w)));
        let (workloads, watch) = tokio::join!(read, rollouts.check_permissions(&kinds));
        rollouts.workloads = wanted.into_iter().zip(workloads?).collect();
        rollouts.watch = watch?;
        interrupt::doing("reading the image and the cluster", "nothing was pushed");
        Ok(rollouts)
    }

    fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// The workloads' objects in the namespace.
    fn api(&self) -> RolloutApi<'_> {
        RolloutApi::new(&self.cluster, &self.namespace)
    }

    async fn read_one(&self, wanted: &Wanted) -> Result<Workload> {
        let namespace = &self.namespace;
        let what = format!("{} {namespace}/{}", wanted.kind.singular(), wanted.name);
        match self.api().workload(wanted.kind, &wanted.name).await? {
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
                let resource = format!("{}.apps", wanted.kind.plural());
                Err(self.not_allowed("get", &resource, NOTHING_SENT))
            }
        }
    }

    /// Every permission the rollouts of `kinds` need, asked before the push
    /// (`cluster::rollout::access`, through the session: what it was granted is not asked
    /// again): a refusal stops the push. True when watches are allowed too; without them the
    /// wait reads once a second.
    async fn check_permissions(&self, kinds: &[WorkloadKind]) -> Result<bool> {
        match rollout::access(self.session, &self.namespace, kinds).await? {
            Access::Refused { verb, resource } => {
                Err(self.not_allowed(verb, &resource, NOTHING_SENT))
            }
            Access::Allowed { watch } => {
                if !watch {
                    self.setting.printer.debug(&format!(
                        "watching the workloads and their pods is not allowed in {}; the rollout is read once a second instead",
                        self.namespace
                    ));
                }
                Ok(watch)
            }
        }
    }

    /// A refusal, and how far the round had got (`so_far`): a permission granted earlier in a
    /// `--watch` can be taken away after the push.
    fn not_allowed(&self, verb: &str, resource: &str, so_far: &str) -> Error {
        let namespace = &self.namespace;
        Error::new(
            ExitCode::Cluster,
            format!("these credentials may not {verb} {resource} in namespace {namespace}; {so_far}"),
        )
        .with_hint(format!(
            "push --rollout needs get, list, watch and patch on the workload, get, list and watch on pods and get on pods/log in {namespace} (`kubectl auth can-i {verb} {resource} -n {namespace}`)"
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
        for (wanted, workload) in &self.workloads {
            let chosen = choose::containers(wanted, &self.namespace, workload, &landing)?;
            let patch: Vec<(String, String, bool)> = chosen
                .iter()
                .filter(|c| c.image != reference)
                .map(|c| (c.name.clone(), reference.to_string(), c.init))
                .collect();
            changes.push((wanted, workload, chosen, patch));
        }
        for (wanted, _, _, patch) in changes.iter().filter(|change| !change.3.is_empty()) {
            self.patch(wanted, patch, true).await?;
        }
        let mut patched = Vec::new();
        for (wanted, workload, chosen, patch) in &changes {
            let stored = match patch.is_empty() {
                true => None,
                false => Some(self.patch(wanted, patch, false).await?),
            };
            patched.push((*wanted, *workload, chosen, stored));
        }
        let waits = patched.iter().map(|(wanted, workload, chosen, stored)| {
            settle::Settle {
                rollouts: self,
                wanted,
                selector: workload.selector(),
                containers: chosen.iter().map(|c| c.name.clone()).collect(),
                reference,
            }
            .run(stored.as_ref())
        });
        Ok(futures_util::future::join_all(waits).await)
    }

    /// The patch, or its dry run; the object as the server stored it.
    async fn patch(
        &self,
        wanted: &Wanted,
        patch: &[(String, String, bool)],
        dry_run: bool,
    ) -> Result<Workload> {
        // The dry runs go first, for every workload: a refusal then leaves all unpatched.
        let so_far = match dry_run {
            true => "the image is pushed, and no workload was patched".to_string(),
            false => format!(
                "the image is pushed, and {} was not patched",
                wanted.label()
            ),
        };
        match self
            .api()
            .set_images(wanted.kind, &wanted.name, patch, dry_run)
            .await?
        {
            Patched::Stored(stored) => Ok(*stored),
            Patched::Refused(message) => {
                Err(self.refused_by_admission(wanted, patch, &message, &so_far))
            }
            Patched::NotFound => Err(Error::new(
                ExitCode::Cluster,
                format!(
                    "{} {}/{} was deleted during the push; {so_far}",
                    wanted.kind.singular(),
                    self.namespace,
                    wanted.name
                ),
            )),
            Patched::Forbidden => {
                self.session.forget_grants();
                let resource = format!("{}.apps", wanted.kind.plural());
                Err(self.not_allowed("patch", &resource, &so_far))
            }
        }
    }

    /// The cluster's admission refused the new image: its words, and the kubectl command that
    /// asks it the same.
    fn refused_by_admission(
        &self,
        wanted: &Wanted,
        patch: &[(String, String, bool)],
        message: &str,
        so_far: &str,
    ) -> Error {
        let label = wanted.label();
        let images: Vec<String> = patch
            .iter()
            .map(|(container, reference, _)| format!("{container}={reference}"))
            .collect();
        Error::new(
            ExitCode::Cluster,
            format!(
                "{label}: the cluster refused the new image: {}; {so_far}",
                paragraph(message)
            ),
        )
        .with_hint(format!(
            "a policy in the cluster's admission (a ValidatingAdmissionPolicy, or a webhook such as Kyverno's or Gatekeeper's) checks each change: its words above say what it allows; push where it allows (--tag), or change the policy. `kubectl set image {label} {} -n {} --dry-run=server` asks it the same",
            images.join(" "),
            self.namespace
        ))
    }
}
