//! Fair shares of a kind's reconcile workers between namespaces.
//!
//! A kind's Controller runs at most `kubernetes.operator.reconcile.parallelism` reconciles
//! at once, whichever namespaces they are for. Without shares, one namespace with many
//! resources whose reconciles are slow (each waiting on a JobManager that never answers)
//! would hold every worker, and the other namespaces' resources would wait behind it.
//!
//! Before a reconcile does any work it asks [`NamespaceShares::enter`]. A namespace that
//! already runs its share is turned away: the reconcile returns at once and its resource is
//! looked at again after [`deferral`] (1 to 2 s), which frees the worker for another
//! namespace's resource. The share is the workers divided among the namespaces that want
//! work now (one running a reconcile, or that asked within [`WANTING_FOR`]), at least one,
//! and never more than the platform's cap (`kubernetes.operator.reconcile.namespace-share`,
//! by default half the workers). The cap is what keeps workers free for a namespace that has
//! not asked yet: a running reconcile cannot be taken back, so without it a namespace alone
//! could take every worker, and the next namespace would wait for one of them to end.
//!
//! A first reconcile (no status yet) and a deletion are held to the cap only, not to the
//! share: they are what a user waits for, and there are few of them.

use std::{
    collections::HashMap,
    hash::{BuildHasher, Hasher},
    sync::Mutex,
    time::{Duration, Instant},
};

/// How long a namespace counts as wanting work after it last asked: longer than a deferred
/// resource waits (so that a namespace kept waiting stays counted), and than the REST
/// timeout (so that a namespace whose reconciles come back every few seconds does too).
pub const WANTING_FOR: Duration = Duration::from_secs(15);

/// The shortest wait of a deferred resource; [`deferral`] adds up to as much again.
pub const DEFERRED_FOR: Duration = Duration::from_secs(1);

/// The workers one namespace may hold while `wanting` namespaces (itself included) want
/// work: an equal part of `workers`, at least 1, at most `cap`.
pub fn share(workers: usize, cap: usize, wanting: usize) -> usize {
    (workers / wanting.max(1)).max(1).min(cap.max(1))
}

/// Whether a namespace that runs `running` reconciles may start one more, while `wanting`
/// namespaces want work; a first reconcile or a deletion (`priority`) is held to the cap only.
pub fn admits(running: usize, wanting: usize, workers: usize, cap: usize, priority: bool) -> bool {
    let limit = if priority {
        cap.max(1)
    } else {
        share(workers, cap, wanting)
    };
    running < limit
}

/// The default cap: half the workers, at least 1.
pub fn default_cap(workers: usize) -> usize {
    (workers / 2).max(1)
}

/// How long a deferred resource waits before it is looked at again: [`DEFERRED_FOR`] and a
/// random part of it, so that the deferred resources of a namespace do not all come back
/// in the same instant.
pub fn deferral() -> Duration {
    // Each RandomState is keyed anew: a different number at every call, without a
    // dependency for random numbers.
    let hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = u64::try_from(DEFERRED_FOR.as_nanos()).unwrap_or(u64::MAX);
    DEFERRED_FOR + Duration::from_nanos(hasher.finish() % nanos.max(1))
}

/// The reconciles of one Controller, by namespace.
#[derive(Debug)]
pub struct NamespaceShares {
    workers: usize,
    cap: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Reconciles running, by namespace (only namespaces with at least one).
    running: HashMap<String, usize>,
    /// When each namespace last asked for a worker (forgotten after [`WANTING_FOR`]).
    asked: HashMap<String, Instant>,
}

/// A reconcile's place among its namespace's running ones; given back when dropped.
#[derive(Debug)]
#[must_use = "the reconcile counts as running only while its turn is held"]
pub struct Turn<'a> {
    shares: &'a NamespaceShares,
    namespace: String,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut state = self.shares.lock();
        if let Some(running) = state.running.get_mut(&self.namespace) {
            *running = running.saturating_sub(1);
            if *running == 0 {
                state.running.remove(&self.namespace);
            }
        }
    }
}

impl NamespaceShares {
    /// Shares of `workers` (the Controller's concurrency), each namespace at most `cap`
    /// (`None`: [`default_cap`]). `None` when the workers are unbounded (0): nothing to share.
    pub fn new(workers: u16, cap: Option<u64>) -> Option<Self> {
        let workers = usize::from(workers);
        if workers == 0 {
            return None;
        }
        let cap = cap.map_or_else(
            || default_cap(workers),
            |cap| usize::try_from(cap).unwrap_or(usize::MAX).max(1),
        );
        Some(Self {
            workers,
            cap,
            state: Mutex::default(),
        })
    }

    /// A turn for a reconcile of `namespace` at `now`, or `None` when the namespace already
    /// runs its share (see the module docs).
    pub fn enter(&self, namespace: &str, priority: bool, now: Instant) -> Option<Turn<'_>> {
        let mut state = self.lock();
        let State { running, asked } = &mut *state;
        asked.retain(|ns, at| now.saturating_duration_since(*at) < WANTING_FOR || running.contains_key(ns));
        asked.insert(namespace.to_owned(), now);
        // Every namespace that asked recently, and every one running a reconcile, has an
        // entry in `asked` (a running one is never forgotten above).
        let wanting = asked.len();
        let here = running.get(namespace).copied().unwrap_or(0);
        if !admits(here, wanting, self.workers, self.cap, priority) {
            return None;
        }
        *running.entry(namespace.to_owned()).or_insert(0) += 1;
        Some(Turn {
            shares: self,
            namespace: namespace.to_owned(),
        })
    }

    /// Reconciles running in `namespace` now.
    pub fn running(&self, namespace: &str) -> usize {
        self.lock().running.get(namespace).copied().unwrap_or(0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The counts are updated in one statement each: a panic cannot leave them half-written.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_an_equal_part_of_the_workers_at_least_one_at_most_the_cap() {
        // (workers, cap, wanting) -> share
        for (workers, cap, wanting, expected) in [
            (50, 25, 1, 25),
            (50, 50, 1, 50),
            (50, 25, 2, 25),
            (50, 50, 2, 25),
            (50, 25, 3, 16),
            (50, 25, 50, 1),
            (50, 25, 200, 1),
            (50, 25, 0, 25),
            (1, 1, 5, 1),
            (4, 0, 1, 1),
        ] {
            assert_eq!(
                share(workers, cap, wanting),
                expected,
                "{workers} workers, cap {cap}, {wanting} namespaces"
            );
        }
    }

    #[test]
    fn a_namespace_at_its_share_is_turned_away_and_a_first_reconcile_or_deletion_only_at_the_cap() {
        // (running here, wanting, workers, cap, priority) -> admitted
        for (running, wanting, workers, cap, priority, expected) in [
            (0, 1, 50, 25, false, true),
            (24, 1, 50, 25, false, true),
            (25, 1, 50, 25, false, false),
            (16, 3, 50, 25, false, false),
            (15, 3, 50, 25, false, true),
            (16, 3, 50, 25, true, true),
            (24, 3, 50, 25, true, true),
            (25, 3, 50, 25, true, false),
            (0, 80, 50, 25, false, true),
            (1, 80, 50, 25, false, false),
        ] {
            assert_eq!(
                admits(running, wanting, workers, cap, priority),
                expected,
                "{running} running, {wanting} wanting, {workers} workers, cap {cap}, priority {priority}"
            );
        }
    }

    #[test]
    fn unbounded_workers_have_no_shares_and_the_cap_defaults_to_half() {
        assert!(NamespaceShares::new(0, None).is_none());
        assert_eq!(NamespaceShares::new(50, None).unwrap().cap, 25);
        assert_eq!(NamespaceShares::new(1, None).unwrap().cap, 1);
        assert_eq!(NamespaceShares::new(50, Some(0)).unwrap().cap, 1);
        assert_eq!(NamespaceShares::new(50, Some(40)).unwrap().cap, 40);
    }

    #[test]
    fn a_busy_namespace_leaves_workers_for_another_and_gives_them_back() {
        let shares = NamespaceShares::new(10, Some(10)).unwrap();
        let t0 = Instant::now();
        // Alone, the namespace may use every worker.
        let mut a: Vec<_> = (0..10).map(|_| shares.enter("a", false, t0).unwrap()).collect();
        assert!(shares.enter("a", false, t0).is_none(), "no worker left");
        // A second namespace asks: it wants work now, so `a` is held to half from here on,
        // while what it runs already ends by itself.
        assert!(shares.enter("b", false, t0).is_some(), "dropped at once");
        a.truncate(6);
        assert_eq!(shares.running("a"), 6);
        assert!(shares.enter("a", false, t0).is_none(), "over its share of 5");
        a.truncate(4);
        let fifth = shares.enter("a", false, t0);
        assert!(fifth.is_some());
        assert!(shares.enter("a", false, t0).is_none());
        let b: Vec<_> = (0..5).map(|_| shares.enter("b", false, t0).unwrap()).collect();
        assert!(shares.enter("b", false, t0).is_none());
        drop(b);
        assert_eq!(shares.running("b"), 0);
        // Once `b` has not asked for a while, `a` has the workers to itself again.
        let later = t0 + WANTING_FOR + Duration::from_secs(1);
        let more: Vec<_> = (0..5).map(|_| shares.enter("a", false, later).unwrap()).collect();
        assert_eq!(shares.running("a"), 10);
        drop((a, fifth, more));
        assert_eq!(shares.running("a"), 0);
    }

    #[test]
    fn the_default_cap_keeps_half_the_workers_for_a_namespace_that_has_not_asked_yet() {
        let shares = NamespaceShares::new(50, None).unwrap();
        let now = Instant::now();
        let stuck: Vec<_> = (0..60)
            .filter_map(|_| shares.enter("tenant-a", false, now))
            .collect();
        assert_eq!(stuck.len(), 25);
        let other: Vec<_> = (0..25)
            .filter_map(|_| shares.enter("tenant-b", false, now))
            .collect();
        assert_eq!(other.len(), 25, "the other half, at once");
        // A third namespace asks: the share is 16 from now on.
        let third = shares.enter("tenant-c", false, now);
        assert!(third.is_some());
        let mut stuck = stuck;
        stuck.truncate(15);
        let sixteenth = shares.enter("tenant-a", false, now);
        assert!(sixteenth.is_some());
        assert!(shares.enter("tenant-a", false, now).is_none(), "at its share");
        // A first reconcile or a deletion is held to the cap only.
        let first = shares.enter("tenant-a", true, now);
        assert!(first.is_some());
        assert_eq!(shares.running("tenant-a"), 17);
        drop((stuck, other, third, sixteenth, first));
    }

    #[test]
    fn deferrals_wait_between_one_and_two_seconds() {
        for _ in 0..100 {
            let wait = deferral();
            assert!(wait >= DEFERRED_FOR && wait < 2 * DEFERRED_FOR, "{wait:?}");
        }
    }
}
