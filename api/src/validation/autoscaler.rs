//! Rules on the autoscaler options (`job.autoscaler.*`), checked only when it is enabled
//! (D32/D33).

use super::{
    Violation,
    flink_config::{Config, config_path},
};
use crate::{
    keys::operator,
    options::{defaults, parse_duration},
};

use crate::keys::autoscaler::{ENABLED, METRICS_WINDOW, UTILIZATION_BOUNDARY, UTILIZATION_TARGET};

/// Defaults of the Apache autoscaler, used where a bound depends on an unset option.
const DEFAULT_TARGET: f64 = 0.7;
const DEFAULT_METRICS_WINDOW_SECS: u64 = 15 * 60;

pub(crate) fn rules(config: &Config<'_>, out: &mut Vec<Violation>) {
    if !config.is_true(ENABLED) {
        return;
    }
    let number = |key: &str, out: &mut Vec<Violation>| -> Option<f64> {
        let text = config.get(key)?;
        match text.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Some(v),
            _ => {
                out.push(Violation::new(
                    config_path(key),
                    format!("invalid value in the autoscaler config: {text:?} is not a number"),
                ));
                None
            }
        }
    };
    let in_range = |key: &str, low: f64, high: f64, out: &mut Vec<Violation>| {
        if let Some(value) = number(key, out)
            && !(low..=high).contains(&value)
        {
            out.push(Violation::new(
                config_path(key),
                format!("autoscaler option must be within [{low}, {high}] (got {value})"),
            ));
        }
    };
    in_range(crate::keys::autoscaler::SCALE_DOWN_MAX_FACTOR, 0.0, f64::MAX, out);
    in_range(crate::keys::autoscaler::SCALE_UP_MAX_FACTOR, 0.0, f64::MAX, out);
    in_range(UTILIZATION_TARGET, 0.0, 1.0, out);
    in_range(UTILIZATION_BOUNDARY, 0.0, f64::MAX, out);
    let target = config
        .get(UTILIZATION_TARGET)
        .and_then(|t| t.trim().parse::<f64>().ok())
        .unwrap_or(DEFAULT_TARGET);
    in_range(crate::keys::autoscaler::UTILIZATION_MAX, target, 1.0, out);
    in_range(crate::keys::autoscaler::UTILIZATION_MIN, 0.0, target, out);
    in_range("job.autoscaler.memory.gc-pressure.threshold", 0.0, 1.0, out);
    in_range("job.autoscaler.memory.heap-usage.threshold", 0.0, 1.0, out);
    if config.is_true("job.autoscaler.observed-scalability.enabled") {
        in_range(
            "job.autoscaler.observed-scalability.coefficient-min",
            0.01,
            1.0,
            out,
        );
    }
    if config.is_true("job.autoscaler.scaling.effectiveness.detection.enabled") {
        in_range("job.autoscaler.scaling.effectiveness.threshold", 0.0, 1.0, out);
    }
    if config.is_true("job.autoscaler.memory.tuning.enabled") {
        in_range("job.autoscaler.memory.tuning.overhead", 0.0, 1.0, out);
    }

    if let Some(periods) = config.get(crate::keys::autoscaler::EXCLUDED_PERIODS)
        && let Err(why) = crate::options::periods::ExcludedPeriods::parse(periods)
    {
        out.push(Violation::new(
            config_path(crate::keys::autoscaler::EXCLUDED_PERIODS),
            format!("invalid value in the autoscaler config: {why}"),
        ));
    }

    // The autoscaler evaluates metrics once per reconcile; a window shorter than the
    // interval would never hold a full set of samples (D33).
    let window = match config.get(METRICS_WINDOW).map(parse_duration) {
        None => Some(std::time::Duration::from_secs(DEFAULT_METRICS_WINDOW_SECS)),
        Some(Ok(window)) => Some(window),
        Some(Err(reason)) => {
            out.push(Violation::new(config_path(METRICS_WINDOW), reason));
            None
        }
    };
    let interval = config
        .get(operator::RECONCILE_INTERVAL)
        .and_then(|v| parse_duration(v).ok())
        .unwrap_or(std::time::Duration::from_millis(
            u64::try_from(defaults::RECONCILE_INTERVAL_MS).unwrap_or_default(),
        ));
    if let Some(window) = window
        && window < interval
    {
        out.push(Violation::new(
            config_path(METRICS_WINDOW),
            format!(
                "the autoscaler metric window ({window:?}) must not be smaller than the operator reconcile \
                 interval ({interval:?}, {})",
                operator::RECONCILE_INTERVAL
            ),
        ));
    }
}
