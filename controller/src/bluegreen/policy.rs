//! The blue/green options, read from the resource's own `spec.configuration` (not from the
//! operator's configuration), as the Apache operator reads them.

use std::{collections::BTreeMap, time::Duration};

use flink_operator_api::{keys::bluegreen, options::defaults, options::parse_duration};

/// How long a transition may take, how often it is looked at, and how long the old child
/// outlives the new one's readiness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlueGreenPolicy {
    /// `kubernetes.operator.bluegreen.abort.grace-period`: the time a transition has to
    /// complete its savepoint, and then the time the new child has to become stable.
    pub abort_grace_period_ms: i64,
    /// `kubernetes.operator.bluegreen.reconciliation.reschedule-interval`.
    pub reschedule_interval_ms: i64,
    /// `kubernetes.operator.bluegreen.deployment-deletion.delay`.
    pub deletion_delay_ms: i64,
    /// `kubernetes.operator.bluegreen.gate.timeout` (ADVANCED): how long the gates have to
    /// hand over once the new child is stable; unset, the abort grace period.
    pub gate_timeout_ms: Option<i64>,
}

impl Default for BlueGreenPolicy {
    fn default() -> Self {
        Self {
            abort_grace_period_ms: defaults::BLUEGREEN_ABORT_GRACE_PERIOD_MS,
            reschedule_interval_ms: defaults::BLUEGREEN_RESCHEDULE_INTERVAL_MS,
            deletion_delay_ms: defaults::BLUEGREEN_DEPLOYMENT_DELETION_DELAY_MS,
            gate_timeout_ms: None,
        }
    }
}

/// A blue/green option whose value is not a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct PolicyError {
    pub key: &'static str,
    pub reason: String,
}

impl BlueGreenPolicy {
    /// The options of `configuration`, each defaulted when absent. The admission webhook
    /// refuses a value that is not a duration; one that got past it (the webhook bypassed)
    /// is an error here rather than silently the default.
    pub fn from_configuration(configuration: Option<&BTreeMap<String, String>>) -> Result<Self, PolicyError> {
        let defaults = Self::default();
        let read_opt = |key: &'static str| -> Result<Option<i64>, PolicyError> {
            configuration
                .and_then(|c| c.get(key))
                .map(|text| {
                    parse_duration(text)
                        .map(millis)
                        .map_err(|reason| PolicyError { key, reason })
                })
                .transpose()
        };
        let read = |key: &'static str, default: i64| Ok(read_opt(key)?.unwrap_or(default));
        Ok(Self {
            abort_grace_period_ms: read(bluegreen::ABORT_GRACE_PERIOD, defaults.abort_grace_period_ms)?,
            reschedule_interval_ms: read(
                bluegreen::RECONCILIATION_RESCHEDULE_INTERVAL,
                defaults.reschedule_interval_ms,
            )?,
            deletion_delay_ms: read(bluegreen::DEPLOYMENT_DELETION_DELAY, defaults.deletion_delay_ms)?,
            gate_timeout_ms: read_opt(bluegreen::GATE_TIMEOUT)?,
        })
    }

    /// How long the gates of an ADVANCED hand-over have once the new child is stable.
    pub fn gate_timeout_ms(&self) -> i64 {
        self.gate_timeout_ms.unwrap_or(self.abort_grace_period_ms)
    }

    /// The reschedule interval in whole seconds, at least one.
    pub fn reschedule_secs(&self) -> u64 {
        whole_secs(self.reschedule_interval_ms)
    }
}

/// `ms` in whole seconds, rounded up, at least one (a requeue of zero seconds would spin).
pub fn whole_secs(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0).div_ceil(1000).max(1)
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configuration(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn absent_options_take_the_apache_defaults() {
        let policy = BlueGreenPolicy::from_configuration(None).expect("defaults");
        assert_eq!(policy.abort_grace_period_ms, 600_000);
        assert_eq!(policy.reschedule_interval_ms, 15_000);
        assert_eq!(policy.deletion_delay_ms, 0);
        assert_eq!(policy.reschedule_secs(), 15);
    }

    #[test]
    fn options_are_flink_durations_and_a_bare_number_is_milliseconds() {
        let config = configuration(&[
            (bluegreen::ABORT_GRACE_PERIOD, "10 min"),
            (bluegreen::RECONCILIATION_RESCHEDULE_INTERVAL, "123ms"),
            (bluegreen::DEPLOYMENT_DELETION_DELAY, "2500"),
        ]);
        let policy = BlueGreenPolicy::from_configuration(Some(&config)).expect("parses");
        assert_eq!(
            policy,
            BlueGreenPolicy {
                abort_grace_period_ms: 600_000,
                reschedule_interval_ms: 123,
                deletion_delay_ms: 2_500,
                gate_timeout_ms: None,
            }
        );
        assert_eq!(policy.reschedule_secs(), 1);
    }

    #[test]
    fn a_value_that_is_not_a_duration_names_its_key() {
        let config = configuration(&[(bluegreen::DEPLOYMENT_DELETION_DELAY, "soon")]);
        let error = BlueGreenPolicy::from_configuration(Some(&config)).expect_err("refused");
        assert_eq!(error.key, bluegreen::DEPLOYMENT_DELETION_DELAY);
    }
}
