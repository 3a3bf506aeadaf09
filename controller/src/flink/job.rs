//! What both job kinds observe of a job through its JobManager's REST API: its state,
//! whether all its tasks run (only then can a savepoint be taken), and why it failed.

use flink_operator_api::FlinkJobState;

use super::{ExceptionEntry, FlinkRestClient, JobId};

/// A job as its JobManager reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum JobObservation {
    Found {
        state: FlinkJobState,
        start_time: Option<i64>,
        /// Whether every task of the job runs (or has finished). A job reports RUNNING as
        /// soon as it is scheduled, while its tasks may still be deploying; a savepoint
        /// triggered then fails with "Not all required tasks are currently running".
        all_tasks_running: bool,
        /// Why the job failed, from its exception history; read only for a FAILED job whose
        /// failure status does not hold yet.
        failure: Option<String>,
        /// The highest checkpoint id its checkpoint statistics show (of any checkpoint or
        /// savepoint, whatever became of it, or of the one it restored; 0 for none): what a
        /// stop-with-savepoint triggered now records, so that its savepoint is told apart by
        /// its higher id. None: the statistics were not read.
        checkpoint_id: Option<i64>,
    },
    /// The JobManager answers but does not know the job (yet).
    NotFound,
    Unreachable(String),
}

impl JobObservation {
    /// A job in `state` whose tasks all run when it is RUNNING (as a steady job's do).
    pub fn found(state: FlinkJobState, start_time: Option<i64>) -> Self {
        JobObservation::Found {
            all_tasks_running: state == FlinkJobState::Running,
            state,
            start_time,
            failure: None,
            checkpoint_id: None,
        }
    }

    /// Whether the job runs with all its tasks, so that a savepoint can be taken.
    pub fn ready_for_savepoint(&self) -> bool {
        matches!(self, JobObservation::Found { state, all_tasks_running: true, .. } if *state == FlinkJobState::Running)
    }
}

/// The job `job_id` in `GET /jobs/overview`; for a FAILED job, and only when
/// `failure_known` is false, also its root cause from `GET /jobs/:jobid/exceptions`, so
/// that a steady (failed) job costs one call per look.
pub async fn observe(rest: &FlinkRestClient, job_id: &JobId, failure_known: bool) -> JobObservation {
    let jobs = match rest.jobs_overview().await {
        Ok(jobs) => jobs,
        Err(crate::flink::FlinkError::NotFound { .. }) => return JobObservation::NotFound,
        Err(e) => return JobObservation::Unreachable(e.to_string()),
    };
    let Some(job) = jobs.into_iter().find(|j| &j.jid == job_id) else {
        return JobObservation::NotFound;
    };
    let count = |state: &str| job.tasks.get(state).copied().unwrap_or(0);
    let total = count("total");
    let all_tasks_running =
        total > 0 && count("running") > 0 && count("running") + count("finished") == total;
    let failure = if job.state == FlinkJobState::Failed && !failure_known {
        match rest.job_exceptions(job_id).await {
            Ok(exceptions) => exceptions.history.entries.first().map(root_cause),
            Err(e) => {
                tracing::debug!(error = %e, "could not read the failed job's exceptions");
                None
            }
        }
    } else {
        None
    };
    JobObservation::Found {
        state: job.state,
        start_time: job.start_time,
        all_tasks_running,
        failure,
        checkpoint_id: None,
    }
}

/// How much of a failure goes into status and Events.
const MAX_FAILURE_CHARS: usize = 900;

/// A failure in one line: the exception as Flink reports it (class and message, the first
/// line of its stack trace), and the innermost cause when there is one, since that is
/// usually what a user must fix.
pub fn root_cause(entry: &ExceptionEntry) -> String {
    let mut lines = entry.stacktrace.lines().map(str::trim);
    let first = lines
        .next()
        .filter(|l| !l.is_empty())
        .unwrap_or(entry.exception_name.as_str())
        .to_owned();
    let innermost = entry
        .stacktrace
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("Caused by: "))
        .filter(|cause| *cause != first);
    let mut text = match innermost {
        Some(cause) => format!("{first}; caused by {cause}"),
        None => first,
    };
    if let Some(task) = entry.task_name.as_deref().filter(|t| !t.is_empty()) {
        text = format!("{text} (in {task})");
    }
    if text.chars().count() > MAX_FAILURE_CHARS {
        text = text.chars().take(MAX_FAILURE_CHARS).collect::<String>() + "...";
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, stacktrace: &str, task: Option<&str>) -> ExceptionEntry {
        ExceptionEntry {
            exception_name: name.to_owned(),
            stacktrace: stacktrace.to_owned(),
            timestamp: Some(1),
            task_name: task.map(str::to_owned),
            failure_labels: Default::default(),
        }
    }

    #[test]
    fn a_failure_reads_as_its_exception_and_innermost_cause() {
        let cases = [
            (
                entry(
                    "java.lang.IllegalStateException",
                    "java.lang.IllegalStateException: key 1 reached --fail-at 5\n\tat Counter.processElement(KeyedCounterJob.java:157)\n",
                    Some("counter (1/2)"),
                ),
                "java.lang.IllegalStateException: key 1 reached --fail-at 5 (in counter (1/2))",
            ),
            (
                entry(
                    "org.apache.flink.runtime.JobException",
                    "org.apache.flink.runtime.JobException: Recovery is suppressed by NoRestartBackoffTimeStrategy\n\tat a.b(C.java:1)\nCaused by: java.io.IOException: wrapped\n\tat d.e(F.java:2)\nCaused by: java.io.FileNotFoundException: /x (Permission denied)\n",
                    None,
                ),
                "org.apache.flink.runtime.JobException: Recovery is suppressed by NoRestartBackoffTimeStrategy; caused by java.io.FileNotFoundException: /x (Permission denied)",
            ),
            (
                entry("java.lang.OutOfMemoryError", "", None),
                "java.lang.OutOfMemoryError",
            ),
        ];
        for (entry, expected) in cases {
            assert_eq!(root_cause(&entry), expected);
        }
        let long = entry("E", &format!("E: {}", "x".repeat(5000)), None);
        assert_eq!(root_cause(&long).chars().count(), MAX_FAILURE_CHARS + 3);
    }

    #[test]
    fn only_a_running_job_with_all_tasks_running_is_ready_for_a_savepoint() {
        assert!(JobObservation::found(FlinkJobState::Running, None).ready_for_savepoint());
        let deploying = JobObservation::Found {
            state: FlinkJobState::Running,
            start_time: None,
            all_tasks_running: false,
            failure: None,
            checkpoint_id: None,
        };
        assert!(!deploying.ready_for_savepoint());
        assert!(!JobObservation::found(FlinkJobState::Restarting, None).ready_for_savepoint());
        assert!(!JobObservation::NotFound.ready_for_savepoint());
    }
}
