//! Starting a FlinkDeployment's job with its cluster.
//!
//! A change first records, in one status write, the spec to run and the state it starts
//! from ([`commit`]); only then is the previous cluster deleted (keeping its
//! high-availability metadata for a last-state restore), and the new one deployed once it
//! is gone ([`continue_upgrade`]). A first deployment records the spec and the job id
//! before the cluster is created ([`first_deployment`]).

use flink_operator_api::{
    FlinkDeploymentSpec, JobManagerDeploymentStatus, ReconciledSpec,
    common::{
        FlinkJobState, JobStatus, ReconciliationState, ReconciliationStatus, ResourceLifecycleState,
        UpgradeMode,
    },
};

use super::{
    Action, Decision, EventNote, FAST, JobObservation, Phase, Plan, is_suspended,
    state::{self, RestorableState},
    status::suspended_message,
};
use crate::{deployment::health::HealthHistory, events::Reason, lifecycle::kind::Restore};
use flink_operator_api::SnapshotType;

/// Whether the recorded upgrade restores from HA metadata: `last-state` recorded without a
/// state path.
pub(super) fn restores_last_state(recorded: &FlinkDeploymentSpec, job: Option<&JobStatus>) -> bool {
    recorded
        .job
        .as_ref()
        .is_some_and(|j| j.upgrade_mode_or_default() == UpgradeMode::LastState)
        && job.is_none_or(|j| j.upgrade_savepoint_path.is_none())
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
    let mut last_state = !first && restores_last_state(recorded, d.status.job_status.as_ref());
    if last_state && d.obs.ha_checkpoint == Some(false) {
        match d.obs.latest_checkpoint.clone() {
            // Flink's cleanup of a job that ended took its checkpoints out of the HA metadata
            // since the start was committed: the latest one its JobManager still reports is
            // restored instead (under a new job id, without the metadata).
            Some(checkpoint) if d.obs.cluster_exists => {
                let reported = RestorableState {
                    kind: SnapshotType::Checkpoint,
                    path: checkpoint.path,
                    timestamp_ms: Some(checkpoint.timestamp_ms),
                };
                state::record(d.job_status_mut(), Some(&reported));
                last_state = false;
            }
            // A JobManager that does not answer may hold the only pointer to the latest
            // checkpoint of a job that ended unseen: the cluster is not deleted without it.
            _ if d.obs.cluster_exists && matches!(d.obs.job, Some(JobObservation::Unreachable(_))) => {
                d.conditions(
                    Phase::Updating,
                    "waiting for the JobManager to answer: the high-availability metadata holds no checkpoint of the \
                     job any more (Flink takes them out of it when a job ends), and only the JobManager still knows \
                     its latest",
                );
                return d.done(FAST);
            }
            // Nothing names one any more: the job is not started from nothing, but from the
            // state the user names for it.
            _ if !d.obs.cluster_exists && !suspended => {
                let named = (d.fd.spec.job.as_ref())
                    .filter(|_| crate::lifecycle::spec::redeploy_nonce_changed(&d.fd.spec, recorded))
                    .and_then(|j| j.initial_savepoint_path.clone())
                    .filter(|p| !p.trim().is_empty());
                let Some(path) = named else {
                    return no_last_state(d);
                };
                let named = RestorableState {
                    kind: SnapshotType::Savepoint,
                    path,
                    timestamp_ms: None,
                };
                state::record(d.job_status_mut(), Some(&named));
                d.status.error = None;
                last_state = false;
            }
            _ => {}
        }
    }
    if rolling_back && d.obs.cluster_exists && d.obs.rolled_back_generation == generation {
        // Rolled back before a crash (or a stale read) kept the status from saying so.
        if let Some(rs) = d.status.reconciliation_status.as_mut() {
            rs.state = Some(ReconciliationState::RolledBack);
        }
        d.status.lifecycle_state = Some(ResourceLifecycleState::RolledBack);
        d.conditions(
            Phase::Deploying,
            "the Flink cluster of the last stable spec is starting",
        );
        return d.done(FAST);
    }
    // The generation the stored status was written at: the step's (a deploy's, if one was
    // sent), though the spec may have changed again since.
    let written_at = d.fd.status.as_ref().and_then(|s| s.observed_generation);
    // Or by the time stamp status held when it was deployed: a status written since (a
    // refused spec's) holds a later generation.
    let stamped = (d.status.reconciliation_status.as_ref()).and_then(|rs| rs.reconciliation_timestamp);
    let deployed_by_this_start = d.obs.deployed_at_ms.is_some() && d.obs.deployed_at_ms == stamped;
    if !suspended
        && !rolling_back
        && d.obs.cluster_exists
        && d.obs.rolled_back_generation.is_none()
        && d.obs.deployed_generation.is_some()
        && (d.obs.deployed_generation == generation
            || d.obs.deployed_generation == written_at
            || deployed_by_this_start)
    {
        // Deployed before a crash kept the status from saying so (a spec changed again since
        // is a change of what runs now, its job not deleted without its state).
        if let Some(rs) = d.status.reconciliation_status.as_mut() {
            rs.state = Some(ReconciliationState::Deployed);
        }
        d.status.lifecycle_state = Some(ResourceLifecycleState::Deployed);
        d.conditions(Phase::Deploying, "the Flink cluster is starting");
        return d.done(FAST);
    }
    d.status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
    if d.obs.cluster_exists {
        d.conditions(Phase::Updating, "deleting the previous cluster");
        if d.obs.cluster_deleting {
            return d.done(FAST);
        }
        // The wait for its JobManager to exit runs from when the deletion is sent (written
        // before it is), not from when the step was committed, maybe long before.
        let now = d.obs.now_ms;
        if let Some(rs) = d.status.reconciliation_status.as_mut() {
            rs.reconciliation_timestamp = Some(now);
        }
        return d.record_then_acting(vec![Action::DeleteCluster { keep_ha: last_state }]);
    }
    // The next cluster of the same name starts once the previous JobManager has exited: two
    // JobManagers of one cluster id would both act on its high-availability metadata.
    if let Some(plan) = super::cleanup::wait_for_job_manager_exit(&mut d) {
        return plan;
    }
    if !last_state && d.obs.ha_metadata {
        // The next cluster starts from none of its HA metadata.
        d.actions.push(Action::DeleteHaMetadata);
    }
    if suspended {
        if let Some(rs) = d.status.reconciliation_status.as_mut() {
            rs.state = Some(ReconciliationState::Deployed);
        }
        d.status.lifecycle_state = Some(ResourceLifecycleState::Suspended);
        d.status.job_manager_deployment_status = Some(JobManagerDeploymentStatus::Missing);
        d.job_status_mut().state = Some(FlinkJobState::Suspended);
        let message = suspended_message(&d.status);
        d.events
            .push(EventNote::normal(Reason::Suspended, capitalised(&message)));
        d.conditions(Phase::Suspended, &message);
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
        job_status.state = Some(FlinkJobState::Reconciling);
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
    d.conditions(Phase::Deploying, "creating the Flink cluster");
    d.actions.push(Action::Deploy {
        restore_path: restore_path.clone(),
        job_id,
        last_state,
        spec: rolling_back.then(|| Box::new(recorded.clone())),
        deployed_at_ms: now,
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
    deploy(d, rolling_back)
}

/// A last-state start whose HA metadata holds no checkpoint (Flink's cleanup of the job,
/// which ended since the start was committed, took it out) and whose job's latest checkpoint
/// was not recorded before its cluster went: the job would start from nothing, so nothing is
/// deployed; status and a Warning (once) say why.
fn no_last_state(mut d: Decision) -> Plan {
    let error = "the job was to restore the latest checkpoint in its high-availability metadata, which holds none \
                 any more (the job ended since the change, and Flink's cleanup took its checkpoints out of it): \
                 it is not started without its state; restore it by hand (spec.job.initialSavepointPath with a new \
                 savepointRedeployNonce)"
        .to_owned();
    if d.fd.status.as_ref().and_then(|s| s.error.as_deref()) != Some(error.as_str()) {
        d.events
            .push(EventNote::warning(Reason::UpdateFailed, error.clone()));
    }
    d.status.error = Some(error.clone());
    d.conditions(Phase::UpdateFailed, &error);
    d.done(super::WAIT)
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
pub(super) fn commit(
    d: Decision,
    spec: FlinkDeploymentSpec,
    restore: Restore,
    reason: Reason,
    message: &str,
) -> Plan {
    let event = EventNote::normal(reason, capitalised(message));
    commit_noting(d, spec, restore, message, Some(event))
}

/// [`commit`] with the Event it publishes given (a Warning, for a start the user did not ask
/// for and should look into; None: the lifecycle published its own).
pub(super) fn commit_noting(
    mut d: Decision,
    mut spec: FlinkDeploymentSpec,
    restore: Restore,
    message: &str,
    event: Option<EventNote>,
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
                        kind: SnapshotType::Checkpoint,
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
    d.conditions(Phase::Updating, message);
    d.events.extend(event);
    d.record_then_acting(vec![Action::DeleteCluster { keep_ha: last_state }])
}

pub(super) use crate::lifecycle::capitalised;

/// The first spec: recorded (UPGRADING, with the job id) before the cluster is created, to
/// start from `restore` (`spec.job.initialSavepointPath`).
pub(super) fn first_deployment(mut d: Decision, restore: Restore) -> Plan {
    let job = d.fd.spec.job.as_ref();
    let job_id = job.map(|_| d.obs.fresh_job_id.clone());
    let restore_path = match restore {
        Restore::State(state) if job.is_some() => Some(state.path),
        _ => None,
    };
    let encoded = ReconciledSpec::new(d.fd.spec.clone(), true).encode().ok();
    let now = d.obs.now_ms;
    d.status.reconciliation_status = Some(ReconciliationStatus {
        reconciliation_timestamp: Some(now),
        last_reconciled_spec: encoded,
        last_stable_spec: None,
        state: Some(ReconciliationState::Upgrading),
    });
    d.status.error = None;
    d.status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
    d.status.job_manager_deployment_status = Some(JobManagerDeploymentStatus::Deploying);
    if job.is_some() {
        // The state it starts from is in status, as any start's is: should the resource go
        // before its cluster came up, its deletion records it.
        d.status.job_status = Some(JobStatus {
            job_name: d.fd.metadata.name.clone(),
            job_id: job_id.clone(),
            state: Some(FlinkJobState::Reconciling),
            upgrade_savepoint_path: restore_path.clone(),
            ..Default::default()
        });
    }
    d.conditions(Phase::Deploying, "creating the Flink cluster");
    d.actions.push(Action::Deploy {
        restore_path,
        job_id,
        last_state: false,
        spec: None,
        deployed_at_ms: now,
    });
    d.events.push(EventNote::normal(
        Reason::Submit,
        match job {
            Some(_) => "Starting the application cluster",
            None => "Starting the session cluster",
        },
    ));
    deploy(d, false)
}

/// The status as it is (the step recorded, DEPLOYING) is written before the cluster is
/// deployed; once it is, the spec is deployed (or, `rolling_back`, rolled back).
fn deploy(mut d: Decision, rolling_back: bool) -> Plan {
    // The health history judged the previous job; the new one starts its own.
    HealthHistory::store(&mut d.status.cluster_info, None);
    let before = d.status.clone();
    let mut after = d.status.clone();
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
    Plan {
        status_before: Some(before),
        actions: std::mem::take(&mut d.actions),
        status: after,
        events: std::mem::take(&mut d.events),
        requeue: FAST,
    }
}
