//! The step a job is at, named: derived from its recorded status and what was observed,
//! without side effects, then dispatched by one `match` in [`machine`](super::machine)
//! (its `next_step`). The variants are declared in the order they are tried: the first
//! whose condition holds is the step.
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
//! A kind takes part in a step through [`JobKind::own_step`](super::kind::JobKind::own_step)
//! before the machine does (`Deleting`, `UntilReady`, `RollingBack`, `ChangedBack`, `Change`,
//! `Suspended`, `Recovering`, `RollbackDue`, `ShuttingDown`); the rest of each row is the machine's.
//!
//! The step is derived in two phases, around what observing writes into the status being
//! built. [`before_observing`] reads the stored status and the observation only. The
//! kind's admission (its finalizer and `observedGeneration`) is written once the step is
//! known and is not `Deleting`: every other step writes its status with it, and no
//! condition reads it. Then, if no step was found, three effects come before the rest of
//! the step can be known, and the conditions after them read what they wrote:
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
//! [`after_observing`] derives the rest from that. Two steps of an application
//! cluster, `Recovering` and `RollbackDue`, decide and act in one and may decline when the
//! state they would restore is not in the high-availability metadata: the kind then notes
//! why in status (with a warning), and the step after it is derived ([`after`]) from
//! the status with that note, and dispatched.

use flink_operator_api::common::ReconciliationState;

use super::{
    kind::{JobKind, Step, in_place, job_view},
    snapshots, spec, stop,
    terms::LifecycleStatus,
};
use flink_operator_api::FlinkSpec;

/// Every step, in the order they are tried (the module's table): a step is taken only when
/// none before it is due, and after a declined `Recovering` or `RollbackDue` only those after
/// it are (see [`after`]). The order is this list, not the order of the enum's variants.
pub const ORDER: [Step; 19] = [
    Step::Deleting,
    Step::Unreadable,
    Step::UntilReady,
    Step::FollowingStop,
    Step::Invalid,
    Step::FirstStart,
    Step::Starting,
    Step::RollingBack,
    Step::ChangedBack,
    Step::WaitingForSnapshot,
    Step::Rescaling,
    Step::Change,
    Step::Suspended,
    Step::Recovering,
    Step::RestartingFailed,
    Step::RollbackDue,
    Step::ShuttingDown,
    Step::SnapshotsDue,
    Step::Steady,
];

/// The step before observing, or the recorded spec of a job to be observed first.
#[derive(Debug)]
pub enum Before<'r, S> {
    Step(Step),
    Observe(&'r S),
}

/// What the steps after observing are derived from and act on.
#[derive(Debug, Clone)]
pub struct Observed<S> {
    /// The recorded spec, with the changes that end no job recorded.
    pub recorded: S,
    /// The spec that runs (after an application cluster's rollback: the last stable one).
    pub running: S,
    /// The spec differs from the recorded one in a way that ends the job.
    pub changed: bool,
    /// The recorded spec is suspended.
    pub suspended: bool,
    /// A manual or periodic snapshot is pending.
    pub pending: bool,
}

/// The step that the stored status and the observation say, before anything is
/// observed into status, or the recorded spec for the job to be observed first.
pub fn before_observing<'r, 'a, K: JobKind<'a>>(
    k: &K,
    recorded: &'r Result<Option<K::Spec>, String>,
) -> Before<'r, K::Spec> {
    if k.deleting() {
        return Before::Step(Step::Deleting);
    }
    let Ok(recorded) = recorded else {
        return Before::Step(Step::Unreadable);
    };
    if !k.standing().ready {
        return Before::Step(Step::UntilReady);
    }
    // A stop-with-savepoint in flight is followed to its end whatever the spec says now
    // (changed back, or invalid): the job stops either way, and its savepoint must be
    // recorded while the JobManager still knows it.
    if recorded.is_some() && stop::pending_trigger(&k.status).is_some() {
        return Before::Step(Step::FollowingStop);
    }
    if !k.violations.is_empty() {
        return Before::Step(Step::Invalid);
    }
    let Some(recorded) = recorded else {
        return Before::Step(Step::FirstStart);
    };
    match k.status.reconciliation().and_then(|rs| rs.state) {
        Some(ReconciliationState::Upgrading) => Before::Step(Step::Starting),
        Some(ReconciliationState::RollingBack) if K::ROLLS_BACK => Before::Step(Step::RollingBack),
        _ => Before::Observe(recorded),
    }
}

/// The step once the job is observed (see the module doc for what was written first).
pub fn after_observing<'a, K: JobKind<'a>>(k: &K, observed: &Observed<K::Spec>) -> Step {
    if observed.changed {
        if k.own_step_due(Step::ChangedBack, &observed.running) {
            return Step::ChangedBack;
        }
        if observed.pending && !k.facts.policy.ignore_pending_savepoint {
            return Step::WaitingForSnapshot;
        }
        if in_place(k, &observed.recorded).is_some() {
            return Step::Rescaling;
        }
        return Step::Change;
    }
    if observed.suspended {
        return Step::Suspended;
    }
    after(k, observed, None)
}

/// The first step of a running (or ended) job, of those after `past` (None: all of
/// them): after a declined `Recovering` or `RollbackDue`, the one derived next.
pub fn after<'a, K: JobKind<'a>>(k: &K, observed: &Observed<K::Spec>, past: Option<Step>) -> Step {
    let position = |step: Step| ORDER.iter().position(|s| *s == step);
    let open = |step: Step| past.is_none_or(|past| position(step) > position(past));
    let recorded = &observed.recorded;
    if open(Step::Recovering) && k.own_step_due(Step::Recovering, recorded) {
        return Step::Recovering;
    }
    let standing = k.standing();
    if open(Step::RestartingFailed) && !observed.pending && standing.failed_to_restart {
        return Step::RestartingFailed;
    }
    if open(Step::RollbackDue) && k.own_step_due(Step::RollbackDue, recorded) {
        return Step::RollbackDue;
    }
    if open(Step::ShuttingDown) && k.own_step_due(Step::ShuttingDown, recorded) {
        return Step::ShuttingDown;
    }
    if !observed.pending
        && standing.running
        && snapshots::due(k.spec, recorded, &job_view(k), &k.facts).is_some()
    {
        return Step::SnapshotsDue;
    }
    Step::Steady
}

/// What the steps act on, as deriving the step found it.
pub struct Found<S> {
    /// The recorded spec as read.
    pub read: Result<Option<S>, String>,
    /// What observing found, once the step needed it.
    pub observed: Option<Observed<S>>,
}

impl<S> Found<S> {
    pub fn recorded(&self) -> Option<&S> {
        self.read.as_ref().ok().and_then(Option::as_ref)
    }

    /// The recorded spec of a step after [`Step::FirstStart`] (always there: the step is
    /// derived only when it is; `None` would be a bug, reported on the resource).
    pub fn spec(&self) -> Option<&S> {
        self.recorded()
    }

    /// What a step after [`Step::RollingBack`] was derived from (always there, as above).
    pub fn observed(&self) -> Option<&Observed<S>> {
        self.observed.as_ref()
    }
}

/// The step in two phases around what observing writes (see the module doc for why).
pub fn derive<'a, K: JobKind<'a>>(k: &mut K) -> (Step, Found<K::Spec>) {
    let read = k.recorded();
    let before = before_observing(k, &read);
    if !matches!(before, Before::Step(Step::Deleting)) {
        k.admit();
    }
    let (step, observed) = match before {
        Before::Step(step) => (step, None),
        Before::Observe(recorded) => {
            let observed = observe_job(k, recorded.clone());
            (after_observing(k, &observed), Some(observed))
        }
    };
    (step, Found { read, observed })
}

/// What is written into status before the steps after the start can be known: a spec whose
/// changes end no job is recorded, the job is observed, the pending snapshots are settled.
fn observe_job<'a, K: JobKind<'a>>(k: &mut K, recorded: K::Spec) -> Observed<K::Spec> {
    let changed = spec::changed(&recorded, k.spec);
    let as_recorded = if !changed && &recorded != k.spec {
        record_ignored_changes(k, &recorded)
    } else {
        recorded.clone()
    };
    let running = k.observe(&recorded, false);
    let recorded = as_recorded;
    let suspended = spec::is_suspended(&recorded);
    // A suspended job has nothing to poll: a trigger left from before is not waited for.
    let pending = !suspended && settle(k, &recorded);
    Observed {
        recorded,
        running,
        changed,
        suspended,
        pending,
    }
}

/// Records a spec whose changes end no job, and returns it as the recorded one; the
/// recorded snapshot nonces stay until their snapshots are triggered.
fn record_ignored_changes<'a, K: JobKind<'a>>(k: &mut K, recorded: &K::Spec) -> K::Spec {
    let mut spec = spec::with_recorded_nonces(k.spec, recorded);
    // The recorded upgrade mode also says how a suspension left the job's state and how a
    // start that has not run yet restores it (a last-state one: from the HA metadata). A
    // change of the mode alone is recorded once the job runs again, not before: it would
    // lose that.
    if (spec::is_suspended(recorded) || k.standing().never_ran.is_some())
        && let (Some(job), Some(old)) = (spec.job_mut(), recorded.job())
    {
        job.upgrade_mode = old.upgrade_mode;
    }
    let generation = k.facts.generation;
    let (status, _) = k.parts();
    if let Some(rs) = status.reconciliation_mut().as_mut() {
        spec::record(rs, spec.clone());
    }
    *status.observed_generation_mut() = generation;
    spec
}

/// Follows the pending manual or periodic snapshots into status; whether one is pending.
fn settle<'a, K: JobKind<'a>>(k: &mut K, recorded: &K::Spec) -> bool {
    let facts = k.facts;
    let (status, mut out) = k.parts();
    snapshots::settle(status, &facts, recorded.job(), &mut out)
}
