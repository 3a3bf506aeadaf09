//! What observe will read for a blue/green deployment: everything [`super::decide`] needs,
//! as plain values.

use flink_operator_api::{
    FlinkDeploymentSpec,
    common::{FlinkJobState, JobStatus, ResourceLifecycleState},
};

use super::{
    BlueGreenPolicy, Colour, PolicyError,
    gate::{HandOver, ObservedMap},
};
pub use crate::lifecycle::snapshot_resources::SnapshotState;

/// One child FlinkDeployment (`<name>-blue` or `<name>-green`), as the cache shows it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Child {
    pub spec: FlinkDeploymentSpec,
    /// Its deletion has started.
    pub deleting: bool,
    /// `status.lifecycleState`.
    pub lifecycle: Option<ResourceLifecycleState>,
    /// `status.jobStatus`.
    pub job_status: Option<JobStatus>,
}

impl Child {
    /// Whether it runs the job as a hand-over needs: its lifecycle STABLE and its job
    /// RUNNING.
    pub fn is_ready(&self) -> bool {
        self.lifecycle == Some(ResourceLifecycleState::Stable)
            && self.job_state() == Some(&FlinkJobState::Running)
    }

    /// The state of its job, if one was ever observed.
    pub fn job_state(&self) -> Option<&FlinkJobState> {
        self.job_status.as_ref().and_then(|j| j.state.as_ref())
    }

    /// Whether a job of it was ever seen: one that never was holds nothing worth keeping.
    pub fn ever_ran(&self) -> bool {
        self.job_status
            .as_ref()
            .is_some_and(|j| j.job_id.is_some() || j.state.is_some())
    }
}

/// The FlinkStateSnapshot named by `savepointTriggerId`, if it exists.
#[derive(Debug, Clone, PartialEq)]
pub struct TransitionSavepoint {
    pub name: String,
    pub state: SnapshotState,
    /// `status.path`, once completed.
    pub path: Option<String>,
    /// `status.error`, once failed.
    pub error: Option<String>,
}

/// What observe read.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub blue: Option<Child>,
    pub green: Option<Child>,
    /// The transition savepoint the status names, if it exists.
    pub savepoint: Option<TransitionSavepoint>,
    /// The blue/green options of `spec.configuration`.
    pub policy: Result<BlueGreenPolicy, PolicyError>,
    /// The clock, in epoch milliseconds.
    pub now_ms: i64,
    /// A fresh id (lowercase letters and digits), used when a transition savepoint is named.
    pub fresh_id: String,
    /// FlinkDeployments that have a child's name but another owner: never adopted, changed
    /// or deleted (they are absent from `blue` and `green`).
    pub foreign: Vec<String>,
    /// ADVANCED: the coordination ConfigMap, if it exists.
    pub gate: Option<ObservedMap>,
    /// ADVANCED, during the gate phase: what the old job's gates report.
    pub hand_over: HandOver,
    /// The resource's Ingress (`spec.ingress`) and the children's REST ports.
    pub ingress: super::ingress::IngressObservation,
    /// Why nothing is done for the resource at all: it is in the operator's own namespace,
    /// which the configuration keeps free of Flink resources (the webhook was bypassed).
    pub refused: Option<String>,
}

impl Observation {
    /// The child of `colour`, if it exists.
    pub fn child(&self, colour: Colour) -> Option<&Child> {
        match colour {
            Colour::Blue => self.blue.as_ref(),
            Colour::Green => self.green.as_ref(),
        }
    }

    /// The child of `colour`, if it exists and its deletion has not started.
    pub fn live_child(&self, colour: Colour) -> Option<&Child> {
        self.child(colour).filter(|c| !c.deleting)
    }

    /// The savepoint named `name`, if it exists.
    pub fn savepoint_named(&self, name: &str) -> Option<&TransitionSavepoint> {
        self.savepoint.as_ref().filter(|s| s.name == name)
    }
}
