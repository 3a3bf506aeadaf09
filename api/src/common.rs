//! Types shared by several kinds: the job spec, resources, ingress, enums and job status.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::api::networking::v1::IngressTLS;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use crate::config::FlinkConfiguration;
use crate::pod_template::PodTemplate;
use crate::reconciled_spec::{ReconciledSpec, ReconciledSpecError};
use crate::string_enum::string_enum;

// === Enums ===

string_enum! {
    /// Flink version of the image; decides which configuration keys and features apply.
    pub enum FlinkVersion {
        /// Flink 1.13 (unsupported).
        V1_13 => "v1_13",
        /// Flink 1.14 (unsupported).
        V1_14 => "v1_14",
        /// Flink 1.15 (deprecated).
        V1_15 => "v1_15",
        /// Flink 1.16 (deprecated).
        V1_16 => "v1_16",
        /// Flink 1.17 (deprecated).
        V1_17 => "v1_17",
        /// Flink 1.18 (deprecated).
        V1_18 => "v1_18",
        /// Flink 1.19.
        V1_19 => "v1_19",
        /// Flink 1.20.
        V1_20 => "v1_20",
        /// Flink 2.0.
        V2_0 => "v2_0",
        /// Flink 2.1.
        V2_1 => "v2_1",
        /// Flink 2.2.
        V2_2 => "v2_2",
        /// Flink 2.3.
        V2_3 => "v2_3",
        /// Flink 2.4.
        V2_4 => "v2_4",
    }
}

impl FlinkVersion {
    /// Whether the operator can manage this version at all (v1_15 and newer).
    pub fn is_supported(self) -> bool {
        self >= FlinkVersion::V1_15
    }

    /// Whether the version is still accepted but scheduled for removal (v1_15 to v1_18).
    pub fn is_deprecated(self) -> bool {
        (FlinkVersion::V1_15..=FlinkVersion::V1_18).contains(&self)
    }

    /// True when this version is `other` or newer.
    pub fn is_at_least(self, other: FlinkVersion) -> bool {
        self >= other
    }

    /// The `major.minor` form Flink itself reports, e.g. `1.20`.
    pub fn dotted(self) -> String {
        self.as_str().trim_start_matches('v').replace('_', ".")
    }
}

string_enum! {
    /// How state is carried over upgrades and suspensions: savepoint, last-state or stateless (default).
    #[derive(Default)]
    pub enum UpgradeMode {
        /// Stop with a savepoint and restore from it.
        Savepoint => "savepoint",
        /// Restore from the latest checkpoint kept by high availability.
        LastState => "last-state",
        /// Start without state.
        #[default]
        Stateless => "stateless",
    }
}

string_enum! {
    /// Desired state of the job: running (default) or suspended.
    #[derive(Default)]
    pub enum JobState {
        /// The job should run.
        #[default]
        Running => "running",
        /// The job should be stopped (per the upgrade mode) and its cluster released.
        Suspended => "suspended",
    }
}

string_enum! {
    /// Deployment mode: native (default; Flink creates the TaskManager pods) or standalone.
    #[derive(Default)]
    pub enum KubernetesDeploymentMode {
        /// Flink's native Kubernetes integration: the JobManager creates TaskManager pods.
        #[default]
        Native => "native",
        /// The operator creates JobManager and TaskManager Deployments itself.
        Standalone => "standalone",
    }
}

string_enum! {
    /// State of the last reconciliation (default UPGRADING).
    #[derive(Default)]
    pub enum ReconciliationState {
        /// The last reconciled spec is deployed.
        Deployed => "DEPLOYED",
        /// A new spec is being deployed.
        #[default]
        Upgrading => "UPGRADING",
        /// A rollback to the last stable spec is in progress.
        RollingBack => "ROLLING_BACK",
        /// The resource was rolled back to the last stable spec.
        RolledBack => "ROLLED_BACK",
    }
}

string_enum! {
    /// Lifecycle state of the resource, derived from the rest of its status.
    pub enum ResourceLifecycleState {
        /// Created, not yet deployed.
        Created => "CREATED",
        /// Suspended by the user.
        Suspended => "SUSPENDED",
        /// A new spec is being deployed.
        Upgrading => "UPGRADING",
        /// Deployed, not yet stable.
        Deployed => "DEPLOYED",
        /// Deployed and stable.
        Stable => "STABLE",
        /// Rolling back to the last stable spec.
        RollingBack => "ROLLING_BACK",
        /// Rolled back to the last stable spec.
        RolledBack => "ROLLED_BACK",
        /// Failed; see the error.
        Failed => "FAILED",
        /// Being deleted.
        Deleting => "DELETING",
        /// Deleted.
        Deleted => "DELETED",
    }
}

impl ResourceLifecycleState {
    /// States that do not change without a new spec or outside event.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Suspended | Self::Stable | Self::RolledBack | Self::Failed | Self::Deleted
        )
    }
}

string_enum! {
    /// What triggered the snapshot: MANUAL, PERIODIC, UPGRADE or UNKNOWN.
    #[derive(Default)]
    pub enum SnapshotTriggerType {
        /// Requested by the user (nonce or FlinkStateSnapshot resource).
        Manual => "MANUAL",
        /// Taken on the periodic schedule.
        Periodic => "PERIODIC",
        /// Taken by the operator for an upgrade or suspension.
        Upgrade => "UPGRADE",
        /// Not known (e.g. recorded by an older version).
        #[default]
        Unknown => "UNKNOWN",
    }
}

string_enum! {
    /// Savepoint format: CANONICAL (portable across state backends) or NATIVE (backend-specific).
    #[derive(Default)]
    pub enum SavepointFormatType {
        /// Backend-independent format, portable across state backends.
        #[default]
        Canonical => "CANONICAL",
        /// The state backend's own format, faster to take and restore.
        Native => "NATIVE",
        /// Not known.
        Unknown => "UNKNOWN",
    }
}

string_enum! {
    /// Checkpoint type: FULL or INCREMENTAL.
    #[derive(Default)]
    pub enum CheckpointType {
        /// A full checkpoint.
        #[default]
        Full => "FULL",
        /// An incremental checkpoint.
        Incremental => "INCREMENTAL",
        /// Not known.
        Unknown => "UNKNOWN",
    }
}

// === Spec types ===

/// The Flink job to run: application mode in a FlinkDeployment, or a job in a session cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSpec {
    /// URI of the job jar, e.g. local:///opt/flink/examples/streaming/StateMachineExample.jar; unset means the jar is on the classpath.
    #[serde(rename = "jarURI", skip_serializing_if = "Option::is_none")]
    pub jar_uri: Option<String>,
    /// Parallelism of the job (default 0: from the configuration or the TaskManager slots).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i32>,
    /// Fully qualified main class of the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry_class: Option<String>,
    /// Arguments passed to the main class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Desired state of the job (default running).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<JobState>,
    /// Deprecated: change to a new value to trigger a savepoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub savepoint_trigger_nonce: Option<i64>,
    /// Savepoint to restore from on first deployment or on a savepoint redeploy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_savepoint_path: Option<String>,
    /// Deprecated: change to a new value to trigger a checkpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_trigger_nonce: Option<i64>,
    /// How state is carried over upgrades: savepoint, last-state or stateless (default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_mode: Option<UpgradeMode>,
    /// Allow restoring state that cannot be mapped to the new job graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_non_restored_state: Option<bool>,
    /// Change to a new value to redeploy from initialSavepointPath (no rollback past it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub savepoint_redeploy_nonce: Option<i64>,
    /// Change to a new value to reset the autoscaler's state and overrides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autoscaler_reset_nonce: Option<i64>,
}

/// Deprecated resource shorthand for a JobManager or TaskManager container.
// `cpu` is an f64 as in the Apache CRD (`type: number`): an integer `cpu: 1` re-encodes as
// `1.0`, the same number. (Likewise a Kubernetes quantity written as a number in `resources`
// re-encodes as a string; both are the only non-identical round trips of the API.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// CPU cores, e.g. 0.5.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
    /// Memory in Flink or Kubernetes notation, e.g. 2048m or 2Gi.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// Ephemeral storage in Kubernetes notation, e.g. 2Gi.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ephemeral_storage: Option<String>,
}

/// JobManager settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobManagerSpec {
    /// Deprecated shorthand for cpu, memory and ephemeral storage; prefer resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<Resource>,
    /// Kubernetes resource requests and limits of the JobManager container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Number of JobManager replicas (default 1; more than 1 requires high availability).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Pod template for the JobManager, merged over spec.podTemplate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,
}

/// TaskManager settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskManagerSpec {
    /// Deprecated shorthand for cpu, memory and ephemeral storage; prefer resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<Resource>,
    /// Kubernetes resource requests and limits of the TaskManager container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Number of TaskManagers; takes precedence over job parallelism (scale subresource).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Pod template for the TaskManagers, merged over spec.podTemplate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,
}

/// Ingress exposing the Flink REST API and web UI (backend service `<name>-rest`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IngressSpec {
    /// Host and/or path template, e.g. {{name}}.{{namespace}}.flink.example.com or /{{namespace}}/{{name}}(/|$)(.*).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// IngressClass name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class_name: Option<String>,
    /// Annotations of the Ingress object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Labels of the Ingress object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// TLS settings of the Ingress object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<Vec<IngressTLS>>,
}

/// A spec with a job in it, whatever kind holds it: a FlinkDeployment's (an application
/// cluster's job; none for a session cluster) or a FlinkSessionJob's. The one accessor of
/// what both kinds' specs share.
pub trait FlinkSpec: Clone + PartialEq + Serialize + serde::de::DeserializeOwned {
    /// The job, if any (a FlinkDeployment without one is a session cluster).
    fn job(&self) -> Option<&JobSpec>;
    fn job_mut(&mut self) -> Option<&mut JobSpec>;
    /// The restart nonce.
    fn restart_nonce(&self) -> Option<i64>;
    /// The Flink configuration overrides, if any.
    fn flink_configuration(&self) -> Option<&FlinkConfiguration>;
    fn flink_configuration_mut(&mut self) -> &mut Option<FlinkConfiguration>;
    /// An application cluster's `taskManager.replicas` (the scale subresource's replicas).
    fn task_manager_replicas(&self) -> Option<i32> {
        None
    }
    /// Clears `taskManager.replicas` (an empty `taskManager` goes with it).
    fn clear_task_manager_replicas(&mut self) {}
    /// Unsets the kind's own fields that hold their default value (`jobManager.replicas: 1`),
    /// so that a spec that writes a default and one that leaves it out compare equal.
    fn clear_defaults(&mut self) {}
}

// === Status types ===

/// The state of a Flink job (`JobStatus` in Flink), as its REST API reports it and as
/// `status.jobStatus.state` records it: both carry the same upper-case text (`RUNNING`), which
/// `as_str`, `Display` and serde use. A state that a newer Flink adds decodes as `Other` with
/// its text, so that reading a job or a stored status never fails on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FlinkJobState {
    /// The job is being initialized.
    Initializing,
    /// The job is created, not yet scheduled.
    Created,
    /// The job is running.
    Running,
    /// The job is failing.
    Failing,
    /// The job failed terminally.
    Failed,
    /// The job is being cancelled.
    Cancelling,
    /// The job was cancelled.
    Canceled,
    /// The job finished.
    Finished,
    /// The job is restarting.
    Restarting,
    /// The job was suspended (e.g. its JobManager lost leadership).
    Suspended,
    /// The job is being recovered after a JobManager failover.
    Reconciling,
    /// A state this operator does not know, with Flink's text (never one of the texts above:
    /// `From<&str>` reads those as their variants).
    Other(String),
}

impl FlinkJobState {
    /// The states this operator knows, in Flink's order.
    pub const KNOWN: [FlinkJobState; 11] = [
        Self::Initializing,
        Self::Created,
        Self::Running,
        Self::Failing,
        Self::Failed,
        Self::Cancelling,
        Self::Canceled,
        Self::Finished,
        Self::Restarting,
        Self::Suspended,
        Self::Reconciling,
    ];

    /// Flink's text of the state.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Initializing => "INITIALIZING",
            Self::Created => "CREATED",
            Self::Running => "RUNNING",
            Self::Failing => "FAILING",
            Self::Failed => "FAILED",
            Self::Cancelling => "CANCELLING",
            Self::Canceled => "CANCELED",
            Self::Finished => "FINISHED",
            Self::Restarting => "RESTARTING",
            Self::Suspended => "SUSPENDED",
            Self::Reconciling => "RECONCILING",
            Self::Other(text) => text,
        }
    }

    /// The known state whose text is `text`.
    fn known(text: &str) -> Option<Self> {
        Self::KNOWN.into_iter().find(|known| known.as_str() == text)
    }

    /// Globally terminal states: the job will not run again without a resubmission.
    pub fn is_globally_terminal(&self) -> bool {
        matches!(self, Self::Failed | Self::Canceled | Self::Finished)
    }
}

impl From<&str> for FlinkJobState {
    fn from(text: &str) -> Self {
        Self::known(text).unwrap_or_else(|| Self::Other(text.to_owned()))
    }
}

impl From<String> for FlinkJobState {
    fn from(text: String) -> Self {
        Self::known(&text).unwrap_or(Self::Other(text))
    }
}

impl std::str::FromStr for FlinkJobState {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(Self::from(text))
    }
}

impl std::fmt::Display for FlinkJobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FlinkJobState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FlinkJobState {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

impl JsonSchema for FlinkJobState {
    fn schema_name() -> Cow<'static, str> {
        "FlinkJobState".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        // A plain string, as in the Apache operator's CRD: a newer Flink's state must be stored.
        String::json_schema(generator)
    }
}

/// Last observed status of the Flink job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobStatus {
    /// Name of the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
    /// Flink JobID (hex).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// Last observed Flink job state, e.g. RUNNING, FAILED, FINISHED, RECONCILING.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<FlinkJobState>,
    /// Start time of the job (epoch milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// Last update time of the job (epoch milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_time: Option<String>,
    /// Savepoint taken for the last upgrade or suspension, used on the next deployment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_savepoint_path: Option<String>,
    /// Deprecated: pending and last savepoint (when FlinkStateSnapshot resources are off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub savepoint_info: Option<SavepointInfo>,
    /// Deprecated: pending and last checkpoint (when FlinkStateSnapshot resources are off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_info: Option<CheckpointInfo>,
}

impl JobStatus {
    /// The Flink job state, if observed.
    pub fn state(&self) -> Option<&FlinkJobState> {
        self.state.as_ref()
    }

    /// True when the observed state is RUNNING.
    pub fn is_running(&self) -> bool {
        self.state == Some(FlinkJobState::Running)
    }
}

/// A completed savepoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Savepoint {
    /// Completion time (epoch milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_stamp: Option<i64>,
    /// External path of the savepoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// What triggered it (default UNKNOWN).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_type: Option<SnapshotTriggerType>,
    /// Savepoint format (default UNKNOWN).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format_type: Option<SavepointFormatType>,
    /// The savepointTriggerNonce that requested it, for manual savepoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_nonce: Option<i64>,
}

/// Deprecated savepoint bookkeeping of a job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SavepointInfo {
    /// Last completed savepoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_savepoint: Option<Savepoint>,
    /// Trigger id of the pending savepoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_id: Option<String>,
    /// Trigger time of the pending savepoint (epoch milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_timestamp: Option<i64>,
    /// Trigger type of the pending savepoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_type: Option<SnapshotTriggerType>,
    /// Format of the pending savepoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format_type: Option<SavepointFormatType>,
    /// Savepoints kept for retention and cleanup, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub savepoint_history: Option<Vec<Savepoint>>,
    /// Time of the last periodic savepoint (epoch milliseconds, default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_periodic_savepoint_timestamp: Option<i64>,
    /// The upgrade savepoint being retried: attempts that failed for a reason that can pass
    /// are retried with back-off within `kubernetes.operator.savepoint.trigger.grace-period`
    /// (an addition of this operator).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_retry: Option<SavepointRetry>,
    /// The highest checkpoint id of the job that its JobManager showed when the pending
    /// stop-with-savepoint was triggered (an addition of this operator). Flink numbers a
    /// job's checkpoints and savepoints in one rising sequence, so the stop's savepoint is
    /// one of a higher id: how it is told apart from an earlier savepoint when the
    /// JobManager no longer keeps the stop's result, without comparing two machines' clocks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_id_at_trigger: Option<i64>,
}

/// Attempts at an upgrade savepoint (an addition of this operator).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SavepointRetry {
    /// The resource generation whose upgrade needs the savepoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// When the first attempt was wanted (epoch milliseconds); the grace period runs from
    /// here.
    pub first_attempt_timestamp: i64,
    /// Attempts that failed so far.
    #[serde(default)]
    pub failures: i32,
    /// Not before this time is the savepoint triggered again (epoch milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_timestamp: Option<i64>,
    /// Why the last attempt failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<String>,
}

/// A completed checkpoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    /// Completion time (epoch milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_stamp: Option<i64>,
    /// What triggered it (default UNKNOWN).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_type: Option<SnapshotTriggerType>,
    /// Checkpoint type (default UNKNOWN).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format_type: Option<CheckpointType>,
    /// The checkpointTriggerNonce that requested it, for manual checkpoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_nonce: Option<i64>,
}

/// Deprecated checkpoint bookkeeping of a job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointInfo {
    /// Last completed checkpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_checkpoint: Option<Checkpoint>,
    /// Trigger id of the pending checkpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_id: Option<String>,
    /// Trigger time of the pending checkpoint (epoch milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_timestamp: Option<i64>,
    /// Trigger type of the pending checkpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_type: Option<SnapshotTriggerType>,
    /// Type of the pending checkpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format_type: Option<CheckpointType>,
    /// Time of the last periodic checkpoint (epoch milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_periodic_checkpoint_timestamp: Option<i64>,
}

string_enum! {
    /// Our addition: where a manual rollback (`flink.apache.org/rollback-to-revision`) stands.
    pub enum RollbackPhase {
        /// The revision's spec was written into the resource; the job is being upgraded to it.
        RollingBack => "RollingBack",
        /// The job runs the revision's spec again.
        RolledBack => "RolledBack",
        /// The request was not carried out (the message says why); nothing changed.
        Refused => "Refused",
        /// The upgrade to the revision's spec failed (the message says why); the job was left
        /// as the update path leaves it.
        Failed => "Failed",
    }
}

/// Our addition: the job's revision history (each spec the operator applied, kept as a
/// ControllerRevision labelled with the resource's kind and name).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevisionStatus {
    /// Number of the revision the job runs or is being upgraded to (also in the
    /// `flink.apache.org/revision` annotation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<i64>,
    /// The latest manual rollback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackStatus>,
}

/// Our addition: a manual rollback to a kept revision.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollbackStatus {
    /// The revision the job ran when the rollback was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<i64>,
    /// The revision asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<i64>,
    /// Name of the ControllerRevision rolled back to (its number changes when the rollback
    /// records it again as the newest revision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision_name: Option<String>,
    /// The state the rolled-back job restores when it is not the one taken as the running
    /// job stops: the state the revision was started from (`flink.apache.org/rollback-restore:
    /// revision`). Cleared when the rollback's start is recorded: from then on the job's
    /// `upgradeSavepointPath` holds it, and it is restored once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore_path: Option<String>,
    /// Where the rollback stands: RollingBack, RolledBack, Refused or Failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<RollbackPhase>,
    /// What happened, or why the rollback was refused or failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the request was decided (epoch milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
}

/// What the operator last deployed, and the last spec that became stable.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconciliationStatus {
    /// Time of the last reconciliation (epoch milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconciliation_timestamp: Option<i64>,
    /// Last reconciled spec, as JSON {"spec":{...},"resource_metadata":{...}}.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_reconciled_spec: Option<String>,
    /// Last spec that was deployed and became stable, same encoding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_stable_spec: Option<String>,
    /// Reconciliation state (default UPGRADING).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<ReconciliationState>,
}

impl ReconciliationStatus {
    /// The last reconciled spec, decoded (`Ok(None)` if never reconciled).
    pub fn last_reconciled_spec<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Result<Option<T>, ReconciledSpecError> {
        decode_optional(self.last_reconciled_spec.as_deref())
    }

    /// The last stable spec, decoded (`Ok(None)` if none is recorded).
    pub fn last_stable_spec<T: serde::de::DeserializeOwned>(&self) -> Result<Option<T>, ReconciledSpecError> {
        decode_optional(self.last_stable_spec.as_deref())
    }

    /// The last reconciled spec with its resource metadata (e.g. `firstDeployment`).
    pub fn last_reconciled<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Result<Option<ReconciledSpec<T>>, ReconciledSpecError> {
        self.last_reconciled_spec
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(ReconciledSpec::decode)
            .transpose()
    }

    /// True while no spec has been reconciled yet.
    pub fn is_before_first_deployment(&self) -> bool {
        self.last_reconciled_spec.as_deref().is_none_or(str::is_empty)
    }
}

fn decode_optional<T: serde::de::DeserializeOwned>(
    raw: Option<&str>,
) -> Result<Option<T>, ReconciledSpecError> {
    raw.filter(|s| !s.is_empty())
        .map(|s| ReconciledSpec::decode(s).map(|r| r.spec))
        .transpose()
}

/// A status condition: this operator keeps `Ready`, `Progressing` and `Degraded`, whose reason
/// is the resource's phase (the Apache operator keeps a single `Running` condition instead).
///
/// All fields are optional, unlike `k8s_openapi`'s `Condition`, so that a status written by
/// another tool never fails to decode.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Condition type: Ready, Progressing or Degraded.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// True, False or Unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// One-word CamelCase reason, e.g. JobManagerReady.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Last time the status changed (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// Generation of the resource the condition was computed for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl Condition {
    /// True when status is "True".
    pub fn is_true(&self) -> bool {
        self.status.as_deref() == Some("True")
    }
}

/// The status fields FlinkDeployment and FlinkSessionJob share (what records a job's
/// lifecycle), read and written by code that serves both.
pub trait LifecycleStatus: Clone + Default {
    /// Last observed job status.
    fn job_status(&self) -> Option<&JobStatus>;
    fn job_status_mut(&mut self) -> &mut JobStatus;
    /// Reconciliation bookkeeping.
    fn reconciliation(&self) -> Option<&ReconciliationStatus>;
    fn reconciliation_mut(&mut self) -> &mut Option<ReconciliationStatus>;
    /// The job's revision history and latest manual rollback.
    fn revision(&self) -> Option<&RevisionStatus>;
    fn revision_mut(&mut self) -> &mut RevisionStatus;
    fn conditions(&self) -> Option<&Vec<Condition>>;
    fn conditions_mut(&mut self) -> &mut Option<Vec<Condition>>;
    /// Error reported by the operator, if any.
    fn error(&self) -> Option<&str>;
    fn error_mut(&mut self) -> &mut Option<String>;
    /// Derived lifecycle state.
    fn lifecycle_state(&self) -> Option<ResourceLifecycleState>;
    fn lifecycle_state_mut(&mut self) -> &mut Option<ResourceLifecycleState>;
    /// Generation of the last reconciled spec.
    fn observed_generation(&self) -> Option<i64>;
    fn observed_generation_mut(&mut self) -> &mut Option<i64>;
}

/// Implements [`LifecycleStatus`] for a status struct with the shared fields.
macro_rules! lifecycle_status {
    ($status:ty) => {
        impl $crate::common::LifecycleStatus for $status {
            fn job_status(&self) -> Option<&$crate::common::JobStatus> {
                self.job_status.as_ref()
            }
            fn job_status_mut(&mut self) -> &mut $crate::common::JobStatus {
                self.job_status.get_or_insert_with(Default::default)
            }
            fn reconciliation(&self) -> Option<&$crate::common::ReconciliationStatus> {
                self.reconciliation_status.as_ref()
            }
            fn reconciliation_mut(&mut self) -> &mut Option<$crate::common::ReconciliationStatus> {
                &mut self.reconciliation_status
            }
            fn revision(&self) -> Option<&$crate::common::RevisionStatus> {
                self.revision.as_ref()
            }
            fn revision_mut(&mut self) -> &mut $crate::common::RevisionStatus {
                self.revision.get_or_insert_with(Default::default)
            }
            fn conditions(&self) -> Option<&Vec<$crate::common::Condition>> {
                self.conditions.as_ref()
            }
            fn conditions_mut(&mut self) -> &mut Option<Vec<$crate::common::Condition>> {
                &mut self.conditions
            }
            fn error(&self) -> Option<&str> {
                self.error.as_deref()
            }
            fn error_mut(&mut self) -> &mut Option<String> {
                &mut self.error
            }
            fn lifecycle_state(&self) -> Option<$crate::common::ResourceLifecycleState> {
                self.lifecycle_state
            }
            fn lifecycle_state_mut(&mut self) -> &mut Option<$crate::common::ResourceLifecycleState> {
                &mut self.lifecycle_state
            }
            fn observed_generation(&self) -> Option<i64> {
                self.observed_generation
            }
            fn observed_generation_mut(&mut self) -> &mut Option<i64> {
                &mut self.observed_generation
            }
        }
    };
}
pub(crate) use lifecycle_status;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flink_versions_order_and_support() {
        assert!(FlinkVersion::V2_0 > FlinkVersion::V1_20);
        assert!(!FlinkVersion::V1_14.is_supported());
        assert!(FlinkVersion::V1_15.is_supported());
        assert!(FlinkVersion::V1_16.is_deprecated());
        assert!(!FlinkVersion::V1_19.is_deprecated());
        assert_eq!(FlinkVersion::V1_20.dotted(), "1.20");
        assert_eq!("v2_1".parse::<FlinkVersion>(), Ok(FlinkVersion::V2_1));
        assert!("v9_9".parse::<FlinkVersion>().is_err());
        let mut sorted = FlinkVersion::ALL.to_vec();
        sorted.sort();
        assert_eq!(sorted, FlinkVersion::ALL);
    }

    #[test]
    fn enum_spellings_match_the_apache_operator() {
        let json = |v: &dyn erased::Ser| v.to_json();
        assert_eq!(json(&UpgradeMode::LastState), "\"last-state\"");
        assert_eq!(json(&JobState::Suspended), "\"suspended\"");
        assert_eq!(json(&KubernetesDeploymentMode::Standalone), "\"standalone\"");
        assert_eq!(json(&ReconciliationState::RollingBack), "\"ROLLING_BACK\"");
        assert_eq!(json(&ResourceLifecycleState::RolledBack), "\"ROLLED_BACK\"");
        assert_eq!(json(&SavepointFormatType::Canonical), "\"CANONICAL\"");
        assert_eq!(json(&FlinkVersion::V1_13), "\"v1_13\"");
        assert_eq!(UpgradeMode::default(), UpgradeMode::Stateless);
        assert_eq!(JobState::default(), JobState::Running);
    }

    mod erased {
        pub trait Ser {
            fn to_json(&self) -> String;
        }
        impl<T: serde::Serialize> Ser for T {
            fn to_json(&self) -> String {
                serde_json::to_string(self).expect("serializes")
            }
        }
    }

    #[test]
    fn job_state_is_free_text() {
        let s: JobStatus = serde_json::from_str(r#"{"state":"SOME_FUTURE_STATE"}"#).expect("decodes");
        assert_eq!(s.state(), Some(&FlinkJobState::Other("SOME_FUTURE_STATE".into())));
        assert!(!s.is_running());
        assert!(FlinkJobState::from("FINISHED").is_globally_terminal());
    }

    #[test]
    fn job_states_travel_as_flinks_text() {
        let json = |state: &FlinkJobState| serde_json::to_string(state).expect("serializes");
        for state in FlinkJobState::KNOWN {
            let text = state.as_str();
            assert_eq!(FlinkJobState::from(text), state);
            assert_eq!(text.parse::<FlinkJobState>(), Ok(state.clone()));
            assert_eq!(state.to_string(), text);
            assert_eq!(json(&state), format!("\"{text}\""));
            assert_eq!(
                serde_json::from_str::<FlinkJobState>(&json(&state)).expect("decodes"),
                state
            );
        }
        let newer = FlinkJobState::from("SOME_FUTURE_STATE");
        assert_eq!(newer, FlinkJobState::Other("SOME_FUTURE_STATE".into()));
        assert_eq!(newer.to_string(), "SOME_FUTURE_STATE");
        assert_eq!(json(&newer), "\"SOME_FUTURE_STATE\"");
        assert_eq!(
            FlinkJobState::from("running"),
            FlinkJobState::Other("running".into())
        );
        let terminal: Vec<_> = FlinkJobState::KNOWN
            .into_iter()
            .filter(FlinkJobState::is_globally_terminal)
            .collect();
        assert_eq!(
            terminal,
            [
                FlinkJobState::Failed,
                FlinkJobState::Canceled,
                FlinkJobState::Finished
            ]
        );
        assert!(!newer.is_globally_terminal());
    }
}
