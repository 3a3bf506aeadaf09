//! What was observed, written into status; the phase and the conditions; waiting for the
//! session cluster; refusals.

use flink_operator_api::{
    FlinkSessionJobSpec, FlinkSessionJobStatus,
    common::{FlinkJobState, ResourceLifecycleState, UpgradeMode},
};

use super::{Decision, JobObservation, Phase, Plan, RECONCILING, SessionObservation};
use crate::{
    events::Reason,
    flink::poll::CheckpointLookup,
    lifecycle::{WAIT, observe, spec},
};

pub(super) fn wait_for_session(d: &mut Decision<'_>, recorded: Option<&FlinkSessionJobSpec>) -> Plan {
    let name = d.session_name().to_owned();
    let why = match &d.obs.session {
        SessionObservation::Missing => format!("FlinkDeployment {name} does not exist"),
        SessionObservation::NotSession => {
            format!(
                "FlinkDeployment {name} is an application cluster (it has spec.job), not a session cluster"
            )
        }
        SessionObservation::Deleting => format!("FlinkDeployment {name} is being deleted"),
        SessionObservation::NotReady(why) => why.clone(),
        SessionObservation::Ready => String::new(),
    };
    let message = format!("waiting for session cluster {name}: {why}");
    // A refused update keeps its reason and its conditions: it is what the user has to act
    // on, and it stays refused once the session cluster is back.
    let refused = d.already_refused().is_some();
    if refused {
        return d.done(WAIT);
    }
    if d.status.error.as_deref() != Some(message.as_str()) {
        d.event(false, Reason::SessionClusterNotReady, message.clone());
        d.status.error = Some(message.clone());
    }
    let reason = match recorded {
        None => {
            d.status.lifecycle_state = Some(ResourceLifecycleState::Created);
            Phase::Deploying
        }
        Some(r) if spec::is_suspended(r) => Phase::Suspended,
        Some(_) => Phase::Restarting,
    };
    d.conditions(reason, &message);
    d.done(WAIT)
}

/// The recorded job's state into status, with an Event per change.
pub(super) fn observe_into(d: &mut Decision<'_>, recorded: &FlinkSessionJobSpec) {
    let name = d.session_name().to_owned();
    let mut job = d.status.job_status.clone().unwrap_or_default();
    let id = job.job_id.clone().unwrap_or_default();
    let obs = d.obs;
    match &obs.job {
        Some(JobObservation::Found {
            state,
            start_time,
            failure,
            ..
        }) => {
            let (status, mut out) = d.parts();
            let previous_error = status.error.take();
            observe::job_state_into(&mut job, state, *start_time, obs.now_ms, &mut out);
            if *state == FlinkJobState::Failed {
                // Flink's root cause, read once when the job is first seen FAILED; kept after.
                status.error = Some(observe::failure(&id, failure.as_ref(), previous_error, &mut out));
            }
            // Stateful as it runs, or as the user's spec says now (a change to it may be under
            // way): its state is then the user's to keep.
            let stateful = [recorded.job.as_ref(), d.sj.spec.job.as_ref()]
                .into_iter()
                .flatten()
                .any(|j| j.upgrade_mode_or_default() != UpgradeMode::Stateless);
            if let Some(CheckpointLookup::Found { path, timestamp_ms }) = &obs.checkpoint {
                observe::ended_checkpoint_into(&mut job, state, stateful, path, *timestamp_ms);
            }
        }
        Some(JobObservation::NotFound) => {
            let error = format!("job {id} is not known to session cluster {name}");
            if d.status.error.as_deref() != Some(error.as_str()) {
                d.event(true, Reason::Missing, error.clone());
            }
            job.state = Some(RECONCILING);
            d.status.error = Some(error);
        }
        Some(JobObservation::Unreachable(_)) | None => {}
    }
    let not_found = matches!(obs.job, Some(JobObservation::NotFound));
    let failed = job.state == Some(FlinkJobState::Failed);
    let stable = job.state == Some(FlinkJobState::Running) && !not_found;
    d.status.job_status = Some(job);
    let spec = &d.sj.spec;
    let seen = observe::Seen {
        failed,
        stable,
        rolled_back: false,
    };
    observe::lifecycle_into(&mut d.status, seen, recorded, spec);
}

/// The phase (condition reason) and a message for a job whose recorded spec is applied.
pub(super) fn current_phase(
    status: &FlinkSessionJobStatus,
    recorded: &FlinkSessionJobSpec,
) -> (Phase, String) {
    if spec::is_suspended(recorded) {
        let path = status
            .job_status
            .as_ref()
            .and_then(|j| j.upgrade_savepoint_path.clone());
        return (
            Phase::Suspended,
            match path {
                Some(path) => format!("the job is suspended; it resumes from {path}"),
                None => "the job is suspended".to_owned(),
            },
        );
    }
    if let Some(error) = &status.error
        && status.lifecycle_state != Some(ResourceLifecycleState::Failed)
    {
        return (Phase::DeployFailed, error.clone());
    }
    let job_state = status.job_status.as_ref().and_then(|j| j.state.as_ref());
    let reason = match job_state {
        Some(FlinkJobState::Running) => Phase::Running,
        Some(FlinkJobState::Failed) => Phase::Failed,
        Some(FlinkJobState::Finished) => Phase::Succeeded,
        Some(FlinkJobState::Canceled | FlinkJobState::Cancelling) => Phase::Cancelled,
        Some(FlinkJobState::Restarting | FlinkJobState::Failing) => Phase::Restarting,
        _ => Phase::Deploying,
    };
    let state = job_state.map_or("", FlinkJobState::as_str);
    (reason, format!("the job is {state}"))
}
