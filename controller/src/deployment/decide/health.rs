//! The cluster health check's part in the decision (see [`crate::deployment::health`]):
//! each look's sample judged into the history in `status.clusterInfo`, and a job found
//! unhealthy restarted with its cluster, through the same commit as every other start, the
//! way its upgrade mode allows (as the Apache operator does):
//!
//! - `stateless`: without state, under a new job id;
//! - `last-state` and `savepoint`: from the latest checkpoint in the high-availability
//!   metadata, which the cluster's deletion keeps, under the same job id. Without one the
//!   job is not restarted (a restart from nothing would lose its state); status and a
//!   Warning say why, and Flink's own restart strategy goes on.
//!
//! A job that has ended is not restarted here: a FAILED one is the business of
//! `kubernetes.operator.job.restart.failed`.

use flink_operator_api::{
    FlinkDeploymentSpec, FlinkDeploymentStatus,
    common::{FlinkJobState, UpgradeMode},
};

use super::{Decision, EventNote, Plan, start};
use crate::{
    deployment::health::{HealthHistory, HealthSample, Verdict, evaluate},
    events::Reason,
    lifecycle::kind::Restore,
    policy::Policy,
};

/// This look's sample into the history (the check off: the history goes).
pub(super) fn observe_into(d: &mut Decision) {
    let application = d.fd.spec.job.is_some();
    let (obs, status) = (d.obs, &mut d.status);
    judge_into(status, application, obs.health.as_ref(), obs.now_ms, &obs.policy);
}

/// `sample` judged into the history in `status` (the check off, or no job: it goes).
pub(super) fn judge_into(
    status: &mut FlinkDeploymentStatus,
    application: bool,
    sample: Option<&HealthSample>,
    now_ms: i64,
    policy: &Policy,
) {
    let settings = policy.health.as_ref().filter(|_| application);
    let stored = HealthHistory::read(status.cluster_info.as_ref());
    let (next, _) = evaluate(stored.as_ref(), sample, now_ms, settings);
    if next.is_none() || next != stored {
        HealthHistory::store(&mut status.cluster_info, next.as_ref());
    }
}

/// Why the job of `recorded` is unhealthy, if the history judged it so and it has not ended
/// (it is restarted, or said why not).
pub(super) fn unhealthy(d: &Decision, recorded: &FlinkDeploymentSpec) -> Option<String> {
    unhealthy_in(&d.status, recorded, &d.obs.policy)
}

/// [`unhealthy`], from the history and the job's state in `status`.
pub(super) fn unhealthy_in(
    status: &FlinkDeploymentStatus,
    recorded: &FlinkDeploymentSpec,
    policy: &Policy,
) -> Option<String> {
    policy.health?;
    recorded.job.as_ref()?;
    let history = HealthHistory::read(status.cluster_info.as_ref())?;
    let Verdict::Unhealthy(why) = history.verdict() else {
        return None;
    };
    let ended = (status.job_status.as_ref())
        .and_then(|j| j.state())
        .is_some_and(FlinkJobState::is_globally_terminal);
    (!ended).then_some(why)
}

/// Restarts the job of `recorded` if it is [`unhealthy`] and its upgrade mode allows a
/// restart that keeps its state.
pub(super) fn restart_if_unhealthy(d: &mut Decision, recorded: &FlinkDeploymentSpec) -> Option<Plan> {
    let why = unhealthy(d, recorded)?;
    let job = recorded.job.as_ref()?;
    let stateless = job.upgrade_mode_or_default() == UpgradeMode::Stateless;
    let last_state = !stateless;
    if last_state && !(d.obs.policy.high_availability && d.obs.ha_checkpoint == Some(true)) {
        let error = format!(
            "the job is unhealthy ({why}) but is not restarted: upgradeMode {} restarts it from the latest \
             checkpoint in its high-availability metadata, and {}",
            job.upgrade_mode_or_default(),
            if d.obs.policy.high_availability {
                "that metadata holds none"
            } else {
                "high availability is off"
            }
        );
        // Said once per unhealthy spell: the counts in the note change at every look.
        let said = HealthHistory::read(d.fd.status.as_ref().and_then(|s| s.cluster_info.as_ref()))
            .is_some_and(|h| matches!(h.verdict(), Verdict::Unhealthy(_)));
        if !said {
            d.events.push(EventNote::warning(
                Reason::RestartUnhealthyJobFailed,
                error.clone(),
            ));
        }
        d.status.error = Some(error);
        return None;
    }
    let how = if last_state {
        "restarting it from the latest checkpoint in its high-availability metadata"
    } else {
        "restarting it without state, as its upgrade mode is stateless"
    };
    // The Event's reason says the job is unhealthy; the note says why and what is done.
    let note = format!("{why}; {how}");
    tracing::warn!(
        namespace = d.fd.metadata.namespace.as_deref().unwrap_or_default(),
        name = d.fd.metadata.name.as_deref().unwrap_or_default(),
        reason = %why,
        last_state,
        "restarting an unhealthy job"
    );
    // The history judged the job that is ending; the next one starts a new one.
    HealthHistory::store(&mut d.status.cluster_info, None);
    let restore = if last_state {
        Restore::LastState
    } else {
        Restore::Nothing
    };
    let event = EventNote::warning(Reason::RestartUnhealthyJob, start::capitalised(&note));
    Some(start::commit_noting(
        d.take(),
        recorded.clone(),
        restore,
        &note,
        Some(event),
    ))
}
