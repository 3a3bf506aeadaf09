//! Savepoints and checkpoints of a running job: manual ones (the trigger nonces), periodic
//! savepoints, and the savepoint history with its cleanup.
//!
//! A trigger id is recorded (with the nonce that asked for it) before the trigger is sent;
//! later reconciles poll it, so nothing waits on Flink.

use crate::events::Reason;
use flink_operator_api::{
    FlinkDeploymentSpec, FlinkDeploymentStatus, ReconciledSpec,
    common::{Checkpoint, Savepoint, SnapshotTriggerType},
};

use super::{Action, Decision, EventNote, Plan, SavepointPoll};
use crate::savepoint_history;

/// Follows pending (non-upgrade) savepoints and checkpoints into status. Returns whether
/// one is still pending.
pub(super) fn settle(d: &mut Decision) -> bool {
    settle_savepoint(d) | settle_checkpoint(d)
}

fn settle_savepoint(d: &mut Decision) -> bool {
    let job = d.job_status();
    let Some(info) = job.savepoint_info.clone() else {
        return false;
    };
    let (Some(trigger_id), Some(kind)) = (info.trigger_id.clone(), info.trigger_type) else {
        return false;
    };
    if kind == SnapshotTriggerType::Upgrade {
        return false;
    }
    let kind_name = kind.as_str().to_lowercase();
    match d.obs.savepoint.clone() {
        Some(SavepointPoll::Completed(path)) => {
            let savepoint = Savepoint {
                time_stamp: Some(d.obs.now_ms),
                location: Some(path.clone()),
                trigger_type: Some(kind),
                trigger_nonce: (kind == SnapshotTriggerType::Manual)
                    .then(|| d.fd.spec.job.as_ref().and_then(|j| j.savepoint_trigger_nonce))
                    .flatten(),
                ..Default::default()
            };
            record_savepoint(
                d,
                savepoint,
                info.trigger_timestamp
                    .filter(|_| kind == SnapshotTriggerType::Periodic),
            );
            d.events.push(EventNote::normal(
                Reason::SavepointCompleted,
                format!("The {kind_name} savepoint completed: {path}"),
            ));
            false
        }
        Some(SavepointPoll::Failed(reason) | SavepointPoll::JobGone(reason)) => {
            failed_savepoint(d, kind, info.trigger_timestamp, &reason);
            false
        }
        Some(SavepointPoll::UnknownTrigger) if job.is_running() => {
            // The trigger never reached the JobManager (or it restarted): send it again.
            d.actions.push(Action::TriggerSavepoint {
                job_id: job.job_id.clone().unwrap_or_default(),
                trigger_id,
            });
            true
        }
        Some(SavepointPoll::UnknownTrigger) => {
            failed_savepoint(
                d,
                kind,
                info.trigger_timestamp,
                "the JobManager lost it and the job is not running",
            );
            false
        }
        Some(SavepointPoll::InProgress | SavepointPoll::Unreachable(_)) | None => true,
    }
}

fn failed_savepoint(d: &mut Decision, kind: SnapshotTriggerType, triggered: Option<i64>, reason: &str) {
    clear_savepoint_trigger(&mut d.status);
    if kind == SnapshotTriggerType::Periodic {
        // The next attempt waits a whole interval instead of retrying at once.
        let info = d
            .job_status_mut()
            .savepoint_info
            .get_or_insert_with(Default::default);
        info.last_periodic_savepoint_timestamp = triggered;
    }
    d.events.push(EventNote::warning(
        Reason::SavepointFailed,
        format!("The {} savepoint failed: {reason}", kind.as_str().to_lowercase()),
    ));
}

fn settle_checkpoint(d: &mut Decision) -> bool {
    let job = d.job_status();
    let Some(info) = job.checkpoint_info.clone() else {
        return false;
    };
    let Some(trigger_id) = info.trigger_id.clone() else {
        return false;
    };
    let clear = |d: &mut Decision| {
        let info = d
            .job_status_mut()
            .checkpoint_info
            .get_or_insert_with(Default::default);
        info.trigger_id = None;
        info.trigger_type = None;
        info.trigger_timestamp = None;
    };
    match d.obs.checkpoint.clone() {
        Some(SavepointPoll::Completed(id)) => {
            clear(d);
            let now = d.obs.now_ms;
            let nonce = d.fd.spec.job.as_ref().and_then(|j| j.checkpoint_trigger_nonce);
            let info = d
                .job_status_mut()
                .checkpoint_info
                .get_or_insert_with(Default::default);
            info.last_checkpoint = Some(Checkpoint {
                time_stamp: Some(now),
                trigger_type: Some(SnapshotTriggerType::Manual),
                trigger_nonce: nonce,
                ..Default::default()
            });
            d.events.push(EventNote::normal(
                Reason::CheckpointCompleted,
                format!("The manual checkpoint {id} completed"),
            ));
            false
        }
        Some(SavepointPoll::UnknownTrigger) if job.is_running() => {
            d.actions.push(Action::TriggerCheckpoint {
                job_id: job.job_id.clone().unwrap_or_default(),
                trigger_id,
            });
            true
        }
        Some(SavepointPoll::Failed(reason) | SavepointPoll::JobGone(reason)) => {
            clear(d);
            d.events.push(EventNote::warning(
                Reason::CheckpointFailed,
                format!("The manual checkpoint failed: {reason}"),
            ));
            false
        }
        Some(SavepointPoll::UnknownTrigger) => {
            clear(d);
            d.events.push(EventNote::warning(
                Reason::CheckpointFailed,
                "The manual checkpoint was lost: the JobManager does not know it and the job is not running",
            ));
            false
        }
        Some(SavepointPoll::InProgress | SavepointPoll::Unreachable(_)) | None => true,
    }
}

/// Records a completed savepoint as the last one and in the history; a periodic one also
/// moves the periodic schedule (to when it was triggered).
pub(super) fn record_savepoint(d: &mut Decision, savepoint: Savepoint, periodic_trigger: Option<i64>) {
    clear_savepoint_trigger(&mut d.status);
    savepoint_history::record(d.job_status_mut(), savepoint, periodic_trigger);
}

pub(super) fn clear_savepoint_trigger(status: &mut FlinkDeploymentStatus) {
    if let Some(info) = status.job_status.as_mut().and_then(|j| j.savepoint_info.as_mut()) {
        info.trigger_id = None;
        info.trigger_type = None;
        info.trigger_timestamp = None;
    }
}

/// With nothing pending and the job running: a manual savepoint or checkpoint asked for by
/// a new nonce, a periodic savepoint that is due, or the removal of old savepoints.
pub(super) fn schedule(d: &mut Decision, recorded: &FlinkDeploymentSpec) -> Option<Plan> {
    let spec_job = d.fd.spec.job.clone()?;
    let job = d.job_status();
    if !job.is_running() {
        return None;
    }
    let job_id = job.job_id.clone().unwrap_or_default();
    let recorded_job = recorded.job.clone().unwrap_or_default();
    let now = d.obs.now_ms;
    let trigger_id = d.obs.fresh_trigger_id.clone();

    let manual = spec_job.savepoint_trigger_nonce.is_some()
        && spec_job.savepoint_trigger_nonce != recorded_job.savepoint_trigger_nonce;
    let periodic_due = savepoint_history::periodic_due(&job, d.obs.policy.periodic_savepoint_ms, now);
    if manual || periodic_due {
        let kind = if manual {
            SnapshotTriggerType::Manual
        } else {
            SnapshotTriggerType::Periodic
        };
        let info = d
            .job_status_mut()
            .savepoint_info
            .get_or_insert_with(Default::default);
        info.trigger_id = Some(trigger_id.clone());
        info.trigger_type = Some(kind);
        info.trigger_timestamp = Some(now);
        if manual {
            record_nonces(
                d,
                recorded,
                spec_job.savepoint_trigger_nonce,
                recorded_job.checkpoint_trigger_nonce,
            );
        }
        d.events.push(EventNote::normal(
            Reason::SavepointTriggered,
            format!("Triggering a {} savepoint", kind.as_str().to_lowercase()),
        ));
        d.observed_phase();
        return Some(
            d.take()
                .record_then(vec![Action::TriggerSavepoint { job_id, trigger_id }]),
        );
    }
    if spec_job.checkpoint_trigger_nonce.is_some()
        && spec_job.checkpoint_trigger_nonce != recorded_job.checkpoint_trigger_nonce
    {
        let info = d
            .job_status_mut()
            .checkpoint_info
            .get_or_insert_with(Default::default);
        info.trigger_id = Some(trigger_id.clone());
        info.trigger_type = Some(SnapshotTriggerType::Manual);
        info.trigger_timestamp = Some(now);
        record_nonces(
            d,
            recorded,
            recorded_job.savepoint_trigger_nonce,
            spec_job.checkpoint_trigger_nonce,
        );
        d.events.push(EventNote::normal(
            Reason::CheckpointTriggered,
            "Triggering a manual checkpoint",
        ));
        d.observed_phase();
        return Some(
            d.take()
                .record_then(vec![Action::TriggerCheckpoint { job_id, trigger_id }]),
        );
    }
    if let Some(note) = d.obs.policy.unsupported_schedule.clone() {
        let error = format!(
            "kubernetes.operator.periodic.savepoint.interval {note:?}: cron schedules are not supported by this operator version; use a duration such as 1 h"
        );
        if d.status.error.as_deref() != Some(error.as_str()) {
            d.events.push(EventNote::warning(
                Reason::PeriodicSavepointSkipped,
                error.clone(),
            ));
        }
        d.status.error = Some(error);
    }
    cleanup(d)
}

/// Writes the nonces whose snapshots are now triggered into the recorded spec.
fn record_nonces(
    d: &mut Decision,
    recorded: &FlinkDeploymentSpec,
    savepoint: Option<i64>,
    checkpoint: Option<i64>,
) {
    let current = d
        .status
        .reconciliation_status
        .as_ref()
        .and_then(|rs| rs.last_reconciled::<FlinkDeploymentSpec>().ok().flatten());
    let first = current.as_ref().is_some_and(|r| r.is_first_deployment());
    let mut spec = current.map(|r| r.spec).unwrap_or_else(|| recorded.clone());
    if let Some(job) = spec.job.as_mut() {
        job.savepoint_trigger_nonce = savepoint;
        job.checkpoint_trigger_nonce = checkpoint;
    }
    if let Some(rs) = d.status.reconciliation_status.as_mut() {
        rs.last_reconciled_spec = ReconciledSpec::new(spec, first).encode().ok();
    }
}

/// Savepoints beyond the history's count or age leave it (see [`savepoint_history`]).
fn cleanup(d: &mut Decision) -> Option<Plan> {
    let trim = savepoint_history::trim(&d.job_status(), &d.obs.policy, d.obs.now_ms)?;
    if let Some(info) = d.job_status_mut().savepoint_info.as_mut() {
        info.savepoint_history = Some(trim.keep.clone());
    }
    d.events.push(EventNote::normal(trim.reason(), trim.note()));
    if trim.dispose {
        d.actions.extend(
            trim.removed
                .into_iter()
                .map(|path| Action::DisposeSavepoint { path }),
        );
    }
    d.observed_phase();
    Some(d.take().done(super::FAST))
}
