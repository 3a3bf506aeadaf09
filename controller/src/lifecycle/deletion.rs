//! Deleting a resource whose job runs: one rule for both job kinds.
//!
//! With `kubernetes.operator.job.savepoint-on-deletion` (unset: true in `savepoint` upgrade
//! mode) a running job is stopped with a savepoint, drained first when
//! `kubernetes.operator.job.drain-on-savepoint-deletion` is true; its path is recorded in
//! status (last savepoint, history, the state a re-created resource can start from) before
//! anything that could lose it is torn down. A failed savepoint of a job that still runs
//! is tried again: the user asked for its state to be kept; to delete without it, they
//! set the key to false.

use flink_operator_api::common::JobSpec;

use super::{
    Facts, JobAction, LifecycleStatus, Out, Snapshot, poll::SavepointPoll, snapshots::clear_trigger, stop,
};
use crate::{events::Reason, policy::Policy, runtime::EventNote};

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
            clear_trigger(status.job_status_mut(), Snapshot::Savepoint);
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
            clear_trigger(status.job_status_mut(), Snapshot::Savepoint);
            DeletionSavepoint::Abandoned
        }
    }
}
