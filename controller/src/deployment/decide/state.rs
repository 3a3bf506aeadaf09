//! Which state a job restores from, and the guard on its age (the shared rules are in
//! [`crate::lifecycle::restore`]; what is read from a FlinkDeployment's status and
//! observation is here).

use flink_operator_api::FlinkDeploymentStatus;

pub(super) use crate::lifecycle::restore::{Kind, RestorableState, age_note, record};

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
    crate::lifecycle::restore::newest(&job, checkpoint)
}
