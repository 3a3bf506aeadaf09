//! Deleting a FlinkDeployment: a running job is first stopped with a savepoint as the
//! shared rule says ([`crate::lifecycle::deletion`]), its path recorded in status; then the
//! cluster is deleted (a session cluster only once no session job uses it) and the
//! finalizer removed.

use crate::events::Reason;
use flink_operator_api::common::ResourceLifecycleState;

use super::{Action, Decision, EventNote, FAST, Plan, SLOW, phase};
use crate::lifecycle::{
    deletion::{self, DeletionSavepoint},
    stop,
};

pub(super) fn decide(mut d: Decision, has_finalizer: bool) -> Plan {
    d.status.lifecycle_state = Some(ResourceLifecycleState::Deleting);
    let job_id = d.job_status().job_id.unwrap_or_default();
    let facts = d.facts();
    if let Some(trigger_id) = stop::pending_trigger(&d.status) {
        let (status, mut out) = d.parts();
        match deletion::follow(status, &job_id, &trigger_id, &facts, &mut out) {
            DeletionSavepoint::Recorded(path) => {
                d.conditions(
                    phase::DELETING,
                    &format!("the savepoint {path} is recorded; deleting the Flink cluster"),
                );
                return d.record_then(vec![Action::DeleteCluster { keep_ha: false }]);
            }
            DeletionSavepoint::Resent => {
                d.conditions(
                    phase::DELETING,
                    "stopping the job with a savepoint before deletion",
                );
                return d.done(FAST);
            }
            DeletionSavepoint::Failed(note) => {
                d.conditions(phase::DELETING, &note);
                return d.done(SLOW);
            }
            DeletionSavepoint::Pending => {
                d.conditions(phase::DELETING, "waiting for the savepoint before deletion");
                return d.done(FAST);
            }
            DeletionSavepoint::Abandoned => {}
        }
    }
    if deletion::wants_savepoint(d.fd.spec.job.as_ref(), &d.obs.policy)
        && d.obs.cluster_exists
        && facts.running()
    {
        d.conditions(
            phase::DELETING,
            "stopping the job with a savepoint before deletion",
        );
        let (status, mut out) = d.parts();
        deletion::stop_with_savepoint(status, &job_id, &facts, &mut out);
        return d.record_then(Vec::new());
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
        if !d.obs.cluster_deleting {
            d.actions.push(Action::DeleteCluster { keep_ha: false });
        }
        return d.done(FAST);
    }
    if d.obs.ha_metadata {
        if let Some(plan) = super::cleanup::wait_for_job_manager_exit(&mut d) {
            return plan;
        }
        d.actions.push(Action::DeleteHaMetadata);
    }
    if has_finalizer {
        d.actions.push(Action::RemoveFinalizer);
    }
    d.done(FAST)
}
