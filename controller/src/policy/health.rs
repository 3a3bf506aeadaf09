//! The cluster health check's settings (`kubernetes.operator.cluster.health-check.*`), read
//! from a resource's effective configuration with the rest of its [`super::Policy`].

use std::collections::BTreeMap;

use flink_operator_api::{
    keys::{flink, operator},
    options::{defaults, read},
};

/// Flink's defaults when the checkpoint keys are not set.
const DEFAULT_CHECKPOINT_TIMEOUT_MS: i64 = 10 * 60 * 1000;
const CHECKPOINTING_TIMEOUT: &str = "execution.checkpointing.timeout";
const TOLERABLE_FAILED_CHECKPOINTS: &str = "execution.checkpointing.tolerable-failed-checkpoints";

/// The health check's settings for one resource (present only when it is enabled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthSettings {
    /// `kubernetes.operator.cluster.health-check.restarts.window`.
    pub restarts_window_ms: i64,
    /// `kubernetes.operator.cluster.health-check.restarts.threshold`.
    pub restarts_threshold: i64,
    /// The checkpoint progress window; None when that check is off or nothing checkpoints.
    pub checkpoint_window_ms: Option<i64>,
}

impl HealthSettings {
    /// The settings of an effective configuration; None when the check is off. Values that
    /// do not parse keep their defaults (the webhook reports them).
    pub fn from_config(config: &BTreeMap<String, String>) -> Option<Self> {
        let flag = |key: &str, default: bool| read::flag(config, key, default);
        if !flag(
            operator::CLUSTER_HEALTH_CHECK_ENABLED,
            defaults::CLUSTER_HEALTH_CHECK_ENABLED,
        ) {
            return None;
        }
        let duration = |key: &str| read::millis(config, key);
        let restarts_threshold = read::integer(config, operator::CLUSTER_HEALTH_CHECK_RESTARTS_THRESHOLD)
            .unwrap_or(defaults::CLUSTER_HEALTH_CHECK_RESTARTS_THRESHOLD);
        let checkpoint_window_ms = checkpoint_window_ms(
            flag(
                operator::CLUSTER_HEALTH_CHECK_CHECKPOINT_PROGRESS_ENABLED,
                defaults::CLUSTER_HEALTH_CHECK_CHECKPOINT_PROGRESS_ENABLED,
            ),
            duration(operator::CLUSTER_HEALTH_CHECK_CHECKPOINT_PROGRESS_WINDOW),
            duration(flink::CHECKPOINTING_INTERVAL).filter(|ms| *ms > 0),
            duration(CHECKPOINTING_TIMEOUT).unwrap_or(DEFAULT_CHECKPOINT_TIMEOUT_MS),
            read::integer(config, TOLERABLE_FAILED_CHECKPOINTS).unwrap_or(0),
        );
        Some(HealthSettings {
            restarts_window_ms: duration(operator::CLUSTER_HEALTH_CHECK_RESTARTS_WINDOW)
                .unwrap_or(defaults::CLUSTER_HEALTH_CHECK_RESTARTS_WINDOW_MS),
            restarts_threshold,
            checkpoint_window_ms,
        })
    }
}

/// The checkpoint progress window: off when the check is, or when no window is set and
/// the configuration enables no checkpointing (a job that enables it in code needs a
/// window set). A window shorter than the checkpoints can take to complete, with the
/// failures tolerated, would call a job that is only slow unhealthy: it is raised to that.
pub fn checkpoint_window_ms(
    enabled: bool,
    window_ms: Option<i64>,
    interval_ms: Option<i64>,
    timeout_ms: i64,
    tolerable_failures: i64,
) -> Option<i64> {
    if !enabled || (window_ms.is_none() && interval_ms.is_none()) {
        return None;
    }
    let attempts = tolerable_failures.max(0).saturating_add(2);
    let least = interval_ms.unwrap_or(0).max(timeout_ms).saturating_mul(attempts);
    Some(window_ms.filter(|w| *w >= least).unwrap_or(least))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    #[test]
    fn the_check_is_off_unless_enabled() {
        let config = BTreeMap::from([(
            operator::CLUSTER_HEALTH_CHECK_RESTARTS_THRESHOLD.to_owned(),
            "1".to_owned(),
        )]);
        assert_eq!(HealthSettings::from_config(&config), None);
    }

    #[test]
    fn the_checkpoint_window_defaults_to_what_checkpoints_may_take() {
        let s = 1000;
        // (enabled, window set, interval, timeout, tolerable failures, window)
        let cases = [
            (false, Some(60 * s), Some(10 * s), 600 * s, 0, None),
            (true, None, None, 600 * s, 0, None),
            (true, None, Some(10 * s), 600 * s, 0, Some(1200 * s)),
            (true, None, Some(600 * s), 60 * s, 1, Some(1800 * s)),
            (true, Some(60 * s), Some(10 * s), 20 * s, 0, Some(60 * s)),
            (true, Some(10 * s), Some(10 * s), 20 * s, 0, Some(40 * s)),
            // A window set with no checkpointing configured: the job may enable it in code.
            (true, Some(30 * MIN), None, 600 * s, 0, Some(30 * MIN)),
            (true, Some(MIN), None, 600 * s, 0, Some(1200 * s)),
        ];
        for (enabled, window, interval, timeout, tolerable, want) in cases {
            assert_eq!(
                checkpoint_window_ms(enabled, window, interval, timeout, tolerable),
                want,
                "{enabled} {window:?} {interval:?} {timeout} {tolerable}"
            );
        }
    }

    #[test]
    fn settings_come_from_the_configuration() {
        let config = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(
            HealthSettings::from_config(&config(&[(operator::CLUSTER_HEALTH_CHECK_ENABLED, "true")])),
            Some(HealthSettings {
                restarts_window_ms: defaults::CLUSTER_HEALTH_CHECK_RESTARTS_WINDOW_MS,
                restarts_threshold: defaults::CLUSTER_HEALTH_CHECK_RESTARTS_THRESHOLD,
                checkpoint_window_ms: None,
            })
        );
        assert_eq!(
            HealthSettings::from_config(&config(&[
                (operator::CLUSTER_HEALTH_CHECK_ENABLED, "true"),
                (operator::CLUSTER_HEALTH_CHECK_RESTARTS_WINDOW, "30 s"),
                (operator::CLUSTER_HEALTH_CHECK_RESTARTS_THRESHOLD, "2"),
                (flink::CHECKPOINTING_INTERVAL, "5s"),
                (CHECKPOINTING_TIMEOUT, "20s"),
            ])),
            Some(HealthSettings {
                restarts_window_ms: 30_000,
                restarts_threshold: 2,
                checkpoint_window_ms: Some(40_000),
            })
        );
        assert_eq!(
            HealthSettings::from_config(&config(&[
                (operator::CLUSTER_HEALTH_CHECK_ENABLED, "true"),
                (
                    operator::CLUSTER_HEALTH_CHECK_CHECKPOINT_PROGRESS_ENABLED,
                    "false"
                ),
                (flink::CHECKPOINTING_INTERVAL, "5s"),
            ]))
            .and_then(|s| s.checkpoint_window_ms),
            None
        );
    }
}
