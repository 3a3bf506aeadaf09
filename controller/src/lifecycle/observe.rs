//! Flink's view of a job into its status, the same for every kind: its state with an
//! Event per change, and why it failed.

use flink_operator_api::LifecycleStatus;
use flink_operator_api::common::{FlinkJobState, JobStatus, ReconciliationState, ResourceLifecycleState};

use super::{
    facts::Out,
    restore::{self, RestorableState},
};
use crate::events::{EventNote, Reason};
use flink_operator_api::FlinkSpec;
use flink_operator_api::SnapshotType;

/// The observed `state` and `start_time` into `job`, with a JobStatusChanged Event (a
/// warning for FAILED) when the state changed. `updateTime` says when the state last
/// changed, not when it was last looked at, so a steady job's status stays as it is.
pub fn job_state_into<A>(
    job: &mut JobStatus,
    state: &FlinkJobState,
    start_time: Option<i64>,
    now_ms: i64,
    out: &mut Out<A>,
) {
    if job.state.as_ref() != Some(state) {
        out.event(EventNote {
            warning: *state == FlinkJobState::Failed,
            reason: Reason::JobStatusChanged,
            note: format!("Job status changed to {state}"),
        });
        job.update_time = Some(now_ms.to_string());
    }
    job.state = Some(state.clone());
    job.start_time = start_time.map(|t| t.to_string());
}

/// The latest checkpoint (`path`, completed at `timestamp_ms`) of a stateful job found in
/// `state` into `job`, if the job failed or was cancelled behind the operator's back: it is
/// then its newest state, and what runs the job forgets it (a session cluster after
/// `jobstore.expiration-time` or when its JobManager restarts; an application cluster when
/// its JobManager is shut down, lost or deleted, and Flink's cleanup of the ended job takes it
/// out of the HA metadata), so it is recorded while it is known.
pub fn ended_checkpoint_into(
    job: &mut JobStatus,
    state: &FlinkJobState,
    stateful: bool,
    path: &str,
    timestamp_ms: Option<i64>,
) {
    let ended = matches!(state, FlinkJobState::Failed | FlinkJobState::Canceled);
    if ended && stateful && job.upgrade_savepoint_path.as_deref() != Some(path) {
        let checkpoint = RestorableState {
            kind: SnapshotType::Checkpoint,
            path: path.to_owned(),
            timestamp_ms,
        };
        restore::record(job, Some(&checkpoint));
    }
}

/// The error of a FAILED job: Flink's root cause when it was just read (with a JobFailed
/// Event), else the one already in status (the cause is read once), else a note that Flink
/// gave none.
pub fn failure<A>(
    job_id: &str,
    cause: Option<&String>,
    previous: Option<String>,
    out: &mut Out<A>,
) -> String {
    match cause {
        Some(cause) => {
            let error = format!("job {job_id} failed: {cause}");
            out.event(EventNote::warning(Reason::JobFailed, error.clone()));
            error
        }
        None => previous.unwrap_or_else(|| format!("job {job_id} failed; Flink gave no reason")),
    }
}

/// What the observation says of a job and what runs it, for its lifecycle state.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    /// The job FAILED, or what runs it is in error.
    pub failed: bool,
    /// The job runs (a session cluster: it is ready).
    pub stable: bool,
    /// The job runs the last stable spec since a rollback.
    pub rolled_back: bool,
}

/// The lifecycle state the observation shows: FAILED (the job, or what runs it), ROLLED_BACK
/// after a rollback, STABLE once the job runs (a session cluster: once it is ready), else
/// DEPLOYED. A stable resource records the spec it runs as its last stable one (a spec
/// changed since is not stable yet, unless none was recorded).
pub fn lifecycle_into<S: FlinkSpec>(status: &mut impl LifecycleStatus, seen: Seen, recorded: &S, spec: &S) {
    let Seen {
        failed,
        stable,
        rolled_back,
    } = seen;
    *status.lifecycle_state_mut() = Some(if failed {
        ResourceLifecycleState::Failed
    } else if rolled_back {
        ResourceLifecycleState::RolledBack
    } else if stable {
        ResourceLifecycleState::Stable
    } else {
        ResourceLifecycleState::Deployed
    });
    if stable
        && !rolled_back
        && let Some(rs) = status.reconciliation_mut().as_mut()
    {
        rs.state = Some(ReconciliationState::Deployed);
        if rs.last_stable_spec.is_none() || recorded == spec {
            rs.last_stable_spec = super::spec::encode(recorded.clone(), false);
        }
    }
}
