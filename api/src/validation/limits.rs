//! The platform's limits on what a resource may ask of the operator and of the cluster: the
//! floors of the intervals a spec may set, the caps on parallelism and replicas, and the
//! keys a spec may not set at all (the limits themselves, see
//! [`SetIn::Platform`](crate::options::SetIn::Platform)).
//!
//! The limits are read from the operator configuration and its namespace overlays only
//! ([`ValidationContext::operator_settings`]), never from a resource: a tenant must not be able
//! to raise what bounds it. The webhook refuses a resource beyond them; the controllers read
//! the same [`PlatformLimits`] and hold a resource the webhook did not judge to them.

use std::collections::BTreeMap;

use super::{ValidationContext, Violation, flink_config::config_path};
use crate::{
    keys::{autoscaler, flink, operator},
    options::{self, defaults, duration_text, read, schedule::Schedule},
};

/// The limits the platform sets for the resources of one namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatformLimits {
    /// `kubernetes.operator.reconcile.interval.min`, in ms (0: none).
    pub reconcile_interval_min_ms: i64,
    /// `kubernetes.operator.observer.progress-check.interval.min`, in ms (0: none).
    pub progress_check_interval_min_ms: i64,
    /// `kubernetes.operator.periodic.savepoint.interval.min`, in ms (0: none).
    pub periodic_savepoint_interval_min_ms: i64,
    /// `kubernetes.operator.periodic.checkpoint.interval.min`, in ms (0: none).
    pub periodic_checkpoint_interval_min_ms: i64,
    /// `kubernetes.operator.snapshot.resource.max.count`: FlinkStateSnapshot resources kept
    /// per job resource and snapshot type, at least 1.
    pub snapshot_max_count: usize,
    /// `kubernetes.operator.snapshot.resource.max.age`, in ms.
    pub snapshot_max_age_ms: i64,
    /// `kubernetes.operator.savepoint.history.max.count.threshold` (None: no cap).
    pub history_max_count_threshold: Option<usize>,
    /// `kubernetes.operator.savepoint.history.max.age.threshold`, in ms (None: no cap).
    pub history_max_age_threshold_ms: Option<i64>,
    /// `kubernetes.operator.job.parallelism.max` (None: no cap).
    pub parallelism_max: Option<i64>,
    /// `kubernetes.operator.taskmanager.replicas.max` (None: no cap).
    pub taskmanager_replicas_max: Option<i64>,
    /// `kubernetes.operator.jobmanager.replicas.max` (None: no cap).
    pub jobmanager_replicas_max: Option<i64>,
}

impl Default for PlatformLimits {
    fn default() -> Self {
        Self::from_settings(&BTreeMap::new())
    }
}

impl PlatformLimits {
    /// The limits for the resources of `namespace`.
    pub fn new(ctx: &ValidationContext, namespace: &str) -> Self {
        Self::from_settings(&ctx.operator_settings(namespace))
    }

    /// The limits of the operator's settings for a namespace (without any resource's keys).
    /// A value that does not parse keeps its default (the operator's configuration is
    /// checked when it is read).
    pub fn from_settings(settings: &BTreeMap<String, String>) -> Self {
        let floor = |key: &str, default: i64| read::millis(settings, key).unwrap_or(default).max(0);
        // A negative cap lifts it.
        let cap = |key: &str, default: i64| {
            Some(read::integer(settings, key).unwrap_or(default)).filter(|cap| *cap >= 0)
        };
        Self {
            reconcile_interval_min_ms: floor(
                operator::RECONCILE_INTERVAL_MIN,
                defaults::RECONCILE_INTERVAL_MIN_MS,
            ),
            progress_check_interval_min_ms: floor(
                operator::PROGRESS_CHECK_INTERVAL_MIN,
                defaults::PROGRESS_CHECK_INTERVAL_MIN_MS,
            ),
            periodic_savepoint_interval_min_ms: floor(
                operator::PERIODIC_SAVEPOINT_INTERVAL_MIN,
                defaults::PERIODIC_SNAPSHOT_INTERVAL_MIN_MS,
            ),
            periodic_checkpoint_interval_min_ms: floor(
                operator::PERIODIC_CHECKPOINT_INTERVAL_MIN,
                defaults::PERIODIC_SNAPSHOT_INTERVAL_MIN_MS,
            ),
            snapshot_max_count: read::count(settings, operator::SNAPSHOT_RESOURCE_MAX_COUNT)
                .map_or(defaults::SNAPSHOT_RESOURCE_MAX_COUNT, |n| {
                    usize::try_from(n).unwrap_or(usize::MAX)
                })
                .max(1),
            snapshot_max_age_ms: floor(
                operator::SNAPSHOT_RESOURCE_MAX_AGE,
                defaults::SNAPSHOT_RESOURCE_MAX_AGE_MS,
            ),
            history_max_count_threshold: read::count(
                settings,
                operator::SAVEPOINT_HISTORY_MAX_COUNT_THRESHOLD,
            )
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            history_max_age_threshold_ms: read::millis(
                settings,
                operator::SAVEPOINT_HISTORY_MAX_AGE_THRESHOLD,
            ),
            parallelism_max: cap(operator::JOB_PARALLELISM_MAX, defaults::JOB_PARALLELISM_MAX),
            taskmanager_replicas_max: cap(
                operator::TASKMANAGER_REPLICAS_MAX,
                defaults::TASKMANAGER_REPLICAS_MAX,
            ),
            jobmanager_replicas_max: cap(
                operator::JOBMANAGER_REPLICAS_MAX,
                defaults::JOBMANAGER_REPLICAS_MAX,
            ),
        }
    }

    /// The floor of an interval key a spec may set, with the key that sets the floor.
    pub fn floor_of(&self, key: &str) -> Option<(i64, &'static str)> {
        match key {
            operator::RECONCILE_INTERVAL | operator::RECONCILE_INTERVAL_DEPRECATED => {
                Some((self.reconcile_interval_min_ms, operator::RECONCILE_INTERVAL_MIN))
            }
            operator::PROGRESS_CHECK_INTERVAL => Some((
                self.progress_check_interval_min_ms,
                operator::PROGRESS_CHECK_INTERVAL_MIN,
            )),
            operator::PERIODIC_SAVEPOINT_INTERVAL => Some((
                self.periodic_savepoint_interval_min_ms,
                operator::PERIODIC_SAVEPOINT_INTERVAL_MIN,
            )),
            operator::PERIODIC_CHECKPOINT_INTERVAL => Some((
                self.periodic_checkpoint_interval_min_ms,
                operator::PERIODIC_CHECKPOINT_INTERVAL_MIN,
            )),
            _ => None,
        }
    }
}

/// Where a cron schedule's occurrences are looked at from: now. The one clock read of the
/// rules; what it changes is only which occurrences of a cron expression are weighed, and
/// the rule that uses it takes the time as an argument.
pub(crate) fn now_ms() -> i64 {
    k8s_openapi::jiff::Timestamp::now().as_millisecond()
}

/// The keys of the options table that a resource may not set (platform limits, and what only
/// the operator writes), each refused with who sets it. `path` is where the configuration
/// is (`spec.flinkConfiguration`, `spec.configuration`).
pub(crate) fn refused_keys<'a>(
    path: &str,
    keys: impl IntoIterator<Item = &'a String>,
    out: &mut Vec<Violation>,
) {
    for key in keys {
        let Some(why) = options::option(key).and_then(|o| o.set_in.refused_in_spec()) else {
            continue;
        };
        let why = if key == operator::AUTOSCALER_PARALLELISM_OVERRIDES {
            "is written by the job autoscaler into the recorded spec, not set by a user: set \
             pipeline.jobvertex-parallelism-overrides (or job.parallelism) instead"
        } else {
            why
        };
        out.push(Violation::new(format!("{path}.{key}"), why));
    }
}

/// The intervals a resource's own configuration sets must not be shorter than the platform's
/// floors: a periodic schedule's consecutive due times included (a cron expression's over its
/// next occurrences, see [`Schedule::shortest_gap`]). `now_ms` is where a cron expression's
/// occurrences are looked at from.
pub(crate) fn interval_floors(
    own: &BTreeMap<String, String>,
    limits: &PlatformLimits,
    now_ms: i64,
    out: &mut Vec<Violation>,
) {
    interval_floors_at("spec.flinkConfiguration", own, limits, now_ms, out);
}

/// [`interval_floors`] of a configuration at `path` (a blue/green deployment's
/// `spec.configuration`, which its children run with).
pub(crate) fn interval_floors_at(
    path: &str,
    own: &BTreeMap<String, String>,
    limits: &PlatformLimits,
    now_ms: i64,
    out: &mut Vec<Violation>,
) {
    for (key, value) in own {
        let Some((floor, floor_key)) = limits.floor_of(key) else {
            continue;
        };
        if floor == 0 {
            continue;
        }
        let duration = options::parse_millis(value).ok();
        let shortest = if matches!(
            key.as_str(),
            operator::PERIODIC_SAVEPOINT_INTERVAL | operator::PERIODIC_CHECKPOINT_INTERVAL
        ) {
            // Off (empty, 0) is no interval; a malformed value is refused by its type.
            match Schedule::parse(value) {
                Ok(Some(schedule)) => schedule.shortest_gap(now_ms),
                _ => None,
            }
        } else {
            duration
        };
        if let Some(shortest) = shortest
            && shortest < floor
        {
            let what = match duration {
                Some(_) => format!("{:?}", value.trim()),
                None => format!(
                    "{:?} (two of its times are {} apart)",
                    value.trim(),
                    duration_text(shortest)
                ),
            };
            out.push(Violation::new(
                format!("{path}.{key}"),
                format!(
                    "{what} is below the floor of {} set by the platform ({floor_key} in the \
                     operator configuration)",
                    duration_text(floor)
                ),
            ));
        }
    }
}

/// Parallelism and replicas within the platform's caps. `parallelism` is `spec.job.parallelism`,
/// `replicas` the TaskManager and JobManager replicas of a cluster (None for a session job),
/// `config` the resource's effective configuration.
pub(crate) fn size_caps(
    parallelism: Option<i64>,
    replicas: Option<(Option<i32>, Option<i32>)>,
    config: &BTreeMap<String, String>,
    limits: &PlatformLimits,
    out: &mut Vec<Violation>,
) {
    let over = |field: String, value: i64, cap: Option<i64>, key: &str, out: &mut Vec<Violation>| {
        if let Some(cap) = cap
            && value > cap
        {
            out.push(Violation::new(
                field,
                format!(
                    "{value} is above the cap of {cap} set by the platform ({key} in the operator \
                     configuration)"
                ),
            ));
        }
    };
    let parallelism_max = limits.parallelism_max;
    if let Some(parallelism) = parallelism {
        over(
            "spec.job.parallelism".to_owned(),
            parallelism,
            parallelism_max,
            operator::JOB_PARALLELISM_MAX,
            out,
        );
    }
    for key in [flink::PARALLELISM_DEFAULT, autoscaler::VERTEX_MAX_PARALLELISM] {
        if let Some(value) = config.get(key).and_then(|v| v.trim().parse::<i64>().ok()) {
            over(
                config_path(key),
                value,
                parallelism_max,
                operator::JOB_PARALLELISM_MAX,
                out,
            );
        }
    }
    if let Some(overrides) = config.get(flink::PIPELINE_JOBVERTEX_PARALLELISM_OVERRIDES)
        && let Ok(pairs) = options::parse_map(overrides)
        && let Some(highest) = pairs.iter().filter_map(|(_, v)| v.parse::<i64>().ok()).max()
    {
        over(
            config_path(flink::PIPELINE_JOBVERTEX_PARALLELISM_OVERRIDES),
            highest,
            parallelism_max,
            operator::JOB_PARALLELISM_MAX,
            out,
        );
    }
    let Some((task_managers, job_managers)) = replicas else {
        return;
    };
    if let Some(replicas) = task_managers {
        over(
            "spec.taskManager.replicas".to_owned(),
            i64::from(replicas),
            limits.taskmanager_replicas_max,
            operator::TASKMANAGER_REPLICAS_MAX,
            out,
        );
    }
    if let Some(replicas) = job_managers {
        over(
            "spec.jobManager.replicas".to_owned(),
            i64::from(replicas),
            limits.jobmanager_replicas_max,
            operator::JOBMANAGER_REPLICAS_MAX,
            out,
        );
    }
    if let Some(replicas) = config
        .get(flink::KUBERNETES_JOBMANAGER_REPLICAS)
        // What is not a Deployment's replicas is refused as such (`cluster_numbers`).
        .and_then(|v| v.trim().parse::<i32>().ok())
        .map(i64::from)
    {
        over(
            config_path(flink::KUBERNETES_JOBMANAGER_REPLICAS),
            replicas,
            limits.jobmanager_replicas_max,
            operator::JOBMANAGER_REPLICAS_MAX,
            out,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// 2026-12-05T10:20:00Z.
    const NOW: i64 = 1_796_466_000_000;

    #[test]
    fn limits_come_from_the_operator_settings_with_their_defaults() {
        let limits = PlatformLimits::default();
        assert_eq!(limits.reconcile_interval_min_ms, 10_000);
        assert_eq!(limits.progress_check_interval_min_ms, 5_000);
        assert_eq!(limits.periodic_savepoint_interval_min_ms, 60_000);
        assert_eq!(limits.periodic_checkpoint_interval_min_ms, 60_000);
        assert_eq!(limits.snapshot_max_count, 100);
        assert_eq!(limits.parallelism_max, Some(1000));
        let limits = PlatformLimits::from_settings(&map(&[
            (operator::RECONCILE_INTERVAL_MIN, "1 min"),
            (operator::SNAPSHOT_RESOURCE_MAX_COUNT, "0"),
            (operator::JOB_PARALLELISM_MAX, "-1"),
            (operator::TASKMANAGER_REPLICAS_MAX, "8"),
        ]));
        assert_eq!(limits.reconcile_interval_min_ms, 60_000);
        assert_eq!(limits.snapshot_max_count, 1);
        assert_eq!(limits.parallelism_max, None);
        assert_eq!(limits.taskmanager_replicas_max, Some(8));
        // A resource's own keys are not the platform's: the context's settings leave them out.
        let ctx = ValidationContext::new(map(&[(
            "kubernetes.operator.default-configuration.namespace.team-a.kubernetes.operator.reconcile.interval.min",
            "30 s",
        )]));
        assert_eq!(
            PlatformLimits::new(&ctx, "team-a").reconcile_interval_min_ms,
            30_000
        );
        assert_eq!(
            PlatformLimits::new(&ctx, "team-b").reconcile_interval_min_ms,
            10_000
        );
    }

    #[test]
    fn platform_keys_and_operator_written_keys_are_refused_in_a_spec() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                operator::SAVEPOINT_HISTORY_MAX_COUNT_THRESHOLD,
                Some("set by the platform in the operator configuration"),
            ),
            (
                operator::SAVEPOINT_HISTORY_MAX_AGE_THRESHOLD,
                Some("set by the platform in the operator configuration"),
            ),
            (operator::RECONCILE_INTERVAL_MIN, Some("is a platform limit")),
            (operator::PROGRESS_CHECK_INTERVAL_MIN, Some("is a platform limit")),
            (
                operator::PERIODIC_SAVEPOINT_INTERVAL_MIN,
                Some("is a platform limit"),
            ),
            (
                operator::PERIODIC_CHECKPOINT_INTERVAL_MIN,
                Some("is a platform limit"),
            ),
            (operator::SNAPSHOT_RESOURCE_MAX_COUNT, Some("is a platform limit")),
            (operator::SNAPSHOT_RESOURCE_MAX_AGE, Some("is a platform limit")),
            (operator::JOB_PARALLELISM_MAX, Some("is a platform limit")),
            (operator::TASKMANAGER_REPLICAS_MAX, Some("is a platform limit")),
            (operator::JOBMANAGER_REPLICAS_MAX, Some("is a platform limit")),
            (
                operator::AUTOSCALER_PARALLELISM_OVERRIDES,
                Some("is written by the job autoscaler"),
            ),
            // Platform keys an Apache manifest may carry are only warned about.
            (operator::LEADER_ELECTION_ENABLED, None),
            (operator::SAVEPOINT_HISTORY_MAX_COUNT, None),
            ("parallelism.default", None),
        ];
        for (key, expected) in cases {
            let mut out = Vec::new();
            refused_keys("spec.flinkConfiguration", [&key.to_string()], &mut out);
            match expected {
                None => assert_eq!(out, vec![], "{key}"),
                Some(reason) => {
                    assert_eq!(out.len(), 1, "{key}");
                    assert_eq!(out[0].field, format!("spec.flinkConfiguration.{key}"));
                    assert!(out[0].reason.contains(reason), "{key}: {}", out[0].reason);
                }
            }
        }
    }

    #[test]
    fn intervals_below_their_floor_are_refused_naming_value_floor_and_key() {
        let defaults = PlatformLimits::default();
        let lifted = PlatformLimits {
            reconcile_interval_min_ms: 0,
            ..PlatformLimits::default()
        };
        let cases: &[(&str, &str, &PlatformLimits, Option<&str>)] = &[
            (
                operator::RECONCILE_INTERVAL,
                "1 s",
                &defaults,
                Some(
                    "\"1 s\" is below the floor of 10 s set by the platform (kubernetes.operator.reconcile.interval.min",
                ),
            ),
            (
                operator::RECONCILE_INTERVAL_DEPRECATED,
                "1 s",
                &defaults,
                Some("kubernetes.operator.reconcile.interval.min"),
            ),
            (operator::RECONCILE_INTERVAL, "10 s", &defaults, None),
            (operator::RECONCILE_INTERVAL, "1 s", &lifted, None),
            (
                operator::PROGRESS_CHECK_INTERVAL,
                "1 s",
                &defaults,
                Some(
                    "floor of 5 s set by the platform (kubernetes.operator.observer.progress-check.interval.min",
                ),
            ),
            (operator::PROGRESS_CHECK_INTERVAL, "5 s", &defaults, None),
            (
                operator::PERIODIC_CHECKPOINT_INTERVAL,
                "1 ns",
                &defaults,
                Some(
                    "\"1 ns\" is below the floor of 1 min set by the platform (kubernetes.operator.periodic.checkpoint.interval.min",
                ),
            ),
            (
                operator::PERIODIC_SAVEPOINT_INTERVAL,
                "30 s",
                &defaults,
                Some("kubernetes.operator.periodic.savepoint.interval.min"),
            ),
            (operator::PERIODIC_SAVEPOINT_INTERVAL, "1 min", &defaults, None),
            (operator::PERIODIC_SAVEPOINT_INTERVAL, "", &defaults, None),
            (operator::PERIODIC_SAVEPOINT_INTERVAL, "0", &defaults, None),
            (
                operator::PERIODIC_SAVEPOINT_INTERVAL,
                "0 0 * * * ?",
                &defaults,
                None,
            ),
            (
                operator::PERIODIC_SAVEPOINT_INTERVAL,
                "* * * * * ?",
                &defaults,
                Some("two of its times are 1 s apart) is below the floor of 1 min"),
            ),
            (
                operator::PERIODIC_CHECKPOINT_INTERVAL,
                "0,30 0 * * * ?",
                &defaults,
                Some("30 s apart"),
            ),
            // Malformed values are refused by their type, not here.
            (operator::PERIODIC_CHECKPOINT_INTERVAL, "often", &defaults, None),
            ("execution.checkpointing.interval", "1 ms", &defaults, None),
        ];
        for (key, value, limits, expected) in cases {
            let mut out = Vec::new();
            interval_floors(&map(&[(key, value)]), limits, NOW, &mut out);
            match expected {
                None => assert_eq!(out, vec![], "{key}={value}"),
                Some(reason) => {
                    assert_eq!(out.len(), 1, "{key}={value}: {out:?}");
                    assert_eq!(out[0].field, format!("spec.flinkConfiguration.{key}"));
                    assert!(out[0].reason.contains(reason), "{key}={value}: {}", out[0].reason);
                }
            }
        }
    }

    #[test]
    fn parallelism_and_replicas_above_their_caps_are_refused_naming_field_and_cap() {
        let limits = PlatformLimits {
            parallelism_max: Some(10),
            taskmanager_replicas_max: Some(4),
            jobmanager_replicas_max: Some(2),
            ..PlatformLimits::default()
        };
        type Case<'a> = (
            &'a str,
            Option<i64>,
            Option<(Option<i32>, Option<i32>)>,
            &'a [(&'a str, &'a str)],
            Option<(&'a str, &'a str)>,
        );
        let cases: &[Case] = &[
            (
                "within",
                Some(10),
                Some((Some(4), Some(2))),
                &[("parallelism.default", "10")],
                None,
            ),
            (
                "job parallelism",
                Some(11),
                None,
                &[],
                Some((
                    "spec.job.parallelism",
                    "11 is above the cap of 10 set by the platform (kubernetes.operator.job.parallelism.max",
                )),
            ),
            (
                "parallelism.default",
                None,
                None,
                &[("parallelism.default", "64")],
                Some(("spec.flinkConfiguration.parallelism.default", "cap of 10")),
            ),
            (
                "autoscaler",
                None,
                None,
                &[("job.autoscaler.vertex.max-parallelism", "200")],
                Some((
                    "spec.flinkConfiguration.job.autoscaler.vertex.max-parallelism",
                    "kubernetes.operator.job.parallelism.max",
                )),
            ),
            (
                "vertex overrides",
                None,
                None,
                &[("pipeline.jobvertex-parallelism-overrides", "a:2,b:12")],
                Some((
                    "spec.flinkConfiguration.pipeline.jobvertex-parallelism-overrides",
                    "12 is above the cap of 10",
                )),
            ),
            (
                "task managers",
                None,
                Some((Some(5), None)),
                &[],
                Some((
                    "spec.taskManager.replicas",
                    "5 is above the cap of 4 set by the platform (kubernetes.operator.taskmanager.replicas.max",
                )),
            ),
            (
                "job managers",
                None,
                Some((None, Some(3))),
                &[],
                Some((
                    "spec.jobManager.replicas",
                    "kubernetes.operator.jobmanager.replicas.max",
                )),
            ),
            (
                "job managers in the configuration",
                None,
                Some((None, None)),
                &[("kubernetes.jobmanager.replicas", "3")],
                Some((
                    "spec.flinkConfiguration.kubernetes.jobmanager.replicas",
                    "cap of 2",
                )),
            ),
            (
                "a session job has no replicas",
                None,
                None,
                &[("kubernetes.jobmanager.replicas", "3")],
                None,
            ),
        ];
        for (case, parallelism, replicas, config, expected) in cases {
            let mut out = Vec::new();
            size_caps(*parallelism, *replicas, &map(config), &limits, &mut out);
            match expected {
                None => assert_eq!(out, vec![], "{case}"),
                Some((field, reason)) => {
                    assert_eq!(out.len(), 1, "{case}: {out:?}");
                    assert_eq!(out[0].field, *field, "{case}");
                    assert!(out[0].reason.contains(reason), "{case}: {}", out[0].reason);
                }
            }
        }
        let mut out = Vec::new();
        size_caps(
            Some(100_000),
            Some((Some(100_000), None)),
            &BTreeMap::new(),
            &PlatformLimits {
                parallelism_max: None,
                taskmanager_replicas_max: None,
                ..PlatformLimits::default()
            },
            &mut out,
        );
        assert_eq!(out, vec![], "lifted caps");
    }
}
