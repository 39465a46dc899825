//! The no-progress bound on one operation (a request with its retries, or a blob upload with
//! its retries): it ends when none of its bytes moved and no answer came for the allowed time.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// Shared by an operation's attempts and the body stream that reports each chunk sent.
#[derive(Debug, Clone)]
pub struct Watchdog(Arc<State>);

#[derive(Debug)]
struct State {
    started: Instant,
    /// Milliseconds after `started` of the last progress.
    last_progress_ms: AtomicU64,
    limit: Duration,
}

/// The operation made no progress for its whole allowance.
#[derive(Debug, Clone, Copy)]
pub struct Stalled(pub Duration);

impl Watchdog {
    pub fn new(limit: Duration) -> Self {
        Self(Arc::new(State {
            started: Instant::now(),
            last_progress_ms: AtomicU64::new(0),
            limit,
        }))
    }

    pub fn limit(&self) -> Duration {
        self.0.limit
    }

    /// Bytes moved or an answer came: the allowance starts again.
    pub fn progressed(&self) {
        let elapsed = self.0.started.elapsed().as_millis();
        let elapsed = u64::try_from(elapsed).unwrap_or(u64::MAX);
        self.0
            .last_progress_ms
            .fetch_max(elapsed, Ordering::Relaxed);
    }

    fn deadline(&self) -> Instant {
        let last = Duration::from_millis(self.0.last_progress_ms.load(Ordering::Relaxed));
        self.0.started + last + self.0.limit
    }

    /// Whether a wait of `delay` would still end before the allowance runs out.
    pub fn allows(&self, delay: Duration) -> bool {
        Instant::now() + delay < self.deadline()
    }

    /// Runs `work` until it ends, or until no progress was reported for the allowance.
    pub async fn bound<F: Future>(&self, work: F) -> Result<F::Output, Stalled> {
        let mut work = std::pin::pin!(work);
        loop {
            let deadline = self.deadline();
            tokio::select! {
                done = &mut work => return Ok(done),
                () = tokio::time::sleep_until(deadline) => {
                    // Progress reported while we slept moves the deadline on.
                    if self.deadline() <= Instant::now() {
                        return Err(Stalled(self.0.limit));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_silent_wait_ends_with_stalled() {
        let watchdog = Watchdog::new(Duration::from_millis(50));
        let result = watchdog.bound(std::future::pending::<()>()).await;
        assert!(result.is_err());
        assert!(!watchdog.allows(Duration::ZERO));
    }

    #[tokio::test]
    async fn progress_moves_the_deadline_on() {
        let watchdog = Watchdog::new(Duration::from_millis(500));
        let reporter = watchdog.clone();
        // Ten steps of 100 ms outlast the allowance twice over; each reports progress.
        let work = async move {
            for _ in 0..10 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                reporter.progressed();
            }
            "done"
        };
        assert_eq!(watchdog.bound(work).await.unwrap(), "done");
        assert!(!watchdog.allows(Duration::from_secs(1)));
    }
}
