//! What both kinds read of a job through its JobManager's REST API: its state (see
//! [`crate::job::observe`]), the savepoint and the manual checkpoint pending under the
//! trigger ids recorded in status, and the latest completed checkpoint to restore from.
//!
//! [`look`] asks all of them at once: one look costs the slowest answer, not their sum
//! (a JobManager finishing a job after its savepoint answers each in tens of
//! milliseconds, and that wait is between the savepoint and the next cluster).

use flink_operator_api::common::{JobStatus, flink_job_state};

use crate::{
    flink::{FlinkRestClient, JobId, OperationStatus, TriggerId},
    job::JobObservation,
    reconcile::SavepointPoll,
};

/// The latest completed checkpoint of a job, as its JobManager reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckpointLookup {
    /// The external path of the latest completed checkpoint, and when it completed (epoch
    /// milliseconds) if Flink said.
    Found { path: String, timestamp_ms: Option<i64> },
    /// The job has no completed, externally addressable checkpoint.
    None,
    /// The statistics could not be read (the job is unknown, the JobManager did not answer).
    Unavailable(String),
}

/// What one look at a recorded job finds. What depends on the JobManager having answered
/// (it knows the job, or says it does not) is `None` when it did not: pending snapshots are
/// looked at again on the next reconcile.
#[derive(Debug)]
pub struct JobLook {
    pub job: JobObservation,
    pub savepoint: Option<SavepointPoll>,
    pub checkpoint: Option<SavepointPoll>,
    /// Only when asked for (`latest`).
    pub latest_checkpoint: Option<CheckpointLookup>,
}

/// Looks at the job recorded in `job` (whose id is `job_id`) and its pending snapshots, and,
/// when `latest`, its latest completed checkpoint, with the calls sent together. A
/// JobManager that does not answer costs one timeout for all of them.
pub async fn look(
    rest: &FlinkRestClient,
    job: &JobStatus,
    job_id: &JobId,
    failure_known: bool,
    latest: bool,
) -> JobLook {
    let latest_checkpoint = async {
        match latest {
            true => Some(latest_checkpoint(rest, job_id).await),
            false => None,
        }
    };
    let (observed, savepoint, checkpoint, latest_checkpoint) = tokio::join!(
        crate::job::observe(rest, job_id, failure_known),
        savepoint(rest, Some(job)),
        checkpoint(rest, Some(job)),
        latest_checkpoint,
    );
    let answered = !matches!(observed, JobObservation::Unreachable(_));
    // Asked together, the savepoint may have been answered just before the job ended: a
    // stop-with-savepoint's result is there once the job has ended, so it is asked again
    // now rather than a poll later (the job processes nothing until it is seen).
    let ended = matches!(&observed, JobObservation::Found { state, .. } if flink_job_state::is_globally_terminal(state));
    let savepoint = match savepoint {
        Some(SavepointPoll::InProgress) if ended => self::savepoint(rest, Some(job)).await,
        polled => polled,
    };
    JobLook {
        job: observed,
        savepoint: savepoint.filter(|_| answered),
        checkpoint: checkpoint.filter(|_| answered),
        latest_checkpoint: latest_checkpoint.filter(|_| answered),
    }
}

fn recorded_job(job: Option<&JobStatus>) -> Option<JobId> {
    job?.job_id.as_deref().map(JobId::from)
}

/// The pending savepoint (of any trigger type), by the trigger id recorded in status.
async fn savepoint(rest: &FlinkRestClient, job: Option<&JobStatus>) -> Option<SavepointPoll> {
    let trigger = TriggerId::from(job?.savepoint_info.as_ref()?.trigger_id.as_deref()?);
    let job_id = recorded_job(job)?;
    Some(savepoint_by_trigger(rest, &job_id, &trigger).await)
}

/// The pending manual checkpoint, by the trigger id recorded in status.
async fn checkpoint(rest: &FlinkRestClient, job: Option<&JobStatus>) -> Option<SavepointPoll> {
    let trigger = TriggerId::from(job?.checkpoint_info.as_ref()?.trigger_id.as_deref()?);
    let job_id = recorded_job(job)?;
    Some(checkpoint_by_trigger(rest, &job_id, &trigger).await)
}

/// The savepoint (or stop) of `job_id` triggered under `trigger`.
pub async fn savepoint_by_trigger(
    rest: &FlinkRestClient,
    job_id: &JobId,
    trigger: &TriggerId,
) -> SavepointPoll {
    SavepointPoll::from_status(rest.savepoint_status(job_id, trigger).await)
}

/// The checkpoint of `job_id` triggered under `trigger`; completed with the checkpoint's id.
pub async fn checkpoint_by_trigger(
    rest: &FlinkRestClient,
    job_id: &JobId,
    trigger: &TriggerId,
) -> SavepointPoll {
    let result = rest.checkpoint_status(job_id, trigger).await;
    SavepointPoll::from_status(result.map(|status| completed_as(status, |id| id.to_string())))
}

/// The disposal of a savepoint triggered under `trigger` (completed with no path).
pub async fn disposal_by_trigger(rest: &FlinkRestClient, trigger: &TriggerId) -> SavepointPoll {
    let result = rest.disposal_status(trigger).await;
    SavepointPoll::from_status(result.map(|status| completed_as(status, |()| String::new())))
}

/// `status` with its result (a checkpoint id, nothing) as the text a [`SavepointPoll`] holds.
fn completed_as<T>(status: OperationStatus<T>, text: impl FnOnce(T) -> String) -> OperationStatus<String> {
    match status {
        OperationStatus::Completed(result) => OperationStatus::Completed(text(result)),
        OperationStatus::InProgress => OperationStatus::InProgress,
        OperationStatus::Failed(f) => OperationStatus::Failed(f),
        OperationStatus::JobNotFound(r) => OperationStatus::JobNotFound(r),
        OperationStatus::UnknownTrigger(r) => OperationStatus::UnknownTrigger(r),
    }
}

/// The latest completed checkpoint of `job_id` that has a path and was not discarded.
async fn latest_checkpoint(rest: &FlinkRestClient, job_id: &JobId) -> CheckpointLookup {
    match rest.checkpoint_statistics(job_id).await {
        Ok(statistics) => match statistics.latest.completed.filter(|c| !c.discarded) {
            Some(completed) => match completed.external_path.clone() {
                Some(path) => CheckpointLookup::Found {
                    path,
                    timestamp_ms: completed.latest_ack_timestamp.or(completed.trigger_timestamp),
                },
                None => CheckpointLookup::None,
            },
            None => CheckpointLookup::None,
        },
        Err(e) => CheckpointLookup::Unavailable(e.to_string()),
    }
}
