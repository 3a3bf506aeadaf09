//! Recovering a JobManager Deployment that went missing while its spec was deployed
//! (deleted by hand, or by something else in the cluster), as the Apache operator does with
//! `kubernetes.operator.jm-deployment-recovery.enabled` (default true).
//!
//! The recorded spec is deployed again as a `last-state` upgrade: the job restores the
//! latest checkpoint from its high-availability metadata under the same job id. A session
//! cluster, or a stateless job, is simply deployed again. A stateful job without a
//! checkpoint in its HA metadata is not started from nothing: status says that a manual
//! restore is needed.

use crate::events::Reason;
use flink_operator_api::{
    FlinkDeployment, FlinkDeploymentSpec, FlinkDeploymentStatus, JobManagerDeploymentStatus,
    common::{ReconciliationState, UpgradeMode},
};

use super::{Decision, EventNote, JobManagerObservation, Plan, is_suspended, start};
use crate::policy::Policy;

/// Whether the JobManager Deployment of `recorded` is missing, recovery is enabled, and
/// there is something to recover (redeployed, or said why not).
pub(super) fn missing(d: &Decision, recorded: &FlinkDeploymentSpec) -> bool {
    missing_in(d.fd, &d.status, recorded, &d.obs.job_manager, &d.obs.policy)
}

/// [`missing`], from the resource as stored, the status being built and the JobManager
/// observed.
pub(super) fn missing_in(
    fd: &FlinkDeployment,
    status: &FlinkDeploymentStatus,
    recorded: &FlinkDeploymentSpec,
    job_manager: &JobManagerObservation,
    policy: &Policy,
) -> bool {
    // A suspended spec has no JobManager to recover.
    if !policy.jm_recovery || *job_manager != JobManagerObservation::Missing || is_suspended(recorded) {
        return false;
    }
    let deployed = (status.reconciliation_status.as_ref())
        .is_some_and(|rs| rs.state == Some(ReconciliationState::Deployed));
    // Just deployed and not seen yet: that is not a loss.
    let seen_before = fd.status.as_ref().and_then(|s| s.job_manager_deployment_status);
    // A job that ended (or was never seen to start) leaves nothing to recover.
    let ended = recorded.job.is_some() && super::shutdown::job_ended_in(fd, status);
    deployed && !matches!(seen_before, None | Some(JobManagerDeploymentStatus::Deploying)) && !ended
}

/// Redeploys `recorded` if its JobManager Deployment is [`missing`].
pub(super) fn recover_if_missing(d: &mut Decision, recorded: &FlinkDeploymentSpec) -> Option<Plan> {
    if !missing(d, recorded) {
        return None;
    }
    let stateless = recorded
        .job
        .as_ref()
        .is_none_or(|j| j.upgrade_mode_or_default() == UpgradeMode::Stateless);
    if stateless {
        let what = if recorded.job.is_some() {
            "the job starts without state, as its upgrade mode is stateless"
        } else {
            "the session cluster is deployed again"
        };
        let note = format!("the JobManager Deployment is missing: {what}");
        return Some(start::recover(d.take(), recorded.clone(), false, &note));
    }
    if !d.obs.policy.high_availability || d.obs.ha_checkpoint != Some(true) {
        let error = "the JobManager Deployment is missing and its high-availability metadata holds no checkpoint: \
                     the job is not started without its state; restore it by hand (spec.job.initialSavepointPath \
                     with a new savepointRedeployNonce)"
            .to_owned();
        let stored = d.fd.status.as_ref().and_then(|s| s.error.as_deref());
        if stored != Some(error.as_str()) {
            d.events
                .push(EventNote::warning(Reason::RecoverDeploymentFailed, error.clone()));
        }
        d.status.error = Some(error);
        return None;
    }
    let note = "the JobManager Deployment is missing: deploying it again, restoring the latest checkpoint \
                from the high-availability metadata";
    Some(start::recover(d.take(), recorded.clone(), true, note))
}
