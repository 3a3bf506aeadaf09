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
