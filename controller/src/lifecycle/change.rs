//! How a job is ended for a change of its spec (an upgrade or a suspension), decided once
//! for every kind from its upgrade mode, its state and the operator settings; and which
//! state the next job starts from when it did not leave a savepoint for it.

use flink_operator_api::common::{FlinkJobState, JobStatus, UpgradeMode};

use super::restore::{self, RestorableState};
use crate::policy::Policy;
use flink_operator_api::SnapshotType;

/// What is known of the job that a change ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobNow<'a> {
    /// Flink reports it in this state (not a globally terminal one).
    Live(&'a FlinkJobState),
    /// It has ended (FAILED, FINISHED, CANCELED) or is gone.
    Ended,
}

impl<'a> JobNow<'a> {
    /// From a Flink job state; `None` means the job is gone.
    pub fn of(state: Option<&'a FlinkJobState>) -> Self {
        match state {
            Some(state) if !state.is_globally_terminal() => JobNow::Live(state),
            _ => JobNow::Ended,
        }
    }
}

/// How the job ends for the change.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// Nothing is kept: the next job starts without state.
    WithoutState,
    /// What runs the job keeps its latest checkpoint across the change (an application
    /// cluster's high-availability metadata): the job ends with its cluster.
    KeepingLastState,
    /// Stopped with a savepoint (a running job, `take-savepoint` on).
    Savepoint,
    /// Cancelled first (its retained checkpoints stay), once its newest state passes the
    /// restore guard; then started from that state. `with_savepoints`: its savepoints
    /// count as newest state too (`take-savepoint` off), else only checkpoints (last-state).
    CancelForNewest { with_savepoints: bool },
    /// It has already ended: the next job starts from its newest state (see [`after_end`]).
    Ended { with_savepoints: bool },
    /// It has ended, and its last savepoint is younger than
    /// `kubernetes.operator.job.upgrade.savepoint.max-age`.
    FreshSavepoint(RestorableState),
    /// It is starting or restarting: a savepoint is taken once it runs.
    WaitForRunning,
    /// It is being cancelled: wait until it is.
    WaitForCancel,
    /// A savepoint is needed and none can be taken or used; the note says what the user
    /// can do.
    Refuse(String),
}

/// A job that a change ends, as the decision of how sees it.
#[derive(Debug, Clone, Copy)]
pub struct JobToEnd<'a> {
    pub mode: UpgradeMode,
    /// The job ends when its cluster is deleted (an application cluster), which keeps its
    /// checkpoints in the high-availability metadata for a last-state change; otherwise (a
    /// session job) it is cancelled.
    pub ends_with_its_cluster: bool,
    /// That metadata holds a completed checkpoint; without one, deleting the cluster would
    /// restart the job from nothing, so a running job is stopped with a savepoint instead
    /// when one can be taken (as the Apache operator does for a last-state change it cannot
    /// make), and the change is refused otherwise.
    pub last_state_held: bool,
    /// The change suspends the job.
    pub suspending: bool,
    pub now: JobNow<'a>,
    /// When the job's latest checkpoint completed, if known.
    pub latest_checkpoint_ms: Option<i64>,
    pub job: &'a JobStatus,
}

/// How a change ends `job` (see [`JobToEnd`]).
///
/// Two settings move a change between the modes, as the Apache operator's do: a running
/// last-state job whose latest checkpoint is older than
/// `job.upgrade.last-state.max.allowed.checkpoint.age` (or not known) is stopped with a
/// savepoint instead, when one can be taken; and a savepoint job that is not running, whose
/// high-availability metadata holds a checkpoint, ends keeping that last state
/// (`job.upgrade.last-state-fallback.enabled`) rather than wait to run or be refused.
pub fn ending(job: &JobToEnd, policy: &Policy, now_ms: i64) -> Ending {
    let JobToEnd {
        mode,
        ends_with_its_cluster,
        last_state_held,
        suspending,
        now,
        latest_checkpoint_ms,
        job,
    } = *job;
    let take_savepoint = policy.take_savepoint;
    let keeps_last_state = ends_with_its_cluster;
    let checkpoint_too_old = policy
        .last_state_max_checkpoint_age_ms
        .is_some_and(|max| latest_checkpoint_ms.is_none_or(|at| now_ms.saturating_sub(at) > max));
    let can_take_savepoint = take_savepoint && policy.savepoint_dir.is_some();
    let falls_back_to_last_state = policy.last_state_fallback && keeps_last_state && last_state_held;
    match (mode, now) {
        (UpgradeMode::LastState, JobNow::Live(&FlinkJobState::Running))
            if checkpoint_too_old && can_take_savepoint =>
        {
            Ending::Savepoint
        }
        (UpgradeMode::Stateless, JobNow::Live(&FlinkJobState::Cancelling)) if !ends_with_its_cluster => {
            Ending::WaitForCancel
        }
        (UpgradeMode::Stateless, _) => Ending::WithoutState,
        (UpgradeMode::LastState, JobNow::Ended) => Ending::Ended {
            with_savepoints: keeps_last_state,
        },
        (UpgradeMode::LastState, _) if keeps_last_state && last_state_held => Ending::KeepingLastState,
        (UpgradeMode::LastState, JobNow::Live(state)) if keeps_last_state => {
            match (
                *state == FlinkJobState::Running,
                take_savepoint,
                &policy.savepoint_dir,
            ) {
                (true, true, Some(_)) => Ending::Savepoint,
                (running, take, _) => Ending::Refuse(format!(
                    "the high-availability metadata holds no completed checkpoint of the job, so deleting its cluster \
                     would restart it without state, and {}; change the spec again once the job has completed a checkpoint, \
                     or use upgradeMode stateless to start it without state",
                    if !running {
                        "the job is not RUNNING, so no savepoint can be taken instead".to_owned()
                    } else if !take {
                        "kubernetes.operator.job.upgrade.take-savepoint is false, so no savepoint is taken instead".to_owned()
                    } else {
                        "no savepoint can be taken instead: execution.checkpointing.savepoint-dir is not set"
                            .to_owned()
                    }
                )),
            }
        }
        (UpgradeMode::LastState, JobNow::Live(&FlinkJobState::Cancelling)) => Ending::WaitForCancel,
        (UpgradeMode::LastState, JobNow::Live(_)) => Ending::CancelForNewest {
            with_savepoints: false,
        },
        (UpgradeMode::Savepoint, JobNow::Live(&FlinkJobState::Running)) if take_savepoint => {
            Ending::Savepoint
        }
        (UpgradeMode::Savepoint, JobNow::Live(&FlinkJobState::Cancelling)) if !take_savepoint => {
            Ending::WaitForCancel
        }
        (UpgradeMode::Savepoint, JobNow::Live(_)) if !take_savepoint => Ending::CancelForNewest {
            with_savepoints: true,
        },
        (UpgradeMode::Savepoint, JobNow::Live(&FlinkJobState::Cancelling)) => Ending::WaitForRunning,
        (UpgradeMode::Savepoint, JobNow::Live(_)) if falls_back_to_last_state => Ending::KeepingLastState,
        (UpgradeMode::Savepoint, JobNow::Live(_)) => Ending::WaitForRunning,
        // An ended job has no savepoint to take: a suspension keeps its newest state as it is.
        (UpgradeMode::Savepoint, JobNow::Ended) if !take_savepoint || suspending => Ending::Ended {
            with_savepoints: true,
        },
        (UpgradeMode::Savepoint, JobNow::Ended) => {
            match restore::fresh_savepoint(job, policy.savepoint_max_age_ms, now_ms) {
                Some(savepoint) => Ending::FreshSavepoint(savepoint),
                None if falls_back_to_last_state => Ending::KeepingLastState,
                None => Ending::Refuse(
                    "a savepoint needs a running job; allow its last savepoint with \
                     kubernetes.operator.job.upgrade.savepoint.max-age, use upgradeMode stateless or last-state, \
                     or kubernetes.operator.job.upgrade.take-savepoint: false to restore its newest checkpoint or savepoint"
                        .to_owned(),
                ),
            }
        }
    }
}

/// Where the newest state of a job is chosen from: its status (its savepoints, the state it
/// was started from), its latest checkpoint, and whether its savepoints count as newest
/// state too (`take-savepoint` off, or an application cluster's ended job) or only
/// checkpoints do (last-state).
#[derive(Debug, Clone)]
pub struct Newest<'a> {
    pub job: &'a JobStatus,
    pub checkpoint: Option<RestorableState>,
    pub with_savepoints: bool,
}

impl Newest<'_> {
    /// With savepoints, the newest of everything status knows; without, the latest
    /// checkpoint, or, when the job completed none, the state it was started from (recorded
    /// at its start, and still its newest).
    fn state(&self) -> Option<RestorableState> {
        let checkpoint = self.checkpoint.clone();
        if self.with_savepoints {
            restore::newest(self.job, checkpoint)
        } else {
            checkpoint.or_else(|| restore::recorded(self.job))
        }
    }
}

/// The state a job would restore once cancelled, checked against the restore guard while it
/// still runs, so that a job is not ended for state that would then be refused. A state
/// that is not known yet passes (it is checked once the job has ended, see [`after_end`]).
pub fn before_cancel(newest: Newest, policy: &Policy, now_ms: i64) -> Result<(), String> {
    let state = if newest.with_savepoints {
        restore::newest(newest.job, newest.checkpoint)
    } else {
        newest.checkpoint
    };
    match state {
        Some(state) => restore::guard(&state, policy.restore_max_state_age_ms, now_ms),
        None => Ok(()),
    }
}

/// The state the next job starts from after the job ended without a savepoint for the
/// change: its newest (see [`Newest`]). A suspension keeps it as it is (the guard applies
/// when the job resumes); anything else is refused if it is too old or unknown.
pub fn after_end(
    newest: Newest,
    suspending: bool,
    policy: &Policy,
    now_ms: i64,
) -> Result<Option<RestorableState>, String> {
    if suspending {
        return Ok(newest.state());
    }
    newest_allowed(newest, policy, now_ms).map(Some)
}

/// The newest state of the job that the restore guard allows (a restart of a failed job,
/// a change after it ended); the refusal says why.
pub fn newest_allowed(newest: Newest, policy: &Policy, now_ms: i64) -> Result<RestorableState, String> {
    let Some(state) = newest.state() else {
        return Err(if newest.with_savepoints {
            "no checkpoint or savepoint of the job is known to restore from; use upgradeMode stateless or initialSavepointPath"
                .to_owned()
        } else {
            "no completed checkpoint of the job is known to restore from; use upgradeMode stateless or initialSavepointPath"
                .to_owned()
        });
    };
    restore::guard(&state, policy.restore_max_state_age_ms, now_ms).map(|()| state)
}

/// The checkpoint recorded in status (`upgradeSavepointPath`) as one the job itself
/// completed (after it started, unlike the state it was started from): what a job cancelled
/// for a change had recorded before the cancel was sent.
pub fn recorded_checkpoint_of_the_job(job: &JobStatus) -> Option<RestorableState> {
    let state = restore::recorded(job).filter(|s| s.kind == SnapshotType::Checkpoint)?;
    let started = job.start_time.as_deref()?.trim().parse::<i64>().ok()?;
    state
        .timestamp_ms
        .is_some_and(|at| at >= started)
        .then_some(state)
}

/// What a suspended job resumes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Resume {
    /// Nothing: its (new) upgrade mode is stateless.
    WithoutState,
    /// The state its suspension left (a savepoint or checkpoint path in status).
    From(RestorableState),
    /// The latest checkpoint in its cluster's high-availability metadata.
    LastState,
    Refuse(String),
}

/// A suspended job that is to run again.
#[derive(Debug, Clone, Copy)]
pub struct Resuming<'a> {
    /// The upgrade mode it was suspended in (which says what its suspension kept).
    pub mode: UpgradeMode,
    /// The upgrade mode it runs in now.
    pub new_mode: UpgradeMode,
    pub job: &'a JobStatus,
    /// What ran it kept its high-availability metadata (an application cluster).
    pub ends_with_its_cluster: bool,
}

/// What a suspended job resumes from (stateless in its new mode: without state): the state
/// its suspension recorded, guarded by `kubernetes.operator.job.restore.max-state-age`;
/// without one, a last-state job of a cluster that kept its high-availability metadata
/// restores from there, and a stateful job is not started from nothing.
pub fn resume(resuming: &Resuming, policy: &Policy, now_ms: i64) -> Resume {
    let Resuming {
        mode,
        new_mode,
        job,
        ends_with_its_cluster,
    } = *resuming;
    if new_mode == UpgradeMode::Stateless {
        return Resume::WithoutState;
    }
    let max_age = policy.restore_max_state_age_ms;
    match (mode, restore::recorded(job)) {
        (_, Some(state)) => match restore::guard(&state, max_age, now_ms) {
            Ok(()) => Resume::From(state),
            Err(why) => Resume::Refuse(why),
        },
        (UpgradeMode::LastState, None) if ends_with_its_cluster => {
            let checkpoint = RestorableState {
                kind: SnapshotType::Checkpoint,
                path: "in the high-availability metadata".to_owned(),
                timestamp_ms: job
                    .checkpoint_info
                    .as_ref()
                    .and_then(|i| i.last_checkpoint.as_ref())
                    .and_then(|c| c.time_stamp),
            };
            match restore::guard(&checkpoint, max_age, now_ms) {
                Ok(()) => Resume::LastState,
                Err(why) => Resume::Refuse(why),
            }
        }
        (UpgradeMode::Stateless, None) => Resume::WithoutState,
        (_, None) => Resume::Refuse(
            "no savepoint or checkpoint of the job is recorded to resume from; set spec.job.upgradeMode to stateless to start it without state"
                .to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use flink_operator_api::common::{Savepoint, SavepointInfo};

    use super::*;

    /// An application cluster's job whose HA metadata holds a checkpoint completed now,
    /// changed without suspending.
    fn to_end<'a>(mode: UpgradeMode, now: JobNow<'a>, job: &'a JobStatus) -> JobToEnd<'a> {
        JobToEnd {
            mode,
            ends_with_its_cluster: true,
            last_state_held: true,
            suspending: false,
            now,
            latest_checkpoint_ms: Some(NOW),
            job,
        }
    }

    fn newest(job: &JobStatus, checkpoint: Option<RestorableState>, with_savepoints: bool) -> Newest<'_> {
        Newest {
            job,
            checkpoint,
            with_savepoints,
        }
    }

    use crate::fixtures::NOW;

    fn with_savepoint(age_ms: i64) -> JobStatus {
        JobStatus {
            savepoint_info: Some(SavepointInfo {
                last_savepoint: Some(Savepoint {
                    location: Some("file:/sp/1".into()),
                    time_stamp: Some(NOW - age_ms),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_upgrade_mode_and_the_job_state_say_how_a_change_ends_a_job() {
        use Ending::*;
        use UpgradeMode::{LastState, Savepoint as SavepointMode, Stateless};
        let take = Policy::default();
        let no_take = Policy {
            take_savepoint: false,
            ..Policy::default()
        };
        let max_age = Policy {
            savepoint_max_age_ms: Some(60_000),
            ..Policy::default()
        };
        let no_fallback = Policy {
            last_state_fallback: false,
            ..Policy::default()
        };
        let job = with_savepoint(30_000);
        let fresh = restore::fresh_savepoint(&job, Some(60_000), NOW).expect("fresh");
        // (mode, keeps last state, job now, policy) -> ending
        let cases: Vec<(UpgradeMode, bool, JobNow, &Policy, Ending)> = vec![
            (
                Stateless,
                false,
                JobNow::Live(&FlinkJobState::Running),
                &take,
                WithoutState,
            ),
            (Stateless, true, JobNow::Ended, &take, WithoutState),
            (
                Stateless,
                true,
                JobNow::Live(&FlinkJobState::Cancelling),
                &take,
                WithoutState,
            ),
            (
                Stateless,
                false,
                JobNow::Live(&FlinkJobState::Cancelling),
                &take,
                WaitForCancel,
            ),
            (
                LastState,
                true,
                JobNow::Live(&FlinkJobState::Running),
                &take,
                KeepingLastState,
            ),
            (
                LastState,
                true,
                JobNow::Live(&FlinkJobState::Restarting),
                &take,
                KeepingLastState,
            ),
            (
                LastState,
                true,
                JobNow::Ended,
                &take,
                Ended {
                    with_savepoints: true,
                },
            ),
            (
                LastState,
                false,
                JobNow::Live(&FlinkJobState::Running),
                &take,
                CancelForNewest {
                    with_savepoints: false,
                },
            ),
            (
                LastState,
                false,
                JobNow::Live(&FlinkJobState::Cancelling),
                &take,
                WaitForCancel,
            ),
            (
                LastState,
                false,
                JobNow::Ended,
                &take,
                Ended {
                    with_savepoints: false,
                },
            ),
            (
                SavepointMode,
                false,
                JobNow::Live(&FlinkJobState::Running),
                &take,
                Ending::Savepoint,
            ),
            (
                SavepointMode,
                true,
                JobNow::Live(&FlinkJobState::Running),
                &take,
                Ending::Savepoint,
            ),
            (
                SavepointMode,
                false,
                JobNow::Live(&FlinkJobState::Initializing),
                &take,
                WaitForRunning,
            ),
            // Not running, its cluster holding a checkpoint: it keeps that last state
            // (`last-state-fallback.enabled`), or waits to run without the fallback.
            (
                SavepointMode,
                true,
                JobNow::Live(&FlinkJobState::Restarting),
                &take,
                KeepingLastState,
            ),
            (
                SavepointMode,
                true,
                JobNow::Live(&FlinkJobState::Restarting),
                &no_fallback,
                WaitForRunning,
            ),
            (
                SavepointMode,
                true,
                JobNow::Live(&FlinkJobState::Cancelling),
                &take,
                WaitForRunning,
            ),
            (SavepointMode, true, JobNow::Ended, &take, KeepingLastState),
            (
                SavepointMode,
                true,
                JobNow::Ended,
                &max_age,
                FreshSavepoint(fresh.clone()),
            ),
            (
                SavepointMode,
                false,
                JobNow::Live(&FlinkJobState::Running),
                &no_take,
                CancelForNewest {
                    with_savepoints: true,
                },
            ),
            (
                SavepointMode,
                false,
                JobNow::Live(&FlinkJobState::Cancelling),
                &no_take,
                WaitForCancel,
            ),
            (
                SavepointMode,
                true,
                JobNow::Ended,
                &no_take,
                Ended {
                    with_savepoints: true,
                },
            ),
            (
                SavepointMode,
                false,
                JobNow::Ended,
                &max_age,
                FreshSavepoint(fresh.clone()),
            ),
        ];
        for (mode, keeps, now, policy, expected) in cases {
            assert_eq!(
                ending(
                    &JobToEnd {
                        ends_with_its_cluster: keeps,
                        ..to_end(mode, now, &job)
                    },
                    policy,
                    NOW
                ),
                expected,
                "{mode:?} keeps={keeps} {now:?}"
            );
        }
        // A savepoint too old to use, or none allowed: refused with what to do about it.
        for policy in [
            &take,
            &Policy {
                savepoint_max_age_ms: Some(10_000),
                ..Policy::default()
            },
        ] {
            let Refuse(note) = ending(
                &JobToEnd {
                    last_state_held: false,
                    latest_checkpoint_ms: None,
                    ..to_end(SavepointMode, JobNow::Ended, &job)
                },
                policy,
                NOW,
            ) else {
                panic!("refused")
            };
            assert!(note.contains("savepoint.max-age"), "{note}");
            // A suspension keeps the newest state instead.
            assert_eq!(
                ending(
                    &JobToEnd {
                        suspending: true,
                        latest_checkpoint_ms: None,
                        ..to_end(SavepointMode, JobNow::Ended, &job)
                    },
                    policy,
                    NOW
                ),
                Ended {
                    with_savepoints: true
                }
            );
        }
    }

    #[test]
    fn a_last_state_change_deletes_the_cluster_only_when_its_ha_metadata_holds_a_checkpoint() {
        use Ending::*;
        use UpgradeMode::LastState;
        let job = JobStatus::default();
        let savepoint_dir = Policy {
            savepoint_dir: Some("s3://b/sp".into()),
            ..Policy::default()
        };
        let no_savepoint_dir = Policy::default();
        let no_take = Policy {
            take_savepoint: false,
            ..savepoint_dir.clone()
        };
        // (HA holds a checkpoint, job now, policy) -> ending (None: refused, naming why)
        let cases: Vec<(bool, JobNow, &Policy, Option<Ending>, &str)> = vec![
            (
                true,
                JobNow::Live(&FlinkJobState::Running),
                &no_savepoint_dir,
                Some(KeepingLastState),
                "",
            ),
            (
                true,
                JobNow::Live(&FlinkJobState::Restarting),
                &no_savepoint_dir,
                Some(KeepingLastState),
                "",
            ),
            (
                false,
                JobNow::Live(&FlinkJobState::Running),
                &savepoint_dir,
                Some(Ending::Savepoint),
                "",
            ),
            (
                false,
                JobNow::Live(&FlinkJobState::Running),
                &no_savepoint_dir,
                None,
                "execution.checkpointing.savepoint-dir is not set",
            ),
            (
                false,
                JobNow::Live(&FlinkJobState::Running),
                &no_take,
                None,
                "take-savepoint is false",
            ),
            (
                false,
                JobNow::Live(&FlinkJobState::Restarting),
                &savepoint_dir,
                None,
                "the job is not RUNNING",
            ),
            (
                false,
                JobNow::Live(&FlinkJobState::Initializing),
                &no_savepoint_dir,
                None,
                "the job is not RUNNING",
            ),
            // An ended job restores its newest known state, as before.
            (
                false,
                JobNow::Ended,
                &savepoint_dir,
                Some(Ended {
                    with_savepoints: true,
                }),
                "",
            ),
        ];
        for (held, now, policy, expected, why) in cases {
            for suspending in [false, true] {
                let ending = ending(
                    &JobToEnd {
                        last_state_held: held,
                        suspending,
                        ..to_end(LastState, now, &job)
                    },
                    policy,
                    NOW,
                );
                let case = format!("held={held} {now:?} suspending={suspending}");
                match &expected {
                    Some(expected) => assert_eq!(&ending, expected, "{case}"),
                    None => {
                        let Refuse(note) = &ending else {
                            panic!("{case}: refused, not {ending:?}")
                        };
                        assert!(
                            note.contains("holds no completed checkpoint") && note.contains(why),
                            "{case}: {note}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn an_ended_job_restores_its_newest_state_if_young_enough_and_a_suspension_keeps_it() {
        let guarded = Policy {
            restore_max_state_age_ms: Some(60_000),
            ..Policy::default()
        };
        let checkpoint = |age_ms: i64| {
            Some(RestorableState {
                kind: SnapshotType::Checkpoint,
                path: "file:/chk/1".into(),
                timestamp_ms: Some(NOW - age_ms),
            })
        };
        let job = with_savepoint(10_000);
        // The newest of checkpoint and savepoint, with savepoints.
        let state =
            after_end(newest(&job, checkpoint(20_000), true), false, &guarded, NOW).expect("young enough");
        assert_eq!(state.map(|s| s.path), Some("file:/sp/1".to_owned()));
        // Only the checkpoint without.
        let state =
            after_end(newest(&job, checkpoint(20_000), false), false, &guarded, NOW).expect("young enough");
        assert_eq!(state.map(|s| s.path), Some("file:/chk/1".to_owned()));
        // Too old: refused, naming its age; a suspension keeps it for the resume.
        let refused = after_end(
            newest(&JobStatus::default(), checkpoint(120_000), false),
            false,
            &guarded,
            NOW,
        );
        assert!(refused.is_err_and(|e| e.contains("2 min old")));
        let kept = after_end(
            newest(&JobStatus::default(), checkpoint(120_000), false),
            true,
            &guarded,
            NOW,
        );
        assert!(kept.is_ok_and(|s| s.is_some()));
        // Nothing known: refused, unless suspending.
        assert!(after_end(newest(&JobStatus::default(), None, true), false, &guarded, NOW).is_err());
        assert_eq!(
            after_end(newest(&JobStatus::default(), None, true), true, &guarded, NOW),
            Ok(None)
        );
        // A last-state job that ended before its first checkpoint keeps the state it was
        // started from (recorded at its start): a suspension does not drop it.
        let started_from = JobStatus {
            upgrade_savepoint_path: Some("file:/chk/0".into()),
            ..JobStatus::default()
        };
        for suspending in [false, true] {
            let state = after_end(
                newest(&started_from, None, false),
                suspending,
                &Policy::default(),
                NOW,
            );
            assert_eq!(
                state.map(|s| s.map(|s| s.path)),
                Ok(Some("file:/chk/0".to_owned())),
                "suspending: {suspending}"
            );
        }
        // Before a cancellation the same guard applies, and unknown state passes.
        assert!(
            before_cancel(
                newest(&JobStatus::default(), checkpoint(120_000), false),
                &guarded,
                NOW
            )
            .is_err()
        );
        assert!(before_cancel(newest(&JobStatus::default(), None, false), &guarded, NOW).is_ok());
    }

    #[test]
    fn only_a_checkpoint_the_job_completed_after_it_started_is_its_own() {
        let checkpoint = |at: i64| RestorableState {
            kind: SnapshotType::Checkpoint,
            path: "file:/chk/9".into(),
            timestamp_ms: Some(at),
        };
        let recorded = |at: i64, started: Option<i64>| {
            let mut job = JobStatus {
                start_time: started.map(|s| s.to_string()),
                ..Default::default()
            };
            restore::record(&mut job, Some(&checkpoint(at)));
            job
        };
        // Recorded before the job was cancelled: completed while it ran.
        assert_eq!(
            recorded_checkpoint_of_the_job(&recorded(NOW, Some(NOW - 60_000))),
            Some(checkpoint(NOW))
        );
        // The state it was started from, older than the job.
        assert_eq!(
            recorded_checkpoint_of_the_job(&recorded(NOW - 120_000, Some(NOW - 60_000))),
            None
        );
        // Its start unknown, or a savepoint recorded: not taken for one.
        assert_eq!(recorded_checkpoint_of_the_job(&recorded(NOW, None)), None);
        let mut savepoint = with_savepoint(0);
        savepoint.upgrade_savepoint_path = Some("file:/sp/1".into());
        savepoint.start_time = Some((NOW - 60_000).to_string());
        assert_eq!(recorded_checkpoint_of_the_job(&savepoint), None);
    }

    #[test]
    fn a_resume_starts_from_what_the_suspension_left_and_a_stateful_job_never_from_nothing() {
        use UpgradeMode::{LastState, Savepoint as SavepointMode, Stateless};
        let guarded = Policy {
            restore_max_state_age_ms: Some(60_000),
            ..Policy::default()
        };
        let mut left = with_savepoint(30_000);
        left.upgrade_savepoint_path = Some("file:/sp/1".into());
        let mut old = with_savepoint(120_000);
        old.upgrade_savepoint_path = Some("file:/sp/1".into());
        let nothing = JobStatus::default();
        let from = restore::recorded(&left).expect("recorded");
        // (mode, new mode, job, ends with its cluster) -> resume
        let cases: Vec<(UpgradeMode, UpgradeMode, &JobStatus, bool, Option<Resume>)> = vec![
            (
                SavepointMode,
                SavepointMode,
                &left,
                false,
                Some(Resume::From(from.clone())),
            ),
            (SavepointMode, Stateless, &left, true, Some(Resume::WithoutState)),
            (SavepointMode, SavepointMode, &old, true, None),
            (SavepointMode, SavepointMode, &nothing, true, None),
            (SavepointMode, SavepointMode, &nothing, false, None),
            // The age of the checkpoint in the HA metadata is unknown: the guard refuses it.
            (LastState, LastState, &nothing, true, None),
            (LastState, LastState, &nothing, false, None),
            (Stateless, Stateless, &nothing, false, Some(Resume::WithoutState)),
        ];
        for (mode, new_mode, job, cluster, expected) in cases {
            let resumed = resume(
                &Resuming {
                    mode,
                    new_mode,
                    job,
                    ends_with_its_cluster: cluster,
                },
                &guarded,
                NOW,
            );
            match expected {
                Some(expected) => assert_eq!(resumed, expected, "{mode:?} -> {new_mode:?} cluster={cluster}"),
                None => assert!(
                    matches!(resumed, Resume::Refuse(_)),
                    "{mode:?} -> {new_mode:?} cluster={cluster}: {resumed:?}"
                ),
            }
        }
        assert_eq!(
            resume(
                &Resuming {
                    mode: LastState,
                    new_mode: LastState,
                    job: &nothing,
                    ends_with_its_cluster: true
                },
                &Policy::default(),
                NOW
            ),
            Resume::LastState
        );
    }
}
