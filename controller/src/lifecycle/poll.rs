//! What both kinds read of a job through its JobManager's REST API: its state (see
//! [`job::observe`]), the savepoint and the manual checkpoint pending under the
//! trigger ids recorded in status ([`SavepointPoll`], counted in the savepoint metrics by
//! [`record_savepoint`]), and the latest completed checkpoint to restore from.
//!
//! A stop-with-savepoint whose result the JobManager no longer keeps (Flink keeps an
//! asynchronous operation's result for `rest.async.store-duration`, 5 min by default, and
//! forgets it when it restarts) is looked for where its savepoint stays: the job's
//! checkpoint history, then the savepoint directory ([`LateSavepoint`]).
//!
//! [`look`] asks all of them at once: one look costs the slowest answer, not their sum
//! (a JobManager finishing a job after its savepoint answers each in tens of
//! milliseconds, and that wait is between the savepoint and the next cluster).

use std::{
    path::{Path, PathBuf},
    time::{Duration, UNIX_EPOCH},
};

use flink_operator_api::common::{JobStatus, SnapshotTriggerType, flink_job_state};

use super::job::{self, JobObservation};
use crate::{
    context::Context,
    flink::{CheckpointStatistics, FlinkError, FlinkRestClient, JobId, OperationStatus, TriggerId},
};

/// The outcome of a savepoint or checkpoint operation, by its trigger id.
#[derive(Debug, Clone, PartialEq)]
pub enum SavepointPoll {
    InProgress,
    /// The savepoint's path (for checkpoints: the checkpoint id).
    Completed(String),
    Failed(String),
    /// The JobManager does not know the trigger (never reached it, or it restarted).
    UnknownTrigger,
    /// The job is gone: no savepoint will come.
    JobGone(String),
    Unreachable(String),
}

impl SavepointPoll {
    pub fn from_status(result: Result<OperationStatus<String>, FlinkError>) -> Self {
        match result {
            Ok(OperationStatus::InProgress) => SavepointPoll::InProgress,
            Ok(OperationStatus::Completed(path)) => SavepointPoll::Completed(path),
            Ok(OperationStatus::Failed(failure)) => SavepointPoll::Failed(failure.message),
            Ok(OperationStatus::JobNotFound(reason)) => SavepointPoll::JobGone(reason),
            Ok(OperationStatus::UnknownTrigger(_)) => SavepointPoll::UnknownTrigger,
            Err(e) => SavepointPoll::Unreachable(e.to_string()),
        }
    }
}

/// The latest completed checkpoint of a job, as its JobManager reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckpointLookup {
    /// The external path of the latest completed checkpoint, and when it completed (epoch
    /// milliseconds) if Flink said.
    Found { path: String, timestamp_ms: Option<i64> },
    /// The job has no completed, externally addressable checkpoint.
    None,
    /// The statistics could not be read (the job is unknown, the JobManager did not answer).
    Unavailable(String),
}

/// What one look at a recorded job finds. What depends on the JobManager having answered
/// (it knows the job, or says it does not) is `None` when it did not: pending snapshots are
/// looked at again on the next reconcile.
#[derive(Debug)]
pub struct JobLook {
    pub job: JobObservation,
    /// The pending savepoint; `Unreachable` also when the JobManager forgot it and did not
    /// answer the search for it.
    pub savepoint: Option<SavepointPoll>,
    pub checkpoint: Option<SavepointPoll>,
    /// Only when asked for (`latest`).
    pub latest_checkpoint: Option<CheckpointLookup>,
    /// The savepoint of a stop whose result the JobManager no longer keeps, looked for
    /// when the job does not run (see [`LateSavepoint`]).
    pub late_savepoint: Option<LateSavepoint>,
}

/// The savepoint of a stop-with-savepoint recorded in status, looked for once the
/// JobManager no longer knows the stop's trigger id and the job does not run: the stop may
/// well have completed, and its savepoint is the job's state.
#[derive(Debug, Clone, PartialEq)]
pub enum LateSavepoint {
    /// A completed savepoint of the job triggered after the stop was recorded (it can only
    /// be the stop's: the job ended with it): its path, when it completed (epoch ms), and
    /// where it was found.
    Found {
        path: String,
        completed_ms: i64,
        place: String,
    },
    /// None was found: where it was looked for, and where it could not be.
    NotFound(String),
}

/// Looks at the job recorded in `job` (whose id is `job_id`) and its pending snapshots, and,
/// when `latest`, its latest completed checkpoint, with the calls sent together. A
/// JobManager that does not answer costs one timeout for all of them. `savepoint_dir` is
/// where a stop's savepoint is looked for last.
pub async fn look(
    rest: &FlinkRestClient,
    job: &JobStatus,
    job_id: &JobId,
    failure_known: bool,
    latest: bool,
    savepoint_dir: Option<&str>,
) -> JobLook {
    let latest_checkpoint = async {
        match latest {
            true => Some(latest_checkpoint(rest, job_id).await),
            false => None,
        }
    };
    let (observed, savepoint, checkpoint, latest_checkpoint) = tokio::join!(
        job::observe(rest, job_id, failure_known),
        savepoint(rest, Some(job)),
        checkpoint(rest, Some(job)),
        latest_checkpoint,
    );
    let answered = !matches!(observed, JobObservation::Unreachable(_));
    // Asked together, the savepoint may have been answered just before the job ended: a
    // stop-with-savepoint's result is there once the job has ended, so it is asked again
    // now rather than a poll later (the job processes nothing until it is seen).
    let ended = matches!(&observed, JobObservation::Found { state, .. } if flink_job_state::is_globally_terminal(state));
    let mut savepoint = match savepoint {
        Some(SavepointPoll::InProgress) if ended => self::savepoint(rest, Some(job)).await,
        polled => polled,
    };
    let running =
        matches!(&observed, JobObservation::Found { state, .. } if state == flink_job_state::RUNNING);
    let forgotten = matches!(
        savepoint,
        Some(SavepointPoll::UnknownTrigger | SavepointPoll::JobGone(_))
    );
    // A running job's stop is sent again instead (it never reached the JobManager).
    let late_savepoint = match stop_recorded_at(job) {
        Some(since_ms) if answered && forgotten && !running => {
            match self::late_savepoint(rest, job_id, since_ms, savepoint_dir).await {
                Ok(found) => Some(found),
                Err(e) => {
                    savepoint = Some(SavepointPoll::Unreachable(e.to_string()));
                    None
                }
            }
        }
        _ => None,
    };
    JobLook {
        job: observed,
        savepoint: savepoint.filter(|_| answered),
        checkpoint: checkpoint.filter(|_| answered),
        latest_checkpoint: latest_checkpoint.filter(|_| answered),
        late_savepoint,
    }
}

/// When the stop-with-savepoint recorded in `job` (of a change or a deletion) was recorded,
/// before it was sent.
fn stop_recorded_at(job: &JobStatus) -> Option<i64> {
    let info = job.savepoint_info.as_ref()?;
    info.trigger_id.as_ref()?;
    (info.trigger_type == Some(SnapshotTriggerType::Upgrade))
        .then_some(info.trigger_timestamp)
        .flatten()
}

/// Looks for the savepoint of the stop of `job_id` recorded at `since_ms`: in the job's
/// checkpoint history (an ended job's stays readable while the JobManager keeps it in its
/// archive), then in `savepoint_dir`. An error: the JobManager did not answer, and it is
/// looked for again on the next pass.
async fn late_savepoint(
    rest: &FlinkRestClient,
    job_id: &JobId,
    since_ms: i64,
    savepoint_dir: Option<&str>,
) -> Result<LateSavepoint, FlinkError> {
    let history = match rest.checkpoint_statistics(job_id).await {
        Ok(statistics) => match savepoint_since(&statistics, since_ms) {
            Some((path, completed_ms)) => {
                return Ok(LateSavepoint::Found {
                    path,
                    completed_ms,
                    place: format!("the checkpoint history of job {job_id}"),
                });
            }
            None => format!("the checkpoint history of job {job_id} holds no savepoint taken since the stop"),
        },
        Err(e) if e.retryable() => return Err(e),
        Err(e) => format!("the checkpoint history of job {job_id} cannot be read ({e})"),
    };
    let Some(dir) = savepoint_dir else {
        return Ok(LateSavepoint::NotFound(format!(
            "{history}, and no savepoint directory is configured to look in"
        )));
    };
    let (owned, job) = (dir.to_owned(), job_id.clone());
    // A directory on a mount that hangs must not hold the loop: a blocking thread, bounded.
    let listed = tokio::time::timeout(
        DIRECTORY_TIMEOUT,
        tokio::task::spawn_blocking(move || savepoint_in_directory(&owned, &job, since_ms)),
    )
    .await;
    let found = match listed {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => Err(format!("the savepoint directory {dir} could not be listed: {e}")),
        Err(_) => Err(format!(
            "the savepoint directory {dir} did not answer within {} s",
            DIRECTORY_TIMEOUT.as_secs()
        )),
    };
    Ok(match found {
        Ok(Some((path, completed_ms))) => LateSavepoint::Found {
            path,
            completed_ms,
            place: format!("the savepoint directory {dir}"),
        },
        Ok(None) => LateSavepoint::NotFound(format!("{history}, nor does the savepoint directory {dir}")),
        Err(why) => LateSavepoint::NotFound(format!("{history}; {why}")),
    })
}

/// How long listing a savepoint directory may take.
const DIRECTORY_TIMEOUT: Duration = Duration::from_secs(5);

/// The path and completion time of the newest completed savepoint in `statistics` triggered
/// at or after `since_ms`. Flink's clock stamps the savepoint and the operator's the stop:
/// they are taken to agree; one that runs ahead finds nothing, which refuses the change
/// rather than restoring a savepoint taken before the stop.
pub fn savepoint_since(statistics: &CheckpointStatistics, since_ms: i64) -> Option<(String, i64)> {
    let latest = (statistics.latest.savepoint.iter())
        .filter(|s| s.is_savepoint && !s.discarded)
        .map(|s| {
            (
                s.id,
                s.external_path.as_ref(),
                s.trigger_timestamp,
                s.latest_ack_timestamp,
            )
        });
    let history = (statistics.history.iter())
        .filter(|e| e.is_savepoint && e.status == "COMPLETED" && !e.discarded)
        .map(|e| {
            (
                e.id,
                e.external_path.as_ref(),
                e.trigger_timestamp,
                e.latest_ack_timestamp,
            )
        });
    latest
        .chain(history)
        .filter(|(_, _, triggered, _)| triggered.is_some_and(|t| t >= since_ms))
        .filter_map(|(id, path, triggered, acked)| Some((id, path?.clone(), acked.or(triggered)?)))
        .max_by_key(|(id, ..)| *id)
        .map(|(_, path, completed_ms)| (path, completed_ms))
}

/// The newest savepoint of `job_id` in the savepoint directory `dir` whose `_metadata`
/// (written last, when the savepoint completes) was written at or after `since_ms`. Only a
/// `file:` directory is read: anything else is on storage the operator has no access to,
/// and is not guessed at.
pub fn savepoint_in_directory(
    dir: &str,
    job_id: &JobId,
    since_ms: i64,
) -> Result<Option<(String, i64)>, String> {
    let Some(path) = local_path(dir) else {
        return Err(format!(
            "the savepoint directory {dir} is not a local file: path the operator can read"
        ));
    };
    let entries = std::fs::read_dir(&path)
        .map_err(|e| format!("the operator cannot read the savepoint directory {dir}: {e}"))?;
    // Flink names a savepoint `savepoint-<the first 6 characters of the job id>-<random>`.
    let id = job_id.as_str();
    let prefix = format!("savepoint-{}-", id.get(..6).unwrap_or(id));
    let found = entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)))
        .filter_map(|e| Some((e.path(), written_ms(&e.path().join("_metadata"))?)))
        .filter(|(_, written)| *written >= since_ms)
        .max_by_key(|(_, written)| *written)
        .map(|(path, written)| (format!("file:{}", path.display()), written));
    Ok(found)
}

fn written_ms(file: &Path) -> Option<i64> {
    let modified = file.metadata().ok()?.modified().ok()?;
    i64::try_from(modified.duration_since(UNIX_EPOCH).ok()?.as_millis()).ok()
}

/// The local path of a `file:` URI (`file:///a`, or `file:/a` as Flink writes it); None for
/// another scheme, a relative path or another host's (`file://host/a`).
fn local_path(dir: &str) -> Option<PathBuf> {
    let rest = dir.trim().strip_prefix("file:")?;
    let path = rest.strip_prefix("//").unwrap_or(rest);
    path.starts_with('/').then(|| PathBuf::from(path))
}

fn recorded_job(job: Option<&JobStatus>) -> Option<JobId> {
    job?.job_id.as_deref().map(JobId::from)
}

/// The pending savepoint (of any trigger type), by the trigger id recorded in status.
async fn savepoint(rest: &FlinkRestClient, job: Option<&JobStatus>) -> Option<SavepointPoll> {
    let trigger = TriggerId::from(job?.savepoint_info.as_ref()?.trigger_id.as_deref()?);
    let job_id = recorded_job(job)?;
    Some(savepoint_by_trigger(rest, &job_id, &trigger).await)
}

/// The pending manual checkpoint, by the trigger id recorded in status.
async fn checkpoint(rest: &FlinkRestClient, job: Option<&JobStatus>) -> Option<SavepointPoll> {
    let trigger = TriggerId::from(job?.checkpoint_info.as_ref()?.trigger_id.as_deref()?);
    let job_id = recorded_job(job)?;
    Some(checkpoint_by_trigger(rest, &job_id, &trigger).await)
}

/// The savepoint (or stop) of `job_id` triggered under `trigger`.
pub async fn savepoint_by_trigger(
    rest: &FlinkRestClient,
    job_id: &JobId,
    trigger: &TriggerId,
) -> SavepointPoll {
    SavepointPoll::from_status(rest.savepoint_status(job_id, trigger).await)
}

/// The checkpoint of `job_id` triggered under `trigger`; completed with the checkpoint's id.
pub async fn checkpoint_by_trigger(
    rest: &FlinkRestClient,
    job_id: &JobId,
    trigger: &TriggerId,
) -> SavepointPoll {
    let result = rest.checkpoint_status(job_id, trigger).await;
    SavepointPoll::from_status(result.map(|status| completed_as(status, |id| id.to_string())))
}

/// The disposal of a savepoint triggered under `trigger` (completed with no path).
pub async fn disposal_by_trigger(rest: &FlinkRestClient, trigger: &TriggerId) -> SavepointPoll {
    let result = rest.disposal_status(trigger).await;
    SavepointPoll::from_status(result.map(|status| completed_as(status, |()| String::new())))
}

/// `status` with its result (a checkpoint id, nothing) as the text a [`SavepointPoll`] holds.
fn completed_as<T>(status: OperationStatus<T>, text: impl FnOnce(T) -> String) -> OperationStatus<String> {
    match status {
        OperationStatus::Completed(result) => OperationStatus::Completed(text(result)),
        OperationStatus::InProgress => OperationStatus::InProgress,
        OperationStatus::Failed(f) => OperationStatus::Failed(f),
        OperationStatus::JobNotFound(r) => OperationStatus::JobNotFound(r),
        OperationStatus::UnknownTrigger(r) => OperationStatus::UnknownTrigger(r),
    }
}

/// The latest completed checkpoint of `job_id` that has a path and was not discarded.
async fn latest_checkpoint(rest: &FlinkRestClient, job_id: &JobId) -> CheckpointLookup {
    match rest.checkpoint_statistics(job_id).await {
        Ok(statistics) => match statistics.latest.completed.filter(|c| !c.discarded) {
            Some(completed) => match completed.external_path.clone() {
                Some(path) => CheckpointLookup::Found {
                    path,
                    timestamp_ms: completed.latest_ack_timestamp.or(completed.trigger_timestamp),
                },
                None => CheckpointLookup::None,
            },
            None => CheckpointLookup::None,
        },
        Err(e) => CheckpointLookup::Unavailable(e.to_string()),
    }
}

/// Counts a savepoint that this observation found ended: its duration since it was
/// triggered, or a failure.
pub fn record_savepoint(
    ctx: &Context,
    kind: &'static str,
    job: Option<&JobStatus>,
    poll: Option<&SavepointPoll>,
    now_ms: i64,
) {
    let triggered = job
        .and_then(|j| j.savepoint_info.as_ref())
        .filter(|i| i.trigger_id.is_some())
        .and_then(|i| i.trigger_timestamp);
    match (poll, triggered) {
        (Some(SavepointPoll::Completed(_)), Some(at)) => {
            let elapsed = u64::try_from(now_ms - at).unwrap_or(0);
            ctx.metrics
                .savepoint_completed(kind, Duration::from_millis(elapsed));
        }
        (Some(SavepointPoll::Failed(_) | SavepointPoll::JobGone(_)), Some(_)) => {
            ctx.metrics.savepoint_failed(kind);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STOPPED_AT: i64 = 1_800_000_000_000;

    fn statistics(json: &str) -> CheckpointStatistics {
        serde_json::from_str(json).expect("checkpoint statistics")
    }

    #[test]
    fn only_a_completed_savepoint_triggered_since_the_stop_is_the_stops() {
        let after = STOPPED_AT + 50;
        let before = STOPPED_AT - 60_000;
        let cases = vec![
            (
                "the stop's savepoint, the newest of the history",
                format!(
                    r#"{{"history":[
                        {{"id":9,"status":"COMPLETED","is_savepoint":true,"external_path":"file:/sp/savepoint-stop","trigger_timestamp":{after},"latest_ack_timestamp":{}}},
                        {{"id":8,"status":"COMPLETED","is_savepoint":false,"external_path":"file:/cp/chk-8","trigger_timestamp":{after}}},
                        {{"id":7,"status":"COMPLETED","is_savepoint":true,"external_path":"file:/sp/savepoint-old","trigger_timestamp":{before}}}]}}"#,
                    after + 300
                ),
                Some(("file:/sp/savepoint-stop", after + 300)),
            ),
            (
                "only in latest.savepoint (the history shows none)",
                format!(
                    r#"{{"latest":{{"savepoint":{{"id":9,"is_savepoint":true,"external_path":"file:/sp/savepoint-stop","trigger_timestamp":{after}}}}},"history":[]}}"#
                ),
                Some(("file:/sp/savepoint-stop", after)),
            ),
            (
                "a savepoint from before the stop is older state, not the stop's",
                format!(
                    r#"{{"latest":{{"savepoint":{{"id":7,"is_savepoint":true,"external_path":"file:/sp/savepoint-old","trigger_timestamp":{before}}}}},
                        "history":[{{"id":7,"status":"COMPLETED","is_savepoint":true,"external_path":"file:/sp/savepoint-old","trigger_timestamp":{before}}}]}}"#
                ),
                None,
            ),
            (
                "the stop's savepoint failed or is still in progress",
                format!(
                    r#"{{"history":[
                        {{"id":10,"status":"IN_PROGRESS","is_savepoint":true,"trigger_timestamp":{after}}},
                        {{"id":9,"status":"FAILED","is_savepoint":true,"trigger_timestamp":{after}}}]}}"#
                ),
                None,
            ),
            (
                "a discarded one, or one without a path",
                format!(
                    r#"{{"history":[
                        {{"id":10,"status":"COMPLETED","is_savepoint":true,"external_path":"file:/sp/gone","trigger_timestamp":{after},"discarded":true}},
                        {{"id":9,"status":"COMPLETED","is_savepoint":true,"trigger_timestamp":{after}}}]}}"#
                ),
                None,
            ),
            ("no checkpoint at all", "{}".to_owned(), None),
        ];
        for (case, json, expected) in cases {
            let found = savepoint_since(&statistics(&json), STOPPED_AT);
            assert_eq!(found, expected.map(|(path, at)| (path.to_owned(), at)), "{case}");
        }
    }

    #[test]
    fn a_local_savepoint_directory_is_read_and_any_other_is_not_guessed_at() {
        let dir = std::env::temp_dir().join(format!("savepoints-{}", std::process::id()));
        let job = JobId::from("e3bc32a1e3bc32a1e3bc32a1e3bc32a1");
        let stop = dir.join("savepoint-e3bc32-37286e7840ff");
        let other_job = dir.join("savepoint-0000aa-37286e7840ff");
        let unfinished = dir.join("savepoint-e3bc32-aaaaaaaaaaaa");
        for d in [&stop, &other_job, &unfinished] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(stop.join("_metadata"), b"m").unwrap();
        std::fs::write(other_job.join("_metadata"), b"m").unwrap();
        let written = written_ms(&stop.join("_metadata")).unwrap();
        let uri = format!("file://{}", dir.display());

        let found = savepoint_in_directory(&uri, &job, written - 1_000).unwrap();
        assert_eq!(found, Some((format!("file:{}", stop.display()), written)));
        // Flink's own spelling of the same directory.
        let flink = format!("file:{}", dir.display());
        assert_eq!(
            savepoint_in_directory(&flink, &job, written - 1_000).unwrap(),
            found
        );
        // Written before the stop was recorded: older state, not the stop's.
        assert_eq!(savepoint_in_directory(&uri, &job, written + 1_000).unwrap(), None);

        for (dir, why) in [
            ("s3://bucket/savepoints", "is not a local file: path"),
            ("file://other-host/savepoints", "is not a local file: path"),
            ("relative/savepoints", "is not a local file: path"),
            ("file:///no/such/directory", "cannot read the savepoint directory"),
        ] {
            let error = savepoint_in_directory(dir, &job, 0).unwrap_err();
            assert!(error.contains(dir) && error.contains(why), "{dir}: {error}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
