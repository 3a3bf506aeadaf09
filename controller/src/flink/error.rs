//! What can go wrong talking to a JobManager, and Flink's error text.

use std::time::Duration;

use reqwest::StatusCode;

/// A failed call to the Flink REST API.
///
/// Connection errors (`Unreachable`), answers that broke off (`Interrupted`) and server
/// errors (`Server`) are retried by the client before they are returned, a `Timeout` is not
/// (the caller asks again later); `retryable()` tells a caller whether trying again later
/// makes sense. Refusals (`BadRequest`, `NotFound`, `Conflict`) are never retried.
#[derive(Debug, thiserror::Error)]
pub enum FlinkError {
    /// The JobManager did not accept the connection (not running, wrong address).
    #[error("JobManager at {url} is unreachable: {reason}")]
    Unreachable {
        /// The URL called.
        url: String,
        /// The connection error.
        reason: String,
    },
    /// The answer started but broke off (the connection closed or failed before its end).
    #[error("the answer from {url} broke off: {reason}")]
    Interrupted {
        /// The URL called.
        url: String,
        /// The transport error.
        reason: String,
    },
    /// No answer within the call's timeout.
    #[error("JobManager at {url} did not answer within {after:?}")]
    Timeout {
        /// The URL called.
        url: String,
        /// The timeout.
        after: Duration,
    },
    /// Not sent: a call to the same JobManager host timed out lately, and its calls fail at
    /// once for a while (see `flink::hosts`) instead of each waiting for its timeout. Meant
    /// as the timeout it stands for: the JobManager does not answer.
    #[error(
        "JobManager at {url} was not asked: a call to its host got no answer within {after:?} lately \
         (calls go through again in {retry_in:?})"
    )]
    HeldBack {
        /// The URL that would have been called.
        url: String,
        /// The timeout of the call that timed out.
        after: Duration,
        /// How long calls to the host are still held back.
        retry_in: Duration,
    },
    /// 404: the job, jar or operation is not known to this JobManager.
    #[error("not found at {url}: {message}")]
    NotFound {
        /// The URL called.
        url: String,
        /// Flink's reason.
        message: String,
    },
    /// 400 and other 4xx: Flink refused the request; the message is its reason.
    #[error("Flink refused {url} ({status}): {message}")]
    BadRequest {
        /// The URL called.
        url: String,
        /// The HTTP status.
        status: u16,
        /// Flink's reason (the root cause of its exception).
        message: String,
    },
    /// 5xx, after the retries.
    #[error("Flink failed {url} ({status}): {message}")]
    Server {
        /// The URL called.
        url: String,
        /// The HTTP status.
        status: u16,
        /// Flink's reason.
        message: String,
    },
    /// The answer was not what this client understands.
    #[error("unexpected answer from {url}: {reason}")]
    Decode {
        /// The URL called.
        url: String,
        /// What did not fit, with the start of the body.
        reason: String,
    },
    /// The answer is larger than [`MAX_ANSWER_BYTES`](crate::flink::MAX_ANSWER_BYTES);
    /// not read further.
    #[error("the answer from {url} exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The URL called.
        url: String,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The answer holds more JSON values than
    /// [`MAX_ANSWER_VALUES`](crate::flink::MAX_ANSWER_VALUES); not decoded.
    #[error("the answer from {url} holds more than {limit} JSON values")]
    TooManyValues {
        /// The URL called.
        url: String,
        /// The limit, in values.
        limit: usize,
    },
    /// A write not sent: this replica may no longer act (leader election); the replica that
    /// leads next decides again.
    #[error("not sent: {0}")]
    Fenced(#[from] crate::fence::Fenced),
    /// The request could not be built (a bad base URL, an unreadable jar).
    #[error("{0}")]
    Request(String),
}

impl FlinkError {
    /// Whether the same call may succeed later without any change on our side.
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            Self::Unreachable { .. }
                | Self::Interrupted { .. }
                | Self::Timeout { .. }
                | Self::HeldBack { .. }
                | Self::Server { .. }
        )
    }

    /// A short label for metrics and Events.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Unreachable { .. } => "unreachable",
            Self::Interrupted { .. } => "interrupted",
            // Counted as the timeout it stands for.
            Self::Timeout { .. } | Self::HeldBack { .. } => "timeout",
            Self::NotFound { .. } => "not_found",
            Self::BadRequest { .. } => "bad_request",
            Self::Server { .. } => "server_error",
            Self::Decode { .. } => "decode",
            Self::TooLarge { .. } | Self::TooManyValues { .. } => "too_large",
            Self::Fenced(_) => "fenced",
            Self::Request(_) => "request",
        }
    }

    /// The error for a non-success answer with `body`.
    pub(crate) fn from_status(url: &str, status: StatusCode, body: &str) -> Self {
        let message = flink_error_message(body);
        let url = url.to_owned();
        match status.as_u16() {
            404 => Self::NotFound { url, message },
            code @ 400..=499 => Self::BadRequest {
                url,
                status: code,
                message,
            },
            code => Self::Server {
                url,
                status: code,
                message,
            },
        }
    }
}

/// The useful part of Flink's error body `{"errors":["...stack trace..."]}`: the innermost
/// `Caused by:` of the traces (the root cause, which names the file, the job, the reason),
/// after the first line of the first error when they differ.
pub fn flink_error_message(body: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Errors {
        errors: Vec<String>,
    }
    let Ok(Errors { errors }) = serde_json::from_str::<Errors>(body) else {
        let text = body.trim();
        return if text.is_empty() {
            "(empty body)".to_owned()
        } else {
            first_chars(text, 500)
        };
    };
    // Generic wrappers such as "Internal server error." say nothing; skip them.
    let meaningful: Vec<&String> = errors
        .iter()
        .filter(|e| e.trim() != "Internal server error.")
        .collect();
    let Some(first) = meaningful.first().copied().or(errors.first()) else {
        return "(no error text)".to_owned();
    };
    // Server-side exceptions come wrapped as "<Exception on server side:\n...>".
    let head = first
        .lines()
        .map(|line| {
            line.trim()
                .trim_start_matches("<Exception on server side:")
                .trim()
        })
        .find(|line| !line.is_empty())
        .unwrap_or_default();
    let root = meaningful
        .iter()
        .flat_map(|e| e.lines())
        .filter_map(|line| line.trim().strip_prefix("Caused by: "))
        .next_back();
    match root {
        Some(root) if !head.contains(root) => format!("{head} (caused by: {root})"),
        _ => head.to_owned(),
    }
}

pub(crate) fn first_chars(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((index, _)) => format!("{}…", &text[..index]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_cause_of_a_flink_stack_trace_is_kept() {
        let body = r#"{"errors":["org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application.\n\tat org.apache.flink...\nCaused by: java.util.concurrent.CompletionException: boom\n\tat x\nCaused by: java.io.FileNotFoundException: Cannot find checkpoint or savepoint file/directory 'file:///nope' on file system 'file'.\n\tat y"]}"#;
        assert_eq!(
            flink_error_message(body),
            "org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application. \
             (caused by: java.io.FileNotFoundException: Cannot find checkpoint or savepoint file/directory \
             'file:///nope' on file system 'file'.)"
        );
    }

    #[test]
    fn a_single_line_error_is_returned_as_is() {
        let body = r#"{"errors":["org.apache.flink.runtime.rest.NotFoundException: Job 00000000000000000000000000000001 not found"]}"#;
        assert_eq!(
            flink_error_message(body),
            "org.apache.flink.runtime.rest.NotFoundException: Job 00000000000000000000000000000001 not found"
        );
    }

    #[test]
    fn internal_server_error_wrappers_are_skipped() {
        let body = r#"{"errors":["Internal server error.","<Exception on server side:\norg.apache.flink.client.program.ProgramInvocationException: Jar file /tmp/nope.jar does not exist\n\tat ...>"]}"#;
        assert_eq!(
            flink_error_message(body),
            "org.apache.flink.client.program.ProgramInvocationException: Jar file /tmp/nope.jar does not exist"
        );
    }

    #[test]
    fn bodies_that_are_not_flink_errors_are_shown_shortened() {
        assert_eq!(flink_error_message(""), "(empty body)");
        assert_eq!(
            flink_error_message("<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
        assert_eq!(flink_error_message(&"x".repeat(600)).chars().count(), 501);
    }

    #[test]
    fn status_codes_map_to_error_kinds_and_only_transport_and_5xx_are_retryable() {
        let body = r#"{"errors":["nope"]}"#;
        let cases = [
            (StatusCode::NOT_FOUND, "not_found", false),
            (StatusCode::BAD_REQUEST, "bad_request", false),
            (StatusCode::CONFLICT, "bad_request", false),
            (StatusCode::INTERNAL_SERVER_ERROR, "server_error", true),
            (StatusCode::SERVICE_UNAVAILABLE, "server_error", true),
        ];
        for (status, kind, retryable) in cases {
            let error = FlinkError::from_status("http://jm/x", status, body);
            assert_eq!(error.kind(), kind, "{status}");
            assert_eq!(error.retryable(), retryable, "{status}");
        }
        assert!(
            FlinkError::Unreachable {
                url: "u".into(),
                reason: "refused".into()
            }
            .retryable()
        );
        assert!(
            FlinkError::Timeout {
                url: "u".into(),
                after: Duration::from_secs(1)
            }
            .retryable()
        );
        let broke_off = FlinkError::Interrupted {
            url: "u".into(),
            reason: "end of file before message length reached".into(),
        };
        assert!(broke_off.retryable());
        assert_eq!(broke_off.kind(), "interrupted");
        // The same JobManager sends the same flood again.
        let flood = FlinkError::TooLarge {
            url: "u".into(),
            limit: 10,
        };
        assert!(!flood.retryable());
        assert_eq!(flood.kind(), "too_large");
    }
}
