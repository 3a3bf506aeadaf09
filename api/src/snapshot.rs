//! FlinkStateSnapshot: a savepoint or checkpoint of a job, as a resource.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::SavepointFormatType;
use crate::string_enum::string_enum;

/// Desired snapshot: which job, and savepoint or checkpoint.
// Each printcolumn repeats `type_ = "string"`, which clippy mistakes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "flink.apache.org",
    version = "v1beta1",
    kind = "FlinkStateSnapshot",
    namespaced,
    status = "FlinkStateSnapshotStatus",
    shortname = "flinksnp",
    category = "flink",
    derive = "PartialEq",
    derive = "Default",
    doc = "A savepoint or checkpoint of a FlinkDeployment or FlinkSessionJob job.",
    printcolumn(
        name = "Path",
        type_ = "string",
        json_path = ".status.path",
        description = "Location of the completed snapshot."
    ),
    printcolumn(
        name = "Result Timestamp",
        type_ = "string",
        json_path = ".status.resultTimestamp",
        description = "Time the snapshot completed or failed."
    ),
    printcolumn(
        name = "Snapshot State",
        type_ = "string",
        json_path = ".status.state",
        description = "State of the snapshot."
    ),
    printcolumn(
        name = "Type",
        type_ = "string",
        json_path = ".metadata.labels.snapshot\\.type",
        description = "SAVEPOINT or CHECKPOINT (the snapshot.type label the operator sets)."
    ),
    printcolumn(
        name = "Job Kind",
        type_ = "string",
        json_path = ".spec.jobReference.kind",
        description = "Kind of the job resource.",
        priority = 1
    ),
    printcolumn(
        name = "Job",
        type_ = "string",
        json_path = ".spec.jobReference.name",
        description = "Name of the job resource."
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct FlinkStateSnapshotSpec {
    /// The job resource to snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_reference: Option<JobReference>,
    /// Take (or record) a savepoint; exactly one of savepoint and checkpoint must be set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub savepoint: Option<SavepointSpec>,
    /// Take a checkpoint; exactly one of savepoint and checkpoint must be set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointSpec>,
    /// Retries after a failed trigger (default -1: unlimited; 0: no retry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
}

impl FlinkStateSnapshotSpec {
    /// Whether deleting the snapshot disposes of its savepoint (`savepoint.disposeOnDelete`,
    /// true unless set; a checkpoint is never disposed of).
    pub fn disposes_on_deletion(&self) -> bool {
        self.snapshot_type() == Some(SnapshotType::Savepoint)
            && (self.savepoint.as_ref())
                .and_then(|s| s.dispose_on_delete)
                .unwrap_or(true)
    }

    /// Savepoint or checkpoint, by which of the two is set (savepoint wins if both are).
    pub fn snapshot_type(&self) -> Option<SnapshotType> {
        match (&self.savepoint, &self.checkpoint) {
            (Some(_), _) => Some(SnapshotType::Savepoint),
            (None, Some(_)) => Some(SnapshotType::Checkpoint),
            (None, None) => None,
        }
    }

    /// True for a savepoint snapshot.
    pub fn is_savepoint(&self) -> bool {
        self.savepoint.is_some()
    }

    /// True for a checkpoint snapshot.
    pub fn is_checkpoint(&self) -> bool {
        self.savepoint.is_none() && self.checkpoint.is_some()
    }
}

string_enum! {
    /// Kind of the job resource: FlinkDeployment or FlinkSessionJob.
    pub enum JobKind {
        /// An application FlinkDeployment.
        FlinkDeployment => "FlinkDeployment",
        /// A FlinkSessionJob.
        FlinkSessionJob => "FlinkSessionJob",
    }
}

/// Reference to the job resource of a snapshot.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobReference {
    /// FlinkDeployment or FlinkSessionJob.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<JobKind>,
    /// Name of the job resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace of the job resource; must be the snapshot's own (defaulted to it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Savepoint settings of a snapshot.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SavepointSpec {
    /// Target directory, or the existing savepoint when alreadyExists (default: the job's savepoint directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Savepoint format (default CANONICAL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format_type: Option<SavepointFormatType>,
    /// Dispose of the savepoint data when this resource is deleted (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispose_on_delete: Option<bool>,
    /// Record an existing savepoint at path instead of taking one (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_exists: Option<bool>,
}

/// Checkpoint settings of a snapshot (none yet: an empty object requests a checkpoint).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointSpec {}

string_enum! {
    /// Savepoint or checkpoint (value of the `snapshot.type` label).
    pub enum SnapshotType {
        /// A savepoint.
        Savepoint => "SAVEPOINT",
        /// A checkpoint.
        Checkpoint => "CHECKPOINT",
    }
}

impl SnapshotType {
    /// The word for it in a message: `savepoint` or `checkpoint`.
    pub fn name(self) -> &'static str {
        match self {
            SnapshotType::Savepoint => "savepoint",
            SnapshotType::Checkpoint => "checkpoint",
        }
    }
}

string_enum! {
    /// State of the snapshot (default TRIGGER_PENDING).
    #[derive(Default)]
    pub enum FlinkStateSnapshotState {
        /// The snapshot completed; status.path holds its location.
        Completed => "COMPLETED",
        /// The snapshot failed and will not be retried.
        Failed => "FAILED",
        /// The snapshot was triggered and is in progress.
        InProgress => "IN_PROGRESS",
        /// The snapshot is waiting to be triggered.
        #[default]
        TriggerPending => "TRIGGER_PENDING",
        /// The job went away before the snapshot could be taken.
        Abandoned => "ABANDONED",
    }
}

impl FlinkStateSnapshotState {
    /// The state a snapshot's status says it is in (a fresh one: TRIGGER_PENDING).
    pub fn of(status: Option<&FlinkStateSnapshotStatus>) -> Self {
        status.and_then(|s| s.state).unwrap_or_default()
    }

    /// States after which the snapshot never changes.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Abandoned)
    }
}

/// Last observed status of a snapshot.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlinkStateSnapshotStatus {
    /// State of the snapshot (default TRIGGER_PENDING).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<FlinkStateSnapshotState>,
    /// Flink trigger id of the snapshot in progress.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_id: Option<String>,
    /// Time the snapshot was triggered (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_timestamp: Option<String>,
    /// Time the snapshot completed or failed (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_timestamp: Option<String>,
    /// Location of the completed snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Error of the last failed attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Number of failed attempts (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures: Option<i32>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn empty_checkpoint_object_round_trips() {
        let raw = json!({"jobReference": {"kind": "FlinkDeployment", "name": "job"}, "checkpoint": {}});
        let spec: FlinkStateSnapshotSpec = serde_json::from_value(raw.clone()).expect("decodes");
        assert_eq!(spec.snapshot_type(), Some(SnapshotType::Checkpoint));
        assert!(spec.is_checkpoint());
        assert_eq!(serde_json::to_value(&spec).expect("encodes"), raw);
    }

    #[test]
    fn unknown_checkpoint_options_are_ignored() {
        let spec: FlinkStateSnapshotSpec =
            serde_json::from_value(json!({"checkpoint": {"future": 1}})).expect("decodes");
        assert_eq!(spec.checkpoint, Some(CheckpointSpec {}));
    }
}
