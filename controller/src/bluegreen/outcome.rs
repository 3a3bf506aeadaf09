//! What a pass ended, for the metrics: a transition completed (which one, and how long it
//! took since its spec was recorded) or aborted.

use flink_operator_api::{BlueGreenTransition as Transition, FlinkBlueGreenDeploymentStatus as Status};

use super::{Colour, Observation, Stage, decide::millis_of};

/// What a pass that moved the status from `before` to `after` ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    /// The transition to the new child completed, `seconds` after its spec was recorded.
    Completed {
        transition: Transition,
        seconds: f64,
    },
    Aborted,
}

/// The outcome of a pass, or `None` when it ended nothing (`observation` is what it saw,
/// before its own actions).
pub fn outcome(before: Option<&Status>, after: &Status, observation: &Observation) -> Option<Outcome> {
    let from = Stage::of(before.and_then(|b| b.blue_green_state));
    let to = Stage::of(after.blue_green_state);
    if from == to {
        return None;
    }
    match (from, to) {
        (Stage::TransitioningTo(incoming), Stage::Active(active))
            if incoming == active && after.error.is_none() =>
        {
            // No other child was there when the pass began: the first deployment.
            let transition = match (observation.live_child(incoming.other()), incoming) {
                (None, _) => Transition::InitialDeployment,
                (Some(_), Colour::Green) => Transition::BlueToGreen,
                (Some(_), Colour::Blue) => Transition::GreenToBlue,
            };
            let recorded = millis_of(after.last_reconciled_timestamp.as_deref())?;
            let seconds = (observation.now_ms - recorded).max(0) as f64 / 1000.0;
            Some(Outcome::Completed { transition, seconds })
        }
        (Stage::Savepointing(_) | Stage::TransitioningTo(_), Stage::Active(_) | Stage::Initializing)
            if after.error.is_some() =>
        {
            Some(Outcome::Aborted)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use flink_operator_api::FlinkBlueGreenDeploymentState as State;

    use super::*;
    use crate::bluegreen::gate::HandOver;
    use crate::bluegreen::{BlueGreenPolicy, Child, decide::timestamp};

    fn observation(blue: bool, green: bool) -> Observation {
        Observation {
            blue: blue.then(Child::default),
            green: green.then(Child::default),
            savepoint: None,
            policy: Ok(BlueGreenPolicy::default()),
            now_ms: 100_000,
            fresh_id: String::new(),
            foreign: Vec::new(),
            gate: None,
            hand_over: HandOver::NotAsked,
            ingress: Default::default(),
            refused: None,
        }
    }

    fn status(state: State, error: bool) -> Status {
        Status {
            blue_green_state: Some(state),
            error: error.then(|| "Transition aborted: why".to_owned()),
            last_reconciled_timestamp: Some(timestamp(40_000)),
            ..Default::default()
        }
    }

    #[test]
    fn each_stage_change_ends_what_it_ends() {
        use State::*;
        let completed = |transition| {
            Some(Outcome::Completed {
                transition,
                seconds: 60.0,
            })
        };
        // (before, after, error after, blue seen, green seen, outcome)
        let cases = [
            (
                TransitioningToBlue,
                ActiveBlue,
                false,
                true,
                false,
                completed(Transition::InitialDeployment),
            ),
            (
                TransitioningToGreen,
                ActiveGreen,
                false,
                true,
                true,
                completed(Transition::BlueToGreen),
            ),
            (
                TransitioningToBlue,
                ActiveBlue,
                false,
                true,
                true,
                completed(Transition::GreenToBlue),
            ),
            (
                TransitioningToGreen,
                ActiveBlue,
                true,
                true,
                true,
                Some(Outcome::Aborted),
            ),
            (
                SavepointingBlue,
                ActiveBlue,
                true,
                true,
                false,
                Some(Outcome::Aborted),
            ),
            (
                TransitioningToBlue,
                InitializingBlue,
                true,
                true,
                false,
                Some(Outcome::Aborted),
            ),
            // Suspending during the savepoint: back to the active child, nothing aborted.
            (SavepointingBlue, ActiveBlue, false, true, false, None),
            (SavepointingBlue, TransitioningToGreen, false, true, false, None),
            (ActiveBlue, SavepointingBlue, false, true, false, None),
            (ActiveBlue, ActiveBlue, true, true, false, None),
            (
                TransitioningToGreen,
                TransitioningToGreen,
                false,
                true,
                true,
                None,
            ),
        ];
        for (before, after, error, blue, green, expected) in cases {
            let got = outcome(
                Some(&status(before, false)),
                &status(after, error),
                &observation(blue, green),
            );
            assert_eq!(got, expected, "{before:?} -> {after:?} error={error}");
        }
    }
}
