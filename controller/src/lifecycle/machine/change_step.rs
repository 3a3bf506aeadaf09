//! The `Change` step: the spec differs from the recorded one in a way that ends the job.
//! A change this generation already refused stays refused; a suspended spec is recorded or
//! resumed; otherwise the job is ended as its upgrade mode says (a stop-with-savepoint, a
//! cancellation, last-state, a fresh savepoint, a redeploy from `initialSavepointPath`) and
//! the new spec committed with the state it starts from, or the change waits or is refused.

use flink_operator_api::LifecycleStatus;
use flink_operator_api::common::{FlinkJobState, JobStatus, ResourceLifecycleState};

use super::outcome::{commit, recorded_job_id, refused, stop_with_savepoint, wait};
use crate::lifecycle::kind::{
    Cancel, Cause, Checkpoint, IntentOf, LifecycleHooks, Observed, Refusal, Restore, Step, Wait, job_status,
    job_view,
};
use crate::{
    conditions::Phase,
    events::EventNote,
    events::Reason,
    lifecycle::{
        FAST, JobAction, SLOW, capitalised,
        change::{self, Ending, JobNow, JobToEnd, Newest, Resume, Resuming},
        history,
        restore::{self, RestorableState},
        retention::{self, Instead},
        spec,
    },
};
use flink_operator_api::FlinkSpec;
use flink_operator_api::SnapshotType;

/// The spec differs from the recorded one in a way that ends the job: end it as its
/// upgrade mode says, then commit the new spec with the state it starts from.
pub(super) fn change<'a, K: LifecycleHooks<'a>>(k: &mut K, observed: &Observed<K::Spec>) -> IntentOf<'a, K> {
    let recorded = &observed.recorded;
    if let Some(plan) = refused_again(k) {
        return plan;
    }
    let spec = k.spec;
    let suspending = spec::is_suspended(spec);
    if spec::is_suspended(recorded) {
        if suspending {
            // The state the suspension left stays the one to resume from.
            let left = restore::recorded(&job_status(&k.status));
            return commit(k, Restore::from(left), Cause::WhileSuspended);
        }
        return resume(k, recorded);
    }
    if let Some(plan) = k.own_step(&Step::Change(observed.clone())) {
        return plan.into();
    }
    let standing = k.standing();
    let (state, ended) = (standing.state.as_ref(), standing.ended);
    if spec::redeploy_nonce_changed(spec, recorded) {
        return redeploy(k, state, ended);
    }
    if let Some(restore) = standing.never_ran {
        return commit_change(k, restore, Cause::NeverRan);
    }
    let job = job_view(k);
    let job_id = recorded_job_id(&k.status);
    let now = if ended {
        JobNow::Ended
    } else {
        JobNow::Live(state.unwrap_or(&FlinkJobState::Reconciling))
    };
    let facts = k.facts;
    let mode = spec::upgrade_mode(spec);
    let to_end = JobToEnd {
        mode,
        ends_with_its_cluster: K::ENDS_WITH_ITS_CLUSTER,
        // A rollback that restores its revision's state does not read the HA metadata.
        last_state_held: standing.last_state_held || history::revision_state(k).is_some(),
        suspending,
        now,
        latest_checkpoint_ms: standing.latest_checkpoint.found().and_then(|c| c.timestamp_ms),
        job: &job,
    };
    match change::ending(&to_end, facts.policy, facts.now_ms) {
        Ending::WithoutState if K::ENDS_WITH_ITS_CLUSTER || ended => {
            commit_change(k, Restore::Nothing, Cause::WithoutState)
        }
        Ending::WithoutState => cancel(k, Cancel::ForChange),
        Ending::KeepingLastState => commit_change(k, Restore::LastState, Cause::KeepingLastState),
        Ending::Savepoint => stop_with_savepoint(k, &job_id, suspending),
        Ending::CancelForNewest { with_savepoints } => {
            cancel_for_newest_state(k, &job, with_savepoints, suspending)
        }
        Ending::Ended { with_savepoints } => after_end(k, &job, with_savepoints, suspending),
        Ending::FreshSavepoint(savepoint) => {
            commit_change(k, Restore::State(savepoint), Cause::FreshSavepoint)
        }
        Ending::WaitForRunning => wait(k, Wait::ForRunning),
        Ending::WaitForCancel => wait(k, Wait::ForCancel),
        Ending::Refuse(why) => refused(k, Refusal::Ending(why)),
    }
}

/// A change [`already_refused`](crate::lifecycle::ledger::already_refused) stays refused.
fn refused_again<'a, K: LifecycleHooks<'a>>(k: &mut K) -> Option<IntentOf<'a, K>> {
    let note = k.already_refused()?;
    *k.status.error_mut() = Some(note.clone());
    k.conditions(Phase::UpdateFailed, &note);
    Some(k.done(SLOW).into())
}

/// Commits the spec of a change with the state the job's upgrade mode chose, or, for a
/// rollback asked to restore the state its revision was started from
/// (`flink.apache.org/rollback-restore: revision`), with that state if the restore-age guard
/// allows it (the job has ended as its upgrade mode says either way, so the state it had is
/// kept too).
pub(super) fn commit_change<'a, K: LifecycleHooks<'a>>(
    k: &mut K,
    restore: Restore,
    cause: Cause,
) -> IntentOf<'a, K> {
    let Some(state) = history::revision_state(k) else {
        return commit(k, restore, cause);
    };
    let facts = k.facts;
    if let Err(why) = restore::guard(&state, facts.policy.restore_max_state_age_ms, facts.now_ms) {
        return refused(k, Refusal::Said(format!("rolling back: {why}")));
    }
    // A last-state change keeps the cluster's HA metadata for the latest checkpoint; the
    // revision's state replaces that, so the change is said (and done) as one that restores it.
    let cause = match cause {
        Cause::KeepingLastState => Cause::Ended,
        other => other,
    };
    // From here the change's own restore (`upgradeSavepointPath`, written before anything
    // is torn down) holds the revision's state: the rollback restores it once. Left in the
    // rollback, it would be restored again over the checkpoints the rolled-back job took
    // if the job is suspended before it is seen stable and then resumed.
    if let Some(rollback) = k.status.revision_mut().rollback.as_mut() {
        rollback.restore_path = None;
    }
    commit(k, Restore::State(state), cause)
}

/// Suspended, and now to run again (see [`change::resume`]).
fn resume<'a, K: LifecycleHooks<'a>>(k: &mut K, recorded: &K::Spec) -> IntentOf<'a, K> {
    let facts = k.facts;
    let resuming = Resuming {
        mode: spec::upgrade_mode(recorded),
        new_mode: spec::upgrade_mode(k.spec),
        job: &job_view(k),
        ends_with_its_cluster: K::ENDS_WITH_ITS_CLUSTER,
    };
    match change::resume(&resuming, facts.policy, facts.now_ms) {
        Resume::WithoutState => commit(k, Restore::Nothing, Cause::Resume),
        // A rollback asked to restore its revision's state does so on resume too, as it
        // does for a running job (see `commit_change`).
        Resume::From(state) => commit_change(k, Restore::State(state), Cause::Resume),
        Resume::LastState => commit_change(k, Restore::LastState, Cause::Resume),
        Resume::Refuse(_) if history::revision_state(k).is_some() => {
            commit_change(k, Restore::Nothing, Cause::Resume)
        }
        Resume::Refuse(why) => refused(k, Refusal::Said(format!("resuming: {why}"))),
    }
}

/// A new `savepointRedeployNonce`: the job is ended without a savepoint, and the spec runs
/// from `spec.job.initialSavepointPath` (the user's choice of state, so no age guard).
fn redeploy<'a, K: LifecycleHooks<'a>>(
    k: &mut K,
    state: Option<&FlinkJobState>,
    ended: bool,
) -> IntentOf<'a, K> {
    let Some(path) = k
        .spec
        .job()
        .and_then(|j| j.initial_savepoint_path.clone())
        .filter(|p| !p.trim().is_empty())
    else {
        return refused(k, Refusal::Said(
            "spec.job.savepointRedeployNonce changed, but spec.job.initialSavepointPath is empty: there is no savepoint to redeploy from".to_owned(),
        ));
    };
    if !K::ENDS_WITH_ITS_CLUSTER {
        if state == Some(&FlinkJobState::Cancelling) {
            return wait(k, Wait::ForCancel);
        }
        if !ended {
            return cancel(k, Cancel::ForRedeploy(path));
        }
    }
    let savepoint = RestorableState {
        kind: SnapshotType::Savepoint,
        path: path.clone(),
        timestamp_ms: None,
    };
    commit(k, Restore::State(savepoint), Cause::Redeploy(path))
}

/// Cancels the running job for a change, the same for every kind: UPGRADING with the reason
/// recorded before the cancellation is sent, and one `Cancelling` Event.
fn cancel<'a, K: LifecycleHooks<'a>>(k: &mut K, why: Cancel) -> IntentOf<'a, K> {
    let job_id = recorded_job_id(&k.status);
    let change = if spec::is_suspended(k.spec) {
        "suspension"
    } else {
        "upgrade"
    };
    let now_ms = k.facts.now_ms;
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
            capitalised(&message),
            newest.map_or_else(
                || "none is known yet".to_owned(),
                |s| restore::age_note(&s, now_ms)
            )
        ),
        None => capitalised(&message),
    };
    *k.status.lifecycle_state_mut() = Some(ResourceLifecycleState::Upgrading);
    k.conditions(Phase::Updating, &message);
    let (_, mut out) = k.parts();
    out.act(JobAction::Cancel { job_id });
    out.event(EventNote::normal(Reason::Cancelling, note));
    k.record_then(FAST).into()
}

/// The user opted out of the upgrade savepoint: the job is cancelled (its checkpoints are
/// retained) once the state it would restore passes the restore guard, so that a job is not
/// ended for state that would then be refused. A suspension keeps the state as it is (the
/// guard applies when the job resumes).
fn cancel_for_newest_state<'a, K: LifecycleHooks<'a>>(
    k: &mut K,
    job: &JobStatus,
    with_savepoints: bool,
    suspending: bool,
) -> IntentOf<'a, K> {
    let checkpoint = k.standing().latest_checkpoint;
    let found = checkpoint.found();
    let newest = if with_savepoints {
        restore::newest(job, found.clone())
    } else {
        found.clone()
    };
    if !suspending {
        if with_savepoints && newest.is_none() && checkpoint == Checkpoint::None {
            return refused(k, Refusal::NotCancelled(None));
        }
        let facts = k.facts;
        if let Err(why) = change::before_cancel(
            Newest {
                job,
                checkpoint: found.clone(),
                with_savepoints,
            },
            facts.policy,
            facts.now_ms,
        ) {
            return refused(k, Refusal::NotCancelled(Some(why)));
        }
    }
    // A cancellation that deletes the checkpoints would lose the state the change restores
    // (or leave older state to restore): the job is stopped with a savepoint instead.
    let standing = k.standing();
    if let Some(why) = standing.on_cancel.loses_checkpoint() {
        return instead_of_cancel(k, &why, standing.running, suspending);
    }
    // A job that Flink says has no completed checkpoint yet (one just restored, say) would
    // have nothing of its own to restore once cancelled: it is stopped with a savepoint
    // instead. (A checkpoint not read this look is looked for again once the job ended.)
    if !with_savepoints && checkpoint == Checkpoint::None && !suspending {
        return instead_of_cancel(
            k,
            "no completed checkpoint of the job is known yet",
            standing.running,
            suspending,
        );
    }
    // What the job restores once cancelled is in status before the cancel is sent: its
    // latest checkpoint as known now (a later one, retained too, is taken once it ended).
    if let Some(checkpoint) = &found {
        restore::record(k.status.job_status_mut(), Some(checkpoint));
    }
    cancel(
        k,
        Cancel::ForNewest {
            with_savepoints,
            newest,
        },
    )
}

/// The job's checkpoints would not outlive its cancellation (`why`): it is stopped with a
/// savepoint instead when one can be taken, waits to run for one, or the change is refused
/// (see [`retention::instead_of_cancel`]).
fn instead_of_cancel<'a, K: LifecycleHooks<'a>>(
    k: &mut K,
    why: &str,
    running: bool,
    suspending: bool,
) -> IntentOf<'a, K> {
    let job_id = recorded_job_id(&k.status);
    match retention::instead_of_cancel(why, running, k.facts.policy) {
        Instead::Savepoint => {
            let change = if suspending { "suspension" } else { "upgrade" };
            k.event(EventNote::warning(
                Reason::SpecChanged,
                format!(
                    "Not cancelling job {job_id} for the {change}: {why}; stopping it with a savepoint instead"
                ),
            ));
            stop_with_savepoint(k, &job_id, suspending)
        }
        Instead::WaitForRunning => wait(k, Wait::ForRunning),
        Instead::Refuse(note) => refused(k, Refusal::NotCancelled(Some(note))),
    }
}

/// The job has ended (or was cancelled) without a savepoint for the change: the next job
/// starts from its newest state (see [`change::after_end`]).
fn after_end<'a, K: LifecycleHooks<'a>>(
    k: &mut K,
    job: &JobStatus,
    with_savepoints: bool,
    suspending: bool,
) -> IntentOf<'a, K> {
    let standing = k.standing();
    let state = standing.state;
    // The checkpoint recorded before the job was cancelled for the change (retained, as
    // checked then): what it restores when Flink no longer reports a newer one.
    let recorded = change::recorded_checkpoint_of_the_job(job);
    let checkpoint = match standing.latest_checkpoint {
        Checkpoint::Found(found) => Some(found),
        Checkpoint::None => recorded,
        // Gone with its JobManager's memory of it: its savepoints may still do.
        Checkpoint::Unavailable(reason) if state.is_none() => {
            if !with_savepoints && recorded.is_none() {
                return refused(k, Refusal::GoneWithoutCheckpoint(reason));
            }
            recorded
        }
        Checkpoint::Unavailable(_) | Checkpoint::NotLooked => return wait(k, Wait::ForCheckpoint),
    };
    let facts = k.facts;
    let newest = Newest {
        job,
        checkpoint,
        with_savepoints,
    };
    match change::after_end(newest, suspending, facts.policy, facts.now_ms) {
        Ok(newest) => commit_change(k, Restore::from(newest), Cause::Ended),
        Err(why) => refused(k, Refusal::Ended(why)),
    }
}
