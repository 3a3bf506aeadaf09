//! Asynchronous operations (savepoint, stop-with-savepoint, checkpoint, disposal): what a
//! status poll means, from its HTTP status and its body together.
//!
//! Flink answers a trigger with 202 even for a job it does not have; the failure only shows
//! in the poll, as a COMPLETED operation carrying a `failure-cause`. A JobManager that
//! restarted has forgotten its trigger ids and answers the poll with 404. Each of these is
//! a distinct outcome here, so that a caller never mistakes a lost operation for a pending
//! one, nor a missing job for a failed savepoint.

use reqwest::StatusCode;

use super::{
    error::{FlinkError, flink_error_message},
    model::{OperationPoll, OperationResult},
};

/// What a poll of an asynchronous operation found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperationStatus<T> {
    /// Still running: poll again later.
    InProgress,
    /// Done, with its result (the savepoint's location, the checkpoint's id).
    Completed(T),
    /// It ran and failed; the job is still there (e.g. the target directory was not writable).
    Failed(OperationFailure),
    /// The job is gone (finished, cancelled, never existed): no savepoint will come of it.
    JobNotFound(String),
    /// The JobManager does not know this trigger id: it restarted (operations are kept in
    /// memory) or the trigger never reached it. Whether a savepoint was written is unknown;
    /// look at the job's checkpoint statistics.
    UnknownTrigger(String),
}

/// Why an operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperationFailure {
    /// Exception class Flink reported.
    pub class: String,
    /// The root cause of the failure.
    pub message: String,
}

impl std::fmt::Display for OperationFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.message)
    }
}

/// Classifies a poll answer; `complete` turns a successful result into `T`.
pub(crate) fn classify<T>(
    url: &str,
    status: StatusCode,
    body: &str,
    complete: impl FnOnce(OperationResult) -> Result<T, String>,
) -> Result<OperationStatus<T>, FlinkError> {
    if status == StatusCode::NOT_FOUND {
        let message = flink_error_message(body);
        return Ok(if names_missing_job(&message) {
            OperationStatus::JobNotFound(message)
        } else {
            OperationStatus::UnknownTrigger(message)
        });
    }
    if !status.is_success() {
        return Err(FlinkError::from_status(url, status, body));
    }
    let poll: OperationPoll = serde_json::from_str(body).map_err(|e| FlinkError::Decode {
        url: url.to_owned(),
        reason: format!("{e}: {}", super::error::first_chars(body, 200)),
    })?;
    match poll.status.id.as_str() {
        "IN_PROGRESS" => Ok(OperationStatus::InProgress),
        "COMPLETED" => {
            let result = poll.operation.unwrap_or(OperationResult {
                location: None,
                checkpoint_id: None,
                failure_cause: None,
            });
            if let Some(cause) = &result.failure_cause {
                let trace = cause.stack_trace.as_deref().unwrap_or_default();
                let message = root_cause(trace).unwrap_or_else(|| cause.class.clone().unwrap_or_default());
                if names_missing_job(trace) {
                    return Ok(OperationStatus::JobNotFound(message));
                }
                return Ok(OperationStatus::Failed(OperationFailure {
                    class: cause.class.clone().unwrap_or_default(),
                    message,
                }));
            }
            complete(result)
                .map(OperationStatus::Completed)
                .map_err(|reason| FlinkError::Decode {
                    url: url.to_owned(),
                    reason,
                })
        }
        other => Err(FlinkError::Decode {
            url: url.to_owned(),
            reason: format!("unknown operation status {other:?}"),
        }),
    }
}

/// Whether Flink's text says the job is not known.
fn names_missing_job(text: &str) -> bool {
    text.contains("FlinkJobNotFoundException")
        || text.contains("JobNotFoundException")
        || (text.contains("NotFoundException: Job") && text.contains("not found"))
}

/// The innermost `Caused by:` of a Java stack trace, else its first line.
fn root_cause(trace: &str) -> Option<String> {
    let root = trace
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Caused by: "))
        .next_back();
    root.or_else(|| trace.lines().next())
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn savepoint(result: OperationResult) -> Result<String, String> {
        result
            .location
            .ok_or_else(|| "a completed savepoint without location".to_owned())
    }

    fn poll(status: StatusCode, body: &str) -> OperationStatus<String> {
        classify("http://jm/jobs/j/savepoints/t", status, body, savepoint).unwrap()
    }

    #[test]
    fn every_poll_answer_has_one_meaning() {
        let cases: Vec<(&str, StatusCode, &str, OperationStatus<String>)> = vec![
            (
                "in progress",
                StatusCode::OK,
                r#"{"status":{"id":"IN_PROGRESS"},"operation":null}"#,
                OperationStatus::InProgress,
            ),
            (
                "completed",
                StatusCode::OK,
                r#"{"status":{"id":"COMPLETED"},"operation":{"location":"file:/sp/savepoint-e3bc32-37286e7840ff"}}"#,
                OperationStatus::Completed("file:/sp/savepoint-e3bc32-37286e7840ff".into()),
            ),
            (
                "failed, job still there",
                StatusCode::OK,
                r#"{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"java.util.concurrent.CompletionException","stack-trace":"java.util.concurrent.CompletionException: x\n\tat a\nCaused by: org.apache.flink.runtime.checkpoint.CheckpointException: An Exception occurred while triggering the checkpoint. IO-problem detected.\n\tat b"}}}"#,
                OperationStatus::Failed(OperationFailure {
                    class: "java.util.concurrent.CompletionException".into(),
                    message: "org.apache.flink.runtime.checkpoint.CheckpointException: An Exception occurred while triggering the checkpoint. IO-problem detected.".into(),
                }),
            ),
            (
                "a failed checkpoint (its answer spells the field failureCause)",
                StatusCode::OK,
                r#"{"status":{"id":"COMPLETED"},"operation":{"failureCause":{"class":"java.util.concurrent.CompletionException","stack-trace":"java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint triggering task Source (1/2) of job 0000 is not being executed at the moment. Aborting checkpoint. Failure reason: Not all required tasks are currently running.\n\tat a"}}}"#,
                OperationStatus::Failed(OperationFailure {
                    class: "java.util.concurrent.CompletionException".into(),
                    message: "java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint triggering task Source (1/2) of job 0000 is not being executed at the moment. Aborting checkpoint. Failure reason: Not all required tasks are currently running.".into(),
                }),
            ),
            (
                "job gone (202 trigger, failure in the poll)",
                StatusCode::OK,
                r#"{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"java.util.concurrent.CompletionException","stack-trace":"java.util.concurrent.CompletionException: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (0000)\n\tat a\nCaused by: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (0000)"}}}"#,
                OperationStatus::JobNotFound(
                    "org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (0000)".into(),
                ),
            ),
            (
                "unknown trigger (JobManager restarted)",
                StatusCode::NOT_FOUND,
                r#"{"errors":["org.apache.flink.runtime.rest.NotFoundException: There is no savepoint operation with triggerId=abc for job 0000"]}"#,
                OperationStatus::UnknownTrigger(
                    "org.apache.flink.runtime.rest.NotFoundException: There is no savepoint operation with triggerId=abc for job 0000".into(),
                ),
            ),
            (
                "unknown job on the poll",
                StatusCode::NOT_FOUND,
                r#"{"errors":["org.apache.flink.runtime.rest.NotFoundException: Job 0000 not found"]}"#,
                OperationStatus::JobNotFound("org.apache.flink.runtime.rest.NotFoundException: Job 0000 not found".into()),
            ),
        ];
        for (case, status, body, expected) in cases {
            assert_eq!(poll(status, body), expected, "{case}");
        }
    }

    #[test]
    fn server_errors_and_garbage_are_errors_not_outcomes() {
        let error = classify(
            "u",
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"errors":["busy"]}"#,
            savepoint,
        )
        .unwrap_err();
        assert!(error.retryable());
        let error = classify("u", StatusCode::OK, "not json", savepoint).unwrap_err();
        assert_eq!(error.kind(), "decode");
        let error = classify("u", StatusCode::OK, r#"{"status":{"id":"EXPLODED"}}"#, savepoint).unwrap_err();
        assert!(error.to_string().contains("EXPLODED"));
        let error = classify(
            "u",
            StatusCode::OK,
            r#"{"status":{"id":"COMPLETED"},"operation":{}}"#,
            savepoint,
        )
        .unwrap_err();
        assert!(error.to_string().contains("without location"));
    }
}
