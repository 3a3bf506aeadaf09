//! FlinkBlueGreenDeployment: the decision logic only. Nothing here is wired into the
//! operator yet: no controller runs it, no observe reads its [`Observation`] and no act
//! carries out its [`Action`]s. It is the pure part of the loop that will: what to do next,
//! given the resource and what was observed, with the clock and fresh ids as inputs.
//!
//! - [`diff`]: how the spec changed since it was last applied, in the Apache operator's order
//!   of precedence (SUSPEND / RESUME, SAVEPOINT_REDEPLOY, IGNORE, PATCH_CHILD, TRANSITION).
//! - [`stage`]: the recorded `blueGreenState`, read as a typed stage with its colour.
//! - [`policy`]: the blue/green options of `spec.configuration`.
//! - [`observation`]: what observe will read (the two children, the transition savepoint).
//! - [`decide`]: the state machine, one pure function returning a [`crate::runtime::Plan`].
//! - [`phase`]: the Ready / Progressing / Degraded phase a status shows.
//!
//! The BASIC hand-over of the Apache operator, with its known faults fixed: the old child is
//! deleted only once the new one is stable and the deletion delay has passed, and the final
//! status always follows that deletion; a transition that does not become stable (or whose
//! savepoint does not complete) within the abort grace period is aborted, leaving the old
//! child untouched and no marker of the aborted attempt behind; the spec is recorded as
//! applied only once a transition has started; a stateless transition never needs a
//! savepoint. The transition savepoint is a FlinkStateSnapshot, named in status before it is
//! created, so that no crash ever takes two.

pub mod decide;
pub mod diff;
pub mod observation;
pub mod phase;
pub mod policy;
pub mod stage;

#[cfg(test)]
mod tests;

pub use decide::{Action, decide};
pub use diff::{SpecDiff, diff};
pub use flink_operator_api::BlueGreenDeploymentType as Colour;
pub use observation::{Child, Observation, TransitionSavepoint};
pub use policy::{BlueGreenPolicy, PolicyError};
pub use stage::Stage;

/// The name of the child FlinkDeployment of `colour`: `<name>-blue` or `<name>-green`.
pub fn child_name(name: &str, colour: Colour) -> String {
    format!("{name}-{}", colour.suffix())
}

/// The name of the FlinkStateSnapshot that carries the state of the `colour` child of
/// `name` into the other one, from an id recorded with it (so that the same transition
/// always names the same snapshot).
pub fn savepoint_name(name: &str, colour: Colour, id: &str) -> String {
    format!("{}-transition-{id}", child_name(name, colour))
}
