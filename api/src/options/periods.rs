//! `job.autoscaler.excluded.periods`: when the job autoscaler changes nothing. Periods are
//! separated by `;`. A period is a daily time range `H:mm[:ss]-H:mm[:ss]` (UTC; one that ends
//! before it starts runs past midnight), a Quartz cron expression (seconds first, as the
//! periodic schedules take it: the times it matches), or both joined by `&&` (both must hold),
//! as the Apache autoscaler reads them.

use croner::Cron;
use k8s_openapi::jiff::{Timestamp, tz::TimeZone};

const DAY_S: i64 = 24 * 3600;

#[derive(Clone, Debug)]
enum Part {
    /// Seconds of the day, `from` inclusive, `to` exclusive.
    Daily {
        from: i64,
        to: i64,
    },
    Cron(Box<Cron>),
}

/// The excluded periods of a configuration.
#[derive(Clone, Debug, Default)]
pub struct ExcludedPeriods(Vec<Vec<Part>>);

impl PartialEq for ExcludedPeriods {
    fn eq(&self, other: &Self) -> bool {
        format!("{self:?}") == format!("{other:?}")
    }
}

impl ExcludedPeriods {
    /// The periods of `value`; the error names the period that does not read.
    pub fn parse(value: &str) -> Result<Self, String> {
        let periods = value
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|period| {
                period
                    .split("&&")
                    .map(|part| part_of(part.trim()))
                    .collect::<Result<Vec<Part>, String>>()
                    .map_err(|why| format!("excluded period {period:?}: {why}"))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(ExcludedPeriods(periods))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `at_ms` (epoch ms) is within one of the periods.
    pub fn contains(&self, at_ms: i64) -> bool {
        let Ok(at) = Timestamp::from_millisecond(at_ms.div_euclid(1000) * 1000) else {
            return false;
        };
        let at = at.to_zoned(TimeZone::UTC);
        let of_day = at_ms.div_euclid(1000).rem_euclid(DAY_S);
        self.0.iter().any(|period| {
            period.iter().all(|part| match part {
                Part::Daily { from, to } if from <= to => (*from..*to).contains(&of_day),
                Part::Daily { from, to } => of_day >= *from || of_day < *to,
                Part::Cron(cron) => cron.is_time_matching(&at).unwrap_or(false),
            })
        })
    }
}

fn part_of(text: &str) -> Result<Part, String> {
    if let Some((from, to)) = text.split_once('-')
        && !text.contains(' ')
    {
        let (from, to) = (time_of_day(from)?, time_of_day(to)?);
        return Ok(Part::Daily { from, to });
    }
    if text.split_whitespace().count() < 6 {
        return Err(format!(
            "{text:?} is neither a daily time range (e.g. 9:00-17:30) nor a Quartz cron expression (6 or 7 fields, seconds first)"
        ));
    }
    super::schedule::quartz(text).map(|cron| Part::Cron(Box::new(cron)))
}

/// `H:mm` or `H:mm:ss` as seconds of the day.
fn time_of_day(text: &str) -> Result<i64, String> {
    let fields: Vec<&str> = text.trim().split(':').collect();
    let number = |s: &str, max: i64| s.parse::<i64>().ok().filter(|n| (0..=max).contains(n));
    let parsed = match fields[..] {
        [h, m] => number(h, 23).zip(number(m, 59)).map(|(h, m)| h * 3600 + m * 60),
        [h, m, s] => number(h, 23)
            .zip(number(m, 59))
            .zip(number(s, 59))
            .map(|((h, m), s)| h * 3600 + m * 60 + s),
        _ => None,
    };
    parsed.ok_or_else(|| format!("{text:?} is not a time of day (H:mm or H:mm:ss)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        text.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn times_fall_in_daily_ranges_cron_expressions_and_both() {
        let cases: &[(&str, &str, bool)] = &[
            ("9:00-17:30", "2026-12-07T09:00:00Z", true),
            ("9:00-17:30", "2026-12-07T17:30:00Z", false),
            ("9:00-17:30", "2026-12-07T08:59:59Z", false),
            // Past midnight.
            ("22:00-2:00", "2026-12-07T23:10:00Z", true),
            ("22:00-2:00", "2026-12-07T01:59:59Z", true),
            ("22:00-2:00", "2026-12-07T12:00:00Z", false),
            ("9:13:10-10:10", "2026-12-07T09:13:09Z", false),
            ("9:13:10-10:10", "2026-12-07T09:13:10Z", true),
            // Any second of 9 to 11 o'clock on weekends (the 5th is a Saturday).
            ("* * 9-11 ? * SAT,SUN", "2026-12-05T10:20:00Z", true),
            ("* * 9-11 ? * SAT,SUN", "2026-12-07T10:20:00Z", false),
            // Both must hold: the range on weekdays only.
            ("9:00-10:00 && * * * ? * MON-FRI", "2026-12-07T09:30:00Z", true),
            ("9:00-10:00 && * * * ? * MON-FRI", "2026-12-05T09:30:00Z", false),
            // Either period.
            ("1:00-2:00; 9:00-10:00", "2026-12-07T09:30:00Z", true),
            ("", "2026-12-07T09:30:00Z", false),
        ];
        for (value, time, expected) in cases {
            let periods = ExcludedPeriods::parse(value).unwrap();
            assert_eq!(periods.contains(at(time)), *expected, "{value} at {time}");
        }
    }

    #[test]
    fn a_period_that_does_not_read_is_named() {
        for bad in ["9-10", "25:00-26:00", "9:00-10:61", "every night", "0 0 * * *"] {
            let error = ExcludedPeriods::parse(&format!("1:00-2:00;{bad}")).unwrap_err();
            assert!(error.contains(bad), "{error}");
        }
    }
}
