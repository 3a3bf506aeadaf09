//! Periodic schedules (`kubernetes.operator.periodic.savepoint.interval`,
//! `kubernetes.operator.periodic.checkpoint.interval`): a duration, or a Quartz cron
//! expression as the Apache operator takes it (seconds first, an optional year last,
//! day-of-week 1-7 from Sunday, `?`, `L`, `W`, `#`), evaluated in UTC.

use croner::{
    Cron,
    parser::{CronParser, Seconds, Year},
};
use k8s_openapi::jiff::{Timestamp, tz::TimeZone};

use crate::validation::values::parse_duration;

/// When a periodic snapshot falls due.
#[derive(Clone, Debug)]
pub enum Schedule {
    /// This many milliseconds after the last one.
    Every(i64),
    /// At the cron expression's next time after the last one.
    Cron(Box<Cron>),
}

impl PartialEq for Schedule {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Schedule::Every(a), Schedule::Every(b)) => a == b,
            (Schedule::Cron(a), Schedule::Cron(b)) => a.pattern.to_string() == b.pattern.to_string(),
            _ => false,
        }
    }
}

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
            return Ok((!every.is_zero())
                .then(|| Schedule::Every(i64::try_from(every.as_millis()).unwrap_or(i64::MAX))));
        }
        if value.split_whitespace().count() < 6 {
            return Err(format!(
                "{value:?} is neither a duration (e.g. 1 h) nor a Quartz cron expression (6 or 7 fields, seconds first)"
            ));
        }
        quartz(value).map(|cron| Some(Schedule::Cron(Box::new(cron))))
    }

    /// The first time the schedule falls due after `after_ms` (epoch ms); None when a cron
    /// expression never falls due again.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        match self {
            Schedule::Every(every) => Some(after_ms.saturating_add(*every)),
            Schedule::Cron(cron) => {
                let after = Timestamp::from_millisecond(after_ms)
                    .ok()?
                    .to_zoned(TimeZone::UTC);
                cron.find_next_occurrence(&after, false)
                    .ok()
                    .map(|next| next.timestamp().as_millisecond())
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
    fn off_and_malformed_schedules_are_told_apart() {
        assert_eq!(Schedule::parse(" ").unwrap(), None);
        assert_eq!(Schedule::parse("0").unwrap(), None);
        for malformed in ["every hour", "0 0 * * *", "0 61 * * * ?", "0 0 * * * FUNDAY"] {
            let error = Schedule::parse(malformed).unwrap_err();
            assert!(error.contains(malformed), "{error}");
        }
    }
}
