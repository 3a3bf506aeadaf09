//! The job lifecycle as one state machine: for each recorded step and each observation,
//! the next step, the same for every job kind.
//!
//! [`decide`] derives the job's [`Step`] from its recorded status and what was observed
//! (see [`super::step`], with its table), then does what that step says in one `match`:
//! deletion (its savepoint, then the kind's teardown), a stop-with-savepoint in flight, an
//! invalid spec, the first start, a start or rollback in progress, a spec change, a
//! suspended job, the kind's recovery, a restart of a failed job, the kind's rollback,
//! snapshots, steady. The pure tables ([`change::ending`], [`change::resume`],
//! [`stop::follow`], the restore guards) say what the job's state allows; the functions
//! below map each of their outcomes to the next step, once for every kind; those of the
//! `Change` step are in [`change_step`].
//!
//! What differs per kind is behind [`LifecycleHooks`], eight hooks on the kind's decision,
//! which is a [`Ledger`] (the resource, the facts, the status being built, the actions and
//! the Events) with the kind's observation beside it, and in the [`Intent`] the machine
//! returns for the kind to carry out: how a job is started (an application cluster deployed
//! with it, or a jar submitted to a session cluster) and torn down. The hooks: where it stands ([`Standing`]: whether what runs it is ready, its state, its latest checkpoint,
//! whether what it ends with keeps its last state), how it is observed, its phase, how it
//! is rescaled in place (if it can be), and the kind's own steps (an application cluster's rollback and JobManager recovery; a session
//! job's wait for its session cluster). What the machine says of stops, waits, refusals
//! and commits is worded once ([`super::wording`]).

use flink_operator_api::LifecycleStatus;
use flink_operator_api::common::{
    ReconciliationState, ResourceLifecycleState, SnapshotTriggerType, UpgradeMode,
};

use super::{
    change,
    deletion::{self, DeletionSavepoint},
    facts::JobAction,
    history,
    kind::{
        AsJobAction, Cause, Checkpoint, Intent, IntentOf, LifecycleHooks, Observed, PlanOf, Refusal, Restore,
        Step, Wait, in_place, job_status, job_view,
    },
    protected::Protected,
    restore::RestorableState,
    savepoint_history, snapshot_resources, snapshots, spec,
    stop::{self, Stopped},
    terms::{FAST, SLOW, WAIT},
    wording,
};
use crate::{
    conditions::Phase,
    events::{EventNote, Reason},
    plan::{Next, Plan},
};
use flink_operator_api::FlinkSpec;
use flink_operator_api::SnapshotType;

mod change_step;
pub mod observing;
mod outcome;

pub use super::ledger::already_refused;
use super::retention::OnCancel;
use change_step::{change, commit_change};
use outcome::{change_of, commit, recorded_job_id, refused, wait};

/// The next step of a job, from its spec, its recorded status and what was observed: a
/// plan, or what the kind is to carry out ([`Intent`]). The kind's plan of it then goes
/// through [`finish`].
pub fn decide<'a, K: LifecycleHooks<'a>>(k: &mut K) -> IntentOf<'a, K> {
    if k.facts.policy.snapshot_resources {
        create_recorded_snapshots(k);
    }
    if let Some(plan) = history::rollback_request(k) {
        return Intent::Whole(plan);
    }
    next_step(k)
}

/// What every pass's plan gets once the step is carried out: the snapshot resources it
/// creates sealed in status, the autoscaler's judgement and decision, and the revision
/// history following the spec that runs.
pub fn finish<'a, K: LifecycleHooks<'a>>(k: &K, mut plan: PlanOf<'a, K>) -> PlanOf<'a, K> {
    if k.facts.policy.snapshot_resources {
        seal_new_snapshots(&mut plan);
    }
    // The autoscaler's judgement of the running job, whatever the step (its changes, if
    // applied, are in the spec the machine acts on), and its decision kept in its history.
    let autoscaler = k.facts.autoscaler;
    if let Some(report) = &autoscaler.report {
        plan.events
            .push(EventNote::normal(Reason::ScalingReport, report.clone()));
    }
    if let Some(entry) = &autoscaler.decided {
        plan.actions
            .push(JobAction::RecordScaling(entry.clone(), autoscaler.retention).into());
    }
    history::follow(k, &mut plan);
    plan
}

/// Snapshot resources recorded as to be created by an earlier pass that did not get to
/// create them (the operator stopped in between): created now, under the recorded name.
fn create_recorded_snapshots<'a, K: LifecycleHooks<'a>>(k: &mut K) {
    let dispose = k.facts.policy.dispose_on_delete;
    let (status, mut out) = k.parts();
    let Some(job) = status.job_status() else {
        return;
    };
    let wanted = snapshot_resources::unrecorded(job, dispose);
    if wanted.is_empty() {
        return;
    }
    snapshot_resources::unmark(status.job_status_mut());
    for new in wanted {
        out.act(JobAction::CreateSnapshot(new));
    }
}

/// A snapshot resource this pass creates is written to status as to be created before it
/// is (so that a crash in between creates it on the next look), and cleared after.
fn seal_new_snapshots<S: LifecycleStatus, A: AsJobAction>(plan: &mut Plan<S, A>) {
    let Some(job) = plan.status.job_status() else {
        return;
    };
    let created: Vec<_> = plan
        .actions
        .iter()
        .filter_map(|a| match a.job_action() {
            Some(JobAction::CreateSnapshot(new)) => Some(new),
            _ => None,
        })
        .collect();
    let marked: Vec<_> = snapshot_resources::unrecorded(job, false)
        .into_iter()
        .filter_map(|m| {
            created
                .iter()
                .find(|c| c.kind == m.kind && c.at_ms == m.at_ms)
                .copied()
                .cloned()
        })
        .collect();
    if marked.is_empty() {
        return;
    }
    match plan.status_before.as_mut() {
        Some(before) => {
            for new in &marked {
                snapshot_resources::mark(before.job_status_mut(), new);
            }
        }
        None => plan.status_before = Some(plan.status.clone()),
    }
    for new in &marked {
        super::trigger::clear_trigger(plan.status.job_status_mut(), new.kind);
    }
}

/// The step derived (observing the job first where it must be, see [`observing`]), then
/// dispatched.
fn next_step<'a, K: LifecycleHooks<'a>>(k: &mut K) -> IntentOf<'a, K> {
    let step = observing::step_of(k);
    take(k, step)
}

/// Does what `step` says (the table of [`super::step`]): the kind's part first where it has
/// one, then the machine's.
fn take<'a, K: LifecycleHooks<'a>>(k: &mut K, step: Step<K::Spec>) -> IntentOf<'a, K> {
    match step {
        Step::Deleting(_) => {
            *k.status.lifecycle_state_mut() = Some(ResourceLifecycleState::Deleting);
            k.own_step(&step).map(Intent::from).unwrap_or_else(|| delete(k))
        }
        Step::Unreadable(why) => invalid(k, Phase::DeployFailed, why),
        Step::UntilReady(_) => k.own_step(&step).unwrap_or_else(|| k.done(WAIT)).into(),
        Step::FollowingStop { recorded, trigger_id } => {
            k.observe(&recorded, true);
            follow_stop(k, &trigger_id)
        }
        Step::Invalid(recorded) => {
            let reason = match recorded {
                None => Phase::DeployFailed,
                Some(_) => Phase::UpdateFailed,
            };
            let violations = k.violations.join("; ");
            invalid(k, reason, violations)
        }
        Step::FirstStart => {
            let initial = (k.spec.job())
                .and_then(|j| j.initial_savepoint_path.clone())
                .filter(|p| !p.trim().is_empty())
                .map(|path| RestorableState {
                    kind: SnapshotType::Savepoint,
                    path,
                    timestamp_ms: None,
                });
            commit(k, Restore::from(initial), Cause::FirstStart)
        }
        Step::Starting(recorded) => Intent::ContinueStart(recorded),
        // Only a kind that rolls back records ROLLING_BACK, or finds its spec changed back.
        Step::RollingBack(_) | Step::ChangedBack(_) => {
            k.own_step(&step).unwrap_or_else(|| k.done(SLOW)).into()
        }
        Step::WaitingForSnapshot(_) => wait(k, Wait::ForSnapshot),
        Step::Rescaling(observed) => rescale_in_place(k, &observed),
        Step::Change(observed) => change(k, &observed),
        Step::Suspended(ref observed) => match k.own_step(&step) {
            Some(plan) => plan.into(),
            None => steady(k, &observed.recorded, observed.pending),
        },
        // Declined (the kind noted why in status): the step after it.
        Step::Recovering(ref observed)
        | Step::RollbackDue(ref observed)
        | Step::ShuttingDown(ref observed) => match k.own_step(&step) {
            Some(plan) => plan.into(),
            None => {
                let next = super::step::after(k, observed.clone(), Some(step.name()));
                take(k, next)
            }
        },
        Step::RestartingFailed(_) => restart_failed(k),
        Step::SnapshotsDue(observed) => snapshots_of_running_job(k, &observed),
        Step::Steady(observed) => steady(k, &observed.recorded, observed.pending),
    }
}

/// Deletion behind the finalizer, one rule for both kinds (see [`super::deletion`]): a
/// running job is stopped with a savepoint when the settings say so, and its path is
/// recorded before anything that could lose it is torn down.
fn delete<'a, K: LifecycleHooks<'a>>(k: &mut K) -> IntentOf<'a, K> {
    let job_id = recorded_job_id(&k.status);
    let facts = k.facts;
    if let Some(trigger_id) = stop::pending_trigger(&k.status) {
        let (status, mut out) = k.parts();
        match deletion::follow(status, &job_id, &trigger_id, &facts, &mut out) {
            DeletionSavepoint::Recorded(path) => return Intent::TearDown(Some(path)),
            DeletionSavepoint::Resent => {
                k.conditions(
                    Phase::Deleting,
                    "stopping the job with a savepoint before deletion",
                );
                return k.done(FAST).into();
            }
            DeletionSavepoint::Failed(note) => {
                // The failure is what the user has to act on: it is written at once.
                k.conditions(Phase::Deleting, &note);
                return k.record_then(SLOW).into();
            }
            DeletionSavepoint::Pending => {
                k.conditions(Phase::Deleting, "waiting for the savepoint before deletion");
                return k.done(FAST).into();
            }
            DeletionSavepoint::Abandoned => {}
        }
    }
    let standing = k.standing();
    // Ending a stateful job must leave its latest checkpoint to record: a cancellation that
    // deletes it, or the deletion of a cluster whose HA metadata does not keep it, would
    // not. The job is stopped with a savepoint instead, unless the user said to delete
    // without one.
    let loses = match K::ENDS_WITH_ITS_CLUSTER {
        true => standing.forgotten_with_cluster.clone(),
        false => matches!(standing.on_cancel, OnCancel::Deleted(_) | OnCancel::Unknown(_))
            .then(|| standing.on_cancel.loses_checkpoint())
            .flatten(),
    };
    let loses_checkpoint = loses.is_some()
        && deletion::records_left_state(k.spec.job())
        && facts.policy.savepoint_on_deletion_set != Some(false);
    let wants_savepoint = deletion::wants_savepoint(k.spec.job(), facts.policy);
    // A JobManager that did not answer at this look may well run the job: the savepoint is
    // not given up for that (its latest state would go with the cluster), it is looked at
    // again soon. One that stays silent holds the deletion, as a failing savepoint does,
    // until the user says to delete without one.
    let may_run = job_status(&k.status)
        .state
        .is_some_and(|s| !s.is_globally_terminal());
    if (wants_savepoint || loses_checkpoint)
        && may_run
        && matches!(facts.job, Some(crate::flink::job::JobObservation::Unreachable(_)))
        && standing.can_stop_for_deletion
    {
        k.conditions(
            Phase::Deleting,
            "waiting for the JobManager to answer, to stop the job with a savepoint before deletion \
             (set kubernetes.operator.job.savepoint-on-deletion to false to delete without one)",
        );
        return k.done(FAST).into();
    }
    if (wants_savepoint || loses_checkpoint) && facts.running() && standing.can_stop_for_deletion {
        k.conditions(
            Phase::Deleting,
            "stopping the job with a savepoint before deletion",
        );
        if !wants_savepoint && let Some(why) = loses {
            let ending = match K::ENDS_WITH_ITS_CLUSTER {
                true => format!("deleting the cluster of job {job_id} without a savepoint"),
                false => format!("cancelling job {job_id}"),
            };
            k.event(EventNote::warning(
                Reason::Deleting,
                format!(
                    "Not {ending} for the deletion: {why}; stopping it with a savepoint instead \
                     (set kubernetes.operator.job.savepoint-on-deletion to false to delete without one)"
                ),
            ));
        }
        let (status, mut out) = k.parts();
        deletion::stop_with_savepoint(status, &job_id, &facts, &mut out);
        return k.record_then(FAST).into();
    }
    Intent::TearDown(None)
}

/// The spec cannot be acted on: the reason in status, with one Event per new reason.
fn invalid<'a, K: LifecycleHooks<'a>>(k: &mut K, phase: Phase, error: String) -> IntentOf<'a, K> {
    let (status, mut out) = k.parts();
    if status.error_mut().as_deref() != Some(error.as_str()) {
        out.event(EventNote::warning(Reason::ValidationError, error.clone()));
    }
    *status.error_mut() = Some(error.clone());
    k.conditions(phase, &error);
    k.done(SLOW).into()
}

/// Follows the recorded stop-with-savepoint of a change (see [`stop::follow`]).
fn follow_stop<'a, K: LifecycleHooks<'a>>(k: &mut K, trigger_id: &str) -> IntentOf<'a, K> {
    let job_id = recorded_job_id(&k.status);
    let facts = k.facts;
    let drain = facts.policy.drain && spec::is_suspended(k.spec);
    let (status, mut out) = k.parts();
    let stop = stop::StopOf {
        job_id: &job_id,
        drain,
    };
    match stop::follow(status, stop, trigger_id, &facts, &mut out) {
        Stopped::Completed(state) => commit_change(k, Restore::State(state), Cause::Savepoint),
        Stopped::Resent => {
            let message = stop::under_way(&k.status, "stopping the job with a savepoint");
            k.conditions(Phase::Updating, &message);
            k.done(FAST).into()
        }
        Stopped::Retry { seconds, note } => {
            k.conditions(Phase::Updating, &format!("{note}; trying again"));
            k.done(Next::Within(seconds)).into()
        }
        Stopped::Refused(why) => refused(k, Refusal::Said(why)),
        Stopped::Pending => {
            // The message of the stop sent: a status write per poll would delay the next.
            let message = stop::under_way(&k.status, &wording::stopping(&job_id, change_of(k)));
            k.conditions(Phase::Updating, &message);
            let triggered = (k.status.job_status().and_then(|j| j.savepoint_info.as_ref()))
                .and_then(|s| s.trigger_timestamp);
            let for_ms = triggered.map_or(0, |at| u64::try_from(facts.now_ms - at).unwrap_or(0));
            k.done(Next::Stopping { for_ms }).into()
        }
    }
}

/// A change of parallelism alone, applied in place: the status as observed is written, then
/// the job is rescaled, then the spec is recorded as DEPLOYED (a refusal leaves it
/// unrecorded, and the kind's recovery says so for the next look to upgrade instead).
fn rescale_in_place<'a, K: LifecycleHooks<'a>>(k: &mut K, observed: &Observed<K::Spec>) -> IntentOf<'a, K> {
    let Some((rescale, action)) = in_place(k, &observed.recorded) else {
        return change(k, observed);
    };
    k.phase(&observed.recorded, observed.pending);
    let mut after = k.status.clone();
    let spec = spec::with_recorded_nonces(k.spec, &observed.recorded);
    if let Some(rs) = after.reconciliation_mut().as_mut() {
        spec::record(rs, spec);
        rs.state = Some(ReconciliationState::Deployed);
    }
    *after.observed_generation_mut() = k.facts.generation;
    *after.lifecycle_state_mut() = Some(ResourceLifecycleState::Deployed);
    k.event(EventNote::normal(Reason::Scaling, wording::rescaling(&rescale)));
    k.actions.push(action);
    k.stepped(after, FAST).into()
}

/// A FAILED job is started again when `kubernetes.operator.job.restart.failed` is true:
/// without state in stateless mode, else from its newest checkpoint or savepoint if the
/// restore guard allows.
fn restart_failed<'a, K: LifecycleHooks<'a>>(k: &mut K) -> IntentOf<'a, K> {
    if spec::upgrade_mode(k.spec) == UpgradeMode::Stateless {
        return commit(k, Restore::Nothing, Cause::Restart);
    }
    let checkpoint = match k.standing().latest_checkpoint {
        Checkpoint::Found(found) => Some(found),
        Checkpoint::None => None,
        // Restarting from an older state than the latest checkpoint would lose progress.
        Checkpoint::Unavailable(_) | Checkpoint::NotLooked => return wait(k, Wait::ForCheckpointToRestart),
    };
    let facts = k.facts;
    let newest = change::Newest {
        job: &job_view(k),
        checkpoint,
        with_savepoints: true,
    };
    match change::newest_allowed(newest, facts.policy, facts.now_ms) {
        Ok(newest) => commit(k, Restore::State(newest), Cause::Restart),
        Err(why) => refused(k, Refusal::Restart(why)),
    }
}

/// With nothing pending: a manual snapshot asked for by a new nonce or a periodic
/// savepoint that is due, its trigger id recorded before it is sent (none due: steady).
fn snapshots_of_running_job<'a, K: LifecycleHooks<'a>>(
    k: &mut K,
    observed: &Observed<K::Spec>,
) -> IntentOf<'a, K> {
    let facts = k.facts;
    let spec = k.spec;
    let recorded = &observed.recorded;
    let Some(wanted) = snapshots::due(spec, recorded, &job_view(k), &facts) else {
        return steady(k, recorded, observed.pending);
    };
    // The retention goes in the same pass as the snapshot: a snapshot due at every look (a
    // schedule the webhook did not judge) must not keep it from ever running, and it must not
    // make a snapshot due now wait for a look of its own.
    let protected = protected_paths(k);
    let (status, mut out) = k.parts();
    snapshots::trim_resources(&*status, &facts, &protected, &mut out);
    let (status, mut out) = k.parts();
    if wanted.1 == SnapshotTriggerType::Manual {
        snapshots::record_nonce(status, spec, recorded, wanted.0);
    }
    snapshots::trigger(status, wanted, &facts, &mut out);
    k.phase(recorded, observed.pending);
    k.record_then(FAST).into()
}

/// The paths the job may still need (see [`Protected`]): of its status (a rollback in
/// flight included), its kept revisions and its spec.
fn protected_paths<'a, K: LifecycleHooks<'a>>(k: &K) -> Protected {
    Protected::of_status(
        Some(&k.status),
        k.facts.revisions,
        k.spec.job().and_then(|j| j.initial_savepoint_path.as_deref()),
    )
}

/// Nothing to do but to say where the job stands, and when to look again.
fn steady<'a, K: LifecycleHooks<'a>>(k: &mut K, recorded: &K::Spec, pending: bool) -> IntentOf<'a, K> {
    let facts = k.facts;
    let running = !pending && !spec::is_suspended(recorded) && k.standing().running;
    if running {
        let protected = protected_paths(k);
        let (status, mut out) = k.parts();
        if snapshots::trim_history(status, &facts, &protected, &mut out) {
            k.phase(recorded, pending);
            return k.done(FAST).into();
        }
        let (status, mut out) = k.parts();
        if snapshots::trim_resources(&*status, &facts, &protected, &mut out) {
            k.phase(recorded, pending);
            return k.done(FAST).into();
        }
    }
    let next = k.phase(recorded, pending);
    let job = job_view(k);
    let requeue = [
        (SnapshotType::Savepoint, facts.policy.periodic_savepoint.as_ref()),
        (
            SnapshotType::Checkpoint,
            facts.policy.periodic_checkpoint.as_ref(),
        ),
    ]
    .into_iter()
    .fold(next, |next, (kind, schedule)| {
        savepoint_history::requeue_for_periodic(
            &job,
            kind,
            schedule,
            (facts.now_ms, facts.policy.progress_check_ms),
            next,
        )
    });
    k.done(requeue).into()
}
