//! Prometheus metrics of the reconcile loops: resources per lifecycle state, reconcile
//! durations and failures, and upgrade savepoints (durations, failures).

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

type Histograms = Family<KindLabels, Histogram, fn() -> Histogram>;
/// (kind, namespace, name) of a resource.
type ResourceKey = (&'static str, String, String);

/// The reconcile loops' metrics; cheap to clone.
#[derive(Clone)]
pub struct ReconcileMetrics {
    resources: Family<StateLabels, Gauge>,
    reconcile_duration: Histograms,
    reconcile_errors: Family<KindLabels, Counter>,
    savepoint_duration: Histograms,
    savepoint_failures: Family<KindLabels, Counter>,
    /// (kind, namespace, name) -> lifecycle state, to move a resource between gauges.
    states: Arc<Mutex<HashMap<ResourceKey, String>>>,
}

fn reconcile_histogram() -> Histogram {
    // 1 ms .. ~16 s: a reconcile reads a few objects and may call Flink once.
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
            savepoint_duration: Family::new_with_constructor(savepoint_histogram),
            savepoint_failures: Family::default(),
            states: Arc::default(),
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
            "savepoint_duration_seconds",
            "Time from triggering an upgrade savepoint to its completion",
            metrics.savepoint_duration.clone(),
        );
        sub.register(
            "savepoint_failures",
            "Upgrade savepoints that failed or were lost",
            metrics.savepoint_failures.clone(),
        );
        metrics
    }

    pub fn reconciled(&self, kind: &'static str, elapsed: Duration, ok: bool) {
        let labels = KindLabels { kind };
        self.reconcile_duration
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        if !ok {
            self.reconcile_errors.get_or_create(&labels).inc();
        }
    }

    /// Records the resource's lifecycle state (None: the resource is gone).
    pub fn lifecycle(&self, kind: &'static str, namespace: &str, name: &str, state: Option<&str>) {
        let mut states = self.states.lock().unwrap_or_else(|e| e.into_inner());
        let key = (kind, namespace.to_owned(), name.to_owned());
        let gauge = |lifecycle_state: &str| {
            self.resources.get_or_create(&StateLabels {
                kind,
                namespace: namespace.to_owned(),
                lifecycle_state: lifecycle_state.to_owned(),
            })
        };
        let previous = match state {
            Some(state) => states.insert(key, state.to_owned()),
            None => states.remove(&key),
        };
        if previous.as_deref() == state {
            return;
        }
        if let Some(previous) = previous {
            gauge(&previous).dec();
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
        metrics.reconciled("FlinkDeployment", Duration::from_millis(3), false);
        metrics.savepoint_completed("FlinkDeployment", Duration::from_secs(1));
        metrics.savepoint_failed("FlinkDeployment");
        let out = text(&registry);
        for line in [
            r#"flink_operator_resources{kind="FlinkDeployment",namespace="ns",lifecycle_state="STABLE"} 1"#,
            r#"flink_operator_resources{kind="FlinkDeployment",namespace="ns",lifecycle_state="DEPLOYED"} 0"#,
            r#"flink_operator_reconcile_errors_total{kind="FlinkDeployment"} 1"#,
            r#"flink_operator_savepoint_failures_total{kind="FlinkDeployment"} 1"#,
            r#"flink_operator_savepoint_duration_seconds_count{kind="FlinkDeployment"} 1"#,
            r#"flink_operator_reconcile_duration_seconds_count{kind="FlinkDeployment"} 1"#,
        ] {
            assert!(out.contains(line), "{line} missing from:\n{out}");
        }
    }
}
