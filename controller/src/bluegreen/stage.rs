//! The recorded `blueGreenState`, read as a stage with the colour it concerns.

use flink_operator_api::FlinkBlueGreenDeploymentState as State;

use super::Colour;

/// Where a blue/green deployment is, as its status records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// No child has been started yet (also: no status yet), or the first one was aborted.
    Initializing,
    /// The child of this colour runs the job; nothing is under way.
    Active(Colour),
    /// The transition savepoint of the active child of this colour is being taken.
    Savepointing(Colour),
    /// The child of this colour is starting; the other one, if any, still runs.
    TransitioningTo(Colour),
}

impl Stage {
    /// The stage of a recorded state (`None`: no status yet).
    pub fn of(state: Option<State>) -> Self {
        match state {
            None | Some(State::InitializingBlue) => Self::Initializing,
            Some(State::ActiveBlue) => Self::Active(Colour::Blue),
            Some(State::ActiveGreen) => Self::Active(Colour::Green),
            Some(State::SavepointingBlue) => Self::Savepointing(Colour::Blue),
            Some(State::SavepointingGreen) => Self::Savepointing(Colour::Green),
            Some(State::TransitioningToBlue) => Self::TransitioningTo(Colour::Blue),
            Some(State::TransitioningToGreen) => Self::TransitioningTo(Colour::Green),
        }
    }

    /// The state recorded for this stage.
    pub fn state(self) -> State {
        match self {
            Self::Initializing => State::InitializingBlue,
            Self::Active(Colour::Blue) => State::ActiveBlue,
            Self::Active(Colour::Green) => State::ActiveGreen,
            Self::Savepointing(Colour::Blue) => State::SavepointingBlue,
            Self::Savepointing(Colour::Green) => State::SavepointingGreen,
            Self::TransitioningTo(Colour::Blue) => State::TransitioningToBlue,
            Self::TransitioningTo(Colour::Green) => State::TransitioningToGreen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_reads_as_a_stage_and_back() {
        for state in State::ALL {
            assert_eq!(Stage::of(Some(*state)).state(), *state);
        }
        assert_eq!(Stage::of(None), Stage::Initializing);
    }
}
