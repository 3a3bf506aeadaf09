//! The vocabulary of decisions: what a kind's pure decide returns ([`Plan`]), when it wants
//! its resource looked at again ([`Next`]) and how a failed action becomes a status
//! ([`Recovery`]). The reconcile shell (`runtime`) carries them out; the decide functions and
//! the shared job lifecycle only build them, so both import this module and neither imports
//! the other for it. The Events a plan asks for are [`crate::events::EventNote`]s.

use std::time::Duration;

use crate::events::EventNote;

/// What a kind's decide asks for, in the order the runtime carries it out: `status_before`
/// is written before the actions (so that a crash during them resumes from it), then the
/// actions run, then `status` is written and the `events` are published; the resource is
/// looked at again when `requeue` says.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan<S, A> {
    pub status_before: Option<S>,
    pub actions: Vec<A>,
    pub status: S,
    pub events: Vec<EventNote>,
    pub requeue: Next,
}

impl<S, A> Plan<S, A> {
    /// A plan with nothing to write before its actions.
    pub fn without_before(actions: Vec<A>, status: S, events: Vec<EventNote>, requeue: Next) -> Self {
        Plan {
            status_before: None,
            actions,
            status,
            events,
            requeue,
        }
    }
}

/// When a plan wants its resource looked at again, by what is under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Something only Flink or Kubernetes can finish is under way (a cluster starting, a
    /// savepoint pending, a job cancelling): `kubernetes.operator.observer.progress-check.interval`.
    Progress,
    /// Nothing is under way: `kubernetes.operator.reconcile.interval`.
    Steady,
    /// In this many seconds (a periodic savepoint or a retry falls due), or at the steady
    /// interval if that comes first.
    Within(u64),
    /// A job stops with a savepoint for a change (or its cluster's JobManager exits before
    /// the next one starts), under way for `for_ms`: see [`crate::runtime::next::stopping_poll`].
    Stopping { for_ms: u64 },
    /// Something only Flink can finish and the operator waits on, under way for `for_ms`: a
    /// snapshot it takes, a job it starts. See [`crate::runtime::next::awaiting_poll`].
    Awaiting { for_ms: u64 },
    /// Nothing will happen by itself any more (a snapshot that completed or was abandoned):
    /// looked at again only when the resource changes (its spec, its deletion).
    Idle,
}

/// How a kind turns a failed action into a status instead of an error (a job that Flink
/// refused is reported and retried later, not retried at once).
#[derive(Debug, Clone, PartialEq)]
pub struct Recovery<S> {
    pub status: S,
    pub events: Vec<EventNote>,
    pub requeue: Duration,
}
