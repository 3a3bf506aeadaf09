//! Which state a job restores from, and the guard on its age (the shared rules are in
//! [`crate::restore`]; what is read from a FlinkDeployment's status and observation is here).

use flink_operator_api::FlinkDeploymentStatus;

pub(super) use crate::restore::{Kind, RestorableState, age_note, guard, record, recorded};

use super::Observation;

/// The newest state known for the job: its latest completed checkpoint (as observed), its
/// last savepoint, or the state it was started from.
pub(super) fn newest(status: &FlinkDeploymentStatus, obs: &Observation) -> Option<RestorableState> {
    let job = status.job_status.clone().unwrap_or_default();
    let checkpoint = obs.latest_checkpoint.as_ref().map(|c| RestorableState {
        kind: Kind::Checkpoint,
        path: c.path.clone(),
        timestamp_ms: Some(c.timestamp_ms),
    });
    crate::restore::newest(&job, checkpoint)
}

/// The last savepoint, if younger than `max_age_ms`.
pub(super) fn fresh_savepoint(
    status: &FlinkDeploymentStatus,
    max_age_ms: Option<i64>,
    now_ms: i64,
) -> Option<(String, i64)> {
    let max_age = max_age_ms?;
    let savepoint = status
        .job_status
        .as_ref()?
        .savepoint_info
        .as_ref()?
        .last_savepoint
        .as_ref()?;
    let path = savepoint.location.clone()?;
    let age = now_ms - savepoint.time_stamp?;
    (age <= max_age).then_some((path, age))
}
