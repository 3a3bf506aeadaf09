//! What the shared steps decide from and what they decide: the [`Facts`] observed of a job,
//! the [`JobAction`]s they ask for, and where they put them ([`Out`]).

use flink_operator_api::FlinkJobState;

use super::{protected, rescale, revisions, snapshot_resources};
use crate::flink::poll;
use crate::{events::EventNote, flink::job::JobObservation, flink::poll::SavepointPoll, policy::Policy};

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
    /// looked up only when its trim disposes of some (see [`super::records::look_up`]).
    pub history_needed_by: &'a protected::NeededBy,
    /// What the autoscaler made of the job at this look (see [`crate::autoscaler`]): its
    /// ScalingReport and a decision for the scaling history (its overrides are in the spec).
    pub autoscaler: &'a crate::autoscaler::apply::Looked,
}

impl Facts<'_> {
    /// The job's state as Flink reported it now.
    pub fn observed_state(&self) -> Option<&FlinkJobState> {
        match self.job {
            Some(JobObservation::Found { state, .. }) => Some(state),
            _ => None,
        }
    }

    /// Whether Flink reported the job RUNNING now.
    pub fn running(&self) -> bool {
        self.observed_state() == Some(&FlinkJobState::Running)
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
    RecordRevision(revisions::RecordRevision),
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
