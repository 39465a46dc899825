//! Waiting for one workload's rollout: its status read as `kubectl rollout status` reads it, one
//! line per change, until done or `--timeout`; meanwhile its new pods (those running the ref)
//! watched: an image that does not pull stops the wait with what `why` says, a crash loop with
//! the previous run's last log lines and how it ended, a pod with no node is said with the
//! scheduler's message.

use std::time::{Duration, Instant};

use super::status::{Status, status};
use super::{Ended, Outcome, Rollouts, Wanted};
use crate::cluster::client::{Crash, Lookup, RolloutPod};
use crate::commands::why;
use crate::error::{Error, ExitCode, Result};
use crate::limits::seconds_text;

/// Between two reads of the workload and its pods.
const POLL: Duration = Duration::from_millis(100);
/// Lines of a crashed container's previous log shown.
const LOG_LINES: i64 = 20;

pub(super) struct Watch<'a> {
    pub rollouts: &'a Rollouts<'a>,
    pub wanted: &'a Wanted,
    pub selector: &'a str,
    pub containers: &'a [String],
    pub reference: &'a str,
}

/// What stopped the wait early.
struct Stop {
    status: Ended,
    pod: Option<String>,
    why: Option<serde_json::Value>,
    log: Vec<String>,
    error: Error,
}

impl Watch<'_> {
    pub(super) async fn until_done(&self) -> Outcome {
        let started = Instant::now();
        let outcome = |status, message: String, stop: Option<Stop>| {
            let (pod, why, log, error) = match stop {
                Some(stop) => (stop.pod, stop.why, stop.log, Some(stop.error)),
                None => (None, None, Vec::new(), None),
            };
            Outcome {
                workload: self.wanted.label(),
                namespace: self.rollouts.namespace.clone(),
                containers: Vec::new(),
                patched: true,
                status,
                message,
                pod,
                why,
                log,
                seconds: started.elapsed().as_secs_f64(),
                error,
            }
        };
        match self.wait(started).await {
            Ok(done) => {
                let said = format!(
                    "{}: {done} in {:.1}s",
                    self.wanted.label(),
                    started.elapsed().as_secs_f64()
                );
                self.rollouts.setting.printer.note(&said);
                outcome(Ended::RolledOut, done, None)
            }
            Err(stop) => {
                let message = stop.error.message().to_string();
                outcome(stop.status, message, Some(stop))
            }
        }
    }

    async fn wait(&self, started: Instant) -> std::result::Result<String, Stop> {
        let printer = self.rollouts.setting.printer;
        let timeout = self.rollouts.setting.timeout;
        let mut said = String::new();
        let mut unscheduled: Option<(String, String)> = None;
        loop {
            let now = self
                .status()
                .await
                .map_err(|error| failed(Ended::Failed, error))?;
            let line = match now {
                Status::Done(done) => return Ok(done),
                Status::Failed(why) => {
                    return Err(failed(
                        Ended::Failed,
                        Error::new(ExitCode::Failure, format!("{}: {why}", self.wanted.label())),
                    ));
                }
                Status::Waiting(line) => line,
            };
            if line != said {
                printer.note(&format!("{}: {line}", self.wanted.label()));
                said = line;
            }
            for pod in self
                .new_pods()
                .await
                .map_err(|error| failed(Ended::Failed, error))?
            {
                if pod.facts.failing() {
                    return Err(self.pull_failed(pod).await);
                }
                if let Some(crash) = pod.crashing.first() {
                    return Err(self.crashed(&pod, crash).await);
                }
                if let Some(message) = &pod.facts.unscheduled
                    && unscheduled.is_none()
                {
                    printer.note(&format!(
                        "{}: pod {} is not scheduled: {message}",
                        self.wanted.label(),
                        pod.facts.name
                    ));
                    unscheduled = Some((pod.facts.name.clone(), message.clone()));
                }
            }
            if started.elapsed() >= timeout {
                return Err(self.timed_out(&said, unscheduled));
            }
            tokio::time::sleep(POLL.min(timeout.saturating_sub(started.elapsed()))).await;
        }
    }

    async fn status(&self) -> Result<Status> {
        let rollouts = self.rollouts;
        let wanted = self.wanted;
        match rollouts
            .cluster()?
            .workload(wanted.kind, &rollouts.namespace, &wanted.name)
            .await?
        {
            Lookup::Found(facts) => Ok(status(wanted.kind, &wanted.name, &facts.object)),
            Lookup::NotFound => Err(Error::new(
                ExitCode::Cluster,
                format!(
                    "{} {}/{} was deleted during its rollout",
                    wanted.kind.singular(),
                    rollouts.namespace,
                    wanted.name
                ),
            )),
            Lookup::Forbidden => {
                Err(rollouts.not_allowed("get", &format!("{}.apps", wanted.kind.plural())))
            }
        }
    }

    /// The workload's pods whose set containers run the ref.
    async fn new_pods(&self) -> Result<Vec<RolloutPod>> {
        let rollouts = self.rollouts;
        let pods = match rollouts
            .cluster()?
            .rollout_pods(&rollouts.namespace, self.selector)
            .await?
        {
            Lookup::Found(pods) => pods,
            Lookup::NotFound => Vec::new(),
            Lookup::Forbidden => return Err(rollouts.not_allowed("list", "pods")),
        };
        Ok(pods
            .into_iter()
            .filter(|pod| {
                self.containers.iter().all(|name| {
                    pod.facts
                        .containers
                        .iter()
                        .any(|c| &c.name == name && c.image == self.reference)
                })
            })
            .collect())
    }

    /// `why` on the pod: its text on stderr, its exit code.
    async fn pull_failed(&self, pod: RolloutPod) -> Stop {
        let rollouts = self.rollouts;
        let setting = &rollouts.setting;
        let name = pod.facts.name.clone();
        let explained = match rollouts.cluster() {
            Ok(cluster) => {
                why::explain(
                    &rollouts.discovered,
                    cluster,
                    pod.facts,
                    setting.access,
                    setting.settings,
                    setting.printer,
                )
                .await
            }
            Err(err) => Err(err),
        };
        let headline = format!(
            "{}: the new pod {name} cannot pull its image",
            self.wanted.label()
        );
        match explained {
            Ok(explained) => {
                for line in explained.text.lines() {
                    setting.printer.note(line);
                }
                let error = explained
                    .verdict
                    .unwrap_or_else(|| Error::new(ExitCode::Failure, headline.clone()));
                Stop {
                    status: Ended::ImagePull,
                    pod: Some(name),
                    why: Some(explained.json),
                    log: Vec::new(),
                    error: Error::new(
                        error.exit_code(),
                        format!("{headline}: {}", error.message()),
                    ),
                }
            }
            Err(error) => Stop {
                pod: Some(name),
                ..failed(Ended::ImagePull, error)
            },
        }
    }

    /// The previous run's last lines and how it ended.
    async fn crashed(&self, pod: &RolloutPod, crash: &Crash) -> Stop {
        let rollouts = self.rollouts;
        let printer = rollouts.setting.printer;
        let name = &pod.facts.name;
        let log = match rollouts.cluster() {
            Ok(cluster) => {
                cluster
                    .previous_log(&rollouts.namespace, name, &crash.container, LOG_LINES)
                    .await
            }
            Err(err) => Err(err),
        };
        let log = match log {
            Ok(Lookup::Found(text)) => text,
            Ok(Lookup::NotFound) => String::new(),
            Ok(Lookup::Forbidden) => {
                return Stop {
                    pod: Some(name.clone()),
                    ..failed(Ended::CrashLoop, rollouts.not_allowed("get", "pods/log"))
                };
            }
            Err(error) => {
                return Stop {
                    pod: Some(name.clone()),
                    ..failed(Ended::CrashLoop, error)
                };
            }
        };
        let lines: Vec<String> = log.lines().map(str::to_string).collect();
        let ended = format!("{} {}", crash.reason, crash.exit_code);
        printer.note(&format!(
            "{}: container {} of the new pod {name} crashes ({ended}, restarted {} times); its previous run's last lines:",
            self.wanted.label(),
            crash.container,
            crash.restarts
        ));
        for line in &lines {
            printer.note(&format!("    {line}"));
        }
        let error = Error::new(
            ExitCode::Failure,
            format!(
                "{}: the new pod {name} crash-loops: container {} ended {ended}",
                self.wanted.label(),
                crash.container
            ),
        )
        .with_hint(format!(
            "`kubectl logs {name} -c {} --previous` shows its whole log",
            crash.container
        ));
        Stop {
            status: Ended::CrashLoop,
            pod: Some(name.clone()),
            why: None,
            log: lines,
            error,
        }
    }

    fn timed_out(&self, said: &str, unscheduled: Option<(String, String)>) -> Stop {
        let timeout = seconds_text(self.rollouts.setting.timeout);
        let mut error = Error::new(
            ExitCode::Failure,
            format!(
                "{}: the rollout did not finish in {timeout}: {said}",
                self.wanted.label()
            ),
        );
        let pod = unscheduled.as_ref().map(|(pod, _)| pod.clone());
        if let Some((pod, message)) = unscheduled {
            error = error.with_hint(format!("the new pod {pod} was never scheduled: {message}"));
        } else {
            error = error.with_hint(format!(
                "`kubectl rollout status {} -n {}` goes on waiting; --timeout gives it longer",
                self.wanted.label(),
                self.rollouts.namespace
            ));
        }
        Stop {
            status: Ended::TimedOut,
            pod,
            why: None,
            log: Vec::new(),
            error,
        }
    }
}

fn failed(status: Ended, error: Error) -> Stop {
    Stop {
        status,
        pod: None,
        why: None,
        log: Vec::new(),
        error,
    }
}
