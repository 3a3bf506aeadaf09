//! The savepoints a job's status keeps (`savepointInfo`), shared by the FlinkDeployment and
//! FlinkSessionJob loops: recording a completed savepoint, when the next periodic savepoint
//! is due, and which savepoints leave the history.
//!
//! A savepoint leaves the history when it is beyond `savepoint.history.max.count` or older
//! than `savepoint.history.max.age`; its files are disposed of through Flink only when
//! `savepoint.cleanup.enabled` is true (the default), and are otherwise left where they are.
//! The newest savepoint, the last one, and the one the job was started from never leave; one
//! that another job resource of the namespace may still need leaves, but is not disposed of
//! (see [`super::snapshots::trim_history`]).

use flink_operator_api::{
    SnapshotType,
    common::{JobStatus, Savepoint},
    options::schedule::Schedule,
};

use super::protected::Protected;
use crate::{plan::Next, policy::Policy};

/// Records a completed savepoint as the last one and at the end of the history; a periodic
/// one moves the periodic schedule to when it was triggered.
pub fn record(job: &mut JobStatus, savepoint: Savepoint, periodic_trigger: Option<i64>) {
    let info = job.savepoint_info.get_or_insert_with(Default::default);
    info.last_savepoint = Some(savepoint.clone());
    info.savepoint_history
        .get_or_insert_with(Default::default)
        .push(savepoint);
    if periodic_trigger.is_some() {
        info.last_periodic_savepoint_timestamp = periodic_trigger;
    }
}

/// When the next periodic snapshot of `kind` of the running job is due (epoch ms): the
/// schedule's next time after the last periodic one of that kind was triggered, and the first
/// its next time after the job started (not at its start). `None` when they are off.
fn next_periodic_at(
    job: &JobStatus,
    kind: SnapshotType,
    schedule: Option<&Schedule>,
    now_ms: i64,
) -> Option<i64> {
    let schedule = schedule?;
    let last = match kind {
        SnapshotType::Savepoint => job
            .savepoint_info
            .as_ref()
            .and_then(|i| i.last_periodic_savepoint_timestamp),
        SnapshotType::Checkpoint => job
            .checkpoint_info
            .as_ref()
            .and_then(|i| i.last_periodic_checkpoint_timestamp),
    }
    .unwrap_or(0);
    let started = job
        .start_time
        .as_deref()
        .and_then(|t| t.parse::<i64>().ok())
        .unwrap_or(now_ms);
    schedule.next_after(last.max(started))
}

/// Whether a periodic snapshot of `kind` of the running job is due.
pub fn periodic_due(job: &JobStatus, kind: SnapshotType, schedule: Option<&Schedule>, now_ms: i64) -> bool {
    next_periodic_at(job, kind, schedule, now_ms).is_some_and(|at| now_ms >= at)
}

/// `next`, or sooner when the next periodic snapshot of `kind` is due before the resource
/// would be looked at again, so that a short interval is kept even while the resource is
/// otherwise looked at seldom, or at the progress-check interval (`progress_ms`; a JobManager
/// that did not answer once is looked at again then, which must not make a snapshot late).
pub fn requeue_for_periodic(
    job: &JobStatus,
    kind: SnapshotType,
    schedule: Option<&Schedule>,
    (now_ms, progress_ms): (i64, i64),
    next: Next,
) -> Next {
    let Some(at) = next_periodic_at(job, kind, schedule, now_ms) else {
        return next;
    };
    let due_in_ms = u64::try_from(at - now_ms).unwrap_or(0);
    let due_in_seconds = due_in_ms.div_ceil(1000).max(1);
    match next {
        Next::Steady | Next::Idle => Next::Within(due_in_seconds),
        Next::Within(seconds) => Next::Within(seconds.min(due_in_seconds)),
        Next::Progress if at - now_ms < progress_ms => Next::Within(due_in_seconds),
        Next::Progress => Next::Progress,
        under_way @ (Next::Stopping { .. } | Next::Awaiting { .. }) => under_way,
    }
}

/// Savepoints that leave the history.
#[derive(Debug, Clone, PartialEq)]
pub struct Trim {
    /// The history without them.
    pub keep: Vec<Savepoint>,
    /// Their paths.
    pub removed: Vec<String>,
    /// Whether their files are to be disposed of through Flink.
    pub dispose: bool,
}

impl Trim {
    /// The reason of the Event.
    pub fn reason(&self) -> crate::events::Reason {
        if self.dispose {
            crate::events::Reason::SavepointsDisposed
        } else {
            crate::events::Reason::SavepointHistoryTrimmed
        }
    }

    /// The Event that says what left the history and what happens to the files.
    pub fn note(&self) -> String {
        if self.dispose {
            format!(
                "Disposing of {} savepoint(s) beyond the history's count or age: {}",
                self.removed.len(),
                self.removed.join(", ")
            )
        } else {
            format!(
                "Removed {} savepoint(s) beyond the history's count or age from status; their files are kept \
                 (kubernetes.operator.savepoint.cleanup.enabled is false): {}",
                self.removed.len(),
                self.removed.join(", ")
            )
        }
    }
}

/// Which savepoints leave the history now, if any: never the newest, nor one the job may still
/// need (`protected`).
pub fn trim(job: &JobStatus, policy: &Policy, protected: &Protected, now_ms: i64) -> Option<Trim> {
    let info = job.savepoint_info.as_ref()?;
    let history = info.savepoint_history.as_deref().unwrap_or_default();
    if history.len() < 2 {
        return None;
    }
    let protected = |s: &Savepoint| {
        Some(s) == history.last() || s.location.as_deref().is_none_or(|path| protected.contains(path))
    };
    let mut keep = Vec::new();
    let mut removed = Vec::new();
    let mut excess = history.len().saturating_sub(policy.history_max_count);
    for savepoint in history {
        let too_old = savepoint
            .time_stamp
            .is_some_and(|t| now_ms - t > policy.history_max_age_ms);
        if !protected(savepoint) && (excess > 0 || too_old) {
            excess = excess.saturating_sub(1);
            removed.push(savepoint.location.clone().unwrap_or_default());
        } else {
            keep.push(savepoint.clone());
        }
    }
    (!removed.is_empty()).then_some(Trim {
        keep,
        removed,
        dispose: policy.history_cleanup,
    })
}

#[cfg(test)]
mod tests {
    use flink_operator_api::common::SavepointInfo;

    use super::*;

    use crate::fixtures::NOW;
    const MIN: i64 = 60_000;

    fn savepoint(name: &str, minutes_ago: i64) -> Savepoint {
        Savepoint {
            time_stamp: Some(NOW - minutes_ago * MIN),
            location: Some(format!("file:///sp/{name}")),
            ..Default::default()
        }
    }

    fn job(history: &[(&str, i64)], last: Option<&str>, started_from: Option<&str>) -> JobStatus {
        let history: Vec<Savepoint> = history.iter().map(|(n, m)| savepoint(n, *m)).collect();
        JobStatus {
            upgrade_savepoint_path: started_from.map(|n| format!("file:///sp/{n}")),
            savepoint_info: Some(SavepointInfo {
                last_savepoint: last.and_then(|n| {
                    history
                        .iter()
                        .find(|s| s.location.as_deref() == Some(&format!("file:///sp/{n}")))
                        .cloned()
                }),
                savepoint_history: Some(history),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn policy(max_count: usize, max_age_min: i64, cleanup: bool) -> Policy {
        Policy {
            history_max_count: max_count,
            history_max_age_ms: max_age_min * MIN,
            history_cleanup: cleanup,
            ..Policy::default()
        }
    }

    fn names(savepoints: &[Savepoint]) -> Vec<&str> {
        savepoints
            .iter()
            .map(|s| s.location.as_deref().unwrap().trim_start_matches("file:///sp/"))
            .collect()
    }

    #[test]
    fn the_history_is_trimmed_by_count_and_age_keeping_the_newest_last_and_started_from() {
        type Case<'a> = (
            &'a [(&'a str, i64)],
            Option<&'a str>,
            Option<&'a str>,
            usize,
            i64,
            &'a [&'a str],
        );
        let cases: &[Case] = &[
            // Within count and age: nothing leaves.
            (&[("a", 30), ("b", 20), ("c", 10)], Some("c"), None, 3, 60, &[]),
            // Beyond the count: the oldest leave first.
            (
                &[("a", 30), ("b", 20), ("c", 10)],
                Some("c"),
                None,
                1,
                60,
                &["a", "b"],
            ),
            // Beyond the age: the old ones leave, the newest stays however old.
            (
                &[("a", 300), ("b", 200), ("c", 100)],
                Some("c"),
                None,
                10,
                60,
                &["a", "b"],
            ),
            // The one the job started from and the last one stay.
            (
                &[("a", 30), ("b", 20), ("c", 10)],
                Some("b"),
                Some("a"),
                1,
                60,
                &[],
            ),
            (
                &[("a", 30), ("b", 20), ("c", 10), ("d", 5)],
                Some("d"),
                Some("b"),
                2,
                60,
                &["a", "c"],
            ),
            // A single savepoint is never trimmed.
            (&[("a", 3000)], Some("a"), None, 0, 1, &[]),
        ];
        for (history, last, started_from, max_count, max_age_min, removed) in cases {
            let job = job(history, *last, *started_from);
            let protected = Protected::of(Some(&job), None, None);
            let trim = trim(&job, &policy(*max_count, *max_age_min, true), &protected, NOW);
            let case = format!(
                "{history:?}, last {last:?}, from {started_from:?}, max {max_count}/{max_age_min} min"
            );
            match trim {
                None => assert!(removed.is_empty(), "{case}: expected {removed:?} to leave"),
                Some(trim) => {
                    let left: Vec<&str> = trim
                        .removed
                        .iter()
                        .map(|p| p.trim_start_matches("file:///sp/"))
                        .collect();
                    assert_eq!(&left, removed, "{case}");
                    assert_eq!(trim.keep.len() + trim.removed.len(), history.len(), "{case}");
                    assert!(names(&trim.keep).iter().all(|k| !left.contains(k)), "{case}");
                    assert!(trim.dispose, "{case}");
                }
            }
        }
    }

    #[test]
    fn without_cleanup_savepoints_leave_the_history_but_their_files_are_kept() {
        let job = job(&[("a", 30), ("b", 20), ("c", 10)], Some("c"), None);
        let trim = trim(
            &job,
            &policy(1, 60, false),
            &Protected::of(Some(&job), None, None),
            NOW,
        )
        .unwrap();
        assert_eq!(names(&trim.keep), ["c"]);
        assert!(!trim.dispose);
        assert!(trim.note().contains("files are kept"), "{}", trim.note());
        assert!(trim.note().contains("file:///sp/a"), "{}", trim.note());
    }

    #[test]
    fn a_savepoint_the_job_may_still_need_never_leaves_the_history() {
        let job = job(&[("a", 30), ("b", 20), ("c", 10)], Some("c"), None);
        // A kept revision was started from "a", the spec restores "b" at a first start.
        let protected = Protected::of(Some(&job), None, Some("file:///sp/b")).with_paths(["file:///sp/a"]);
        assert_eq!(trim(&job, &policy(1, 60, true), &protected, NOW), None);
    }

    #[test]
    fn periodic_savepoints_are_due_an_interval_after_the_start_then_after_each_trigger() {
        let started = |start_min_ago: i64, last_min_ago: Option<i64>| JobStatus {
            start_time: Some((NOW - start_min_ago * MIN).to_string()),
            savepoint_info: Some(SavepointInfo {
                last_periodic_savepoint_timestamp: last_min_ago.map(|m| NOW - m * MIN),
                ..Default::default()
            }),
            ..Default::default()
        };
        for (job, interval_min, due) in [
            (started(5, None), Some(10), false),
            (started(10, None), Some(10), true),
            (started(60, Some(5)), Some(10), false),
            (started(60, Some(10)), Some(10), true),
            (started(60, None), None, false),
            // A start time that is not known yet counts as now.
            (JobStatus::default(), Some(10), false),
        ] {
            assert_eq!(
                periodic_due(
                    &job,
                    SnapshotType::Savepoint,
                    interval_min.map(|m| Schedule::Every(m * MIN)).as_ref(),
                    NOW
                ),
                due,
                "{job:?}, every {interval_min:?} min"
            );
        }
    }

    #[test]
    fn a_steady_resource_is_looked_at_again_when_its_next_periodic_savepoint_is_due() {
        let job = JobStatus {
            start_time: Some((NOW - 5 * MIN).to_string()),
            ..Default::default()
        };
        for (interval_ms, requeue, expected) in [
            (None, Next::Steady, Next::Steady),
            (Some(60 * MIN), Next::Steady, Next::Within(55 * 60)),
            (Some(5 * MIN + 7_500), Next::Steady, Next::Within(8)),
            (Some(5 * MIN), Next::Steady, Next::Within(1)),
            (Some(MIN), Next::Steady, Next::Within(1)),
            // The progress check (10 s here) comes first, or the periodic savepoint does.
            (Some(5 * MIN + 12_500), Next::Progress, Next::Progress),
            (Some(5 * MIN + 7_500), Next::Progress, Next::Within(8)),
            (Some(5 * MIN + 7_500), Next::Within(3), Next::Within(3)),
        ] {
            assert_eq!(
                requeue_for_periodic(
                    &job,
                    SnapshotType::Savepoint,
                    interval_ms.map(Schedule::Every).as_ref(),
                    (NOW, 10_000),
                    requeue
                ),
                expected,
                "every {interval_ms:?} ms"
            );
        }
    }

    #[test]
    fn a_recorded_savepoint_is_the_last_one_and_ends_the_history() {
        let mut job = job(&[("a", 30)], Some("a"), None);
        record(&mut job, savepoint("b", 0), Some(NOW - MIN));
        let info = job.savepoint_info.unwrap();
        assert_eq!(info.last_savepoint, Some(savepoint("b", 0)));
        assert_eq!(names(info.savepoint_history.as_deref().unwrap()), ["a", "b"]);
        assert_eq!(info.last_periodic_savepoint_timestamp, Some(NOW - MIN));
    }
}
