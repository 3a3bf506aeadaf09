//! Which looks need the cluster's high-availability metadata: Kubernetes HA ConfigMaps are
//! read from the shared cache at no cost, but ZooKeeper nodes only through a session of
//! their own (see [`crate::zookeeper`]), which a steady job must not cost.
//!
//! The metadata is read by what may restore from it or remove it: the deletion (its record
//! and clean-up), a start (a first one, one under way, or one a pending change, a stop in
//! flight or the restart of a FAILED job commits; a last-state start keeps it, another
//! removes it), and the steps that decide from whether it holds a checkpoint: JobManager
//! recovery, the health check's restart and a rollback. Each is told here from the resource
//! as stored and this look's observation, by the same rules that the steps decide by
//! ([`recovery::missing_in`], [`health::unhealthy_in`],
//! [`rollback::due_unless_settled_at`]); where the status this look writes could still
//! change the answer, the metadata is read.

use flink_operator_api::{
    FlinkDeployment, FlinkDeploymentSpec,
    common::{FlinkJobState, ReconciliationState},
};

use super::{JobManagerObservation, health, recovery, rollback};
use crate::{
    deployment::health::HealthSample,
    lifecycle::{spec, stop},
    policy::Policy,
};

/// What observe found before the HA metadata is read.
#[derive(Debug, Clone, Copy)]
pub struct Looked<'a> {
    pub job_manager: &'a JobManagerObservation,
    /// The health check's sample of the job at this look.
    pub health: Option<&'a HealthSample>,
    pub policy: &'a Policy,
    pub now_ms: i64,
}

/// Whether this look of `fd` (with the autoscaler's overrides in its spec, as the lifecycle
/// acts on it) needs its HA metadata (see the module doc).
pub fn needs_ha_metadata(fd: &FlinkDeployment, looked: Looked) -> bool {
    if fd.metadata.deletion_timestamp.is_some() {
        return true;
    }
    let Some(stored) = fd.status.as_ref() else {
        return true;
    };
    let Some(rs) = stored.reconciliation_status.as_ref() else {
        return true;
    };
    if matches!(
        rs.state,
        Some(ReconciliationState::Upgrading | ReconciliationState::RollingBack)
    ) {
        return true;
    }
    // Nothing recorded (or unreadable, which deploys the spec): a first start.
    let Ok(Some(recorded)) = rs.last_reconciled_spec::<FlinkDeploymentSpec>() else {
        return true;
    };
    if stop::pending_trigger(stored).is_some() || spec::changed(&recorded, &fd.spec) {
        return true;
    }
    if recorded.job.is_none() {
        return false;
    }
    let policy = looked.policy;
    let failed = (stored.job_status.as_ref()).and_then(|j| j.state()) == Some(&FlinkJobState::Failed);
    if (policy.restart_failed && failed)
        || recovery::missing_in(fd, stored, &recorded, looked.job_manager, policy)
    {
        return true;
    }
    if policy.health.is_some() {
        let mut judged = stored.clone();
        health::judge_into(&mut judged, true, looked.health, looked.now_ms, policy);
        if health::unhealthy_in(&judged, &recorded, policy).is_some() {
            return true;
        }
    }
    rollback::due_unless_settled_at(rs, &recorded, policy).is_some_and(|due| looked.now_ms >= due)
}
