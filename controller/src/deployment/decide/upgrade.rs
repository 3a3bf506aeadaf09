//! Spec changes, suspend and resume, savepoint redeploys and restarts of failed jobs.
//!
//! Each one first records, in one status write, the spec to run and the state it starts
//! from (`commit`); only then is the previous cluster deleted, and the new one deployed
//! once it is gone (`continue_upgrade`). A running job in `savepoint` mode is stopped with
//! a savepoint whose trigger id is recorded before the stop is sent.

use crate::events::Reason;
use flink_operator_api::{
    FlinkDeploymentSpec, JobManagerDeploymentStatus, ReconciledSpec,
    common::{
        JobStatus, ReconciliationState, ResourceLifecycleState, SnapshotTriggerType, UpgradeMode,
        flink_job_state,
    },
};

use super::{
    Action, Decision, EventNote, FAST, JobAction, Next, Plan, WAIT, is_suspended, phase,
    state::{self, Kind, RestorableState},
    status::suspended_message,
};
use crate::lifecycle::{
    change::{self, Ending, JobNow, Resume},
    spec,
    stop::{self, Stopped, Stopping},
};

/// What the next job starts from.
#[derive(Debug, Clone, PartialEq)]
enum Restore {
    Nothing,
    State(RestorableState),
    /// The latest checkpoint in the kept HA metadata, under the same job id.
    LastState,
}

/// Whether the recorded upgrade restores from HA metadata: `last-state` recorded without a
/// state path.
fn restores_last_state(recorded: &FlinkDeploymentSpec, job: Option<&JobStatus>) -> bool {
    recorded
        .job
        .as_ref()
        .is_some_and(|j| j.upgrade_mode_or_default() == UpgradeMode::LastState)
        && job.is_none_or(|j| j.upgrade_savepoint_path.is_none())
}

fn is_terminal(job: &JobStatus) -> bool {
    matches!(
        job.state(),
        Some(flink_job_state::FAILED | flink_job_state::CANCELED | flink_job_state::FINISHED)
    )
}

/// The recorded spec (or, `rolling_back`, the last stable one) must run: delete what runs
/// the previous one, then deploy it.
pub(super) fn continue_upgrade(mut d: Decision, recorded: &FlinkDeploymentSpec, rolling_back: bool) -> Plan {
    let generation = d.generation();
    let suspended = is_suspended(recorded);
    let first = d
        .status
        .reconciliation_status
        .as_ref()
        .and_then(|rs| rs.last_reconciled::<FlinkDeploymentSpec>().ok().flatten())
        .is_some_and(|r| r.is_first_deployment());
    let last_state = !first && restores_last_state(recorded, d.status.job_status.as_ref());
    if rolling_back && d.obs.cluster_exists && d.obs.rolled_back_generation == generation {
        // Rolled back before a crash (or a stale read) kept the status from saying so.
        if let Some(rs) = d.status.reconciliation_status.as_mut() {
            rs.state = Some(ReconciliationState::RolledBack);
        }
        d.status.lifecycle_state = Some(ResourceLifecycleState::RolledBack);
        d.conditions(
            phase::DEPLOYING,
            "the Flink cluster of the last stable spec is starting",
        );
        return d.done(FAST);
    }
    if !suspended
        && !rolling_back
        && d.obs.cluster_exists
        && d.obs.rolled_back_generation.is_none()
        && d.obs.deployed_generation.is_some()
        && d.obs.deployed_generation == generation
    {
        // Deployed before a crash kept the status from saying so.
        if let Some(rs) = d.status.reconciliation_status.as_mut() {
            rs.state = Some(ReconciliationState::Deployed);
        }
        d.status.lifecycle_state = Some(ResourceLifecycleState::Deployed);
        d.conditions(phase::DEPLOYING, "the Flink cluster is starting");
        return d.done(FAST);
    }
    d.status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
    if d.obs.cluster_exists {
        if !d.obs.cluster_deleting {
            d.actions.push(Action::DeleteCluster { keep_ha: last_state });
        }
        d.conditions(phase::UPDATING, "deleting the previous cluster");
        return d.done(FAST);
    }
    if !last_state && d.obs.ha_metadata {
        if let Some(plan) = super::cleanup::wait_for_job_manager_exit(&mut d) {
            return plan;
        }
        // Gone: the next cluster of the same name starts from none of its HA metadata.
        d.actions.push(Action::DeleteHaMetadata);
    }
    if suspended {
        if let Some(rs) = d.status.reconciliation_status.as_mut() {
            rs.state = Some(ReconciliationState::Deployed);
        }
        d.status.lifecycle_state = Some(ResourceLifecycleState::Suspended);
        d.status.job_manager_deployment_status = Some(JobManagerDeploymentStatus::Missing);
        d.job_status_mut().state = Some(flink_job_state::SUSPENDED.to_owned());
        let message = suspended_message(&d.status);
        d.events
            .push(EventNote::normal(Reason::Suspended, capitalised(&message)));
        d.conditions(phase::SUSPENDED, &message);
        return d.done(super::SLOW);
    }
    let job = if rolling_back {
        recorded.job.as_ref()
    } else {
        d.fd.spec.job.as_ref()
    };
    let job_status = d.job_status();
    let restore_path = job.and_then(|j| {
        if first {
            j.initial_savepoint_path.clone()
        } else if last_state {
            None
        } else {
            job_status.upgrade_savepoint_path.clone()
        }
    });
    // The job id is recorded before the cluster that runs it exists; last-state keeps it,
    // as the HA metadata of its checkpoints is filed under it.
    let job_id = job.map(|_| {
        job_status
            .job_id
            .clone()
            .filter(|_| first || last_state)
            .unwrap_or_else(|| d.obs.fresh_job_id.clone())
    });
    if job.is_some() {
        let name = d.fd.metadata.name.clone();
        let job_status = d.job_status_mut();
        job_status.job_id = job_id.clone();
        job_status.state = Some(flink_job_state::RECONCILING.to_owned());
        job_status.start_time = None;
        job_status.job_name = name;
    }
    let now = d.obs.now_ms;
    let adopt = (!rolling_back && recorded != &d.fd.spec && !is_suspended(&d.fd.spec)).then(|| {
        // A spec changed again during the upgrade is the one deployed, with the recorded
        // upgrade mode (it says how this upgrade restores).
        let mut spec = d.fd.spec.clone();
        if let (Some(job), Some(old)) = (spec.job.as_mut(), recorded.job.as_ref()) {
            job.upgrade_mode = old.upgrade_mode;
            job.savepoint_trigger_nonce = old.savepoint_trigger_nonce;
            job.checkpoint_trigger_nonce = old.checkpoint_trigger_nonce;
        }
        spec
    });
    if let Some(rs) = d.status.reconciliation_status.as_mut() {
        if let Some(spec) = adopt {
            rs.last_reconciled_spec = ReconciledSpec::new(spec, first).encode().ok();
        }
        rs.reconciliation_timestamp = Some(now);
    }
    d.status.job_manager_deployment_status = Some(JobManagerDeploymentStatus::Deploying);
    d.conditions(phase::DEPLOYING, "creating the Flink cluster");
    let before = d.status.clone();
    let mut after = d.status;
    if let Some(rs) = after.reconciliation_status.as_mut() {
        rs.state = Some(if rolling_back {
            ReconciliationState::RolledBack
        } else {
            ReconciliationState::Deployed
        });
    }
    after.lifecycle_state = Some(if rolling_back {
        ResourceLifecycleState::RolledBack
    } else {
        ResourceLifecycleState::Deployed
    });
    d.actions.push(Action::Deploy {
        restore_path: restore_path.clone(),
        job_id,
        last_state,
        spec: rolling_back.then(|| Box::new(recorded.clone())),
    });
    if !first {
        let what = if rolling_back {
            "Starting the cluster of the last stable spec"
        } else {
            "Starting the new cluster"
        };
        d.events.push(EventNote::normal(
            if rolling_back {
                Reason::Rollback
            } else {
                Reason::Submit
            },
            match (&restore_path, last_state) {
                (Some(path), _) => format!("{what}, restoring from {path}"),
                (None, true) => {
                    format!("{what}, restoring the latest checkpoint from high-availability metadata")
                }
                (None, false) => format!("{what} without state"),
            },
        ));
    }
    Plan {
        status_before: Some(before),
        actions: d.actions,
        status: after,
        events: d.events,
        requeue: FAST,
    }
}

/// The spec differs from the deployed one in a way that needs a redeploy.
pub(super) fn apply_change(mut d: Decision, recorded: &FlinkDeploymentSpec) -> Plan {
    let generation = d.generation();
    let failed_for_this_generation = d.status.conditions.iter().flatten().any(|c| {
        c.type_.as_deref() == Some("Degraded")
            && c.reason.as_deref() == Some(phase::UPDATE_FAILED)
            && c.observed_generation == generation
    });
    if failed_for_this_generation {
        // The reason as stored: observing the running job has cleared it from the status
        // being built.
        let stored = d.fd.status.as_ref();
        let note = stored
            .and_then(|s| s.error.clone())
            .or_else(|| {
                stored
                    .and_then(|s| s.conditions.as_ref())
                    .and_then(|c| c.iter().find_map(|c| c.message.clone().filter(|m| !m.is_empty())))
            })
            .unwrap_or_else(|| "the update failed; change the spec to try again".to_owned());
        return d.refuse(phase::UPDATE_FAILED, note);
    }
    let spec = d.fd.spec.clone();
    let Some(job) = spec.job.as_ref() else {
        return commit(
            d,
            spec.clone(),
            Restore::Nothing,
            Reason::SpecChanged,
            "redeploying the session cluster with the new spec",
        );
    };
    let job_status = d.job_status();
    let pending_upgrade = job_status
        .savepoint_info
        .as_ref()
        .filter(|i| i.trigger_type == Some(SnapshotTriggerType::Upgrade))
        .and_then(|i| i.trigger_id.clone());
    if let Some(trigger_id) = pending_upgrade {
        return upgrade_savepoint(d, trigger_id);
    }
    if is_suspended(recorded) {
        if is_suspended(&spec) {
            // Changed while suspended: recorded, applied when resumed.
            if let Some(rs) = d.status.reconciliation_status.as_mut() {
                rs.last_reconciled_spec = ReconciledSpec::new(spec.clone(), false).encode().ok();
            }
            return d.done(super::SLOW);
        }
        return resume(d, recorded);
    }
    let suspending = is_suspended(&spec);
    let redeploy_nonce = job.savepoint_redeploy_nonce;
    if redeploy_nonce.is_some()
        && redeploy_nonce != recorded.job.as_ref().and_then(|j| j.savepoint_redeploy_nonce)
    {
        return match job.initial_savepoint_path.clone() {
            Some(path) => {
                let note = format!("redeploying from spec.job.initialSavepointPath {path} without taking a savepoint");
                commit(
                    d,
                    spec.clone(),
                    Restore::State(RestorableState {
                        kind: Kind::Savepoint,
                        path,
                        timestamp_ms: None,
                    }),
                    Reason::SavepointRedeploy,
                    &note,
                )
            }
            None => d.refuse(
                phase::UPDATE_FAILED,
                "spec.job.savepointRedeployNonce changed, but spec.job.initialSavepointPath is empty: there is no savepoint to redeploy from".to_owned(),
            ),
        };
    }
    let verb = if suspending { "suspending" } else { "upgrading" };
    let jm = d.status.job_manager_deployment_status.unwrap_or_default();
    // A job whose cluster never came up ran nothing since it started from its recorded
    // state, so that state is still the one to start from.
    let never_ran = !job_status.is_running()
        && job_status.start_time.is_none()
        && matches!(
            jm,
            JobManagerDeploymentStatus::Error
                | JobManagerDeploymentStatus::Missing
                | JobManagerDeploymentStatus::Deploying
        );
    let terminal = is_terminal(&job_status);
    let policy = d.obs.policy.clone();
    if never_ran {
        let restore = state::recorded(&job_status).map_or(Restore::Nothing, Restore::State);
        let note = format!(
            "{verb}: the previous cluster never ran its job, so the new one starts from the same state"
        );
        return commit(d, spec.clone(), restore, Reason::SpecChanged, &note);
    }
    let now = if terminal {
        JobNow::Ended
    } else {
        JobNow::Live(job_status.state().unwrap_or(flink_job_state::RECONCILING))
    };
    let mode = job.upgrade_mode_or_default();
    match change::ending(mode, true, suspending, now, &job_status, &policy, d.obs.now_ms) {
        Ending::WithoutState => {
            let note = if suspending {
                "cancelling the job to suspend it without state"
            } else {
                "cancelling the job to start it without state"
            };
            commit(d, spec.clone(), Restore::Nothing, Reason::SpecChanged, note)
        }
        Ending::KeepingLastState => {
            let note = format!("{verb}: deleting the cluster and keeping its high-availability metadata");
            commit(d, spec.clone(), Restore::LastState, Reason::SpecChanged, &note)
        }
        Ending::Savepoint => stop_with_savepoint(d, job_status.job_id.clone().unwrap_or_default(), verb),
        Ending::CancelForNewest { .. } => cancel_for_newest_state(d, job_status, verb),
        Ending::Ended { with_savepoints } => stopped_job(d, spec.clone(), suspending, with_savepoints, verb),
        Ending::FreshSavepoint(savepoint) => {
            let note = format!(
                "{verb}: the job is not running; restoring {}, younger than kubernetes.operator.job.upgrade.savepoint.max-age",
                state::age_note(&savepoint, d.obs.now_ms)
            );
            commit(
                d,
                spec.clone(),
                Restore::State(savepoint),
                Reason::SpecChanged,
                &note,
            )
        }
        Ending::WaitForRunning | Ending::WaitForCancel => {
            let state = job_status.state().unwrap_or("unknown").to_owned();
            d.conditions(
                phase::UPDATING,
                &format!("waiting for the job ({state}) to run to take its savepoint"),
            );
            d.done(WAIT)
        }
        Ending::Refuse(why) => {
            let state = job_status.state().unwrap_or("unknown").to_owned();
            let newest = state::newest(&d.status, d.obs)
                .map(|s| {
                    format!(
                        " (the newest known state is {})",
                        state::age_note(&s, d.obs.now_ms)
                    )
                })
                .unwrap_or_default();
            d.refuse(
                phase::UPDATE_FAILED,
                format!("{verb}: the job is {state}{newest}: {why}"),
            )
        }
    }
}

/// A job that is not running: the next job starts from its newest state (see
/// [`change::after_end`]).
fn stopped_job(
    d: Decision,
    spec: FlinkDeploymentSpec,
    suspending: bool,
    with_savepoints: bool,
    verb: &str,
) -> Plan {
    let checkpoint = d.obs.latest_checkpoint.as_ref().map(|c| RestorableState {
        kind: Kind::Checkpoint,
        path: c.path.clone(),
        timestamp_ms: Some(c.timestamp_ms),
    });
    let job = d.job_status();
    match change::after_end(
        &job,
        checkpoint,
        with_savepoints,
        suspending,
        &d.obs.policy,
        d.obs.now_ms,
    ) {
        Ok(restore) => {
            let note = match (&restore, suspending) {
                (Some(s), true) => format!("suspending the stopped job; it resumes from {}", s.path),
                (None, true) => "suspending the stopped job; no state of it is known".to_owned(),
                (Some(s), false) => format!("{verb}, restoring {}", state::age_note(s, d.obs.now_ms)),
                (None, false) => format!("{verb} without state"),
            };
            let restore = restore.map_or(Restore::Nothing, Restore::State);
            commit(d, spec, restore, Reason::SpecChanged, &note)
        }
        Err(why) => d.refuse(phase::UPDATE_FAILED, format!("{verb}: {why}")),
    }
}

/// Commits `spec` restoring the newest known state, if the restore guard allows.
fn restore_newest(
    d: Decision,
    spec: FlinkDeploymentSpec,
    reason: Reason,
    verb: &str,
    refused_phase: &'static str,
) -> Plan {
    let checkpoint = d.obs.latest_checkpoint.as_ref().map(|c| RestorableState {
        kind: Kind::Checkpoint,
        path: c.path.clone(),
        timestamp_ms: Some(c.timestamp_ms),
    });
    match change::newest_allowed(&d.job_status(), checkpoint, true, &d.obs.policy, d.obs.now_ms) {
        Ok(newest) => {
            let note = format!("{verb}, restoring {}", state::age_note(&newest, d.obs.now_ms));
            commit(d, spec, Restore::State(newest), reason, &note)
        }
        Err(why) => d.refuse(refused_phase, format!("{verb}: {why}")),
    }
}

/// The user opted out of the upgrade savepoint: the job is cancelled (its checkpoints are
/// retained) once its newest state passes the guard, and restored from it when cancelled.
fn cancel_for_newest_state(d: Decision, job_status: JobStatus, verb: &str) -> Plan {
    let Some(newest) = state::newest(&d.status, d.obs) else {
        return d.refuse(
            phase::UPDATE_FAILED,
            format!("{verb} without a savepoint: no checkpoint or savepoint of the job is known yet; the job keeps running"),
        );
    };
    if let Err(why) = state::guard(&newest, d.obs.policy.restore_max_state_age_ms, d.obs.now_ms) {
        return d.refuse(
            phase::UPDATE_FAILED,
            format!("{verb} without a savepoint: {why}; the job keeps running"),
        );
    }
    let mut d = d;
    d.status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
    d.conditions(
        phase::UPDATING,
        "cancelling the job without a savepoint; it restores its newest checkpoint",
    );
    d.events.push(EventNote::normal(
        Reason::Cancelling,
        format!(
            "Cancelling the job for {verb} without a savepoint; the newest state is {}",
            state::age_note(&newest, d.obs.now_ms)
        ),
    ));
    d.actions.push(Action::Job(JobAction::Cancel {
        job_id: job_status.job_id.unwrap_or_default(),
    }));
    d.done(FAST)
}

/// Stops the job with a savepoint for an upgrade or a suspension (see
/// [`crate::lifecycle::stop`]).
fn stop_with_savepoint(mut d: Decision, job_id: String, verb: &str) -> Plan {
    let facts = d.facts();
    let drain = d.obs.policy.drain && is_suspended(&d.fd.spec);
    let (status, mut out) = d.parts();
    match stop::stop_with_savepoint(status, &job_id, drain, verb, &facts, &mut out) {
        Stopping::Sent => {
            let message = stop::under_way(&d.status, "stopping the job with a savepoint");
            d.conditions(phase::UPDATING, &message);
            let mut plan = d.record_then(Vec::new());
            plan.requeue = crate::reconcile::STOPPING;
            plan
        }
        Stopping::Wait { seconds, note } => {
            d.conditions(phase::UPDATING, &format!("{verb}: {note}"));
            d.done(Next::Within(seconds))
        }
        Stopping::GiveUp(why) => d.refuse(
            phase::UPDATE_FAILED,
            format!("{verb}: {why}; the job keeps running with the previous spec"),
        ),
    }
}

/// Follows the recorded stop-with-savepoint of an upgrade or suspend.
fn upgrade_savepoint(mut d: Decision, trigger_id: String) -> Plan {
    let job_id = d.job_status().job_id.unwrap_or_default();
    let facts = d.facts();
    let suspending = is_suspended(&d.fd.spec);
    let drain = d.obs.policy.drain && suspending;
    let (status, mut out) = d.parts();
    match stop::follow(status, &job_id, &trigger_id, drain, &facts, &mut out) {
        Stopped::Completed(state) => {
            let verb = if suspending { "suspending" } else { "upgrading" };
            let note = format!("{verb}: the savepoint is recorded; deleting the previous cluster");
            let spec = d.fd.spec.clone();
            commit(d, spec, Restore::State(state), Reason::SpecChanged, &note)
        }
        Stopped::Resent => {
            let message = stop::under_way(&d.status, "stopping the job with a savepoint");
            d.conditions(phase::UPDATING, &message);
            d.done(FAST)
        }
        Stopped::Retry { seconds, note } => {
            d.conditions(phase::UPDATING, &format!("{note}; trying again"));
            d.done(Next::Within(seconds))
        }
        Stopped::Refused(why) => d.refuse(phase::UPDATE_FAILED, why),
        Stopped::Pending => {
            let message = stop::under_way(&d.status, "waiting for the savepoint");
            d.conditions(phase::UPDATING, &message);
            d.done(crate::reconcile::STOPPING)
        }
    }
}

/// Suspended, and now to run again (see [`change::resume`]).
fn resume(d: Decision, recorded: &FlinkDeploymentSpec) -> Plan {
    let spec = d.fd.spec.clone();
    let job = d.job_status();
    let now = d.obs.now_ms;
    match change::resume(
        spec::upgrade_mode(recorded),
        spec::upgrade_mode(&spec),
        &job,
        true,
        &d.obs.policy,
        now,
    ) {
        Resume::WithoutState => commit(
            d,
            spec,
            Restore::Nothing,
            Reason::Resume,
            "resuming the job without state",
        ),
        Resume::From(state) => {
            let note = format!("resuming the job from {}", state::age_note(&state, now));
            commit(d, spec, Restore::State(state), Reason::Resume, &note)
        }
        Resume::LastState => commit(
            d,
            spec,
            Restore::LastState,
            Reason::Resume,
            "resuming the job from the latest checkpoint in its high-availability metadata",
        ),
        Resume::Refuse(why) => d.refuse(phase::UPDATE_FAILED, format!("resuming: {why}")),
    }
}

/// A FAILED job is resubmitted when `kubernetes.operator.job.restart.failed` is true, from
/// its newest state if the restore guard allows.
pub(super) fn restart_failed(d: &mut Decision) -> Option<Plan> {
    let job = d.fd.spec.job.as_ref()?;
    if !d.obs.policy.restart_failed || d.job_status().state() != Some(flink_job_state::FAILED) {
        return None;
    }
    let spec = d
        .status
        .reconciliation_status
        .as_ref()
        .and_then(|rs| rs.last_reconciled_spec::<FlinkDeploymentSpec>().ok().flatten())
        .unwrap_or_else(|| d.fd.spec.clone());
    let taken = d.take();
    Some(if job.upgrade_mode_or_default() == UpgradeMode::Stateless {
        commit(
            taken,
            spec,
            Restore::Nothing,
            Reason::RestartFailedJob,
            "restarting the failed job without state",
        )
    } else {
        restore_newest(
            taken,
            spec,
            Reason::RestartFailedJob,
            "restarting the failed job",
            phase::FAILED,
        )
    })
}

/// Deploys `spec` again after its JobManager Deployment went missing (see
/// [`super::recovery`]): from the HA metadata with `last_state`, else from nothing.
pub(super) fn recover(d: Decision, spec: FlinkDeploymentSpec, last_state: bool, note: &str) -> Plan {
    let restore = if last_state {
        Restore::LastState
    } else {
        Restore::Nothing
    };
    commit(d, spec, restore, Reason::RecoverDeployment, note)
}

/// Records `spec` as the one to run and what it starts from, before the previous cluster
/// is deleted.
fn commit(
    mut d: Decision,
    mut spec: FlinkDeploymentSpec,
    restore: Restore,
    reason: Reason,
    message: &str,
) -> Plan {
    let last_state = restore == Restore::LastState;
    if last_state && let Some(job) = spec.job.as_mut() {
        job.upgrade_mode = Some(UpgradeMode::LastState);
    }
    let now = d.obs.now_ms;
    let rs = d
        .status
        .reconciliation_status
        .get_or_insert_with(Default::default);
    rs.last_reconciled_spec = ReconciledSpec::new(spec.clone(), false).encode().ok();
    rs.reconciliation_timestamp = Some(now);
    rs.state = Some(ReconciliationState::Upgrading);
    if spec.job.is_some() {
        let latest_checkpoint = d.obs.latest_checkpoint.clone();
        let job = d.job_status_mut();
        match &restore {
            Restore::State(state) => state::record(job, Some(state)),
            Restore::Nothing => state::record(job, None),
            Restore::LastState => {
                state::record(job, None);
                // Its time, so that the restore guard knows the age when the job resumes.
                if let Some(checkpoint) = latest_checkpoint {
                    let kept = RestorableState {
                        kind: Kind::Checkpoint,
                        path: checkpoint.path,
                        timestamp_ms: Some(checkpoint.timestamp_ms),
                    };
                    state::record(job, Some(&kept));
                    job.upgrade_savepoint_path = None;
                }
            }
        }
    }
    d.status.error = None;
    d.status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
    d.conditions(phase::UPDATING, message);
    d.events.push(EventNote::normal(reason, capitalised(message)));
    d.record_then(vec![Action::DeleteCluster { keep_ha: last_state }])
}

pub(super) use crate::lifecycle::capitalised;
