//! Which state a job restores from, and the guard on its age
//! (`kubernetes.operator.job.restore.max-state-age`), shared by the FlinkDeployment and
//! FlinkSessionJob loops so that both refuse the same restores with the same words.

use flink_operator_api::{
    SnapshotType,
    common::{Checkpoint, JobStatus, SnapshotTriggerType},
};

/// A checkpoint or savepoint that a job could restore.
#[derive(Debug, Clone, PartialEq)]
pub struct RestorableState {
    pub kind: SnapshotType,
    pub path: String,
    /// When it completed, epoch milliseconds; unknown for paths recorded without a time.
    pub timestamp_ms: Option<i64>,
}

impl RestorableState {
    pub fn describe(&self) -> String {
        format!("{} {}", self.kind.name(), self.path)
    }
}

/// The newest state known for the job: `checkpoint` (its latest completed checkpoint, as
/// observed), its last savepoint, or the state it was started from.
pub fn newest(job: &JobStatus, checkpoint: Option<RestorableState>) -> Option<RestorableState> {
    let mut candidates: Vec<RestorableState> = checkpoint.into_iter().collect();
    if let Some(savepoint) = job
        .savepoint_info
        .as_ref()
        .and_then(|i| i.last_savepoint.as_ref())
        && let Some(path) = &savepoint.location
    {
        candidates.push(RestorableState {
            kind: SnapshotType::Savepoint,
            path: path.clone(),
            timestamp_ms: savepoint.time_stamp,
        });
    }
    if let Some(recorded) = recorded(job) {
        candidates.push(recorded);
    }
    // Unknown times sort first, so that any state with a known time wins over them.
    candidates.into_iter().max_by_key(|s| s.timestamp_ms)
}

/// The state recorded to start the job from (`upgradeSavepointPath`), with its time when
/// status knows it.
pub fn recorded(job: &JobStatus) -> Option<RestorableState> {
    let path = job.upgrade_savepoint_path.clone()?;
    let savepoints = job.savepoint_info.iter().flat_map(|info| {
        info.last_savepoint
            .iter()
            .chain(info.savepoint_history.iter().flatten())
    });
    if let Some(savepoint) = savepoints
        .clone()
        .find(|s| s.location.as_deref() == Some(path.as_str()))
    {
        return Some(RestorableState {
            kind: SnapshotType::Savepoint,
            path,
            timestamp_ms: savepoint.time_stamp,
        });
    }
    // A checkpoint recorded for a restore keeps its time in checkpointInfo.lastCheckpoint
    // (trigger type UNKNOWN, see `record`) until a manual checkpoint replaces the entry; the
    // manual one's time is not the recorded checkpoint's, so its age is then unknown.
    let checkpoint_time = job
        .checkpoint_info
        .as_ref()
        .and_then(|i| i.last_checkpoint.as_ref())
        .filter(|c| c.trigger_type != Some(SnapshotTriggerType::Manual))
        .and_then(|c| c.time_stamp);
    Some(RestorableState {
        kind: SnapshotType::Checkpoint,
        path,
        timestamp_ms: checkpoint_time,
    })
}

/// The last savepoint, if younger than `max_age_ms`
/// (`kubernetes.operator.job.upgrade.savepoint.max-age`): what a savepoint upgrade of a job
/// that is no longer running may restore instead of a savepoint it can no longer take.
pub fn fresh_savepoint(job: &JobStatus, max_age_ms: Option<i64>, now_ms: i64) -> Option<RestorableState> {
    let max_age = max_age_ms?;
    let savepoint = job.savepoint_info.as_ref()?.last_savepoint.as_ref()?;
    let path = savepoint.location.clone()?;
    let at = savepoint.time_stamp?;
    (now_ms - at <= max_age).then_some(RestorableState {
        kind: SnapshotType::Savepoint,
        path,
        timestamp_ms: Some(at),
    })
}

/// Checks `state` against `kubernetes.operator.job.restore.max-state-age`; the refusal
/// names the state and its age.
pub fn guard(state: &RestorableState, max_age_ms: Option<i64>, now_ms: i64) -> Result<(), String> {
    let Some(max_age) = max_age_ms else {
        return Ok(());
    };
    let Some(at) = state.timestamp_ms else {
        return Err(format!(
            "the age of {} is unknown, and kubernetes.operator.job.restore.max-state-age ({}) allows only younger state",
            state.describe(),
            human(max_age)
        ));
    };
    let age = now_ms - at;
    if age > max_age {
        return Err(format!(
            "the newest state, {}, is {} old, older than kubernetes.operator.job.restore.max-state-age ({}); the job is not started from it",
            state.describe(),
            human(age),
            human(max_age)
        ));
    }
    Ok(())
}

/// Records `state` as the one the next job starts from; a checkpoint's time goes to
/// `checkpointInfo.lastCheckpoint` so that a later guard knows its age. A path recorded
/// again without its time (a revision's, a rollback's) keeps the time status knows of that
/// very path: unknown, it would rank below every timed state, older ones too.
pub fn record(job: &mut JobStatus, state: Option<&RestorableState>) {
    let known_ms = (state.filter(|s| s.timestamp_ms.is_none()))
        .and_then(|s| recorded(job).filter(|r| r.path == s.path))
        .and_then(|r| r.timestamp_ms);
    job.upgrade_savepoint_path = state.map(|s| s.path.clone());
    if let Some(state) = state
        && state.kind == SnapshotType::Checkpoint
    {
        let info = job.checkpoint_info.get_or_insert_with(Default::default);
        info.last_checkpoint = Some(Checkpoint {
            time_stamp: state.timestamp_ms.or(known_ms),
            trigger_type: Some(SnapshotTriggerType::Unknown),
            ..Default::default()
        });
    }
}

/// How old the state is, for messages.
pub fn age_note(state: &RestorableState, now_ms: i64) -> String {
    match state.timestamp_ms {
        Some(at) => format!("{} ({} old)", state.describe(), human(now_ms - at)),
        None => state.describe(),
    }
}

/// A duration for people: `45 s`, `12 min`, `3 h 5 min`, `2 d 4 h`.
pub fn human(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..120 => format!("{s} s"),
        120..7200 => format!("{} min", s / 60),
        7200..172_800 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flink_operator_api::SnapshotType;

    fn checkpoint(path: &str, timestamp_ms: Option<i64>) -> RestorableState {
        RestorableState {
            kind: SnapshotType::Checkpoint,
            path: path.into(),
            timestamp_ms,
        }
    }

    /// A rollback records the state a revision was started from, whose time the revision
    /// does not keep: the same path recorded before keeps its time, and so its rank above
    /// an older savepoint; another path's time is not lent to it.
    #[test]
    fn a_path_recorded_again_without_a_time_keeps_the_time_status_knows() {
        let mut job = JobStatus::default();
        record(&mut job, Some(&checkpoint("file:/cp/chk-2", Some(2_000))));
        record(&mut job, Some(&checkpoint("file:/cp/chk-2", None)));
        assert_eq!(recorded(&job).unwrap().timestamp_ms, Some(2_000));
        record(&mut job, Some(&checkpoint("file:/cp/chk-1", None)));
        assert_eq!(recorded(&job).unwrap().timestamp_ms, None);
    }
}
