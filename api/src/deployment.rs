//! FlinkDeployment: a Flink cluster, in application mode (with `job`) or session mode.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{
    Condition, FlinkSpec, FlinkVersion, IngressSpec, JobManagerSpec, JobSpec, JobStatus,
    KubernetesDeploymentMode, ReconciliationStatus, ResourceLifecycleState, RevisionStatus, TaskManagerSpec,
};
use crate::config::FlinkConfiguration;
use crate::pod_template::PodTemplate;
use crate::string_enum::string_enum;

/// Desired state of a Flink cluster and, in application mode, its job.
// Each printcolumn repeats `type_ = "string"`, which clippy mistakes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "flink.apache.org",
    version = "v1beta1",
    kind = "FlinkDeployment",
    namespaced,
    status = "FlinkDeploymentStatus",
    shortname = "flinkdep",
    category = "flink",
    derive = "PartialEq",
    derive = "Default",
    doc = "A Flink cluster managed by the operator: application mode when spec.job is set, else a session cluster.",
    scale(
        spec_replicas_path = ".spec.taskManager.replicas",
        status_replicas_path = ".status.taskManager.replicas",
        label_selector_path = ".status.taskManager.labelSelector"
    ),
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
        name = "Flink Version",
        type_ = "string",
        json_path = ".spec.flinkVersion",
        description = "Flink version of the image."
    ),
    printcolumn(
        name = "JobManager",
        type_ = "string",
        json_path = ".status.jobManagerDeploymentStatus",
        description = "Status of the JobManager deployment.",
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
pub struct FlinkDeploymentSpec {
    /// Job to run in application mode; leave unset for a session cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<JobSpec>,
    /// Change to a new value to force a restart of the cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_nonce: Option<i64>,
    /// Flink configuration overrides; nested keys are joined with dots, lists with semicolons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flink_configuration: Option<FlinkConfiguration>,
    /// Flink image of the JobManager and TaskManagers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Image pull policy of the Flink containers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<String>,
    /// Service account of the Flink pods (required).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account: Option<String>,
    /// Flink version of the image (required).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flink_version: Option<FlinkVersion>,
    /// Ingress exposing the REST API and web UI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress: Option<IngressSpec>,
    /// Base pod template (a full Pod) for the JobManager and TaskManager pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,
    /// JobManager settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_manager: Option<JobManagerSpec>,
    /// TaskManager settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_manager: Option<TaskManagerSpec>,
    /// Logging configuration files by name: log4j-console.properties or logback-console.xml.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_configuration: Option<BTreeMap<String, String>>,
    /// Deployment mode: native (default) or standalone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<KubernetesDeploymentMode>,
}

impl FlinkDeploymentSpec {
    /// The job, if this is an application deployment.
    pub fn job(&self) -> Option<&JobSpec> {
        self.job.as_ref()
    }

    /// True for an application deployment (a job is set).
    pub fn is_application(&self) -> bool {
        self.job.is_some()
    }

    /// True for a session cluster (no job).
    pub fn is_session(&self) -> bool {
        self.job.is_none()
    }
}

impl FlinkSpec for FlinkDeploymentSpec {
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

    fn task_manager_replicas(&self) -> Option<i32> {
        self.task_manager.as_ref().and_then(|tm| tm.replicas)
    }

    fn clear_task_manager_replicas(&mut self) {
        if let Some(tm) = self.task_manager.as_mut() {
            tm.replicas = None;
            if *tm == Default::default() {
                self.task_manager = None;
            }
        }
    }

    fn clear_defaults(&mut self) {
        if let Some(jm) = self.job_manager.as_mut()
            && jm.replicas == Some(1)
        {
            jm.replicas = None;
            if *jm == Default::default() {
                self.job_manager = None;
            }
        }
    }
}

string_enum! {
    /// Observed status of the JobManager deployment (default MISSING); only READY means the REST API is usable.
    #[derive(Default)]
    pub enum JobManagerDeploymentStatus {
        /// The JobManager is running and its REST API is ready.
        Ready => "READY",
        /// The JobManager Deployment is up but the REST API is not ready yet.
        DeployedNotReady => "DEPLOYED_NOT_READY",
        /// The JobManager Deployment is being created.
        Deploying => "DEPLOYING",
        /// There is no JobManager Deployment.
        #[default]
        Missing => "MISSING",
        /// The JobManager Deployment is in error.
        Error => "ERROR",
    }
}

/// TaskManager information for the scale subresource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskManagerInfo {
    /// Label selector of the TaskManager pods, e.g. component=taskmanager,app=NAME (the resource name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// Number of TaskManager replicas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

/// Last observed status of a FlinkDeployment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlinkDeploymentStatus {
    /// Last observed status of the job (application mode).
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
    /// Cluster information: flink-version, flink-revision, total-cpu, total-memory, state-size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_info: Option<BTreeMap<String, String>>,
    /// Observed status of the JobManager deployment (default MISSING).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_manager_deployment_status: Option<JobManagerDeploymentStatus>,
    /// TaskManager replicas and selector (scale subresource).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_manager: Option<TaskManagerInfo>,
    /// Conditions; the operator maintains Ready, Progressing and Degraded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// Our addition: the job's revision history and the latest manual rollback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<RevisionStatus>,
}

crate::common::lifecycle_status!(FlinkDeploymentStatus);
