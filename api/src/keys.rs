//! Names shared by the webhook, the controllers and the chart: API group, labels,
//! annotations, finalizers, and the configuration keys we read or write.
//!
//! Everything here is spelled exactly as the Apache operator and Flink spell it; our own
//! additions are marked as such.

/// API group of the four kinds.
pub const GROUP: &str = "flink.apache.org";
/// API version of the four kinds.
pub const VERSION: &str = "v1beta1";
/// `apiVersion` of the four kinds.
pub const API_VERSION: &str = "flink.apache.org/v1beta1";

/// Kind names.
pub mod kinds {
    /// FlinkDeployment kind.
    pub const FLINK_DEPLOYMENT: &str = "FlinkDeployment";
    /// FlinkSessionJob kind.
    pub const FLINK_SESSION_JOB: &str = "FlinkSessionJob";
    /// FlinkStateSnapshot kind.
    pub const FLINK_STATE_SNAPSHOT: &str = "FlinkStateSnapshot";
    /// FlinkBlueGreenDeployment kind.
    pub const FLINK_BLUE_GREEN_DEPLOYMENT: &str = "FlinkBlueGreenDeployment";
}

/// Labels set on our resources and on the objects we create.
pub mod labels {
    /// On an EndpointSlice (set by Kubernetes): the name of its Service.
    pub const SERVICE_NAME: &str = "kubernetes.io/service-name";
    /// On a FlinkSessionJob: name of its session FlinkDeployment (set by the mutating webhook).
    pub const TARGET_SESSION: &str = "target.session";
    /// On blue/green child FlinkDeployments: `BLUE` or `GREEN`.
    pub const BLUE_GREEN_DEPLOYMENT_TYPE: &str = "flink/blue-green-deployment-type";
    /// Our addition. On a blue/green hand-over's coordination ConfigMap (ADVANCED mode): the
    /// FlinkBlueGreenDeployment's name.
    pub const BLUE_GREEN_GATE: &str = "flink.apache.org/blue-green-gate";
    /// On canary resources used by the health check: `"true"`.
    pub const CANARY: &str = "flink.apache.org/canary";
    /// On FlinkStateSnapshots: `SAVEPOINT` or `CHECKPOINT`.
    pub const SNAPSHOT_TYPE: &str = "snapshot.type";
    /// On FlinkStateSnapshots: `MANUAL`, `PERIODIC`, `UPGRADE` or `UNKNOWN`.
    pub const SNAPSHOT_TRIGGER_TYPE: &str = "snapshot.trigger-type";
    /// On FlinkStateSnapshots: the snapshot state.
    pub const SNAPSHOT_STATE: &str = "snapshot.state";
    /// On FlinkStateSnapshots: kind of the referenced job resource.
    pub const JOB_REFERENCE_KIND: &str = "job-reference.kind";
    /// On FlinkStateSnapshots: name of the referenced job resource.
    pub const JOB_REFERENCE_NAME: &str = "job-reference.name";
    /// Flink native label: the cluster id (resource name).
    pub const APP: &str = "app";
    /// Flink native label: `jobmanager` or `taskmanager` (also `ingress` on our Ingress).
    pub const COMPONENT: &str = "component";
    /// Flink native label: `flink-native-kubernetes`.
    pub const TYPE: &str = "type";
    /// Value of [`COMPONENT`] on JobManager objects.
    pub const COMPONENT_JOB_MANAGER: &str = "jobmanager";
    /// Value of [`COMPONENT`] on TaskManager objects.
    pub const COMPONENT_TASK_MANAGER: &str = "taskmanager";
    /// Value of [`COMPONENT`] on Ingress objects.
    pub const COMPONENT_INGRESS: &str = "ingress";
    /// Value of [`TYPE`] on native-mode objects.
    pub const TYPE_NATIVE: &str = "flink-native-kubernetes";
    /// Our addition. On a job's revisions (ControllerRevisions): kind of the resource they
    /// record, `FlinkDeployment` or `FlinkSessionJob`.
    pub const REVISION_OWNER_KIND: &str = "flink.apache.org/revision-owner-kind";
    /// Our addition. On a job's revisions (ControllerRevisions): name of the resource they
    /// record (a name too long for a label value is shortened and given a hash of itself).
    pub const REVISION_OWNER_NAME: &str = "flink.apache.org/revision-owner-name";
}

/// Annotations.
pub mod annotations {
    /// On the JobManager Deployment: the generation of the FlinkDeployment it was built from.
    pub const DEPLOYMENT_GENERATION: &str = "flinkdeployment.flink.apache.org/generation";
    /// On the JobManager Deployment of a rollback: the generation whose spec was rolled back
    /// (the cluster runs the last stable spec instead).
    pub const ROLLED_BACK_GENERATION: &str = "flinkdeployment.flink.apache.org/rolled-back-generation";
    /// On the JobManager Deployment: the `reconciliationTimestamp` status held when the
    /// operator deployed it, which tells the cluster a start deployed from the one it
    /// replaces whatever status was written since (a generation does not: a refused spec's
    /// status holds a later one).
    pub const DEPLOYED_AT: &str = "flinkdeployment.flink.apache.org/deployed-at";
    /// Our addition. On a FlinkDeployment or FlinkSessionJob: the number of its current
    /// revision (the spec it runs), e.g. `"3"`.
    pub const REVISION: &str = "flink.apache.org/revision";
    /// Our addition. Set by the user on a FlinkDeployment or FlinkSessionJob: roll the job
    /// back to the revision of this number (a positive whole number, e.g. `"2"`); removed by
    /// the operator when the rollback starts.
    pub const ROLLBACK_TO_REVISION: &str = "flink.apache.org/rollback-to-revision";
    /// Our addition. Set by the user beside [`ROLLBACK_TO_REVISION`]:
    /// [`ROLLBACK_RESTORE_REVISION`] restores the state the revision was started from rather
    /// than the state taken when the running job stops.
    pub const ROLLBACK_RESTORE: &str = "flink.apache.org/rollback-restore";
    /// The one value of [`ROLLBACK_RESTORE`].
    pub const ROLLBACK_RESTORE_REVISION: &str = "revision";
    /// Our addition. On a revision (ControllerRevision): the savepoint or checkpoint path the
    /// job was started from when the revision was last applied (absent: no state).
    pub const REVISION_STARTED_FROM: &str = "flink.apache.org/revision-started-from";
    /// Our addition. On a revision (ControllerRevision): when that state was taken (RFC 3339;
    /// absent: not known), so that a rollback restoring it ranks it by its age.
    pub const REVISION_STARTED_FROM_TIME: &str = "flink.apache.org/revision-started-from-time";
    /// Our addition. On a revision (ControllerRevision): when it was last applied (RFC 3339).
    pub const REVISION_APPLIED_AT: &str = "flink.apache.org/revision-applied-at";
    /// Our addition. On a FlinkStateSnapshot that records an existing savepoint
    /// (`spec.savepoint.alreadyExists: true`): when Flink completed that savepoint (RFC 3339),
    /// which becomes its `status.resultTimestamp`. The operator sets it on the savepoints it
    /// records itself; a user may set it on one they record. Without it the savepoint's time
    /// is unknown: it ranks below every state of known time and fails
    /// `kubernetes.operator.job.restore.max-state-age`.
    pub const SAVEPOINT_COMPLETED_AT: &str = "flink.apache.org/savepoint-completed-at";
}

/// Finalizers (JOSDK convention `<plural>.<group>/finalizer`; FlinkBlueGreenDeployment has none).
pub mod finalizers {
    /// FlinkDeployment finalizer.
    pub const FLINK_DEPLOYMENT: &str = "flinkdeployments.flink.apache.org/finalizer";
    /// FlinkSessionJob finalizer.
    pub const FLINK_SESSION_JOB: &str = "flinksessionjobs.flink.apache.org/finalizer";
    /// FlinkStateSnapshot finalizer.
    pub const FLINK_STATE_SNAPSHOT: &str = "flinkstatesnapshots.flink.apache.org/finalizer";
}

/// Operator configuration keys (`kubernetes.operator.*`). Those marked *dynamic* may also be
/// set per resource in `spec.flinkConfiguration`. Which of them the operator acts on, and the
/// defaults it applies, is in the table of [`crate::options`]; it wins where a comment here
/// differs.
pub mod operator {
    /// Prefix of every operator key; these keys are removed before submitting to Flink.
    pub const PREFIX: &str = "kubernetes.operator.";
    /// Prefix of the operator file's overlays (namespace and Flink version).
    pub const DEFAULT_CONFIGURATION_PREFIX: &str = "kubernetes.operator.default-configuration.";
    /// Prefix of namespace overlays: `<prefix><namespace>.<key>`.
    pub const DEFAULT_CONFIGURATION_NAMESPACE_PREFIX: &str =
        "kubernetes.operator.default-configuration.namespace.";
    /// Prefix of Flink-version overlays: `<prefix><vX_Y>[+].<key>`.
    pub const DEFAULT_CONFIGURATION_FLINK_VERSION_PREFIX: &str =
        "kubernetes.operator.default-configuration.flink-version.";

    /// The parallelism the job autoscaler gave the job's vertices (`<vertex id>:<parallelism>,...`):
    /// written by the operator into the spec it records (`status.reconciliationStatus
    /// .lastReconciledSpec`), over `pipeline.jobvertex-parallelism-overrides`, never by a user.
    /// An operator key, so that a revision (the user's spec) does not hold it.
    pub const AUTOSCALER_PARALLELISM_OVERRIDES: &str = "kubernetes.operator.autoscaler.parallelism-overrides";

    /// Steady-state requeue interval (default 60 s).
    pub const RECONCILE_INTERVAL: &str = "kubernetes.operator.reconcile.interval";
    /// The deprecated name of [`RECONCILE_INTERVAL`], still read.
    pub const RECONCILE_INTERVAL_DEPRECATED: &str = "kubernetes.operator.reconciler.reschedule.interval";
    /// Reconciler threads (default 50).
    pub const RECONCILE_PARALLELISM: &str = "kubernetes.operator.reconcile.parallelism";
    /// The most reconciles of one kind a single namespace runs at once (default: half of
    /// the parallelism), so that one namespace cannot hold every worker.
    pub const RECONCILE_NAMESPACE_SHARE: &str = "kubernetes.operator.reconcile.namespace-share";
    /// Requeue interval while an operation is in progress (default 10 s).
    pub const PROGRESS_CHECK_INTERVAL: &str = "kubernetes.operator.observer.progress-check.interval";
    /// Delay between JobManager deployed and REST ready (default 10 s).
    pub const REST_READY_DELAY: &str = "kubernetes.operator.observer.rest-ready.delay";
    /// Flink REST client timeout (default 10 s).
    pub const FLINK_CLIENT_TIMEOUT: &str = "kubernetes.operator.flink.client.timeout";
    /// Job cancel timeout (default 1 min).
    pub const FLINK_CLIENT_CANCEL_TIMEOUT: &str = "kubernetes.operator.flink.client.cancel.timeout";
    /// Wait for cluster deletion (default 5 min).
    pub const RESOURCE_CLEANUP_TIMEOUT: &str = "kubernetes.operator.resource.cleanup.timeout";
    /// JobManager Deployment delete propagation (default Foreground).
    pub const RESOURCE_DELETION_PROPAGATION: &str = "kubernetes.operator.resource.deletion.propagation";
    /// Session job submission timeout (default 10 min).
    pub const JOB_SUBMISSION_TIMEOUT: &str = "kubernetes.operator.job.submission.timeout";
    /// Per-resource rate limit (default 5).
    pub const RATE_LIMITER_LIMIT: &str = "kubernetes.operator.rate-limiter.limit";
    /// Rate-limit refresh period (default 15 s).
    pub const RATE_LIMITER_REFRESH_PERIOD: &str = "kubernetes.operator.rate-limiter.refresh-period";
    /// First retry interval (default 5 s).
    pub const RETRY_INITIAL_INTERVAL: &str = "kubernetes.operator.retry.initial.interval";
    /// Retry interval multiplier (default 1.5).
    pub const RETRY_INTERVAL_MULTIPLIER: &str = "kubernetes.operator.retry.interval.multiplier";
    /// Maximum retry attempts (default 15).
    pub const RETRY_MAX_ATTEMPTS: &str = "kubernetes.operator.retry.max.attempts";
    /// Maximum retry interval (default none).
    pub const RETRY_MAX_INTERVAL: &str = "kubernetes.operator.retry.max.interval";
    /// Shutdown grace period (default 10 s).
    pub const TERMINATION_TIMEOUT: &str = "kubernetes.operator.termination.timeout";
    /// Fail startup on informer errors (default true).
    pub const STARTUP_STOP_ON_INFORMER_ERROR: &str = "kubernetes.operator.startup.stop-on-informer-error";
    /// Comma-separated watched namespaces (default all).
    pub const WATCHED_NAMESPACES: &str = "kubernetes.operator.watched.namespaces";
    /// Follow namespace changes at runtime (default false).
    pub const DYNAMIC_NAMESPACES_ENABLED: &str = "kubernetes.operator.dynamic.namespaces.enabled";
    /// Admit Flink resources in the operator's own namespace (default false: that namespace
    /// holds the operator's credentials, and a Flink cluster there could reach them).
    pub const OPERATOR_NAMESPACE_FLINK_RESOURCES_ENABLED: &str =
        "kubernetes.operator.operator-namespace.flink-resources.enabled";
    /// Only watch resources matching this label selector.
    pub const LABEL_SELECTOR: &str = "kubernetes.operator.label.selector";
    /// Hot-reload the operator configuration (default true).
    pub const DYNAMIC_CONFIG_ENABLED: &str = "kubernetes.operator.dynamic.config.enabled";
    /// Hot-reload check interval (default 5 min).
    pub const DYNAMIC_CONFIG_CHECK_INTERVAL: &str = "kubernetes.operator.dynamic.config.check.interval";
    /// Dynamic: roll back unstable deployments (default false).
    pub const DEPLOYMENT_ROLLBACK_ENABLED: &str = "kubernetes.operator.deployment.rollback.enabled";
    /// Dynamic: time to become stable before rollback (default 5 min).
    pub const DEPLOYMENT_READINESS_TIMEOUT: &str = "kubernetes.operator.deployment.readiness.timeout";
    /// Dynamic: do not wait for a pending savepoint before upgrading (default false).
    pub const JOB_UPGRADE_IGNORE_PENDING_SAVEPOINT: &str =
        "kubernetes.operator.job.upgrade.ignore-pending-savepoint";
    /// Dynamic: rescale in place when possible (default true).
    pub const JOB_UPGRADE_INPLACE_SCALING_ENABLED: &str =
        "kubernetes.operator.job.upgrade.inplace-scaling.enabled";
    /// Dynamic: savepoint mode falls back to last-state when the job is not running (default true).
    pub const JOB_UPGRADE_LAST_STATE_FALLBACK_ENABLED: &str =
        "kubernetes.operator.job.upgrade.last-state-fallback.enabled";
    /// Dynamic: cancel the job for last-state upgrades (default false).
    pub const JOB_UPGRADE_LAST_STATE_JOB_CANCEL_ENABLED: &str =
        "kubernetes.operator.job.upgrade.last-state.job-cancel.enabled";
    /// Dynamic: a newest checkpoint older than this forces a savepoint upgrade.
    pub const JOB_UPGRADE_LAST_STATE_MAX_ALLOWED_CHECKPOINT_AGE: &str =
        "kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age";
    /// Our addition, dynamic: an existing savepoint younger than this may be reused for an upgrade.
    pub const JOB_UPGRADE_SAVEPOINT_MAX_AGE: &str = "kubernetes.operator.job.upgrade.savepoint.max-age";
    /// Our addition, dynamic: stop a running job with a savepoint for an upgrade (default
    /// true; false restores the latest checkpoint or savepoint instead, bounded by
    /// [`JOB_RESTORE_MAX_STATE_AGE`]).
    pub const JOB_UPGRADE_TAKE_SAVEPOINT: &str = "kubernetes.operator.job.upgrade.take-savepoint";
    /// Our addition, dynamic: refuse to restore from state older than this.
    pub const JOB_RESTORE_MAX_STATE_AGE: &str = "kubernetes.operator.job.restore.max-state-age";
    /// Our addition, dynamic: revisions of a job kept (default 10, at least 1).
    pub const JOB_REVISION_HISTORY_LIMIT: &str = "kubernetes.operator.job.revision-history.limit";
    /// Dynamic: resubmit FAILED jobs (default false).
    pub const JOB_RESTART_FAILED: &str = "kubernetes.operator.job.restart.failed";
    /// Dynamic: take a savepoint when the resource is deleted (default false).
    pub const JOB_SAVEPOINT_ON_DELETION: &str = "kubernetes.operator.job.savepoint-on-deletion";
    /// Dynamic: drain when stopping with a savepoint (default false).
    pub const JOB_DRAIN_ON_SAVEPOINT_DELETION: &str = "kubernetes.operator.job.drain-on-savepoint-deletion";
    /// Dynamic: recreate a missing JobManager Deployment (default true).
    pub const JM_DEPLOYMENT_RECOVERY_ENABLED: &str = "kubernetes.operator.jm-deployment-recovery.enabled";
    /// Dynamic: delete a terminal application's JobManager after this (default 1 d).
    pub const JM_DEPLOYMENT_SHUTDOWN_TTL: &str = "kubernetes.operator.jm-deployment.shutdown-ttl";
    /// Dynamic: add a JobManager startup probe (default true).
    pub const JM_DEPLOYMENT_STARTUP_PROBE_ENABLED: &str =
        "kubernetes.operator.jm-deployment.startup.probe.enabled";
    /// Dynamic: restart unhealthy jobs (default false).
    pub const CLUSTER_HEALTH_CHECK_ENABLED: &str = "kubernetes.operator.cluster.health-check.enabled";
    /// Dynamic: restart-count window (default 2 min).
    pub const CLUSTER_HEALTH_CHECK_RESTARTS_WINDOW: &str =
        "kubernetes.operator.cluster.health-check.restarts.window";
    /// Dynamic: restarts allowed in the window (default 64).
    pub const CLUSTER_HEALTH_CHECK_RESTARTS_THRESHOLD: &str =
        "kubernetes.operator.cluster.health-check.restarts.threshold";
    /// Dynamic: check checkpoint progress (default true).
    pub const CLUSTER_HEALTH_CHECK_CHECKPOINT_PROGRESS_ENABLED: &str =
        "kubernetes.operator.cluster.health-check.checkpoint-progress.enabled";
    /// Dynamic: checkpoint progress window.
    pub const CLUSTER_HEALTH_CHECK_CHECKPOINT_PROGRESS_WINDOW: &str =
        "kubernetes.operator.cluster.health-check.checkpoint-progress.window";
    /// Dynamic: legacy savepoint retry window (default 1 min).
    pub const SAVEPOINT_TRIGGER_GRACE_PERIOD: &str = "kubernetes.operator.savepoint.trigger.grace-period";
    /// The deprecated name of [`SAVEPOINT_TRIGGER_GRACE_PERIOD`], still read.
    pub const SAVEPOINT_TRIGGER_GRACE_PERIOD_DEPRECATED: &str =
        "kubernetes.operator.observer.savepoint.trigger.grace-period";
    /// Dynamic: legacy checkpoint retry window (default 1 min).
    pub const CHECKPOINT_TRIGGER_GRACE_PERIOD: &str = "kubernetes.operator.checkpoint.trigger.grace-period";
    /// Dynamic: format of operator savepoints (default CANONICAL).
    pub const SAVEPOINT_FORMAT_TYPE: &str = "kubernetes.operator.savepoint.format.type";
    /// Dynamic: type of legacy manual checkpoints (default FULL).
    pub const CHECKPOINT_TYPE: &str = "kubernetes.operator.checkpoint.type";
    /// Dynamic: periodic savepoint interval, a duration or a Quartz cron expression.
    pub const PERIODIC_SAVEPOINT_INTERVAL: &str = "kubernetes.operator.periodic.savepoint.interval";
    /// Dynamic: periodic checkpoint interval, a duration or a Quartz cron expression.
    pub const PERIODIC_CHECKPOINT_INTERVAL: &str = "kubernetes.operator.periodic.checkpoint.interval";
    /// Dynamic: record snapshots as FlinkStateSnapshot resources (default true).
    pub const SNAPSHOT_RESOURCE_ENABLED: &str = "kubernetes.operator.snapshot.resource.enabled";
    /// Dynamic: enforce savepoint retention (default true).
    pub const SAVEPOINT_CLEANUP_ENABLED: &str = "kubernetes.operator.savepoint.cleanup.enabled";
    /// Dynamic: disposeOnDelete of operator-created snapshots (default false).
    pub const SAVEPOINT_DISPOSE_ON_DELETE: &str = "kubernetes.operator.savepoint.dispose-on-delete";
    /// Ours, dynamic: the retention of the history also removes manual snapshot resources
    /// (default false, as the Apache operator never removes them).
    pub const SAVEPOINT_HISTORY_INCLUDE_MANUAL: &str = "kubernetes.operator.savepoint.history.include-manual";
    /// Dynamic: savepoints kept (default 10).
    pub const SAVEPOINT_HISTORY_MAX_COUNT: &str = "kubernetes.operator.savepoint.history.max.count";
    /// Dynamic: maximum savepoint age kept (default 1 d).
    pub const SAVEPOINT_HISTORY_MAX_AGE: &str = "kubernetes.operator.savepoint.history.max.age";
    /// Operator-wide cap on the savepoint count.
    pub const SAVEPOINT_HISTORY_MAX_COUNT_THRESHOLD: &str =
        "kubernetes.operator.savepoint.history.max.count.threshold";
    /// Operator-wide cap on the savepoint age.
    pub const SAVEPOINT_HISTORY_MAX_AGE_THRESHOLD: &str =
        "kubernetes.operator.savepoint.history.max.age.threshold";
    /// Platform: the shortest `reconcile.interval` a resource may set (default 10 s).
    pub const RECONCILE_INTERVAL_MIN: &str = "kubernetes.operator.reconcile.interval.min";
    /// Platform: the shortest `observer.progress-check.interval` a resource may set (default 5 s).
    pub const PROGRESS_CHECK_INTERVAL_MIN: &str = "kubernetes.operator.observer.progress-check.interval.min";
    /// Platform: the shortest time between two periodic savepoints a resource may ask for
    /// (default 1 min).
    pub const PERIODIC_SAVEPOINT_INTERVAL_MIN: &str = "kubernetes.operator.periodic.savepoint.interval.min";
    /// Platform: the shortest time between two periodic checkpoints a resource may ask for
    /// (default 1 min).
    pub const PERIODIC_CHECKPOINT_INTERVAL_MIN: &str = "kubernetes.operator.periodic.checkpoint.interval.min";
    /// Platform: FlinkStateSnapshot resources kept per job resource and snapshot type
    /// (default 100).
    pub const SNAPSHOT_RESOURCE_MAX_COUNT: &str = "kubernetes.operator.snapshot.resource.max.count";
    /// Platform: the oldest FlinkStateSnapshot resource of a job kept (default 30 d).
    pub const SNAPSHOT_RESOURCE_MAX_AGE: &str = "kubernetes.operator.snapshot.resource.max.age";
    /// Platform: the highest parallelism a job may ask for (default 1000).
    pub const JOB_PARALLELISM_MAX: &str = "kubernetes.operator.job.parallelism.max";
    /// Platform: the most TaskManager replicas a cluster may ask for (default 100).
    pub const TASKMANAGER_REPLICAS_MAX: &str = "kubernetes.operator.taskmanager.replicas.max";
    /// Platform: the most JobManager replicas a cluster may ask for (default 3).
    pub const JOBMANAGER_REPLICAS_MAX: &str = "kubernetes.operator.jobmanager.replicas.max";
    /// Dynamic: block session deletion while session jobs exist (default true).
    pub const SESSION_DELETION_BLOCK_ON_SESSION_JOBS: &str =
        "kubernetes.operator.session.deletion.block-on-session-jobs";
    /// Dynamic: block session deletion while unmanaged jobs run (default true).
    pub const SESSION_DELETION_BLOCK_ON_UNMANAGED_JOBS: &str =
        "kubernetes.operator.session.deletion.block-on-unmanaged-jobs";
    /// Download directory of session-job jars (default /opt/flink/artifacts).
    pub const USER_ARTIFACTS_BASE_DIR: &str = "kubernetes.operator.user.artifacts.base.dir";
    /// Allowed jar URI schemes (default https).
    pub const USER_ARTIFACTS_ALLOWED_SCHEMES: &str = "kubernetes.operator.user.artifacts.allowed-schemes";
    /// Refuse jar downloads from restricted hosts (default true).
    pub const USER_ARTIFACTS_DISALLOW_RESTRICTED_HOSTS: &str =
        "kubernetes.operator.user.artifacts.disallow-restricted-hosts";
    /// Dynamic: HTTP headers for jar downloads, `k:v,k:v`.
    pub const USER_ARTIFACTS_HTTP_HEADER: &str = "kubernetes.operator.user.artifacts.http.header";
    /// Hosts the operator configuration's download headers are sent to (default none).
    pub const USER_ARTIFACTS_HTTP_HEADER_HOSTS: &str = "kubernetes.operator.user.artifacts.http.header.hosts";
    /// Directories `file` jars may be read from (default none: no file jars).
    pub const USER_ARTIFACTS_FILE_ALLOWED_DIRS: &str = "kubernetes.operator.user.artifacts.file.allowed-dirs";
    /// Manage the Ingress of spec.ingress (default true).
    pub const INGRESS_MANAGE: &str = "kubernetes.operator.ingress.manage";
    /// Merge pod-template lists by element name instead of index (default false).
    pub const POD_TEMPLATE_MERGE_ARRAYS_BY_NAME: &str =
        "kubernetes.operator.pod-template.merge-arrays-by-name";
    /// Our addition. The Pod Security Standards level every pod template is checked against
    /// at admission: `privileged` (no check, the default), `baseline` or `restricted`.
    pub const POD_SECURITY_LEVEL: &str = "kubernetes.operator.pod-security.level";
    /// Our addition. Let pod templates and the Flink service-account keys name another
    /// ServiceAccount than `spec.serviceAccount` (default false).
    pub const POD_TEMPLATE_ALLOW_OTHER_SERVICE_ACCOUNT: &str =
        "kubernetes.operator.pod-template.allow-other-service-account";
    /// Serve the health probe (default true).
    pub const HEALTH_PROBE_ENABLED: &str = "kubernetes.operator.health.probe.enabled";
    /// Health probe port (default 8085).
    pub const HEALTH_PROBE_PORT: &str = "kubernetes.operator.health.probe.port";
    /// Canary reconcile deadline (default 1 min).
    pub const HEALTH_CANARY_RESOURCE_TIMEOUT: &str = "kubernetes.operator.health.canary.resource.timeout";
    /// Leader election on (default false).
    pub const LEADER_ELECTION_ENABLED: &str = "kubernetes.operator.leader-election.enabled";
    /// Lease name (required with leader election).
    pub const LEADER_ELECTION_LEASE_NAME: &str = "kubernetes.operator.leader-election.lease-name";
    /// Lease duration (default 15 s).
    pub const LEADER_ELECTION_LEASE_DURATION: &str = "kubernetes.operator.leader-election.lease-duration";
    /// Renew deadline (default 10 s).
    pub const LEADER_ELECTION_RENEW_DEADLINE: &str = "kubernetes.operator.leader-election.renew-deadline";
    /// Retry period (default 2 s).
    pub const LEADER_ELECTION_RETRY_PERIOD: &str = "kubernetes.operator.leader-election.retry-period";
}

/// Blue/green options, set in a FlinkBlueGreenDeployment's `spec.configuration`.
pub mod bluegreen {
    /// Time the new child has to become RUNNING and STABLE (default 10 min).
    pub const ABORT_GRACE_PERIOD: &str = "kubernetes.operator.bluegreen.abort.grace-period";
    /// Polling interval during transitions (default 15 s).
    pub const RECONCILIATION_RESCHEDULE_INTERVAL: &str =
        "kubernetes.operator.bluegreen.reconciliation.reschedule-interval";
    /// Time the old child keeps running after the new one is ready (default 0 ms).
    pub const DEPLOYMENT_DELETION_DELAY: &str = "kubernetes.operator.bluegreen.deployment-deletion.delay";
    /// ADVANCED: bound on the gate phase (default: the abort grace period).
    pub const GATE_TIMEOUT: &str = "kubernetes.operator.bluegreen.gate.timeout";
}

/// The job autoscaler's keys (`job.autoscaler.*`, as the Apache operator names them) that
/// the operator reads.
pub mod autoscaler {
    pub const ENABLED: &str = "job.autoscaler.enabled";
    pub const SCALING_ENABLED: &str = "job.autoscaler.scaling.enabled";
    pub const METRICS_WINDOW: &str = "job.autoscaler.metrics.window";
    pub const STABILIZATION_INTERVAL: &str = "job.autoscaler.stabilization.interval";
    pub const UTILIZATION_TARGET: &str = "job.autoscaler.utilization.target";
    pub const UTILIZATION_BOUNDARY: &str = "job.autoscaler.target.utilization.boundary";
    pub const UTILIZATION_MAX: &str = "job.autoscaler.utilization.max";
    pub const UTILIZATION_MIN: &str = "job.autoscaler.utilization.min";
    pub const SCALE_DOWN_INTERVAL: &str = "job.autoscaler.scale-down.interval";
    pub const VERTEX_MIN_PARALLELISM: &str = "job.autoscaler.vertex.min-parallelism";
    pub const VERTEX_MAX_PARALLELISM: &str = "job.autoscaler.vertex.max-parallelism";
    pub const SCALE_DOWN_MAX_FACTOR: &str = "job.autoscaler.scale-down.max-factor";
    pub const SCALE_UP_MAX_FACTOR: &str = "job.autoscaler.scale-up.max-factor";
    pub const CATCH_UP_DURATION: &str = "job.autoscaler.catch-up.duration";
    pub const VERTEX_EXCLUDE_IDS: &str = "job.autoscaler.vertex.exclude.ids";
    pub const EXCLUDED_PERIODS: &str = "job.autoscaler.excluded.periods";
    pub const RESTART_TIME: &str = "job.autoscaler.restart.time";
    pub const HISTORY_MAX_COUNT: &str = "job.autoscaler.history.max.count";
    pub const HISTORY_MAX_AGE: &str = "job.autoscaler.history.max.age";
    pub const OBSERVED_SCALABILITY_ENABLED: &str = "job.autoscaler.observed-scalability.enabled";
    pub const OBSERVED_SCALABILITY_MIN_OBSERVATIONS: &str =
        "job.autoscaler.observed-scalability.min-observations";
    pub const OBSERVED_SCALABILITY_COEFFICIENT_MIN: &str =
        "job.autoscaler.observed-scalability.coefficient-min";
    /// The keys the autoscaler reads.
    pub const READ: &[&str] = &[
        ENABLED,
        SCALING_ENABLED,
        EXCLUDED_PERIODS,
        RESTART_TIME,
        HISTORY_MAX_COUNT,
        HISTORY_MAX_AGE,
        OBSERVED_SCALABILITY_ENABLED,
        OBSERVED_SCALABILITY_MIN_OBSERVATIONS,
        OBSERVED_SCALABILITY_COEFFICIENT_MIN,
        METRICS_WINDOW,
        STABILIZATION_INTERVAL,
        UTILIZATION_TARGET,
        UTILIZATION_BOUNDARY,
        UTILIZATION_MAX,
        UTILIZATION_MIN,
        SCALE_DOWN_INTERVAL,
        VERTEX_MIN_PARALLELISM,
        VERTEX_MAX_PARALLELISM,
        SCALE_DOWN_MAX_FACTOR,
        SCALE_UP_MAX_FACTOR,
        CATCH_UP_DURATION,
        VERTEX_EXCLUDE_IDS,
    ];
}

/// Flink configuration keys the operator reads or writes.
pub mod flink {
    /// Prefix of the autoscaler's keys; like the operator's, they are not written to Flink.
    pub const AUTOSCALER_PREFIX: &str = "job.autoscaler.";
    /// REST over SSL, current name first, then the older switch Flink still falls back to.
    pub const SSL_REST_ENABLED_KEYS: [&str; 2] = ["security.ssl.rest.enabled", "security.ssl.enabled"];
    /// The state backend (`hashmap`, `rocksdb`, `forst`, or a factory class).
    pub const STATE_BACKEND_TYPE: &str = "state.backend.type";
    /// The legacy name of [`STATE_BACKEND_TYPE`], still read by Flink.
    pub const STATE_BACKEND_LEGACY: &str = "state.backend";
    /// Checkpoint directory (Flink 1.20+ name).
    pub const CHECKPOINTING_DIR: &str = "execution.checkpointing.dir";
    /// Checkpoint directory (deprecated name).
    pub const STATE_CHECKPOINTS_DIR: &str = "state.checkpoints.dir";
    /// Checkpoint directory keys, current first.
    pub const CHECKPOINT_DIR_KEYS: [&str; 2] = [CHECKPOINTING_DIR, STATE_CHECKPOINTS_DIR];
    /// Savepoint directory (Flink 1.20+ name).
    pub const CHECKPOINTING_SAVEPOINT_DIR: &str = "execution.checkpointing.savepoint-dir";
    /// Savepoint directory (deprecated name).
    pub const STATE_SAVEPOINTS_DIR: &str = "state.savepoints.dir";
    /// Savepoint directory keys, current first.
    pub const SAVEPOINT_DIR_KEYS: [&str; 2] = [CHECKPOINTING_SAVEPOINT_DIR, STATE_SAVEPOINTS_DIR];
    /// Completed checkpoints kept, current name first.
    pub const CHECKPOINTS_RETAINED_KEYS: [&str; 2] = [
        "execution.checkpointing.num-retained",
        "state.checkpoints.num-retained",
    ];
    /// Checkpoint interval.
    pub const CHECKPOINTING_INTERVAL: &str = "execution.checkpointing.interval";
    /// Externalized checkpoint retention (the operator defaults it to RETAIN_ON_CANCELLATION).
    pub const CHECKPOINTING_EXTERNALIZED_RETENTION: &str =
        "execution.checkpointing.externalized-checkpoint-retention";
    /// High-availability mode (current name).
    pub const HIGH_AVAILABILITY_TYPE: &str = "high-availability.type";
    /// High-availability mode (deprecated name).
    pub const HIGH_AVAILABILITY: &str = "high-availability";
    /// High-availability keys, current first.
    pub const HIGH_AVAILABILITY_KEYS: [&str; 2] = [HIGH_AVAILABILITY_TYPE, HIGH_AVAILABILITY];
    /// High-availability values that mean Kubernetes HA.
    pub const KUBERNETES_HA_VALUES: [&str; 2] = [
        "kubernetes",
        "org.apache.flink.kubernetes.highavailability.KubernetesHaServicesFactory",
    ];
    /// High-availability values that mean ZooKeeper HA.
    pub const ZOOKEEPER_HA_VALUES: [&str; 1] = ["zookeeper"];
    /// The ZooKeeper quorum of ZooKeeper HA (`host:port,...`, optionally a chroot), current
    /// name first.
    pub const ZOOKEEPER_QUORUM_KEYS: [&str; 2] =
        ["high-availability.zookeeper.quorum", "recovery.zookeeper.quorum"];
    /// The root node of Flink's ZooKeeper HA metadata (default `/flink`), current name first.
    pub const ZOOKEEPER_ROOT_KEYS: [&str; 2] = [
        "high-availability.zookeeper.path.root",
        "recovery.zookeeper.path.root",
    ];
    /// Where ZooKeeper HA keeps submitted jobs, when not at their defaults (`/jobgraphs` on
    /// 1.x, `/execution-plans` on 2.x).
    pub const ZOOKEEPER_JOB_GRAPH_PATH_KEYS: [&str; 2] = [
        "high-availability.zookeeper.path.jobgraphs",
        "high-availability.zookeeper.path.execution-plans",
    ];
    /// High-availability storage directory.
    pub const HIGH_AVAILABILITY_STORAGE_DIR: &str = "high-availability.storageDir";
    /// High-availability cluster id (set to the resource name when HA is on).
    pub const HIGH_AVAILABILITY_CLUSTER_ID: &str = "high-availability.cluster-id";
    /// Namespace of the cluster.
    pub const KUBERNETES_NAMESPACE: &str = "kubernetes.namespace";
    /// Cluster id (the resource name).
    pub const KUBERNETES_CLUSTER_ID: &str = "kubernetes.cluster-id";
    /// Slots per TaskManager.
    pub const TASKMANAGER_NUMBER_OF_TASK_SLOTS: &str = "taskmanager.numberOfTaskSlots";
    /// JobManager process memory.
    pub const JOBMANAGER_MEMORY_PROCESS_SIZE: &str = "jobmanager.memory.process.size";
    /// TaskManager process memory.
    pub const TASKMANAGER_MEMORY_PROCESS_SIZE: &str = "taskmanager.memory.process.size";
    /// Default parallelism.
    pub const PARALLELISM_DEFAULT: &str = "parallelism.default";
    /// Scheduler mode (`REACTIVE` for reactive mode).
    pub const SCHEDULER_MODE: &str = "scheduler-mode";
    /// The JobManager's scheduler (`Default`, `Adaptive`, `AdaptiveBatch`).
    pub const JOBMANAGER_SCHEDULER: &str = "jobmanager.scheduler";
    /// Per job vertex parallelism (`<vertex id>:<parallelism>,...`).
    pub const PIPELINE_JOBVERTEX_PARALLELISM_OVERRIDES: &str = "pipeline.jobvertex-parallelism-overrides";
    /// Restore path (deprecated name, still read by Flink 2.x).
    pub const EXECUTION_SAVEPOINT_PATH: &str = "execution.savepoint.path";
    /// Restore path (Flink 2.x name).
    pub const EXECUTION_STATE_RECOVERY_PATH: &str = "execution.state-recovery.path";
    /// Allow non-restored state.
    pub const EXECUTION_SAVEPOINT_IGNORE_UNCLAIMED_STATE: &str = "execution.savepoint.ignore-unclaimed-state";
    /// Deployment target (`kubernetes-application` / `kubernetes-session`).
    pub const EXECUTION_TARGET: &str = "execution.target";
    /// Keep the cluster after the application finishes.
    pub const EXECUTION_SHUTDOWN_ON_APPLICATION_FINISH: &str = "execution.shutdown-on-application-finish";
    /// Submit a failed job on application error.
    pub const EXECUTION_SUBMIT_FAILED_JOB_ON_APPLICATION_ERROR: &str =
        "execution.submit-failed-job-on-application-error";
    /// Job jars (native mode).
    pub const PIPELINE_JARS: &str = "pipeline.jars";
    /// Job classpath (standalone mode).
    pub const PIPELINE_CLASSPATHS: &str = "pipeline.classpaths";
    /// Job name.
    pub const PIPELINE_NAME: &str = "pipeline.name";
    /// Image of the JobManager and TaskManager containers.
    pub const KUBERNETES_CONTAINER_IMAGE_REF: &str = "kubernetes.container.image.ref";
    /// Image key before Flink 1.17.
    pub const KUBERNETES_CONTAINER_IMAGE: &str = "kubernetes.container.image";
    /// Image pull policy.
    pub const KUBERNETES_CONTAINER_IMAGE_PULL_POLICY: &str = "kubernetes.container.image.pull-policy";
    /// Service account of the Flink pods.
    pub const KUBERNETES_SERVICE_ACCOUNT: &str = "kubernetes.service-account";
    /// JobManager pod template file.
    pub const KUBERNETES_POD_TEMPLATE_FILE_JOBMANAGER: &str = "kubernetes.pod-template-file.jobmanager";
    /// TaskManager pod template file.
    pub const KUBERNETES_POD_TEMPLATE_FILE_TASKMANAGER: &str = "kubernetes.pod-template-file.taskmanager";
    /// JobManager CPU.
    pub const KUBERNETES_JOBMANAGER_CPU_AMOUNT: &str = "kubernetes.jobmanager.cpu.amount";
    /// TaskManager CPU.
    pub const KUBERNETES_TASKMANAGER_CPU_AMOUNT: &str = "kubernetes.taskmanager.cpu.amount";
    /// JobManager replicas.
    pub const KUBERNETES_JOBMANAGER_REPLICAS: &str = "kubernetes.jobmanager.replicas";
    /// Annotations of the JobManager Deployment.
    pub const KUBERNETES_JOBMANAGER_ANNOTATIONS: &str = "kubernetes.jobmanager.annotations";
    /// Owner reference of the JobManager Deployment.
    pub const KUBERNETES_JOBMANAGER_OWNER_REFERENCE: &str = "kubernetes.jobmanager.owner.reference";
    /// Service type of the REST service.
    pub const KUBERNETES_REST_SERVICE_EXPOSED_TYPE: &str = "kubernetes.rest-service.exposed.type";
    /// Whether the web UI may cancel jobs.
    pub const WEB_CANCEL_ENABLE: &str = "web.cancel.enable";
    /// REST port.
    pub const REST_PORT: &str = "rest.port";
    /// Job id to use (internal).
    pub const INTERNAL_PIPELINE_JOB_ID: &str = "$internal.pipeline.job-id";
    /// Main class (internal).
    pub const INTERNAL_APPLICATION_MAIN: &str = "$internal.application.main";
    /// Program arguments (internal).
    pub const INTERNAL_APPLICATION_PROGRAM_ARGS: &str = "$internal.application.program-args";
    /// Flink version of the image (internal).
    pub const INTERNAL_FLINK_VERSION: &str = "$internal.flink.version";
    /// Job result store path.
    pub const JOB_RESULT_STORE_STORAGE_PATH: &str = "job-result-store.storage-path";
    /// Job result store delete-on-commit.
    pub const JOB_RESULT_STORE_DELETE_ON_COMMIT: &str = "job-result-store.delete-on-commit";
    /// JobManager RPC port.
    pub const JOBMANAGER_RPC_PORT: &str = "jobmanager.rpc.port";
    /// JobManager RPC address.
    pub const JOBMANAGER_RPC_ADDRESS: &str = "jobmanager.rpc.address";
    /// TaskManager RPC port.
    pub const TASKMANAGER_RPC_PORT: &str = "taskmanager.rpc.port";
    /// Blob server port.
    pub const BLOB_SERVER_PORT: &str = "blob.server.port";
    /// JobManager port with high availability.
    pub const HIGH_AVAILABILITY_JOBMANAGER_PORT: &str = "high-availability.jobmanager.port";
    /// Cluster mode of the native integration (internal).
    pub const KUBERNETES_INTERNAL_CLUSTER_MODE: &str = "kubernetes.internal.cluster-mode";
    /// TaskManager replicas of a standalone cluster (internal).
    pub const KUBERNETES_INTERNAL_TASKMANAGER_REPLICAS: &str = "kubernetes.internal.taskmanager.replicas";
    /// Entry point class of the native JobManager (internal).
    pub const KUBERNETES_INTERNAL_JOBMANAGER_ENTRYPOINT_CLASS: &str =
        "kubernetes.internal.jobmanager.entrypoint.class";
    /// Execution mode of the cluster (internal).
    pub const INTERNAL_CLUSTER_EXECUTION_MODE: &str = "internal.cluster.execution-mode";
    /// JobManager memory limit factor.
    pub const KUBERNETES_JOBMANAGER_MEMORY_LIMIT_FACTOR: &str = "kubernetes.jobmanager.memory.limit-factor";
    /// TaskManager memory limit factor.
    pub const KUBERNETES_TASKMANAGER_MEMORY_LIMIT_FACTOR: &str = "kubernetes.taskmanager.memory.limit-factor";
    /// JobManager CPU limit factor.
    pub const KUBERNETES_JOBMANAGER_CPU_LIMIT_FACTOR: &str = "kubernetes.jobmanager.cpu.limit-factor";
    /// TaskManager CPU limit factor.
    pub const KUBERNETES_TASKMANAGER_CPU_LIMIT_FACTOR: &str = "kubernetes.taskmanager.cpu.limit-factor";

    /// Every key the operator may write into a Flink 2.x cluster's configuration beside the
    /// user's: admission checks them with the user's keys for sections that the nested
    /// `config.yaml` cannot hold (a test of the builder keeps the list complete). The JVM
    /// option keys (before 1.19) and `kubernetes.container.image` (before 1.17) are written
    /// only to the flat file of older versions.
    pub const WRITTEN_BY_OPERATOR: &[&str] = &[
        KUBERNETES_REST_SERVICE_EXPOSED_TYPE,
        WEB_CANCEL_ENABLE,
        INTERNAL_FLINK_VERSION,
        KUBERNETES_CONTAINER_IMAGE_REF,
        KUBERNETES_CONTAINER_IMAGE_PULL_POLICY,
        KUBERNETES_SERVICE_ACCOUNT,
        KUBERNETES_CLUSTER_ID,
        KUBERNETES_NAMESPACE,
        KUBERNETES_JOBMANAGER_REPLICAS,
        KUBERNETES_JOBMANAGER_OWNER_REFERENCE,
        KUBERNETES_POD_TEMPLATE_FILE_TASKMANAGER,
        KUBERNETES_INTERNAL_CLUSTER_MODE,
        KUBERNETES_INTERNAL_TASKMANAGER_REPLICAS,
        KUBERNETES_INTERNAL_JOBMANAGER_ENTRYPOINT_CLASS,
        KUBERNETES_JOBMANAGER_CPU_AMOUNT,
        KUBERNETES_TASKMANAGER_CPU_AMOUNT,
        KUBERNETES_JOBMANAGER_MEMORY_LIMIT_FACTOR,
        KUBERNETES_TASKMANAGER_MEMORY_LIMIT_FACTOR,
        KUBERNETES_JOBMANAGER_CPU_LIMIT_FACTOR,
        KUBERNETES_TASKMANAGER_CPU_LIMIT_FACTOR,
        JOBMANAGER_MEMORY_PROCESS_SIZE,
        TASKMANAGER_MEMORY_PROCESS_SIZE,
        TASKMANAGER_NUMBER_OF_TASK_SLOTS,
        PARALLELISM_DEFAULT,
        PIPELINE_NAME,
        PIPELINE_JARS,
        PIPELINE_CLASSPATHS,
        EXECUTION_TARGET,
        EXECUTION_SAVEPOINT_PATH,
        EXECUTION_SAVEPOINT_IGNORE_UNCLAIMED_STATE,
        EXECUTION_STATE_RECOVERY_PATH,
        EXECUTION_SHUTDOWN_ON_APPLICATION_FINISH,
        EXECUTION_SUBMIT_FAILED_JOB_ON_APPLICATION_ERROR,
        INTERNAL_CLUSTER_EXECUTION_MODE,
        INTERNAL_PIPELINE_JOB_ID,
        INTERNAL_APPLICATION_MAIN,
        INTERNAL_APPLICATION_PROGRAM_ARGS,
        CHECKPOINTING_INTERVAL,
        CHECKPOINTING_EXTERNALIZED_RETENTION,
        HIGH_AVAILABILITY_STORAGE_DIR,
        HIGH_AVAILABILITY_CLUSTER_ID,
        HIGH_AVAILABILITY_JOBMANAGER_PORT,
        JOB_RESULT_STORE_STORAGE_PATH,
        JOB_RESULT_STORE_DELETE_ON_COMMIT,
        JOBMANAGER_RPC_PORT,
        JOBMANAGER_RPC_ADDRESS,
        TASKMANAGER_RPC_PORT,
        BLOB_SERVER_PORT,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_the_operator_writes_fit_a_nested_config_yaml_together() {
        assert_eq!(
            crate::config::section_clash(flink::WRITTEN_BY_OPERATOR.iter().copied()),
            None
        );
        assert_eq!(
            crate::config::section_clash(["a", "a-x", "a.b", "c"]),
            Some(("a", "a.b"))
        );
        assert_eq!(crate::config::section_clash(["a.b", "a.c", "ab"]), None);
    }

    #[test]
    fn api_version_is_group_slash_version() {
        assert_eq!(API_VERSION, format!("{GROUP}/{VERSION}"));
    }

    #[test]
    fn operator_keys_share_the_prefix() {
        for key in [
            operator::RECONCILE_INTERVAL,
            operator::JOB_UPGRADE_SAVEPOINT_MAX_AGE,
            operator::JOB_RESTORE_MAX_STATE_AGE,
            operator::PERIODIC_SAVEPOINT_INTERVAL,
            bluegreen::ABORT_GRACE_PERIOD,
        ] {
            assert!(key.starts_with(operator::PREFIX), "{key}");
        }
    }
}
