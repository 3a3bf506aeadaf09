//! The autoscaler's scaling history: each decision it made to rescale a job, kept in the
//! ConfigMap `autoscaler-<name>` (a FlinkSessionJob's: `autoscaler-sessionjob-<name>`) beside
//! the resource, which owns it, as the Apache autoscaler keeps its own. Written only when a
//! decision is made, so a job the autoscaler leaves alone costs no write; trimmed to
//! `history.max.count` entries no older than `history.max.age`. `flink-operator history`
//! prints it.

use std::collections::BTreeMap;

use flink_operator_api::JobKind;
use k8s_openapi::api::core::v1::ConfigMap;
use serde::{Deserialize, Serialize};

use super::decide::Decision;
use crate::policy::autoscaler::Retention;

/// The ConfigMap's key of the history (JSON, oldest first).
pub const KEY: &str = "scalingHistory";
/// The label that tells the autoscaler's ConfigMaps from Flink's own (their HA metadata).
pub const COMPONENT: &str = "autoscaler";

/// One vertex's change in a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VertexChange {
    pub vertex: String,
    pub from: i64,
    pub to: i64,
    /// The ScalingReport's reason for it.
    pub reason: String,
}

/// One decision: when, for which job, and what it changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScalingEntry {
    /// Epoch milliseconds.
    pub at_ms: i64,
    pub job_id: String,
    pub changes: Vec<VertexChange>,
}

impl ScalingEntry {
    /// The entry of `decision` (its changed vertices) for `job_id` at `at_ms`.
    pub fn of(decision: &Decision, job_id: &str, at_ms: i64) -> Self {
        ScalingEntry {
            at_ms,
            job_id: job_id.to_owned(),
            changes: decision
                .vertices
                .iter()
                .filter(|(_, d)| d.to != d.from)
                .map(|(vertex, d)| VertexChange {
                    vertex: vertex.clone(),
                    from: d.from,
                    to: d.to,
                    reason: d.why.said(),
                })
                .collect(),
        }
    }

    /// As `flink-operator history` prints it.
    pub fn line(&self) -> String {
        let at = k8s_openapi::jiff::Timestamp::from_millisecond(self.at_ms)
            .map(|t| t.round(k8s_openapi::jiff::Unit::Second).unwrap_or(t).to_string())
            .unwrap_or_else(|_| self.at_ms.to_string());
        let changes: Vec<String> = self
            .changes
            .iter()
            .map(|c| format!("vertex {} {} -> {} ({})", c.vertex, c.from, c.to, c.reason))
            .collect();
        format!("{at}  {}", changes.join("; "))
    }
}

/// The name of the ConfigMap of the resource `name` of `kind`.
pub fn config_map_name(kind: JobKind, name: &str) -> String {
    match kind {
        JobKind::FlinkSessionJob => format!("autoscaler-sessionjob-{name}"),
        _ => format!("autoscaler-{name}"),
    }
}

/// The history a ConfigMap holds (none: absent or unreadable).
pub fn read(config_map: Option<&ConfigMap>) -> Vec<ScalingEntry> {
    config_map
        .and_then(|cm| cm.data.as_ref())
        .and_then(|data| data.get(KEY))
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}

/// `kept` with `entry` added (once: an entry already there is not added again), trimmed to
/// `retention` at `now_ms`.
pub fn appended(
    mut kept: Vec<ScalingEntry>,
    entry: &ScalingEntry,
    retention: Retention,
    now_ms: i64,
) -> Vec<ScalingEntry> {
    if !kept.contains(entry) {
        kept.push(entry.clone());
    }
    kept.retain(|e| now_ms - e.at_ms <= retention.max_age_ms);
    kept.sort_by_key(|e| e.at_ms);
    let excess = kept.len().saturating_sub(retention.max_count.max(1));
    kept.drain(..excess);
    kept
}

/// The ConfigMap's data for `history`.
pub fn data(history: &[ScalingEntry]) -> BTreeMap<String, String> {
    BTreeMap::from([(
        KEY.to_owned(),
        serde_json::to_string(history).unwrap_or_else(|_| "[]".to_owned()),
    )])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(at_ms: i64) -> ScalingEntry {
        ScalingEntry {
            at_ms,
            job_id: "j".into(),
            changes: vec![VertexChange {
                vertex: "v".into(),
                from: 2,
                to: 4,
                reason: "expected utilization 0.90 over the maximum".into(),
            }],
        }
    }

    #[test]
    fn the_history_keeps_the_newest_entries_within_its_count_and_age_once_each() {
        let retention = Retention {
            max_count: 3,
            max_age_ms: 10_000,
        };
        let mut kept = Vec::new();
        for at in [1_000, 2_000, 3_000, 4_000] {
            kept = appended(kept, &entry(at), retention, at);
        }
        let times = |k: &[ScalingEntry]| k.iter().map(|e| e.at_ms).collect::<Vec<_>>();
        assert_eq!(times(&kept), [2_000, 3_000, 4_000], "the count");
        let again = appended(kept.clone(), &entry(4_000), retention, 4_000);
        assert_eq!(
            again, kept,
            "an entry written twice (an action retried) is kept once"
        );
        assert_eq!(
            times(&appended(kept, &entry(13_500), retention, 13_500)),
            [4_000, 13_500],
            "the age"
        );
    }

    #[test]
    fn the_history_reads_back_and_prints_one_line_per_decision() {
        let history = vec![entry(1_796_635_800_000)];
        let cm = ConfigMap {
            data: Some(data(&history)),
            ..Default::default()
        };
        assert_eq!(read(Some(&cm)), history);
        assert_eq!(read(None), []);
        assert_eq!(
            history[0].line(),
            "2026-12-07T09:30:00Z  vertex v 2 -> 4 (expected utilization 0.90 over the maximum)"
        );
        assert_eq!(config_map_name(JobKind::FlinkDeployment, "a"), "autoscaler-a");
        assert_eq!(
            config_map_name(JobKind::FlinkSessionJob, "a"),
            "autoscaler-sessionjob-a"
        );
    }
}
