//! The cluster health check of an application deployment
//! (`kubernetes.operator.cluster.health-check.enabled`), pure: the job's restart count and
//! completed checkpoint count, sampled at each look, are kept as a short history in
//! `status.clusterInfo`, and judged against a window.
//!
//! The history is the one the Apache operator keeps, under the same key and in the same
//! JSON shape, so that a resource moved between the two operators keeps its baseline:
//!
//! - restarts: the count at the start of the window is the baseline; more restarts than
//!   the threshold since then is unhealthy. A baseline older than the window is scaled to
//!   the window (restarts spread over twice the window count half), then moved up to the
//!   count seen now. A count that went down (a new job, another cluster) is a new baseline.
//! - checkpoint progress (when checkpointing is configured, or a window is set): no
//!   checkpoint completed within the window is unhealthy. The window is at least
//!   `max(interval, timeout) × (tolerable failures + 2)`, and that is its default.
//!
//! An unhealthy verdict stays in the history until the job is restarted (see
//! `decide::health`), so a look that cannot sample (the JobManager busy) does not undo it.

use std::collections::BTreeMap;

use flink_operator_api::keys::operator;
use serde::{Deserialize, Serialize};

use crate::{flink::MetricValue, policy::HealthSettings};

/// The key of the history in `status.clusterInfo` (the Apache operator's).
pub const CLUSTER_INFO_KEY: &str = "ClusterHealthInfo";

/// Flink's job metric of restarts, and the name older versions report it under.
pub const NUM_RESTARTS: &str = "numRestarts";
pub const FULL_RESTARTS: &str = "fullRestarts";
/// Flink's job metric of completed checkpoints.
pub const COMPLETED_CHECKPOINTS: &str = "numberOfCompletedCheckpoints";
/// The job metrics a look reads, in one call.
pub const METRICS: [&str; 3] = [NUM_RESTARTS, FULL_RESTARTS, COMPLETED_CHECKPOINTS];

/// The health history kept in status; all times are epoch milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HealthHistory {
    /// When it last changed (a look that changes nothing is not written, see
    /// [`evaluate`]).
    pub time_stamp: i64,
    /// The restart count at the start of the window.
    pub num_restarts: i64,
    /// When that count was taken.
    pub num_restarts_evaluation_time_stamp: i64,
    /// The completed checkpoint count as it last changed.
    pub num_completed_checkpoints: i64,
    /// When it last changed (went up, or down with a new job).
    pub num_completed_checkpoints_increased_time_stamp: i64,
    pub health_result: HealthResult,
}

/// The verdict of the last evaluation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HealthResult {
    pub healthy: bool,
    /// Why not, when not.
    pub error: Option<String>,
}

impl Default for HealthResult {
    fn default() -> Self {
        HealthResult {
            healthy: true,
            error: None,
        }
    }
}

impl HealthHistory {
    /// The history in `cluster_info`; one that cannot be read is no history (it starts
    /// again, which never restarts a job).
    pub fn read(cluster_info: Option<&BTreeMap<String, String>>) -> Option<Self> {
        let text = cluster_info?.get(CLUSTER_INFO_KEY)?;
        serde_json::from_str(text).ok()
    }

    /// Writes `history` into `cluster_info` (None: removes it); an emptied map is dropped.
    pub fn store(cluster_info: &mut Option<BTreeMap<String, String>>, history: Option<&Self>) {
        match history.and_then(|h| serde_json::to_string(h).ok()) {
            Some(text) => {
                cluster_info
                    .get_or_insert_with(BTreeMap::new)
                    .insert(CLUSTER_INFO_KEY.to_owned(), text);
            }
            None => {
                if let Some(map) = cluster_info.as_mut() {
                    map.remove(CLUSTER_INFO_KEY);
                    if map.is_empty() {
                        *cluster_info = None;
                    }
                }
            }
        }
    }

    fn first(sample: &HealthSample, now_ms: i64) -> Self {
        HealthHistory {
            time_stamp: now_ms,
            num_restarts: sample.num_restarts,
            num_restarts_evaluation_time_stamp: now_ms,
            num_completed_checkpoints: sample.num_completed_checkpoints,
            num_completed_checkpoints_increased_time_stamp: now_ms,
            health_result: HealthResult::default(),
        }
    }
}

/// What one look read of the job's metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthSample {
    pub num_restarts: i64,
    pub num_completed_checkpoints: i64,
}

impl HealthSample {
    /// The sample in the job's metrics: its restarts (`numRestarts`, or `fullRestarts` in
    /// Flink versions that report only that) and its completed checkpoints (none reported:
    /// none completed). None without a restart count (a job not yet scheduled).
    pub fn from_metrics(metrics: &[MetricValue]) -> Option<Self> {
        let value = |name: &str| {
            metrics
                .iter()
                .find(|m| m.id == name)
                .and_then(|m| m.value.as_deref())
                .and_then(|v| v.trim().parse::<f64>().ok())
                // Counters, sent as text; a fraction would be Flink's own error.
                .map(|v| v as i64)
        };
        Some(HealthSample {
            num_restarts: value(NUM_RESTARTS).or_else(|| value(FULL_RESTARTS))?,
            num_completed_checkpoints: value(COMPLETED_CHECKPOINTS).unwrap_or(0),
        })
    }
}

/// What the history says now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to judge by (the check is off, or no history yet).
    Unknown,
    Healthy,
    /// Why.
    Unhealthy(String),
}

/// The next history and its verdict, from the stored history, this look's sample (None:
/// none was taken, e.g. the job is not running or its metrics did not answer), the clock
/// and the settings (None: the check is off, and its history goes).
///
/// The history's `time_stamp` moves only with another change, so that a healthy job
/// whose counts do not move costs no status write at every look.
pub fn evaluate(
    history: Option<&HealthHistory>,
    sample: Option<&HealthSample>,
    now_ms: i64,
    settings: Option<&HealthSettings>,
) -> (Option<HealthHistory>, Verdict) {
    let Some(settings) = settings else {
        return (None, Verdict::Unknown);
    };
    let Some(sample) = sample else {
        let verdict = history.map_or(Verdict::Unknown, HealthHistory::verdict);
        return (history.cloned(), verdict);
    };
    let Some(last) = history else {
        return (Some(HealthHistory::first(sample, now_ms)), Verdict::Healthy);
    };
    if now_ms < last.time_stamp {
        // The clock went back (another operator replica, a corrected clock): the stored
        // times would hold the windows open or shut, so the history starts again.
        return (Some(HealthHistory::first(sample, now_ms)), Verdict::Healthy);
    }
    let mut next = last.clone();
    let restarts = judge_restarts(&mut next, sample, now_ms, settings);
    let checkpoints = judge_checkpoints(&mut next, sample, now_ms, settings);
    next.health_result = match (restarts, checkpoints) {
        (None, None) => HealthResult::default(),
        (a, b) => HealthResult {
            healthy: false,
            error: Some(a.into_iter().chain(b).collect::<Vec<_>>().join("; ")),
        },
    };
    if next != *last {
        next.time_stamp = now_ms;
    }
    let verdict = next.verdict();
    (Some(next), verdict)
}

impl HealthHistory {
    /// What its last evaluation said.
    pub fn verdict(&self) -> Verdict {
        if self.health_result.healthy {
            Verdict::Healthy
        } else {
            Verdict::Unhealthy(
                self.health_result
                    .error
                    .clone()
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| "the job is unhealthy".to_owned()),
            )
        }
    }
}

/// Why the job restarted too often, if it did; moves the baseline.
fn judge_restarts(
    history: &mut HealthHistory,
    sample: &HealthSample,
    now_ms: i64,
    settings: &HealthSettings,
) -> Option<String> {
    if sample.num_restarts < history.num_restarts {
        history.num_restarts = sample.num_restarts;
        history.num_restarts_evaluation_time_stamp = now_ms;
        return None;
    }
    let window = settings.restarts_window_ms.max(1);
    let since = now_ms - history.num_restarts_evaluation_time_stamp;
    let more = sample.num_restarts - history.num_restarts;
    // A baseline older than the window: the restarts since are taken as evenly spread,
    // and only the window's share counts.
    let in_window = if since > window {
        i64::try_from(i128::from(more) * i128::from(window) / i128::from(since)).unwrap_or(i64::MAX)
    } else {
        more
    };
    let why = (in_window > settings.restarts_threshold).then(|| {
        format!(
            "the job restarted {in_window} times within {}, more than the threshold of {} ({})",
            duration_text(window),
            settings.restarts_threshold,
            operator::CLUSTER_HEALTH_CHECK_RESTARTS_THRESHOLD
        )
    });
    if since > window {
        history.num_restarts = sample.num_restarts;
        history.num_restarts_evaluation_time_stamp = now_ms;
    }
    why
}

/// Why the job completes no checkpoints, if it does not; follows the count.
fn judge_checkpoints(
    history: &mut HealthHistory,
    sample: &HealthSample,
    now_ms: i64,
    settings: &HealthSettings,
) -> Option<String> {
    let window = settings.checkpoint_window_ms?;
    if sample.num_completed_checkpoints != history.num_completed_checkpoints {
        // Up: progress. Down: a new job counting from zero, which starts the window again.
        history.num_completed_checkpoints = sample.num_completed_checkpoints;
        history.num_completed_checkpoints_increased_time_stamp = now_ms;
        return None;
    }
    (history.num_completed_checkpoints_increased_time_stamp + window < now_ms).then(|| {
        format!(
            "no checkpoint completed within {} ({})",
            duration_text(window),
            operator::CLUSTER_HEALTH_CHECK_CHECKPOINT_PROGRESS_WINDOW
        )
    })
}

/// Milliseconds as a short duration (`90s`, `2m`, `1500ms`).
fn duration_text(ms: i64) -> String {
    match ms {
        ms if ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{ms}ms"),
    }
}

#[cfg(test)]
mod tests;
