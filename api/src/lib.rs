//! `flink.apache.org/v1beta1` custom resources, as Rust types.
//!
//! The four kinds of the Apache Flink Kubernetes Operator — [`FlinkDeployment`],
//! [`FlinkSessionJob`], [`FlinkStateSnapshot`] and [`FlinkBlueGreenDeployment`] — with the
//! same field names, enum spellings and defaults, so that manifests and status written for
//! the Apache operator decode here unchanged. Our additions are optional fields only.
//!
//! Serialization rules, shared by every type:
//! - every optional field is `Option<T>` and skipped when `None`, and no serde default ever
//!   materializes a field the user did not write, so `decode -> encode` is lossless;
//! - documented defaults live in [`defaults`] as constants and `*_or_default()` accessors,
//!   not in serde, because defaulting on read would make a diff against the stored object
//!   show fields nobody set;
//! - unknown fields are ignored (never `deny_unknown_fields`), as the Apache operator does.
//!
//! Free-form fields keep the user's JSON tree: `flinkConfiguration` is a [`FlinkConfiguration`]
//! (nested values allowed; [`FlinkConfiguration::flattened`] gives Flink's flat view) and every
//! `podTemplate` is a [`PodTemplate`] (raw JSON with typed accessors; see [`pod_template`] for
//! why it is not `k8s_openapi`'s `PodSpec`). Both are `x-kubernetes-preserve-unknown-fields`
//! in the CRDs.
//!
//! Other modules: [`keys`] (labels, annotations, finalizers, configuration keys),
//! [`reconciled_spec`] (the `lastReconciledSpec` encoding) and [`crd`] (CRD generation for the
//! Helm chart and the `crd` CLI command).

pub mod blue_green;
pub mod common;
pub mod config;
pub mod crd;
pub mod defaults;
pub mod deployment;
pub mod ingress;
pub mod json_size;
pub mod keys;
pub mod operator_config;
pub mod options;
pub mod pod_template;
pub mod reconciled_spec;
pub mod session_job;
pub mod snapshot;
pub mod validation;

mod string_enum;

pub use blue_green::{
    BlueGreenDeploymentType, BlueGreenTransition, FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentSpec,
    FlinkBlueGreenDeploymentState, FlinkBlueGreenDeploymentStatus, FlinkDeploymentTemplateSpec,
    TransitionMode,
};
pub use common::{
    Checkpoint, CheckpointInfo, CheckpointType, Condition, FlinkJobState, FlinkSpec, FlinkVersion,
    IngressSpec, JobManagerSpec, JobSpec, JobState, JobStatus, KubernetesDeploymentMode, LifecycleStatus,
    ReconciliationState, ReconciliationStatus, Resource, ResourceLifecycleState, RevisionStatus,
    RollbackPhase, RollbackStatus, Savepoint, SavepointFormatType, SavepointInfo, SavepointRetry,
    SnapshotTriggerType, TaskManagerSpec, UpgradeMode,
};
pub use config::FlinkConfiguration;
pub use deployment::{
    FlinkDeployment, FlinkDeploymentSpec, FlinkDeploymentStatus, JobManagerDeploymentStatus, TaskManagerInfo,
};
pub use pod_template::PodTemplate;
pub use reconciled_spec::{ReconciledSpec, ReconciledSpecError, ResourceMetadata};
pub use session_job::{FlinkSessionJob, FlinkSessionJobSpec, FlinkSessionJobStatus};
pub use snapshot::{
    CheckpointSpec, FlinkStateSnapshot, FlinkStateSnapshotSpec, FlinkStateSnapshotState,
    FlinkStateSnapshotStatus, JobKind, JobReference, SavepointSpec, SnapshotType,
};
