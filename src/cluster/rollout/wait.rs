//! Waiting for one workload's rollout as `kubectl rollout status` waits: the workload and its
//! pods listed then watched (or, where watch is not allowed, read once a second), kubectl's
//! rules applied to each new state of the workload, never before the controller observed the
//! PATCH's generation; meanwhile the new pods (those whose set containers run the ref)
//! looked at: a pull that fails or a crash loop ends the wait with the facts, a pod no node
//! takes is said once. A template of our generation or later whose set containers no longer
//! run the ref (another writer set its own image) ends it too: no rollout of ours can follow.
//! Bounded by the timeout. What it found is plain data for the caller.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::stream::{BoxStream, StreamExt};

use super::api::{Crash, RolloutApi, RolloutPod};
use super::replaced::{Replaced, replaced};
use super::rules::{Status, status};
use super::workload::{Workload, WorkloadKind};
use crate::cluster::client::{Change, Cluster, Lookup, PodFacts};
use crate::plumbing::error::Result;
use crate::plumbing::output::Printer;

/// Between two reads where watch is not allowed.
const POLL: Duration = Duration::from_secs(1);
/// Lines of a crashed container's previous log read.
const LOG_LINES: i64 = 20;

/// The workload waited for, and what tells its new pods.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    pub kind: WorkloadKind,
    pub namespace: &'a str,
    pub name: &'a str,
    /// `app=web`: its pods.
    pub selector: &'a str,
    /// The containers set: a pod whose containers of these names all run `reference` is new.
    pub containers: &'a [String],
    pub reference: &'a str,
    /// The generation the PATCH answered: the controller must observe at least this one.
    pub generation: i64,
}

/// How to follow it.
#[derive(Debug, Clone, Copy)]
pub struct Follow {
    pub timeout: Duration,
    /// Watches are allowed; else one read a second.
    pub watch: bool,
}

/// What the wait saw on its way, for the caller to say.
#[derive(Debug, Clone, Copy)]
enum Seen<'a> {
    /// kubectl's words for what the rollout waits for now (said when they change).
    Status(&'a str),
    /// A new pod no node takes: the scheduler's message (said once).
    Unscheduled { pod: &'a str, message: &'a str },
    /// A watch or read failed and is tried again (for `-v`).
    Trouble(&'a str),
}

/// Where the wait says what it sees as it goes, each line led by the workload's `label`:
/// kubectl's words when they change and a new pod no node takes, on stderr; a watch or read
/// tried again, with `-v`.
pub struct Telling<'a> {
    pub printer: &'a Printer,
    pub label: &'a str,
}

impl Telling<'_> {
    fn seen(&self, seen: Seen<'_>) {
        let (printer, label) = (self.printer, self.label);
        match seen {
            Seen::Status(line) => printer.note(&format!("{label}: {line}")),
            Seen::Unscheduled { pod, message } => {
                printer.note(&format!("{label}: pod {pod} is not scheduled: {message}"));
            }
            Seen::Trouble(trouble) => printer.debug(&format!("{label}: {trouble}")),
        }
    }
}

/// How the wait ended.
#[derive(Debug, Clone)]
pub enum Ended {
    /// kubectl's words for a finished rollout.
    Done(String),
    /// It will not finish by waiting (a progress deadline, an OnDelete strategy): kubectl's
    /// words, and the pods as last seen.
    Failed { said: String, pods: Vec<RolloutPod> },
    /// A paused Deployment.
    Paused(String),
    /// The workload was deleted.
    Gone,
    /// Another writer set its own image in containers we set: who, what, when.
    Replaced(Vec<Replaced>),
    /// A new pod cannot pull its image: the pod as `why` reads it.
    PullFailed(PodFacts),
    /// A container of a new pod crash-loops: how its last run ended and that run's log.
    CrashLoop {
        pod: String,
        crash: Crash,
        log: Lookup<String>,
    },
    /// The time ran out: kubectl's last words of what it waited for, a new pod no node took,
    /// and the pods as last seen.
    TimedOut {
        said: String,
        unscheduled: Option<(String, String)>,
        pods: Vec<RolloutPod>,
    },
}

/// Waits for `target` within `follow.timeout`, saying what it sees as it goes (`telling`).
pub async fn wait(
    cluster: &Cluster,
    target: &Target<'_>,
    follow: Follow,
    telling: &Telling<'_>,
) -> Result<Ended> {
    let deadline = tokio::time::Instant::now() + follow.timeout;
    let (mut workloads, mut pods) = if follow.watch {
        followed(cluster, target)
    } else {
        (poll_workload(cluster, target), poll_pods(cluster, target))
    };
    let mut known = Known::default();
    // Both streams are endless (the watcher reopens and relists; a poll reads again): the
    // deadline is what ends the loop when nothing else does.
    loop {
        let news = tokio::select! {
            change = workloads.next() => known.workload_changed(change),
            change = pods.next() => known.pods_changed(change),
            () = tokio::time::sleep_until(deadline) => return Ok(known.timed_out()),
        };
        match news {
            News::Changed => {}
            News::Ended(ended) => return Ok(ended),
            News::Trouble(trouble) => {
                telling.seen(Seen::Trouble(&trouble));
                continue;
            }
            News::Forbidden(refused) => {
                (workloads, pods) = polled(cluster, target, &refused, telling);
                continue;
            }
        }
        if let Some(ended) = known.judged(target, telling) {
            return Ok(ended);
        }
        if let Some(ended) = known.new_pods(cluster, target, telling).await? {
            return Ok(ended);
        }
    }
}

/// The workload and its pods, listed then watched.
fn followed<'a>(
    cluster: &Cluster,
    target: &Target<'_>,
) -> (
    BoxStream<'a, Change<Workload>>,
    BoxStream<'a, Change<RolloutPod>>,
) {
    let api = RolloutApi::new(cluster, target.namespace);
    (
        api.follow_workload(target.kind, target.name),
        api.follow_pods(target.selector),
    )
}

/// What one change of a stream means for the wait.
enum News {
    /// What the wait knows changed: judge again.
    Changed,
    /// The workload is gone.
    Ended(Ended),
    /// A watch or read failed and is tried again.
    Trouble(String),
    /// The API server refused the watch: read once a second instead.
    Forbidden(String),
}

/// What the wait knows so far: the workload and its pods as last seen, kubectl's last words of
/// what it waits for, and the first new pod no node took.
#[derive(Default)]
struct Known {
    workload: Option<Workload>,
    listed: BTreeMap<String, RolloutPod>,
    said: String,
    unscheduled: Option<(String, String)>,
}

impl Known {
    fn workload_changed(&mut self, change: Option<Change<Workload>>) -> News {
        match change {
            Some(Change::All(list)) => match list.into_iter().next() {
                Some(found) => self.workload = Some(found),
                None => return News::Ended(Ended::Gone),
            },
            Some(Change::Applied(found)) => self.workload = Some(found),
            Some(Change::Deleted(_)) => return News::Ended(Ended::Gone),
            Some(Change::Trouble(trouble)) => return News::Trouble(trouble),
            Some(Change::Forbidden(refused)) => return News::Forbidden(refused),
            None => {}
        }
        News::Changed
    }

    fn pods_changed(&mut self, change: Option<Change<RolloutPod>>) -> News {
        match change {
            Some(Change::All(list)) => {
                self.listed = list
                    .into_iter()
                    .map(|pod| (pod.facts.name.clone(), pod))
                    .collect();
            }
            Some(Change::Applied(pod)) => {
                self.listed.insert(pod.facts.name.clone(), pod);
            }
            Some(Change::Deleted(pod)) => {
                self.listed.remove(&pod.facts.name);
            }
            Some(Change::Trouble(trouble)) => return News::Trouble(trouble),
            Some(Change::Forbidden(refused)) => return News::Forbidden(refused),
            None => {}
        }
        News::Changed
    }

    /// kubectl's rules on the workload as last seen; a failure carries the pods as last seen.
    fn judged(&mut self, target: &Target<'_>, telling: &Telling<'_>) -> Option<Ended> {
        let ended = judge(self.workload.as_ref()?, target, &mut self.said, telling)?;
        Some(match ended {
            Ended::Failed { said, .. } => Ended::Failed {
                said,
                pods: std::mem::take(&mut self.listed).into_values().collect(),
            },
            ended => ended,
        })
    }

    /// The new pods looked at: a failed pull or a crash loop ends the wait (with the crashed
    /// container's previous log); the first new pod no node takes is said once.
    async fn new_pods(
        &mut self,
        cluster: &Cluster,
        target: &Target<'_>,
        telling: &Telling<'_>,
    ) -> Result<Option<Ended>> {
        for pod in self.listed.values().filter(|pod| is_new(pod, target)) {
            if pod.facts.failing() {
                return Ok(Some(Ended::PullFailed(pod.facts.clone())));
            }
            if let Some(crash) = pod.crashing.first() {
                let name = pod.facts.name.clone();
                let log = RolloutApi::new(cluster, target.namespace)
                    .previous_log(&name, &crash.container, LOG_LINES)
                    .await?;
                return Ok(Some(Ended::CrashLoop {
                    pod: name,
                    crash: crash.clone(),
                    log,
                }));
            }
            if let Some(message) = &pod.facts.unscheduled
                && self.unscheduled.is_none()
            {
                telling.seen(Seen::Unscheduled {
                    pod: &pod.facts.name,
                    message,
                });
                self.unscheduled = Some((pod.facts.name.clone(), message.clone()));
            }
        }
        Ok(None)
    }

    /// kubectl's last words, the new pod no node took, and the pods as last seen.
    fn timed_out(self) -> Ended {
        Ended::TimedOut {
            said: self.said,
            unscheduled: self.unscheduled,
            pods: self.listed.into_values().collect(),
        }
    }
}

/// kubectl's rules on the workload as it stands, after the check that its template still runs
/// our ref; `None` while it rolls (kubectl's words said when they change).
fn judge(
    workload: &Workload,
    target: &Target<'_>,
    said: &mut String,
    telling: &Telling<'_>,
) -> Option<Ended> {
    // An older generation is a stale read from before our patch, never a replacement.
    if workload.generation() >= target.generation {
        let others = replaced(workload, target.containers, target.reference);
        if !others.is_empty() {
            return Some(Ended::Replaced(others));
        }
    }
    match status(workload, target.generation) {
        Status::Done(done) => Some(Ended::Done(done)),
        Status::Failed(said) => Some(Ended::Failed {
            said,
            pods: Vec::new(),
        }),
        Status::Paused(paused) => Some(Ended::Paused(paused)),
        Status::Waiting(line) => {
            if line != *said {
                telling.seen(Seen::Status(&line));
                *said = line;
            }
            None
        }
    }
}

/// A pod whose set containers all run the ref.
pub(super) fn is_new(pod: &RolloutPod, target: &Target<'_>) -> bool {
    target.containers.iter().all(|name| {
        pod.facts
            .containers
            .iter()
            .any(|c| &c.name == name && c.image == target.reference)
    })
}

/// The reads once a second that replace watches the API server refused, said with `-v`.
fn polled<'a>(
    cluster: &'a Cluster,
    target: &'a Target<'a>,
    refused: &str,
    telling: &Telling<'_>,
) -> (
    BoxStream<'a, Change<Workload>>,
    BoxStream<'a, Change<RolloutPod>>,
) {
    telling.seen(Seen::Trouble(&format!(
        "{refused}; reading the workload and its pods once a second instead"
    )));
    (poll_workload(cluster, target), poll_pods(cluster, target))
}

/// The workload read at once, then once a second.
fn poll_workload<'a>(
    cluster: &'a Cluster,
    target: &'a Target<'a>,
) -> BoxStream<'a, Change<Workload>> {
    futures_util::stream::unfold(true, move |first| async move {
        if !first {
            tokio::time::sleep(POLL).await;
        }
        let change = match RolloutApi::new(cluster, target.namespace)
            .workload(target.kind, target.name)
            .await
        {
            Ok(Lookup::Found(found)) => Change::Applied(found),
            Ok(Lookup::NotFound) => Change::All(Vec::new()),
            Ok(Lookup::Forbidden) => Change::Trouble(format!(
                "reading {} {}/{} is forbidden; trying again",
                target.kind.singular(),
                target.namespace,
                target.name
            )),
            Err(error) => Change::Trouble(format!("{}; trying again", error.message())),
        };
        Some((change, false))
    })
    .boxed()
}

/// The pods listed at once, then once a second.
fn poll_pods<'a>(
    cluster: &'a Cluster,
    target: &'a Target<'a>,
) -> BoxStream<'a, Change<RolloutPod>> {
    futures_util::stream::unfold(true, move |first| async move {
        if !first {
            tokio::time::sleep(POLL).await;
        }
        let change = match RolloutApi::new(cluster, target.namespace)
            .rollout_pods(target.selector)
            .await
        {
            Ok(Lookup::Found(pods)) => Change::All(pods),
            Ok(Lookup::NotFound) => Change::All(Vec::new()),
            Ok(Lookup::Forbidden) => Change::Trouble(format!(
                "listing the pods {} in {} is forbidden; trying again",
                target.selector, target.namespace
            )),
            Err(error) => Change::Trouble(format!("{}; trying again", error.message())),
        };
        Some((change, false))
    })
    .boxed()
}
