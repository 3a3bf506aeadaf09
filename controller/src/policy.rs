//! The operator settings that steer a job's lifecycle, read once per reconcile from the
//! resource's effective configuration (operator defaults, overlays, its own keys) so that
//! `decide` stays pure.

pub mod autoscaler;
mod health;

use std::collections::BTreeMap;

use flink_operator_api::{
    keys::{flink, operator},
    options::{defaults as option_defaults, parse_bool, read, schedule::Schedule},
    validation::limits::PlatformLimits,
};

pub use health::HealthSettings;

use crate::flink::{CheckpointKind, SavepointFormat};

/// How a cluster's Deployments are deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeletionPropagation {
    /// The Deployments go at once; the garbage collector removes what they own after them.
    Background,
    /// Each Deployment goes once what it owns is gone.
    Foreground,
}

/// How a cluster's scheduler rescales a running job without a new job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rescaler {
    /// The adaptive scheduler (`jobmanager.scheduler: adaptive`): the job's resource
    /// requirements are changed through the REST API (Flink 1.18 or later).
    Adaptive,
    /// Reactive mode (`scheduler-mode: reactive`, standalone): the job uses every slot there
    /// is, so the TaskManagers' replicas are its parallelism.
    Reactive,
}

impl Rescaler {
    fn of(config: &BTreeMap<String, String>) -> Option<Self> {
        let is = |key: &str, value: &str| {
            config
                .get(key)
                .is_some_and(|v| v.trim().eq_ignore_ascii_case(value))
        };
        if is(flink::SCHEDULER_MODE, "reactive") {
            Some(Rescaler::Reactive)
        } else if is(flink::JOBMANAGER_SCHEDULER, "adaptive") {
            Some(Rescaler::Adaptive)
        } else {
            None
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Stop a running job with a savepoint for an upgrade (`job.upgrade.take-savepoint`).
    pub take_savepoint: bool,
    /// A savepoint this young may stand in for a new one when the job is not running.
    pub savepoint_max_age_ms: Option<i64>,
    /// State older than this is never restored.
    pub restore_max_state_age_ms: Option<i64>,
    /// Resubmit FAILED jobs.
    pub restart_failed: bool,
    /// Stop the job with a savepoint when the resource is deleted; unset, a job in
    /// `savepoint` mode is (see [`Policy::savepoint_on_deletion`]).
    pub savepoint_on_deletion_set: Option<bool>,
    /// Drain when stopping with a savepoint.
    pub drain: bool,
    /// When periodic savepoints fall due; `None` when off.
    pub periodic_savepoint: Option<Schedule>,
    /// When periodic checkpoints fall due; `None` when off.
    pub periodic_checkpoint: Option<Schedule>,
    /// The format of the savepoints the operator takes (`savepoint.format.type`).
    pub savepoint_format: SavepointFormat,
    /// The type of the checkpoints the operator asks for (`checkpoint.type`).
    pub checkpoint_type: CheckpointKind,
    /// How a cluster's Deployments are deleted (`resource.deletion.propagation`).
    pub deletion_propagation: DeletionPropagation,
    /// A savepoint change of a job that is not running keeps its last state when its cluster
    /// holds a checkpoint (`job.upgrade.last-state-fallback.enabled`).
    pub last_state_fallback: bool,
    /// A last-state change of a running job whose latest checkpoint is older than this takes
    /// a savepoint instead (`job.upgrade.last-state.max.allowed.checkpoint.age`).
    pub last_state_max_checkpoint_age_ms: Option<i64>,
    pub history_cleanup: bool,
    /// `kubernetes.operator.snapshot.resource.enabled`, in the job's configuration and the
    /// operator's (see [`Policy::with_snapshot_loop`]): the job's savepoints and checkpoints
    /// are recorded as FlinkStateSnapshot resources rather than in its status only.
    pub snapshot_resources: bool,
    /// `kubernetes.operator.savepoint.dispose-on-delete`: of the savepoint resources the
    /// operator creates.
    pub dispose_on_delete: bool,
    /// `kubernetes.operator.savepoint.history.include-manual`: the retention also removes
    /// MANUAL snapshot resources.
    pub history_include_manual: bool,
    /// Checkpoint resources kept by the retention: `execution.checkpointing.num-retained`
    /// (formerly `state.checkpoints.num-retained`), at least 1.
    pub checkpoints_retained: usize,
    pub history_max_count: usize,
    pub history_max_age_ms: i64,
    /// The platform's cap on the job's FlinkStateSnapshot resources of each snapshot type,
    /// whatever their trigger (`kubernetes.operator.snapshot.resource.max.count`).
    pub snapshot_max_count: usize,
    /// The platform's cap on their age (`kubernetes.operator.snapshot.resource.max.age`).
    pub snapshot_max_age_ms: i64,
    /// A session cluster is not deleted while FlinkSessionJobs still use it.
    pub block_on_session_jobs: bool,
    /// A session cluster is kept while it runs jobs no FlinkSessionJob manages.
    pub block_on_unmanaged_jobs: bool,
    /// `kubernetes.operator.deployment.rollback.enabled`: a deployed spec that does not become
    /// stable within `readiness_timeout_ms` is rolled back to the last stable one.
    pub rollback_enabled: bool,
    /// `kubernetes.operator.deployment.readiness.timeout` (default 5 min).
    pub readiness_timeout_ms: i64,
    /// `kubernetes.operator.jm-deployment-recovery.enabled` (default true): a JobManager
    /// Deployment that went missing is deployed again.
    pub jm_recovery: bool,
    /// `kubernetes.operator.jm-deployment.shutdown-ttl` (default 1 day): how long the
    /// JobManager of a job that ended keeps running.
    pub shutdown_ttl_ms: i64,
    /// `kubernetes.operator.job.upgrade.ignore-pending-savepoint` (default false): a change
    /// of the spec does not wait for a pending manual or periodic snapshot.
    pub ignore_pending_savepoint: bool,
    /// `kubernetes.operator.job.upgrade.inplace-scaling.enabled` (default true): a change of
    /// parallelism alone is applied in place where Flink can (see [`Rescaler`]).
    pub in_place_scaling: bool,
    /// How the cluster's scheduler rescales a running job, if it can.
    pub rescaler: Option<Rescaler>,
    /// `taskmanager.numberOfTaskSlots` (default 1).
    pub task_slots: i64,
    /// The job autoscaler's options (`job.autoscaler.*`).
    pub autoscaler: crate::policy::autoscaler::AutoscalerOptions,
    /// Whether high availability is configured (`high-availability.type`).
    pub high_availability: bool,
    /// Where Flink writes savepoints it is not given a directory for
    /// (`execution.checkpointing.savepoint-dir`, formerly `state.savepoints.dir`): the
    /// operator's stops-with-savepoint need it.
    pub savepoint_dir: Option<String>,
    /// The job's effective configuration (the operator's defaults, a session job's session
    /// cluster, the resource) sets `execution.checkpointing.externalized-checkpoint-retention`
    /// itself: a session job's submission leaves it as set instead of asking for
    /// RETAIN_ON_CANCELLATION.
    pub checkpoint_retention_set: bool,
    /// How soon a resource with nothing in progress is looked at again
    /// (`kubernetes.operator.reconcile.interval`, default 60 s as in the Apache operator).
    pub reconcile_interval_ms: i64,
    /// How soon a resource with something in progress (a cluster starting, a savepoint
    /// pending) is looked at again (`kubernetes.operator.observer.progress-check.interval`,
    /// default 10 s).
    pub progress_check_ms: i64,
    /// How long an upgrade keeps retrying a savepoint that failed for a reason that can pass
    /// (`kubernetes.operator.savepoint.trigger.grace-period`, default 1 min).
    pub savepoint_grace_ms: i64,
    /// How many revisions of the job are kept (`kubernetes.operator.job.revision-history.limit`,
    /// default 10, at least 1; see [`crate::lifecycle::revisions::prune`]).
    pub revision_history_limit: usize,
    /// `kubernetes.operator.cluster.health-check.*` of an application deployment; None
    /// when the check is off (and nothing of it is read from the job).
    pub health: Option<HealthSettings>,
}

impl Default for Policy {
    /// The defaults of [`flink_operator_api::options::defaults`], which the configuration
    /// reference states.
    fn default() -> Self {
        Policy {
            take_savepoint: option_defaults::JOB_UPGRADE_TAKE_SAVEPOINT,
            savepoint_max_age_ms: None,
            restore_max_state_age_ms: None,
            restart_failed: option_defaults::JOB_RESTART_FAILED,
            savepoint_on_deletion_set: None,
            drain: option_defaults::JOB_DRAIN_ON_SAVEPOINT_DELETION,
            periodic_savepoint: None,
            periodic_checkpoint: None,
            savepoint_format: SavepointFormat::Canonical,
            checkpoint_type: CheckpointKind::Full,
            deletion_propagation: DeletionPropagation::Background,
            last_state_fallback: option_defaults::JOB_UPGRADE_LAST_STATE_FALLBACK_ENABLED,
            last_state_max_checkpoint_age_ms: None,
            history_cleanup: option_defaults::SAVEPOINT_CLEANUP_ENABLED,
            snapshot_resources: option_defaults::SNAPSHOT_RESOURCE_ENABLED,
            dispose_on_delete: option_defaults::SAVEPOINT_DISPOSE_ON_DELETE,
            history_include_manual: option_defaults::SAVEPOINT_HISTORY_INCLUDE_MANUAL,
            checkpoints_retained: 1,
            history_max_count: option_defaults::SAVEPOINT_HISTORY_MAX_COUNT,
            history_max_age_ms: option_defaults::SAVEPOINT_HISTORY_MAX_AGE_MS,
            snapshot_max_count: option_defaults::SNAPSHOT_RESOURCE_MAX_COUNT,
            snapshot_max_age_ms: option_defaults::SNAPSHOT_RESOURCE_MAX_AGE_MS,
            block_on_session_jobs: option_defaults::SESSION_DELETION_BLOCK_ON_SESSION_JOBS,
            block_on_unmanaged_jobs: option_defaults::SESSION_DELETION_BLOCK_ON_UNMANAGED_JOBS,
            rollback_enabled: option_defaults::DEPLOYMENT_ROLLBACK_ENABLED,
            readiness_timeout_ms: option_defaults::DEPLOYMENT_READINESS_TIMEOUT_MS,
            jm_recovery: option_defaults::JM_DEPLOYMENT_RECOVERY_ENABLED,
            shutdown_ttl_ms: option_defaults::JM_DEPLOYMENT_SHUTDOWN_TTL_MS,
            ignore_pending_savepoint: option_defaults::JOB_UPGRADE_IGNORE_PENDING_SAVEPOINT,
            in_place_scaling: option_defaults::JOB_UPGRADE_INPLACE_SCALING_ENABLED,
            rescaler: None,
            task_slots: 1,
            autoscaler: Default::default(),
            high_availability: false,
            savepoint_dir: None,
            checkpoint_retention_set: false,
            reconcile_interval_ms: option_defaults::RECONCILE_INTERVAL_MS,
            progress_check_ms: option_defaults::PROGRESS_CHECK_INTERVAL_MS,
            savepoint_grace_ms: option_defaults::SAVEPOINT_TRIGGER_GRACE_PERIOD_MS,
            revision_history_limit: option_defaults::JOB_REVISION_HISTORY_LIMIT,
            health: None,
        }
    }
}

impl Policy {
    /// Whether deleting a job of `mode` stops it with a savepoint first: as configured, else
    /// in `savepoint` mode (the user chose to carry state in savepoints; deleting the
    /// resource should not be the one time that state is dropped).
    pub fn savepoint_on_deletion(&self, mode: flink_operator_api::common::UpgradeMode) -> bool {
        self.savepoint_on_deletion_set
            .unwrap_or(mode == flink_operator_api::common::UpgradeMode::Savepoint)
    }

    /// Snapshot resources only where the FlinkStateSnapshot loop runs (the operator's
    /// configuration may switch it off): a resource nothing reconciles would never be taken.
    /// The policy of a cluster of Flink `version`: the adaptive scheduler takes new resource
    /// requirements from Flink 1.18 on.
    pub fn with_flink_version(mut self, version: Option<flink_operator_api::common::FlinkVersion>) -> Self {
        let adaptive_rescales =
            version.is_some_and(|v| v.is_at_least(flink_operator_api::common::FlinkVersion::V1_18));
        if self.rescaler == Some(Rescaler::Adaptive) && !adaptive_rescales {
            self.rescaler = None;
        }
        self
    }

    pub fn with_snapshot_loop(mut self, snapshot_loop: bool) -> Self {
        self.snapshot_resources &= snapshot_loop;
        self
    }

    /// The policy held to the platform's limits (read from the operator configuration and its
    /// namespace overlay, never from the resource): intervals raised to their floors, periodic
    /// snapshots never closer than theirs, the history within its thresholds, and the snapshot
    /// resources within their caps. The webhook refuses a spec beyond them; this holds one it
    /// did not judge, which the rules also report (the resource is then Invalid, with a status
    /// error and a ValidationError Event).
    pub fn with_limits(mut self, limits: &PlatformLimits) -> Self {
        self.reconcile_interval_ms = self.reconcile_interval_ms.max(limits.reconcile_interval_min_ms);
        self.progress_check_ms = self.progress_check_ms.max(limits.progress_check_interval_min_ms);
        self.periodic_savepoint = self
            .periodic_savepoint
            .map(|s| s.spaced(limits.periodic_savepoint_interval_min_ms));
        self.periodic_checkpoint = self
            .periodic_checkpoint
            .map(|s| s.spaced(limits.periodic_checkpoint_interval_min_ms));
        if let Some(cap) = limits.history_max_count_threshold {
            self.history_max_count = self.history_max_count.min(cap).max(1);
        }
        if let Some(cap) = limits.history_max_age_threshold_ms {
            self.history_max_age_ms = self.history_max_age_ms.min(cap);
        }
        self.snapshot_max_count = limits.snapshot_max_count.max(1);
        self.snapshot_max_age_ms = limits.snapshot_max_age_ms;
        self.history_max_count = self.history_max_count.min(self.snapshot_max_count);
        self.checkpoints_retained = self.checkpoints_retained.min(self.snapshot_max_count);
        self
    }

    /// Values that do not parse keep their defaults: the webhook and `observe` report them
    /// as violations, and a violation stops the reconcile before any policy is applied.
    pub fn from_config(config: &BTreeMap<String, String>) -> Self {
        let defaults = Policy::default();
        let flag = |key: &str, default: bool| read::flag(config, key, default);
        let duration = |key: &str| read::millis(config, key);
        let schedule = |key: &str| config.get(key).and_then(|v| Schedule::parse(v).ok().flatten());
        let choice = |key: &str, names: &[&'static str]| read::choice(config, key, names);
        let count = |key: &str| read::count(config, key).map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let threshold_count = count(operator::SAVEPOINT_HISTORY_MAX_COUNT_THRESHOLD);
        let history_max_count = count(operator::SAVEPOINT_HISTORY_MAX_COUNT)
            .unwrap_or(defaults.history_max_count)
            .min(threshold_count.unwrap_or(usize::MAX))
            .max(1);
        // A limit below 1 counts as 1: the current revision is always kept.
        let revision_history_limit = read::integer(config, operator::JOB_REVISION_HISTORY_LIMIT)
            .map_or(defaults.revision_history_limit, |n| {
                usize::try_from(n.max(1)).unwrap_or(usize::MAX)
            });
        let history_max_age_ms = duration(operator::SAVEPOINT_HISTORY_MAX_AGE)
            .unwrap_or(defaults.history_max_age_ms)
            .min(duration(operator::SAVEPOINT_HISTORY_MAX_AGE_THRESHOLD).unwrap_or(i64::MAX));
        Policy {
            take_savepoint: flag(operator::JOB_UPGRADE_TAKE_SAVEPOINT, defaults.take_savepoint),
            savepoint_max_age_ms: duration(operator::JOB_UPGRADE_SAVEPOINT_MAX_AGE),
            restore_max_state_age_ms: duration(operator::JOB_RESTORE_MAX_STATE_AGE),
            restart_failed: flag(operator::JOB_RESTART_FAILED, defaults.restart_failed),
            savepoint_on_deletion_set: config
                .get(operator::JOB_SAVEPOINT_ON_DELETION)
                .and_then(|v| parse_bool(v).ok()),
            drain: flag(operator::JOB_DRAIN_ON_SAVEPOINT_DELETION, defaults.drain),
            periodic_savepoint: schedule(operator::PERIODIC_SAVEPOINT_INTERVAL),
            periodic_checkpoint: schedule(operator::PERIODIC_CHECKPOINT_INTERVAL),
            savepoint_format: match choice(operator::SAVEPOINT_FORMAT_TYPE, &["CANONICAL", "NATIVE"]) {
                Some("NATIVE") => SavepointFormat::Native,
                _ => defaults.savepoint_format,
            },
            checkpoint_type: match choice(operator::CHECKPOINT_TYPE, &["FULL", "INCREMENTAL"]) {
                Some("INCREMENTAL") => CheckpointKind::Incremental,
                _ => defaults.checkpoint_type,
            },
            last_state_fallback: flag(
                operator::JOB_UPGRADE_LAST_STATE_FALLBACK_ENABLED,
                defaults.last_state_fallback,
            ),
            last_state_max_checkpoint_age_ms: duration(
                operator::JOB_UPGRADE_LAST_STATE_MAX_ALLOWED_CHECKPOINT_AGE,
            ),
            deletion_propagation: match choice(
                operator::RESOURCE_DELETION_PROPAGATION,
                &["Foreground", "Background"],
            ) {
                Some("Foreground") => DeletionPropagation::Foreground,
                _ => defaults.deletion_propagation,
            },
            history_cleanup: flag(operator::SAVEPOINT_CLEANUP_ENABLED, defaults.history_cleanup),
            snapshot_resources: flag(operator::SNAPSHOT_RESOURCE_ENABLED, defaults.snapshot_resources),
            dispose_on_delete: flag(operator::SAVEPOINT_DISPOSE_ON_DELETE, defaults.dispose_on_delete),
            history_include_manual: flag(
                operator::SAVEPOINT_HISTORY_INCLUDE_MANUAL,
                defaults.history_include_manual,
            ),
            checkpoints_retained: flink::CHECKPOINTS_RETAINED_KEYS
                .iter()
                .find_map(|key| config.get(*key))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(defaults.checkpoints_retained)
                .max(1),
            history_max_count,
            history_max_age_ms,
            // The platform's, applied by [`Policy::with_limits`].
            snapshot_max_count: defaults.snapshot_max_count,
            snapshot_max_age_ms: defaults.snapshot_max_age_ms,
            block_on_unmanaged_jobs: flag(
                operator::SESSION_DELETION_BLOCK_ON_UNMANAGED_JOBS,
                defaults.block_on_unmanaged_jobs,
            ),
            block_on_session_jobs: flag(
                operator::SESSION_DELETION_BLOCK_ON_SESSION_JOBS,
                defaults.block_on_session_jobs,
            ),
            rollback_enabled: flag(operator::DEPLOYMENT_ROLLBACK_ENABLED, defaults.rollback_enabled),
            readiness_timeout_ms: duration(operator::DEPLOYMENT_READINESS_TIMEOUT)
                .unwrap_or(defaults.readiness_timeout_ms),
            jm_recovery: flag(operator::JM_DEPLOYMENT_RECOVERY_ENABLED, defaults.jm_recovery),
            shutdown_ttl_ms: duration(operator::JM_DEPLOYMENT_SHUTDOWN_TTL)
                .unwrap_or(defaults.shutdown_ttl_ms),
            ignore_pending_savepoint: flag(
                operator::JOB_UPGRADE_IGNORE_PENDING_SAVEPOINT,
                defaults.ignore_pending_savepoint,
            ),
            in_place_scaling: flag(
                operator::JOB_UPGRADE_INPLACE_SCALING_ENABLED,
                defaults.in_place_scaling,
            ),
            rescaler: Rescaler::of(config),
            task_slots: config
                .get(flink::TASKMANAGER_NUMBER_OF_TASK_SLOTS)
                .and_then(|v| v.trim().parse::<i64>().ok())
                .filter(|n| *n > 0)
                .unwrap_or(defaults.task_slots),
            autoscaler: crate::policy::autoscaler::AutoscalerOptions::from_config(config),
            high_availability: flink::HIGH_AVAILABILITY_KEYS
                .iter()
                .find_map(|key| config.get(*key).map(|v| v.trim()).filter(|v| !v.is_empty()))
                .is_some_and(|v| !v.eq_ignore_ascii_case("none")),
            savepoint_dir: flink::SAVEPOINT_DIR_KEYS
                .iter()
                .find_map(|key| config.get(*key).map(|v| v.trim()).filter(|v| !v.is_empty()))
                .map(str::to_owned),
            checkpoint_retention_set: config
                .get(flink::CHECKPOINTING_EXTERNALIZED_RETENTION)
                .is_some_and(|v| !v.trim().is_empty()),
            // A zero interval would be a busy loop: at least a second.
            reconcile_interval_ms: duration(operator::RECONCILE_INTERVAL)
                .or_else(|| duration(operator::RECONCILE_INTERVAL_DEPRECATED))
                .unwrap_or(defaults.reconcile_interval_ms)
                .max(option_defaults::MIN_INTERVAL_MS),
            progress_check_ms: duration(operator::PROGRESS_CHECK_INTERVAL)
                .unwrap_or(defaults.progress_check_ms)
                .max(option_defaults::MIN_INTERVAL_MS),
            savepoint_grace_ms: duration(operator::SAVEPOINT_TRIGGER_GRACE_PERIOD)
                .or_else(|| duration(operator::SAVEPOINT_TRIGGER_GRACE_PERIOD_DEPRECATED))
                .unwrap_or(defaults.savepoint_grace_ms),
            revision_history_limit,
            health: HealthSettings::from_config(config),
        }
    }
}

// Test-only, and after every function that reads a key: the reference's check of the keys
// read stops at the first test-only item.
/// Whether the FlinkStateSnapshot loop runs: unless the operator configuration sets
/// `kubernetes.operator.snapshot.resource.enabled` to `false`. The job kinds' policies hold
/// it ([`Policy::with_snapshot_loop`]): the operator's own savepoints become resources only
/// while the loop runs.
pub fn snapshot_loop_enabled(operator_config: &BTreeMap<String, String>) -> bool {
    read::flag(
        operator_config,
        flink_operator_api::keys::operator::SNAPSHOT_RESOURCE_ENABLED,
        flink_operator_api::options::defaults::SNAPSHOT_RESOURCE_ENABLED,
    )
}

/// Whether the operator writes the Ingresses of `spec.ingress`: unless the operator
/// configuration sets `kubernetes.operator.ingress.manage` to `false`, as in the Apache
/// operator (which then does not watch them either).
pub fn ingress_managed(operator_config: &BTreeMap<String, String>) -> bool {
    read::flag(
        operator_config,
        flink_operator_api::keys::operator::INGRESS_MANAGE,
        flink_operator_api::options::defaults::INGRESS_MANAGE,
    )
}

#[cfg(test)]
impl Policy {
    /// The defaults with the job's snapshots kept in its status only
    /// (`kubernetes.operator.snapshot.resource.enabled: false`): the tests of that mode.
    pub fn status_only() -> Self {
        Policy {
            snapshot_resources: false,
            ..Policy::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_platform_limits_hold_what_a_spec_asks_for() {
        let limits = PlatformLimits::from_settings(&config(&[
            (operator::SAVEPOINT_HISTORY_MAX_COUNT_THRESHOLD, "5"),
            (operator::SAVEPOINT_HISTORY_MAX_AGE_THRESHOLD, "1 h"),
            (operator::SNAPSHOT_RESOURCE_MAX_COUNT, "20"),
            (operator::SNAPSHOT_RESOURCE_MAX_AGE, "7 d"),
        ]));
        // What a spec the webhook did not judge asks for: the flood of the issue.
        let asked = Policy::from_config(&config(&[
            (operator::RECONCILE_INTERVAL, "1 s"),
            (operator::PROGRESS_CHECK_INTERVAL, "1 ms"),
            (operator::PERIODIC_CHECKPOINT_INTERVAL, "1 ns"),
            (operator::PERIODIC_SAVEPOINT_INTERVAL, "* * * * * ?"),
            (operator::SAVEPOINT_HISTORY_MAX_COUNT, "1000000"),
            (operator::SAVEPOINT_HISTORY_MAX_COUNT_THRESHOLD, "1000000"),
            (operator::SAVEPOINT_HISTORY_MAX_AGE, "3650 d"),
            (operator::SAVEPOINT_HISTORY_MAX_AGE_THRESHOLD, "3650 d"),
            ("execution.checkpointing.num-retained", "1000000"),
        ]));
        let held = asked.clone().with_limits(&limits);
        assert_eq!(held.reconcile_interval_ms, 10_000);
        assert_eq!(held.progress_check_ms, 5_000);
        assert_eq!(held.periodic_checkpoint, Some(Schedule::Every(60_000)));
        assert_eq!(
            held.periodic_savepoint,
            Schedule::parse("* * * * * ?").unwrap().map(|s| s.spaced(60_000))
        );
        assert_eq!(held.history_max_count, 5);
        assert_eq!(held.history_max_age_ms, 3_600_000);
        assert_eq!(held.checkpoints_retained, 20);
        assert_eq!(held.snapshot_max_count, 20);
        assert_eq!(held.snapshot_max_age_ms, 7 * 86_400_000);
        // Within the limits, nothing changes but the caps themselves.
        let modest = Policy::default().with_limits(&PlatformLimits::default());
        assert_eq!(modest, Policy::default());
    }

    #[test]
    fn settings_are_read_with_their_defaults_and_caps() {
        let cases: Vec<(&str, BTreeMap<String, String>, Policy)> = vec![
            ("nothing set", config(&[]), Policy::default()),
            (
                "guards and flags",
                config(&[
                    (operator::JOB_UPGRADE_TAKE_SAVEPOINT, "False"),
                    (operator::JOB_RESTORE_MAX_STATE_AGE, "10 min"),
                    (operator::JOB_UPGRADE_SAVEPOINT_MAX_AGE, "30 s"),
                    (operator::JOB_RESTART_FAILED, "true"),
                    (operator::JOB_SAVEPOINT_ON_DELETION, "true"),
                    (operator::JOB_DRAIN_ON_SAVEPOINT_DELETION, "true"),
                ]),
                Policy {
                    take_savepoint: false,
                    restore_max_state_age_ms: Some(600_000),
                    savepoint_max_age_ms: Some(30_000),
                    restart_failed: true,
                    savepoint_on_deletion_set: Some(true),
                    drain: true,
                    ..Policy::default()
                },
            ),
            (
                "periodic duration, history capped by thresholds",
                config(&[
                    (operator::PERIODIC_SAVEPOINT_INTERVAL, "1 h"),
                    (operator::SAVEPOINT_HISTORY_MAX_COUNT, "20"),
                    (operator::SAVEPOINT_HISTORY_MAX_COUNT_THRESHOLD, "5"),
                    (operator::SAVEPOINT_HISTORY_MAX_AGE, "2 d"),
                    (operator::SAVEPOINT_HISTORY_MAX_AGE_THRESHOLD, "12 h"),
                ]),
                Policy {
                    periodic_savepoint: Some(Schedule::Every(3_600_000)),
                    history_max_count: 5,
                    history_max_age_ms: 12 * 3_600_000,
                    ..Policy::default()
                },
            ),
            (
                "zero interval is off, count at least one",
                config(&[
                    (operator::PERIODIC_SAVEPOINT_INTERVAL, "0 s"),
                    (operator::SAVEPOINT_HISTORY_MAX_COUNT, "0"),
                ]),
                Policy {
                    history_max_count: 1,
                    ..Policy::default()
                },
            ),
            (
                "snapshot formats and deletion propagation, in any letter case",
                config(&[
                    (operator::SAVEPOINT_FORMAT_TYPE, "native"),
                    (operator::CHECKPOINT_TYPE, "INCREMENTAL"),
                    (operator::RESOURCE_DELETION_PROPAGATION, "foreground"),
                    (operator::PERIODIC_CHECKPOINT_INTERVAL, "10 min"),
                ]),
                Policy {
                    savepoint_format: SavepointFormat::Native,
                    checkpoint_type: CheckpointKind::Incremental,
                    deletion_propagation: DeletionPropagation::Foreground,
                    periodic_checkpoint: Some(Schedule::Every(600_000)),
                    ..Policy::default()
                },
            ),
            (
                "a Quartz cron schedule",
                config(&[(operator::PERIODIC_SAVEPOINT_INTERVAL, "0 0 * * * ?")]),
                Policy {
                    periodic_savepoint: Schedule::parse("0 0 * * * ?").unwrap(),
                    ..Policy::default()
                },
            ),
            (
                "rollback, recovery and high availability",
                config(&[
                    (operator::DEPLOYMENT_ROLLBACK_ENABLED, "true"),
                    (operator::DEPLOYMENT_READINESS_TIMEOUT, "20 s"),
                    (operator::JM_DEPLOYMENT_RECOVERY_ENABLED, "false"),
                    (flink::HIGH_AVAILABILITY_TYPE, "kubernetes"),
                ]),
                Policy {
                    rollback_enabled: true,
                    readiness_timeout_ms: 20_000,
                    jm_recovery: false,
                    high_availability: true,
                    ..Policy::default()
                },
            ),
            (
                "intervals and the savepoint grace period, deprecated names too",
                config(&[
                    ("kubernetes.operator.reconciler.reschedule.interval", "2 min"),
                    (operator::PROGRESS_CHECK_INTERVAL, "0 s"),
                    (
                        "kubernetes.operator.observer.savepoint.trigger.grace-period",
                        "20 s",
                    ),
                ]),
                Policy {
                    reconcile_interval_ms: 120_000,
                    progress_check_ms: 1000,
                    savepoint_grace_ms: 20_000,
                    ..Policy::default()
                },
            ),
            (
                "the revision history limit",
                config(&[(operator::JOB_REVISION_HISTORY_LIMIT, " 3 ")]),
                Policy {
                    revision_history_limit: 3,
                    ..Policy::default()
                },
            ),
            (
                "a revision history limit below 1 counts as 1",
                config(&[(operator::JOB_REVISION_HISTORY_LIMIT, "0")]),
                Policy {
                    revision_history_limit: 1,
                    ..Policy::default()
                },
            ),
            (
                "a negative revision history limit counts as 1",
                config(&[(operator::JOB_REVISION_HISTORY_LIMIT, "-4")]),
                Policy {
                    revision_history_limit: 1,
                    ..Policy::default()
                },
            ),
            (
                "high availability set to none is off",
                config(&[(flink::HIGH_AVAILABILITY_TYPE, "NONE")]),
                Policy::default(),
            ),
            (
                "unparsable values keep defaults",
                config(&[
                    (operator::JOB_RESTART_FAILED, "yes"),
                    (operator::JOB_RESTORE_MAX_STATE_AGE, "a while"),
                    (operator::JOB_REVISION_HISTORY_LIMIT, "ten"),
                ]),
                Policy::default(),
            ),
        ];
        for (name, config, expected) in cases {
            assert_eq!(Policy::from_config(&config), expected, "{name}");
        }
    }
}
