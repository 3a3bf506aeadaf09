//! The FlinkBlueGreenDeployment loop: two child FlinkDeployments, `<name>-blue` and
//! `<name>-green`, and the BASIC hand-over between them on a spec change, plugged into the
//! shared [`runtime`](crate::runtime) (Controller wiring, back-off, status writes, Events).
//!
//! - [`observe`]: the two children from the FlinkDeployment cache, the transition's
//!   FlinkStateSnapshot from the snapshot cache, the blue/green options, the clock and a fresh
//!   id; no REST call (the children's and the snapshot's own loops ask Flink).
//! - [`decide`]: the state machine, one pure function returning a [`crate::plan::Plan`].
//! - [`act`]: creating, updating, suspending and deleting a child, and creating the transition
//!   savepoint, each safe to repeat.
//! - [`diff`]: how the spec changed since it was last applied, in the Apache operator's order
//!   of precedence (SUSPEND / RESUME, SAVEPOINT_REDEPLOY, IGNORE, PATCH_CHILD, TRANSITION).
//! - [`stage`]: the recorded `blueGreenState`, read as a typed stage with its colour.
//! - [`policy`]: the blue/green options of `spec.configuration`.
//! - [`observation`]: what observe reads, as plain values.
//! - [`phase`]: the Ready / Progressing / Degraded conditions of a status (our addition to
//!   the Apache status).
//! - [`outcome`]: what a pass ended (a transition completed or aborted), for the metrics.
//!
//! The BASIC hand-over of the Apache operator, with its known faults fixed: the old child is
//! deleted only once the new one is stable and the deletion delay has passed, and the final
//! status always follows that deletion; a transition that does not become stable (or whose
//! savepoint does not complete) within the abort grace period is aborted, leaving the old
//! child untouched and no marker of the aborted attempt behind; the spec is recorded as
//! applied only once a transition has started; a stateless transition never needs a
//! savepoint. The transition savepoint is a FlinkStateSnapshot, named in status before it is
//! created, so that no crash ever takes two; it is taken by the FlinkStateSnapshot loop, so a
//! stateful transition needs that loop (`kubernetes.operator.snapshot.resource.enabled`).
//!
//! Children carry the `flink/blue-green-deployment-type` label and an owner reference to the
//! resource (controller, blockOwnerDeletion): deleting the resource deletes them, and nothing
//! is started once its deletion began. A FlinkDeployment that has a child's name but another
//! owner is never touched: the resource reports it and deploys nothing. The status holds the
//! Apache fields, and Ready / Progressing / Degraded conditions besides.
//!
//! Proven end to end in `tests/e2e/bluegreen.rs` (hand-overs in savepoint, last-state and
//! stateless mode, an abort, suspend and resume, deletion) and `tests/e2e/bluegreen_advanced.rs`
//! (the ADVANCED mode's record-exact hand-over through the record gate). Not done: injecting
//! the record gate into a job automatically (the job bundles it). The resource's
//! `spec.ingress` routes to the active child ([`ingress`]), switched in the pass that
//! finishes a hand-over.

pub mod act;
pub mod decide;
pub mod diff;
pub mod gate;
pub mod ingress;
pub mod observation;
pub mod observe;
pub mod outcome;
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

use std::sync::Arc;

use flink_operator_api::{
    FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentStatus, FlinkDeployment, FlinkStateSnapshot, keys,
};
use kube::{
    Resource, ResourceExt,
    runtime::{Controller, reflector::ObjectRef},
};

use crate::{
    caches::{Cache, Caches},
    context::Context,
    plan::{Plan, Recovery},
    policy::Policy,
    runtime::{Acted, Reconciler},
};

pub(crate) const KIND: &str = keys::kinds::FLINK_BLUE_GREEN_DEPLOYMENT;

/// Why a pass failed: only acting can (observing reads the caches).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{0}")]
    Act(#[from] act::ActError),
}

/// The FlinkBlueGreenDeployment kind's part of its loop.
pub struct BlueGreenDeployments;

impl Reconciler for BlueGreenDeployments {
    type Kind = FlinkBlueGreenDeployment;
    type Status = FlinkBlueGreenDeploymentStatus;
    type Observed = observe::Observed;
    type Action = Action;
    type Error = ReconcileError;
    const KIND: &'static str = KIND;

    fn cache(caches: &Caches) -> &Cache<FlinkBlueGreenDeployment> {
        &caches.blue_greens
    }

    fn status(resource: &FlinkBlueGreenDeployment) -> Option<&FlinkBlueGreenDeploymentStatus> {
        resource.status.as_ref()
    }

    async fn observe(
        ctx: &Context,
        caches: &Caches,
        resource: &FlinkBlueGreenDeployment,
    ) -> Result<observe::Observed, ReconcileError> {
        let mut observed = observe::observe(ctx, caches, resource);
        observed.observation.hand_over =
            observe::hand_over(ctx, caches, resource, &observed.observation).await;
        Ok(observed)
    }

    fn decide(
        resource: &FlinkBlueGreenDeployment,
        observed: &observe::Observed,
    ) -> Plan<FlinkBlueGreenDeploymentStatus, Action> {
        decide(resource, &observed.observation)
    }

    async fn act(
        ctx: &Context,
        resource: &FlinkBlueGreenDeployment,
        observed: &observe::Observed,
        action: &Action,
    ) -> Result<Acted, ReconcileError> {
        let client = &ctx.client;
        match action {
            Action::CreateChild { colour, spec } => {
                act::create_child(client, resource, *colour, spec).await?
            }
            Action::UpdateChild { colour, spec } => {
                act::update_child(client, resource, *colour, spec).await?
            }
            Action::SuspendChild { colour } => act::suspend_child(client, resource, *colour).await?,
            Action::DeleteChild { colour } => act::delete_child(client, resource, *colour).await?,
            Action::CreateSavepoint { name, colour } => {
                let savepoint = act::SavepointOfChild {
                    name,
                    colour: *colour,
                    now_ms: observed.observation.now_ms,
                    format: observed.savepoint_format,
                };
                act::create_savepoint(client, resource, savepoint).await?;
            }
            Action::WriteGateMap {
                map,
                patch,
                resource_version,
            } => act::write_gate_map(client, resource, map, patch, resource_version.as_deref()).await?,
            Action::Ingress(change) => {
                let namespace = resource.namespace().unwrap_or_default();
                crate::ingresses::write(client, &namespace, change)
                    .await
                    .map_err(act::ActError::Ingress)?
            }
            Action::RevertSpec { spec } => {
                let version = act::revert_spec(client, resource, spec).await?;
                return Ok(Acted::Patched(version));
            }
        }
        // Children, snapshots and the ConfigMap are written; the resource itself only by a
        // revert.
        Ok(Acted::Done)
    }

    fn policy(observed: &observe::Observed) -> &Policy {
        &observed.policy
    }

    fn lifecycle_state(status: &FlinkBlueGreenDeploymentStatus) -> Option<&'static str> {
        status.blue_green_state.map(|s| s.as_str())
    }

    /// A write of the coordination map that met a newer version (a gate wrote its turn in
    /// between, or the cache lagged behind the last write) is looked at again in a moment,
    /// quietly: the status stays as it was (what was written before the actions included),
    /// and the next pass decides from the map as it is.
    fn recover(
        resource: &FlinkBlueGreenDeployment,
        observed: &observe::Observed,
        plan: &Plan<FlinkBlueGreenDeploymentStatus, Action>,
        error: &ReconcileError,
    ) -> Option<Recovery<FlinkBlueGreenDeploymentStatus>> {
        let ReconcileError::Act(error) = error;
        if let act::ActError::Ingress(error) = error
            && let Some(message) = error.refusal()
        {
            let interval =
                std::time::Duration::from_millis(observed.policy.reconcile_interval_ms.max(0) as u64);
            return Some(crate::ingresses::refused(
                &plan.status,
                |s| &mut s.error,
                message,
                interval,
            ));
        }
        error.is_stale_gate_map().then(|| Recovery {
            status: plan
                .status_before
                .clone()
                .or_else(|| resource.status.clone())
                .unwrap_or_default(),
            events: Vec::new(),
            requeue: std::time::Duration::from_secs(1),
        })
    }

    /// Times each completed transition and counts the aborted ones.
    fn written(
        ctx: &Context,
        resource: &FlinkBlueGreenDeployment,
        observed: &observe::Observed,
        status: Option<&FlinkBlueGreenDeploymentStatus>,
    ) {
        let Some(status) = status else { return };
        match outcome::outcome(resource.status.as_ref(), status, &observed.observation) {
            Some(outcome::Outcome::Completed { transition, seconds }) => {
                ctx.metrics
                    .bluegreen_transition_completed(transition.as_str(), seconds);
            }
            Some(outcome::Outcome::Aborted) => ctx.metrics.bluegreen_transition_aborted(),
            None => {}
        }
    }

    /// A child's change (its job becoming stable, failing, its deletion ending) and the
    /// transition savepoint's change (completed, failed) wake the resource that owns them,
    /// rather than leaving them to its next look.
    fn triggers(
        controller: Controller<FlinkBlueGreenDeployment>,
        caches: &Caches,
        namespace: Option<&str>,
    ) -> Controller<FlinkBlueGreenDeployment> {
        let of_child = |fd: Arc<FlinkDeployment>| {
            // Only a labelled child: every other FlinkDeployment's change is not looked at.
            observe::colour_label(&fd).and_then(|_| owner(&*fd))
        };
        let of_snapshot = |snapshot: Arc<FlinkStateSnapshot>| owner(&*snapshot);
        let controller = match &caches.ingresses {
            // Its Ingress changed or deleted by someone else is put back.
            Some(ingresses) => controller.owns_shared_stream(ingresses.changes(namespace)),
            None => controller,
        };
        controller
            .watches_shared_stream(caches.deployments.changes(namespace), of_child)
            .watches_shared_stream(caches.snapshots.changes(namespace), of_snapshot)
    }
}

/// The FlinkBlueGreenDeployment that owns `object`, by its owner reference (whatever its
/// `controller` flag: children created by the Apache operator carry `controller: false`).
fn owner(object: &impl Resource) -> Option<ObjectRef<FlinkBlueGreenDeployment>> {
    let namespace = object.meta().namespace.clone().unwrap_or_default();
    object
        .owner_references()
        .iter()
        .find(|o| o.kind == KIND && o.api_version == keys::API_VERSION)
        .map(|o| ObjectRef::new(&o.name).within(&namespace))
}

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

#[cfg(test)]
mod wiring_tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;

    fn owned(kind: &str) -> FlinkDeployment {
        let mut fd = FlinkDeployment::new("bg-blue", Default::default());
        fd.metadata.namespace = Some("ns".to_owned());
        fd.metadata.owner_references = Some(vec![OwnerReference {
            api_version: keys::API_VERSION.to_owned(),
            kind: kind.to_owned(),
            name: "bg".to_owned(),
            uid: "u1".to_owned(),
            ..Default::default()
        }]);
        fd
    }

    #[test]
    fn a_conflicting_map_write_is_looked_at_again_quietly_and_other_failures_are_errors() {
        let status = FlinkBlueGreenDeploymentStatus {
            error: Some("as it was".to_owned()),
            ..Default::default()
        };
        let mut resource = FlinkBlueGreenDeployment::new("bg", Default::default());
        resource.status = Some(status.clone());
        let observed = observe::Observed {
            observation: Observation {
                blue: None,
                green: None,
                savepoint: None,
                policy: Ok(BlueGreenPolicy::default()),
                now_ms: 0,
                fresh_id: String::new(),
                foreign: Vec::new(),
                gate: None,
                hand_over: gate::HandOver::NotAsked,
                ingress: Default::default(),
                refused: None,
            },
            policy: Policy::default(),
            savepoint_format: Default::default(),
        };
        let plan = Plan {
            status_before: None,
            actions: Vec::new(),
            status: FlinkBlueGreenDeploymentStatus::default(),
            events: Vec::new(),
            requeue: crate::plan::Next::Steady,
        };
        let refused = |code: u16| {
            kube::Error::Api(
                kube::core::Status {
                    code,
                    ..Default::default()
                }
                .boxed(),
            )
        };
        let conflict = ReconcileError::Act(act::ActError::GateMap {
            name: "bg-configmap".to_owned(),
            source: refused(409),
        });
        let recovery =
            BlueGreenDeployments::recover(&resource, &observed, &plan, &conflict).expect("recovered");
        assert_eq!(recovery.status, status, "nothing of the plan is written");
        assert!(recovery.events.is_empty(), "no Event for a conflict");
        let forbidden = ReconcileError::Act(act::ActError::GateMap {
            name: "bg-configmap".to_owned(),
            source: refused(403),
        });
        assert!(BlueGreenDeployments::recover(&resource, &observed, &plan, &forbidden).is_none());
    }

    #[test]
    fn an_owned_object_wakes_its_blue_green_owner_and_no_other() {
        assert_eq!(owner(&owned(KIND)), Some(ObjectRef::new("bg").within("ns")));
        assert_eq!(owner(&owned(keys::kinds::FLINK_DEPLOYMENT)), None);
        assert_eq!(owner(&FlinkDeployment::new("bg-blue", Default::default())), None);
    }
}
