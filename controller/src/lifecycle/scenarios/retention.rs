//! A change that cancels the job to restore its latest checkpoint (a session job's
//! last-state upgrade, or any job's savepoint-mode upgrade with `take-savepoint: false`)
//! cancels it only when its JobManager says its checkpoints outlive the cancellation, with
//! the checkpoint it restores in status before the cancel is sent; otherwise the job is
//! stopped with a savepoint, waits to run for one, or the change is refused, and is never
//! cancelled.

use super::*;
use crate::{conditions::Phase, lifecycle::retention::OnCancel};

fn deleted() -> OnCancel {
    OnCancel::Deleted(
        "the job's checkpoints are deleted when it is cancelled (DELETE_ON_CANCELLATION)".into(),
    )
}

fn unknown() -> OnCancel {
    OnCancel::Unknown("its checkpoint configuration cannot be read (timed out)".into())
}

#[test]
fn without_the_upgrade_savepoint_a_job_is_cancelled_only_when_its_checkpoints_outlive_the_cancel() {
    // Both kinds: savepoint mode without the upgrade savepoint (`take-savepoint: false`), so
    // no savepoint may be taken instead. (case, what a cancel does to the checkpoints,
    // None: cancelled, or Some(part of the refusal))
    let cases: [(&str, OnCancel, Option<&str>); 4] = [
        ("retained", OnCancel::Retained, None),
        (
            "deleted on cancellation",
            deleted(),
            Some("DELETE_ON_CANCELLATION"),
        ),
        ("unknown", unknown(), Some("cannot be read")),
        ("not looked up", OnCancel::NotLooked, Some("was not looked up")),
    ];
    for (case, on_cancel, refused) in cases {
        both(|kind, decide| {
            let case = format!("{kind} {case}");
            let job = job_spec(UpgradeMode::Savepoint);
            let config = json!({ "kubernetes.operator.job.upgrade.take-savepoint": "false" });
            let stored = started(&job, &config, kind);
            let new = with(job.clone(), "parallelism", json!(4));
            let look = Look {
                policy: Policy {
                    take_savepoint: false,
                    savepoint_dir: Some("file:/savepoints".into()),
                    ..Policy::status_only()
                },
                latest_checkpoint: Some(5_000),
                on_cancel: on_cancel.clone(),
                ..changed(FlinkJobState::Running)
            };
            let (outcome, _) = decide(&new, &config, Some(&stored), &look, false);
            match refused {
                None => {
                    assert_eq!(
                        outcome.job,
                        [JobAction::Cancel {
                            job_id: JOB_ID.into()
                        }],
                        "{case}: {outcome:?}"
                    );
                    // What it restores is in status before the cancel is sent.
                    assert!(outcome.recorded_first, "{case}");
                    assert_eq!(
                        outcome.job_status.upgrade_savepoint_path.as_deref(),
                        Some(CHECKPOINT),
                        "{case}: {outcome:?}"
                    );
                }
                Some(part) => {
                    assert!(
                        outcome.job.is_empty() && outcome.own == 0,
                        "{case}: never cancelled: {outcome:?}"
                    );
                    assert_eq!(
                        outcome.reason.as_deref(),
                        Some(Phase::UpdateFailed.as_str()),
                        "{case}"
                    );
                    let error = outcome.error.clone().unwrap_or_default();
                    assert!(
                        error.contains(part)
                            && error.contains("take-savepoint is false")
                            && error.contains("keeps running"),
                        "{case}: {error}"
                    );
                    assert!(
                        (outcome.events.iter())
                            .any(|e| e.warning && e.reason == Reason::UpdateFailed && e.note == error),
                        "{case}: {outcome:?}"
                    );
                    assert_eq!(outcome.recorded["parallelism"], json!(2), "{case}");
                }
            }
        });
    }
}

#[test]
fn a_session_jobs_last_state_upgrade_stops_with_a_savepoint_when_a_cancel_would_lose_its_checkpoint() {
    // (case, the job's state, what a cancel does to the checkpoints, a savepoint directory,
    //  what is done: the cancel, the stop, a wait, or Err(part of the refusal))
    #[derive(Debug, PartialEq)]
    enum Done {
        Cancel,
        Savepoint,
        Wait,
    }
    type Case = (
        &'static str,
        FlinkJobState,
        OnCancel,
        bool,
        Result<Done, &'static str>,
    );
    let cases: [Case; 7] = [
        (
            "retained",
            FlinkJobState::Running,
            OnCancel::Retained,
            true,
            Ok(Done::Cancel),
        ),
        (
            "retained, no savepoint directory",
            FlinkJobState::Running,
            OnCancel::Retained,
            false,
            Ok(Done::Cancel),
        ),
        (
            "deleted",
            FlinkJobState::Running,
            deleted(),
            true,
            Ok(Done::Savepoint),
        ),
        (
            "unknown",
            FlinkJobState::Running,
            unknown(),
            true,
            Ok(Done::Savepoint),
        ),
        (
            "not looked up",
            FlinkJobState::Running,
            OnCancel::NotLooked,
            true,
            Ok(Done::Savepoint),
        ),
        (
            "deleted, restarting",
            FlinkJobState::Restarting,
            deleted(),
            true,
            Ok(Done::Wait),
        ),
        (
            "deleted, no savepoint directory",
            FlinkJobState::Running,
            deleted(),
            false,
            Err("execution.checkpointing.savepoint-dir is not set"),
        ),
    ];
    for (case, state, on_cancel, dir, expected) in cases {
        both(|kind, decide| {
            // An application's last-state change keeps its HA metadata: it never cancels.
            if kind != SessionJob::NAME {
                return;
            }
            let case = format!("{kind} {case}");
            let job = job_spec(UpgradeMode::Savepoint);
            let stored = started(&job, &json!({}), kind);
            // One edit: last-state and a new parallelism.
            let new = with(
                with(job.clone(), "upgradeMode", json!("last-state")),
                "parallelism",
                json!(4),
            );
            let at = |state, on_cancel: OnCancel| Look {
                policy: Policy {
                    savepoint_dir: dir.then(|| "file:/savepoints".to_owned()),
                    ..Policy::status_only()
                },
                latest_checkpoint: Some(5_000),
                on_cancel,
                ..changed(state)
            };
            let (outcome, next) = decide(
                &new,
                &json!({}),
                Some(&stored),
                &at(state.clone(), on_cancel.clone()),
                false,
            );
            match expected {
                Ok(Done::Cancel) => {
                    assert_eq!(
                        outcome.job,
                        [JobAction::Cancel {
                            job_id: JOB_ID.into()
                        }],
                        "{case}: {outcome:?}"
                    );
                    assert!(outcome.recorded_first, "{case}");
                    assert_eq!(
                        outcome.job_status.upgrade_savepoint_path.as_deref(),
                        Some(CHECKPOINT),
                        "{case}: the path it restores is in status before the cancel"
                    );
                    // Cancelled, and Flink no longer reports the checkpoint (its JobManager
                    // forgot the job): the one recorded before the cancel is restored.
                    let gone = Look {
                        latest_checkpoint: None,
                        ..at(FlinkJobState::Canceled, OnCancel::NotLooked)
                    };
                    let (committed, _) = decide(&new, &json!({}), Some(&next), &gone, false);
                    assert_eq!(committed.own, 1, "{case}: started again: {committed:?}");
                    assert_eq!(
                        committed.job_status.upgrade_savepoint_path.as_deref(),
                        Some(CHECKPOINT),
                        "{case}: {committed:?}"
                    );
                    assert_eq!(committed.recorded["parallelism"], json!(4), "{case}");
                }
                Ok(Done::Savepoint) => {
                    assert!(
                        matches!(outcome.job.as_slice(), [JobAction::StopWithSavepoint { .. }]),
                        "{case}: stopped with a savepoint, never cancelled: {outcome:?}"
                    );
                    assert!(outcome.recorded_first, "{case}: the trigger is recorded first");
                    let warned = (outcome.events.iter())
                        .find(|e| e.warning && e.reason == Reason::SpecChanged)
                        .map(|e| e.note.clone())
                        .unwrap_or_default();
                    assert!(
                        warned.starts_with(&format!("Not cancelling job {JOB_ID} for the upgrade"))
                            && warned.contains("stopping it with a savepoint instead"),
                        "{case}: {outcome:?}"
                    );
                    // The stop completes: the new spec starts from its savepoint.
                    let stopped = Look {
                        savepoint: Some(SavepointPoll::Completed("file:/savepoints/savepoint-1".into())),
                        ..at(FlinkJobState::Finished, OnCancel::NotLooked)
                    };
                    let (committed, _) = decide(&new, &json!({}), Some(&next), &stopped, false);
                    assert_eq!(
                        committed.job_status.upgrade_savepoint_path.as_deref(),
                        Some("file:/savepoints/savepoint-1"),
                        "{case}: {committed:?}"
                    );
                    assert_eq!(committed.own, 1, "{case}: started from it");
                }
                Ok(Done::Wait) => {
                    assert!(outcome.job.is_empty() && outcome.own == 0, "{case}: {outcome:?}");
                    assert_eq!(outcome.error, None, "{case}: a wait, not a refusal");
                    assert_eq!(outcome.recorded["parallelism"], json!(2), "{case}");
                }
                Err(part) => {
                    assert!(outcome.job.is_empty() && outcome.own == 0, "{case}: {outcome:?}");
                    let error = outcome.error.clone().unwrap_or_default();
                    assert!(
                        error.contains(part) && error.contains("DELETE_ON_CANCELLATION"),
                        "{case}: {error}"
                    );
                    assert!(
                        (outcome.events.iter()).any(|e| e.warning && e.reason == Reason::UpdateFailed),
                        "{case}: {outcome:?}"
                    );
                }
            }
        });
    }
}

#[test]
fn a_session_job_with_no_completed_checkpoint_yet_is_stopped_with_a_savepoint_not_cancelled() {
    both(|kind, decide| {
        // An application's last-state change keeps its HA metadata: it never cancels.
        if kind != SessionJob::NAME {
            return;
        }
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let new = with(
            with(job.clone(), "upgradeMode", json!("last-state")),
            "parallelism",
            json!(4),
        );
        // Just restored from a savepoint, Flink reports no completed checkpoint of the job:
        // cancelled, it would leave nothing of its own to restore.
        let fresh = |dir: bool| Look {
            policy: Policy {
                savepoint_dir: dir.then(|| "file:/savepoints".to_owned()),
                ..Policy::status_only()
            },
            latest_checkpoint: None,
            on_cancel: OnCancel::Retained,
            ..changed(FlinkJobState::Running)
        };
        let (outcome, _) = decide(&new, &json!({}), Some(&stored), &fresh(true), false);
        assert!(
            matches!(outcome.job.as_slice(), [JobAction::StopWithSavepoint { .. }]),
            "{kind}: stopped with a savepoint, never cancelled: {outcome:?}"
        );
        let (outcome, _) = decide(&new, &json!({}), Some(&stored), &fresh(false), false);
        assert!(
            outcome.job.is_empty(),
            "{kind}: refused, the job left running: {outcome:?}"
        );
        assert!(
            outcome
                .error
                .as_deref()
                .is_some_and(|e| e.contains("no completed checkpoint of the job is known yet")),
            "{kind}: {outcome:?}"
        );
    });
}
