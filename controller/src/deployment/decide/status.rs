//! What was observed, written into a compatible status; the phase and the conditions.

use crate::events::Reason;
use flink_operator_api::{
    FlinkDeployment, FlinkDeploymentSpec, FlinkDeploymentStatus, JobManagerDeploymentStatus,
    KubernetesDeploymentMode, TaskManagerInfo,
    common::{FlinkJobState, ReconciliationState, ResourceLifecycleState, UpgradeMode},
    keys,
};
use kube::ResourceExt;

use super::{Decision, EventNote, FAST, JobManagerObservation, JobObservation, Next, Phase, SLOW, WAIT};
use crate::lifecycle::observe;

/// JobManager and job state into status.
/// Whether the JobManager, ready at the last look, did not answer its REST API this once: a
/// busy JVM (a long GC pause, a loaded node) lets a call time out now and then, and that is
/// no change to report. It is looked at again soon; unanswered twice in a row, it is.
pub(super) fn unanswered_once(d: &Decision) -> bool {
    let unanswered = matches!(
        d.obs.job_manager,
        JobManagerObservation::Present {
            ready,
            rest_ready: false,
            problem: None,
            ..
        } if ready > 0
    );
    unanswered
        && !d.obs.unanswered_before
        && d.status.job_manager_deployment_status == Some(JobManagerDeploymentStatus::Ready)
}

/// What the scale subresource reads (`status.taskManager`): the TaskManagers the running
/// spec asks for (an application's: enough for its parallelism; a native session cluster's
/// without `taskManager.replicas`: none of its own, Flink starts them for its jobs), and the
/// selector of their pods.
pub(super) fn task_manager_info(
    fd: &FlinkDeployment,
    running: &FlinkDeploymentSpec,
    slots: i64,
) -> TaskManagerInfo {
    let standalone = running.mode_or_default() == KubernetesDeploymentMode::Standalone;
    let asks = running.job.is_some()
        || standalone
        || running
            .task_manager
            .as_ref()
            .is_some_and(|tm| tm.replicas.is_some());
    let replicas = if asks {
        crate::resources::flink_config::task_manager_replicas(running, slots)
    } else {
        0
    };
    TaskManagerInfo {
        label_selector: Some(format!(
            "{}={},{}={}",
            keys::labels::COMPONENT,
            keys::labels::COMPONENT_TASK_MANAGER,
            keys::labels::APP,
            fd.name_any()
        )),
        replicas: Some(i32::try_from(replicas).unwrap_or(i32::MAX)),
    }
}

pub(super) fn observe_into(d: &mut Decision, recorded: &FlinkDeploymentSpec) {
    if unanswered_once(d) {
        return;
    }
    d.status.task_manager = Some(task_manager_info(d.fd, recorded, d.obs.policy.task_slots));
    let obs = d.obs;
    let previous_error = d.status.error.clone();
    let previous_jm = d.status.job_manager_deployment_status;
    let jm = job_manager_status(&obs.job_manager);
    d.status.job_manager_deployment_status = Some(jm);
    // An ended job needs no JobManager (one shut down after its TTL, or gone otherwise): that
    // is no error, and a failed job's cause stays.
    let ended_without = obs.job_manager == JobManagerObservation::Missing && super::shutdown::job_ended(d);
    let jm_error = match &obs.job_manager {
        JobManagerObservation::Present {
            problem: Some(problem),
            ..
        } => Some(problem.clone()),
        JobManagerObservation::Missing if !ended_without => {
            Some("the JobManager Deployment is missing".to_owned())
        }
        _ => None,
    };
    d.status.error = if ended_without {
        previous_error.clone()
    } else {
        jm_error.clone()
    };
    if jm != previous_jm.unwrap_or_default()
        && let Some(error) = jm_error
    {
        d.events
            .push(EventNote::warning(Reason::JobManagerDeploymentError, error));
    }

    let mut failed_job = None;
    if d.fd.spec.job.is_some() {
        let mut job = d.job_status();
        match &obs.job {
            Some(JobObservation::Found {
                state,
                start_time,
                failure,
                ..
            }) => {
                let (_, mut out) = d.parts();
                observe::job_state_into(&mut job, state, *start_time, obs.now_ms, &mut out);
                // Stateful as it runs, or as the user's spec says now (a change to it may be under
                // way): its state is then the user's to keep.
                let stateful = [recorded.job.as_ref(), d.fd.spec.job.as_ref()]
                    .into_iter()
                    .flatten()
                    .any(|j| j.upgrade_mode_or_default() != UpgradeMode::Stateless);
                if let Some(checkpoint) = &obs.latest_checkpoint {
                    let at = Some(checkpoint.timestamp_ms);
                    observe::ended_checkpoint_into(&mut job, state, stateful, &checkpoint.path, at);
                }
                if let Some(failure) = failure {
                    failed_job = Some(failure.clone());
                }
            }
            Some(JobObservation::NotFound) if jm == JobManagerDeploymentStatus::Ready => {
                job.state = Some(FlinkJobState::Reconciling);
            }
            _ => {}
        }
        let failed = job.state == Some(FlinkJobState::Failed);
        d.status.job_status = Some(job);
        if failed && d.status.error.is_none() {
            // Flink's root cause, read once when the job is first seen FAILED; kept after.
            let job_id = d.job_status().job_id.unwrap_or_default();
            let (status, mut out) = d.parts();
            status.error = Some(observe::failure(
                &job_id,
                failed_job.as_ref(),
                previous_error,
                &mut out,
            ));
        }
    }

    let job_state = d.status.job_status.as_ref().and_then(|j| j.state.as_ref());
    let stable = jm == JobManagerDeploymentStatus::Ready
        && (d.fd.spec.job.is_none() || job_state == Some(&FlinkJobState::Running));
    let failed = jm == JobManagerDeploymentStatus::Error || job_state == Some(&FlinkJobState::Failed);
    let rolled_back = d
        .status
        .reconciliation_status
        .as_ref()
        .is_some_and(|rs| rs.state == Some(ReconciliationState::RolledBack));
    let fd = d.fd;
    let seen = observe::Seen {
        failed,
        stable,
        rolled_back,
    };
    observe::lifecycle_into(&mut d.status, seen, recorded, &fd.spec);
}

fn job_manager_status(jm: &JobManagerObservation) -> JobManagerDeploymentStatus {
    match jm {
        JobManagerObservation::Missing => JobManagerDeploymentStatus::Missing,
        JobManagerObservation::Present { problem: Some(_), .. } => JobManagerDeploymentStatus::Error,
        JobManagerObservation::Present {
            ready, rest_ready, ..
        } if *ready > 0 && *rest_ready => JobManagerDeploymentStatus::Ready,
        JobManagerObservation::Present { ready, .. } if *ready > 0 => {
            JobManagerDeploymentStatus::DeployedNotReady
        }
        JobManagerObservation::Present { .. } => JobManagerDeploymentStatus::Deploying,
    }
}

/// How soon to look again at a resource that needs nothing done: soon while its job starts
/// (see [`crate::lifecycle::starting`]) or a snapshot is pending (only Flink knows when they
/// are done); a JobManager that is not ready yet is waited for through the watch on its
/// Deployment, with a slower look as a fallback, so that many starting (or unschedulable)
/// clusters do not poll the API server.
pub(super) fn steady_requeue(status: &FlinkDeploymentStatus, pending: bool, now_ms: i64) -> Next {
    let stable = status.lifecycle_state == Some(ResourceLifecycleState::Stable);
    let ended = status
        .job_status
        .as_ref()
        .and_then(|j| j.state.as_ref())
        .is_some_and(FlinkJobState::is_globally_terminal);
    match status.job_manager_deployment_status.unwrap_or_default() {
        _ if pending => FAST,
        // Nothing will change by itself: a running job, one that ended, or (as in the Apache
        // operator) a cluster that is broken or gone, whose Deployment's changes wake it.
        JobManagerDeploymentStatus::Ready if stable || ended => SLOW,
        JobManagerDeploymentStatus::Error | JobManagerDeploymentStatus::Missing => SLOW,
        JobManagerDeploymentStatus::Ready => crate::lifecycle::starting(status, now_ms),
        _ => WAIT,
    }
}

/// A suspended job has no cluster: that is not an error.
pub(super) fn suspended_into(d: &mut Decision) {
    d.status.job_manager_deployment_status = Some(job_manager_status(&d.obs.job_manager));
    d.status.lifecycle_state = Some(ResourceLifecycleState::Suspended);
    let message = suspended_message(&d.status);
    d.conditions(Phase::Suspended, &message);
}

pub(super) fn suspended_message(status: &FlinkDeploymentStatus) -> String {
    match status
        .job_status
        .as_ref()
        .and_then(|j| j.upgrade_savepoint_path.as_deref())
    {
        Some(path) => format!("the job is suspended; it resumes from {path}"),
        None => "the job is suspended".to_owned(),
    }
}

/// The phase (condition reason) and a message for the status just observed.
pub(super) fn current_phase(d: &Decision) -> (Phase, String) {
    let status = &d.status;
    let jm = status.job_manager_deployment_status.unwrap_or_default();
    let shut_down = jm == JobManagerDeploymentStatus::Missing && super::shutdown::job_ended(d);
    if jm == JobManagerDeploymentStatus::Error || (jm == JobManagerDeploymentStatus::Missing && !shut_down) {
        return (Phase::DeployFailed, status.error.clone().unwrap_or_default());
    }
    if jm != JobManagerDeploymentStatus::Ready && !shut_down {
        return (Phase::Deploying, format!("the JobManager is {}", jm.as_str()));
    }
    if d.fd.spec.job.is_none() {
        return (Phase::Running, "the session cluster is ready".to_owned());
    }
    let job_state = status.job_status.as_ref().and_then(|j| j.state.as_ref());
    if status.lifecycle_state == Some(ResourceLifecycleState::RolledBack)
        && job_state == Some(&FlinkJobState::Running)
    {
        return (
            Phase::RolledBack,
            "the job runs the last stable spec: the spec that replaced it did not become stable and was rolled back; it is not deployed again until the spec changes".to_owned(),
        );
    }
    if job_state == Some(&FlinkJobState::Failed)
        && let Some(error) = &status.error
    {
        return (Phase::Failed, error.clone());
    }
    let reason = match job_state {
        Some(FlinkJobState::Running) => Phase::Running,
        Some(FlinkJobState::Failed) => Phase::Failed,
        Some(FlinkJobState::Finished) => Phase::Succeeded,
        Some(FlinkJobState::Canceled) => Phase::Cancelled,
        Some(FlinkJobState::Restarting | FlinkJobState::Failing) => Phase::Restarting,
        _ => Phase::Deploying,
    };
    let state = job_state.map_or("", FlinkJobState::as_str);
    if shut_down {
        return (reason, format!("the job is {state}; its JobManager is shut down"));
    }
    (reason, format!("the job is {state}"))
}

/// Ready, Progressing and Degraded, with `phase` as their reason (see [`crate::conditions`]).
pub fn set_conditions(
    status: &mut FlinkDeploymentStatus,
    generation: Option<i64>,
    phase: Phase,
    message: &str,
    now_ms: i64,
) {
    crate::conditions::set_conditions(&mut status.conditions, generation, phase, message, now_ms);
}
