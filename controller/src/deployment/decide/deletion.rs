//! Deleting a FlinkDeployment: with `kubernetes.operator.job.savepoint-on-deletion` a
//! running job is first stopped with a savepoint whose path is recorded in status; then
//! the cluster is deleted and the finalizer removed.

use crate::events::Reason;
use flink_operator_api::common::{ResourceLifecycleState, Savepoint, SnapshotTriggerType};

use super::{Action, Decision, EventNote, FAST, Plan, SLOW, SavepointPoll, phase, snapshots};

pub(super) fn decide(mut d: Decision, has_finalizer: bool) -> Plan {
    d.status.lifecycle_state = Some(ResourceLifecycleState::Deleting);
    let job = d.job_status();
    let pending = job
        .savepoint_info
        .as_ref()
        .filter(|i| i.trigger_type == Some(SnapshotTriggerType::Upgrade))
        .and_then(|i| i.trigger_id.clone());
    let job_id = job.job_id.clone().unwrap_or_default();
    let drain = d.obs.policy.drain;
    let running = matches!(
        &d.obs.job,
        Some(super::JobObservation::Found { state, .. }) if state == flink_operator_api::common::flink_job_state::RUNNING
    );
    if let Some(trigger_id) = pending {
        match d.obs.savepoint.clone() {
            Some(SavepointPoll::Completed(path)) => {
                let savepoint = Savepoint {
                    time_stamp: Some(d.obs.now_ms),
                    location: Some(path.clone()),
                    trigger_type: Some(SnapshotTriggerType::Upgrade),
                    ..Default::default()
                };
                snapshots::record_savepoint(&mut d, savepoint, None);
                d.job_status_mut().upgrade_savepoint_path = Some(path.clone());
                d.events.push(EventNote::normal(
                    Reason::SavepointCompleted,
                    format!("The job was stopped with a savepoint before deletion: {path}"),
                ));
                d.conditions(
                    phase::DELETING,
                    &format!("the savepoint {path} is recorded; deleting the Flink cluster"),
                );
                return d.record_then(vec![Action::DeleteCluster { keep_ha: false }]);
            }
            Some(SavepointPoll::UnknownTrigger) if running => {
                d.actions.push(Action::StopWithSavepoint {
                    job_id,
                    trigger_id,
                    drain,
                });
                d.conditions(
                    phase::DELETING,
                    "stopping the job with a savepoint before deletion",
                );
                return d.done(FAST);
            }
            Some(SavepointPoll::Failed(reason) | SavepointPoll::JobGone(reason)) => {
                // The job keeps running; the next reconcile tries again. Deleting without
                // the savepoint takes setting savepoint-on-deletion to false.
                snapshots::clear_savepoint_trigger(&mut d.status);
                let note = format!(
                    "the savepoint before deletion failed, the job keeps running and it is tried again: {reason}. \
                     To delete without a savepoint, set kubernetes.operator.job.savepoint-on-deletion to false"
                );
                d.events
                    .push(EventNote::warning(Reason::SavepointFailed, note.clone()));
                d.status.error = Some(note.clone());
                d.conditions(phase::DELETING, &note);
                return d.done(SLOW);
            }
            Some(SavepointPoll::UnknownTrigger) => {
                snapshots::clear_savepoint_trigger(&mut d.status);
            }
            Some(SavepointPoll::InProgress | SavepointPoll::Unreachable(_)) | None => {
                d.conditions(phase::DELETING, "waiting for the savepoint before deletion");
                return d.done(FAST);
            }
        }
    }
    let wants_savepoint =
        d.fd.spec
            .job
            .as_ref()
            .is_some_and(|j| d.obs.policy.savepoint_on_deletion(j.upgrade_mode_or_default()));
    if wants_savepoint && d.obs.cluster_exists && running {
        let trigger_id = d.obs.fresh_trigger_id.clone();
        let now = d.obs.now_ms;
        let info = d
            .job_status_mut()
            .savepoint_info
            .get_or_insert_with(Default::default);
        info.trigger_id = Some(trigger_id.clone());
        info.trigger_type = Some(SnapshotTriggerType::Upgrade);
        info.trigger_timestamp = Some(now);
        d.events.push(EventNote::normal(
            Reason::SavepointTriggered,
            "Stopping the job with a savepoint before deletion",
        ));
        d.conditions(
            phase::DELETING,
            "stopping the job with a savepoint before deletion",
        );
        return d.record_then(vec![Action::StopWithSavepoint {
            job_id,
            trigger_id,
            drain,
        }]);
    }
    if d.fd.spec.job.is_none() && d.obs.policy.block_on_session_jobs && !d.obs.session_jobs.is_empty() {
        let note = format!(
            "the session jobs [{}] should be deleted first; the session cluster is kept until they are gone (or set kubernetes.operator.session.deletion.block-on-session-jobs to false)",
            d.obs.session_jobs.join(", ")
        );
        if d.status.error.as_deref() != Some(note.as_str()) {
            d.events
                .push(EventNote::warning(Reason::CleanupFailed, note.clone()));
        }
        d.status.error = Some(note.clone());
        d.conditions(phase::DELETING, &note);
        return d.done(super::WAIT);
    }
    d.conditions(phase::DELETING, "deleting the Flink cluster");
    if d.obs.cluster_exists {
        d.actions.push(Action::DeleteCluster { keep_ha: false });
    } else if has_finalizer {
        d.actions.push(Action::RemoveFinalizer);
    }
    d.done(FAST)
}
