//! One workload after its patch: said unchanged, said paused at once, or waited for in the
//! Kubernetes layer (`cluster::rollout::wait`) and what the wait found told: kubectl's words
//! as the status moves, `why`'s diagnosis of a new pod that cannot pull, a crash loop's
//! previous run, the scheduler's message for a pod no node takes, a ref another writer
//! replaced (who, from `diagnosis`), what was not reached at the timeout.

use std::time::Instant;

use super::{Ended, Outcome, Rollouts, Wanted};
use crate::cluster::client::{Lookup, PodFacts};
use crate::cluster::rollout::{self, Crash, Follow, RolloutPod, Target, Telling, Workload};
use crate::diagnosis;
use crate::plumbing::error::{Context, Error, ExitCode};
use crate::plumbing::limits::seconds_text;

pub(super) struct Settle<'a> {
    pub rollouts: &'a Rollouts<'a>,
    pub wanted: &'a Wanted,
    pub selector: String,
    pub containers: Vec<String>,
    pub reference: &'a str,
}

/// What the outcome says besides its status and message.
#[derive(Default)]
struct Found {
    pod: Option<String>,
    why: Option<serde_json::Value>,
    log: Vec<String>,
    replaced_by: Option<diagnosis::ReplacedBy>,
    replacements: Vec<diagnosis::ReplacedBy>,
    not_ready: Vec<diagnosis::NotReady>,
    error: Option<Error>,
}

impl Settle<'_> {
    /// `stored` is the workload as the patch left it; `None` when nothing needed patching.
    pub(super) async fn run(self, stored: Option<&Workload>) -> Outcome {
        let started = Instant::now();
        let Some(stored) = stored else {
            return self.unchanged(started);
        };
        self.say_set();
        if stored.paused() {
            return self.paused(started);
        }
        let target = self.target(stored.generation());
        match self.wait(&target).await {
            Ok(ended) => self.told(ended, &target, started).await,
            Err(error) => self.failed(Ended::Failed, error, started),
        }
    }

    /// Nothing to patch: the workload already runs the ref.
    fn unchanged(&self, started: Instant) -> Outcome {
        let message = format!(
            "{} already runs {} ({}); nothing patched",
            self.wanted.label(),
            self.reference,
            self.containers.join(", ")
        );
        self.rollouts.setting.printer.note(&message);
        self.outcome(Ended::Unchanged, message, Found::default(), started, false)
    }

    /// `deployment/web: set web=REF`.
    fn say_set(&self) {
        let set: Vec<String> = self
            .containers
            .iter()
            .map(|c| format!("{c}={}", self.reference))
            .collect();
        self.rollouts.setting.printer.note(&format!(
            "{}: set {}",
            self.wanted.label(),
            set.join(" ")
        ));
    }

    /// The workload waited for, at the generation the patch answered.
    fn target(&self, generation: i64) -> Target<'_> {
        Target {
            kind: self.wanted.kind,
            namespace: &self.rollouts.namespace,
            name: &self.wanted.name,
            selector: &self.selector,
            containers: &self.containers,
            reference: self.reference,
            generation,
        }
    }

    /// The wait in the Kubernetes layer, which says what it sees as it goes.
    async fn wait(&self, target: &Target<'_>) -> crate::plumbing::error::Result<rollout::Ended> {
        let printer = self.rollouts.setting.printer;
        let label = self.wanted.label();
        let follow = Follow {
            timeout: self.rollouts.setting.timeout,
            watch: self.rollouts.watch,
        };
        let telling = Telling {
            printer,
            label: &label,
        };
        rollout::wait(self.rollouts.cluster(), target, follow, &telling).await
    }

    /// How the wait ended, told: the outcome, and what is said on stderr.
    async fn told(&self, ended: rollout::Ended, target: &Target<'_>, started: Instant) -> Outcome {
        let label = self.wanted.label();
        match ended {
            rollout::Ended::Done(done) => {
                self.rollouts.setting.printer.note(&format!(
                    "{label}: {done} in {:.1}s",
                    started.elapsed().as_secs_f64()
                ));
                self.outcome(Ended::RolledOut, done, Found::default(), started, true)
            }
            rollout::Ended::Failed { said, pods } => {
                let error = Error::new(ExitCode::Failure, format!("{label}: {said}"));
                let not_ready = self.not_ready(target, &pods).await;
                let (error, not_ready) = with_reasons(error, not_ready);
                let mut outcome = self.failed(Ended::Failed, error, started);
                outcome.not_ready = not_ready;
                outcome
            }
            rollout::Ended::Paused(_) => self.paused(started),
            rollout::Ended::Gone => self.gone(started),
            rollout::Ended::Replaced(replaced) => self.replaced(&replaced, started),
            rollout::Ended::PullFailed(pod) => self.pull_failed(pod, started).await,
            rollout::Ended::CrashLoop { pod, crash, log } => {
                self.crashed(&pod, &crash, log, started)
            }
            rollout::Ended::TimedOut {
                said,
                unscheduled,
                pods,
            } => {
                let not_ready = self.not_ready(target, &pods).await;
                self.timed_out(&said, unscheduled, not_ready, started)
            }
        }
    }

    /// The workload was deleted while we waited.
    fn gone(&self, started: Instant) -> Outcome {
        let error = Error::new(
            ExitCode::Cluster,
            format!(
                "{} {}/{} was deleted during its rollout",
                self.wanted.kind.singular(),
                self.rollouts.namespace,
                self.wanted.name
            ),
        );
        self.failed(Ended::Failed, error, started)
    }

    /// Another writer set its own image: who, and what to do.
    fn replaced(&self, replaced: &[rollout::Replaced], started: Instant) -> Outcome {
        let label = self.wanted.label();
        let namespace = &self.rollouts.namespace;
        let found = Found {
            replaced_by: replaced.first().map(diagnosis::ReplacedBy::from),
            replacements: replaced.iter().map(diagnosis::ReplacedBy::from).collect(),
            error: Some(diagnosis::replaced_error(&label, namespace, replaced)),
            ..Found::default()
        };
        let message = found.error.as_ref().map(|e| e.message().to_string());
        let message = message.unwrap_or_default();
        self.outcome(Ended::Replaced, message, found, started, true)
    }

    fn outcome(
        &self,
        status: Ended,
        message: String,
        found: Found,
        started: Instant,
        patched: bool,
    ) -> Outcome {
        Outcome {
            workload: self.wanted.label(),
            namespace: self.rollouts.namespace.clone(),
            containers: self.containers.clone(),
            patched,
            status,
            message,
            pod: found.pod,
            why: found.why,
            log: found.log,
            replaced_by: found.replaced_by,
            replacements: found.replacements,
            not_ready: found.not_ready,
            seconds: started.elapsed().as_secs_f64(),
            error: found.error,
        }
    }

    fn failed(&self, status: Ended, error: Error, started: Instant) -> Outcome {
        let message = error.message().to_string();
        let found = Found {
            error: Some(error),
            ..Found::default()
        };
        self.outcome(status, message, found, started, true)
    }

    /// Patched, so that a resume rolls it; said at once, as waiting would change nothing.
    fn paused(&self, started: Instant) -> Outcome {
        let label = self.wanted.label();
        let error = Error::new(
            ExitCode::Failure,
            format!(
                "{label}: deployment {:?} is paused: the new template rolls out once it is resumed",
                self.wanted.name
            ),
        )
        .with_hint(format!(
            "`kubectl rollout resume {label} -n {}` resumes it",
            self.rollouts.namespace
        ));
        self.failed(Ended::Paused, error, started)
    }

    /// `why` on the pod: its text on stderr, its exit code.
    async fn pull_failed(&self, pod: PodFacts, started: Instant) -> Outcome {
        let rollouts = self.rollouts;
        let setting = &rollouts.setting;
        let name = pod.name.clone();
        let report = diagnosis::examine(
            rollouts.session,
            rollouts.discovered,
            rollouts.cluster(),
            pod,
            &setting.access.into(),
            setting.settings,
            setting.printer,
        )
        .await;
        let explained = report.and_then(|report| {
            let json = serde_json::to_value(&report)
                .context(ExitCode::Failure, || "writing why's report as JSON")?;
            Ok((report, json))
        });
        let headline = format!(
            "{}: the new pod {name} cannot pull its image",
            self.wanted.label()
        );
        let found = match explained {
            Ok((report, json)) => {
                for line in report.render().lines() {
                    setting.printer.note(line);
                }
                let error = report
                    .verdict()
                    .unwrap_or_else(|| Error::new(ExitCode::Failure, headline.clone()));
                Found {
                    pod: Some(name),
                    why: Some(json),
                    error: Some(Error::new(
                        error.exit_code(),
                        format!("{headline}: {}", error.message()),
                    )),
                    ..Found::default()
                }
            }
            Err(error) => Found {
                pod: Some(name),
                error: Some(error),
                ..Found::default()
            },
        };
        let message = found
            .error
            .as_ref()
            .map(|e| e.message().to_string())
            .unwrap_or_default();
        self.outcome(Ended::ImagePull, message, found, started, true)
    }

    /// The previous run's last lines and how it ended.
    fn crashed(&self, name: &str, crash: &Crash, log: Lookup<String>, started: Instant) -> Outcome {
        let printer = self.rollouts.setting.printer;
        let label = self.wanted.label();
        let log = match log {
            Lookup::Found(text) => text,
            Lookup::NotFound => String::new(),
            Lookup::Forbidden => {
                self.rollouts.session.forget_grants();
                let so_far = format!("{label} is patched, and its new pod's log cannot be read");
                let error = self.rollouts.not_allowed("get", "pods/log", &so_far);
                let mut outcome = self.failed(Ended::CrashLoop, error, started);
                outcome.pod = Some(name.to_string());
                return outcome;
            }
        };
        let lines: Vec<String> = log.lines().map(str::to_string).collect();
        let ended = format!("{} {}", crash.reason, crash.exit_code);
        printer.note(&format!(
            "{label}: container {} of the new pod {name} crashes ({ended}, restarted {} times); its previous run's last lines:",
            crash.container, crash.restarts
        ));
        for line in &lines {
            printer.note(&format!("    {line}"));
        }
        let error = Error::new(
            ExitCode::Failure,
            format!(
                "{label}: the new pod {name} crash-loops: container {} ended {ended}",
                crash.container
            ),
        )
        .with_hint(format!(
            "`kubectl logs {name} -c {} --previous` shows its whole log",
            crash.container
        ));
        let found = Found {
            pod: Some(name.to_string()),
            log: lines,
            error: Some(error),
            ..Found::default()
        };
        let message = found
            .error
            .as_ref()
            .map(|e| e.message().to_string())
            .unwrap_or_default();
        self.outcome(Ended::CrashLoop, message, found, started, true)
    }

    /// What keeps the pods from ready; a read that fails is said with `-v` and leaves nothing.
    async fn not_ready(
        &self,
        target: &Target<'_>,
        pods: &[RolloutPod],
    ) -> Vec<diagnosis::NotReady> {
        let printer = self.rollouts.setting.printer;
        match rollout::stuck(self.rollouts.cluster(), target, pods).await {
            Ok(stuck) => stuck.iter().map(diagnosis::NotReady::from).collect(),
            Err(error) => {
                printer.debug(&format!(
                    "{}: what keeps its pods from ready could not be read: {}",
                    self.wanted.label(),
                    error.message()
                ));
                Vec::new()
            }
        }
    }

    /// kubectl's last words of what was not reached, and what keeps each pod from ready.
    fn timed_out(
        &self,
        said: &str,
        unscheduled: Option<(String, String)>,
        not_ready: Vec<diagnosis::NotReady>,
        started: Instant,
    ) -> Outcome {
        let timeout = seconds_text(self.rollouts.setting.timeout);
        let said = if said.is_empty() {
            "no status of it was read"
        } else {
            said
        };
        let error = Error::new(
            ExitCode::Failure,
            format!(
                "{}: the rollout did not finish in {timeout}: {said}",
                self.wanted.label()
            ),
        );
        let pod = unscheduled.as_ref().map(|(pod, _)| pod.clone());
        let (mut error, not_ready) = with_reasons(error, not_ready);
        if not_ready.is_empty() {
            error = error.with_hint(format!(
                "`kubectl rollout status {} -n {}` goes on waiting; --timeout gives it longer",
                self.wanted.label(),
                self.rollouts.namespace
            ));
        }
        let mut outcome = self.failed(Ended::TimedOut, error, started);
        outcome.pod = pod;
        outcome.not_ready = not_ready;
        outcome
    }
}

/// `error` with one hint per pod that keeps the rollout from finishing.
fn with_reasons(
    mut error: Error,
    not_ready: Vec<diagnosis::NotReady>,
) -> (Error, Vec<diagnosis::NotReady>) {
    for stuck in &not_ready {
        error = error.with_hint(diagnosis::not_ready_line(stuck));
    }
    (error, not_ready)
}
