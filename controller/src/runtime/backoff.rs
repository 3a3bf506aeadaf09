//! Per-object exponential back-off of failed reconciles.
//!
//! A resource whose reconcile fails is looked at again after 1 s, then 2 s, 4 s, ... up to
//! 5 minutes, and from the start again once a reconcile of it succeeds. One broken resource
//! (an API server refusing its objects, a JobManager that never answers) then costs a few
//! requests an hour instead of one every few seconds, and does not crowd out the others.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

/// The first delay after a failure.
pub const FIRST: Duration = Duration::from_secs(1);
/// The longest delay between two attempts.
pub const MAX: Duration = Duration::from_secs(300);

/// Below this many failing objects the map is not pruned.
const PRUNE_FLOOR: usize = 64;

/// Failures in a row, by object (`namespace/name`), with when the last one was.
///
/// A success removes an object's entry; one deleted while it was failing is never
/// reconciled again, so its entry goes when the map has doubled since it was last pruned
/// and the object has not failed for twice the longest delay (a failing object fails again
/// within the longest delay). The map stays within twice the objects failing now.
#[derive(Debug)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    failures: Mutex<Failures>,
}

#[derive(Debug)]
struct Failures {
    by_object: HashMap<String, (u32, Instant)>,
    prune_at: usize,
}

impl Default for Failures {
    fn default() -> Self {
        Self {
            by_object: HashMap::new(),
            prune_at: PRUNE_FLOOR,
        }
    }
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
        self.failed_at(key, Instant::now())
    }

    fn failed_at(&self, key: &str, now: Instant) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let entry = failures.by_object.entry(key.to_owned()).or_insert((0, now));
        entry.0 = entry.0.saturating_add(1);
        entry.1 = now;
        let doublings = (entry.0 - 1).min(31);
        if failures.by_object.len() >= failures.prune_at {
            let stale = self.max * 2;
            failures
                .by_object
                .retain(|_, (_, last)| now.saturating_duration_since(*last) <= stale);
            failures.prune_at = (failures.by_object.len() * 2).max(PRUNE_FLOOR);
        }
        self.first
            .checked_mul(1u32 << doublings)
            .map_or(self.max, |delay| delay.min(self.max))
    }

    /// `key` was reconciled: its next failure waits [`FIRST`] again.
    pub fn succeeded(&self, key: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        // Most reconciles succeed with nothing to remove: no allocation on that path.
        if !failures.by_object.is_empty() {
            failures.by_object.remove(key);
        }
    }

    #[cfg(test)]
    fn failing(&self) -> usize {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_object
            .len()
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

    #[test]
    fn objects_deleted_while_failing_are_forgotten() {
        let backoff = Backoff::default();
        let start = Instant::now();
        // One object fails for ever, every longest delay; 10,000 others fail once each, a
        // second apart, and are deleted (never reconciled again).
        let mut most = 0;
        for i in 0..10_000u64 {
            let now = start + Duration::from_secs(i);
            if i % MAX.as_secs() == 0 {
                backoff.failed_at("ns/broken", now);
            }
            backoff.failed_at(&format!("ns/gone-{i}"), now);
            most = most.max(backoff.failing());
        }
        // Within twice the objects that failed in the last two longest delays (600 s).
        assert!(most <= 2 * 601 + 1, "at most {most} entries kept");
        // The object that goes on failing kept its count: its delay is still the longest.
        assert_eq!(
            backoff.failed_at("ns/broken", start + Duration::from_secs(10_000)),
            MAX
        );
    }
}
