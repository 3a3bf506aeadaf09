//! The phase a blue/green status shows, as the reason of its Ready / Progressing / Degraded
//! conditions ([`crate::conditions`]; the conditions are our addition to the Apache status).

use flink_operator_api::{FlinkBlueGreenDeploymentStatus as Status, common::FlinkJobState};

use super::{Observation, Stage};
use crate::conditions::{self, Phase};

/// Sets the conditions of `status` from its phase, with its error (or what its stage is
/// doing) as their message. `pending`: the spec differs from the one recorded as applied (a
/// change waits to start).
pub fn set_conditions(
    status: &mut Status,
    observation: &Observation,
    generation: Option<i64>,
    pending: bool,
) {
    let reason = phase_of(status, observation, pending);
    let message = status.error.clone().unwrap_or_else(|| doing(status));
    conditions::set_conditions(
        &mut status.conditions,
        generation,
        reason,
        &message,
        observation.now_ms,
    );
}

/// What the recorded stage is doing, in a few words.
fn doing(status: &Status) -> String {
    match Stage::of(status.blue_green_state) {
        Stage::Initializing => "No child runs the job".to_owned(),
        Stage::Active(colour) => format!("The {} child runs the job", colour.suffix()),
        Stage::Savepointing(colour) => {
            format!("Taking the transition savepoint of the {} child", colour.suffix())
        }
        Stage::TransitioningTo(colour) => format!("Starting the {} child", colour.suffix()),
    }
}

/// The phase of `status`, with what was observed of the children and whether a change of
/// the spec waits to start.
pub fn phase_of(status: &Status, observation: &Observation, pending: bool) -> Phase {
    let job = status.job_status.as_ref().and_then(|j| j.state.as_ref());
    let failed = status.error.is_some();
    match Stage::of(status.blue_green_state) {
        Stage::Initializing if job == Some(&FlinkJobState::Suspended) => Phase::Suspended,
        Stage::Initializing if failed => Phase::DeployFailed,
        Stage::Initializing => Phase::Deploying,
        // No other child serves the job: this is its first deployment.
        Stage::TransitioningTo(colour) if observation.live_child(colour.other()).is_none() => {
            Phase::Deploying
        }
        Stage::Savepointing(_) | Stage::TransitioningTo(_) => Phase::Updating,
        Stage::Active(_) => match job {
            // A transition that waits for the active child to become stable.
            Some(FlinkJobState::Running) if failed && pending => Phase::Updating,
            // An aborted transition: the old child still serves, the change did not happen.
            Some(FlinkJobState::Running) if failed => Phase::RolledBack,
            Some(FlinkJobState::Running) => Phase::Running,
            Some(FlinkJobState::Suspended) => Phase::Suspended,
            Some(FlinkJobState::Finished) => Phase::Succeeded,
            Some(FlinkJobState::Failed) => Phase::Failed,
            _ if failed => Phase::UpdateFailed,
            _ => Phase::Restarting,
        },
    }
}

#[cfg(test)]
mod tests {
    use flink_operator_api::{FlinkBlueGreenDeploymentState as State, common::JobStatus};

    use super::*;
    use crate::bluegreen::gate::HandOver;
    use crate::bluegreen::{BlueGreenPolicy, Child, Colour};

    /// The child of `state`'s colour, and the other one too when `both`.
    fn observation(state: Option<State>, both: bool) -> Observation {
        let colour = match Stage::of(state) {
            Stage::Initializing => Colour::Blue,
            Stage::Active(c) | Stage::Savepointing(c) | Stage::TransitioningTo(c) => c,
        };
        let present = |c: Colour| (c == colour || both).then(Child::default);
        Observation {
            blue: present(Colour::Blue),
            green: present(Colour::Green),
            savepoint: None,
            policy: Ok(BlueGreenPolicy::default()),
            now_ms: 0,
            fresh_id: String::new(),
            foreign: Vec::new(),
            gate: None,
            hand_over: HandOver::NotAsked,
            ingress: Default::default(),
            refused: None,
        }
    }

    fn status(state: Option<State>, job: Option<FlinkJobState>, error: bool) -> Status {
        Status {
            blue_green_state: state,
            job_status: job.map(|s| JobStatus {
                state: Some(s),
                ..Default::default()
            }),
            error: error.then(|| "why".to_owned()),
            ..Default::default()
        }
    }

    #[test]
    fn each_stage_and_job_state_shows_its_phase() {
        use FlinkJobState::*;
        // (state, job state, error, both children exist, phase)
        let cases = [
            (None, None, false, false, Phase::Deploying),
            (
                Some(State::InitializingBlue),
                Some(Suspended),
                false,
                false,
                Phase::Suspended,
            ),
            (
                Some(State::InitializingBlue),
                Some(Failing),
                true,
                false,
                Phase::DeployFailed,
            ),
            (
                Some(State::TransitioningToBlue),
                Some(Reconciling),
                false,
                false,
                Phase::Deploying,
            ),
            (
                Some(State::TransitioningToGreen),
                Some(Reconciling),
                false,
                true,
                Phase::Updating,
            ),
            (
                Some(State::TransitioningToBlue),
                Some(Reconciling),
                false,
                true,
                Phase::Updating,
            ),
            (
                Some(State::SavepointingBlue),
                Some(Running),
                false,
                false,
                Phase::Updating,
            ),
            (
                Some(State::ActiveBlue),
                Some(Running),
                false,
                false,
                Phase::Running,
            ),
            (
                Some(State::ActiveGreen),
                Some(Running),
                true,
                true,
                Phase::RolledBack,
            ),
            (
                Some(State::ActiveGreen),
                Some(Failing),
                true,
                true,
                Phase::UpdateFailed,
            ),
            (
                Some(State::ActiveBlue),
                Some(Suspended),
                false,
                false,
                Phase::Suspended,
            ),
            (
                Some(State::ActiveBlue),
                Some(Finished),
                false,
                false,
                Phase::Succeeded,
            ),
            (Some(State::ActiveBlue), Some(Failed), false, false, Phase::Failed),
            (
                Some(State::ActiveBlue),
                Some(Restarting),
                false,
                false,
                Phase::Restarting,
            ),
        ];
        for (state, job, error, both, expected) in cases {
            assert_eq!(
                phase_of(
                    &status(state, job.clone(), error),
                    &observation(state, both),
                    false
                ),
                expected,
                "{state:?} {job:?} error={error} both={both}"
            );
        }
        // A change that waits for the running active child to become stable is under way,
        // not rolled back.
        let waiting = status(Some(State::ActiveBlue), Some(Running), true);
        let seen = observation(Some(State::ActiveBlue), false);
        assert_eq!(phase_of(&waiting, &seen, true), Phase::Updating);
    }
}
