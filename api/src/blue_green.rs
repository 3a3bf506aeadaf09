//! FlinkBlueGreenDeployment: two child FlinkDeployments (blue and green) and the hand-over
//! between them on every spec change.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Condition, IngressSpec, JobStatus};
use crate::deployment::FlinkDeploymentSpec;
use crate::reconciled_spec::{ReconciledSpec, ReconciledSpecError};
use crate::string_enum::string_enum;

/// Desired state of a blue/green pair of FlinkDeployments.
// Each printcolumn repeats `type_ = "string"`, which clippy mistakes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "flink.apache.org",
    version = "v1beta1",
    kind = "FlinkBlueGreenDeployment",
    namespaced,
    status = "FlinkBlueGreenDeploymentStatus",
    shortname = "flinkbgdep",
    category = "flink",
    derive = "PartialEq",
    derive = "Default",
    doc = "A Flink application upgraded by starting a second (blue or green) deployment and switching over.",
    printcolumn(
        name = "Job Status",
        type_ = "string",
        json_path = ".status.jobStatus.state",
        description = "Last observed state of the job."
    ),
    printcolumn(
        name = "Blue/Green State",
        type_ = "string",
        json_path = ".status.blueGreenState",
        description = "State of the blue/green transition."
    ),
    printcolumn(
        name = "Mode",
        type_ = "string",
        json_path = ".spec.transitionMode",
        description = "Transition mode, BASIC or ADVANCED.",
        priority = 1
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status",
        description = "Whether the resource is ready: its job runs as its spec asks (the reason of its Ready condition says more)."
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct FlinkBlueGreenDeploymentSpec {
    /// Blue/green options (kubernetes.operator.bluegreen.*), as strings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configuration: Option<BTreeMap<String, String>>,
    /// Ingress pointing at the active child's REST service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress: Option<IngressSpec>,
    /// Template of the child FlinkDeployments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<FlinkDeploymentTemplateSpec>,
    /// Hand-over protocol: BASIC (both jobs overlap) or ADVANCED (gated, exactly-once); immutable.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "BASIC"))]
    pub transition_mode: Option<TransitionMode>,
}

impl FlinkBlueGreenDeploymentSpec {
    /// The child FlinkDeployment spec of the template, if set.
    pub fn deployment_spec(&self) -> Option<&FlinkDeploymentSpec> {
        self.template.as_ref().and_then(|t| t.spec.as_ref())
    }
}

/// Template of the child FlinkDeployments.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlinkDeploymentTemplateSpec {
    /// Metadata (labels, annotations) copied to the children.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ObjectMeta>,
    /// FlinkDeployment spec of the children.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<FlinkDeploymentSpec>,
}

string_enum! {
    /// Hand-over protocol (our addition, immutable): BASIC (default; jobs overlap, at-least-once) or ADVANCED (watermark gate, exactly-once).
    #[derive(Default)]
    pub enum TransitionMode {
        /// The old job runs until the new one is stable; records may be duplicated (at-least-once).
        #[default]
        Basic => "BASIC",
        /// A gate in both jobs hands over output at a watermark (exactly-once).
        Advanced => "ADVANCED",
    }
}

string_enum! {
    /// Which hand-over completed (the `transition` label of the transition metrics, as the
    /// Apache operator names them).
    pub enum BlueGreenTransition {
        /// The first child (blue) became the active one.
        InitialDeployment => "InitialDeployment",
        /// Green replaced blue.
        BlueToGreen => "BlueToGreen",
        /// Blue replaced green.
        GreenToBlue => "GreenToBlue",
    }
}

string_enum! {
    /// Colour of a child FlinkDeployment (value of the `flink/blue-green-deployment-type` label).
    pub enum BlueGreenDeploymentType {
        /// The blue child, `<name>-blue`.
        Blue => "BLUE",
        /// The green child, `<name>-green`.
        Green => "GREEN",
    }
}

impl BlueGreenDeploymentType {
    /// The other colour.
    pub fn other(self) -> Self {
        match self {
            Self::Blue => Self::Green,
            Self::Green => Self::Blue,
        }
    }

    /// Name suffix of the child, `blue` or `green`.
    pub fn suffix(self) -> &'static str {
        match self {
            Self::Blue => "blue",
            Self::Green => "green",
        }
    }
}

string_enum! {
    /// State of the blue/green transition.
    pub enum FlinkBlueGreenDeploymentState {
        /// Deploying the first (blue) child.
        InitializingBlue => "INITIALIZING_BLUE",
        /// Blue is active.
        ActiveBlue => "ACTIVE_BLUE",
        /// Green is active.
        ActiveGreen => "ACTIVE_GREEN",
        /// Switching from green to blue.
        TransitioningToBlue => "TRANSITIONING_TO_BLUE",
        /// Switching from blue to green.
        TransitioningToGreen => "TRANSITIONING_TO_GREEN",
        /// Taking the transition savepoint of blue.
        SavepointingBlue => "SAVEPOINTING_BLUE",
        /// Taking the transition savepoint of green.
        SavepointingGreen => "SAVEPOINTING_GREEN",
    }
}

/// Last observed status of a blue/green deployment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlinkBlueGreenDeploymentStatus {
    /// Job status of the active child.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_status: Option<JobStatus>,
    /// State of the blue/green transition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blue_green_state: Option<FlinkBlueGreenDeploymentState>,
    /// Last reconciled spec, as JSON {"spec":{...}}.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_reconciled_spec: Option<String>,
    /// Time of the last reconciliation (ISO-8601).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_reconciled_timestamp: Option<String>,
    /// Time after which a transition is aborted (ISO-8601; the epoch when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abort_timestamp: Option<String>,
    /// Time the new child became ready (ISO-8601; the epoch when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment_ready_timestamp: Option<String>,
    /// The transition savepoint in progress: the name of its FlinkStateSnapshot (the Apache
    /// operator records a Flink trigger id here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub savepoint_trigger_id: Option<String>,
    /// Our addition: the path of the transition savepoint (or, after an abort, of the newest
    /// state a child started from it left) while no child that ran from it is stable yet.
    /// An abort that leaves no child running keeps it, so that the next edit starts the job
    /// from it rather than empty; it goes once a child started from it is stable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transition_savepoint_path: Option<String>,
    /// Error reported by the operator, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Our addition: the Ready, Progressing and Degraded conditions, with the phase as their
    /// reason (Deploying, Running, Updating, Suspended, RolledBack after an aborted
    /// transition, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

impl FlinkBlueGreenDeploymentStatus {
    /// The last reconciled spec, decoded (`Ok(None)` before the first reconciliation).
    pub fn last_reconciled_spec(&self) -> Result<Option<FlinkBlueGreenDeploymentSpec>, ReconciledSpecError> {
        self.last_reconciled_spec
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(|s| ReconciledSpec::decode(s).map(|r| r.spec))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn transition_mode_spelling_and_default() {
        assert_eq!(
            serde_json::to_value(TransitionMode::Advanced).expect("encodes"),
            json!("ADVANCED")
        );
        assert_eq!(TransitionMode::default(), TransitionMode::Basic);
        let spec: FlinkBlueGreenDeploymentSpec = serde_json::from_value(json!({})).expect("decodes");
        assert_eq!(
            spec.transition_mode, None,
            "serde must not materialize the default"
        );
    }

    #[test]
    fn last_reconciled_spec_decodes_the_wrapped_form() {
        let status = FlinkBlueGreenDeploymentStatus {
            last_reconciled_spec: Some(
                r#"{"spec":{"configuration":{"a":"b"},"template":{"spec":{"flinkVersion":"v2_1"}}}}"#.into(),
            ),
            ..Default::default()
        };
        let spec = status.last_reconciled_spec().expect("decodes").expect("present");
        assert_eq!(spec.configuration.expect("configuration")["a"], "b");
        assert_eq!(
            BlueGreenDeploymentType::Blue.other(),
            BlueGreenDeploymentType::Green
        );
    }
}
