//! Shutting down the JobManager of an application whose job ended (FINISHED, FAILED and not
//! restarted, CANCELED), once `kubernetes.operator.jm-deployment.shutdown-ttl` (default one
//! day, as in the Apache operator) has passed since the job's state last changed
//! (`status.jobStatus.updateTime`): an ended job keeps no JobManager and TaskManagers running
//! for ever, while its JobManager stays long enough for its web UI and REST API to be read.
//!
//! The cluster's Deployments are deleted and its high-availability metadata is kept, as the
//! Apache operator does. The job stays as it ended in status, the JobManager Deployment
//! MISSING without an error: nothing is recovered for a job that ended ([`super::recovery`]),
//! and a change of the spec starts the job again as for any ended job.

use flink_operator_api::{FlinkDeployment, FlinkDeploymentStatus, common::FlinkJobState};

use super::{Action, Decision, EventNote, FAST, JobManagerObservation, Plan, Reason};

/// Whether the job of this application ended: nothing runs that needs its JobManager.
pub(super) fn job_ended(d: &Decision) -> bool {
    job_ended_in(d.fd, &d.status)
}

/// [`job_ended`], by the job's state in `status`.
pub(super) fn job_ended_in(fd: &FlinkDeployment, status: &FlinkDeploymentStatus) -> bool {
    // Read in place: this is asked on every look at every application.
    fd.spec.job.is_some()
        && matches!(
            status.job_status.as_ref().and_then(|j| j.state()),
            Some(FlinkJobState::Finished | FlinkJobState::Failed | FlinkJobState::Canceled)
        )
}

/// Whether the JobManager of an ended job is due to be shut down now.
pub(super) fn due(d: &Decision) -> bool {
    let present = matches!(d.obs.job_manager, JobManagerObservation::Present { .. });
    let ended_at = (d.status.job_status.as_ref())
        .and_then(|j| j.update_time.as_deref())
        .and_then(|t| t.trim().parse::<i64>().ok());
    present
        && !d.obs.cluster_deleting
        && job_ended(d)
        && ended_at.is_some_and(|at| d.obs.now_ms >= at.saturating_add(d.obs.policy.shutdown_ttl_ms))
}

/// Deletes the cluster of an ended job, keeping its high-availability metadata.
pub(super) fn shut_down(d: &mut Decision) -> Plan {
    let state = d.job_status().state.map_or_else(String::new, |s| s.to_string());
    let ttl_s = d.obs.policy.shutdown_ttl_ms / 1000;
    d.events.push(EventNote::normal(
        Reason::JobManagerShutDown,
        format!(
            "The job is {state}: its JobManager is shut down {ttl_s} s after the job ended \
             (kubernetes.operator.jm-deployment.shutdown-ttl); the high-availability metadata is kept"
        ),
    ));
    d.actions.push(Action::DeleteCluster { keep_ha: true });
    d.observed_phase();
    d.done(FAST)
}
