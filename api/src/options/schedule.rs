//! Periodic schedules (`kubernetes.operator.periodic.savepoint.interval`,
//! `kubernetes.operator.periodic.checkpoint.interval`): a duration, or a Quartz cron
//! expression as the Apache operator takes it (seconds first, an optional year last,
//! day-of-week 1-7 from Sunday, `?`, `L`, `W`, `#`), evaluated in UTC.

use croner::{
    Cron,
    parser::{CronParser, Seconds, Year},
};
use k8s_openapi::jiff::{Timestamp, tz::TimeZone};

use super::parse_duration;

/// When a periodic snapshot falls due.
#[derive(Clone, Debug)]
pub enum Schedule {
    /// This many milliseconds after the last one.
    Every(i64),
    /// At the cron expression's next time after the last one that is at least the given
    /// milliseconds after it (the platform's floor, see [`Schedule::spaced`]; 0 from
    /// [`Schedule::parse`]).
    Cron(Box<Cron>, i64),
}

impl PartialEq for Schedule {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Schedule::Every(a), Schedule::Every(b)) => a == b,
            (Schedule::Cron(a, gap_a), Schedule::Cron(b, gap_b)) => {
                a.pattern.to_string() == b.pattern.to_string() && gap_a == gap_b
            }
            _ => false,
        }
    }
}

/// How many of a cron expression's occurrences [`Schedule::shortest_gap`] looks at, and how
/// far ahead: enough for every pattern of seconds to weekdays and the months of a leap cycle.
const GAP_OCCURRENCES: usize = 1000;
const GAP_HORIZON_MS: i64 = 4 * 366 * 24 * 60 * 60 * 1000;

/// A Quartz cron expression as the Apache operator takes it (seconds first, an optional year
/// last, day-of-week 1-7 from Sunday); the error names the text.
pub(crate) fn quartz(text: &str) -> Result<Cron, String> {
    CronParser::builder()
        .seconds(Seconds::Required)
        .year(Year::Optional)
        .alternative_weekdays(true)
        .sloppy_ranges(true)
        .build()
        .parse(text)
        .map_err(|e| format!("{text:?} is not a Quartz cron expression: {e}"))
}

impl Schedule {
    /// The schedule of `value`: None when it is off (empty, or a zero duration).
    pub fn parse(value: &str) -> Result<Option<Schedule>, String> {
        let value = value.trim();
        if value.is_empty() {
            return Ok(None);
        }
        if let Ok(every) = parse_duration(value) {
            // Below a millisecond is a millisecond, not 0 ("always due"): the floor judges it.
            return Ok((!every.is_zero())
                .then(|| Schedule::Every(i64::try_from(every.as_millis()).unwrap_or(i64::MAX).max(1))));
        }
        if value.split_whitespace().count() < 6 {
            return Err(format!(
                "{value:?} is neither a duration (e.g. 1 h) nor a Quartz cron expression (6 or 7 fields, seconds first)"
            ));
        }
        quartz(value).map(|cron| Some(Schedule::Cron(Box::new(cron), 0)))
    }

    /// The schedule with no two snapshots closer than `min_gap_ms` (the platform's floor, for
    /// a spec that the webhook did not judge): a shorter duration is raised to it, and a cron
    /// expression skips the occurrences that come sooner after the last snapshot.
    pub fn spaced(self, min_gap_ms: i64) -> Schedule {
        match self {
            Schedule::Every(every) => Schedule::Every(every.max(min_gap_ms)),
            Schedule::Cron(cron, gap) => Schedule::Cron(cron, gap.max(min_gap_ms)),
        }
    }

    /// The shortest time between two consecutive due times, from `from_ms` on (a cron
    /// expression's over its next occurrences: at most [`GAP_OCCURRENCES`], within about four
    /// years); None when it falls due at most once.
    pub fn shortest_gap(&self, from_ms: i64) -> Option<i64> {
        match self {
            Schedule::Every(every) => Some(*every),
            Schedule::Cron(..) => {
                let mut previous = self.next_after(from_ms)?;
                let mut shortest: Option<i64> = None;
                for _ in 0..GAP_OCCURRENCES {
                    let Some(next) = self.next_after(previous) else {
                        break;
                    };
                    let gap = next - previous;
                    shortest = Some(shortest.map_or(gap, |s| s.min(gap)));
                    if next - from_ms > GAP_HORIZON_MS {
                        break;
                    }
                    previous = next;
                }
                shortest
            }
        }
    }

    /// The first time the schedule falls due after `after_ms` (epoch ms), the time of the last
    /// snapshot; None when a cron expression never falls due again.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        match self {
            Schedule::Every(every) => Some(after_ms.saturating_add(*every)),
            Schedule::Cron(cron, gap) => {
                let next = |after_ms: i64| {
                    let after = Timestamp::from_millisecond(after_ms)
                        .ok()?
                        .to_zoned(TimeZone::UTC);
                    cron.find_next_occurrence(&after, false)
                        .ok()
                        .map(|next| next.timestamp().as_millisecond())
                };
                let at = next(after_ms)?;
                if *gap > 0 && at < after_ms.saturating_add(*gap) {
                    // The first occurrence at or after the floor from the last one.
                    next(after_ms.saturating_add(*gap).saturating_sub(1))
                } else {
                    Some(at)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        text.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn durations_and_quartz_expressions_fall_due_when_they_say() {
        let cases: &[(&str, &str, &str)] = &[
            ("1 h", "2026-12-05T10:20:00Z", "2026-12-05T11:20:00Z"),
            // Every hour on the hour (Quartz: seconds first, `?` for the day of week).
            ("0 0 * * * ?", "2026-12-05T10:20:00Z", "2026-12-05T11:00:00Z"),
            // 02:30 on weekdays; Saturday the 5th goes on to Monday the 7th.
            (
                "0 30 2 ? * MON-FRI",
                "2026-12-05T10:20:00Z",
                "2026-12-07T02:30:00Z",
            ),
            // Quartz numbers days of the week from Sunday = 1: 2 is Monday.
            ("0 0 12 ? * 2", "2026-12-05T10:20:00Z", "2026-12-07T12:00:00Z"),
            // Every 15 minutes from the hour, in Quartz's `0/15`.
            ("0 0/15 * * * ?", "2026-12-05T10:20:00Z", "2026-12-05T10:30:00Z"),
            // The last day of the month, with the optional year.
            ("0 0 0 L * ? *", "2026-12-05T10:20:00Z", "2026-12-31T00:00:00Z"),
        ];
        for (value, after, expected) in cases {
            let schedule = Schedule::parse(value).unwrap().unwrap();
            assert_eq!(schedule.next_after(at(after)), Some(at(expected)), "{value}");
        }
    }

    #[test]
    fn a_duration_below_a_millisecond_is_not_always_due() {
        assert_eq!(Schedule::parse("1 ns").unwrap(), Some(Schedule::Every(1)));
        assert_eq!(Schedule::parse("1 ns").unwrap().unwrap().shortest_gap(0), Some(1));
    }

    #[test]
    fn the_shortest_gap_of_a_schedule_is_found_among_its_occurrences() {
        let from = at("2026-12-05T10:20:00Z");
        let cases: &[(&str, Option<i64>)] = &[
            ("10 min", Some(600_000)),
            ("* * * * * ?", Some(1000)),
            ("0 0 * * * ?", Some(3_600_000)),
            // Every hour, but 00:00 and 00:01 as well: one minute apart once a day.
            ("0 0,1 * * * ?", Some(60_000)),
            // 23:59:59 and 00:00:00 on the first of the month: one second apart.
            ("59,0 59,0 23,0 * * ?", Some(1000)),
            ("0 30 2 ? * MON-FRI", Some(86_400_000)),
            // Once, in a year gone by: never again.
            ("0 0 0 1 1 ? 2020", None),
        ];
        for (value, expected) in cases {
            let schedule = Schedule::parse(value).unwrap().unwrap();
            assert_eq!(schedule.shortest_gap(from), *expected, "{value}");
        }
    }

    #[test]
    fn a_spaced_schedule_skips_what_comes_sooner_than_its_floor() {
        let minute = 60_000;
        assert_eq!(Schedule::Every(1).spaced(minute), Schedule::Every(minute));
        assert_eq!(
            Schedule::Every(2 * minute).spaced(minute),
            Schedule::Every(2 * minute)
        );
        let every_second = Schedule::parse("* * * * * ?").unwrap().unwrap().spaced(minute);
        let last = at("2026-12-05T10:20:00Z");
        assert_eq!(every_second.next_after(last), Some(at("2026-12-05T10:21:00Z")));
        let hourly = Schedule::parse("0 0 * * * ?").unwrap().unwrap().spaced(minute);
        assert_eq!(hourly.next_after(last), Some(at("2026-12-05T11:00:00Z")));
    }

    #[test]
    fn off_and_malformed_schedules_are_told_apart() {
        assert_eq!(Schedule::parse(" ").unwrap(), None);
        assert_eq!(Schedule::parse("0").unwrap(), None);
        for malformed in ["every hour", "0 0 * * *", "0 61 * * * ?", "0 0 * * * FUNDAY"] {
            let error = Schedule::parse(malformed).unwrap_err();
            assert!(error.contains(malformed), "{error}");
        }
    }
}
