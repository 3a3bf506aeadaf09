//! Deleting a resource whose job runs: one rule for both job kinds.
//!
//! With `kubernetes.operator.job.savepoint-on-deletion` (unset: true in `savepoint` upgrade
//! mode) a running job is stopped with a savepoint, drained first when
//! `kubernetes.operator.job.drain-on-savepoint-deletion` is true; its path is recorded in
//! status (last savepoint, history, the state a re-created resource can start from) before
//! anything that could lose it is torn down. A failed savepoint of a job that still runs
//! is tried again: the user asked for its state to be kept; to delete without it, they
//! set the key to false.
//!
//! Whatever ends the job, a stateful one (`last-state` or `savepoint` upgrade mode) leaves
//! its latest state behind on storage, and its resource's status (and, for an application
//! cluster, its high-availability metadata) is the only pointer to it. Before those go, the
//! deletion records it ([`left_state`]): an UPGRADE FlinkStateSnapshot with
//! `savepoint.alreadyExists` and its path (a retained checkpoint is recorded so too: the CRD's
//! checkpoint spec cannot name an existing one), with no owner so that it outlives the
//! resource, named after the deletion's time so that a retried deletion names the same one,
//! and a Normal Event with the path; a resource created next with that path as
//! `spec.job.initialSavepointPath` starts from it.

use flink_operator_api::LifecycleStatus;
use flink_operator_api::common::{JobSpec, JobStatus, SnapshotTriggerType, UpgradeMode};

use crate::flink::poll::SavepointPoll;

use super::{
    facts::{Facts, JobAction, Out},
    restore::{self, RestorableState},
    snapshot_resources::{self, JobSnapshot, NewSnapshot},
    stop,
    trigger::clear_trigger,
};
use crate::{
    events::{EventNote, Reason},
    policy::Policy,
};
use flink_operator_api::SnapshotType;

/// Whether deleting a resource with this job stops it with a savepoint.
pub fn wants_savepoint(job: Option<&JobSpec>, policy: &Policy) -> bool {
    job.is_some_and(|j| policy.savepoint_on_deletion(j.upgrade_mode_or_default()))
}

/// Records a fresh trigger id and stops `job_id` with a savepoint before deletion.
pub fn stop_with_savepoint<A: From<JobAction>>(
    status: &mut impl LifecycleStatus,
    job_id: &str,
    facts: &Facts,
    out: &mut Out<A>,
) {
    let trigger_id = stop::record_trigger(status, facts);
    out.event(EventNote::normal(
        Reason::SavepointTriggered,
        format!("Stopping job {job_id} with a savepoint before deletion"),
    ));
    out.act(JobAction::StopWithSavepoint {
        job_id: job_id.to_owned(),
        trigger_id,
        drain: facts.policy.drain,
    });
}

/// Where the savepoint of a deletion stands.
#[derive(Debug, Clone, PartialEq)]
pub enum DeletionSavepoint {
    /// Completed and recorded in status (write it before tearing anything down).
    Recorded(String),
    /// Under way, or the JobManager did not answer.
    Pending,
    /// The stop never reached the JobManager and the job runs: sent again.
    Resent,
    /// It failed while the job still runs: the job keeps running, the next reconcile tries
    /// again (the note is in status and an Event).
    Failed(String),
    /// None will come (the job is not running): deletion goes on without it.
    Abandoned,
}

/// Follows the recorded deletion savepoint `trigger_id` of `job_id`.
pub fn follow<A: From<JobAction>>(
    status: &mut impl LifecycleStatus,
    job_id: &str,
    trigger_id: &str,
    facts: &Facts,
    out: &mut Out<A>,
) -> DeletionSavepoint {
    let running = facts.running();
    if let Some((path, _, place)) = stop::late_savepoint(facts).filter(|_| !running) {
        stop::record_savepoint(status, path, facts, out);
        out.event(EventNote::normal(
            Reason::SavepointCompleted,
            format!(
                "Job {job_id} was stopped with a savepoint before deletion: {path} (found in {place}; the JobManager no longer keeps the stop's result)"
            ),
        ));
        return DeletionSavepoint::Recorded(path.to_owned());
    }
    match facts.savepoint {
        Some(SavepointPoll::Completed(path)) => {
            stop::record_savepoint(status, path, facts, out);
            out.event(EventNote::normal(
                Reason::SavepointCompleted,
                format!("Job {job_id} was stopped with a savepoint before deletion: {path}"),
            ));
            DeletionSavepoint::Recorded(path.clone())
        }
        Some(SavepointPoll::UnknownTrigger) if running => {
            out.act(JobAction::StopWithSavepoint {
                job_id: job_id.to_owned(),
                trigger_id: trigger_id.to_owned(),
                drain: facts.policy.drain,
            });
            DeletionSavepoint::Resent
        }
        Some(SavepointPoll::Failed(reason)) if running => {
            clear_trigger(status.job_status_mut(), SnapshotType::Savepoint);
            let note = format!(
                "the savepoint of job {job_id} before deletion failed, the job keeps running and it is tried again: {reason}. \
                 To delete without a savepoint, set kubernetes.operator.job.savepoint-on-deletion to false"
            );
            out.event(EventNote::warning(Reason::SavepointFailed, note.clone()));
            *status.error_mut() = Some(note.clone());
            DeletionSavepoint::Failed(note)
        }
        Some(SavepointPoll::InProgress | SavepointPoll::Unreachable(_)) | None => DeletionSavepoint::Pending,
        Some(SavepointPoll::UnknownTrigger | SavepointPoll::Failed(_) | SavepointPoll::JobGone(_)) => {
            clear_trigger(status.job_status_mut(), SnapshotType::Savepoint);
            DeletionSavepoint::Abandoned
        }
    }
}

/// What a deletion knows of the state a job leaves (see the module doc).
#[derive(Debug, Clone)]
pub struct Leaving<'a> {
    /// The resource's name (its snapshot resources are named after it).
    pub resource: &'a str,
    pub job: Option<&'a JobSpec>,
    /// The job's status as stored.
    pub status: Option<&'a JobStatus>,
    /// The job's FlinkStateSnapshot resources.
    pub snapshots: &'a [JobSnapshot],
    /// The checkpoint that what ran the job points at last (an application cluster's HA
    /// metadata, read once its JobManager has exited, so that no later checkpoint subsumes
    /// it); it is newer than anything in status.
    pub last_checkpoint: Option<RestorableState>,
    /// The job's latest completed checkpoint as its JobManager reported it, with its time: it
    /// is recorded when it is newer than what status names (a session job's, once it was
    /// cancelled and its retained checkpoint is its last state).
    pub latest_checkpoint: Option<RestorableState>,
    /// When the resource's deletion was asked for (epoch ms): the record's name.
    pub deleted_ms: i64,
    /// Whether the job's snapshots are FlinkStateSnapshot resources.
    pub snapshot_resources: bool,
}

/// Whether deleting a resource with this job records the state it leaves: a stateful job's
/// (`last-state` or `savepoint` upgrade mode).
pub fn records_left_state(job: Option<&JobSpec>) -> bool {
    job.is_some_and(|j| j.upgrade_mode_or_default() != UpgradeMode::Stateless)
}

/// What a deletion records of the state a job leaves.
#[derive(Debug, Clone, PartialEq)]
pub struct LeftState {
    pub state: RestorableState,
    /// The FlinkStateSnapshot that records it, and its name (none without snapshot
    /// resources: the Event is then the only record).
    pub snapshot: Option<(String, NewSnapshot)>,
}

/// The state a deleted job leaves, to record before its pointers go: `None` for a stateless
/// job (or a session cluster), one that left no state, or one whose state a snapshot resource
/// records already (this deletion's own record after a retry, or the deletion savepoint's).
pub fn left_state(leaving: &Leaving) -> Option<LeftState> {
    if !records_left_state(leaving.job) {
        return None;
    }
    let stored = leaving.status.cloned().unwrap_or_default();
    let view = snapshot_resources::view(&stored, leaving.snapshots);
    let state = leaving
        .last_checkpoint
        .clone()
        .or_else(|| restore::newest(&view, leaving.latest_checkpoint.clone()))
        .filter(|s| !s.path.trim().is_empty())?;
    let recorded = leaving
        .snapshots
        .iter()
        .any(|s| !s.deleting && s.path.as_deref() == Some(state.path.as_str()));
    // A stop's savepoint whose UPGRADE resource is being created in this pass (still marked
    // in status, so the cache may not show it yet) is recorded by it. One whose resource is
    // gone (the user deleted it) is recorded again.
    let stopped_with_it = snapshot_resources::unrecorded(&stored, false)
        .iter()
        .any(|new| new.existing_path.as_deref() == Some(state.path.as_str()));
    if recorded || (leaving.snapshot_resources && stopped_with_it) {
        return None;
    }
    let snapshot = leaving.snapshot_resources.then(|| {
        let new = NewSnapshot {
            kind: SnapshotType::Savepoint,
            trigger_type: SnapshotTriggerType::Upgrade,
            at_ms: leaving.deleted_ms,
            existing_path: Some(state.path.clone()),
            completed_ms: state.timestamp_ms,
            // Its files are the user's to keep or drop: deleting the record leaves them.
            dispose_on_delete: false,
        };
        (new.name(leaving.resource), new)
    });
    Some(LeftState { state, snapshot })
}

/// Records `left` in `status` (the state the next job would start from) and asks for its
/// snapshot resource, with a Normal Event naming the path; write the status before what
/// points at the state goes.
pub fn record_left_state<A: From<JobAction>>(
    status: &mut impl LifecycleStatus,
    left: LeftState,
    out: &mut Out<A>,
) {
    restore::record(status.job_status_mut(), Some(&left.state));
    let what = left.state.describe();
    let note = match left.snapshot {
        Some((name, new)) => {
            out.act(JobAction::CreateSnapshot(new));
            format!(
                "The deletion leaves the job's state in {what}: recorded as FlinkStateSnapshot {name}, which no resource owns \
                 and which outlives this one; a resource created with spec.job.initialSavepointPath {} starts from it",
                left.state.path
            )
        }
        None => format!(
            "The deletion leaves the job's state in {what} (recorded by this Event only: snapshot resources are off); \
             a resource created with spec.job.initialSavepointPath {} starts from it",
            left.state.path
        ),
    };
    out.event(EventNote::normal(Reason::StateRecorded, note));
}

#[cfg(test)]
#[path = "deletion/tests.rs"]
mod tests;
