//! The step a job is at: derived from its recorded status and what was observed, without
//! side effects, then dispatched by one `match` in [`machine`](super::machine) (its `take`).
//! The steps are tried in the order of [`ORDER`] (the table's): the first whose condition
//! holds is the step. Each carries what it acts on ([`Step`]): the recorded spec, and once
//! the job was observed, what observing found.
//!
//! | step | when (status + observation) | does | next |
//! |---|---|---|---|
//! | `Deleting` | `metadata.deletionTimestamp` is set | the kind's part first (a session job that nothing runs is let go at once); then follows the deletion's stop-with-savepoint, or stops a running job with one (`savepoint-on-deletion`), records its path, then the kind tears down what runs the job and lets the resource go | `Deleting`, until the finalizer is gone |
//! | `Unreadable` | `lastReconciledSpec` cannot be read (a session job: a wrong guess would submit a second job; an application cluster reads it as not recorded) | the reason in `status.error`, DeployFailed, one Event per new reason | `Unreadable`, until it is repaired |
//! | `UntilReady` | what runs the job cannot act yet (a session job's session cluster is not READY) | says what it waits for | the step derived once it is ready |
//! | `FollowingStop` | a stop-with-savepoint's trigger id is recorded, and a spec | the kind observes its job; the stop is followed whatever the spec says now: completed, the new spec is committed with the savepoint; lost, resent or retried; refused | `Starting`, `FollowingStop`, or the job keeps running refused |
//! | `Invalid` | the spec violates the rules (the webhook may have been bypassed) | the violations in `status.error`: DeployFailed (nothing recorded) or UpdateFailed; nothing that runs changes | `Invalid`, until the spec is fixed |
//! | `FirstStart` | nothing is recorded | the spec and the job id recorded (UPGRADING), then the job started: a cluster deployed with it, or its jar submitted (an application created suspended: SUSPENDED, nothing deployed) | `Starting` |
//! | `Starting` | recorded UPGRADING | the kind's start goes on (the cluster deployed, the jar submitted), DEPLOYED once it is | `Steady` |
//! | `RollingBack` | recorded ROLLING_BACK, of a kind that rolls back (an application cluster) | the last stable spec is deployed (unreadable: refused until the spec changes) | `Steady` (ROLLED_BACK) |
//! | `ChangedBack` | the spec changed, back to what runs since a rollback | the spec recorded as DEPLOYED, nothing redeployed | `Steady` |
//! | `WaitingForSnapshot` | the spec changed while a manual or periodic snapshot is pending, and `kubernetes.operator.job.upgrade.ignore-pending-savepoint` is false (the default) | waits for it: ending the job would lose it | `Change` |
//! | `Rescaling` | the spec changed in parallelism alone (`job.parallelism`, `pipeline.jobvertex-parallelism-overrides`, an application cluster's `taskManager.replicas`, the autoscaler's overrides), the job is RUNNING, `kubernetes.operator.job.upgrade.inplace-scaling.enabled` holds, the cluster's scheduler can rescale it (adaptive on Flink 1.18+, or a standalone cluster's reactive mode), and no in-place rescale of this generation failed | the status written as observed, then the job given its new resource requirements (or the TaskManagers their replicas), then the spec recorded as DEPLOYED, Event `Scaling`; Flink refusing: `ScalingFailed` with the reason in status | `Steady` (the same job, STABLE once it runs again), or `Change` after a refusal |
//! | `Change` | the spec changed in a way that ends the job | refused again if this generation was refused; a suspended spec recorded or resumed; a session cluster redeployed; then the job ended as its upgrade mode says (stop-with-savepoint, cancel, last-state, a fresh savepoint, a redeploy from `initialSavepointPath`) and the new spec committed with the state it starts from, or a wait, or a refusal | `FollowingStop`, `Starting`, `Change` (waiting for the job or its cancellation), or refused |
//! | `Suspended` | the spec is unchanged and the recorded one is suspended | nothing (a kind without a rest of its own, a session job: what `Steady` does) | `Suspended` |
//! | `Recovering` | the kind's recovery is due (an application cluster's JobManager Deployment went missing, or its job was judged unhealthy) | the recorded spec deployed again, from the checkpoint in the high-availability metadata or, stateless, without state; when that metadata holds none it declines, noting why | `Starting`, or (declined) the step derived after `Recovering` |
//! | `RestartingFailed` | the job is FAILED and `kubernetes.operator.job.restart.failed` is true (not after a rollback) | started again: stateless without state, else from its newest state under the restore-age guard, once the latest checkpoint is known | `Starting`, or refused |
//! | `RollbackDue` | the deployed spec did not become stable within the readiness timeout and a different stable spec can be gone back to | ROLLING_BACK recorded, with a warning; when the high-availability metadata holds no checkpoint it declines, noting why | `RollingBack`, or (declined) the step derived after `RollbackDue` |
//! | `ShuttingDown` | the job ended (FINISHED, FAILED and not restarted, CANCELED) and its JobManager still runs `kubernetes.operator.jm-deployment.shutdown-ttl` after the job's last state change (an application cluster) | the cluster deleted, its high-availability metadata kept; the job stays as it ended | `Steady` |
//! | `SnapshotsDue` | the job runs, nothing is pending, and a nonce asks for a snapshot or a periodic savepoint is due | the trigger id recorded before the snapshot is triggered | `Steady` (the snapshot settled into status) |
//! | `Steady` | none of the above | the savepoint history and snapshot resources trimmed, the phase said, the next look scheduled | `Steady` |
//!
//! A kind takes part in a step through [`LifecycleHooks::own_step`](super::kind::LifecycleHooks::own_step)
//! before the machine does (`Deleting`, `UntilReady`, `RollingBack`, `ChangedBack`, `Change`,
//! `Suspended`, `Recovering`, `RollbackDue`, `ShuttingDown`); the rest of each row is the machine's.
//!
//! The step is derived in two phases around observing, which is the machine's to do
//! (`machine/observing.rs`), not this module's. [`before_observing`] reads the stored status
//! and the observation only. When it finds no step, the machine writes three things into the
//! status being built, and [`after_observing`] derives the rest of the step from what they
//! wrote:
//!
//! 1. a spec whose changes end no job is recorded as it is (the recorded spec the later
//!    steps compare with and act on);
//! 2. the kind observes its job into status (the job's state, which `RestartingFailed`,
//!    `RollbackDue` and `SnapshotsDue` read; an application cluster's health history, which
//!    `Recovering` reads);
//! 3. the pending manual and periodic snapshots are settled into status (whether one is
//!    pending, which `WaitingForSnapshot`, `RestartingFailed` of a session job, `SnapshotsDue`
//!    and `Steady` read).
//!
//! The kind's admission (its finalizer and `observedGeneration`) is written by the machine
//! once the step before observing is known and is not `Deleting`: every other step writes
//! its status with it, and no condition reads it. Two steps of an application cluster,
//! `Recovering` and `RollbackDue`, decide and act in one and may decline when the state they
//! would restore is not in the high-availability metadata: the kind then notes why in
//! status (with a warning), and the step after it is derived ([`after`]) from the status
//! with that note, and dispatched.

use flink_operator_api::LifecycleStatus;
use flink_operator_api::common::ReconciliationState;

use super::{
    kind::{LifecycleHooks, Observed, Step, StepName, in_place, job_view},
    snapshots, stop,
};

/// Every step, in the order they are tried (the module's table): a step is taken only when
/// none before it is due, and after a declined `Recovering` or `RollbackDue` only those after
/// it are (see [`after`]). The order is this list, not the order of the enum's variants.
pub const ORDER: [StepName; 19] = [
    StepName::Deleting,
    StepName::Unreadable,
    StepName::UntilReady,
    StepName::FollowingStop,
    StepName::Invalid,
    StepName::FirstStart,
    StepName::Starting,
    StepName::RollingBack,
    StepName::ChangedBack,
    StepName::WaitingForSnapshot,
    StepName::Rescaling,
    StepName::Change,
    StepName::Suspended,
    StepName::Recovering,
    StepName::RestartingFailed,
    StepName::RollbackDue,
    StepName::ShuttingDown,
    StepName::SnapshotsDue,
    StepName::Steady,
];

/// The step before observing, or the recorded spec of a job to be observed first.
#[derive(Debug)]
pub enum Before<S> {
    Step(Step<S>),
    Observe(S),
}

/// The step that the stored status and the observation say, before anything is
/// observed into status, or the recorded spec (`recorded`, as the kind read it) for the job
/// to be observed first.
pub fn before_observing<'a, K: LifecycleHooks<'a>>(
    k: &K,
    recorded: Result<Option<K::Spec>, String>,
) -> Before<K::Spec> {
    if k.deleting() {
        return Before::Step(Step::Deleting(recorded.ok().flatten()));
    }
    let recorded = match recorded {
        Ok(recorded) => recorded,
        Err(why) => return Before::Step(Step::Unreadable(why)),
    };
    if !k.standing().ready {
        return Before::Step(Step::UntilReady(recorded));
    }
    // A stop-with-savepoint in flight is followed to its end whatever the spec says now
    // (changed back, or invalid): the job stops either way, and its savepoint must be
    // recorded while the JobManager still knows it.
    if let Some(spec) = &recorded
        && let Some(trigger_id) = stop::pending_trigger(&k.status)
    {
        return Before::Step(Step::FollowingStop {
            recorded: spec.clone(),
            trigger_id,
        });
    }
    if !k.violations.is_empty() {
        return Before::Step(Step::Invalid(recorded));
    }
    let Some(recorded) = recorded else {
        return Before::Step(Step::FirstStart);
    };
    match k.status.reconciliation().and_then(|rs| rs.state) {
        Some(ReconciliationState::Upgrading) => Before::Step(Step::Starting(recorded)),
        Some(ReconciliationState::RollingBack) if K::ROLLS_BACK => Before::Step(Step::RollingBack(recorded)),
        _ => Before::Observe(recorded),
    }
}

/// The step once the job is observed (see the module doc for what was written first).
pub fn after_observing<'a, K: LifecycleHooks<'a>>(k: &K, observed: Observed<K::Spec>) -> Step<K::Spec> {
    if observed.changed {
        if k.own_step_due(StepName::ChangedBack, &observed.running) {
            return Step::ChangedBack(observed);
        }
        if observed.pending && !k.facts.policy.ignore_pending_savepoint {
            return Step::WaitingForSnapshot(observed);
        }
        if in_place(k, &observed.recorded).is_some() {
            return Step::Rescaling(observed);
        }
        return Step::Change(observed);
    }
    if observed.suspended {
        return Step::Suspended(observed);
    }
    after(k, observed, None)
}

/// The first step of a running (or ended) job, of those after `past` (None: all of
/// them): after a declined `Recovering` or `RollbackDue`, the one derived next.
pub fn after<'a, K: LifecycleHooks<'a>>(
    k: &K,
    observed: Observed<K::Spec>,
    past: Option<StepName>,
) -> Step<K::Spec> {
    let position = |step: StepName| ORDER.iter().position(|s| *s == step);
    let open = |step: StepName| past.is_none_or(|past| position(step) > position(past));
    let recorded = &observed.recorded;
    if open(StepName::Recovering) && k.own_step_due(StepName::Recovering, recorded) {
        return Step::Recovering(observed);
    }
    let standing = k.standing();
    if open(StepName::RestartingFailed) && !observed.pending && standing.failed_to_restart {
        return Step::RestartingFailed(observed);
    }
    if open(StepName::RollbackDue) && k.own_step_due(StepName::RollbackDue, recorded) {
        return Step::RollbackDue(observed);
    }
    if open(StepName::ShuttingDown) && k.own_step_due(StepName::ShuttingDown, recorded) {
        return Step::ShuttingDown(observed);
    }
    if !observed.pending
        && standing.running
        && snapshots::due(k.spec, recorded, &job_view(k), &k.facts).is_some()
    {
        return Step::SnapshotsDue(observed);
    }
    Step::Steady(observed)
}
