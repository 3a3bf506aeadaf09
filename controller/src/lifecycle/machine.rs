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
//! What differs per kind is behind [`JobKind`]: how a job is started (an application cluster
//! deployed with it, or a jar submitted to a session cluster) and ended for a change (the
//! cluster deleted, keeping its high-availability metadata for last-state, or the job
//! cancelled), what "ready to act" means, where the last state lives, the kind's own steps
//! (an application cluster's rollback and JobManager recovery; a session job's wait for its
//! session cluster), and how a kind words its status (its tests pin the wording).
//!
//! Not done yet: [`JobKind`] still has 42 methods where a handful of effect hooks
//! (start, end for a change, tear down, ready, latest checkpoint) should do. The accessors
//! belong in one generic ledger of the resource, its facts, the status, actions and Events,
//! and the kinds' messages for starts, waits and refusals in one wording table with the
//! kind's noun; until then each kind still words those itself.

use flink_operator_api::common::{JobStatus, ResourceLifecycleState, UpgradeMode};

use super::{
    FAST, Facts, JobAction, LifecycleStatus, Out, Plan, SLOW, change,
    deletion::{self, DeletionSavepoint},
    history,
    restore::RestorableState,
    savepoint_history, snapshot_resources, snapshots,
    spec::{self, JobSpecOf},
    step::{Found, Observed, Step, derive},
    stop::{self, Stopped, Stopping},
};
use crate::{
    conditions::phase,
    events::Reason,
    runtime::{EventNote, Next},
};

mod change_step;

pub use change_step::already_refused;
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
    fn from(state: Option<RestorableState>) -> Self {
        state.map_or(Restore::Nothing, Restore::State)
    }
}

/// Why a spec is committed (the kind words it in its status and Events).
#[derive(Debug, Clone, PartialEq)]
pub enum Cause {
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
    /// [`Ending::Refuse`]: a savepoint is needed and none can be taken or used.
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

/// A job kind's part in the lifecycle, implemented by its decision under construction (the
/// resource, its observation, and the status, actions and Events it accumulates).
pub trait JobKind<'a> {
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

    // What the machine reads and writes.

    fn spec(&self) -> &'a Self::Spec;
    /// The resource's metadata (its name, the annotations of a rollback request).
    fn metadata(&self) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    fn status(&self) -> &Self::Status;
    /// What the decision accumulates: the status being built, the actions, the Events.
    fn ledger(&mut self) -> (&mut Self::Status, &mut Vec<Self::Action>, &mut Vec<EventNote>);
    fn facts(&self) -> Facts<'a>;
    fn conditions(&mut self, phase: &str, message: &str);

    /// The status and where the shared steps put their actions and Events.
    fn parts(&mut self) -> (&mut Self::Status, Out<'_, Self::Action>) {
        let (status, actions, events) = self.ledger();
        (status, Out { actions, events })
    }

    /// A plan that writes the status after its actions; the decision is finished.
    fn done(&mut self, requeue: Next) -> Plan<Self::Status, Self::Action> {
        let (status, actions, events) = self.ledger();
        Plan {
            status_before: None,
            actions: std::mem::take(actions),
            status: std::mem::take(status),
            events: std::mem::take(events),
            requeue,
        }
    }

    /// A plan that writes the status before its actions (and keeps it).
    fn record_then(&mut self, requeue: Next) -> Plan<Self::Status, Self::Action> {
        let mut plan = self.done(requeue);
        plan.status_before = Some(plan.status.clone());
        plan
    }

    // The steps, in the order of [`Step`]: what each does, and what only the kind can say
    // of whether it is the step (read without side effects).

    fn deleting(&self) -> bool;
    /// What the kind does about a deletion before its job is stopped (a session job whose
    /// session cluster is gone, or runs no job of it, lets go at once).
    fn before_deletion_stop(&mut self) -> Option<Plan<Self::Status, Self::Action>> {
        None
    }
    /// Whether what runs the job can still stop it with a savepoint.
    fn can_stop_for_deletion(&self) -> bool {
        true
    }
    /// The savepoint of the deletion is recorded: tear down what it was taken for.
    fn deletion_savepoint_recorded(&mut self, path: &str) -> Plan<Self::Status, Self::Action>;
    /// Tears down what runs the job (or cancels it) and lets the resource go.
    fn tear_down(&mut self) -> Plan<Self::Status, Self::Action>;
    /// The finalizer, and what every other step writes.
    fn admit(&mut self);
    /// The recorded spec; an unreadable one is an error to show (or, `Ok(None)`, a first start).
    fn recorded(&self) -> Result<Option<Self::Spec>, String>;
    /// Whether what runs the job can act (a session job's cluster); else [`Step::UntilReady`].
    fn ready(&self) -> bool {
        true
    }
    /// Nothing can be done until what runs the job can act (never, for a kind that is
    /// always ready: it would only write the status).
    fn until_ready(&mut self, _recorded: Option<&Self::Spec>) -> Plan<Self::Status, Self::Action> {
        self.done(super::WAIT)
    }
    fn violations(&self) -> &[String];
    /// The status as stored (observing may have rewritten the one being built).
    fn stored(&self) -> Option<&'a Self::Status>;
    /// The spec's job (or cluster) is started for the first time.
    fn first_start(&mut self) -> Plan<Self::Status, Self::Action>;
    /// A recorded start (UPGRADING) goes on.
    fn start_in_progress(&mut self, recorded: &Self::Spec) -> Plan<Self::Status, Self::Action>;
    /// The spec that runs (after an application cluster's rollback: the last stable one).
    fn running_spec(&self, recorded: &Self::Spec) -> Self::Spec {
        recorded.clone()
    }
    /// What was observed of the job (and what runs it) into status.
    fn observe(&mut self, running: &Self::Spec);
    /// What the kind records of its job while a stop-with-savepoint is followed.
    fn observe_while_stopping(&mut self, _running: &Self::Spec) {}
    /// A suspended spec changed while suspended.
    fn changed_while_suspended(&mut self) -> Plan<Self::Status, Self::Action>;
    /// What the kind does about a change before the job is ended for it (a session
    /// cluster's redeploy; a session job's JobManager that does not answer).
    fn before_ending(&mut self) -> Option<Plan<Self::Status, Self::Action>>;
    /// The job's state as the kind knows it (None: gone or unknown), and whether it ended.
    fn job_state(&self) -> (Option<String>, bool);
    /// What ran the job never ran it since it started from its recorded state.
    fn never_ran(&self) -> bool {
        false
    }
    fn latest_checkpoint(&self) -> Checkpoint;
    /// Whether what the job ends with keeps a completed checkpoint of it for a last-state
    /// change (an application cluster's high-availability metadata).
    fn last_state_held(&self) -> bool {
        false
    }
    /// How the kind names a change in its messages.
    fn verb(&self, suspending: bool) -> &'static str;
    /// The condition message of a stop-with-savepoint sent.
    fn stopping(&self, job_id: &str, verb: &str) -> String;

    /// Records the spec to run and what it starts from, then starts it (or suspends).
    fn commit(&mut self, restore: Restore, cause: Cause) -> Plan<Self::Status, Self::Action>;
    fn wait(&mut self, what: Wait) -> Plan<Self::Status, Self::Action>;
    fn refuse(&mut self, refusal: Refusal) -> Plan<Self::Status, Self::Action>;

    /// Whether the kind's own step `step` is due ([`Step::ChangedBack`]: the changed spec is
    /// what runs already, since an application cluster's rollback; [`Step::Recovering`]:
    /// before a restart, an application cluster's lost JobManager or unhealthy job;
    /// [`Step::RollbackDue`]: after a restart, an application cluster's rollback). `spec`:
    /// the spec that runs for `ChangedBack`, else the recorded one. Read without side effects.
    fn own_step_due(&self, _step: Step, _spec: &Self::Spec) -> bool {
        false
    }
    /// The kind's part of a step it has its own of: `RollingBack` (the recorded rollback goes
    /// on), `ChangedBack` (the spec changed back to what runs is recorded), `Suspended` (a
    /// suspended job needs nothing done), and, once [`JobKind::own_step_due`], `Recovering`
    /// and `RollbackDue`. None: the kind has no part in it, or declined (why is noted in
    /// status); the machine goes on as that step says.
    fn own_step(&mut self, _step: Step, _recorded: &Self::Spec) -> Option<Plan<Self::Status, Self::Action>> {
        None
    }
    /// Whether a FAILED job is restarted now.
    fn restart_due(&self, pending: bool) -> bool;
    /// Whether the job runs, so that snapshots can be taken of it.
    fn job_running(&self) -> bool;
    /// Conditions for the phase the status shows.
    fn phase(&mut self, recorded: &Self::Spec);
    /// How soon a job that needs nothing done is looked at again.
    fn steady_requeue(&self, recorded: &Self::Spec, pending: bool) -> Next;
}

type PlanOf<'a, K> = Plan<<K as JobKind<'a>>::Status, <K as JobKind<'a>>::Action>;

/// A kind's action that may be one of the lifecycle's.
pub trait AsJobAction {
    fn job_action(&self) -> Option<&JobAction>;
}

/// The next step of a job, from its spec, its recorded status and what was observed.
pub fn decide<'a, K: JobKind<'a>>(k: &mut K) -> PlanOf<'a, K> {
    let resources = k.facts().policy.snapshot_resources;
    if resources {
        create_recorded_snapshots(k);
    }
    if let Some(plan) = history::rollback_request(k) {
        return plan;
    }
    let mut plan = next_step(k);
    if resources {
        seal_new_snapshots(&mut plan);
    }
    history::follow(k, &mut plan);
    plan
}

/// Snapshot resources recorded as to be created by an earlier pass that did not get to
/// create them (the operator stopped in between): created now, under the recorded name.
fn create_recorded_snapshots<'a, K: JobKind<'a>>(k: &mut K) {
    let dispose = k.facts().policy.dispose_on_delete;
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
        snapshots::clear_trigger(plan.status.job_status_mut(), new.kind);
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
        Step::Deleting => delete(k),
        Step::Unreadable => invalid(
            k,
            phase::DEPLOY_FAILED,
            found.read.as_ref().err().cloned().unwrap_or_default(),
        ),
        Step::UntilReady => k.until_ready(found.recorded()),
        Step::FollowingStop => {
            let trigger_id = or_report!(stop::pending_trigger(k.status()), "a pending stop");
            let running = k.running_spec(or_report!(found.spec(), "a recorded spec"));
            k.observe_while_stopping(&running);
            follow_stop(k, &trigger_id)
        }
        Step::Invalid => {
            let reason = if found.recorded().is_none() {
                phase::DEPLOY_FAILED
            } else {
                phase::UPDATE_FAILED
            };
            invalid(k, reason, k.violations().join("; "))
        }
        Step::FirstStart => k.first_start(),
        Step::Starting => k.start_in_progress(or_report!(found.spec(), "a recorded spec")),
        // Only a kind that rolls back records ROLLING_BACK, or finds its spec changed back.
        Step::RollingBack => {
            let recorded = or_report!(found.spec(), "a recorded spec");
            k.own_step(step, recorded).unwrap_or_else(|| k.done(SLOW))
        }
        Step::ChangedBack => {
            let recorded = &or_report!(found.observed(), "observing the job").recorded;
            k.own_step(step, recorded).unwrap_or_else(|| k.done(SLOW))
        }
        Step::WaitingForSnapshot => k.wait(Wait::ForSnapshot),
        Step::Change => change(k, &or_report!(found.observed(), "observing the job").recorded),
        Step::Suspended => {
            let observed = or_report!(found.observed(), "observing the job");
            k.own_step(step, &observed.recorded)
                .unwrap_or_else(|| steady(k, &observed.recorded, observed.pending))
        }
        Step::Recovering => {
            let observed = or_report!(found.observed(), "observing the job");
            k.own_step(step, &observed.recorded).unwrap_or_else(|| {
                let next = Step::after(k, observed, Some(Step::Recovering));
                take(k, next, found)
            })
        }
        Step::RestartingFailed => restart_failed(k),
        Step::RollbackDue => {
            let observed = or_report!(found.observed(), "observing the job");
            k.own_step(step, &observed.recorded).unwrap_or_else(|| {
                let next = Step::after(k, observed, Some(Step::RollbackDue));
                take(k, next, found)
            })
        }
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
    *k.parts().0.lifecycle_state_mut() = Some(ResourceLifecycleState::Deleting);
    if let Some(plan) = k.before_deletion_stop() {
        return plan;
    }
    let job_id = recorded_job_id(k.status());
    let facts = k.facts();
    if let Some(trigger_id) = stop::pending_trigger(k.status()) {
        let (status, mut out) = k.parts();
        match deletion::follow(status, &job_id, &trigger_id, &facts, &mut out) {
            DeletionSavepoint::Recorded(path) => return k.deletion_savepoint_recorded(&path),
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
    if deletion::wants_savepoint(k.spec().job(), facts.policy) && facts.running() && k.can_stop_for_deletion()
    {
        k.conditions(
            phase::DELETING,
            "stopping the job with a savepoint before deletion",
        );
        let (status, mut out) = k.parts();
        deletion::stop_with_savepoint(status, &job_id, &facts, &mut out);
        return k.record_then(FAST);
    }
    k.tear_down()
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
    snapshot_resources::view(&job_status(k.status()), k.facts().snapshots)
}

/// Stops the running job with a savepoint for a change (see [`stop::stop_with_savepoint`]);
/// a suspension drains it when `kubernetes.operator.job.drain-on-savepoint-deletion` says so.
fn stop_with_savepoint<'a, K: JobKind<'a>>(
    k: &mut K,
    job_id: &str,
    verb: &'static str,
    suspending: bool,
) -> PlanOf<'a, K> {
    let facts = k.facts();
    let drain = facts.policy.drain && suspending;
    let (status, mut out) = k.parts();
    match stop::stop_with_savepoint(status, job_id, drain, verb, &facts, &mut out) {
        Stopping::Sent => {
            let message = stop::under_way(k.status(), &k.stopping(job_id, verb));
            k.conditions(phase::UPDATING, &message);
            k.record_then(Next::Stopping { for_ms: 0 })
        }
        Stopping::Wait { seconds, note } => {
            k.conditions(phase::UPDATING, &format!("{verb}: {note}"));
            k.done(Next::Within(seconds))
        }
        Stopping::GiveUp(why) => k.refuse(Refusal::StopGaveUp(why)),
    }
}

/// Follows the recorded stop-with-savepoint of a change (see [`stop::follow`]).
fn follow_stop<'a, K: JobKind<'a>>(k: &mut K, trigger_id: &str) -> PlanOf<'a, K> {
    let job_id = recorded_job_id(k.status());
    let facts = k.facts();
    let drain = facts.policy.drain && spec::is_suspended(k.spec());
    let (status, mut out) = k.parts();
    match stop::follow(status, &job_id, trigger_id, drain, &facts, &mut out) {
        Stopped::Completed(state) => commit_change(k, Restore::State(state), Cause::Savepoint),
        Stopped::Resent => {
            let message = stop::under_way(k.status(), "stopping the job with a savepoint");
            k.conditions(phase::UPDATING, &message);
            k.done(FAST)
        }
        Stopped::Retry { seconds, note } => {
            k.conditions(phase::UPDATING, &format!("{note}; trying again"));
            k.done(Next::Within(seconds))
        }
        Stopped::Refused(why) => k.refuse(Refusal::Said(why)),
        Stopped::Pending => {
            // The message of the stop sent: a status write per poll would delay the next.
            let verb = k.verb(spec::is_suspended(k.spec()));
            let message = stop::under_way(k.status(), &k.stopping(&job_id, verb));
            k.conditions(phase::UPDATING, &message);
            let triggered = (k.status().job_status().and_then(|j| j.savepoint_info.as_ref()))
                .and_then(|s| s.trigger_timestamp);
            let for_ms = triggered.map_or(0, |at| u64::try_from(facts.now_ms - at).unwrap_or(0));
            k.done(Next::Stopping { for_ms })
        }
    }
}

/// A FAILED job is started again when `kubernetes.operator.job.restart.failed` is true:
/// without state in stateless mode, else from its newest checkpoint or savepoint if the
/// restore guard allows.
fn restart_failed<'a, K: JobKind<'a>>(k: &mut K) -> PlanOf<'a, K> {
    if spec::upgrade_mode(k.spec()) == UpgradeMode::Stateless {
        return k.commit(Restore::Nothing, Cause::Restart);
    }
    let checkpoint = match k.latest_checkpoint() {
        Checkpoint::Found(found) => Some(found),
        Checkpoint::None => None,
        // Restarting from an older state than the latest checkpoint would lose progress.
        Checkpoint::Unavailable(_) | Checkpoint::NotLooked => return k.wait(Wait::ForCheckpointToRestart),
    };
    let facts = k.facts();
    match change::newest_allowed(&job_view(k), checkpoint, true, facts.policy, facts.now_ms) {
        Ok(newest) => k.commit(Restore::State(newest), Cause::Restart),
        Err(why) => k.refuse(Refusal::Restart(why)),
    }
}

/// With nothing pending: a manual snapshot asked for by a new nonce or a periodic
/// savepoint that is due, its trigger id recorded before it is sent (none due: steady).
fn snapshots_of_running_job<'a, K: JobKind<'a>>(k: &mut K, observed: &Observed<K::Spec>) -> PlanOf<'a, K> {
    let facts = k.facts();
    let spec = k.spec();
    let recorded = &observed.recorded;
    let Some(wanted) = snapshots::due(spec, recorded, &job_view(k), &facts) else {
        return steady(k, recorded, observed.pending);
    };
    let (status, mut out) = k.parts();
    snapshots::trigger(status, spec, recorded, wanted, &facts, &mut out);
    k.phase(recorded);
    k.record_then(FAST)
}

/// Nothing to do but to say where the job stands, and when to look again.
fn steady<'a, K: JobKind<'a>>(k: &mut K, recorded: &K::Spec, pending: bool) -> PlanOf<'a, K> {
    let facts = k.facts();
    let running = !pending && !spec::is_suspended(recorded) && k.job_running();
    if running {
        let stored = k.stored().and_then(LifecycleStatus::error);
        let (status, mut out) = k.parts();
        snapshots::report_unsupported_schedule(status, stored, &facts, &mut out);
        let (status, mut out) = k.parts();
        if snapshots::trim_history(status, &facts, &mut out) {
            k.phase(recorded);
            return k.done(FAST);
        }
        let (status, mut out) = k.parts();
        if snapshots::trim_resources(&*status, &facts, &mut out) {
            k.phase(recorded);
            return k.done(FAST);
        }
    }
    k.phase(recorded);
    let next = k.steady_requeue(recorded, pending);
    let requeue = savepoint_history::requeue_for_periodic(
        &job_view(k),
        facts.policy.periodic_savepoint_ms,
        facts.now_ms,
        next,
    );
    k.done(requeue)
}
