//! The job lifecycle that FlinkDeployments (application clusters) and FlinkSessionJobs
//! share, decided once for both (pure: no I/O; the clock, fresh ids and the operator
//! settings are inputs).
//!
//! [`machine`] is the lifecycle as one state machine: its `decide` derives the job's
//! [`kind::Step`] from the recorded status and the observation ([`step`] tables every step:
//! when it is taken, what it does, what comes next), then dispatches it in one `match`, and
//! its functions map each outcome of the pure tables below to the next step. A kind plugs
//! into it through [`kind::JobKind`].
//!
//! A job goes through the same steps whatever runs it:
//!
//! 1. **first start**: the spec and the job id are recorded (UPGRADING), then the job is
//!    started: a cluster deployed with the job, or a jar submitted to a session cluster;
//! 2. **observe**: Flink's job state into `status.jobStatus` with an Event per change, the
//!    failure cause of a FAILED job ([`observe`]), from what the JobManager's REST API says
//!    of the job ([`job`]);
//! 3. **snapshots** of the running job: savepoints and checkpoints asked for by a nonce,
//!    periodic savepoints, the savepoint history and its cleanup ([`snapshots`],
//!    [`savepoint_history`]);
//! 4. **a change of the spec** ends the job as its upgrade mode says, then records the new
//!    spec with the state it starts from before anything is started: a stop-with-savepoint
//!    whose trigger id is recorded first and which is retried within a grace period
//!    ([`stop`], [`savepoint_retry`]), a cancellation, or (FlinkDeployments) the cluster
//!    deleted with or without its high-availability metadata;
//! 5. **restores** of a checkpoint or savepoint that was not taken for them (last-state,
//!    resume, restart of a failed job) are bounded by the restore-age guard ([`restore`]);
//! 6. **deletion**: with `kubernetes.operator.job.savepoint-on-deletion` (unset: in
//!    savepoint mode) a running job is stopped with a savepoint, drained when
//!    `kubernetes.operator.job.drain-on-savepoint-deletion` says so, and its path is
//!    recorded before anything that could lose it goes ([`deletion`]).
//! 7. **revisions**: each spec applied kept as a revision (a ControllerRevision), and a
//!    manual rollback to a kept one through the normal update path ([`revisions`] decides,
//!    [`history`] wires it into the machine).
//!
//! What differs per kind stays with the kind, behind [`kind::JobKind`]: how a job is
//! started and ended for a change (a cluster deployed with it and deleted with or without
//! its high-availability metadata, or a jar submitted and the job cancelled over REST),
//! what "ready to act" means (a JobManager that answers, or a READY session cluster), where
//! a last state lives (high-availability metadata kept across the upgrade, or the cancelled
//! job's latest checkpoint), the kind's own steps and how it words its status. Each step writes its status before it acts, so a fresh reconcile from
//! the stored status continues where a crashed one stopped.

pub mod act;
pub mod change;
pub mod deletion;
pub mod history;
// The lifecycle model still reads the job observation under its former path.
#[cfg(test)]
pub use crate::flink::job;
pub mod kind;
pub mod ledger;
pub mod machine;
pub mod observe;
pub mod poll;
pub mod protected;
pub mod rescale;
pub mod restore;
pub mod retention;
pub mod revisions;
pub mod savepoint_history;
pub mod savepoint_retry;
pub mod snapshot_resources;
pub mod snapshots;
pub mod spec;
pub mod step;
pub mod stop;
pub mod trigger;
pub mod wording;

#[cfg(test)]
mod model;
#[cfg(test)]
mod scenarios;

use flink_operator_api::{
    FlinkDeploymentStatus, FlinkSessionJobStatus, RevisionStatus,
    common::{Condition, JobStatus, ReconciliationStatus, ResourceLifecycleState},
};

use crate::flink::job::JobObservation;
use poll::SavepointPoll;

use crate::{events::EventNote, plan::Next, policy::Policy};

pub use crate::plan::Plan;

/// Something only Flink or Kubernetes can finish is under way: look again soon.
pub const FAST: Next = Next::Progress;
/// A cluster is starting or a session cluster is awaited: the watches bring the change,
/// this is the fallback.
pub const WAIT: Next = Next::Progress;
/// Nothing is under way.
pub const SLOW: Next = Next::Steady;

/// A status that records a job's lifecycle: the fields both job kinds' statuses share.
pub trait LifecycleStatus: Clone + Default {
    fn job_status(&self) -> Option<&JobStatus>;
    fn job_status_mut(&mut self) -> &mut JobStatus;
    fn reconciliation(&self) -> Option<&ReconciliationStatus>;
    fn reconciliation_mut(&mut self) -> &mut Option<ReconciliationStatus>;
    fn revision(&self) -> Option<&RevisionStatus>;
    fn revision_mut(&mut self) -> &mut RevisionStatus;
    fn conditions(&self) -> Option<&Vec<Condition>>;
    fn error(&self) -> Option<&str>;
    fn error_mut(&mut self) -> &mut Option<String>;
    fn lifecycle_state_mut(&mut self) -> &mut Option<ResourceLifecycleState>;
    fn conditions_mut(&mut self) -> &mut Option<Vec<Condition>>;
    fn observed_generation_mut(&mut self) -> &mut Option<i64>;
}

macro_rules! lifecycle_status {
    ($status:ty) => {
        impl LifecycleStatus for $status {
            fn job_status(&self) -> Option<&JobStatus> {
                self.job_status.as_ref()
            }
            fn job_status_mut(&mut self) -> &mut JobStatus {
                self.job_status.get_or_insert_with(Default::default)
            }
            fn reconciliation(&self) -> Option<&ReconciliationStatus> {
                self.reconciliation_status.as_ref()
            }
            fn reconciliation_mut(&mut self) -> &mut Option<ReconciliationStatus> {
                &mut self.reconciliation_status
            }
            fn revision(&self) -> Option<&RevisionStatus> {
                self.revision.as_ref()
            }
            fn revision_mut(&mut self) -> &mut RevisionStatus {
                self.revision.get_or_insert_with(Default::default)
            }
            fn conditions(&self) -> Option<&Vec<Condition>> {
                self.conditions.as_ref()
            }
            fn error(&self) -> Option<&str> {
                self.error.as_deref()
            }
            fn error_mut(&mut self) -> &mut Option<String> {
                &mut self.error
            }
            fn lifecycle_state_mut(&mut self) -> &mut Option<ResourceLifecycleState> {
                &mut self.lifecycle_state
            }
            fn conditions_mut(&mut self) -> &mut Option<Vec<Condition>> {
                &mut self.conditions
            }
            fn observed_generation_mut(&mut self) -> &mut Option<i64> {
                &mut self.observed_generation
            }
        }
    };
}

lifecycle_status!(FlinkDeploymentStatus);
lifecycle_status!(FlinkSessionJobStatus);

/// What was observed of a job, whatever runs it: the parts of a kind's observation that
/// the shared steps decide from.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The job under the recorded job id (None: not looked at).
    pub job: Option<&'a JobObservation>,
    /// The pending savepoint, polled by its recorded trigger id.
    pub savepoint: Option<&'a SavepointPoll>,
    /// The savepoint of a recorded stop whose result the JobManager no longer keeps, looked
    /// for elsewhere (see [`poll::LateSavepoint`]).
    pub late_savepoint: Option<&'a poll::LateSavepoint>,
    /// The pending manual checkpoint, polled by its recorded trigger id.
    pub checkpoint: Option<&'a SavepointPoll>,
    pub policy: &'a Policy,
    /// A trigger id to use if a snapshot is started.
    pub fresh_trigger_id: &'a str,
    /// The resource's generation.
    pub generation: Option<i64>,
    pub now_ms: i64,
    /// The job's FlinkStateSnapshot resources (empty when they are not used, see
    /// [`Policy::snapshot_resources`](crate::policy::Policy)).
    pub snapshots: &'a [snapshot_resources::JobSnapshot],
    /// The job's kept revisions (None: its history is not followed, as in the tests of
    /// what does not concern it).
    pub revisions: Option<&'a [revisions::Revision]>,
    /// Who else in the namespace may still need the savepoints of the job's status history,
    /// looked up only when its trim disposes of some (see [`protected::of_history`]).
    pub history_needed_by: &'a protected::NeededBy,
    /// What the autoscaler made of the job at this look (see [`crate::autoscaler`]): its
    /// ScalingReport and a decision for the scaling history (its overrides are in the spec).
    pub autoscaler: &'a crate::autoscaler::apply::Looked,
}

impl Facts<'_> {
    /// The job's state as Flink reported it now.
    pub fn observed_state(&self) -> Option<&str> {
        match self.job {
            Some(JobObservation::Found { state, .. }) => Some(state.as_str()),
            _ => None,
        }
    }

    /// Whether Flink reported the job RUNNING now.
    pub fn running(&self) -> bool {
        self.observed_state() == Some(flink_operator_api::common::flink_job_state::RUNNING)
    }
}

/// A snapshot of a running job: a savepoint (manual, periodic, for an upgrade or a
/// deletion) or a checkpoint (manual).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snapshot {
    Savepoint,
    Checkpoint,
}

impl Snapshot {
    pub fn name(self) -> &'static str {
        match self {
            Snapshot::Savepoint => "savepoint",
            Snapshot::Checkpoint => "checkpoint",
        }
    }
}

/// What the lifecycle asks of a running job, over its JobManager's REST API, whatever
/// kind runs it; each kind's own actions include these ([`act`] carries them out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobAction {
    /// Stop the job with a savepoint under the given (recorded) trigger id; `drain` emits
    /// the maximum watermark first (ends event-time windows).
    StopWithSavepoint {
        job_id: String,
        trigger_id: String,
        drain: bool,
    },
    /// Cancel the job without a savepoint (its retained checkpoints stay).
    Cancel { job_id: String },
    /// Take a savepoint of the running job under the given (recorded) trigger id.
    TriggerSavepoint { job_id: String, trigger_id: String },
    /// Take a checkpoint of the running job under the given (recorded) trigger id.
    TriggerCheckpoint { job_id: String, trigger_id: String },
    /// Delete a savepoint's files through Flink (it already left the status).
    DisposeSavepoint { path: String },
    /// Give the running job new resource requirements (the adaptive scheduler rescales it in
    /// place); requirements that are already so are done.
    Rescale(rescale::Rescale),
    /// Create a FlinkStateSnapshot of the job (see [`snapshot_resources`]); one that exists
    /// already is done.
    CreateSnapshot(snapshot_resources::NewSnapshot),
    /// Delete a FlinkStateSnapshot of the job (the retention); one that is gone is done.
    /// `keep_files`: its savepoint is not to be disposed of (`savepoint.cleanup.enabled` is
    /// false), so its `disposeOnDelete` is set to false first.
    DeleteSnapshot { name: String, keep_files: bool },
    /// Record a revision of the job, prune its history and show the current number on the
    /// resource (see [`history`]); each part done before is done.
    RecordRevision(history::RecordRevision),
    /// Write a revision's `spec` into the resource and remove the rollback request (whose
    /// `flink.apache.org/rollback-to-revision` is `request`; `drop_restore`: with its
    /// `flink.apache.org/rollback-restore`), in one update made only while the request is
    /// still there.
    RollBack {
        spec: serde_json::Value,
        request: String,
        drop_restore: bool,
    },
    /// Remove a refused rollback request, only while it is still there.
    DropRollbackRequest { request: String },
    /// Add an autoscaler decision to the job's scaling history (see
    /// [`crate::autoscaler::history`]), kept as `Retention` says; one already there is done.
    RecordScaling(
        crate::autoscaler::history::ScalingEntry,
        crate::policy::autoscaler::Retention,
    ),
}

impl JobAction {
    /// Whether it acts on Kubernetes objects rather than through the JobManager.
    pub fn on_resources(&self) -> bool {
        matches!(
            self,
            JobAction::CreateSnapshot(_)
                | JobAction::DeleteSnapshot { .. }
                | JobAction::RecordRevision(_)
                | JobAction::RollBack { .. }
                | JobAction::DropRollbackRequest { .. }
                | JobAction::RecordScaling(..)
        )
    }
}

/// Where the shared steps put what they decide: the kind's actions and the Events.
pub struct Out<'a, A> {
    pub actions: &'a mut Vec<A>,
    pub events: &'a mut Vec<EventNote>,
}

impl<A> Out<'_, A> {
    pub fn event(&mut self, event: EventNote) {
        self.events.push(event);
    }
}

impl<A: From<JobAction>> Out<'_, A> {
    pub fn act(&mut self, action: JobAction) {
        self.actions.push(action.into());
    }
}

/// `text` with its first letter upper-case (a status message as an Event note).
pub fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
