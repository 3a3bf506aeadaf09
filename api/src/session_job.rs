//! FlinkSessionJob: a job submitted to a session FlinkDeployment.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{
    Condition, FlinkSpec, JobSpec, JobStatus, ReconciliationStatus, ResourceLifecycleState, RevisionStatus,
};
use crate::config::FlinkConfiguration;

/// Desired state of a job running in a session cluster.
// Each printcolumn repeats `type_ = "string"`, which clippy mistakes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "flink.apache.org",
    version = "v1beta1",
    kind = "FlinkSessionJob",
    namespaced,
    status = "FlinkSessionJobStatus",
    shortname = "sessionjob",
    category = "flink",
    derive = "PartialEq",
    derive = "Default",
    doc = "A Flink job submitted to a session cluster (a FlinkDeployment without a job).",
    printcolumn(
        name = "Job Status",
        type_ = "string",
        json_path = ".status.jobStatus.state",
        description = "Last observed state of the job."
    ),
    printcolumn(
        name = "Lifecycle State",
        type_ = "string",
        json_path = ".status.lifecycleState",
        description = "Lifecycle state of the Flink resource (including being rolled back, failed etc.)."
    ),
    printcolumn(
        name = "Deployment",
        type_ = "string",
        json_path = ".spec.deploymentName",
        description = "Session FlinkDeployment running the job."
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
pub struct FlinkSessionJobSpec {
    /// Job to run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<JobSpec>,
    /// Change to a new value to force a restart of the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_nonce: Option<i64>,
    /// Flink configuration overrides for the job; nested keys are joined with dots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flink_configuration: Option<FlinkConfiguration>,
    /// Name of the session FlinkDeployment in the same namespace (immutable once deployed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment_name: Option<String>,
}

impl FlinkSessionJobSpec {
    /// The job, if set.
    pub fn job(&self) -> Option<&JobSpec> {
        self.job.as_ref()
    }
}

impl FlinkSpec for FlinkSessionJobSpec {
    fn job(&self) -> Option<&JobSpec> {
        self.job.as_ref()
    }

    fn job_mut(&mut self) -> Option<&mut JobSpec> {
        self.job.as_mut()
    }

    fn restart_nonce(&self) -> Option<i64> {
        self.restart_nonce
    }

    fn flink_configuration(&self) -> Option<&FlinkConfiguration> {
        self.flink_configuration.as_ref()
    }

    fn flink_configuration_mut(&mut self) -> &mut Option<FlinkConfiguration> {
        &mut self.flink_configuration
    }
}

/// Last observed status of a FlinkSessionJob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlinkSessionJobStatus {
    /// Last observed status of the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_status: Option<JobStatus>,
    /// Error reported by the operator, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Generation of the last reconciled spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Lifecycle state derived from the rest of the status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle_state: Option<ResourceLifecycleState>,
    /// Reconciliation bookkeeping: last reconciled and last stable spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconciliation_status: Option<ReconciliationStatus>,
    /// Conditions; the operator maintains Ready, Progressing and Degraded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// Our addition: the job's revision history and the latest manual rollback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<RevisionStatus>,
}

crate::common::lifecycle_status!(FlinkSessionJobStatus);
