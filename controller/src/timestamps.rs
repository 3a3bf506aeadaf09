//! Timestamps as Kubernetes and the Apache operator write them in status and annotations
//! (RFC 3339), to and from the epoch milliseconds the decide functions reckon in.

/// An RFC 3339 timestamp of epoch milliseconds, with its fraction of a second when it has one
/// (`1970-01-01T00:00:01.5Z`); empty for an instant out of range.
pub fn timestamp(ms: i64) -> String {
    k8s_openapi::jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Epoch milliseconds of an RFC 3339 timestamp; `None` when it does not read.
pub fn millis(timestamp: &str) -> Option<i64> {
    timestamp
        .parse::<k8s_openapi::jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::NOW;

    #[test]
    fn timestamps_are_rfc_3339_and_read_back() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(timestamp(1_500), "1970-01-01T00:00:01.5Z");
        assert_eq!(millis(&timestamp(NOW + 123)), Some(NOW + 123));
        assert_eq!(millis("2024-05-01T10:00:00.000Z"), Some(1_714_557_600_000));
        assert_eq!(millis("yesterday"), None);
    }
}
