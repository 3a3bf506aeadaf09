//! Prometheus metrics of the reconcile loops: resources per lifecycle state, reconcile
//! durations and failures, upgrade savepoints (durations, failures), FlinkStateSnapshots
//! (counts by type and state, durations, failures), blue/green transitions (durations,
//! aborts; blue/green resources are counted per state among the lifecycle states), and
//! what each resource
//! costs: its reconciles, status writes and calls to its JobManager (so that a resource
//! that changes nothing can be seen to cost nothing), and the operator's requests to the
//! Kubernetes API.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    kind: &'static str,
    namespace: String,
    lifecycle_state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NamespaceLabels {
    kind: &'static str,
    namespace: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabels {
    kind: &'static str,
    namespace: String,
    name: String,
}

/// FlinkStateSnapshots of one namespace, type and state.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct SnapshotCount {
    pub namespace: String,
    /// `SAVEPOINT` or `CHECKPOINT`.
    pub snapshot_type: &'static str,
    /// The snapshot's `status.state`.
    pub state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SnapshotTypeLabels {
    snapshot_type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransitionLabels {
    /// InitialDeployment, BlueToGreen or GreenToBlue.
    transition: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabels {
    /// The Event's reason.
    reason: &'static str,
    /// `Normal` or `Warning`.
    event_type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    /// Which of the operator's clients sent the request.
    client: &'static str,
    method: String,
}

/// Which of the operator's Kubernetes clients sent a request: the Lease renewals of leader
/// election are a fixed cost of the process, whatever the number of resources, and are
/// counted apart from the requests the controllers, caches and webhook make for resources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KubernetesClient {
    /// The controllers, the caches and the webhook.
    Operator,
    /// Leader election's Lease reads and renewals.
    LeaderElection,
}

impl KubernetesClient {
    /// The value of the `client` label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Operator => "operator",
            Self::LeaderElection => "leader-election",
        }
    }
}

type Histograms = Family<KindLabels, Histogram, fn() -> Histogram>;
/// (kind, namespace, name) of a resource.
type ResourceKey = (&'static str, String, String);

/// The reconcile loops' metrics; cheap to clone.
#[derive(Clone)]
pub struct ReconcileMetrics {
    resources: Family<StateLabels, Gauge>,
    reconcile_duration: Histograms,
    reconcile_errors: Family<KindLabels, Counter>,
    reconcile_deferred: Family<NamespaceLabels, Counter>,
    savepoint_duration: Histograms,
    savepoint_failures: Family<KindLabels, Counter>,
    reconciles: Family<ResourceLabels, Counter>,
    status_writes: Family<ResourceLabels, Counter>,
    flink_requests: Family<ResourceLabels, Counter>,
    kubernetes_requests: Family<MethodLabels, Counter>,
    snapshots: Family<SnapshotCount, Gauge>,
    snapshot_duration: Family<SnapshotTypeLabels, Histogram, fn() -> Histogram>,
    snapshot_failures: Family<SnapshotTypeLabels, Counter>,
    bluegreen_transitions: Family<TransitionLabels, Histogram, fn() -> Histogram>,
    bluegreen_aborts: Counter,
    events: Family<EventLabels, Counter>,
    /// (kind, namespace, name) -> lifecycle state and since when this process saw it, to move
    /// a resource between gauges and time its states.
    states: Arc<Mutex<HashMap<ResourceKey, (String, std::time::Instant)>>>,
    state_durations: Family<StateDurationLabels, Histogram, fn() -> Histogram>,
    deployments: Family<DeploymentCount, Gauge>,
    /// The deployment counts set by the last census.
    deployments_counted: Arc<Mutex<std::collections::BTreeSet<DeploymentCount>>>,
    /// The snapshot counts set by the last census, to drop those that fell to nothing.
    counted: Arc<Mutex<std::collections::BTreeSet<SnapshotCount>>>,
    kubernetes_calls: Family<CallLabels, Histogram, fn() -> Histogram>,
    flink_calls: Family<CallLabels, Histogram, fn() -> Histogram>,
}

/// FlinkDeployments of one namespace, Flink version and JobManager Deployment status.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct DeploymentCount {
    pub namespace: String,
    /// `spec.flinkVersion` (e.g. `v1_20`; `unknown` when unset).
    pub flink_version: String,
    /// `status.jobManagerDeploymentStatus` (`MISSING` until one is written).
    pub job_manager_status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateDurationLabels {
    kind: &'static str,
    lifecycle_state: String,
}

fn state_histogram() -> Histogram {
    // 1 s .. ~36 h: an upgrade takes seconds to minutes, a job stays STABLE for days.
    Histogram::new(exponential_buckets(1.0, 2.0, 18))
}

/// One call's labels: who called (the Kubernetes client, or the kind whose JobManager was
/// called), how, and the answer's HTTP status (`error`: no answer).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    caller: &'static str,
    method: String,
    code: String,
}

/// Times calls of one caller into a histogram family by method and answer.
#[derive(Clone, Debug)]
pub struct CallTimer {
    family: Family<CallLabels, Histogram, fn() -> Histogram>,
    caller: &'static str,
}

impl CallTimer {
    /// A call by `method` answered with `status` (None: no answer, a transport error or a
    /// timeout) after `elapsed`.
    pub fn observe(&self, method: &str, status: Option<u16>, elapsed: Duration) {
        self.family
            .get_or_create(&CallLabels {
                caller: self.caller,
                method: method.to_owned(),
                code: status.map_or_else(|| "error".to_owned(), |s| s.to_string()),
            })
            .observe(elapsed.as_secs_f64());
    }
}

fn reconcile_histogram() -> Histogram {
    // 1 ms .. ~16 s: a reconcile reads a few objects and may call Flink once; a request to
    // the API server or a JobManager answers within its client's timeout.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

fn savepoint_histogram() -> Histogram {
    // 0.25 s .. ~68 min.
    Histogram::new(exponential_buckets(0.25, 2.0, 15))
}

impl Default for ReconcileMetrics {
    fn default() -> Self {
        Self {
            resources: Family::default(),
            reconcile_duration: Family::new_with_constructor(reconcile_histogram),
            reconcile_errors: Family::default(),
            reconcile_deferred: Family::default(),
            savepoint_duration: Family::new_with_constructor(savepoint_histogram),
            savepoint_failures: Family::default(),
            reconciles: Family::default(),
            status_writes: Family::default(),
            flink_requests: Family::default(),
            kubernetes_requests: Family::default(),
            snapshots: Family::default(),
            snapshot_duration: Family::new_with_constructor(savepoint_histogram),
            snapshot_failures: Family::default(),
            bluegreen_transitions: Family::new_with_constructor(savepoint_histogram),
            bluegreen_aborts: Counter::default(),
            events: Family::default(),
            states: Arc::default(),
            state_durations: Family::new_with_constructor(state_histogram),
            deployments: Family::default(),
            deployments_counted: Arc::default(),
            counted: Arc::default(),
            kubernetes_calls: Family::new_with_constructor(reconcile_histogram),
            flink_calls: Family::new_with_constructor(reconcile_histogram),
        }
    }
}

impl ReconcileMetrics {
    /// Metrics registered into `registry` under `flink_operator_*`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        let sub = registry.sub_registry_with_prefix("flink_operator");
        sub.register(
            "resources",
            "Resources by kind, namespace and lifecycle state",
            metrics.resources.clone(),
        );
        sub.register(
            "reconcile_duration_seconds",
            "Time of one reconcile (observe, decide, act, status)",
            metrics.reconcile_duration.clone(),
        );
        sub.register(
            "reconcile_errors",
            "Reconciles that failed and are retried",
            metrics.reconcile_errors.clone(),
        );
        sub.register(
            "reconcile_deferred",
            "Reconciles put off because their namespace ran its share of the kind's workers \
             (kubernetes.operator.reconcile.namespace-share) while other namespaces wanted work; \
             each resource is looked at again 1 to 2 s later",
            metrics.reconcile_deferred.clone(),
        );
        sub.register(
            "savepoint_duration_seconds",
            "Time from triggering an upgrade savepoint to its completion",
            metrics.savepoint_duration.clone(),
        );
        sub.register(
            "savepoint_failures",
            "Upgrade savepoints that failed or were lost",
            metrics.savepoint_failures.clone(),
        );
        sub.register(
            "resource_reconciles",
            "Reconciles of each resource (a steady resource is looked at once per reconcile interval)",
            metrics.reconciles.clone(),
        );
        sub.register(
            "status_writes",
            "Status writes of each resource (only when something a user can see changed)",
            metrics.status_writes.clone(),
        );
        sub.register(
            "flink_requests",
            "Requests to the Flink REST API of each resource's JobManager (or session cluster)",
            metrics.flink_requests.clone(),
        );
        sub.register(
            "kubernetes_requests",
            "Requests of the operator to the Kubernetes API server, by client (operator, \
             leader-election) and HTTP method (watches count once)",
            metrics.kubernetes_requests.clone(),
        );
        sub.register(
            "snapshots",
            "FlinkStateSnapshots by namespace, type (SAVEPOINT, CHECKPOINT) and state",
            metrics.snapshots.clone(),
        );
        sub.register(
            "snapshot_duration_seconds",
            "Time from triggering a FlinkStateSnapshot to its completion, by type",
            metrics.snapshot_duration.clone(),
        );
        sub.register(
            "snapshot_failures",
            "Failed attempts of FlinkStateSnapshots (each retry counts), by type",
            metrics.snapshot_failures.clone(),
        );
        sub.register(
            "bluegreen_transition_seconds",
            "Blue/green transitions that completed, by kind (InitialDeployment, BlueToGreen, GreenToBlue): seconds from the spec recorded to the new child running alone",
            metrics.bluegreen_transitions.clone(),
        );
        sub.register(
            "bluegreen_aborts",
            "Blue/green transitions that were aborted",
            metrics.bluegreen_aborts.clone(),
        );
        sub.register(
            "events",
            "Events published, by reason and type (e.g. RestartUnhealthyJob: jobs the cluster health check restarted)",
            metrics.events.clone(),
        );
        sub.register(
            "flink_deployments",
            "FlinkDeployments by namespace, Flink version and JobManager Deployment status (counted from \
             the cache every 15 s)",
            metrics.deployments.clone(),
        );
        sub.register(
            "lifecycle_state_seconds",
            "Time resources spent in a lifecycle state, by kind and state, observed when they leave it \
             (UPGRADING: an upgrade, DEPLOYED: the stabilization, ROLLING_BACK: a rollback); counted \
             from when this process first saw the resource in it",
            metrics.state_durations.clone(),
        );
        sub.register(
            "kubernetes_request_duration_seconds",
            "Requests to the Kubernetes API server answered, by client (caller), method and HTTP status \
             (`error`: no answer); a watch counts until its first answer",
            metrics.kubernetes_calls.clone(),
        );
        sub.register(
            "flink_request_duration_seconds",
            "Requests to the Flink REST API answered, by the kind whose JobManager was called (caller), \
             method and HTTP status (`error`: no answer or a timeout); each retry counts",
            metrics.flink_calls.clone(),
        );
        metrics.start_at_zero();
        metrics
    }

    /// The series of every kind, snapshot type and transition, created at 0: an alert on
    /// `increase(...) > 0` then sees the first failure too (a series that appears at 1 has
    /// no increase), and `/metrics` lists every family from the start.
    fn start_at_zero(&self) {
        use flink_operator_api::{SnapshotType, keys::kinds};
        for kind in [
            kinds::FLINK_DEPLOYMENT,
            kinds::FLINK_SESSION_JOB,
            kinds::FLINK_STATE_SNAPSHOT,
            kinds::FLINK_BLUE_GREEN_DEPLOYMENT,
        ] {
            drop(self.reconcile_errors.get_or_create(&KindLabels { kind }));
        }
        for kind in [kinds::FLINK_DEPLOYMENT, kinds::FLINK_SESSION_JOB] {
            drop(self.savepoint_failures.get_or_create(&KindLabels { kind }));
            drop(self.savepoint_duration.get_or_create(&KindLabels { kind }));
        }
        for snapshot_type in SnapshotType::ALL.iter().map(|t| t.as_str()) {
            drop(
                self.snapshot_failures
                    .get_or_create(&SnapshotTypeLabels { snapshot_type }),
            );
            drop(
                self.snapshot_duration
                    .get_or_create(&SnapshotTypeLabels { snapshot_type }),
            );
        }
        for transition in flink_operator_api::BlueGreenTransition::ALL {
            drop(self.bluegreen_transitions.get_or_create(&TransitionLabels {
                transition: transition.as_str(),
            }));
        }
    }

    /// An Event of `reason` was published.
    pub fn event_published(&self, reason: &'static str, warning: bool) {
        self.events
            .get_or_create(&EventLabels {
                reason,
                event_type: if warning { "Warning" } else { "Normal" },
            })
            .inc();
    }

    /// A blue/green transition of `transition` kind completed `seconds` after its spec was
    /// recorded.
    pub fn bluegreen_transition_completed(&self, transition: &'static str, seconds: f64) {
        self.bluegreen_transitions
            .get_or_create(&TransitionLabels { transition })
            .observe(seconds);
    }

    /// A blue/green transition was aborted.
    pub fn bluegreen_transition_aborted(&self) {
        self.bluegreen_aborts.inc();
    }

    /// The FlinkStateSnapshots there are now, counted by namespace, type and state: counts
    /// not among them fall away.
    pub fn snapshot_census(&self, counts: &std::collections::BTreeMap<SnapshotCount, i64>) {
        let mut counted = self.counted.lock().unwrap_or_else(|e| e.into_inner());
        for gone in counted.iter().filter(|c| !counts.contains_key(*c)) {
            self.snapshots.remove(gone);
        }
        for (labels, count) in counts {
            self.snapshots.get_or_create(labels).set(*count);
        }
        *counted = counts.keys().cloned().collect();
    }

    /// The FlinkDeployments there are now, counted by namespace, Flink version and JobManager
    /// Deployment status: counts not among them fall away.
    pub fn deployment_census(&self, counts: &std::collections::BTreeMap<DeploymentCount, i64>) {
        let mut counted = self.deployments_counted.lock().unwrap_or_else(|e| e.into_inner());
        for gone in counted.iter().filter(|c| !counts.contains_key(*c)) {
            self.deployments.remove(gone);
        }
        for (labels, count) in counts {
            self.deployments.get_or_create(labels).set(*count);
        }
        *counted = counts.keys().cloned().collect();
    }

    /// A FlinkStateSnapshot of `snapshot_type` completed `elapsed` after it was triggered.
    pub fn snapshot_completed(&self, snapshot_type: &'static str, elapsed: Duration) {
        self.snapshot_duration
            .get_or_create(&SnapshotTypeLabels { snapshot_type })
            .observe(elapsed.as_secs_f64());
    }

    /// An attempt of a FlinkStateSnapshot of `snapshot_type` failed.
    pub fn snapshot_failed(&self, snapshot_type: &'static str) {
        self.snapshot_failures
            .get_or_create(&SnapshotTypeLabels { snapshot_type })
            .inc();
    }

    /// The timer of the Kubernetes requests of `client`.
    pub fn kubernetes_calls(&self, client: KubernetesClient) -> CallTimer {
        CallTimer {
            family: self.kubernetes_calls.clone(),
            caller: client.label(),
        }
    }

    /// The timer of the Flink REST requests made for resources of `kind`.
    pub fn flink_calls(&self, kind: &'static str) -> CallTimer {
        CallTimer {
            family: self.flink_calls.clone(),
            caller: kind,
        }
    }

    /// A reconcile of `namespace/name` that took `elapsed`.
    pub fn reconciled(&self, kind: &'static str, namespace: &str, name: &str, elapsed: Duration, ok: bool) {
        self.reconciles
            .get_or_create(&resource_labels(kind, namespace, name))
            .inc();
        let labels = KindLabels { kind };
        self.reconcile_duration
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        if !ok {
            self.reconcile_errors.get_or_create(&labels).inc();
        }
    }

    /// A reconcile of a resource of `kind` in `namespace` put off: the namespace ran its
    /// share of the workers.
    pub fn reconcile_deferred(&self, kind: &'static str, namespace: &str) {
        self.reconcile_deferred
            .get_or_create(&NamespaceLabels {
                kind,
                namespace: namespace.to_owned(),
            })
            .inc();
    }

    /// A status write of `namespace/name`.
    pub fn status_written(&self, kind: &'static str, namespace: &str, name: &str) {
        self.status_writes
            .get_or_create(&resource_labels(kind, namespace, name))
            .inc();
    }

    /// The counter of Flink REST requests made for `namespace/name`.
    pub fn flink_requests(&self, kind: &'static str, namespace: &str, name: &str) -> Counter {
        self.flink_requests
            .get_or_create(&resource_labels(kind, namespace, name))
            .clone()
    }

    /// The counter of Kubernetes API requests with `method` sent by `client`.
    pub fn kubernetes_requests(&self, client: KubernetesClient, method: &str) -> Counter {
        self.kubernetes_requests
            .get_or_create(&MethodLabels {
                client: client.label(),
                method: method.to_owned(),
            })
            .clone()
    }

    /// Records the resource's lifecycle state (None: the resource is gone, and so are its
    /// own series).
    pub fn lifecycle(&self, kind: &'static str, namespace: &str, name: &str, state: Option<&str>) {
        if state.is_none() {
            let labels = resource_labels(kind, namespace, name);
            self.reconciles.remove(&labels);
            self.status_writes.remove(&labels);
            self.flink_requests.remove(&labels);
        }
        let mut states = self.states.lock().unwrap_or_else(|e| e.into_inner());
        let key = (kind, namespace.to_owned(), name.to_owned());
        let gauge = |lifecycle_state: &str| {
            self.resources.get_or_create(&StateLabels {
                kind,
                namespace: namespace.to_owned(),
                lifecycle_state: lifecycle_state.to_owned(),
            })
        };
        let now = std::time::Instant::now();
        if let (Some(state), Some((recorded, _))) = (state, states.get(&key))
            && recorded == state
        {
            return;
        }
        let previous = match state {
            Some(state) => states.insert(key, (state.to_owned(), now)),
            None => states.remove(&key),
        };
        if let Some((previous, since)) = previous {
            gauge(&previous).dec();
            self.state_durations
                .get_or_create(&StateDurationLabels {
                    kind,
                    lifecycle_state: previous,
                })
                .observe(now.duration_since(since).as_secs_f64());
        }
        if let Some(state) = state {
            gauge(state).inc();
        }
    }

    pub fn savepoint_completed(&self, kind: &'static str, elapsed: Duration) {
        self.savepoint_duration
            .get_or_create(&KindLabels { kind })
            .observe(elapsed.as_secs_f64());
    }

    pub fn savepoint_failed(&self, kind: &'static str) {
        self.savepoint_failures.get_or_create(&KindLabels { kind }).inc();
    }
}

fn resource_labels(kind: &'static str, namespace: &str, name: &str) -> ResourceLabels {
    ResourceLabels {
        kind,
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    fn text(registry: &Registry) -> String {
        let mut out = String::new();
        encode(&mut out, registry).unwrap();
        out
    }

    #[test]
    fn resources_move_between_lifecycle_states() {
        let mut registry = Registry::default();
        let metrics = ReconcileMetrics::register(&mut registry);
        metrics.lifecycle("FlinkDeployment", "ns", "a", Some("DEPLOYED"));
        metrics.lifecycle("FlinkDeployment", "ns", "b", Some("DEPLOYED"));
        metrics.lifecycle("FlinkDeployment", "ns", "a", Some("STABLE"));
        metrics.lifecycle("FlinkDeployment", "ns", "b", None);
        metrics.reconciled("FlinkDeployment", "ns", "a", Duration::from_millis(3), false);
        metrics.status_written("FlinkDeployment", "ns", "a");
        metrics.flink_requests("FlinkDeployment", "ns", "a").inc();
        metrics
            .kubernetes_requests(KubernetesClient::Operator, "GET")
            .inc();
        metrics.reconciled("FlinkDeployment", "ns", "b", Duration::from_millis(3), true);
        metrics.reconcile_deferred("FlinkSessionJob", "tenant-a");
        metrics.lifecycle("FlinkDeployment", "ns", "b", None);
        metrics.savepoint_completed("FlinkDeployment", Duration::from_secs(1));
        metrics.savepoint_failed("FlinkDeployment");
        let count = |namespace: &str, state| SnapshotCount {
            namespace: namespace.to_owned(),
            snapshot_type: "SAVEPOINT",
            state,
        };
        metrics.snapshot_census(&[(count("ns", "IN_PROGRESS"), 2), (count("gone", "COMPLETED"), 1)].into());
        metrics.snapshot_census(&[(count("ns", "IN_PROGRESS"), 1), (count("ns", "COMPLETED"), 1)].into());
        metrics.snapshot_completed("CHECKPOINT", Duration::from_secs(2));
        metrics.snapshot_failed("SAVEPOINT");
        let out = text(&registry);
        for line in [
            // a left DEPLOYED; b left DEPLOYED when it was deleted; a is still STABLE.
            r#"flink_operator_lifecycle_state_seconds_count{kind="FlinkDeployment",lifecycle_state="DEPLOYED"} 2"#,
            r#"flink_operator_snapshots{namespace="ns",snapshot_type="SAVEPOINT",state="IN_PROGRESS"} 1"#,
            r#"flink_operator_snapshots{namespace="ns",snapshot_type="SAVEPOINT",state="COMPLETED"} 1"#,
            r#"flink_operator_snapshot_duration_seconds_count{snapshot_type="CHECKPOINT"} 1"#,
            r#"flink_operator_snapshot_failures_total{snapshot_type="SAVEPOINT"} 1"#,
            r#"flink_operator_resources{kind="FlinkDeployment",namespace="ns",lifecycle_state="STABLE"} 1"#,
            r#"flink_operator_resources{kind="FlinkDeployment",namespace="ns",lifecycle_state="DEPLOYED"} 0"#,
            r#"flink_operator_reconcile_errors_total{kind="FlinkDeployment"} 1"#,
            r#"flink_operator_reconcile_deferred_total{kind="FlinkSessionJob",namespace="tenant-a"} 1"#,
            r#"flink_operator_savepoint_failures_total{kind="FlinkDeployment"} 1"#,
            r#"flink_operator_savepoint_duration_seconds_count{kind="FlinkDeployment"} 1"#,
            r#"flink_operator_reconcile_duration_seconds_count{kind="FlinkDeployment"} 2"#,
            r#"flink_operator_resource_reconciles_total{kind="FlinkDeployment",namespace="ns",name="a"} 1"#,
            r#"flink_operator_status_writes_total{kind="FlinkDeployment",namespace="ns",name="a"} 1"#,
            r#"flink_operator_flink_requests_total{kind="FlinkDeployment",namespace="ns",name="a"} 1"#,
            r#"flink_operator_kubernetes_requests_total{client="operator",method="GET"} 1"#,
        ] {
            assert!(out.contains(line), "{line} missing from:\n{out}");
        }
        // b is gone: its own series with it.
        assert!(!out.contains(r#"name="b""#), "{out}");
        // So is the namespace whose snapshots were all deleted.
        assert!(!out.contains(r#"namespace="gone""#), "{out}");
    }
}
