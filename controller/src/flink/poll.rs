//! What both kinds read of a job through its JobManager's REST API: its state (see
//! [`job::observe`]), the savepoint and the manual checkpoint pending under the
//! trigger ids recorded in status ([`SavepointPoll`], counted in the savepoint metrics by
//! [`record_savepoint`]), and the latest completed checkpoint to restore from.
//!
//! A stop-with-savepoint whose result the JobManager no longer keeps (Flink keeps an
//! asynchronous operation's result for `rest.async.store-duration`, 5 min by default, and
//! forgets it when it restarts) is looked for where its savepoint stays: the job's
//! checkpoint history, then the savepoint directory ([`LateSavepoint`]). It is told apart
//! by Flink's checkpoint ids, never by comparing the JobManager's or the storage's clock
//! with the operator's: before the stop is sent, the highest checkpoint id the job showed
//! is recorded with it (`savepointInfo.checkpointIdAtTrigger`), and Flink numbers a job's
//! checkpoints and savepoints in one rising sequence, so the stop's savepoint has a higher
//! id than anything taken before it.
//!
//! [`look`] asks all of them at once: one look costs the slowest answer, not their sum
//! (a JobManager finishing a job after its savepoint answers each in tens of
//! milliseconds, and that wait is between the savepoint and the next cluster).

use std::{
    io::Read,
    path::{Path, PathBuf},
    time::Duration,
};

use flink_operator_api::common::{FlinkJobState, JobStatus, SnapshotTriggerType};

use crate::flink::job::{self, JobObservation};
use crate::{
    flink::{CheckpointStatistics, FlinkError, FlinkRestClient, JobId, OperationStatus, TriggerId},
    metrics::ReconcileMetrics,
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
    /// A completed savepoint of the job with a higher checkpoint id than any the job showed
    /// when the stop was recorded (it can only be the stop's: the job ended with it): its
    /// path, its checkpoint id, and where it was found.
    Found {
        path: String,
        checkpoint_id: i64,
        place: String,
    },
    /// None was found: where it was looked for, and where it could not be.
    NotFound(String),
}

/// What a look at a job asks of its JobManager besides its state and pending snapshots.
#[derive(Debug, Clone, Copy)]
pub struct Asking<'a> {
    /// The job's failure is recorded already: its exceptions are not asked for again.
    pub failure_known: bool,
    /// Its latest completed checkpoint (a stateful job's).
    pub latest_checkpoint: bool,
    /// Where a stop's savepoint is looked for last.
    pub savepoint_dir: Option<&'a str>,
}

/// Looks at the job recorded in `job` (whose id is `job_id`) and its pending snapshots, and
/// what `asking` says, with the calls sent together. A JobManager that does not answer
/// costs one timeout for all of them.
pub async fn look(rest: &FlinkRestClient, job: &JobStatus, job_id: &JobId, asking: Asking<'_>) -> JobLook {
    let Asking {
        failure_known,
        latest_checkpoint: latest,
        savepoint_dir,
    } = asking;
    let latest_checkpoint = async {
        match latest {
            true => Some(latest_checkpoint(rest, job_id).await),
            false => None,
        }
    };
    let (mut observed, savepoint, checkpoint, latest_checkpoint) = tokio::join!(
        job::observe(rest, job_id, failure_known),
        savepoint(rest, Some(job)),
        checkpoint(rest, Some(job)),
        latest_checkpoint,
    );
    let answered = !matches!(observed, JobObservation::Unreachable(_));
    let (latest_checkpoint, highest_id) = match latest_checkpoint {
        Some((lookup, highest_id)) => (Some(lookup), highest_id),
        None => (None, None),
    };
    if let JobObservation::Found { checkpoint_id, .. } = &mut observed {
        *checkpoint_id = highest_id;
    }
    // Asked together, the savepoint may have been answered just before the job ended: a
    // stop-with-savepoint's result is there once the job has ended, so it is asked again
    // now rather than a poll later (the job processes nothing until it is seen).
    let ended = matches!(&observed, JobObservation::Found { state, .. } if state.is_globally_terminal());
    let mut savepoint = match savepoint {
        Some(SavepointPoll::InProgress) if ended => self::savepoint(rest, Some(job)).await,
        polled => polled,
    };
    let running =
        matches!(&observed, JobObservation::Found { state, .. } if *state == FlinkJobState::Running);
    let forgotten = matches!(
        savepoint,
        Some(SavepointPoll::UnknownTrigger | SavepointPoll::JobGone(_))
    );
    // A running job's stop is sent again instead (it never reached the JobManager).
    let late_savepoint = match stop_recorded(job) {
        Some(Some(after_id)) if answered && forgotten && !running => {
            match self::late_savepoint(rest, job_id, after_id, savepoint_dir).await {
                Ok(found) => Some(found),
                Err(e) => {
                    savepoint = Some(SavepointPoll::Unreachable(e.to_string()));
                    None
                }
            }
        }
        Some(None) if answered && forgotten && !running => Some(LateSavepoint::NotFound(
            "no checkpoint id of the job was recorded when the stop was sent (the JobManager's checkpoint \
             statistics could not be read then, or an older operator version sent it), so no savepoint can be \
             told to be the stop's"
                .to_owned(),
        )),
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

/// Whether a stop-with-savepoint (of a change or a deletion) is recorded in `job`, and if so
/// the highest checkpoint id the job showed when it was recorded, before it was sent (None:
/// not known).
fn stop_recorded(job: &JobStatus) -> Option<Option<i64>> {
    let info = job.savepoint_info.as_ref()?;
    info.trigger_id.as_ref()?;
    (info.trigger_type == Some(SnapshotTriggerType::Upgrade)).then_some(info.checkpoint_id_at_trigger)
}

/// Looks for the savepoint of the stop of `job_id`, recorded when the job's highest
/// checkpoint id was `after_id`: in the job's checkpoint history (an ended job's stays
/// readable while the JobManager keeps it in its archive), then in `savepoint_dir`. An
/// error: the JobManager did not answer, and it is looked for again on the next pass.
async fn late_savepoint(
    rest: &FlinkRestClient,
    job_id: &JobId,
    after_id: i64,
    savepoint_dir: Option<&str>,
) -> Result<LateSavepoint, FlinkError> {
    let history = match rest.checkpoint_statistics(job_id).await {
        Ok(statistics) => match savepoint_after(&statistics, after_id) {
            Some((path, checkpoint_id)) => {
                return Ok(LateSavepoint::Found {
                    path,
                    checkpoint_id,
                    place: format!("the checkpoint history of job {job_id}"),
                });
            }
            None => format!(
                "the checkpoint history of job {job_id} holds no savepoint taken after the stop was sent \
                 (of a checkpoint id above {after_id})"
            ),
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
        tokio::task::spawn_blocking(move || savepoint_in_directory(&owned, &job, after_id)),
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
        Ok(Some((path, checkpoint_id))) => LateSavepoint::Found {
            path,
            checkpoint_id,
            place: format!("the savepoint directory {dir}"),
        },
        Ok(None) => LateSavepoint::NotFound(format!("{history}, nor does the savepoint directory {dir}")),
        Err(why) => LateSavepoint::NotFound(format!("{history}; {why}")),
    })
}

/// How long listing a savepoint directory may take.
const DIRECTORY_TIMEOUT: Duration = Duration::from_secs(5);

/// The path and checkpoint id of the newest completed savepoint in `statistics` whose
/// checkpoint id is above `after_id` (the highest the job showed when the stop was sent):
/// Flink numbers a job's checkpoints and savepoints in one rising sequence, so that is a
/// savepoint taken after the stop was sent, and the job ended with the stop's. Flink's
/// clock and the operator's are never compared.
pub fn savepoint_after(statistics: &CheckpointStatistics, after_id: i64) -> Option<(String, i64)> {
    let latest = (statistics.latest.savepoint.iter())
        .filter(|s| s.is_savepoint && !s.discarded)
        .map(|s| (s.id, s.external_path.as_ref()));
    let history = (statistics.history.iter())
        .filter(|e| e.is_savepoint && e.status == "COMPLETED" && !e.discarded)
        .map(|e| (e.id, e.external_path.as_ref()));
    latest
        .chain(history)
        .filter_map(|(id, path)| Some((i64::try_from(id).ok()?, path?.clone())))
        .filter(|(id, _)| *id > after_id)
        .max_by_key(|(id, _)| *id)
        .map(|(id, path)| (path, id))
}

/// The highest checkpoint id in `statistics`: of any checkpoint or savepoint it shows,
/// whatever became of it, or of the one the job restored (its next ones count on from
/// there); 0 when it shows none (Flink's first has id 1).
pub fn highest_checkpoint_id(statistics: &CheckpointStatistics) -> i64 {
    let latest = &statistics.latest;
    (latest.completed.iter().map(|c| c.id))
        .chain(latest.savepoint.iter().map(|c| c.id))
        .chain(latest.restored.iter().map(|c| c.id))
        .chain(statistics.history.iter().map(|e| e.id))
        .max()
        .and_then(|id| i64::try_from(id).ok())
        .unwrap_or(0)
}

/// The savepoint of `job_id` in the savepoint directory `dir` that the stop wrote: of the
/// savepoints whose `_metadata` (written last, when the savepoint completes) names a
/// checkpoint id above `after_id`, the lowest. The directory may also hold savepoints of an
/// earlier run of the same job id numbered higher (a job restored from an older savepoint
/// counts on from that one's id), never one numbered between the stop's trigger and the
/// stop's savepoint: the job ended with it. Only a `file:` directory is read: anything
/// else is on storage the operator has no access to, and is not guessed at.
pub fn savepoint_in_directory(
    dir: &str,
    job_id: &JobId,
    after_id: i64,
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
        .filter_map(|e| Some((e.path(), metadata_checkpoint_id(&e.path().join("_metadata"))?)))
        .filter(|(_, checkpoint_id)| *checkpoint_id > after_id)
        .min_by_key(|(_, checkpoint_id)| *checkpoint_id)
        .map(|(path, checkpoint_id)| (format!("file:{}", path.display()), checkpoint_id));
    Ok(found)
}

/// The magic number that opens a checkpoint's or savepoint's `_metadata` (Flink's
/// `Checkpoints.HEADER_MAGIC_NUMBER`).
const METADATA_MAGIC: [u8; 4] = 0x4960_672d_u32.to_be_bytes();

/// The checkpoint id a `_metadata` file records: after the magic number and the format
/// version (4 bytes each), the id as 8 bytes, big-endian, in every format version Flink
/// 1.x and 2.x write. None for a file that is missing, short or not Flink's.
fn metadata_checkpoint_id(file: &Path) -> Option<i64> {
    let mut header = [0u8; 16];
    std::fs::File::open(file).ok()?.read_exact(&mut header).ok()?;
    let (magic, rest) = header.split_at(4);
    if magic != METADATA_MAGIC {
        return None;
    }
    let id: [u8; 8] = rest.get(4..12)?.try_into().ok()?;
    Some(i64::from_be_bytes(id))
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
async fn latest_checkpoint(rest: &FlinkRestClient, job_id: &JobId) -> (CheckpointLookup, Option<i64>) {
    match rest.checkpoint_statistics(job_id).await {
        Ok(statistics) => {
            let highest = highest_checkpoint_id(&statistics);
            let lookup = match statistics.latest.completed.filter(|c| !c.discarded) {
                Some(completed) => match completed.external_path.clone() {
                    Some(path) => CheckpointLookup::Found {
                        path,
                        timestamp_ms: completed.latest_ack_timestamp.or(completed.trigger_timestamp),
                    },
                    None => CheckpointLookup::None,
                },
                None => CheckpointLookup::None,
            };
            (lookup, Some(highest))
        }
        Err(e) => (CheckpointLookup::Unavailable(e.to_string()), None),
    }
}

/// Counts a savepoint that this observation found ended: its duration since it was
/// triggered, or a failure.
pub fn record_savepoint(
    metrics: &ReconcileMetrics,
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
            metrics.savepoint_completed(kind, Duration::from_millis(elapsed));
        }
        (Some(SavepointPoll::Failed(_) | SavepointPoll::JobGone(_)), Some(_)) => {
            metrics.savepoint_failed(kind);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// When the operator sent the stop, by its own clock.
    const STOPPED_AT: i64 = 1_800_000_000_000;
    /// The highest checkpoint id the job showed when the stop was sent.
    const BEFORE_STOP: i64 = 8;

    fn statistics(json: &str) -> CheckpointStatistics {
        serde_json::from_str(json).expect("checkpoint statistics")
    }

    /// The checkpoint history of a job whose JobManager's clock is `skew_ms` ahead of the
    /// operator's (behind when negative): a periodic savepoint (id 7) taken a minute before
    /// the stop, a checkpoint (id 8) just before it, then the stop's savepoint (id 9), when
    /// `stopped`, each stamped by the JobManager's clock.
    fn history(skew_ms: i64, stopped: bool) -> CheckpointStatistics {
        let jm = |operator_ms: i64| operator_ms + skew_ms;
        let stop = format!(
            r#"{{"id":9,"status":"COMPLETED","is_savepoint":true,"external_path":"file:/sp/savepoint-stop","trigger_timestamp":{},"latest_ack_timestamp":{}}},"#,
            jm(STOPPED_AT + 50),
            jm(STOPPED_AT + 300)
        );
        statistics(&format!(
            r#"{{"history":[{}
                {{"id":8,"status":"COMPLETED","is_savepoint":false,"external_path":"file:/cp/chk-8","trigger_timestamp":{}}},
                {{"id":7,"status":"COMPLETED","is_savepoint":true,"external_path":"file:/sp/savepoint-periodic","trigger_timestamp":{},"latest_ack_timestamp":{}}}]}}"#,
            if stopped { stop.as_str() } else { "" },
            jm(STOPPED_AT - 5_000),
            jm(STOPPED_AT - 60_000),
            jm(STOPPED_AT - 59_000),
        ))
    }

    #[test]
    fn the_stops_savepoint_is_told_apart_by_its_checkpoint_id_whatever_the_jobmanagers_clock() {
        // (case, the JobManager's clock against the operator's, the stop's savepoint written)
        for (case, skew_ms, stopped) in [
            ("clocks agree", 0, true),
            ("the JobManager 2 minutes ahead", 2 * 60_000, true),
            ("the JobManager 2 minutes behind", -2 * 60_000, true),
            (
                "the JobManager 2 minutes ahead, the stop's savepoint never written",
                2 * 60_000,
                false,
            ),
            (
                "the JobManager 2 minutes behind, the stop's savepoint never written",
                -2 * 60_000,
                false,
            ),
        ] {
            let found = savepoint_after(&history(skew_ms, stopped), BEFORE_STOP);
            let expected = stopped.then(|| ("file:/sp/savepoint-stop".to_owned(), 9));
            assert_eq!(
                found, expected,
                "{case}: never the periodic savepoint taken before the stop"
            );
        }
    }

    #[test]
    fn only_a_completed_savepoint_numbered_after_the_stop_was_sent_is_the_stops() {
        let cases = vec![
            (
                "only in latest.savepoint (the history shows none)",
                r#"{"latest":{"savepoint":{"id":9,"is_savepoint":true,"external_path":"file:/sp/savepoint-stop"}},"history":[]}"#,
                Some(("file:/sp/savepoint-stop", 9)),
            ),
            (
                "a savepoint numbered before the stop is older state, not the stop's",
                r#"{"latest":{"savepoint":{"id":7,"is_savepoint":true,"external_path":"file:/sp/savepoint-old"}},
                    "history":[{"id":8,"status":"COMPLETED","is_savepoint":true,"external_path":"file:/sp/savepoint-8"}]}"#,
                None,
            ),
            (
                "the stop's savepoint failed or is still in progress",
                r#"{"history":[
                    {"id":10,"status":"IN_PROGRESS","is_savepoint":true},
                    {"id":9,"status":"FAILED","is_savepoint":true}]}"#,
                None,
            ),
            (
                "a checkpoint after the stop was sent is not a savepoint",
                r#"{"history":[{"id":9,"status":"COMPLETED","is_savepoint":false,"external_path":"file:/cp/chk-9"}]}"#,
                None,
            ),
            (
                "a discarded one, or one without a path",
                r#"{"history":[
                    {"id":10,"status":"COMPLETED","is_savepoint":true,"external_path":"file:/sp/gone","discarded":true},
                    {"id":9,"status":"COMPLETED","is_savepoint":true}]}"#,
                None,
            ),
            ("no checkpoint at all", "{}", None),
        ];
        for (case, json, expected) in cases {
            let found = savepoint_after(&statistics(json), BEFORE_STOP);
            assert_eq!(found, expected.map(|(path, id)| (path.to_owned(), id)), "{case}");
        }
    }

    #[test]
    fn the_highest_checkpoint_id_counts_every_entry_and_the_restored_one() {
        let cases = [
            ("nothing yet", "{}", 0),
            (
                "a failed one after the latest completed",
                r#"{"latest":{"completed":{"id":4}},"history":[{"id":6,"status":"FAILED"},{"id":4,"status":"COMPLETED"}]}"#,
                6,
            ),
            (
                "restored from a savepoint numbered higher than anything since",
                r#"{"latest":{"restored":{"id":40}},"history":[]}"#,
                40,
            ),
            (
                "a savepoint in progress",
                r#"{"latest":{"completed":{"id":3}},"history":[{"id":5,"status":"IN_PROGRESS","is_savepoint":true}]}"#,
                5,
            ),
        ];
        for (case, json, expected) in cases {
            assert_eq!(highest_checkpoint_id(&statistics(json)), expected, "{case}");
        }
    }

    /// A savepoint directory as Flink writes one: `_metadata` opens with the magic number,
    /// the format version and the checkpoint id (as Flink 1.20 writes version 4 and 2.x
    /// version 6).
    fn write_savepoint(dir: &Path, name: &str, version: u32, checkpoint_id: i64) -> PathBuf {
        let savepoint = dir.join(name);
        std::fs::create_dir_all(&savepoint).unwrap();
        let mut metadata = Vec::new();
        metadata.extend_from_slice(&METADATA_MAGIC);
        metadata.extend_from_slice(&version.to_be_bytes());
        metadata.extend_from_slice(&checkpoint_id.to_be_bytes());
        metadata.extend_from_slice(&[0, 0, 0, 0]);
        std::fs::write(savepoint.join("_metadata"), metadata).unwrap();
        savepoint
    }

    /// Sets a file's modification time to `ms` (epoch milliseconds), as a storage whose clock
    /// is off from the operator's would have written it.
    fn written_at(file: &Path, ms: i64) {
        let at = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap());
        std::fs::File::options()
            .write(true)
            .open(file)
            .unwrap()
            .set_modified(at)
            .unwrap();
    }

    #[test]
    fn a_local_savepoint_directory_is_read_by_checkpoint_ids_whatever_the_storages_clock() {
        let job = JobId::from("e3bc32a1e3bc32a1e3bc32a1e3bc32a1");
        // (case, the storage's clock against the operator's)
        for (case, skew_ms) in [
            ("clocks agree", 0),
            ("storage ahead", 120_000),
            ("storage behind", -120_000),
        ] {
            let dir = std::env::temp_dir().join(format!("savepoints-{}-{skew_ms}", std::process::id()));
            let periodic = write_savepoint(&dir, "savepoint-e3bc32-111111111111", 4, 7);
            let stop = write_savepoint(&dir, "savepoint-e3bc32-37286e7840ff", 6, 9);
            // An earlier run of the same job id, restored from an older savepoint since,
            // numbered higher than the stop's.
            let earlier_run = write_savepoint(&dir, "savepoint-e3bc32-999999999999", 6, 30);
            let other_job = write_savepoint(&dir, "savepoint-0000aa-37286e7840ff", 6, 10);
            let unfinished = dir.join("savepoint-e3bc32-aaaaaaaaaaaa");
            std::fs::create_dir_all(&unfinished).unwrap();
            std::fs::write(dir.join("savepoint-e3bc32-bbbbbbbbbbbb"), b"not a directory").unwrap();
            let not_flinks = dir.join("savepoint-e3bc32-cccccccccccc");
            std::fs::create_dir_all(&not_flinks).unwrap();
            std::fs::write(not_flinks.join("_metadata"), b"garbage that is long enough").unwrap();
            written_at(&periodic.join("_metadata"), STOPPED_AT - 60_000 + skew_ms);
            written_at(&stop.join("_metadata"), STOPPED_AT + 300 + skew_ms);
            written_at(&earlier_run.join("_metadata"), STOPPED_AT - 86_400_000 + skew_ms);
            written_at(&other_job.join("_metadata"), STOPPED_AT + 200 + skew_ms);
            let uri = format!("file://{}", dir.display());

            let found = savepoint_in_directory(&uri, &job, BEFORE_STOP).unwrap();
            assert_eq!(found, Some((format!("file:{}", stop.display()), 9)), "{case}");
            // Flink's own spelling of the same directory.
            let flink = format!("file:{}", dir.display());
            assert_eq!(
                savepoint_in_directory(&flink, &job, BEFORE_STOP).unwrap(),
                found,
                "{case}"
            );
            // Nothing numbered above the recorded id: nothing found, however recent.
            assert_eq!(
                savepoint_in_directory(&uri, &job, 30).unwrap(),
                None,
                "{case}: nothing numbered after the stop"
            );
            std::fs::remove_dir_all(&dir).unwrap();
        }

        for (dir, why) in [
            ("s3://bucket/savepoints", "is not a local file: path"),
            ("file://other-host/savepoints", "is not a local file: path"),
            ("relative/savepoints", "is not a local file: path"),
            ("file:///no/such/directory", "cannot read the savepoint directory"),
        ] {
            let error = savepoint_in_directory(dir, &job, 0).unwrap_err();
            assert!(error.contains(dir) && error.contains(why), "{dir}: {error}");
        }
    }
}
