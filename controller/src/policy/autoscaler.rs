//! The autoscaler's options (`job.autoscaler.*`), read from a job's effective configuration
//! with the Apache operator's defaults. Values that do not parse keep their defaults: the
//! webhook refuses them when the autoscaler is enabled.

use std::collections::{BTreeMap, BTreeSet};

use flink_operator_api::{
    keys::autoscaler as key,
    options::{periods::ExcludedPeriods, read},
};

const MINUTE_MS: i64 = 60_000;
const TARGET: f64 = 0.7;
/// `target.utilization.boundary`: the band around the target when its ends are not set.
const BOUNDARY: f64 = 0.3;

#[derive(Debug, Clone, PartialEq)]
pub struct AutoscalerOptions {
    pub enabled: bool,
    /// False: advisory, decisions are reported and not applied.
    pub scaling_enabled: bool,
    pub metrics_window_ms: i64,
    /// After a (re)start, how long metrics are not collected.
    pub stabilization_ms: i64,
    pub target_utilization: f64,
    pub max_utilization: f64,
    pub min_utilization: f64,
    /// How long a scale-down must be wanted before it is made.
    pub scale_down_interval_ms: i64,
    pub vertex_min_parallelism: i64,
    pub vertex_max_parallelism: i64,
    /// A vertex comes down to no less than `1 - scale_down_max_factor` of its parallelism.
    pub scale_down_max_factor: f64,
    /// A vertex goes up to no more than `1 + scale_up_max_factor` of its parallelism.
    pub scale_up_max_factor: f64,
    /// How soon a source's backlog should be caught up.
    pub catch_up_ms: i64,
    /// Vertices never rescaled.
    pub excluded_vertices: BTreeSet<String>,
    /// When nothing is rescaled (`excluded.periods`).
    pub excluded_periods: ExcludedPeriods,
    /// How long a rescale stops the job (`restart.time`): a scale-up also catches up what
    /// piles up meanwhile, within `catch-up.duration`.
    pub restart_ms: i64,
    /// Whether each vertex's parallelism is divided by its observed scalability
    /// (`observed-scalability.enabled`), once it was judged at `min-observations`
    /// parallelisms, by no less than `coefficient-min`.
    pub observed_scalability: Option<(usize, f64)>,
    /// How much of the scaling history is kept (`history.max.count`, `history.max.age`).
    pub history: Retention,
}

impl Default for AutoscalerOptions {
    fn default() -> Self {
        AutoscalerOptions {
            enabled: false,
            scaling_enabled: true,
            metrics_window_ms: 15 * MINUTE_MS,
            stabilization_ms: 5 * MINUTE_MS,
            target_utilization: TARGET,
            max_utilization: (TARGET + BOUNDARY).min(1.0),
            min_utilization: (TARGET - BOUNDARY).max(0.0),
            scale_down_interval_ms: 60 * MINUTE_MS,
            vertex_min_parallelism: 1,
            vertex_max_parallelism: 200,
            scale_down_max_factor: 0.6,
            scale_up_max_factor: 100_000.0,
            catch_up_ms: 30 * MINUTE_MS,
            excluded_vertices: BTreeSet::new(),
            excluded_periods: ExcludedPeriods::default(),
            restart_ms: 5 * MINUTE_MS,
            observed_scalability: None,
            history: Retention::default(),
        }
    }
}

impl AutoscalerOptions {
    pub fn from_config(config: &BTreeMap<String, String>) -> Self {
        let d = AutoscalerOptions::default();
        let number = |k: &str| {
            config
                .get(k)
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite())
        };
        let millis = |k: &str, default: i64| read::millis(config, k).unwrap_or(default);
        let whole = |k: &str, default: i64| read::integer(config, k).unwrap_or(default);
        let target = number(key::UTILIZATION_TARGET).unwrap_or(d.target_utilization);
        // The band around the target: `utilization.max`/`min` when set, else the target plus
        // and minus `target.utilization.boundary` (0.3), within [0, 1].
        let boundary = number(key::UTILIZATION_BOUNDARY).unwrap_or(BOUNDARY);
        AutoscalerOptions {
            enabled: read::flag(config, key::ENABLED, d.enabled),
            scaling_enabled: read::flag(config, key::SCALING_ENABLED, d.scaling_enabled),
            metrics_window_ms: millis(key::METRICS_WINDOW, d.metrics_window_ms),
            stabilization_ms: millis(key::STABILIZATION_INTERVAL, d.stabilization_ms),
            target_utilization: target,
            max_utilization: number(key::UTILIZATION_MAX).unwrap_or((target + boundary).min(1.0)),
            min_utilization: number(key::UTILIZATION_MIN).unwrap_or((target - boundary).max(0.0)),
            scale_down_interval_ms: millis(key::SCALE_DOWN_INTERVAL, d.scale_down_interval_ms),
            vertex_min_parallelism: whole(key::VERTEX_MIN_PARALLELISM, d.vertex_min_parallelism).max(1),
            vertex_max_parallelism: whole(key::VERTEX_MAX_PARALLELISM, d.vertex_max_parallelism).max(1),
            scale_down_max_factor: number(key::SCALE_DOWN_MAX_FACTOR).unwrap_or(d.scale_down_max_factor),
            scale_up_max_factor: number(key::SCALE_UP_MAX_FACTOR).unwrap_or(d.scale_up_max_factor),
            catch_up_ms: millis(key::CATCH_UP_DURATION, d.catch_up_ms),
            excluded_vertices: config
                .get(key::VERTEX_EXCLUDE_IDS)
                .map(|v| {
                    v.split([',', ';'])
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            excluded_periods: config
                .get(key::EXCLUDED_PERIODS)
                .and_then(|v| ExcludedPeriods::parse(v).ok())
                .unwrap_or_default(),
            restart_ms: millis(key::RESTART_TIME, d.restart_ms),
            observed_scalability: read::flag(config, key::OBSERVED_SCALABILITY_ENABLED, false).then(|| {
                (
                    usize::try_from(whole(key::OBSERVED_SCALABILITY_MIN_OBSERVATIONS, 3)).unwrap_or(3),
                    number(key::OBSERVED_SCALABILITY_COEFFICIENT_MIN).unwrap_or(0.5),
                )
            }),
            history: Retention {
                max_count: whole(key::HISTORY_MAX_COUNT, -1)
                    .try_into()
                    .unwrap_or(d.history.max_count),
                max_age_ms: millis(key::HISTORY_MAX_AGE, d.history.max_age_ms),
            },
        }
    }

    /// Why a decision made at `now_ms` is not applied: advisory mode, or an excluded period.
    pub fn held_at(&self, now_ms: i64) -> Option<&'static str> {
        if !self.scaling_enabled {
            Some("job.autoscaler.scaling.enabled is false (advisory)")
        } else if self.excluded_periods.contains(now_ms) {
            Some("within an excluded period (job.autoscaler.excluded.periods)")
        } else {
            None
        }
    }
}

/// How much of the history is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub max_count: usize,
    pub max_age_ms: i64,
}

impl Default for Retention {
    /// The Apache autoscaler's `history.max.count` and `history.max.age`.
    fn default() -> Self {
        Retention {
            max_count: 3,
            max_age_ms: 24 * 3_600_000,
        }
    }
}
