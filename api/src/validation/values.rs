//! Parsers for the value formats that rules check: Flink durations, Flink memory sizes,
//! Kubernetes quantities, and the resource name pattern.

/// Parses a memory amount in bytes, accepting Flink's memory sizes (`1024m`, `2g`, `512 mb`,
/// `1gb`; a bare number is bytes) and Kubernetes quantities (`2Gi`, `512Mi`, `1G`), as the
/// Apache operator does for `resource.memory`.
pub fn parse_memory(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let amount: f64 = number.parse().map_err(|_| {
        format!("{text:?} is not a memory size: it must start with a number (e.g. 1024m, 2g, 2Gi)")
    })?;
    let multiplier: f64 = match unit.trim() {
        // Kubernetes binary and decimal suffixes are case-sensitive.
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "M" => 1_000_000.0,
        "G" => 1_000_000_000.0,
        "T" => 1_000_000_000_000.0,
        other => match other.to_ascii_lowercase().as_str() {
            // Flink sizes are binary whatever the spelling (1m = 1 MiB).
            "" | "b" | "bytes" => 1.0,
            "k" | "kb" | "kibibytes" => 1024.0,
            "m" | "mb" | "mebibytes" => 1024.0 * 1024.0,
            "g" | "gb" | "gibibytes" => 1024.0 * 1024.0 * 1024.0,
            "t" | "tb" | "tebibytes" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
            _ => {
                return Err(format!(
                    "{text:?} is not a memory size: unknown unit {other:?} (use m, g, Mi or Gi, e.g. 2048m or 2Gi)"
                ));
            }
        },
    };
    let bytes = amount * multiplier;
    if !bytes.is_finite() || bytes > u64::MAX as f64 {
        return Err(format!("{text:?} is not a memory size: too large"));
    }
    Ok(bytes as u64)
}

/// Parses a Kubernetes quantity into a number of base units (cores for cpu, bytes for
/// memory): `500m`, `2`, `1.5`, `2Gi`, `512Mi`, `1e3`.
pub fn parse_quantity(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(trimmed.len());
    let (number, suffix) = trimmed.split_at(split);
    let amount: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a quantity"))?;
    let multiplier = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        s if s.starts_with(['e', 'E']) => {
            let exponent: i32 = s[1..]
                .parse()
                .map_err(|_| format!("{text:?} is not a quantity"))?;
            10f64.powi(exponent)
        }
        other => return Err(format!("{text:?} is not a quantity: unknown suffix {other:?}")),
    };
    Ok(amount * multiplier)
}

/// The longest name a FlinkDeployment can have: Flink derives Service names from it
/// (`<name>-rest`), and those must stay valid DNS labels.
pub const MAX_NAME_LENGTH: usize = 45;

/// The longest name of a resource the operator records Events about: an Event is named
/// `<name>.<nanoseconds, up to 16 hex digits>`, and Kubernetes names are at most 253
/// characters, so a longer name gets no Event at all. Objects the operator names itself
/// (snapshots of a session job) are kept within it too.
pub const MAX_EVENTFUL_NAME_LENGTH: usize = 253 - 1 - 16;

/// The length rule of a FlinkSessionJob's or FlinkStateSnapshot's name, judged when it is
/// created (a name cannot change; one stored before the rule is still handled, without
/// Events). The Apache operator has no rule on these names.
pub fn eventful_name(field: &str, name: &str) -> Option<super::Violation> {
    (name.len() > MAX_EVENTFUL_NAME_LENGTH).then(|| {
        super::Violation::new(
            field,
            format!(
                "is {} characters long, more than {MAX_EVENTFUL_NAME_LENGTH}: the Events the operator records \
                 about the resource are named after it with 17 more characters, and Kubernetes names are at \
                 most 253",
                name.len()
            ),
        )
    })
}

/// Whether `name` matches `[a-z]([-a-z0-9]{0,43}[a-z0-9])?`, the names Flink accepts as a
/// Kubernetes cluster id.
pub fn is_valid_cluster_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    bytes.len() <= MAX_NAME_LENGTH
        && first.is_ascii_lowercase()
        && (last.is_ascii_lowercase() || last.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

#[cfg(test)]
mod tests {

    #[test]
    fn names_the_operator_records_events_about_leave_room_for_the_events_suffix() {
        use super::{MAX_EVENTFUL_NAME_LENGTH, eventful_name};
        assert_eq!(MAX_EVENTFUL_NAME_LENGTH, 236);
        assert_eq!(eventful_name("metadata.name", &"a".repeat(236)), None);
        let refused = eventful_name("metadata.name", &"a".repeat(253)).unwrap();
        assert_eq!(refused.field, "metadata.name");
        assert!(
            refused
                .reason
                .starts_with("is 253 characters long, more than 236"),
            "{}",
            refused.reason
        );
    }

    use super::*;

    #[test]
    fn memory_sizes_in_flink_and_kubernetes_syntax_parse() {
        let mib = 1024 * 1024;
        let cases = [
            ("1024m", 1024 * mib),
            ("2g", 2048 * mib),
            ("2048 mb", 2048 * mib),
            ("1gb", 1024 * mib),
            ("2Gi", 2048 * mib),
            ("512Mi", 512 * mib),
            ("1G", 1_000_000_000),
            ("1.5g", 1536 * mib),
            ("4096", 4096),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_memory(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn memory_sizes_with_junk_are_refused() {
        assert!(
            parse_memory("lots")
                .unwrap_err()
                .contains("must start with a number")
        );
        assert!(parse_memory("2 parsecs").unwrap_err().contains("unknown unit"));
    }

    #[test]
    fn quantities_parse_to_base_units() {
        assert_eq!(parse_quantity("500m"), Ok(0.5));
        assert_eq!(parse_quantity("2"), Ok(2.0));
        assert_eq!(parse_quantity("1Ki"), Ok(1024.0));
        assert_eq!(parse_quantity("1e3"), Ok(1000.0));
        assert_eq!(parse_quantity("-1"), Ok(-1.0));
        assert!(parse_quantity("abc").is_err());
        assert!(parse_quantity("1Zi").is_err());
    }

    #[test]
    fn cluster_names_follow_the_flink_pattern() {
        for ok in ["a", "basic", "basic-example", "a1", &"a".repeat(45)] {
            assert!(is_valid_cluster_name(ok), "{ok}");
        }
        for bad in [
            "",
            "1abc",
            "Basic",
            "basic-",
            "ba_sic",
            "-a",
            &"a".repeat(46),
            "a.b",
        ] {
            assert!(!is_valid_cluster_name(bad), "{bad}");
        }
    }
}
