//! Where a run's time went, for `-vv`: named laps from one start, said on one line
//! (`inspect 4 ms, open and discover 2 ms, ...`), so a slow step shows without a profiler.

use std::fmt;
use std::time::{Duration, Instant};

/// Laps measured one after another from a start.
#[derive(Debug, Clone)]
pub struct Laps {
    last: Instant,
    laps: Vec<(&'static str, Duration)>,
}

impl Laps {
    /// Laps from now.
    pub fn start() -> Self {
        Self::since(Instant::now())
    }

    /// Laps from an earlier moment (when a change was noticed, before it was looked at).
    pub fn since(started: Instant) -> Self {
        Self {
            last: started,
            laps: Vec::new(),
        }
    }

    /// Ends the lap in progress under `name`; the next one starts now.
    pub fn lap(&mut self, name: &'static str) {
        let now = Instant::now();
        self.laps.push((name, now.duration_since(self.last)));
        self.last = now;
    }

    /// The time of the laps ended so far.
    pub fn total(&self) -> Duration {
        self.laps.iter().map(|(_, took)| *took).sum()
    }

    /// The laps ended so far, in order.
    pub fn laps(&self) -> &[(&'static str, Duration)] {
        &self.laps
    }
}

impl fmt::Display for Laps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, took) in &self.laps {
            write!(f, "{name} {} ms, ", took.as_millis())?;
        }
        write!(f, "in all {} ms", self.total().as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_lap_is_the_time_since_the_one_before_and_all_of_them_add_up() {
        let started = Instant::now() - Duration::from_millis(30);
        let mut laps = Laps::since(started);
        laps.lap("inspect");
        std::thread::sleep(Duration::from_millis(20));
        laps.lap("plan");
        let [(first, inspect), (second, plan)] = laps.laps() else {
            panic!("two laps: {laps:?}");
        };
        assert_eq!((*first, *second), ("inspect", "plan"));
        assert!(*inspect >= Duration::from_millis(30), "{inspect:?}");
        assert!(*plan >= Duration::from_millis(20), "{plan:?}");
        let said = laps.to_string();
        assert!(said.starts_with("inspect "), "{said}");
        let total = (*inspect + *plan).as_millis();
        assert!(said.ends_with(&format!("in all {total} ms")), "{said}");
    }
}
