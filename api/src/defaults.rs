//! Documented defaults of optional fields, as constants and `*_or_default()` accessors.
//!
//! Defaults are applied on read, never by serde, so the stored object keeps only what the
//! user wrote (see the crate docs). Each constant matches the Apache operator's default.

use crate::blue_green::{FlinkBlueGreenDeploymentSpec, TransitionMode};
use crate::common::{
    JobManagerSpec, JobSpec, JobState, KubernetesDeploymentMode, ReconciliationState, ReconciliationStatus,
    SavepointFormatType, UpgradeMode,
};
use crate::deployment::{FlinkDeploymentSpec, FlinkDeploymentStatus, JobManagerDeploymentStatus};
use crate::snapshot::{
    FlinkStateSnapshotSpec, FlinkStateSnapshotState, FlinkStateSnapshotStatus, SavepointSpec,
};

/// `job.upgradeMode` when unset.
pub const UPGRADE_MODE: UpgradeMode = UpgradeMode::Stateless;
/// `job.state` when unset.
pub const JOB_STATE: JobState = JobState::Running;
/// `job.parallelism` when unset (0: taken from the configuration or the TaskManager slots).
pub const PARALLELISM: i32 = 0;
/// `jobManager.replicas` when unset.
pub const JOB_MANAGER_REPLICAS: i32 = 1;
/// `mode` when unset.
pub const DEPLOYMENT_MODE: KubernetesDeploymentMode = KubernetesDeploymentMode::Native;
/// `savepoint.formatType` of a FlinkStateSnapshot when unset.
pub const SAVEPOINT_FORMAT_TYPE: SavepointFormatType = SavepointFormatType::Canonical;
/// `savepoint.disposeOnDelete` of a FlinkStateSnapshot when unset.
pub const DISPOSE_ON_DELETE: bool = true;
/// `savepoint.alreadyExists` of a FlinkStateSnapshot when unset.
pub const ALREADY_EXISTS: bool = false;
/// `backoffLimit` of a FlinkStateSnapshot when unset (-1: retry without limit).
pub const BACKOFF_LIMIT: i32 = -1;
/// `transitionMode` of a FlinkBlueGreenDeployment when unset (also the CRD schema default).
pub const TRANSITION_MODE: TransitionMode = TransitionMode::Basic;
/// `status.reconciliationStatus.state` when unset.
pub const RECONCILIATION_STATE: ReconciliationState = ReconciliationState::Upgrading;
/// `status.jobManagerDeploymentStatus` when unset.
pub const JOB_MANAGER_DEPLOYMENT_STATUS: JobManagerDeploymentStatus = JobManagerDeploymentStatus::Missing;
/// `status.state` of a FlinkStateSnapshot when unset.
pub const SNAPSHOT_STATE: FlinkStateSnapshotState = FlinkStateSnapshotState::TriggerPending;
/// `status.failures` of a FlinkStateSnapshot when unset.
pub const SNAPSHOT_FAILURES: i32 = 0;

impl JobSpec {
    /// `upgradeMode`, or stateless.
    pub fn upgrade_mode_or_default(&self) -> UpgradeMode {
        self.upgrade_mode.unwrap_or(UPGRADE_MODE)
    }

    /// `state`, or running.
    pub fn state_or_default(&self) -> JobState {
        self.state.unwrap_or(JOB_STATE)
    }

    /// `parallelism`, or 0.
    pub fn parallelism_or_default(&self) -> i32 {
        self.parallelism.unwrap_or(PARALLELISM)
    }

    /// `args`, or none.
    pub fn args_or_default(&self) -> &[String] {
        self.args.as_deref().unwrap_or_default()
    }
}

impl JobManagerSpec {
    /// `replicas`, or 1.
    pub fn replicas_or_default(&self) -> i32 {
        self.replicas.unwrap_or(JOB_MANAGER_REPLICAS)
    }
}

impl FlinkDeploymentSpec {
    /// `mode`, or native.
    pub fn mode_or_default(&self) -> KubernetesDeploymentMode {
        self.mode.unwrap_or(DEPLOYMENT_MODE)
    }

    /// `jobManager.replicas`, or 1.
    pub fn job_manager_replicas_or_default(&self) -> i32 {
        self.job_manager
            .as_ref()
            .map_or(JOB_MANAGER_REPLICAS, JobManagerSpec::replicas_or_default)
    }
}

impl SavepointSpec {
    /// `formatType`, or CANONICAL.
    pub fn format_type_or_default(&self) -> SavepointFormatType {
        self.format_type.unwrap_or(SAVEPOINT_FORMAT_TYPE)
    }

    /// `disposeOnDelete`, or true.
    pub fn dispose_on_delete_or_default(&self) -> bool {
        self.dispose_on_delete.unwrap_or(DISPOSE_ON_DELETE)
    }

    /// `alreadyExists`, or false.
    pub fn already_exists_or_default(&self) -> bool {
        self.already_exists.unwrap_or(ALREADY_EXISTS)
    }
}

impl FlinkStateSnapshotSpec {
    /// `backoffLimit`, or -1 (unlimited).
    pub fn backoff_limit_or_default(&self) -> i32 {
        self.backoff_limit.unwrap_or(BACKOFF_LIMIT)
    }
}

impl FlinkStateSnapshotStatus {
    /// `state`, or TRIGGER_PENDING.
    pub fn state_or_default(&self) -> FlinkStateSnapshotState {
        self.state.unwrap_or(SNAPSHOT_STATE)
    }

    /// `failures`, or 0.
    pub fn failures_or_default(&self) -> i32 {
        self.failures.unwrap_or(SNAPSHOT_FAILURES)
    }
}

impl FlinkBlueGreenDeploymentSpec {
    /// `transitionMode`, or BASIC.
    pub fn transition_mode_or_default(&self) -> TransitionMode {
        self.transition_mode.unwrap_or(TRANSITION_MODE)
    }
}

impl ReconciliationStatus {
    /// `state`, or UPGRADING.
    pub fn state_or_default(&self) -> ReconciliationState {
        self.state.unwrap_or(RECONCILIATION_STATE)
    }
}

impl FlinkDeploymentStatus {
    /// `jobManagerDeploymentStatus`, or MISSING.
    pub fn job_manager_deployment_status_or_default(&self) -> JobManagerDeploymentStatus {
        self.job_manager_deployment_status
            .unwrap_or(JOB_MANAGER_DEPLOYMENT_STATUS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_fields_read_as_the_apache_defaults() {
        let job = JobSpec::default();
        assert_eq!(job.upgrade_mode_or_default(), UpgradeMode::Stateless);
        assert_eq!(job.state_or_default(), JobState::Running);
        assert_eq!(job.parallelism_or_default(), 0);
        assert!(job.args_or_default().is_empty());
        assert_eq!(
            FlinkDeploymentSpec::default().job_manager_replicas_or_default(),
            1
        );
        assert_eq!(
            FlinkDeploymentSpec::default().mode_or_default(),
            KubernetesDeploymentMode::Native
        );
        let sp = SavepointSpec::default();
        assert_eq!(sp.format_type_or_default(), SavepointFormatType::Canonical);
        assert!(sp.dispose_on_delete_or_default());
        assert!(!sp.already_exists_or_default());
        assert_eq!(FlinkStateSnapshotSpec::default().backoff_limit_or_default(), -1);
        assert_eq!(
            FlinkStateSnapshotStatus::default().state_or_default(),
            FlinkStateSnapshotState::TriggerPending
        );
        assert_eq!(
            FlinkBlueGreenDeploymentSpec::default().transition_mode_or_default(),
            TransitionMode::Basic
        );
        assert_eq!(
            ReconciliationStatus::default().state_or_default(),
            ReconciliationState::Upgrading
        );
        assert_eq!(
            FlinkDeploymentStatus::default().job_manager_deployment_status_or_default(),
            JobManagerDeploymentStatus::Missing
        );
    }

    #[test]
    fn set_fields_win() {
        let job = JobSpec {
            upgrade_mode: Some(UpgradeMode::Savepoint),
            ..Default::default()
        };
        assert_eq!(job.upgrade_mode_or_default(), UpgradeMode::Savepoint);
    }
}
