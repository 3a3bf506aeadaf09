//! The Ingresses of a blue/green deployment, as the Apache operator makes them: the
//! resource's own `spec.ingress` is one Ingress named like it, routing to its active child's
//! `<child>-rest` Service and switched to the new child when a hand-over finishes; a
//! child's own ingress template (from `spec.template.spec.ingress`) is prefixed with its
//! colour (`blue-`, `green-`), so that the two children never claim the same host.

use flink_operator_api::{
    FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentStatus as Status, FlinkDeploymentSpec,
};
use kube::{Resource, ResourceExt};

use super::{Colour, Observation, Stage, child_name};
use crate::resources::{
    cluster::rest_service_name,
    ingress::{self, IngressChange, Observed},
};

/// What observe read for the resource's Ingress.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IngressObservation {
    /// The cached Ingress named like the resource.
    pub cached: Observed,
    /// Each child's REST port (`rest.port` of its effective configuration), when it exists.
    pub blue_port: u16,
    pub green_port: u16,
}

impl IngressObservation {
    fn port(&self, colour: Colour) -> u16 {
        match colour {
            Colour::Blue => self.blue_port,
            Colour::Green => self.green_port,
        }
    }
}

/// The child's ingress template: the template's, prefixed with `<colour>-`.
pub fn for_child(mut spec: FlinkDeploymentSpec, colour: Colour) -> FlinkDeploymentSpec {
    if let Some(template) = spec.ingress.as_mut().and_then(|i| i.template.as_mut()) {
        *template = format!("{}{template}", prefix(colour));
    }
    spec
}

/// A child's spec as the template it was made from: its ingress template without the
/// colour prefix [`for_child`] put there (a child made without one is left as it is).
pub fn as_template(mut spec: FlinkDeploymentSpec, colour: Colour) -> FlinkDeploymentSpec {
    if let Some(template) = spec.ingress.as_mut().and_then(|i| i.template.as_mut())
        && let Some(bare) = template.strip_prefix(&prefix(colour))
    {
        *template = bare.to_owned();
    }
    spec
}

fn prefix(colour: Colour) -> String {
    format!("{}-", colour.suffix())
}

/// The child the resource's Ingress routes to once `status` is written: the active one (while
/// a savepoint of it is taken, and while the next one starts beside it), none before a first
/// child was ever ready.
pub fn routed_to(status: &Status, observation: &Observation) -> Option<Colour> {
    match Stage::of(status.blue_green_state) {
        Stage::Initializing => None,
        Stage::Active(colour) | Stage::Savepointing(colour) => Some(colour),
        Stage::TransitioningTo(to) => observation.live_child(to.other()).map(|_| to.other()),
    }
}

/// The write that keeps the resource's Ingress routed to the child `status` makes active
/// (none while it is deleted: the Ingress goes with it; none while no child is active: an
/// existing Ingress stays as it is).
pub fn change(
    resource: &FlinkBlueGreenDeployment,
    status: &Status,
    observation: &Observation,
) -> Option<IngressChange> {
    if resource.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let name = resource.name_any();
    let desired = match &resource.spec.ingress {
        None => None,
        Some(spec) => {
            let colour = routed_to(status, observation)?;
            let target = ingress::Target {
                name: &name,
                namespace: &resource.namespace().unwrap_or_default(),
                owner: resource.controller_owner_ref(&())?,
                service: rest_service_name(&child_name(&name, colour)),
                port: observation.ingress.port(colour),
            };
            Some(ingress::build(spec, target).ok()?)
        }
    };
    ingress::change(
        desired,
        &observation.ingress.cached,
        resource.metadata.uid.as_deref(),
    )
}
