//! Rolling back a deployed spec that did not become stable
//! (`kubernetes.operator.deployment.rollback.enabled`, as in the Apache operator).
//!
//! A spec is due for a rollback when it was deployed more than
//! `kubernetes.operator.deployment.readiness.timeout` ago and its cluster or job is still not
//! running, while an older spec ran stable (`lastStableSpec`) with the same Flink version and
//! neither is suspended. The rollback is recorded first (`ROLLING_BACK`, a warning Event);
//! then the failed cluster is deleted and the last stable spec deployed, as an upgrade in
//! `last-state` mode (`stateless` stays stateless): the job restores the latest checkpoint
//! from its high-availability metadata (which the webhook requires with rollbacks), or, if
//! the failed job never ran, the state it was to start from. The resource ends
//! `ROLLED_BACK`.
//!
//! `lastReconciledSpec` keeps the spec that failed, so that the same spec is not deployed
//! again; a new spec is applied as any change, and a spec changed back to the stable one is
//! only recorded.

use crate::events::Reason;
use flink_operator_api::{
    FlinkDeploymentSpec, FlinkDeploymentStatus,
    common::{FlinkJobState, ReconciliationState, ReconciliationStatus, ResourceLifecycleState, UpgradeMode},
};

use super::{Decision, EventNote, FAST, Phase, Plan, is_suspended, start::capitalised, upgrade_relevant};
use crate::{lifecycle::restore::human, policy::Policy};

/// The spec a rollback deploys (while `ROLLING_BACK`) or deployed (once `ROLLED_BACK`):
/// the last stable spec, in `last-state` mode unless it is stateless.
pub(super) fn deployed_spec(status: &FlinkDeploymentStatus) -> Option<FlinkDeploymentSpec> {
    let rs = status.reconciliation_status.as_ref()?;
    if !matches!(
        rs.state,
        Some(ReconciliationState::RollingBack | ReconciliationState::RolledBack)
    ) {
        return None;
    }
    let mut spec: FlinkDeploymentSpec = rs.last_stable_spec::<FlinkDeploymentSpec>().ok().flatten()?;
    if let Some(job) = spec.job.as_mut()
        && job.upgrade_mode_or_default() != UpgradeMode::Stateless
    {
        job.upgrade_mode = Some(UpgradeMode::LastState);
    }
    Some(spec)
}

/// When a rollback of `recorded` becomes due (epoch ms): rollback enabled, the spec
/// deployed and not stable, a different stable spec to go back to. `None` when none can be.
pub(super) fn due_at(d: &Decision, recorded: &FlinkDeploymentSpec) -> Option<i64> {
    let job_state = d.status.job_status.as_ref().and_then(|j| j.state.as_ref());
    let settled = matches!(
        d.status.lifecycle_state,
        Some(ResourceLifecycleState::Stable | ResourceLifecycleState::Suspended)
    ) || job_state == Some(&FlinkJobState::Finished);
    if settled {
        return None;
    }
    due_unless_settled_at(d.status.reconciliation_status.as_ref()?, recorded, &d.obs.policy)
}

/// When a rollback of `recorded` becomes due unless its spec has settled (become stable,
/// suspended or finished): rollback enabled, the spec deployed, a different stable spec to go
/// back to, as `rs` records them.
pub(super) fn due_unless_settled_at(
    rs: &ReconciliationStatus,
    recorded: &FlinkDeploymentSpec,
    policy: &Policy,
) -> Option<i64> {
    if !policy.rollback_enabled || rs.state != Some(ReconciliationState::Deployed) {
        return None;
    }
    let stable: FlinkDeploymentSpec = rs.last_stable_spec::<FlinkDeploymentSpec>().ok().flatten()?;
    if upgrade_relevant(&stable) == upgrade_relevant(recorded)
        || is_suspended(&stable)
        || is_suspended(recorded)
        || stable.flink_version != recorded.flink_version
    {
        return None;
    }
    Some(
        rs.reconciliation_timestamp?
            .saturating_add(policy.readiness_timeout_ms),
    )
}

/// Whether a rollback of `recorded` is due now (it is started, or said why not).
pub(super) fn due_now(d: &Decision, recorded: &FlinkDeploymentSpec) -> bool {
    due_at(d, recorded).is_some_and(|due| d.obs.now_ms >= due)
}

/// Starts a rollback if the deployed spec (`recorded`) is [`due_now`] for one.
pub(super) fn start_if_due(d: &mut Decision, recorded: &FlinkDeploymentSpec) -> Option<Plan> {
    if !due_now(d, recorded) {
        return None;
    }
    let rs = d.status.reconciliation_status.clone()?;
    let stable: FlinkDeploymentSpec = rs.last_stable_spec::<FlinkDeploymentSpec>().ok().flatten()?;
    let job_state = d.job_status().state;
    let waited = d.obs.now_ms - rs.reconciliation_timestamp?;
    let why = match d.status.error.as_deref() {
        Some(error) => error.to_owned(),
        None => match job_state {
            Some(state) => format!("the job is {state}"),
            None => format!(
                "the JobManager is {}",
                d.status
                    .job_manager_deployment_status
                    .unwrap_or_default()
                    .as_str()
            ),
        },
    };
    let note = format!(
        "rolling back to the last stable spec: the spec deployed {} ago did not become stable within \
         kubernetes.operator.deployment.readiness.timeout ({}): {why}",
        human(waited),
        human(d.obs.policy.readiness_timeout_ms)
    );
    let ran = d.job_status().start_time.is_some();
    let stateless = stable
        .job
        .as_ref()
        .is_some_and(|j| j.upgrade_mode_or_default() == UpgradeMode::Stateless);
    let from_ha =
        stable.job.is_some() && !stateless && (ran || d.job_status().upgrade_savepoint_path.is_none());
    if from_ha && d.obs.ha_checkpoint != Some(true) {
        // A failed application may have cleaned up its HA metadata: rolling back would
        // start the job without its state.
        let error = format!(
            "not rolled back: the high-availability metadata holds no checkpoint to restore the last stable spec from \
             ({why}); the resource stays as it is until its spec changes"
        );
        let stored = d.fd.status.as_ref().and_then(|s| s.error.as_deref());
        if stored != Some(error.as_str()) {
            d.events
                .push(EventNote::warning(Reason::RollbackFailed, capitalised(&error)));
        }
        d.status.error = Some(error);
        return None;
    }
    let mut d = d.take();
    let now = d.obs.now_ms;
    if let Some(rs) = d.status.reconciliation_status.as_mut() {
        rs.state = Some(ReconciliationState::RollingBack);
        rs.reconciliation_timestamp = Some(now);
    }
    if stable.job.is_some() && (ran || stateless) {
        // A job that ran has checkpoints in its high-availability metadata, newer than
        // the state it started from; a stateless one starts from nothing.
        d.job_status_mut().upgrade_savepoint_path = None;
    }
    d.status.lifecycle_state = Some(ResourceLifecycleState::RollingBack);
    d.conditions(Phase::Updating, &note);
    d.events
        .push(EventNote::warning(Reason::Rollback, capitalised(&note)));
    Some(d.done(FAST))
}
