//! Deleting a FlinkDeployment, once the shared lifecycle has stopped its running job with a
//! savepoint where the settings say so ([`crate::lifecycle::machine`]): the cluster is
//! deleted (a session cluster only once no session job uses it), its high-availability
//! metadata once its JobManager has exited, and the finalizer removed.

use crate::events::Reason;

use super::{Action, Decision, EventNote, FAST, Plan, phase};

/// The savepoint of the deletion is recorded: the cluster goes.
pub(super) fn savepoint_recorded(mut d: Decision, path: &str) -> Plan {
    d.conditions(
        phase::DELETING,
        &format!("the savepoint {path} is recorded; deleting the Flink cluster"),
    );
    d.record_then_acting(vec![Action::DeleteCluster { keep_ha: false }])
}

pub(super) fn tear_down(mut d: Decision, has_finalizer: bool) -> Plan {
    let session = d.fd.spec.job.is_none();
    let kept_for = if session && d.obs.policy.block_on_session_jobs && !d.obs.session_jobs.is_empty() {
        Some(format!(
            "the session jobs [{}] should be deleted first; the session cluster is kept until they are gone (or set kubernetes.operator.session.deletion.block-on-session-jobs to false)",
            d.obs.session_jobs.join(", ")
        ))
    } else if session && d.obs.policy.block_on_unmanaged_jobs && !d.obs.unmanaged_jobs.is_empty() {
        Some(format!(
            "the session cluster runs jobs no FlinkSessionJob manages [{}]; it is kept until they end (cancel them through its REST API, or set kubernetes.operator.session.deletion.block-on-unmanaged-jobs to false)",
            d.obs.unmanaged_jobs.join(", ")
        ))
    } else {
        None
    };
    if let Some(note) = kept_for {
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
    // The resource goes once its JobManager has exited, as it went with a foreground
    // deletion of the cluster: a resource of the same name created next starts clean.
    if let Some(plan) = super::cleanup::wait_for_job_manager_exit(&mut d) {
        return plan;
    }
    if d.obs.ha_metadata {
        d.actions.push(Action::DeleteHaMetadata);
    }
    if has_finalizer {
        d.actions.push(Action::RemoveFinalizer);
    }
    d.done(FAST)
}
