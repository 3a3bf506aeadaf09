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
//! What differs per kind is behind [`JobKind`], eleven effect hooks on the kind's decision,
//! which is a [`Ledger`] (the resource, the facts, the status being built, the actions and
//! the Events) with the kind's observation beside it: how a job is started (an application
//! cluster deployed with it, or a jar submitted to a session cluster) and torn down, where
//! it stands ([`Standing`]: whether what runs it is ready, its state, its latest checkpoint,
//! whether what it ends with keeps its last state), how it is observed, its phase, how it
//! is rescaled in place (if it can be), and the kind's own steps (an application cluster's rollback and JobManager recovery; a session
//! job's wait for its session cluster). What the machine says of stops, waits, refusals
//! and commits is worded once ([`super::wording`]).

use std::ops::DerefMut;

use flink_operator_api::common::{
    JobStatus, ReconciliationState, ResourceLifecycleState, UpgradeMode, flink_job_state,
};

use super::{
    FAST, JobAction, LifecycleStatus, Plan, SLOW, Snapshot, WAIT, capitalised, change,
    deletion::{self, DeletionSavepoint},
    history,
    ledger::Ledger,
    protected::Protected,
    rescale::{self, Rescale},
    restore::{self, RestorableState},
    savepoint_history, snapshot_resources, snapshots,
    spec::{self, JobSpecOf},
    step::{Found, Observed, Step, derive},
    stop::{self, Stopped, Stopping},
    wording::{self, Change, Refused},
};
use crate::{
    conditions::phase,
    events::{EventNote, Reason},
    plan::Next,
    policy::Rescaler,
};

mod change_step;

pub use super::ledger::already_refused;
use super::retention::OnCancel;
use change_step::{change, commit_change};

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
    fn found(&self) -> Option<RestorableState> {
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
    pub state: Option<String>,
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
pub type LedgerOf<'a, K> =
    Ledger<'a, <K as JobKind<'a>>::Spec, <K as JobKind<'a>>::Status, <K as JobKind<'a>>::Action>;

/// A job kind's part in the lifecycle: its effects. It is implemented by the kind's decision
/// under construction, which is a [`Ledger`] (the resource, the facts, the status being
/// built, the actions and the Events, read and written by the machine) with the kind's own
/// observation beside it.
pub trait JobKind<'a>:
    DerefMut<
    Target = Ledger<
        'a,
        <Self as JobKind<'a>>::Spec,
        <Self as JobKind<'a>>::Status,
        <Self as JobKind<'a>>::Action,
    >,
>
{
    type Spec: JobSpecOf + 'a;
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
    /// Records the spec to run and what it starts from, then starts it (or suspends);
    /// `message`: what the lifecycle said of it (its Event is published).
    fn commit(
        &mut self,
        restore: Restore,
        cause: Cause,
        message: Option<String>,
    ) -> Plan<Self::Status, Self::Action>;
    /// A recorded start (UPGRADING) goes on: the cluster deployed, the jar submitted.
    fn continue_start(&mut self, recorded: &Self::Spec) -> Plan<Self::Status, Self::Action>;
    /// Tears down what runs the job (or cancels it) and lets the resource go; `savepoint`:
    /// the path of the deletion's savepoint, recorded.
    fn tear_down(&mut self, savepoint: Option<&str>) -> Plan<Self::Status, Self::Action>;
    /// Conditions for the phase the status shows, and how soon a job that needs nothing
    /// done is looked at again.
    fn phase(&mut self, recorded: &Self::Spec, pending: bool) -> Next;
    /// Whether the kind's own step `step` is due ([`Step::ChangedBack`]: the changed spec is
    /// what runs already, since an application cluster's rollback; [`Step::Recovering`]:
    /// before a restart, an application cluster's lost JobManager or unhealthy job;
    /// [`Step::RollbackDue`]: after a restart, an application cluster's rollback). `spec`:
    /// the spec that runs for `ChangedBack`, else the recorded one. Read without side effects.
    fn own_step_due(&self, _step: Step, _spec: &Self::Spec) -> bool {
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
    /// and, once [`JobKind::own_step_due`], `Recovering` and `RollbackDue`. None: the kind
    /// has no part in it, or declined (why is noted in status); the machine goes on as that
    /// step says.
    fn own_step(
        &mut self,
        _step: Step,
        _recorded: Option<&Self::Spec>,
    ) -> Option<Plan<Self::Status, Self::Action>> {
        None
    }
}

type PlanOf<'a, K> = Plan<<K as JobKind<'a>>::Status, <K as JobKind<'a>>::Action>;

/// A kind's action that may be one of the lifecycle's.
pub trait AsJobAction {
    fn job_action(&self) -> Option<&JobAction>;
}

/// The next step of a job, from its spec, its recorded status and what was observed.
pub fn decide<'a, K: JobKind<'a>>(k: &mut K) -> PlanOf<'a, K> {
    let resources = k.facts.policy.snapshot_resources;
    if resources {
        create_recorded_snapshots(k);
    }
    if let Some(plan) = history::rollback_request(k) {
        return plan;
    }
    let autoscaler = k.facts.autoscaler;
    let mut plan = next_step(k);
    if resources {
        seal_new_snapshots(&mut plan);
    }
    // The autoscaler's judgement of the running job, whatever the step (its changes, if
    // applied, are in the spec the machine acts on), and its decision kept in its history.
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
fn create_recorded_snapshots<'a, K: JobKind<'a>>(k: &mut K) {
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

/// The step ([`Step`]) derived, then dispatched.
fn next_step<'a, K: JobKind<'a>>(k: &mut K) -> PlanOf<'a, K> {
    let (step, found) = derive(k);
    take(k, step, &found)
}

/// Does what `step` says (the table of [`super::step`]).
fn take<'a, K: JobKind<'a>>(k: &mut K, step: Step, found: &Found<K::Spec>) -> PlanOf<'a, K> {
    // The steps after the first start are derived only with a recorded spec, and those after
    // the start only once the job was observed; were one not, it is this resource's error,
    // not a panic of the loop.
    macro_rules! or_report {
        ($found:expr, $what:literal) => {
            match $found {
                Some(found) => found,
                None => {
                    return invalid(
                        k,
                        phase::UPDATE_FAILED,
                        format!(
                            "the operator derived the {step:?} step without {} (a bug, please report it)",
                            $what
                        ),
                    );
                }
            }
        };
    }
    match step {
        Step::Deleting => {
            *k.status.lifecycle_state_mut() = Some(ResourceLifecycleState::Deleting);
            match k.own_step(step, found.recorded()) {
                Some(plan) => plan,
                None => delete(k),
            }
        }
        Step::Unreadable => invalid(
            k,
            phase::DEPLOY_FAILED,
            found.read.as_ref().err().cloned().unwrap_or_default(),
        ),
        Step::UntilReady => k.own_step(step, found.recorded()).unwrap_or_else(|| k.done(WAIT)),
        Step::FollowingStop => {
            let trigger_id = or_report!(stop::pending_trigger(&k.status), "a pending stop");
            let recorded = or_report!(found.spec(), "a recorded spec");
            k.observe(recorded, true);
            follow_stop(k, &trigger_id)
        }
        Step::Invalid => {
            let reason = if found.recorded().is_none() {
                phase::DEPLOY_FAILED
            } else {
                phase::UPDATE_FAILED
            };
            let violations = k.violations.join("; ");
            invalid(k, reason, violations)
        }
        Step::FirstStart => {
            let initial = (k.spec.job())
                .and_then(|j| j.initial_savepoint_path.clone())
                .filter(|p| !p.trim().is_empty())
                .map(|path| RestorableState {
                    kind: restore::Kind::Savepoint,
                    path,
                    timestamp_ms: None,
                });
            commit(k, Restore::from(initial), Cause::FirstStart)
        }
        Step::Starting => k.continue_start(or_report!(found.spec(), "a recorded spec")),
        // Only a kind that rolls back records ROLLING_BACK, or finds its spec changed back.
        Step::RollingBack => {
            let recorded = or_report!(found.spec(), "a recorded spec");
            k.own_step(step, Some(recorded)).unwrap_or_else(|| k.done(SLOW))
        }
        Step::ChangedBack => {
            let recorded = &or_report!(found.observed(), "observing the job").recorded;
            k.own_step(step, Some(recorded)).unwrap_or_else(|| k.done(SLOW))
        }
        Step::WaitingForSnapshot => wait(k, Wait::ForSnapshot),
        Step::Rescaling => rescale_in_place(k, or_report!(found.observed(), "observing the job")),
        Step::Change => change(k, &or_report!(found.observed(), "observing the job").recorded),
        Step::Suspended => {
            let observed = or_report!(found.observed(), "observing the job");
            k.own_step(step, Some(&observed.recorded))
                .unwrap_or_else(|| steady(k, &observed.recorded, observed.pending))
        }
        Step::Recovering | Step::RollbackDue | Step::ShuttingDown => {
            let observed = or_report!(found.observed(), "observing the job");
            k.own_step(step, Some(&observed.recorded)).unwrap_or_else(|| {
                let next = Step::after(k, observed, Some(step));
                take(k, next, found)
            })
        }
        Step::RestartingFailed => restart_failed(k),
        Step::SnapshotsDue => snapshots_of_running_job(k, or_report!(found.observed(), "observing the job")),
        Step::Steady => {
            let observed = or_report!(found.observed(), "observing the job");
            steady(k, &observed.recorded, observed.pending)
        }
    }
}

/// Deletion behind the finalizer, one rule for both kinds (see [`super::deletion`]): a
/// running job is stopped with a savepoint when the settings say so, and its path is
/// recorded before anything that could lose it is torn down.
fn delete<'a, K: JobKind<'a>>(k: &mut K) -> PlanOf<'a, K> {
    let job_id = recorded_job_id(&k.status);
    let facts = k.facts;
    if let Some(trigger_id) = stop::pending_trigger(&k.status) {
        let (status, mut out) = k.parts();
        match deletion::follow(status, &job_id, &trigger_id, &facts, &mut out) {
            DeletionSavepoint::Recorded(path) => return k.tear_down(Some(&path)),
            DeletionSavepoint::Resent => {
                k.conditions(
                    phase::DELETING,
                    "stopping the job with a savepoint before deletion",
                );
                return k.done(FAST);
            }
            DeletionSavepoint::Failed(note) => {
                // The failure is what the user has to act on: it is written at once.
                k.conditions(phase::DELETING, &note);
                return k.record_then(SLOW);
            }
            DeletionSavepoint::Pending => {
                k.conditions(phase::DELETING, "waiting for the savepoint before deletion");
                return k.done(FAST);
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
    let may_run =
        (job_status(&k.status).state.as_deref()).is_some_and(|s| !flink_job_state::is_globally_terminal(s));
    if (wants_savepoint || loses_checkpoint)
        && may_run
        && matches!(facts.job, Some(super::job::JobObservation::Unreachable(_)))
        && standing.can_stop_for_deletion
    {
        k.conditions(
            phase::DELETING,
            "waiting for the JobManager to answer, to stop the job with a savepoint before deletion \
             (set kubernetes.operator.job.savepoint-on-deletion to false to delete without one)",
        );
        return k.done(FAST);
    }
    if (wants_savepoint || loses_checkpoint) && facts.running() && standing.can_stop_for_deletion {
        k.conditions(
            phase::DELETING,
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
        return k.record_then(FAST);
    }
    k.tear_down(None)
}

/// The spec cannot be acted on: the reason in status, with one Event per new reason.
fn invalid<'a, K: JobKind<'a>>(k: &mut K, reason: &str, error: String) -> PlanOf<'a, K> {
    let (status, mut out) = k.parts();
    if status.error_mut().as_deref() != Some(error.as_str()) {
        out.event(EventNote::warning(Reason::ValidationError, error.clone()));
    }
    *status.error_mut() = Some(error.clone());
    k.conditions(reason, &error);
    k.done(SLOW)
}

fn recorded_job_id(status: &impl LifecycleStatus) -> String {
    status
        .job_status()
        .and_then(|j| j.job_id.clone())
        .unwrap_or_default()
}

fn job_status(status: &impl LifecycleStatus) -> JobStatus {
    status.job_status().cloned().unwrap_or_default()
}

/// The job's status as restores and the periodic schedule see it: with its snapshot
/// resources (see [`snapshot_resources::view`]).
pub(super) fn job_view<'a, K: JobKind<'a>>(k: &K) -> JobStatus {
    snapshot_resources::view(&job_status(&k.status), k.facts.snapshots)
}

/// What the change of the spec is.
fn change_of<'a, K: JobKind<'a>>(k: &K) -> Change {
    Change::of(spec::is_suspended(k.spec))
}

/// The job's state for messages.
fn state_note(standing: &Standing) -> String {
    standing.state.clone().unwrap_or_else(|| "unknown".to_owned())
}

/// Records the spec to run and what it starts from, with the lifecycle's Event for why
/// ([`wording::committed`]), then the kind starts it.
fn commit<'a, K: JobKind<'a>>(k: &mut K, restore: Restore, cause: Cause) -> PlanOf<'a, K> {
    let said = wording::committed(&cause, &restore, change_of(k), k.facts.now_ms);
    let message = said.map(|(reason, message)| {
        k.event(EventNote::normal(reason, capitalised(&message)));
        message
    });
    k.commit(restore, cause, message)
}

/// A change (or a restart) waits: said, and looked at again soon.
fn wait<'a, K: JobKind<'a>>(k: &mut K, what: Wait) -> PlanOf<'a, K> {
    let job_id = recorded_job_id(&k.status);
    let (phase, message, under_way) = wording::wait(what, &job_id, &state_note(&k.standing()));
    if under_way {
        *k.status.lifecycle_state_mut() = Some(ResourceLifecycleState::Upgrading);
    }
    k.conditions(phase, &message);
    k.done(if what == Wait::ForRunning { WAIT } else { FAST })
}

/// A change or a restore is refused, worded for every kind ([`wording::refusal`]); the job
/// stays as it is until the spec changes.
fn refused<'a, K: JobKind<'a>>(k: &mut K, refusal: Refusal) -> PlanOf<'a, K> {
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
    k.refuse(phase, note)
}

/// Stops the running job with a savepoint for a change (see [`stop::stop_with_savepoint`]);
/// a suspension drains it when `kubernetes.operator.job.drain-on-savepoint-deletion` says so.
fn stop_with_savepoint<'a, K: JobKind<'a>>(k: &mut K, job_id: &str, suspending: bool) -> PlanOf<'a, K> {
    let facts = k.facts;
    let drain = facts.policy.drain && suspending;
    let change = Change::of(suspending);
    let (status, mut out) = k.parts();
    match stop::stop_with_savepoint(status, job_id, drain, change.doing(), &facts, &mut out) {
        Stopping::Sent => {
            let message = stop::under_way(&k.status, &wording::stopping(job_id, change));
            k.conditions(phase::UPDATING, &message);
            k.record_then(Next::Stopping { for_ms: 0 })
        }
        Stopping::Wait { seconds, note } => {
            k.conditions(phase::UPDATING, &format!("{}: {note}", change.doing()));
            k.done(Next::Within(seconds))
        }
        Stopping::GiveUp(why) => refused(k, Refusal::StopGaveUp(why)),
    }
}

/// Follows the recorded stop-with-savepoint of a change (see [`stop::follow`]).
fn follow_stop<'a, K: JobKind<'a>>(k: &mut K, trigger_id: &str) -> PlanOf<'a, K> {
    let job_id = recorded_job_id(&k.status);
    let facts = k.facts;
    let drain = facts.policy.drain && spec::is_suspended(k.spec);
    let (status, mut out) = k.parts();
    match stop::follow(status, &job_id, trigger_id, drain, &facts, &mut out) {
        Stopped::Completed(state) => commit_change(k, Restore::State(state), Cause::Savepoint),
        Stopped::Resent => {
            let message = stop::under_way(&k.status, "stopping the job with a savepoint");
            k.conditions(phase::UPDATING, &message);
            k.done(FAST)
        }
        Stopped::Retry { seconds, note } => {
            k.conditions(phase::UPDATING, &format!("{note}; trying again"));
            k.done(Next::Within(seconds))
        }
        Stopped::Refused(why) => refused(k, Refusal::Said(why)),
        Stopped::Pending => {
            // The message of the stop sent: a status write per poll would delay the next.
            let message = stop::under_way(&k.status, &wording::stopping(&job_id, change_of(k)));
            k.conditions(phase::UPDATING, &message);
            let triggered = (k.status.job_status().and_then(|j| j.savepoint_info.as_ref()))
                .and_then(|s| s.trigger_timestamp);
            let for_ms = triggered.map_or(0, |at| u64::try_from(facts.now_ms - at).unwrap_or(0));
            k.done(Next::Stopping { for_ms })
        }
    }
}

/// The change of parallelism alone that the running job can take in place, with the kind's
/// action for it (see [`rescale`](super::rescale)); None: it is an upgrade.
pub(super) fn in_place<'a, K: JobKind<'a>>(k: &K, recorded: &K::Spec) -> Option<(Rescale, K::Action)> {
    let policy = k.facts.policy;
    if !policy.in_place_scaling || rescale::in_place_failed(k.stored, k.meta.generation) {
        return None;
    }
    if k.standing().state.as_deref() != Some(flink_job_state::RUNNING) {
        return None;
    }
    let job = job_status(&k.status);
    let change = Rescale::between(recorded, k.spec, job.job_id.as_deref(), policy.task_slots)?;
    let action = k.rescaling(&change)?;
    Some((change, action))
}

/// A change of parallelism alone, applied in place: the status as observed is written, then
/// the job is rescaled, then the spec is recorded as DEPLOYED (a refusal leaves it
/// unrecorded, and the kind's recovery says so for the next look to upgrade instead).
fn rescale_in_place<'a, K: JobKind<'a>>(k: &mut K, observed: &Observed<K::Spec>) -> PlanOf<'a, K> {
    let Some((rescale, action)) = in_place(k, &observed.recorded) else {
        return change(k, &observed.recorded);
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
    k.stepped(after, FAST)
}

/// A FAILED job is started again when `kubernetes.operator.job.restart.failed` is true:
/// without state in stateless mode, else from its newest checkpoint or savepoint if the
/// restore guard allows.
fn restart_failed<'a, K: JobKind<'a>>(k: &mut K) -> PlanOf<'a, K> {
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
    match change::newest_allowed(&job_view(k), checkpoint, true, facts.policy, facts.now_ms) {
        Ok(newest) => commit(k, Restore::State(newest), Cause::Restart),
        Err(why) => refused(k, Refusal::Restart(why)),
    }
}

/// With nothing pending: a manual snapshot asked for by a new nonce or a periodic
/// savepoint that is due, its trigger id recorded before it is sent (none due: steady).
fn snapshots_of_running_job<'a, K: JobKind<'a>>(k: &mut K, observed: &Observed<K::Spec>) -> PlanOf<'a, K> {
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
    snapshots::trigger(status, spec, recorded, wanted, &facts, &mut out);
    k.phase(recorded, observed.pending);
    k.record_then(FAST)
}

/// The paths the job may still need (see [`Protected`]): of its status (a rollback in
/// flight included), its kept revisions and its spec.
fn protected_paths<'a, K: JobKind<'a>>(k: &K) -> Protected {
    Protected::of_status(
        Some(&k.status),
        k.facts.revisions,
        k.spec.job().and_then(|j| j.initial_savepoint_path.as_deref()),
    )
}

/// Nothing to do but to say where the job stands, and when to look again.
fn steady<'a, K: JobKind<'a>>(k: &mut K, recorded: &K::Spec, pending: bool) -> PlanOf<'a, K> {
    let facts = k.facts;
    let running = !pending && !spec::is_suspended(recorded) && k.standing().running;
    if running {
        let protected = protected_paths(k);
        let (status, mut out) = k.parts();
        if snapshots::trim_history(status, &facts, &protected, &mut out) {
            k.phase(recorded, pending);
            return k.done(FAST);
        }
        let (status, mut out) = k.parts();
        if snapshots::trim_resources(&*status, &facts, &protected, &mut out) {
            k.phase(recorded, pending);
            return k.done(FAST);
        }
    }
    let next = k.phase(recorded, pending);
    let job = job_view(k);
    let requeue = [
        (Snapshot::Savepoint, facts.policy.periodic_savepoint.as_ref()),
        (Snapshot::Checkpoint, facts.policy.periodic_checkpoint.as_ref()),
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
    k.done(requeue)
}
