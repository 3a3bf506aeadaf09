//! The value types of the configuration keys: one parser per type, used by the admission
//! rules that refuse a malformed value and by every reader in the operator, so that a value
//! the webhook admits is read as the webhook read it (`TRUE` is `true` in both places).

use std::collections::BTreeMap;

/// What a key's value must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionType {
    /// `true` or `false`, in any letter case.
    Bool,
    /// A Flink duration (`30 s`, `5 min`; a bare number is milliseconds).
    Duration,
    /// A whole number, `min` or more.
    Count {
        /// The smallest value admitted.
        min: u64,
    },
    /// A whole number, negative ones included.
    Integer,
    /// Empty (off), a duration, or a Quartz cron expression (6 or 7 fields).
    Schedule,
    /// One of these names, in any letter case (as Flink reads an enumeration).
    Choice(&'static [&'static str]),
    /// Flink's map: `key1:value1,key2:value2`.
    Map,
    /// Free text: names, selectors, lists; any value is admitted.
    Text,
}

impl OptionType {
    /// What a value must be, as admission errors and the reference say it.
    pub fn describe(self) -> &'static str {
        match self {
            OptionType::Bool => "`true` or `false`",
            OptionType::Duration => "a duration",
            OptionType::Count { min: 0 } => "a whole number, 0 or more",
            OptionType::Count { min: 1 } => "a positive whole number",
            OptionType::Count { .. } => "a whole number at least its minimum",
            OptionType::Integer => "a whole number",
            OptionType::Schedule => "empty, a duration or a Quartz cron expression",
            OptionType::Choice(_) => "one of its names",
            OptionType::Map => "a list of `key:value` pairs separated by commas",
            OptionType::Text => "text",
        }
    }

    /// What a value must be, with the names of a choice spelled out.
    pub fn describe_values(self) -> String {
        match self {
            OptionType::Choice(names) => format!("one of {}", names.join(", ")),
            other => other.describe().to_owned(),
        }
    }

    /// Why `value` is not of this type, if it is not.
    pub fn check(self, value: &str) -> Result<(), String> {
        match self {
            OptionType::Bool => parse_bool(value).map(drop),
            OptionType::Duration => parse_millis(value).map(drop),
            OptionType::Count { min } => match parse_count(value) {
                Ok(n) if n >= min => Ok(()),
                Ok(_) if min == 1 => Err(format!("{value:?} is not a positive whole number")),
                Ok(_) => Err(format!("{value:?} is below the minimum {min}")),
                Err(reason) => Err(reason),
            },
            OptionType::Integer => parse_integer(value).map(drop),
            OptionType::Schedule => check_schedule(value),
            OptionType::Choice(names) => parse_choice(value, names).map(drop),
            OptionType::Map => parse_map(value).map(drop),
            OptionType::Text => Ok(()),
        }
    }
}

/// A boolean, in any letter case (as Flink reads one).
pub fn parse_bool(value: &str) -> Result<bool, String> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if value.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(format!("{value:?} is not a boolean (true or false)"))
    }
}

/// A duration in milliseconds (a duration too long for them is the longest one).
pub fn parse_millis(value: &str) -> Result<i64, String> {
    parse_duration(value).map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The name of `names` that `value` spells, in any letter case.
pub fn parse_choice(value: &str, names: &[&'static str]) -> Result<&'static str, String> {
    let value = value.trim();
    names
        .iter()
        .find(|name| name.eq_ignore_ascii_case(value))
        .copied()
        .ok_or_else(|| format!("{value:?} is not one of {}", names.join(", ")))
}

/// Flink's map (`key1:value1,key2:value2`), each key and value trimmed; a value may hold `:`
/// (only the first one separates it from its key). Empty is no pairs.
pub fn parse_map(value: &str) -> Result<Vec<(String, String)>, String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
        .map(|pair| match pair.split_once(':') {
            Some((key, value)) if !key.trim().is_empty() => {
                Ok((key.trim().to_owned(), value.trim().to_owned()))
            }
            _ => Err(format!("{pair:?} is not a `key:value` pair")),
        })
        .collect()
}

/// A whole number, 0 or more.
pub fn parse_count(value: &str) -> Result<u64, String> {
    value
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("{value:?} is not a whole number, 0 or more"))
}

/// A whole number.
pub fn parse_integer(value: &str) -> Result<i64, String> {
    value
        .trim()
        .parse::<i64>()
        .map_err(|_| format!("{value:?} is not a whole number"))
}

/// A periodic schedule: empty (off), a duration, or a Quartz cron expression.
fn check_schedule(value: &str) -> Result<(), String> {
    super::schedule::Schedule::parse(value).map(drop)
}

/// The readers of a configuration: each reads a key with its type's parser. A value that
/// does not parse reads as unset: admission refuses it on a resource, and the operator
/// refuses its own configuration file when it starts, so that only a value stored before a
/// rule existed can meet this.
pub mod read {
    use super::*;

    /// The boolean of the first of `keys` that is set (a key and the older names Flink falls
    /// back to, current first), `default` when none is or it does not parse.
    pub fn first_flag(config: &BTreeMap<String, String>, keys: &[&str], default: bool) -> bool {
        keys.iter()
            .find_map(|key| config.get(*key))
            .and_then(|v| parse_bool(v).ok())
            .unwrap_or(default)
    }

    /// The boolean `key`, or `default` when unset or malformed.
    pub fn flag(config: &BTreeMap<String, String>, key: &str, default: bool) -> bool {
        config
            .get(key)
            .and_then(|v| parse_bool(v).ok())
            .unwrap_or(default)
    }

    /// The duration `key` in milliseconds; None when unset, blank or malformed.
    pub fn millis(config: &BTreeMap<String, String>, key: &str) -> Option<i64> {
        config
            .get(key)
            .filter(|v| !v.trim().is_empty())
            .and_then(|v| parse_millis(v).ok())
    }

    /// The whole number, 0 or more, `key`; None when unset or malformed.
    pub fn count(config: &BTreeMap<String, String>, key: &str) -> Option<u64> {
        config.get(key).and_then(|v| parse_count(v).ok())
    }

    /// The name of `names` that `key` spells; None when unset or not one of them.
    pub fn choice(
        config: &BTreeMap<String, String>,
        key: &str,
        names: &[&'static str],
    ) -> Option<&'static str> {
        config.get(key).and_then(|v| parse_choice(v, names).ok())
    }

    /// The `key:value` pairs of `key`; none when unset or malformed.
    pub fn map(config: &BTreeMap<String, String>, key: &str) -> Vec<(String, String)> {
        config
            .get(key)
            .and_then(|v| parse_map(v).ok())
            .unwrap_or_default()
    }

    /// The whole number `key`; None when unset or malformed.
    pub fn integer(config: &BTreeMap<String, String>, key: &str) -> Option<i64> {
        config.get(key).and_then(|v| parse_integer(v).ok())
    }
}

/// Parses a Flink duration (`10 s`, `123ms`, `5 min`, `1h`, `2 d`; a bare number is
/// milliseconds), as Flink's `TimeUtils.parseDuration` accepts them.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return Err(format!(
            "{text:?} is not a duration: it must start with a number (e.g. 30 s, 5 min)"
        ));
    }
    let amount: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration: number too large"))?;
    let nanos_per_unit: u128 = match unit.trim().to_ascii_lowercase().as_str() {
        "ns" | "nano" | "nanos" | "nanosecond" | "nanoseconds" => 1,
        "us" | "µs" | "micro" | "micros" | "microsecond" | "microseconds" => 1_000,
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000_000_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000_000_000,
        "h" | "hour" | "hours" => 3_600_000_000_000,
        "d" | "day" | "days" => 86_400_000_000_000,
        other => {
            return Err(format!(
                "{text:?} is not a duration: unknown unit {other:?} (use ms, s, min, h or d)"
            ));
        }
    };
    let nanos = u128::from(amount) * nanos_per_unit;
    let nanos = u64::try_from(nanos).map_err(|_| format!("{text:?} is not a duration: too large"))?;
    Ok(std::time::Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_in_flink_syntax_parse() {
        let cases = [
            ("10 s", Duration::from_secs(10)),
            ("123ms", Duration::from_millis(123)),
            ("500", Duration::from_millis(500)),
            ("5 min", Duration::from_secs(300)),
            ("1h", Duration::from_secs(3600)),
            ("2 d", Duration::from_secs(172_800)),
            ("30 seconds", Duration::from_secs(30)),
            ("0", Duration::ZERO),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_duration(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn durations_without_number_or_with_unknown_unit_are_refused() {
        assert!(
            parse_duration("s")
                .unwrap_err()
                .contains("must start with a number")
        );
        assert!(
            parse_duration("10 fortnights")
                .unwrap_err()
                .contains("unknown unit \"fortnights\"")
        );
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn each_type_admits_its_values_and_says_why_not_others() {
        let cases: &[(OptionType, &str, bool)] = &[
            (OptionType::Bool, "true", true),
            (OptionType::Bool, " TRUE ", true),
            (OptionType::Bool, "False", true),
            (OptionType::Bool, "ture", false),
            (OptionType::Bool, "1", false),
            (OptionType::Duration, "30 s", true),
            (OptionType::Duration, "1500", true),
            (OptionType::Duration, "5 fortnights", false),
            (OptionType::Count { min: 1 }, "3", true),
            (OptionType::Count { min: 1 }, "0", false),
            (OptionType::Count { min: 0 }, "0", true),
            (OptionType::Count { min: 0 }, "-1", false),
            (OptionType::Integer, "-1", true),
            (OptionType::Integer, "many", false),
            (OptionType::Schedule, "", true),
            (OptionType::Schedule, "1 h", true),
            (OptionType::Schedule, "0 0 * * * ?", true),
            (OptionType::Schedule, "every hour", false),
            (OptionType::Choice(&["CANONICAL", "NATIVE"]), "native", true),
            (OptionType::Choice(&["CANONICAL", "NATIVE"]), "NATIVELY", false),
            (OptionType::Map, "Authorization: Bearer a:b, X-Team:a", true),
            (OptionType::Map, "", true),
            (OptionType::Map, "Authorization", false),
            (OptionType::Text, "anything at all", true),
        ];
        for (kind, value, admitted) in cases {
            let checked = kind.check(value);
            assert_eq!(checked.is_ok(), *admitted, "{kind:?} {value:?}: {checked:?}");
            if let Err(reason) = checked {
                assert!(reason.contains(value.trim()), "{reason}");
            }
        }
    }

    #[test]
    fn readers_read_what_the_check_admits_and_unset_for_the_rest() {
        let config: BTreeMap<String, String> = [
            ("upper", "TRUE"),
            ("typo", "ture"),
            ("wait", "2 min"),
            ("blank", " "),
            ("n", " 7 "),
            ("negative", "-3"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert!(read::flag(&config, "upper", false));
        assert!(!read::flag(&config, "typo", false));
        assert!(read::flag(&config, "missing", true));
        assert_eq!(read::millis(&config, "wait"), Some(120_000));
        assert_eq!(read::millis(&config, "blank"), None);
        assert_eq!(read::count(&config, "n"), Some(7));
        assert_eq!(read::count(&config, "negative"), None);
        assert_eq!(read::integer(&config, "negative"), Some(-3));
        assert_eq!(
            parse_map("Authorization: Bearer a:b, X-Team:a").unwrap(),
            [
                ("Authorization".to_owned(), "Bearer a:b".to_owned()),
                ("X-Team".to_owned(), "a".to_owned())
            ]
        );
    }
}
