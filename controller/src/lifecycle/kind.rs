//! What a job kind and the lifecycle machine tell each other: where the job stands
//! ([`Standing`]), what a start restores ([`Restore`]) and why ([`Cause`]), why a job is
//! cancelled ([`Cancel`]), what a change waits for ([`Wait`]) or why it is refused
//! ([`Refusal`]), the kind's hooks ([`LifecycleHooks`]) and what the machine leaves to the
//! kind to carry out ([`Intent`]). The machine (`machine.rs`), the step
//! table (`step.rs`), the revision history (`history.rs`) and the wording (`wording.rs`) all
//! read these; none of them is imported back from here.

use flink_operator_api::LifecycleStatus;
use std::ops::DerefMut;

use flink_operator_api::common::{FlinkJobState, JobStatus};

use super::{
    facts::JobAction,
    ledger::Ledger,
    rescale::{self, Rescale},
    restore::RestorableState,
    retention::OnCancel,
    snapshot_resources,
};
use crate::{
    plan::{Next, Plan},
    policy::Rescaler,
};
use flink_operator_api::FlinkSpec;

/// The name of a step of the lifecycle (the table of `step.rs` says when each is taken, in
/// what order, and what follows): what a kind says it has a part in, and what the order of
/// the steps lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepName {
    Deleting,
    Unreadable,
    UntilReady,
    FollowingStop,
    Invalid,
    FirstStart,
    Starting,
    RollingBack,
    ChangedBack,
    WaitingForSnapshot,
    Rescaling,
    Change,
    Suspended,
    Recovering,
    RestartingFailed,
    RollbackDue,
    ShuttingDown,
    SnapshotsDue,
    Steady,
}

/// Where a job is in its lifecycle, with what the step acts on: the recorded spec where
/// there is one, and once the job was observed, what observing found ([`Observed`]).
#[derive(Debug, Clone)]
pub enum Step<S> {
    /// The recorded spec, if any.
    Deleting(Option<S>),
    /// Why the recorded spec cannot be read.
    Unreadable(String),
    UntilReady(Option<S>),
    FollowingStop {
        recorded: S,
        trigger_id: String,
    },
    /// The recorded spec, if any (none: the spec was never deployed).
    Invalid(Option<S>),
    FirstStart,
    Starting(S),
    RollingBack(S),
    ChangedBack(Observed<S>),
    WaitingForSnapshot(Observed<S>),
    Rescaling(Observed<S>),
    Change(Observed<S>),
    Suspended(Observed<S>),
    Recovering(Observed<S>),
    RestartingFailed(Observed<S>),
    RollbackDue(Observed<S>),
    ShuttingDown(Observed<S>),
    SnapshotsDue(Observed<S>),
    Steady(Observed<S>),
}

impl<S> Step<S> {
    pub fn name(&self) -> StepName {
        match self {
            Step::Deleting(_) => StepName::Deleting,
            Step::Unreadable(_) => StepName::Unreadable,
            Step::UntilReady(_) => StepName::UntilReady,
            Step::FollowingStop { .. } => StepName::FollowingStop,
            Step::Invalid(_) => StepName::Invalid,
            Step::FirstStart => StepName::FirstStart,
            Step::Starting(_) => StepName::Starting,
            Step::RollingBack(_) => StepName::RollingBack,
            Step::ChangedBack(_) => StepName::ChangedBack,
            Step::WaitingForSnapshot(_) => StepName::WaitingForSnapshot,
            Step::Rescaling(_) => StepName::Rescaling,
            Step::Change(_) => StepName::Change,
            Step::Suspended(_) => StepName::Suspended,
            Step::Recovering(_) => StepName::Recovering,
            Step::RestartingFailed(_) => StepName::RestartingFailed,
            Step::RollbackDue(_) => StepName::RollbackDue,
            Step::ShuttingDown(_) => StepName::ShuttingDown,
            Step::SnapshotsDue(_) => StepName::SnapshotsDue,
            Step::Steady(_) => StepName::Steady,
        }
    }
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

/// What the next job starts from; committed with its spec before anything is started.
#[derive(Debug, Clone, PartialEq)]
pub enum Restore {
    Nothing,
    State(RestorableState),
    /// The latest checkpoint in the high-availability metadata the previous cluster kept
    /// (an application cluster's last-state change or resume).
    LastState,
}

impl Restore {
    pub fn from(state: Option<RestorableState>) -> Self {
        state.map_or(Restore::Nothing, Restore::State)
    }
}

/// Why a spec is committed (the kind words it in its status and Events).
#[derive(Debug, Clone, PartialEq)]
pub enum Cause {
    /// The spec's job (or cluster) is started for the first time (from
    /// `spec.job.initialSavepointPath`, if set).
    FirstStart,
    /// A suspended spec changed while suspended: recorded, applied when it resumes.
    WhileSuspended,
    /// A change of a job that ends without state.
    WithoutState,
    /// A last-state change of a job that ends with its cluster, which keeps its
    /// high-availability metadata.
    KeepingLastState,
    /// The job was stopped with a savepoint for the change.
    Savepoint,
    /// The job had ended (or was cancelled) for the change: it starts from its newest state.
    Ended,
    /// The job had ended; its last savepoint is young enough to restore.
    FreshSavepoint,
    /// A suspended job runs again.
    Resume,
    /// A new `savepointRedeployNonce`: the job starts from `initialSavepointPath`.
    Redeploy(String),
    /// What ran the previous job never ran it: the job starts from the same state.
    NeverRan,
    /// A FAILED job is started again (`kubernetes.operator.job.restart.failed`).
    Restart,
}

/// Why a running job is cancelled (the kind words it).
#[derive(Debug, Clone, PartialEq)]
pub enum Cancel {
    /// For a change that keeps no state.
    ForChange,
    /// For a change that restores the job's newest state once it is cancelled: its
    /// retained checkpoints (`with_savepoints`: its savepoints too, as the upgrade mode's
    /// savepoint is not taken, `take-savepoint: false`). `newest`: that state, if known.
    ForNewest {
        with_savepoints: bool,
        newest: Option<RestorableState>,
    },
    /// For a redeploy from `initialSavepointPath`.
    ForRedeploy(String),
}

/// What a change waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// A manual or periodic snapshot is pending: ending the job would lose it.
    ForSnapshot,
    /// The job is starting or restarting: its savepoint is taken once it runs.
    ForRunning,
    /// The job is being cancelled.
    ForCancel,
    /// The latest checkpoint of the ended job is being read.
    ForCheckpoint,
    /// The latest checkpoint of the FAILED job is being read, to restart it.
    ForCheckpointToRestart,
}

/// Why a change or a restore is refused; the job stays as it is.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// Said the same for every kind.
    Said(String),
    /// No savepoint could be taken within the grace period.
    StopGaveUp(String),
    /// [`change::Ending::Refuse`]: a savepoint is needed and none can be taken or used.
    Ending(String),
    /// The job is not cancelled without a savepoint: the state it would restore is too
    /// old, or (None) none is known.
    NotCancelled(Option<String>),
    /// The ended job's newest state is too old or unknown.
    Ended(String),
    /// The job is gone and its last checkpoint cannot be read.
    GoneWithoutCheckpoint(String),
    /// A FAILED job is not restarted: its newest state is too old or unknown.
    Restart(String),
}

/// The latest completed checkpoint of the job, as far as its kind knows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Checkpoint {
    Found(RestorableState),
    /// The job has none.
    None,
    /// It could not be read (why).
    Unavailable(String),
    /// It was not looked up.
    NotLooked,
}

impl Checkpoint {
    pub fn found(&self) -> Option<RestorableState> {
        match self {
            Checkpoint::Found(state) => Some(state.clone()),
            _ => None,
        }
    }
}

/// Where a job stands, as only its kind can say (read without side effects, from the
/// observation and the status being built).
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    /// What runs the job can act (a session job's session cluster is READY); else the step
    /// is [`Step::UntilReady`].
    pub ready: bool,
    /// The job's state as the kind knows it (None: gone or unknown).
    pub state: Option<FlinkJobState>,
    /// The job has ended (or is gone).
    pub ended: bool,
    /// The job runs, so that snapshots can be taken of it.
    pub running: bool,
    /// The job is FAILED and the kind restarts it (`kubernetes.operator.job.restart.failed`;
    /// an application cluster: not after a rollback).
    pub failed_to_restart: bool,
    /// What ran the job never ran it since it was started: what that start was to restore
    /// (the next start restores the same).
    pub never_ran: Option<Restore>,
    pub latest_checkpoint: Checkpoint,
    /// What the job ends with keeps a completed checkpoint of it for a last-state change
    /// (an application cluster's high-availability metadata).
    pub last_state_held: bool,
    /// What runs the job can still stop it with a savepoint for its deletion.
    pub can_stop_for_deletion: bool,
    /// What becomes of the job's checkpoints if it is cancelled (see
    /// [`retention`](super::retention)): a change cancels it to restore its latest
    /// checkpoint only when they are retained.
    pub on_cancel: OnCancel,
    /// Why nothing points at the job's latest checkpoint once what runs it is deleted (an
    /// application cluster without high availability, whose HA metadata would otherwise keep
    /// it for the deletion's record); None when something does. A session job's
    /// cancellation is told by [`Standing::on_cancel`].
    pub forgotten_with_cluster: Option<String>,
}

/// The decision under construction of a kind: its [`Ledger`].
pub type LedgerOf<'a, K> = Ledger<
    'a,
    <K as LifecycleHooks<'a>>::Spec,
    <K as LifecycleHooks<'a>>::Status,
    <K as LifecycleHooks<'a>>::Action,
>;

/// A job kind's part in the lifecycle: its effects. It is implemented by the kind's decision
/// under construction, which is a [`Ledger`] (the resource, the facts, the status being
/// built, the actions and the Events, read and written by the machine) with the kind's own
/// observation beside it.
pub trait LifecycleHooks<'a>:
    DerefMut<
    Target = Ledger<
        'a,
        <Self as LifecycleHooks<'a>>::Spec,
        <Self as LifecycleHooks<'a>>::Status,
        <Self as LifecycleHooks<'a>>::Action,
    >,
>
{
    type Spec: FlinkSpec + 'a;
    type Status: LifecycleStatus + 'a;
    type Action: From<JobAction> + AsJobAction;

    /// Whether the job ends with what runs it: deleting an application cluster ends its job,
    /// and its high-availability metadata keeps the latest checkpoint for a last-state
    /// change; a session job is cancelled instead.
    const ENDS_WITH_ITS_CLUSTER: bool;
    /// Whether the kind rolls back a spec that did not become stable (an application
    /// cluster): a recorded ROLLING_BACK is its [`Step::RollingBack`].
    const ROLLS_BACK: bool = false;

    /// Where the job stands (see [`Standing`]).
    fn standing(&self) -> Standing;
    /// The recorded spec; an unreadable one is an error to show (or, `Ok(None)`, a first
    /// start).
    fn recorded(&self) -> Result<Option<Self::Spec>, String>;
    /// The finalizer, and what every step but [`Step::Deleting`] writes.
    fn admit(&mut self);
    /// What was observed of the job (and what runs it) into status; `stopping`: while a
    /// stop-with-savepoint is followed. Returns the spec that runs (after an application
    /// cluster's rollback: the last stable one; else `recorded`).
    fn observe(&mut self, recorded: &Self::Spec, stopping: bool) -> Self::Spec;
    /// Conditions for the phase the status shows, and how soon a job that needs nothing
    /// done is looked at again.
    fn phase(&mut self, recorded: &Self::Spec, pending: bool) -> Next;
    /// Whether the kind's own step `step` is due ([`Step::ChangedBack`]: the changed spec is
    /// what runs already, since an application cluster's rollback; [`Step::Recovering`]:
    /// before a restart, an application cluster's lost JobManager or unhealthy job;
    /// [`Step::RollbackDue`]: after a restart, an application cluster's rollback). `spec`:
    /// the spec that runs for `ChangedBack`, else the recorded one. Read without side effects.
    fn own_step_due(&self, _step: StepName, _spec: &Self::Spec) -> bool {
        false
    }
    /// The action that rescales the running job in place for `change`, if what runs it can
    /// (see [`rescale`](super::rescale)); None: the change is an upgrade. By default, the
    /// adaptive scheduler's new resource requirements.
    fn rescaling(&self, change: &Rescale) -> Option<Self::Action> {
        (self.facts.policy.rescaler == Some(Rescaler::Adaptive))
            .then(|| JobAction::Rescale(change.clone()).into())
    }
    /// The kind's part of `step`, before the machine's (the step table says which kind has
    /// one): `Deleting` (before the job is stopped: a session job whose session cluster is
    /// gone lets go at once), `UntilReady` (what it waits for), `RollingBack` (the recorded
    /// rollback goes on), `ChangedBack` (the spec changed back to what runs is recorded),
    /// `Change` (before the job is ended: a session cluster's redeploy; a session job's
    /// JobManager that does not answer), `Suspended` (a suspended job needs nothing done),
    /// and, once [`LifecycleHooks::own_step_due`], `Recovering` and `RollbackDue`. None: the kind
    /// has no part in it, or declined (why is noted in status); the machine goes on as that
    /// step says.
    fn own_step(&mut self, _step: &Step<Self::Spec>) -> Option<Plan<Self::Status, Self::Action>> {
        None
    }
}

pub type PlanOf<'a, K> = Plan<<K as LifecycleHooks<'a>>::Status, <K as LifecycleHooks<'a>>::Action>;

/// What the machine decided for one pass: a plan of its own, or what only the kind can carry
/// out (a start, a teardown), which the kind turns into its plan; either then goes through
/// the machine's `finish`, unless the pass is [`Intent::Whole`].
#[derive(Debug)]
pub enum Intent<Spec, Status, Action> {
    /// The pass ends with this plan as it is (a rollback request answered).
    Whole(Plan<Status, Action>),
    /// The machine's plan of the step.
    Plan(Plan<Status, Action>),
    /// Record the spec to run and what it starts from, then start it (or suspend);
    /// `message`: what the lifecycle said of it (its Event is already in the decision).
    Commit {
        restore: Restore,
        cause: Cause,
        message: Option<String>,
    },
    /// A recorded start (UPGRADING) goes on: the cluster deployed, the jar submitted.
    ContinueStart(Spec),
    /// Tear down what runs the job (or cancel it) and let the resource go, with the path of
    /// the deletion's savepoint if one was recorded.
    TearDown(Option<String>),
}

impl<Spec, Status, Action> From<Plan<Status, Action>> for Intent<Spec, Status, Action> {
    fn from(plan: Plan<Status, Action>) -> Self {
        Intent::Plan(plan)
    }
}

pub type IntentOf<'a, K> = Intent<
    <K as LifecycleHooks<'a>>::Spec,
    <K as LifecycleHooks<'a>>::Status,
    <K as LifecycleHooks<'a>>::Action,
>;

/// A kind's action that may be one of the lifecycle's.
pub trait AsJobAction {
    fn job_action(&self) -> Option<&JobAction>;
}

/// The job's status as recorded (an empty one before the first).
pub fn job_status(status: &impl LifecycleStatus) -> JobStatus {
    status.job_status().cloned().unwrap_or_default()
}

/// The job's status as restores and the periodic schedule see it: with its snapshot
/// resources (see [`snapshot_resources::view`]).
pub fn job_view<'a, K: LifecycleHooks<'a>>(k: &K) -> JobStatus {
    snapshot_resources::view(&job_status(&k.status), k.facts.snapshots)
}

/// The change of parallelism alone that the running job can take in place, with the kind's
/// action for it (see [`rescale`](super::rescale)); None: it is an upgrade.
pub fn in_place<'a, K: LifecycleHooks<'a>>(k: &K, recorded: &K::Spec) -> Option<(Rescale, K::Action)> {
    let policy = k.facts.policy;
    if !policy.in_place_scaling || rescale::in_place_failed(k.stored, k.meta.generation) {
        return None;
    }
    if k.standing().state != Some(FlinkJobState::Running) {
        return None;
    }
    let job = job_status(&k.status);
    let change = Rescale::between(recorded, k.spec, job.job_id.as_deref(), policy.task_slots)?;
    let action = k.rescaling(&change)?;
    Some((change, action))
}
