//! Per-object exponential back-off of failed reconciles.
//!
//! A resource whose reconcile fails is looked at again after 1 s, then 2 s, 4 s, ... up to
//! 5 minutes, and from the start again once a reconcile of it succeeds. One broken resource
//! (an API server refusing its objects, a JobManager that never answers) then costs a few
//! requests an hour instead of one every few seconds, and does not crowd out the others.

use std::{collections::HashMap, sync::Mutex, time::Duration};

/// The first delay after a failure.
pub const FIRST: Duration = Duration::from_secs(1);
/// The longest delay between two attempts.
pub const MAX: Duration = Duration::from_secs(300);

/// Failures in a row, by object (`namespace/name`).
#[derive(Debug)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(FIRST, MAX)
    }
}

impl Backoff {
    pub fn new(first: Duration, max: Duration) -> Self {
        Self {
            first,
            max,
            failures: Mutex::default(),
        }
    }

    /// Counts one more failure of `key`; the delay before its next attempt.
    pub fn failed(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let count = failures.entry(key.to_owned()).or_insert(0);
        *count = count.saturating_add(1);
        let doublings = (*count - 1).min(31);
        self.first
            .checked_mul(1u32 << doublings)
            .map_or(self.max, |delay| delay.min(self.max))
    }

    /// `key` was reconciled: its next failure waits [`FIRST`] again. Also forgets objects
    /// that are gone, so the map holds only failing objects.
    pub fn succeeded(&self, key: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        // Most reconciles succeed with nothing to remove: no allocation on that path.
        if !failures.is_empty() {
            failures.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_double_the_delay_up_to_the_cap_and_a_success_resets_it() {
        let backoff = Backoff::default();
        let delays: Vec<u64> = (0..12).map(|_| backoff.failed("ns/a").as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        // Another object has its own count.
        assert_eq!(backoff.failed("ns/b"), FIRST);
        backoff.succeeded("ns/a");
        assert_eq!(backoff.failed("ns/a"), FIRST);
        for _ in 0..100 {
            backoff.failed("ns/c");
        }
        assert_eq!(backoff.failed("ns/c"), MAX);
    }
}
