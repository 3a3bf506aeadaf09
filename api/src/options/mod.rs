//! The operator configuration keys as a table: each `kubernetes.operator.*` key the operator
//! acts on, with the default the code applies, the kinds it steers, where it may be set and
//! what it means; and, apart, the keys that are accepted for compatibility with the Apache
//! operator but not acted on.
//!
//! The defaults in [`defaults`] are the values the code falls back to (the controller's
//! policy, the admission rules); the table names the same constants, so the configuration
//! reference (`docs/reference/configuration.md`, generated from [`OPTIONS`]) cannot state
//! another default than the one applied. A test of the binary checks that every key
//! constant of [`crate::keys`] is in exactly one of the two tables, and that the keys the
//! controllers and the process read are in [`OPTIONS`].

use crate::keys::{bluegreen, kinds, operator};

pub mod effect;
pub mod periods;
pub mod schedule;
mod value;

pub use value::{
    OptionType, parse_bool, parse_count, parse_duration, parse_integer, parse_map, parse_millis, read,
};

/// The defaults the code applies when a key is not set.
pub mod defaults {
    const SECOND_MS: i64 = 1000;
    const MINUTE_MS: i64 = 60 * SECOND_MS;
    const DAY_MS: i64 = 24 * 60 * MINUTE_MS;

    /// `kubernetes.operator.reconcile.interval`.
    pub const RECONCILE_INTERVAL_MS: i64 = MINUTE_MS;
    /// The shortest reconcile and progress-check interval: a shorter one is raised to it (a
    /// zero interval would be a busy loop).
    pub const MIN_INTERVAL_MS: i64 = SECOND_MS;
    /// `kubernetes.operator.reconcile.parallelism`.
    pub const RECONCILE_PARALLELISM: u16 = 50;
    /// `kubernetes.operator.observer.progress-check.interval`.
    pub const PROGRESS_CHECK_INTERVAL_MS: i64 = 10 * SECOND_MS;
    /// `kubernetes.operator.deployment.rollback.enabled`.
    pub const DEPLOYMENT_ROLLBACK_ENABLED: bool = false;
    /// `kubernetes.operator.deployment.readiness.timeout`.
    pub const DEPLOYMENT_READINESS_TIMEOUT_MS: i64 = 5 * MINUTE_MS;
    /// `kubernetes.operator.job.upgrade.take-savepoint`.
    pub const JOB_UPGRADE_TAKE_SAVEPOINT: bool = true;
    /// `kubernetes.operator.job.revision-history.limit`.
    pub const JOB_REVISION_HISTORY_LIMIT: usize = 10;
    /// `kubernetes.operator.job.restart.failed`.
    pub const JOB_RESTART_FAILED: bool = false;
    /// `kubernetes.operator.job.drain-on-savepoint-deletion`.
    pub const JOB_DRAIN_ON_SAVEPOINT_DELETION: bool = false;
    /// `kubernetes.operator.jm-deployment-recovery.enabled`.
    pub const JM_DEPLOYMENT_RECOVERY_ENABLED: bool = true;
    /// `kubernetes.operator.cluster.health-check.enabled`.
    pub const CLUSTER_HEALTH_CHECK_ENABLED: bool = false;
    /// `kubernetes.operator.cluster.health-check.restarts.window`.
    pub const CLUSTER_HEALTH_CHECK_RESTARTS_WINDOW_MS: i64 = 2 * MINUTE_MS;
    /// `kubernetes.operator.cluster.health-check.restarts.threshold`.
    pub const CLUSTER_HEALTH_CHECK_RESTARTS_THRESHOLD: i64 = 64;
    /// `kubernetes.operator.cluster.health-check.checkpoint-progress.enabled`.
    pub const CLUSTER_HEALTH_CHECK_CHECKPOINT_PROGRESS_ENABLED: bool = true;
    /// `kubernetes.operator.savepoint.trigger.grace-period`.
    pub const SAVEPOINT_TRIGGER_GRACE_PERIOD_MS: i64 = MINUTE_MS;
    /// `kubernetes.operator.savepoint.cleanup.enabled`.
    pub const SAVEPOINT_CLEANUP_ENABLED: bool = true;
    /// `kubernetes.operator.savepoint.history.max.count`.
    pub const SAVEPOINT_HISTORY_MAX_COUNT: usize = 10;
    /// `kubernetes.operator.savepoint.history.max.age`.
    pub const SAVEPOINT_HISTORY_MAX_AGE_MS: i64 = DAY_MS;
    /// `kubernetes.operator.session.deletion.block-on-session-jobs`.
    pub const SESSION_DELETION_BLOCK_ON_SESSION_JOBS: bool = true;
    /// `kubernetes.operator.user.artifacts.allowed-schemes`.
    pub const USER_ARTIFACTS_ALLOWED_SCHEMES: &str = "https";
    /// `kubernetes.operator.user.artifacts.disallow-restricted-hosts`.
    pub const USER_ARTIFACTS_DISALLOW_RESTRICTED_HOSTS: bool = true;
    /// `kubernetes.operator.pod-template.merge-arrays-by-name`.
    pub const POD_TEMPLATE_MERGE_ARRAYS_BY_NAME: bool = false;
    /// `kubernetes.operator.pod-security.level`.
    pub const POD_SECURITY_LEVEL: &str = "privileged";
    /// `kubernetes.operator.pod-template.allow-other-service-account`.
    pub const POD_TEMPLATE_ALLOW_OTHER_SERVICE_ACCOUNT: bool = false;
    /// `kubernetes.operator.snapshot.resource.enabled`.
    pub const SNAPSHOT_RESOURCE_ENABLED: bool = true;
    /// `kubernetes.operator.ingress.manage`.
    pub const INGRESS_MANAGE: bool = true;
    /// `kubernetes.operator.savepoint.dispose-on-delete`.
    pub const SAVEPOINT_DISPOSE_ON_DELETE: bool = false;
    /// `kubernetes.operator.savepoint.history.include-manual`.
    pub const SAVEPOINT_HISTORY_INCLUDE_MANUAL: bool = false;
    /// `kubernetes.operator.jm-deployment.startup.probe.enabled`.
    pub const JM_DEPLOYMENT_STARTUP_PROBE_ENABLED: bool = true;
    /// `kubernetes.operator.bluegreen.abort.grace-period`.
    pub const BLUEGREEN_ABORT_GRACE_PERIOD_MS: i64 = 10 * MINUTE_MS;
    /// `kubernetes.operator.leader-election.lease-duration`.
    pub const LEADER_ELECTION_LEASE_DURATION_MS: i64 = 15 * SECOND_MS;
    /// `kubernetes.operator.leader-election.renew-deadline`.
    pub const LEADER_ELECTION_RENEW_DEADLINE_MS: i64 = 10 * SECOND_MS;
    /// `kubernetes.operator.leader-election.retry-period`.
    pub const LEADER_ELECTION_RETRY_PERIOD_MS: i64 = 2 * SECOND_MS;
    /// `kubernetes.operator.job.upgrade.last-state-fallback.enabled`.
    pub const JOB_UPGRADE_LAST_STATE_FALLBACK_ENABLED: bool = true;
    /// `kubernetes.operator.dynamic.config.enabled`.
    pub const DYNAMIC_CONFIG_ENABLED: bool = true;
    /// `kubernetes.operator.dynamic.namespaces.enabled`.
    pub const DYNAMIC_NAMESPACES_ENABLED: bool = false;
    /// `kubernetes.operator.operator-namespace.flink-resources.enabled`.
    pub const OPERATOR_NAMESPACE_FLINK_RESOURCES_ENABLED: bool = false;
    /// `kubernetes.operator.dynamic.config.check.interval`.
    pub const DYNAMIC_CONFIG_CHECK_INTERVAL_MS: i64 = 5 * MINUTE_MS;
    /// `kubernetes.operator.jm-deployment.shutdown-ttl`.
    pub const JM_DEPLOYMENT_SHUTDOWN_TTL_MS: i64 = 24 * 60 * MINUTE_MS;
    /// `kubernetes.operator.job.upgrade.ignore-pending-savepoint`.
    pub const JOB_UPGRADE_IGNORE_PENDING_SAVEPOINT: bool = false;
    /// `kubernetes.operator.job.upgrade.inplace-scaling.enabled`.
    pub const JOB_UPGRADE_INPLACE_SCALING_ENABLED: bool = true;
    /// `kubernetes.operator.session.deletion.block-on-unmanaged-jobs`.
    pub const SESSION_DELETION_BLOCK_ON_UNMANAGED_JOBS: bool = true;
    /// `kubernetes.operator.flink.client.timeout`.
    pub const FLINK_CLIENT_TIMEOUT_MS: i64 = 10 * SECOND_MS;
    /// `kubernetes.operator.job.submission.timeout`.
    pub const JOB_SUBMISSION_TIMEOUT_MS: i64 = 2 * MINUTE_MS;
    /// `kubernetes.operator.bluegreen.reconciliation.reschedule-interval`.
    pub const BLUEGREEN_RESCHEDULE_INTERVAL_MS: i64 = 15 * SECOND_MS;
    /// `kubernetes.operator.bluegreen.deployment-deletion.delay`.
    pub const BLUEGREEN_DEPLOYMENT_DELETION_DELAY_MS: i64 = 0;
    /// `kubernetes.operator.reconcile.interval.min`: a look every 10 s is enough to follow a
    /// job, and 60 resources of one tenant at it cost the operator 6 reconciles a second.
    pub const RECONCILE_INTERVAL_MIN_MS: i64 = 10 * SECOND_MS;
    /// `kubernetes.operator.observer.progress-check.interval.min`: a cluster starts or a
    /// savepoint completes in seconds, not in less than one.
    pub const PROGRESS_CHECK_INTERVAL_MIN_MS: i64 = 5 * SECOND_MS;
    /// `kubernetes.operator.periodic.savepoint.interval.min` and
    /// `kubernetes.operator.periodic.checkpoint.interval.min`: each periodic snapshot is a
    /// FlinkStateSnapshot object (etcd, the operator's cache) and a write of the job's whole
    /// state; Flink's own checkpoints are for shorter intervals.
    pub const PERIODIC_SNAPSHOT_INTERVAL_MIN_MS: i64 = MINUTE_MS;
    /// `kubernetes.operator.snapshot.resource.max.count`.
    pub const SNAPSHOT_RESOURCE_MAX_COUNT: usize = 100;
    /// `kubernetes.operator.snapshot.resource.max.age`.
    pub const SNAPSHOT_RESOURCE_MAX_AGE_MS: i64 = 30 * DAY_MS;
    /// `kubernetes.operator.job.parallelism.max`.
    pub const JOB_PARALLELISM_MAX: i64 = 1000;
    /// `kubernetes.operator.taskmanager.replicas.max`.
    pub const TASKMANAGER_REPLICAS_MAX: i64 = 100;
    /// `kubernetes.operator.jobmanager.replicas.max`.
    pub const JOBMANAGER_REPLICAS_MAX: i64 = 3;
}

/// The default of a key, as the code applies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultValue {
    /// A boolean.
    Bool(bool),
    /// A duration, in milliseconds.
    Millis(i64),
    /// A whole number.
    Number(i64),
    /// A text value, shown as is.
    Text(&'static str),
    /// No value: what being unset means.
    Unset(&'static str),
}

impl std::fmt::Display for DefaultValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DefaultValue::Bool(b) => write!(f, "`{b}`"),
            DefaultValue::Millis(ms) => write!(f, "`{}`", duration_text(*ms)),
            DefaultValue::Number(n) => write!(f, "`{n}`"),
            DefaultValue::Text(t) => write!(f, "`{t}`"),
            DefaultValue::Unset(what) => write!(f, "unset ({what})"),
        }
    }
}

/// A duration in the largest unit that divides it, in Flink's notation (`1 min`, `10 s`).
pub fn duration_text(ms: i64) -> String {
    const UNITS: [(i64, &str); 5] = [
        (24 * 60 * 60 * 1000, "d"),
        (60 * 60 * 1000, "h"),
        (60 * 1000, "min"),
        (1000, "s"),
        (1, "ms"),
    ];
    match UNITS.iter().find(|(unit, _)| ms != 0 && ms % unit == 0) {
        Some((unit, name)) => format!("{} {name}", ms / unit),
        None => format!("{ms} ms"),
    }
}

/// Where a key may be set, from the broadest to the narrowest place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetIn {
    /// The operator configuration file only (read once, at start).
    OperatorFile,
    /// The operator configuration file and its namespace overlays
    /// (`kubernetes.operator.default-configuration.namespace.<ns>.<key>`); a resource cannot
    /// set it (it bounds what a resource may make the operator do).
    OperatorAndNamespace,
    /// A platform limit: the operator configuration file and its namespace overlays only, and
    /// refused by admission in a resource (a tenant must not raise the limit that bounds it).
    Platform,
    /// Anywhere in a resource's effective configuration: the operator configuration file, its
    /// Flink-version and namespace overlays, and the resource's `spec.flinkConfiguration`
    /// (for a FlinkSessionJob: its session cluster's `spec.flinkConfiguration`, then its own).
    Resource,
    /// A FlinkBlueGreenDeployment's `spec.configuration`.
    BlueGreenConfiguration,
    /// Nowhere by a user: the operator writes it into the spec it records (admission refuses
    /// it in a resource).
    ByTheOperator,
}

impl SetIn {
    /// How the reference page says it.
    pub fn describe(self) -> &'static str {
        match self {
            SetIn::OperatorFile => "operator configuration file",
            SetIn::OperatorAndNamespace => "operator configuration file, namespace overlay",
            SetIn::Platform => "operator configuration file, namespace overlay (refused in a resource)",
            SetIn::Resource => {
                "operator configuration file, namespace and Flink-version overlays, `spec.flinkConfiguration`"
            }
            SetIn::BlueGreenConfiguration => "FlinkBlueGreenDeployment `spec.configuration`",
            SetIn::ByTheOperator => "the operator only, in `status.reconciliationStatus.lastReconciledSpec`",
        }
    }

    /// Why admission refuses the key in a resource's configuration, when it does: who sets it.
    pub fn refused_in_spec(self) -> Option<&'static str> {
        match self {
            SetIn::Platform => Some(
                "is a platform limit, set by the platform in the operator configuration (or its \
                 per-namespace overlay kubernetes.operator.default-configuration.namespace.<namespace>.<key>), \
                 never in a resource: remove it",
            ),
            SetIn::ByTheOperator => {
                Some("is written by the operator into the recorded spec, not set by a user: remove it")
            }
            _ => None,
        }
    }
}

/// One key the operator acts on.
#[derive(Clone, Copy, Debug)]
pub struct OptionDoc {
    /// The key.
    pub key: &'static str,
    /// Older names of the key, also read (the current name wins).
    pub deprecated: &'static [&'static str],
    /// What its value must be: admission refuses another, every reader parses it so.
    pub ty: OptionType,
    /// The default the code applies.
    pub default: DefaultValue,
    /// The kinds whose handling it changes (`operator` for the process as a whole).
    pub applies_to: &'static [&'static str],
    /// Where it may be set.
    pub set_in: SetIn,
    /// What it does, in a sentence or two.
    pub meaning: &'static str,
}

/// One key accepted for compatibility (it is not refused, and is removed from the
/// configuration given to Flink) but not acted on.
#[derive(Clone, Copy, Debug)]
pub struct IgnoredOption {
    /// The key.
    pub key: &'static str,
    /// What its value must be (admission refuses another, as Flink's own parser would).
    pub ty: OptionType,
    /// What becomes of it, when more than nothing (checked by the webhook, etc.).
    pub note: &'static str,
}

const DEPLOYMENT: &[&str] = &[kinds::FLINK_DEPLOYMENT];
const JOBS: &[&str] = &[kinds::FLINK_DEPLOYMENT, kinds::FLINK_SESSION_JOB];
const SESSION_JOB: &[&str] = &[kinds::FLINK_SESSION_JOB];
const PROCESS: &[&str] = &["operator"];

const BLUE_GREEN: &[&str] = &[kinds::FLINK_BLUE_GREEN_DEPLOYMENT];
const DEPLOYMENT_AND_BLUE_GREEN: &[&str] = &[kinds::FLINK_DEPLOYMENT, kinds::FLINK_BLUE_GREEN_DEPLOYMENT];
const SNAPSHOT_AND_JOBS: &[&str] = &[
    kinds::FLINK_DEPLOYMENT,
    kinds::FLINK_SESSION_JOB,
    kinds::FLINK_STATE_SNAPSHOT,
];

/// Every key the operator acts on.
pub const OPTIONS: &[OptionDoc] = &[
    OptionDoc {
        key: operator::RECONCILE_INTERVAL,
        ty: OptionType::Duration,
        deprecated: &[operator::RECONCILE_INTERVAL_DEPRECATED],
        default: DefaultValue::Millis(defaults::RECONCILE_INTERVAL_MS),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "How soon a resource with nothing in progress is looked at again; at least \
                  `kubernetes.operator.reconcile.interval.min` (the webhook refuses a shorter \
                  one, the operator raises it) and 1 s. The webhook also refuses an autoscaler \
                  metrics window shorter than it.",
    },
    OptionDoc {
        key: operator::PROGRESS_CHECK_INTERVAL,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::PROGRESS_CHECK_INTERVAL_MS),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "How soon a resource with something in progress (a cluster starting, a \
                  savepoint pending) is looked at again; at least \
                  `kubernetes.operator.observer.progress-check.interval.min` and 1 s, and at \
                  most the reconcile interval.",
    },
    OptionDoc {
        key: operator::RECONCILE_PARALLELISM,
        ty: OptionType::Integer,
        deprecated: &[],
        default: DefaultValue::Number(defaults::RECONCILE_PARALLELISM as i64),
        applies_to: PROCESS,
        set_in: SetIn::OperatorFile,
        meaning: "How many resources of one kind are reconciled at once; a negative value \
                  lifts the bound.",
    },
    OptionDoc {
        key: operator::RECONCILE_NAMESPACE_SHARE,
        ty: OptionType::Count { min: 1 },
        deprecated: &[],
        default: DefaultValue::Unset("half of `kubernetes.operator.reconcile.parallelism`, at least 1"),
        applies_to: PROCESS,
        set_in: SetIn::OperatorFile,
        meaning: "The most resources of one kind and one namespace reconciled at once, so that \
                  one namespace (many resources, a JobManager that never answers) cannot hold \
                  every worker. While several namespaces want work, each gets an equal part of \
                  `kubernetes.operator.reconcile.parallelism` (at least 1), at most this; a \
                  resource of a namespace at its share waits 1 to 2 s and is counted in \
                  `flink_operator_reconcile_deferred_total`. A first reconcile and a deletion \
                  are held to this bound only. Without a bound on the parallelism there is no \
                  share either.",
    },
    OptionDoc {
        key: operator::DYNAMIC_CONFIG_ENABLED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::DYNAMIC_CONFIG_ENABLED),
        applies_to: PROCESS,
        set_in: SetIn::OperatorFile,
        meaning: "Read the configuration files again while the operator runs: a changed version \
                  that passes the checks is used by every later reconcile and admission, one \
                  that does not is logged and the previous version stays; keys read at start \
                  only (watched namespaces, label selector, leader election, REST client \
                  timeouts, reconcile parallelism and namespace share, snapshot resources, \
                  Ingress management, these two) are logged as waiting for a restart.",
    },
    OptionDoc {
        key: operator::DYNAMIC_NAMESPACES_ENABLED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::DYNAMIC_NAMESPACES_ENABLED),
        applies_to: PROCESS,
        set_in: SetIn::OperatorFile,
        meaning: "A change of `kubernetes.operator.watched.namespaces` found by the dynamic \
                  configuration is applied by a restart: the process stops as on SIGTERM \
                  (leadership released) and exits with 0, and the kubelet starts it again \
                  watching the new namespaces. Off, the change waits for the next start. \
                  `WATCH_NAMESPACES`, when set, wins over the file either way.",
    },
    OptionDoc {
        key: operator::OPERATOR_NAMESPACE_FLINK_RESOURCES_ENABLED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::OPERATOR_NAMESPACE_FLINK_RESOURCES_ENABLED),
        applies_to: PROCESS,
        set_in: SetIn::OperatorFile,
        meaning: "Admit Flink resources (all four kinds) in the operator's own namespace \
                  (`--operator-namespace`, `POD_NAMESPACE`, else its in-cluster ServiceAccount's). \
                  Off, the webhook refuses them and the controllers act on none there (status \
                  error and Event): that namespace holds the operator's credentials (its \
                  ServiceAccount, the webhook certificate, its configuration), and a Flink \
                  cluster there runs jobs whose JobManager REST API anyone who reaches it can \
                  use. An operator outside the cluster with no namespace given has none of its \
                  own.",
    },
    OptionDoc {
        key: operator::DYNAMIC_CONFIG_CHECK_INTERVAL,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::DYNAMIC_CONFIG_CHECK_INTERVAL_MS),
        applies_to: PROCESS,
        set_in: SetIn::OperatorFile,
        meaning: "How often the configuration files are read again (at least every second).",
    },
    OptionDoc {
        key: operator::WATCHED_NAMESPACES,
        ty: OptionType::Text,
        deprecated: &[],
        default: DefaultValue::Unset("all namespaces"),
        applies_to: PROCESS,
        set_in: SetIn::OperatorFile,
        meaning: "Comma-separated namespaces whose resources the operator manages (empty or \
                  `JOSDK_ALL_NAMESPACES`: all). The `WATCH_NAMESPACES` environment variable \
                  wins over it.",
    },
    OptionDoc {
        key: operator::LABEL_SELECTOR,
        ty: OptionType::Text,
        deprecated: &[],
        default: DefaultValue::Unset("every resource"),
        applies_to: PROCESS,
        set_in: SetIn::OperatorFile,
        meaning: "A label selector (`team=a`, `tier in (prod)`, `!canary`): the operator manages \
                  only the FlinkDeployments, FlinkSessionJobs, FlinkStateSnapshots and \
                  FlinkBlueGreenDeployments it selects, so that two operators can share \
                  namespaces. The webhook still checks every resource.",
    },
    OptionDoc {
        key: operator::LEADER_ELECTION_ENABLED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(false),
        applies_to: PROCESS,
        set_in: SetIn::OperatorFile,
        meaning: "Elect a leader among the operator's replicas through a Lease in the \
                  operator's namespace: every replica serves the webhook and keeps its caches, \
                  only the leader runs the controllers. Needs `lease-name`.",
    },
    OptionDoc {
        key: operator::LEADER_ELECTION_LEASE_NAME,
        ty: OptionType::Text,
        deprecated: &[],
        default: DefaultValue::Unset("required when leader election is on"),
        applies_to: PROCESS,
        set_in: SetIn::OperatorFile,
        meaning: "Name of the Lease (`coordination.k8s.io/v1`) the replicas compete for, in \
                  the operator's namespace; created by the first replica.",
    },
    OptionDoc {
        key: operator::LEADER_ELECTION_LEASE_DURATION,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::LEADER_ELECTION_LEASE_DURATION_MS),
        applies_to: PROCESS,
        set_in: SetIn::OperatorFile,
        meaning: "How long a replica waits, from the last change it saw to the Lease, before \
                  it takes the Lease of a leader that stopped renewing it. Longer than the \
                  renew deadline.",
    },
    OptionDoc {
        key: operator::LEADER_ELECTION_RENEW_DEADLINE,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::LEADER_ELECTION_RENEW_DEADLINE_MS),
        applies_to: PROCESS,
        set_in: SetIn::OperatorFile,
        meaning: "A leader that has not renewed its Lease for this long stops its controllers. \
                  The lease duration minus this is the margin that keeps two replicas from \
                  acting at once.",
    },
    OptionDoc {
        key: operator::LEADER_ELECTION_RETRY_PERIOD,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::LEADER_ELECTION_RETRY_PERIOD_MS),
        applies_to: PROCESS,
        set_in: SetIn::OperatorFile,
        meaning: "How often the leader renews its Lease; shorter than the renew deadline. The \
                  other replicas watch the Lease and take a released one at once.",
    },
    OptionDoc {
        key: operator::FLINK_CLIENT_TIMEOUT,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::FLINK_CLIENT_TIMEOUT_MS),
        applies_to: SNAPSHOT_AND_JOBS,
        set_in: SetIn::OperatorFile,
        meaning: "How long one request to a JobManager's REST API may take, from connecting to \
                  the last byte of its answer; one that times out is not retried within the \
                  reconcile, and the next look asks again.",
    },
    OptionDoc {
        key: operator::JOB_SUBMISSION_TIMEOUT,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::JOB_SUBMISSION_TIMEOUT_MS),
        applies_to: SESSION_JOB,
        set_in: SetIn::OperatorFile,
        meaning: "How long a session job's jar upload, and then its run (which waits for the \
                  job's main method to build its graph), may each take. The Apache operator's \
                  default is 10 min; a submission holds one of the loop's workers while it \
                  runs, so ours is shorter.",
    },
    OptionDoc {
        key: operator::INGRESS_MANAGE,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::INGRESS_MANAGE),
        applies_to: DEPLOYMENT_AND_BLUE_GREEN,
        set_in: SetIn::OperatorFile,
        meaning: "Whether the operator creates, updates and removes the Ingress of a \
                  FlinkDeployment's or FlinkBlueGreenDeployment's `spec.ingress` (named like \
                  the resource, routing to the `<name>-rest` Service; a blue/green deployment's \
                  to its active child's). `false` leaves Ingresses alone: none is watched, \
                  written or deleted.",
    },
    OptionDoc {
        key: operator::SNAPSHOT_RESOURCE_ENABLED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::SNAPSHOT_RESOURCE_ENABLED),
        applies_to: SNAPSHOT_AND_JOBS,
        set_in: SetIn::Resource,
        meaning: "Whether FlinkStateSnapshot resources are reconciled (savepoints and \
                  checkpoints taken, their savepoints disposed of on deletion), and whether a \
                  job's own savepoints and checkpoints (for an upgrade, periodic, asked for by a \
                  trigger nonce) are recorded as FlinkStateSnapshot resources named \
                  `<resource>-<savepoint|checkpoint>-<manual|periodic|upgrade>-<epoch ms>`. \
                  `false` in the operator configuration leaves snapshot resources admitted but \
                  untouched; `false` for a job keeps its snapshots in its status only.",
    },
    OptionDoc {
        key: operator::SAVEPOINT_DISPOSE_ON_DELETE,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::SAVEPOINT_DISPOSE_ON_DELETE),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "`spec.savepoint.disposeOnDelete` of the savepoint resources the operator \
                  creates for a job: whether deleting one (by hand, or by the history's \
                  retention) disposes of its files.",
    },
    OptionDoc {
        key: operator::SAVEPOINT_HISTORY_INCLUDE_MANUAL,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::SAVEPOINT_HISTORY_INCLUDE_MANUAL),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "Our addition. Whether the history's retention (count and age) also removes \
                  the job's MANUAL snapshot resources; `false` removes only PERIODIC and \
                  UPGRADE ones, as the Apache operator does.",
    },
    OptionDoc {
        key: operator::JOB_UPGRADE_TAKE_SAVEPOINT,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::JOB_UPGRADE_TAKE_SAVEPOINT),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "Our addition. Whether an upgrade of a running job in `savepoint` mode stops \
                  it with a savepoint; `false` restores the latest checkpoint or savepoint \
                  instead, and then needs `kubernetes.operator.job.restore.max-state-age`.",
    },
    OptionDoc {
        key: operator::JOB_UPGRADE_SAVEPOINT_MAX_AGE,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Unset("no savepoint stands in"),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "Our addition. When a job to be upgraded in `savepoint` mode is no longer \
                  running, its last savepoint may be restored instead of a new one if it is \
                  younger than this.",
    },
    OptionDoc {
        key: operator::JOB_UPGRADE_IGNORE_PENDING_SAVEPOINT,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::JOB_UPGRADE_IGNORE_PENDING_SAVEPOINT),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "A change of the spec ends the job at once even while a manual or periodic \
                  savepoint or checkpoint it asked for is pending (that snapshot may then \
                  fail); by default the change waits for it.",
    },
    OptionDoc {
        key: operator::JOB_UPGRADE_INPLACE_SCALING_ENABLED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::JOB_UPGRADE_INPLACE_SCALING_ENABLED),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "A change of parallelism alone (`job.parallelism`, \
                  `pipeline.jobvertex-parallelism-overrides`, an application cluster's \
                  `taskManager.replicas`) of a running job is applied in place where Flink \
                  can: with the adaptive scheduler (Flink 1.18 or later) through the job's \
                  resource requirements, in standalone reactive mode by the TaskManagers' \
                  replicas. Same job, no savepoint; otherwise (or false) an upgrade.",
    },
    OptionDoc {
        key: operator::JOB_UPGRADE_LAST_STATE_FALLBACK_ENABLED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::JOB_UPGRADE_LAST_STATE_FALLBACK_ENABLED),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "A change of a `savepoint` job that is not running (restarting, failing, or \
                  ended), so that no savepoint can be taken, ends with its cluster keeping its \
                  last state when the cluster's high-availability metadata holds a completed \
                  checkpoint (a savepoint younger than `job.upgrade.savepoint.max-age` is \
                  still preferred), instead of waiting for the job to run or being refused.",
    },
    OptionDoc {
        key: operator::JOB_UPGRADE_LAST_STATE_MAX_ALLOWED_CHECKPOINT_AGE,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Unset("no bound"),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "A `last-state` change of a running job whose latest checkpoint is older than \
                  this (or not known) stops it with a savepoint instead, so that the next job \
                  does not go back further; the webhook requires a savepoint directory when it \
                  is set.",
    },
    OptionDoc {
        key: operator::JOB_RESTORE_MAX_STATE_AGE,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Unset("no bound"),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "Our addition. State (checkpoint or savepoint) older than this is never \
                  restored: the job is not started from it and the reason is reported.",
    },
    OptionDoc {
        key: operator::JOB_REVISION_HISTORY_LIMIT,
        ty: OptionType::Integer,
        deprecated: &[],
        default: DefaultValue::Number(defaults::JOB_REVISION_HISTORY_LIMIT as i64),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "Our addition. How many revisions (the specs the job was deployed or upgraded \
                  to, kept as ControllerRevisions) are kept for a manual rollback; a value below \
                  1 counts as 1. The oldest go first, never the current one, the last stable one \
                  or one an update or rollback is in the middle of.",
    },
    OptionDoc {
        key: operator::AUTOSCALER_PARALLELISM_OVERRIDES,
        ty: OptionType::Map,
        deprecated: &[],
        default: DefaultValue::Unset("none"),
        applies_to: JOBS,
        set_in: SetIn::ByTheOperator,
        meaning: "The parallelism the job autoscaler gave the job's vertices (`<vertex id>:<parallelism>,...`), \
                  given to Flink over `pipeline.jobvertex-parallelism-overrides`; kept apart from the \
                  user's spec, so it is no revision.",
    },
    OptionDoc {
        key: operator::JOB_RESTART_FAILED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::JOB_RESTART_FAILED),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "Resubmit a job that reached FAILED, from its newest state if \
                  `kubernetes.operator.job.restore.max-state-age` allows.",
    },
    OptionDoc {
        key: operator::JOB_SAVEPOINT_ON_DELETION,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Unset("`true` for `upgradeMode: savepoint`, `false` otherwise"),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "Whether deleting the resource first stops its job with a savepoint.",
    },
    OptionDoc {
        key: operator::JOB_DRAIN_ON_SAVEPOINT_DELETION,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::JOB_DRAIN_ON_SAVEPOINT_DELETION),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "Drain the job (flush event time to the end) when it is stopped with a \
                  savepoint because the resource is deleted or suspended.",
    },
    OptionDoc {
        key: operator::PERIODIC_SAVEPOINT_INTERVAL,
        ty: OptionType::Schedule,
        deprecated: &[],
        default: DefaultValue::Unset("off"),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "Take a savepoint of the running job on this schedule: a duration (empty or 0 \
                  is off), or a Quartz cron expression (seconds first, optional year last), \
                  evaluated in UTC.",
    },
    OptionDoc {
        key: operator::PERIODIC_CHECKPOINT_INTERVAL,
        ty: OptionType::Schedule,
        deprecated: &[],
        default: DefaultValue::Unset("off"),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "Take a checkpoint of the running job on this schedule (as \
                  `kubernetes.operator.periodic.savepoint.interval`): a PERIODIC checkpoint \
                  FlinkStateSnapshot resource, trimmed beyond \
                  `execution.checkpointing.num-retained` like the job's other checkpoint \
                  resources (without snapshot resources, triggered through the JobManager and \
                  recorded in `status.jobStatus.checkpointInfo`). Its schedule moves when one is \
                  asked for, so a failed one is not asked for again before its next time.",
    },
    OptionDoc {
        key: operator::SAVEPOINT_FORMAT_TYPE,
        ty: OptionType::Choice(&["CANONICAL", "NATIVE"]),
        deprecated: &[],
        default: DefaultValue::Text("CANONICAL"),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "The format of every savepoint the operator takes of a job: for an upgrade, a \
                  suspension, a deletion, periodically, for a trigger nonce, and a blue/green \
                  transition's (the savepoint FlinkStateSnapshot resources it creates carry it \
                  as `spec.savepoint.formatType`). NATIVE is the state backend's own format, \
                  faster to take and restore for large state, and the only one a Flink 2.x job \
                  on asynchronous state can take; it restores only into the same state backend, \
                  so while a job's savepoints are NATIVE the webhook refuses a change of its \
                  `state.backend.type`.",
    },
    OptionDoc {
        key: operator::CHECKPOINT_TYPE,
        ty: OptionType::Choice(&["FULL", "INCREMENTAL"]),
        deprecated: &[],
        default: DefaultValue::Text("FULL"),
        applies_to: SNAPSHOT_AND_JOBS,
        set_in: SetIn::Resource,
        meaning: "The type of the checkpoints the operator asks a job for (a trigger nonce, a \
                  periodic checkpoint, a checkpoint FlinkStateSnapshot), Flink 1.19 and newer. \
                  A FULL checkpoint stands alone; an INCREMENTAL one shares files with the \
                  job's other checkpoints, so it is only as durable as they are.",
    },
    OptionDoc {
        key: operator::RESOURCE_DELETION_PROPAGATION,
        ty: OptionType::Choice(&["Foreground", "Background"]),
        deprecated: &[],
        default: DefaultValue::Text("Background"),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "How the operator deletes a cluster's JobManager and TaskManager Deployments: \
                  Background (the Deployments go at once and the garbage collector removes their \
                  pods after them) or Foreground (each Deployment goes only once its pods are \
                  gone). Either way, a new cluster of the same name starts only once the old \
                  JobManager pods are gone. Orphan, which the Apache operator also takes, is \
                  refused: a JobManager left running would act on the new cluster's \
                  high-availability metadata.",
    },
    OptionDoc {
        key: operator::SAVEPOINT_TRIGGER_GRACE_PERIOD,
        ty: OptionType::Duration,
        deprecated: &[operator::SAVEPOINT_TRIGGER_GRACE_PERIOD_DEPRECATED],
        default: DefaultValue::Millis(defaults::SAVEPOINT_TRIGGER_GRACE_PERIOD_MS),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "How long an upgrade keeps retrying a savepoint that failed for a reason \
                  that can pass, before it gives up.",
    },
    OptionDoc {
        key: operator::SAVEPOINT_HISTORY_MAX_COUNT,
        ty: OptionType::Count { min: 1 },
        deprecated: &[],
        default: DefaultValue::Number(defaults::SAVEPOINT_HISTORY_MAX_COUNT as i64),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "How many savepoints `status.jobStatus.savepointInfo` keeps (at least 1, at \
                  most `kubernetes.operator.savepoint.history.max.count.threshold`).",
    },
    OptionDoc {
        key: operator::SAVEPOINT_HISTORY_MAX_AGE,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::SAVEPOINT_HISTORY_MAX_AGE_MS),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "Savepoints older than this leave the history (at most \
                  `kubernetes.operator.savepoint.history.max.age.threshold`); the newest, the \
                  last and the one the job started from always stay.",
    },
    OptionDoc {
        key: operator::SAVEPOINT_HISTORY_MAX_COUNT_THRESHOLD,
        ty: OptionType::Count { min: 0 },
        deprecated: &[],
        default: DefaultValue::Unset("no cap"),
        applies_to: JOBS,
        set_in: SetIn::Platform,
        meaning: "Cap on `kubernetes.operator.savepoint.history.max.count`: a higher count \
                  counts as the cap.",
    },
    OptionDoc {
        key: operator::SAVEPOINT_HISTORY_MAX_AGE_THRESHOLD,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Unset("no cap"),
        applies_to: JOBS,
        set_in: SetIn::Platform,
        meaning: "Cap on `kubernetes.operator.savepoint.history.max.age`: a longer age counts \
                  as the cap.",
    },
    OptionDoc {
        key: operator::SNAPSHOT_RESOURCE_MAX_COUNT,
        ty: OptionType::Count { min: 1 },
        deprecated: &[],
        default: DefaultValue::Number(defaults::SNAPSHOT_RESOURCE_MAX_COUNT as i64),
        applies_to: JOBS,
        set_in: SetIn::Platform,
        meaning: "The most FlinkStateSnapshot resources of one job resource and one snapshot \
                  type (savepoint, checkpoint) the operator keeps, whatever their trigger \
                  (periodic, manual, upgrade) and whatever the job's own history settings \
                  (`savepoint.history.max.count`, `execution.checkpointing.num-retained`, \
                  `savepoint.cleanup.enabled`, `savepoint.history.include-manual`): the oldest \
                  beyond it are deleted. Never one under way, the newest completed one, or one \
                  whose path the job may still need (it started from it, its status or a kept \
                  revision names it); a savepoint's files are disposed of only with \
                  `savepoint.cleanup.enabled` and its `disposeOnDelete`.",
    },
    OptionDoc {
        key: operator::SNAPSHOT_RESOURCE_MAX_AGE,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::SNAPSHOT_RESOURCE_MAX_AGE_MS),
        applies_to: JOBS,
        set_in: SetIn::Platform,
        meaning: "FlinkStateSnapshot resources of a job older than this are deleted, with the \
                  same exceptions as `kubernetes.operator.snapshot.resource.max.count`.",
    },
    OptionDoc {
        key: operator::RECONCILE_INTERVAL_MIN,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::RECONCILE_INTERVAL_MIN_MS),
        applies_to: JOBS,
        set_in: SetIn::Platform,
        meaning: "The shortest `kubernetes.operator.reconcile.interval` a resource may set: \
                  the webhook refuses a shorter one, and the operator raises it to this (with \
                  a status error and Event) when the webhook was bypassed. 0 leaves only the \
                  operator's own 1 s.",
    },
    OptionDoc {
        key: operator::PROGRESS_CHECK_INTERVAL_MIN,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::PROGRESS_CHECK_INTERVAL_MIN_MS),
        applies_to: JOBS,
        set_in: SetIn::Platform,
        meaning: "The shortest `kubernetes.operator.observer.progress-check.interval` a \
                  resource may set, as `kubernetes.operator.reconcile.interval.min`.",
    },
    OptionDoc {
        key: operator::PERIODIC_SAVEPOINT_INTERVAL_MIN,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::PERIODIC_SNAPSHOT_INTERVAL_MIN_MS),
        applies_to: JOBS,
        set_in: SetIn::Platform,
        meaning: "The shortest time between two periodic savepoints a resource may ask for: \
                  the webhook refuses a shorter `kubernetes.operator.periodic.savepoint.interval`, \
                  or a cron expression two of whose occurrences (over the next four years, at \
                  most 1000) come closer; the operator never takes two sooner apart.",
    },
    OptionDoc {
        key: operator::PERIODIC_CHECKPOINT_INTERVAL_MIN,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::PERIODIC_SNAPSHOT_INTERVAL_MIN_MS),
        applies_to: JOBS,
        set_in: SetIn::Platform,
        meaning: "The shortest time between two periodic checkpoints a resource may ask for \
                  (`kubernetes.operator.periodic.checkpoint.interval`), as \
                  `kubernetes.operator.periodic.savepoint.interval.min`.",
    },
    OptionDoc {
        key: operator::JOB_PARALLELISM_MAX,
        ty: OptionType::Integer,
        deprecated: &[],
        default: DefaultValue::Number(defaults::JOB_PARALLELISM_MAX),
        applies_to: JOBS,
        set_in: SetIn::Platform,
        meaning: "The highest parallelism a job may ask for: the webhook refuses a higher \
                  `spec.job.parallelism`, `parallelism.default`, vertex parallelism in \
                  `pipeline.jobvertex-parallelism-overrides` or \
                  `job.autoscaler.vertex.max-parallelism`. A negative value lifts the cap.",
    },
    OptionDoc {
        key: operator::TASKMANAGER_REPLICAS_MAX,
        ty: OptionType::Integer,
        deprecated: &[],
        default: DefaultValue::Number(defaults::TASKMANAGER_REPLICAS_MAX),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Platform,
        meaning: "The most TaskManager replicas (`spec.taskManager.replicas`) a cluster may ask \
                  for. A negative value lifts the cap.",
    },
    OptionDoc {
        key: operator::JOBMANAGER_REPLICAS_MAX,
        ty: OptionType::Integer,
        deprecated: &[],
        default: DefaultValue::Number(defaults::JOBMANAGER_REPLICAS_MAX),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Platform,
        meaning: "The most JobManager replicas (`spec.jobManager.replicas`, \
                  `kubernetes.jobmanager.replicas`) a cluster may ask for (one leader, the \
                  others standing by). A negative value lifts the cap.",
    },
    OptionDoc {
        key: operator::SAVEPOINT_CLEANUP_ENABLED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::SAVEPOINT_CLEANUP_ENABLED),
        applies_to: JOBS,
        set_in: SetIn::Resource,
        meaning: "Whether savepoints that leave the history are disposed of through Flink; \
                  `false` only removes them from status and keeps their files.",
    },
    OptionDoc {
        key: operator::DEPLOYMENT_ROLLBACK_ENABLED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::DEPLOYMENT_ROLLBACK_ENABLED),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "Roll a deployed spec that does not become stable within the readiness \
                  timeout back to the last stable one. Needs high availability (the webhook \
                  refuses it without).",
    },
    OptionDoc {
        key: operator::DEPLOYMENT_READINESS_TIMEOUT,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::DEPLOYMENT_READINESS_TIMEOUT_MS),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "How long a newly deployed spec has to become stable before it is rolled \
                  back (with rollback enabled).",
    },
    OptionDoc {
        key: operator::JM_DEPLOYMENT_RECOVERY_ENABLED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::JM_DEPLOYMENT_RECOVERY_ENABLED),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "Deploy a JobManager Deployment that went missing again (a job in \
                  `last-state` or `savepoint` mode only from a checkpoint in its \
                  high-availability metadata).",
    },
    OptionDoc {
        key: operator::JM_DEPLOYMENT_SHUTDOWN_TTL,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::JM_DEPLOYMENT_SHUTDOWN_TTL_MS),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "How long the JobManager of an application whose job ended (FINISHED, FAILED \
                  and not restarted, CANCELED) keeps running after the job's last state change: \
                  then its cluster is deleted and its high-availability metadata kept (Event \
                  `JobManagerShutDown`); the job stays as it ended in status.",
    },
    OptionDoc {
        key: operator::CLUSTER_HEALTH_CHECK_ENABLED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::CLUSTER_HEALTH_CHECK_ENABLED),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "Restart an application's job that restarts too often or completes no \
                  checkpoints (the rules below), the way its upgrade mode allows: a \
                  `stateless` job without state, a `last-state` or `savepoint` job from the \
                  latest checkpoint in its high-availability metadata (without one it is \
                  not restarted, and status says why). Needs \
                  `kubernetes.operator.jm-deployment-recovery.enabled`.",
    },
    OptionDoc {
        key: operator::CLUSTER_HEALTH_CHECK_RESTARTS_WINDOW,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::CLUSTER_HEALTH_CHECK_RESTARTS_WINDOW_MS),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "The window the job's restarts (Flink's `numRestarts`) are counted in.",
    },
    OptionDoc {
        key: operator::CLUSTER_HEALTH_CHECK_RESTARTS_THRESHOLD,
        ty: OptionType::Count { min: 0 },
        deprecated: &[],
        default: DefaultValue::Number(defaults::CLUSTER_HEALTH_CHECK_RESTARTS_THRESHOLD),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "More restarts than this within the window make the job unhealthy.",
    },
    OptionDoc {
        key: operator::CLUSTER_HEALTH_CHECK_CHECKPOINT_PROGRESS_ENABLED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::CLUSTER_HEALTH_CHECK_CHECKPOINT_PROGRESS_ENABLED),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "With the health check on: a job that completes no checkpoint within the \
                  checkpoint progress window is unhealthy. Applies when \
                  `execution.checkpointing.interval` is set, or a window is.",
    },
    OptionDoc {
        key: operator::CLUSTER_HEALTH_CHECK_CHECKPOINT_PROGRESS_WINDOW,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Unset(
            "`max(checkpoint interval, checkpoint timeout) × (tolerable failed checkpoints + 2)`",
        ),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "The checkpoint progress window; a shorter one than its default is raised \
                  to the default.",
    },
    OptionDoc {
        key: operator::SESSION_DELETION_BLOCK_ON_SESSION_JOBS,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::SESSION_DELETION_BLOCK_ON_SESSION_JOBS),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "A session cluster is not deleted while FlinkSessionJobs still use it.",
    },
    OptionDoc {
        key: operator::SESSION_DELETION_BLOCK_ON_UNMANAGED_JOBS,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::SESSION_DELETION_BLOCK_ON_UNMANAGED_JOBS),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "A session cluster is not deleted while it runs jobs that no \
                  FlinkSessionJob manages (submitted through its REST API or CLI): the \
                  deletion waits, naming them, until they end. A JobManager that does not \
                  answer does not hold the deletion.",
    },
    OptionDoc {
        key: operator::POD_TEMPLATE_MERGE_ARRAYS_BY_NAME,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::POD_TEMPLATE_MERGE_ARRAYS_BY_NAME),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "Merge the lists of `spec.podTemplate` and the JobManager/TaskManager pod \
                  templates (containers, volumes, ...) by element name instead of by index.",
    },
    OptionDoc {
        key: operator::JM_DEPLOYMENT_STARTUP_PROBE_ENABLED,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::JM_DEPLOYMENT_STARTUP_PROBE_ENABLED),
        applies_to: DEPLOYMENT,
        set_in: SetIn::Resource,
        meaning: "Give the JobManager container a startup probe on the REST API's `/config`: \
                  the container counts as started, and its other probes run, only once Flink's \
                  REST API answers.",
    },
    OptionDoc {
        key: operator::USER_ARTIFACTS_ALLOWED_SCHEMES,
        ty: OptionType::Text,
        deprecated: &[],
        default: DefaultValue::Text(defaults::USER_ARTIFACTS_ALLOWED_SCHEMES),
        applies_to: SESSION_JOB,
        set_in: SetIn::OperatorAndNamespace,
        meaning: "URI schemes a session job's `jarURI` may use (separated by `,` or `;`); \
                  others are refused. A session job or its cluster cannot widen it.",
    },
    OptionDoc {
        key: operator::USER_ARTIFACTS_DISALLOW_RESTRICTED_HOSTS,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::USER_ARTIFACTS_DISALLOW_RESTRICTED_HOSTS),
        applies_to: SESSION_JOB,
        set_in: SetIn::OperatorAndNamespace,
        meaning: "Refuse (in the webhook and when fetching) session-job jars on loopback, \
                  link-local, private, wildcard or multicast addresses; only an explicit \
                  `false` lifts it.",
    },
    OptionDoc {
        key: operator::POD_SECURITY_LEVEL,
        ty: OptionType::Choice(&["privileged", "baseline", "restricted"]),
        deprecated: &[],
        default: DefaultValue::Text(defaults::POD_SECURITY_LEVEL),
        applies_to: DEPLOYMENT_AND_BLUE_GREEN,
        set_in: SetIn::Platform,
        meaning: "The Kubernetes Pod Security Standards level every pod template (`spec.podTemplate`, \
                  `spec.jobManager.podTemplate`, `spec.taskManager.podTemplate`, and those of a \
                  blue/green template) is checked against at admission and before the operator \
                  builds pods: `privileged` checks nothing, `baseline` refuses host namespaces, \
                  privileged containers, hostPath volumes, host ports and the like, `restricted` \
                  also requires non-root, no privilege escalation, seccomp and dropping `ALL` \
                  capabilities (set in the templates: the operator adds none). Any other value is \
                  read as `restricted`.",
    },
    OptionDoc {
        key: operator::POD_TEMPLATE_ALLOW_OTHER_SERVICE_ACCOUNT,
        ty: OptionType::Bool,
        deprecated: &[],
        default: DefaultValue::Bool(defaults::POD_TEMPLATE_ALLOW_OTHER_SERVICE_ACCOUNT),
        applies_to: DEPLOYMENT_AND_BLUE_GREEN,
        set_in: SetIn::Platform,
        meaning: "Let a pod template's `serviceAccountName` (or `serviceAccount`) and \
                  `kubernetes.jobmanager.service-account` / `kubernetes.taskmanager.service-account` \
                  name another ServiceAccount than `spec.serviceAccount`; otherwise admission \
                  refuses them, as the pods would run with another identity's rights. Only an \
                  explicit `true` allows it.",
    },
    OptionDoc {
        key: operator::USER_ARTIFACTS_HTTP_HEADER,
        ty: OptionType::Map,
        deprecated: &[],
        default: DefaultValue::Unset("no headers"),
        applies_to: SESSION_JOB,
        set_in: SetIn::Resource,
        meaning: "HTTP headers sent with the download of a session job's http(s) jar, as \
                  `name:value` pairs separated by commas (`Authorization:Bearer <token>`). \
                  Set in the job's or its session cluster's `spec.flinkConfiguration`, they \
                  are sent to the jar's host only (not after a redirect to another host); set \
                  in the operator configuration or a namespace overlay, only to the hosts of \
                  `kubernetes.operator.user.artifacts.http.header.hosts`. Logs and Events name \
                  the headers, never their values.",
    },
    OptionDoc {
        key: operator::USER_ARTIFACTS_HTTP_HEADER_HOSTS,
        ty: OptionType::Text,
        deprecated: &[],
        default: DefaultValue::Unset("the operator configuration's headers are sent nowhere"),
        applies_to: SESSION_JOB,
        set_in: SetIn::OperatorAndNamespace,
        meaning: "Hosts (separated by `,` or `;`; `*.example.com` for its subdomains) that the \
                  download headers of the operator configuration \
                  (`kubernetes.operator.user.artifacts.http.header` set there or in a namespace \
                  overlay) are sent to, at every hop of a download including redirects; a jar on \
                  another host is downloaded without them. Unset, they are sent nowhere, and \
                  the operator logs a warning at start. A session job or its cluster cannot set it.",
    },
    OptionDoc {
        key: operator::USER_ARTIFACTS_FILE_ALLOWED_DIRS,
        ty: OptionType::Text,
        deprecated: &[],
        default: DefaultValue::Unset("no file jars, even where the `file` scheme is allowed"),
        applies_to: SESSION_JOB,
        set_in: SetIn::OperatorAndNamespace,
        meaning: "Absolute directories (separated by `,` or `;`) of the operator's file system \
                  under which a session job's `file:` jar (or absolute path) may be; the jar's \
                  path is resolved (`..`, symbolic links) and refused when it leads outside \
                  every one of them, and the resolved path is what is read. The webhook refuses \
                  a path outside them as written; the controller checks the resolved path. A \
                  session job or its cluster cannot set it.",
    },
    OptionDoc {
        key: bluegreen::ABORT_GRACE_PERIOD,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::BLUEGREEN_ABORT_GRACE_PERIOD_MS),
        applies_to: BLUE_GREEN,
        set_in: SetIn::BlueGreenConfiguration,
        meaning: "How long a transition's savepoint may take, and then how long the new child \
                  has to become running and stable, before the transition is aborted (the old \
                  child keeps running).",
    },
    OptionDoc {
        key: bluegreen::RECONCILIATION_RESCHEDULE_INTERVAL,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::BLUEGREEN_RESCHEDULE_INTERVAL_MS),
        applies_to: BLUE_GREEN,
        set_in: SetIn::BlueGreenConfiguration,
        meaning: "How soon a blue/green deployment with a transition under way is looked at \
                  again (a change of a child or of the savepoint wakes it sooner).",
    },
    OptionDoc {
        key: bluegreen::DEPLOYMENT_DELETION_DELAY,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Millis(defaults::BLUEGREEN_DEPLOYMENT_DELETION_DELAY_MS),
        applies_to: BLUE_GREEN,
        set_in: SetIn::BlueGreenConfiguration,
        meaning: "BASIC: how long the old child keeps running after the new one became running \
                  and stable, before it is deleted. ADVANCED: how far in event time after the old \
                  job's watermark the gates hand over (the toggle).",
    },
    OptionDoc {
        key: bluegreen::GATE_TIMEOUT,
        ty: OptionType::Duration,
        deprecated: &[],
        default: DefaultValue::Unset("the abort grace period"),
        applies_to: BLUE_GREEN,
        set_in: SetIn::BlueGreenConfiguration,
        meaning: "ADVANCED: how long the record gates of both jobs have to hand over once the new \
                  child is running and stable, before the transition is aborted. Must be longer \
                  than the deletion delay.",
    },
];

/// Keys accepted for compatibility but not acted on.
pub const IGNORED_OPTIONS: &[IgnoredOption] = &[
    IgnoredOption {
        key: operator::REST_READY_DELAY,
        ty: OptionType::Duration,
        note: "",
    },
    IgnoredOption {
        key: operator::FLINK_CLIENT_CANCEL_TIMEOUT,
        ty: OptionType::Duration,
        note: "",
    },
    IgnoredOption {
        key: operator::RESOURCE_CLEANUP_TIMEOUT,
        ty: OptionType::Duration,
        note: "",
    },
    IgnoredOption {
        key: operator::RATE_LIMITER_LIMIT,
        ty: OptionType::Integer,
        note: "",
    },
    IgnoredOption {
        key: operator::RATE_LIMITER_REFRESH_PERIOD,
        ty: OptionType::Duration,
        note: "",
    },
    IgnoredOption {
        key: operator::RETRY_INITIAL_INTERVAL,
        ty: OptionType::Duration,
        note: "",
    },
    IgnoredOption {
        key: operator::RETRY_INTERVAL_MULTIPLIER,
        ty: OptionType::Text,
        note: "",
    },
    IgnoredOption {
        key: operator::RETRY_MAX_ATTEMPTS,
        ty: OptionType::Integer,
        note: "",
    },
    IgnoredOption {
        key: operator::RETRY_MAX_INTERVAL,
        ty: OptionType::Duration,
        note: "",
    },
    IgnoredOption {
        key: operator::TERMINATION_TIMEOUT,
        ty: OptionType::Duration,
        note: "",
    },
    IgnoredOption {
        key: operator::STARTUP_STOP_ON_INFORMER_ERROR,
        ty: OptionType::Bool,
        note: "",
    },
    IgnoredOption {
        key: operator::JOB_UPGRADE_LAST_STATE_JOB_CANCEL_ENABLED,
        ty: OptionType::Bool,
        note: "",
    },
    IgnoredOption {
        key: operator::CHECKPOINT_TRIGGER_GRACE_PERIOD,
        ty: OptionType::Duration,
        note: "",
    },
    IgnoredOption {
        key: operator::USER_ARTIFACTS_BASE_DIR,
        ty: OptionType::Text,
        note: "",
    },
    IgnoredOption {
        key: operator::HEALTH_PROBE_ENABLED,
        ty: OptionType::Bool,
        note: "probes are served on the `--probe-port` (`/healthz`, `/readyz`)",
    },
    IgnoredOption {
        key: operator::HEALTH_PROBE_PORT,
        ty: OptionType::Integer,
        note: "see `--probe-port`",
    },
    IgnoredOption {
        key: operator::HEALTH_CANARY_RESOURCE_TIMEOUT,
        ty: OptionType::Duration,
        note: "",
    },
];

/// What the value of `key` must be, if either table knows the key.
pub fn value_type(key: &str) -> Option<OptionType> {
    option(key).map(|o| o.ty).or_else(|| ignored(key).map(|o| o.ty))
}

/// The entry of `key` in [`IGNORED_OPTIONS`].
pub fn ignored(key: &str) -> Option<&'static IgnoredOption> {
    IGNORED_OPTIONS.iter().find(|o| o.key == key)
}

/// The entry of `key` in [`OPTIONS`], by its name or a deprecated one.
pub fn option(key: &str) -> Option<&'static OptionDoc> {
    OPTIONS
        .iter()
        .find(|o| o.key == key || o.deprecated.contains(&key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_in_their_largest_unit() {
        assert_eq!(duration_text(60_000), "1 min");
        assert_eq!(duration_text(10_000), "10 s");
        assert_eq!(duration_text(86_400_000), "1 d");
        assert_eq!(duration_text(1500), "1500 ms");
        assert_eq!(duration_text(0), "0 ms");
    }

    #[test]
    fn no_key_is_in_both_tables_or_twice_in_one() {
        let mut seen = std::collections::BTreeSet::new();
        for key in OPTIONS
            .iter()
            .flat_map(|o| std::iter::once(o.key).chain(o.deprecated.iter().copied()))
            .chain(IGNORED_OPTIONS.iter().map(|o| o.key))
        {
            assert!(seen.insert(key), "{key} is listed twice");
            assert!(key.starts_with(operator::PREFIX), "{key}");
        }
    }
}
