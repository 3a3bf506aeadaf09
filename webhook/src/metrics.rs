//! Prometheus metrics of admission: how many requests, their outcome, and how long they took.

use std::time::Duration;

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry::Registry,
};

use crate::kinds::{Endpoint, FlinkKind};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AdmissionLabels {
    endpoint: &'static str,
    kind: &'static str,
    allowed: &'static str,
}

type DurationHistogram = Family<AdmissionLabels, Histogram, fn() -> Histogram>;

/// Counters and latency histogram of admission reviews, by endpoint, kind and outcome.
#[derive(Clone)]
pub struct AdmissionMetrics {
    requests: Family<AdmissionLabels, Counter>,
    duration: DurationHistogram,
}

impl Default for AdmissionMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            duration: Family::new_with_constructor(latency_histogram),
        }
    }
}

fn latency_histogram() -> Histogram {
    // 50 µs .. ~0.8 s: admission is expected to answer in well under a millisecond, and
    // anything near the API server's timeout must still land in a bucket.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.00005, 2.0, 15,
    ))
}

impl AdmissionMetrics {
    /// Metrics registered into `registry` under `flink_operator_admission_*`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        let sub = registry.sub_registry_with_prefix("flink_operator_admission");
        sub.register("requests", "Admission reviews answered", metrics.requests.clone());
        sub.register(
            "duration_seconds",
            "Time to answer an admission review, from decoded request to response",
            metrics.duration.clone(),
        );
        metrics
    }

    /// Counts one answered review and its time.
    pub fn observe(&self, endpoint: Endpoint, kind: Option<FlinkKind>, allowed: bool, elapsed: Duration) {
        let labels = AdmissionLabels {
            endpoint: endpoint.as_str(),
            kind: kind.map_or("other", FlinkKind::as_str),
            allowed: if allowed { "true" } else { "false" },
        };
        self.requests.get_or_create(&labels).inc();
        self.duration
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }
}
