//! The `Change` step: the spec differs from the recorded one in a way that ends the job.
//! A change this generation already refused stays refused; a suspended spec is recorded or
//! resumed; otherwise the job is ended as its upgrade mode says (a stop-with-savepoint, a
//! cancellation, last-state, a fresh savepoint, a redeploy from `initialSavepointPath`) and
//! the new spec committed with the state it starts from, or the change waits or is refused.

use flink_operator_api::common::{JobStatus, ResourceLifecycleState, flink_job_state};

use super::{
    Cancel, Cause, Checkpoint, JobKind, PlanOf, Refusal, Restore, Wait, job_view, recorded_job_id,
    stop_with_savepoint,
};
use crate::{
    conditions::{condition_type, phase},
    events::Reason,
    lifecycle::{
        FAST, JobAction, LifecycleStatus, SLOW,
        change::{self, Ending, JobNow, Resume},
        history,
        restore::{self, RestorableState},
        spec::{self, JobSpecOf},
    },
    runtime::EventNote,
};

/// The spec differs from the recorded one in a way that ends the job: end it as its
/// upgrade mode says, then commit the new spec with the state it starts from.
pub(super) fn change<'a, K: JobKind<'a>>(k: &mut K, recorded: &K::Spec) -> PlanOf<'a, K> {
    if let Some(plan) = refused_again(k) {
        return plan;
    }
    let spec = k.spec();
    let suspending = spec::is_suspended(spec);
    if spec::is_suspended(recorded) {
        if suspending {
            return k.changed_while_suspended();
        }
        return resume(k, recorded);
    }
    if let Some(plan) = k.before_ending() {
        return plan;
    }
    let (state, ended) = k.job_state();
    if spec::redeploy_nonce_changed(spec, recorded) {
        return redeploy(k, state.as_deref(), ended);
    }
    if k.never_ran() {
        let recorded_state = restore::recorded(&job_view(k));
        return commit_change(k, Restore::from(recorded_state), Cause::NeverRan);
    }
    let job = job_view(k);
    let job_id = recorded_job_id(k.status());
    let verb = k.verb(suspending);
    let now = if ended {
        JobNow::Ended
    } else {
        JobNow::Live(state.as_deref().unwrap_or(flink_job_state::RECONCILING))
    };
    let facts = k.facts();
    let mode = spec::upgrade_mode(spec);
    match change::ending(
        mode,
        K::ENDS_WITH_ITS_CLUSTER,
        // A rollback that restores its revision's state does not read the HA metadata.
        k.last_state_held() || history::revision_state(k).is_some(),
        suspending,
        now,
        &job,
        facts.policy,
        facts.now_ms,
    ) {
        Ending::WithoutState if K::ENDS_WITH_ITS_CLUSTER || ended => {
            commit_change(k, Restore::Nothing, Cause::WithoutState)
        }
        Ending::WithoutState => cancel(k, Cancel::ForChange),
        Ending::KeepingLastState => commit_change(k, Restore::LastState, Cause::KeepingLastState),
        Ending::Savepoint => stop_with_savepoint(k, &job_id, verb, suspending),
        Ending::CancelForNewest { with_savepoints } => {
            cancel_for_newest_state(k, &job, with_savepoints, suspending)
        }
        Ending::Ended { with_savepoints } => after_end(k, &job, with_savepoints, suspending),
        Ending::FreshSavepoint(savepoint) => {
            commit_change(k, Restore::State(savepoint), Cause::FreshSavepoint)
        }
        Ending::WaitForRunning => k.wait(Wait::ForRunning),
        Ending::WaitForCancel => k.wait(Wait::ForCancel),
        Ending::Refuse(why) => k.refuse(Refusal::Ending(why)),
    }
}

/// The note of this generation's change if it was already refused (the stored Degraded
/// condition says UpdateFailed for this generation; one rule for every kind): it stays
/// refused, as it was said, until the spec changes. Read from the stored status, as observing
/// the running job has cleared the error from the one being built.
pub fn already_refused<S: LifecycleStatus>(stored: Option<&S>, generation: Option<i64>) -> Option<String> {
    let stored = stored?;
    let refused = stored.conditions().into_iter().flatten().find(|c| {
        c.type_.as_deref() == Some(condition_type::DEGRADED)
            && c.reason.as_deref() == Some(phase::UPDATE_FAILED)
            && c.observed_generation == generation
    })?;
    Some(
        stored
            .error()
            .map(str::to_owned)
            .or_else(|| refused.message.clone().filter(|m| !m.is_empty()))
            .unwrap_or_else(|| "the update failed; change the spec to try again".to_owned()),
    )
}

/// A change [`already_refused`] stays refused.
fn refused_again<'a, K: JobKind<'a>>(k: &mut K) -> Option<PlanOf<'a, K>> {
    let note = already_refused(k.stored(), k.facts().generation)?;
    let (status, _) = k.parts();
    *status.error_mut() = Some(note.clone());
    k.conditions(phase::UPDATE_FAILED, &note);
    Some(k.done(SLOW))
}

/// Commits the spec of a change with the state the job's upgrade mode chose, or, for a
/// rollback asked to restore the state its revision was started from
/// (`flink.apache.org/rollback-restore: revision`), with that state if the restore-age guard
/// allows it (the job has ended as its upgrade mode says either way, so the state it had is
/// kept too).
pub(super) fn commit_change<'a, K: JobKind<'a>>(k: &mut K, restore: Restore, cause: Cause) -> PlanOf<'a, K> {
    let Some(state) = history::revision_state(k) else {
        return k.commit(restore, cause);
    };
    let facts = k.facts();
    if let Err(why) = restore::guard(&state, facts.policy.restore_max_state_age_ms, facts.now_ms) {
        return k.refuse(Refusal::Said(format!("rolling back: {why}")));
    }
    // A last-state change keeps the cluster's HA metadata for the latest checkpoint; the
    // revision's state replaces that, so the change is said (and done) as one that restores it.
    let cause = match cause {
        Cause::KeepingLastState => Cause::Ended,
        other => other,
    };
    k.commit(Restore::State(state), cause)
}

/// Suspended, and now to run again (see [`change::resume`]).
fn resume<'a, K: JobKind<'a>>(k: &mut K, recorded: &K::Spec) -> PlanOf<'a, K> {
    let facts = k.facts();
    match change::resume(
        spec::upgrade_mode(recorded),
        spec::upgrade_mode(k.spec()),
        &job_view(k),
        K::ENDS_WITH_ITS_CLUSTER,
        facts.policy,
        facts.now_ms,
    ) {
        Resume::WithoutState => k.commit(Restore::Nothing, Cause::Resume),
        Resume::From(state) => k.commit(Restore::State(state), Cause::Resume),
        Resume::LastState => k.commit(Restore::LastState, Cause::Resume),
        Resume::Refuse(why) => k.refuse(Refusal::Said(format!("resuming: {why}"))),
    }
}

/// A new `savepointRedeployNonce`: the job is ended without a savepoint, and the spec runs
/// from `spec.job.initialSavepointPath` (the user's choice of state, so no age guard).
fn redeploy<'a, K: JobKind<'a>>(k: &mut K, state: Option<&str>, ended: bool) -> PlanOf<'a, K> {
    let Some(path) = k
        .spec()
        .job()
        .and_then(|j| j.initial_savepoint_path.clone())
        .filter(|p| !p.trim().is_empty())
    else {
        return k.refuse(Refusal::Said(
            "spec.job.savepointRedeployNonce changed, but spec.job.initialSavepointPath is empty: there is no savepoint to redeploy from".to_owned(),
        ));
    };
    if !K::ENDS_WITH_ITS_CLUSTER {
        if state == Some(flink_job_state::CANCELLING) {
            return k.wait(Wait::ForCancel);
        }
        if !ended {
            return cancel(k, Cancel::ForRedeploy(path));
        }
    }
    let savepoint = RestorableState {
        kind: restore::Kind::Savepoint,
        path: path.clone(),
        timestamp_ms: None,
    };
    k.commit(Restore::State(savepoint), Cause::Redeploy(path))
}

/// Cancels the running job for a change, the same for every kind: UPGRADING with the reason
/// recorded before the cancellation is sent, and one `Cancelling` Event.
fn cancel<'a, K: JobKind<'a>>(k: &mut K, why: Cancel) -> PlanOf<'a, K> {
    let job_id = recorded_job_id(k.status());
    let change = if spec::is_suspended(k.spec()) {
        "suspension"
    } else {
        "upgrade"
    };
    let now_ms = k.facts().now_ms;
    let (message, newest) = match why {
        Cancel::ForChange => (format!("cancelling job {job_id} for the {change}"), None),
        Cancel::ForNewest {
            with_savepoints: false,
            newest,
        } => (
            format!("cancelling job {job_id} for the {change}; it restores its latest checkpoint"),
            Some(newest),
        ),
        Cancel::ForNewest {
            with_savepoints: true,
            newest,
        } => (
            format!(
                "cancelling job {job_id} for the {change} without a savepoint (kubernetes.operator.job.upgrade.take-savepoint is false); it restores its newest state"
            ),
            Some(newest),
        ),
        Cancel::ForRedeploy(path) => (
            format!(
                "cancelling job {job_id} without a savepoint to redeploy from spec.job.initialSavepointPath {path}"
            ),
            None,
        ),
    };
    let note = match newest {
        Some(newest) => format!(
            "{}: {}",
            crate::lifecycle::capitalised(&message),
            newest.map_or_else(
                || "none is known yet".to_owned(),
                |s| restore::age_note(&s, now_ms)
            )
        ),
        None => crate::lifecycle::capitalised(&message),
    };
    *k.parts().0.lifecycle_state_mut() = Some(ResourceLifecycleState::Upgrading);
    k.conditions(phase::UPDATING, &message);
    let (_, mut out) = k.parts();
    out.act(JobAction::Cancel { job_id });
    out.event(EventNote::normal(Reason::Cancelling, note));
    k.record_then(FAST)
}

/// The user opted out of the upgrade savepoint: the job is cancelled (its checkpoints are
/// retained) once the state it would restore passes the restore guard, so that a job is not
/// ended for state that would then be refused. A suspension keeps the state as it is (the
/// guard applies when the job resumes).
fn cancel_for_newest_state<'a, K: JobKind<'a>>(
    k: &mut K,
    job: &JobStatus,
    with_savepoints: bool,
    suspending: bool,
) -> PlanOf<'a, K> {
    let checkpoint = k.latest_checkpoint();
    let found = checkpoint.found();
    let newest = if with_savepoints {
        restore::newest(job, found.clone())
    } else {
        found.clone()
    };
    if !suspending {
        if with_savepoints && newest.is_none() && checkpoint == Checkpoint::None {
            return k.refuse(Refusal::NotCancelled(None));
        }
        let facts = k.facts();
        if let Err(why) = change::before_cancel(job, found, with_savepoints, facts.policy, facts.now_ms) {
            return k.refuse(Refusal::NotCancelled(Some(why)));
        }
    }
    cancel(
        k,
        Cancel::ForNewest {
            with_savepoints,
            newest,
        },
    )
}

/// The job has ended (or was cancelled) without a savepoint for the change: the next job
/// starts from its newest state (see [`change::after_end`]).
fn after_end<'a, K: JobKind<'a>>(
    k: &mut K,
    job: &JobStatus,
    with_savepoints: bool,
    suspending: bool,
) -> PlanOf<'a, K> {
    let (state, _) = k.job_state();
    let checkpoint = match k.latest_checkpoint() {
        Checkpoint::Found(found) => Some(found),
        Checkpoint::None => None,
        // Gone with its JobManager's memory of it: its savepoints may still do.
        Checkpoint::Unavailable(reason) if state.is_none() => {
            if !with_savepoints {
                return k.refuse(Refusal::GoneWithoutCheckpoint(reason));
            }
            None
        }
        Checkpoint::Unavailable(_) | Checkpoint::NotLooked => return k.wait(Wait::ForCheckpoint),
    };
    let facts = k.facts();
    match change::after_end(
        job,
        checkpoint,
        with_savepoints,
        suspending,
        facts.policy,
        facts.now_ms,
    ) {
        Ok(newest) => commit_change(k, Restore::from(newest), Cause::Ended),
        Err(why) => k.refuse(Refusal::Ended(why)),
    }
}
