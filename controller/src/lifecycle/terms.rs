//! The lifecycle's basic terms, which every part of it reads and which read nothing of it:
//! the two kinds of snapshot, how
//! soon a job is looked at again, and how a message becomes an Event note.

use crate::{conditions::Phase, plan::Next};

/// Something only Flink or Kubernetes can finish is under way: look again soon.
pub const FAST: Next = Next::Progress;
/// A cluster is starting or a session cluster is awaited: the watches bring the change,
/// this is the fallback.
pub const WAIT: Next = Next::Progress;
/// Nothing is under way.
pub const SLOW: Next = Next::Steady;

use flink_operator_api::LifecycleStatus;

/// How soon to look again at a job whose cluster runs but which is not yet seen running
/// (stable): like a snapshot under way, every quarter of the time since its spec was deployed,
/// between 1 s and the progress-check interval. Only Flink knows when the job runs, and an
/// upgrade is not over until it is seen to: a job running 6 s after its deploy is seen within
/// 2 s, not at the next progress check (up to 10 s later); one that takes minutes to start
/// costs no more looks than before. Without a deploy time, the progress interval.
pub fn starting<S: LifecycleStatus>(status: &S, now_ms: i64) -> Next {
    match status.reconciliation().and_then(|r| r.reconciliation_timestamp) {
        Some(deployed_ms) => Next::Awaiting {
            for_ms: u64::try_from(now_ms - deployed_ms).unwrap_or(0),
        },
        None => FAST,
    }
}

/// The stored condition of `type_` if its reason is `phase` for `generation`: what a look of
/// the same generation remembers of the one before it.
pub fn said_for<'s, S: LifecycleStatus>(
    stored: &'s S,
    type_: &str,
    phase: Phase,
    generation: Option<i64>,
) -> Option<&'s flink_operator_api::common::Condition> {
    stored.conditions().into_iter().flatten().find(|c| {
        c.type_.as_deref() == Some(type_)
            && c.reason.as_deref().and_then(Phase::from_reason) == Some(phase)
            && c.observed_generation == generation
    })
}

/// `text` with its first letter upper-case (a status message as an Event note).
pub fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
