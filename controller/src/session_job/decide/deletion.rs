//! Deleting a FlinkSessionJob: a job that nothing runs is let go at once; otherwise, once
//! the shared lifecycle has stopped it with a savepoint where the settings say so, it is
//! cancelled, and the finalizer goes once it has ended.

use flink_operator_api::{FlinkSessionJobSpec, common::FlinkJobState, keys};

use super::{Action, Decision, JobObservation, Phase, Plan, SessionObservation, recorded_job_id};
use crate::{
    events::Reason,
    flink::poll::CheckpointLookup,
    lifecycle::{FAST, JobAction, SLOW, WAIT, deletion, restore::RestorableState, retention::OnCancel, spec},
};
use flink_operator_api::SnapshotType;

/// Lets go at once of a job that nothing runs (its session cluster is gone, or it runs no
/// job of this resource); waits for a session cluster that cannot act yet.
pub(super) fn before_deletion_stop(d: &mut Decision<'_>) -> Option<Plan> {
    if !d.has_finalizer(keys::finalizers::FLINK_SESSION_JOB) {
        d.conditions(Phase::Deleting, "deleted");
        return Some(d.done(SLOW));
    }
    let name = d.session_name().to_owned();
    match &d.obs.session {
        SessionObservation::Missing | SessionObservation::NotSession | SessionObservation::Deleting => {
            return Some(release(
                d,
                format!("session cluster {name} is gone; nothing runs the job"),
            ));
        }
        SessionObservation::NotReady(why) => {
            let message = format!("waiting for session cluster {name} to stop the job: {why}");
            d.conditions(Phase::Deleting, &message);
            return Some(d.done(WAIT));
        }
        SessionObservation::Ready => {}
    }
    // An unreadable record is treated as "something may run": the job is still looked up
    // by its recorded id.
    let recorded = d
        .status
        .reconciliation_status
        .clone()
        .unwrap_or_default()
        .last_reconciled_spec::<FlinkSessionJobSpec>()
        .unwrap_or_else(|_| Some(d.sj.spec.clone()));
    match (recorded, recorded_job_id(&d.status)) {
        (Some(r), Some(_)) if !spec::is_suspended(&r) => None,
        _ => Some(release(d, "no job runs".to_owned())),
    }
}

/// The finalizer goes: nothing of the job is left to stop. The state the job leaves is
/// recorded first: this status is the only pointer to it.
fn release(d: &mut Decision<'_>, why: String) -> Plan {
    let recorded = record_left_state(d);
    d.conditions(Phase::Deleting, &why);
    d.actions.push(Action::RemoveFinalizer);
    d.event(false, Reason::Deleted, why);
    if recorded {
        d.record_then(SLOW)
    } else {
        d.done(SLOW)
    }
}

/// Records the latest state the job leaves (see [`deletion::left_state`]): the newest its
/// status names, or the latest checkpoint of the ended job when Flink keeps it (a FAILED job's,
/// or a CANCELED one's whose checkpoints are retained on cancellation, as the operator submits
/// them unless the configuration says otherwise). Whether there was one.
fn record_left_state(d: &mut Decision<'_>) -> bool {
    let retained = d.obs.on_cancel == OnCancel::Retained || !d.obs.policy.checkpoint_retention_set;
    let kept = match &d.obs.job {
        Some(JobObservation::Found { state, .. }) => {
            *state == FlinkJobState::Failed || (*state == FlinkJobState::Canceled && retained)
        }
        _ => false,
    };
    let latest_checkpoint = match &d.obs.checkpoint {
        Some(CheckpointLookup::Found { path, timestamp_ms }) if kept => Some(RestorableState {
            kind: SnapshotType::Checkpoint,
            path: path.clone(),
            timestamp_ms: *timestamp_ms,
        }),
        _ => None,
    };
    let deleted_ms =
        d.sj.metadata
            .deletion_timestamp
            .as_ref()
            .map_or(d.obs.now_ms, |t| t.0.as_millisecond());
    let name = d.sj.metadata.name.clone().unwrap_or_default();
    let job = d.status.job_status.clone();
    let leaving = deletion::Leaving {
        resource: &name,
        job: d.sj.spec.job.as_ref(),
        status: job.as_ref(),
        snapshots: &d.obs.snapshots,
        last_checkpoint: None,
        latest_checkpoint,
        deleted_ms,
        snapshot_resources: d.obs.policy.snapshot_resources,
    };
    let Some(left) = deletion::left_state(&leaving) else {
        return false;
    };
    let (status, mut out) = d.parts();
    deletion::record_left_state(status, left, &mut out);
    true
}

/// The job was not stopped with a savepoint for the deletion: it is cancelled, and the
/// finalizer goes once it has ended.
pub(super) fn tear_down(d: &mut Decision<'_>) -> Plan {
    let job_id = d.job_id();
    let name = d.session_name().to_owned();
    let obs = d.obs;
    match &obs.job {
        Some(JobObservation::NotFound) => release(d, format!("job {job_id} is gone")),
        Some(JobObservation::Found { state, .. }) if state.is_globally_terminal() => {
            release(d, format!("job {job_id} ended ({state})"))
        }
        Some(JobObservation::Found { state, .. }) if *state == FlinkJobState::Cancelling => {
            d.conditions(
                Phase::Deleting,
                &format!("waiting for job {job_id} to be cancelled"),
            );
            d.done(FAST)
        }
        Some(JobObservation::Found { state, .. }) => {
            let note = if deletion::wants_savepoint(d.sj.spec.job.as_ref(), &obs.policy) {
                format!("Cancelling job {job_id} without a savepoint: it is {state}, not RUNNING")
            } else {
                format!("Cancelling job {job_id}")
            };
            d.conditions(Phase::Deleting, &note);
            // A stateful job's latest checkpoint is in status before the cancel: should the
            // JobManager forget the cancelled job before the deletion records what it
            // left, status still points at it.
            if deletion::records_left_state(d.sj.spec.job.as_ref())
                && let Some(CheckpointLookup::Found { path, timestamp_ms }) = &obs.checkpoint
            {
                let checkpoint = RestorableState {
                    kind: SnapshotType::Checkpoint,
                    path: path.clone(),
                    timestamp_ms: *timestamp_ms,
                };
                crate::lifecycle::restore::record(
                    d.status.job_status.get_or_insert_with(Default::default),
                    Some(&checkpoint),
                );
            }
            d.actions.push(Action::Job(JobAction::Cancel { job_id }));
            d.event(false, Reason::Deleting, note);
            d.record_then(FAST)
        }
        Some(JobObservation::Unreachable(_)) | None => {
            d.conditions(
                Phase::Deleting,
                &format!("waiting for session cluster {name} to answer"),
            );
            d.done(WAIT)
        }
    }
}
