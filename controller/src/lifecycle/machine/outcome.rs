//! What a step ends with, the same for every step that ends so: the spec committed with the
//! state it starts from, a wait, a refusal, or a stop with a savepoint; each worded once
//! ([`crate::lifecycle::wording`]). The machine and its `Change` step both end through these.

use flink_operator_api::LifecycleStatus;
use flink_operator_api::common::{FlinkJobState, ResourceLifecycleState};

use crate::{
    conditions::Phase,
    events::EventNote,
    lifecycle::{
        kind::{Cause, Intent, IntentOf, LifecycleHooks, Refusal, Restore, Standing, Wait, job_view},
        restore, spec,
        stop::{self, Stopping},
        terms::{FAST, WAIT, capitalised},
        wording::{self, Change, Refused},
    },
    plan::Next,
};

pub(super) fn recorded_job_id(status: &impl LifecycleStatus) -> String {
    status
        .job_status()
        .and_then(|j| j.job_id.clone())
        .unwrap_or_default()
}

/// What the change of the spec is.
pub(super) fn change_of<'a, K: LifecycleHooks<'a>>(k: &K) -> Change {
    Change::of(spec::is_suspended(k.spec))
}

/// The job's state for messages.
pub(super) fn state_note(standing: &Standing) -> String {
    standing
        .state
        .as_ref()
        .map_or("unknown", FlinkJobState::as_str)
        .to_owned()
}

/// Records the spec to run and what it starts from, with the lifecycle's Event for why
/// ([`wording::committed`]), then the kind starts it.
pub(super) fn commit<'a, K: LifecycleHooks<'a>>(
    k: &mut K,
    restore: Restore,
    cause: Cause,
) -> IntentOf<'a, K> {
    let said = wording::committed(&cause, &restore, change_of(k), k.facts.now_ms);
    let message = said.map(|(reason, message)| {
        k.event(EventNote::normal(reason, capitalised(&message)));
        message
    });
    Intent::Commit {
        restore,
        cause,
        message,
    }
}

/// A change (or a restart) waits: said, and looked at again soon.
pub(super) fn wait<'a, K: LifecycleHooks<'a>>(k: &mut K, what: Wait) -> IntentOf<'a, K> {
    let job_id = recorded_job_id(&k.status);
    let (phase, message, under_way) = wording::wait(what, &job_id, &state_note(&k.standing()));
    if under_way {
        *k.status.lifecycle_state_mut() = Some(ResourceLifecycleState::Upgrading);
    }
    k.conditions(phase, &message);
    k.done(if what == Wait::ForRunning { WAIT } else { FAST }).into()
}

/// A change or a restore is refused, worded for every kind ([`wording::refusal`]); the job
/// stays as it is until the spec changes.
pub(super) fn refused<'a, K: LifecycleHooks<'a>>(k: &mut K, refusal: Refusal) -> IntentOf<'a, K> {
    let standing = k.standing();
    let job_id = recorded_job_id(&k.status);
    let state = state_note(&standing);
    let of = Refused {
        change: change_of(k),
        job_id: &job_id,
        state: &state,
        newest: restore::newest(&job_view(k), standing.latest_checkpoint.found()),
        now_ms: k.facts.now_ms,
    };
    let (phase, note) = wording::refusal(refusal, &of);
    k.refuse(phase, note).into()
}

/// Stops the running job with a savepoint for a change (see [`stop::stop_with_savepoint`]);
/// a suspension drains it when `kubernetes.operator.job.drain-on-savepoint-deletion` says so.
pub(super) fn stop_with_savepoint<'a, K: LifecycleHooks<'a>>(
    k: &mut K,
    job_id: &str,
    suspending: bool,
) -> IntentOf<'a, K> {
    let facts = k.facts;
    let drain = facts.policy.drain && suspending;
    let change = Change::of(suspending);
    let (status, mut out) = k.parts();
    let stop = stop::StopOf { job_id, drain };
    match stop::stop_with_savepoint(status, stop, change.doing(), &facts, &mut out) {
        Stopping::Sent => {
            let message = stop::under_way(&k.status, &wording::stopping(job_id, change));
            k.conditions(Phase::Updating, &message);
            k.record_then(Next::Stopping { for_ms: 0 }).into()
        }
        Stopping::Wait { seconds, note } => {
            k.conditions(Phase::Updating, &format!("{}: {note}", change.doing()));
            k.done(Next::Within(seconds)).into()
        }
        Stopping::GiveUp(why) => refused(k, Refusal::StopGaveUp(why)),
    }
}
