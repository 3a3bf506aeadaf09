//! The state a job is started from again, against both kinds: the newest of its latest
//! checkpoint, last savepoint and recorded state, under the restore-age guard
//! (`kubernetes.operator.job.restore.max-state-age`), for a change without a savepoint, a
//! failed job's restart, an ended job's upgrade and a resume.

use flink_operator_api::common::{Checkpoint, CheckpointInfo, Savepoint};

use super::*;
use crate::conditions::Phase;

/// `status` with a last savepoint at `path`, taken `ago` ms before [`NOW`].
fn with_last_savepoint(status: &Status, path: &str, ago: i64) -> Status {
    status.with_job(|job| {
        job.savepoint_info
            .get_or_insert_with(Default::default)
            .last_savepoint = Some(Savepoint {
            time_stamp: Some(NOW - ago),
            location: Some(path.into()),
            trigger_type: Some(SnapshotTriggerType::Manual),
            ..Default::default()
        });
    })
}

/// The refusal's Event: a Warning of `reason` that says what status.error says.
fn assert_refused_with(outcome: &Outcome, reason: Reason, case: &str) {
    let error = outcome.error.clone().unwrap_or_default();
    assert!(
        (outcome.events.iter()).any(|e| e.warning && e.reason == reason && e.note == error),
        "{case}: {outcome:?}"
    );
}

#[test]
fn without_the_upgrade_savepoint_the_newest_state_is_restored_only_while_it_is_young_enough() {
    // (case, the last savepoint's age, the latest checkpoint's age, the allowed age,
    //  Ok(restored path) or Err(part of the refusal, given while the job still runs))
    type Case = (
        &'static str,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Result<&'static str, &'static str>,
    );
    let cases: [Case; 5] = [
        (
            "a young checkpoint",
            None,
            Some(MIN),
            Some(5 * MIN),
            Ok(CHECKPOINT),
        ),
        (
            "the checkpoint, newer than the last savepoint",
            Some(30 * MIN),
            Some(MIN),
            Some(60 * MIN),
            Ok(CHECKPOINT),
        ),
        (
            "the last savepoint when no checkpoint completed",
            Some(30 * MIN),
            None,
            Some(60 * MIN),
            Ok("file:/sp/manual"),
        ),
        (
            "a checkpoint too old",
            None,
            Some(90 * MIN),
            Some(60 * MIN),
            Err("the newest state, checkpoint file:/checkpoints/chk-7, is 90 min old"),
        ),
        (
            "nothing to restore",
            None,
            None,
            None,
            Err("no checkpoint or savepoint of the job is known yet"),
        ),
    ];
    for (case, savepoint_age, checkpoint_age, max_age, expected) in cases {
        both(|kind, decide| {
            let case = format!("{kind} {case}");
            let job = job_spec(UpgradeMode::Savepoint);
            let mut stored = started(&job, &json!({}), kind);
            if let Some(ago) = savepoint_age {
                stored = with_last_savepoint(&stored, "file:/sp/manual", ago);
            }
            let new = with(job.clone(), "parallelism", json!(4));
            let at = |state| Look {
                policy: Policy {
                    take_savepoint: false,
                    restore_max_state_age_ms: max_age,
                    ..Policy::status_only()
                },
                latest_checkpoint: checkpoint_age,
                ..changed(state)
            };
            let (outcome, cancelling) = decide(
                &new,
                &json!({}),
                Some(&stored),
                &at(FlinkJobState::Running),
                false,
            );
            match expected {
                Ok(path) => {
                    let cancel = [JobAction::Cancel {
                        job_id: JOB_ID.into(),
                    }];
                    assert_eq!(outcome.job, cancel, "{case}: {outcome:?}");
                    assert!(outcome.recorded_first, "{case}");
                    // The operator stopped before the cancel reached Flink: cancelled again.
                    let (again, _) = decide(
                        &new,
                        &json!({}),
                        Some(&cancelling),
                        &at(FlinkJobState::Running),
                        false,
                    );
                    assert_eq!(again.job, cancel, "{case}: {again:?}");
                    let (outcome, _) = decide(
                        &new,
                        &json!({}),
                        Some(&cancelling),
                        &at(FlinkJobState::Canceled),
                        false,
                    );
                    assert!(outcome.recorded_first, "{case}: {outcome:?}");
                    assert_eq!(
                        outcome.job_status.upgrade_savepoint_path.as_deref(),
                        Some(path),
                        "{case}: {outcome:?}"
                    );
                    assert_eq!(outcome.recorded["parallelism"], json!(4), "{case}");
                    assert_eq!(outcome.own, 1, "{case}: started from it");
                }
                Err(part) => {
                    assert!(outcome.job.is_empty() && outcome.own == 0, "{case}: {outcome:?}");
                    assert_eq!(
                        outcome.reason.as_deref(),
                        Some(Phase::UpdateFailed.as_str()),
                        "{case}"
                    );
                    let error = outcome.error.clone().unwrap_or_default();
                    assert!(
                        error.contains(part) && error.contains("keeps running"),
                        "{case}: {error}"
                    );
                    assert_refused_with(&outcome, Reason::UpdateFailed, &case);
                    assert_eq!(outcome.recorded["parallelism"], json!(2), "{case}");
                }
            }
        });
    }
}

#[test]
fn without_the_upgrade_savepoint_the_state_is_guarded_again_once_the_job_is_cancelled() {
    // (case, the latest checkpoint's age and how much later the cancelled job is looked at,
    //  part of the refusal)
    let cases = [
        (
            "the checkpoint aged past the guard",
            Some(MIN),
            2 * HOUR,
            "the newest state, checkpoint file:/checkpoints/chk-7, is 2 h 1 min old",
        ),
        // Flink no longer reporting the checkpoint restores the one recorded before the
        // cancel (see `retention.rs`), so that no state is left only when none was known
        // before, which is refused before the cancel.
        (
            "the recorded checkpoint aged past the guard, Flink reporting none",
            None,
            2 * HOUR,
            "the newest state, checkpoint file:/checkpoints/chk-7, is 2 h 1 min old",
        ),
    ];
    for (case, checkpoint_age, later_ms, part) in cases {
        both(|kind, decide| {
            let case = format!("{kind} {case}");
            let job = job_spec(UpgradeMode::Savepoint);
            let stored = started(&job, &json!({}), kind);
            let new = with(job.clone(), "parallelism", json!(4));
            let policy = Policy {
                take_savepoint: false,
                restore_max_state_age_ms: Some(60 * MIN),
                ..Policy::status_only()
            };
            let running = Look {
                policy: policy.clone(),
                latest_checkpoint: Some(MIN),
                ..changed(FlinkJobState::Running)
            };
            let (_, cancelling) = decide(&new, &json!({}), Some(&stored), &running, false);
            let cancelled = Look {
                policy,
                latest_checkpoint: checkpoint_age,
                later_ms,
                ..changed(FlinkJobState::Canceled)
            };
            let (outcome, _) = decide(&new, &json!({}), Some(&cancelling), &cancelled, false);
            assert!(outcome.job.is_empty() && outcome.own == 0, "{case}: {outcome:?}");
            assert_eq!(
                outcome.reason.as_deref(),
                Some(Phase::UpdateFailed.as_str()),
                "{case}"
            );
            let error = outcome.error.clone().unwrap_or_default();
            assert!(error.contains(part), "{case}: {error}");
            assert_refused_with(&outcome, Reason::UpdateFailed, &case);
            assert_eq!(outcome.recorded["parallelism"], json!(2), "{case}");
        });
    }
}

#[test]
fn a_failed_job_is_restarted_from_its_newest_state_when_configured_and_while_it_is_young_enough() {
    // (case, upgrade mode, restart-failed, the latest checkpoint's age, the allowed age,
    //  None: left failed, Some(Ok(restored path)), or Some(Err(part of the refusal)))
    type Case = (
        &'static str,
        UpgradeMode,
        bool,
        Option<i64>,
        Option<i64>,
        Option<Result<Option<&'static str>, &'static str>>,
    );
    let cases: [Case; 8] = [
        (
            "not configured",
            UpgradeMode::Savepoint,
            false,
            Some(MIN),
            None,
            None,
        ),
        (
            "stateless, not configured",
            UpgradeMode::Stateless,
            false,
            None,
            None,
            None,
        ),
        (
            "stateless: from nothing",
            UpgradeMode::Stateless,
            true,
            Some(MIN),
            None,
            Some(Ok(None)),
        ),
        (
            "a young checkpoint",
            UpgradeMode::Savepoint,
            true,
            Some(MIN),
            Some(5 * MIN),
            Some(Ok(Some(CHECKPOINT))),
        ),
        (
            "a young checkpoint, last-state",
            UpgradeMode::LastState,
            true,
            Some(MIN),
            Some(60 * MIN),
            Some(Ok(Some(CHECKPOINT))),
        ),
        (
            "a young checkpoint, no guard",
            UpgradeMode::Savepoint,
            true,
            Some(MIN),
            None,
            Some(Ok(Some(CHECKPOINT))),
        ),
        (
            "an old checkpoint",
            UpgradeMode::Savepoint,
            true,
            Some(120 * MIN),
            Some(60 * MIN),
            Some(Err(
                "restarting the failed job job-1: the newest state, checkpoint file:/checkpoints/chk-7, is 2 h 0 min old",
            )),
        ),
        (
            "no state at all",
            UpgradeMode::LastState,
            true,
            None,
            Some(60 * MIN),
            Some(Err(
                "no checkpoint or savepoint of the job is known to restore from",
            )),
        ),
    ];
    for (case, mode, restart, checkpoint_age, max_age, expected) in cases {
        both(|kind, decide| {
            let case = format!("{kind} {case}");
            let job = job_spec(mode);
            let stored = started(&job, &json!({}), kind);
            let at = Look {
                policy: Policy {
                    restart_failed: restart,
                    restore_max_state_age_ms: max_age,
                    ..Policy::status_only()
                },
                latest_checkpoint: checkpoint_age,
                ..look(FlinkJobState::Failed)
            };
            let (outcome, next) = decide(&job, &json!({}), Some(&stored), &at, false);
            let restarted = outcome.reasons().contains(&Reason::RestartFailedJob);
            match expected {
                None => {
                    assert!(outcome.job.is_empty() && outcome.own == 0, "{case}: {outcome:?}");
                    assert!(!restarted && !outcome.recorded_first, "{case}: {outcome:?}");
                    assert_eq!(outcome.reason.as_deref(), Some(Phase::Failed.as_str()), "{case}");
                }
                Some(Ok(path)) => {
                    assert!(restarted, "{case}: {outcome:?}");
                    assert!(outcome.job.is_empty(), "{case}: {outcome:?}");
                    assert_eq!(outcome.own, 1, "{case}: started again");
                    // The state is recorded before the job is started.
                    assert!(outcome.recorded_first, "{case}");
                    assert_eq!(
                        outcome.reconciliation,
                        Some(ReconciliationState::Upgrading),
                        "{case}"
                    );
                    assert_eq!(
                        outcome.job_status.upgrade_savepoint_path.as_deref(),
                        path,
                        "{case}: {outcome:?}"
                    );
                }
                Some(Err(part)) => {
                    assert!(outcome.job.is_empty() && outcome.own == 0, "{case}: {outcome:?}");
                    assert_eq!(outcome.reason.as_deref(), Some(Phase::Failed.as_str()), "{case}");
                    let error = outcome.error.clone().unwrap_or_default();
                    assert!(error.contains(part), "{case}: {error}");
                    assert_refused_with(&outcome, Reason::RestoreRefused, &case);
                    // Refused again on the next look, without a second Event.
                    let (again, _) = decide(&job, &json!({}), Some(&next), &at, false);
                    assert!(again.job.is_empty() && again.own == 0, "{case}: {again:?}");
                    assert!(again.events.is_empty(), "{case}: {:?}", again.events);
                }
            }
        });
    }
}

#[test]
fn a_manual_checkpoint_does_not_lend_its_time_to_the_checkpoint_a_job_started_from() {
    // The job started from an old checkpoint, then took a manual checkpoint a minute ago,
    // whose entry replaced the started-from one's time; it failed. Were the manual
    // checkpoint's time taken for the started-from checkpoint's, that one would look newer
    // than Flink's latest checkpoint.
    // (the latest checkpoint's age, the allowed age)
    for (checkpoint_age, max_age) in [(5 * MIN, None), (2 * MIN, Some(60 * MIN))] {
        both(|kind, decide| {
            let case = format!("{kind} max-age {max_age:?}");
            let job = job_spec(UpgradeMode::LastState);
            let stored = started(&job, &json!({}), kind).with_job(|job| {
                job.upgrade_savepoint_path = Some("file:/checkpoints/chk-2".into());
                job.checkpoint_info = Some(CheckpointInfo {
                    last_checkpoint: Some(Checkpoint {
                        time_stamp: Some(NOW - MIN),
                        trigger_type: Some(SnapshotTriggerType::Manual),
                        ..Default::default()
                    }),
                    ..Default::default()
                });
            });
            let at = Look {
                policy: Policy {
                    restart_failed: true,
                    restore_max_state_age_ms: max_age,
                    ..Policy::status_only()
                },
                latest_checkpoint: Some(checkpoint_age),
                ..look(FlinkJobState::Failed)
            };
            let (outcome, _) = decide(&job, &json!({}), Some(&stored), &at, false);
            assert_eq!(
                outcome.job_status.upgrade_savepoint_path.as_deref(),
                Some(CHECKPOINT),
                "{case}: the newer latest checkpoint wins: {outcome:?}"
            );
            assert_eq!(outcome.own, 1, "{case}");
        });
    }
}

#[test]
fn an_ended_job_is_upgraded_from_its_last_savepoint_only_while_it_is_young_enough() {
    // (Flink's state of the job, the last savepoint's age, savepoint.max-age, restored)
    let cases = [
        (FlinkJobState::Failed, 20 * MIN, Some(30 * MIN), true),
        (FlinkJobState::Finished, 20 * MIN, Some(30 * MIN), true),
        (FlinkJobState::Canceled, 20 * MIN, Some(30 * MIN), true),
        (FlinkJobState::Failed, 20 * MIN, Some(10 * MIN), false),
        (FlinkJobState::Failed, 30 * MIN, Some(5 * MIN), false),
        (FlinkJobState::Failed, 20 * MIN, None, false),
    ];
    for (state, age, max_age, restored) in cases {
        both(|kind, decide| {
            let case = format!(
                "{kind} {state}, a savepoint {} min old, max-age {max_age:?}",
                age / MIN
            );
            let job = job_spec(UpgradeMode::Savepoint);
            let stored = with_last_savepoint(&started(&job, &json!({}), kind), "file:/sp/last", age);
            let new = with(job.clone(), "parallelism", json!(4));
            let at = |state| Look {
                policy: Policy {
                    savepoint_max_age_ms: max_age,
                    // What a job that has no savepoint to give does otherwise is the next
                    // scenario's.
                    last_state_fallback: false,
                    ..Policy::status_only()
                },
                ..changed(state)
            };
            let (outcome, _) = decide(&new, &json!({}), Some(&stored), &at(state.clone()), false);
            let old = format!("{} min old", age / MIN);
            if restored {
                assert!(outcome.recorded_first, "{case}: {outcome:?}");
                assert_eq!(
                    outcome.job_status.upgrade_savepoint_path.as_deref(),
                    Some("file:/sp/last"),
                    "{case}: {outcome:?}"
                );
                let found = (outcome.events.iter())
                    .find(|e| e.reason == Reason::StateFound)
                    .unwrap_or_else(|| panic!("{case}: {outcome:?}"));
                assert!(found.note.contains(&old), "{case}: {}", found.note);
                assert_eq!(outcome.own, 1, "{case}: started from it");
            } else {
                assert!(outcome.job.is_empty() && outcome.own == 0, "{case}: {outcome:?}");
                assert_eq!(
                    outcome.reason.as_deref(),
                    Some(Phase::UpdateFailed.as_str()),
                    "{case}"
                );
                let error = outcome.error.clone().unwrap_or_default();
                assert!(
                    error.contains("needs a running job") && error.contains("savepoint.max-age"),
                    "{case}: the refusal names the setting that would allow it: {error}"
                );
                if max_age.is_some() {
                    assert!(error.contains(&old), "{case}: {error}");
                }
            }
            // A running job is stopped with a new savepoint, however young the last one is.
            let (outcome, _) = decide(
                &new,
                &json!({}),
                Some(&stored),
                &at(FlinkJobState::Running),
                false,
            );
            assert!(
                matches!(outcome.job.as_slice(), [JobAction::StopWithSavepoint { .. }]),
                "{case}: {outcome:?}"
            );
            // A job that is restarting is waited for, not refused.
            let (outcome, _) = decide(
                &new,
                &json!({}),
                Some(&stored),
                &at(FlinkJobState::Restarting),
                false,
            );
            assert!(outcome.job.is_empty() && outcome.own == 0, "{case}: {outcome:?}");
            assert_eq!(
                outcome.reason.as_deref(),
                Some(Phase::Updating.as_str()),
                "{case}"
            );
        });
    }
}

/// Suspends the job of `stored` (`spec.job.state: suspended`, generation 2), feeding each
/// kind what it waits for (the savepoint of its stop, the end of its cancel, its cluster
/// gone) until it says it is suspended; the status it is left with.
fn suspend(decide: &Decide, kind: &str, job: &Value, stored: Status, at: &Look) -> Status {
    let suspended = with(job.clone(), "state", json!("suspended"));
    let mut status = stored;
    let mut look = Look {
        generation: 2,
        ..at.clone()
    };
    for _ in 0..4 {
        let (outcome, next) = decide(&suspended, &json!({}), Some(&status), &look, false);
        if outcome.lifecycle == Some(ResourceLifecycleState::Suspended) {
            assert_eq!(
                outcome.reason.as_deref(),
                Some(Phase::Suspended.as_str()),
                "{kind}"
            );
            return next;
        }
        status = next;
        look = match outcome.job.as_slice() {
            [JobAction::StopWithSavepoint { .. }] => Look {
                savepoint: Some(SavepointPoll::Completed("file:/sp/suspend".into())),
                state: Some(FlinkJobState::Finished),
                ..look
            },
            [JobAction::Cancel { .. }] => Look {
                state: Some(FlinkJobState::Canceled),
                ..look
            },
            _ => Look {
                state: None,
                gone: true,
                savepoint: None,
                ..look
            },
        };
    }
    panic!("{kind}: not suspended: {status:?}")
}

#[test]
fn a_resume_is_refused_while_the_state_its_suspension_left_is_too_old() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let suspended = suspend(decide, kind, &job, stored, &running_job());
        // Resumed two hours after the suspension's savepoint, one allowed.
        let resume = |max_age_ms| Look {
            policy: Policy {
                restore_max_state_age_ms: Some(max_age_ms),
                ..Policy::status_only()
            },
            generation: 3,
            later_ms: 2 * HOUR,
            ..gone()
        };
        let (outcome, refused) = decide(&job, &json!({}), Some(&suspended), &resume(HOUR), false);
        assert!(outcome.job.is_empty() && outcome.own == 0, "{kind}: {outcome:?}");
        assert!(!outcome.recorded_first, "{kind}");
        assert_eq!(
            outcome.reason.as_deref(),
            Some(Phase::UpdateFailed.as_str()),
            "{kind}"
        );
        let error = outcome.error.clone().unwrap_or_default();
        assert!(
            error.contains("savepoint file:/sp/suspend") && error.contains("2 h 0 min old"),
            "{kind}: the state and its age named: {error}"
        );
        assert_refused_with(&outcome, Reason::UpdateFailed, kind);
        assert_eq!(
            outcome.lifecycle,
            Some(ResourceLifecycleState::Suspended),
            "{kind}"
        );
        // The refusal holds for this generation, without a second Event.
        let (again, _) = decide(&job, &json!({}), Some(&refused), &resume(HOUR), false);
        assert!(again.job.is_empty() && again.own == 0, "{kind}: {again:?}");
        assert!(again.events.is_empty(), "{kind}: {:?}", again.events);
        assert_eq!(
            again.reason.as_deref(),
            Some(Phase::UpdateFailed.as_str()),
            "{kind}"
        );
        // Young enough: resumed from it.
        let (outcome, _) = decide(&job, &json!({}), Some(&suspended), &resume(3 * HOUR), false);
        assert!(outcome.recorded_first, "{kind}: {outcome:?}");
        assert_eq!(
            outcome.job_status.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/suspend"),
            "{kind}"
        );
        assert_eq!(outcome.own, 1, "{kind}: started from it");
    });
}

#[test]
fn a_last_state_suspension_records_its_checkpoints_age_for_the_resume_guard() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::LastState);
        let stored = started(&job, &json!({}), kind);
        let policy = Policy {
            restore_max_state_age_ms: Some(HOUR),
            ..Policy::status_only()
        };
        // Suspending is not guarded: the state is kept for the resume.
        let at = Look {
            policy: policy.clone(),
            latest_checkpoint: Some(90 * MIN),
            ..running_job()
        };
        let suspended = suspend(decide, kind, &job, stored, &at);
        assert_eq!(
            job_status_of(&suspended)
                .checkpoint_info
                .and_then(|i| i.last_checkpoint)
                .and_then(|c| c.time_stamp),
            Some(NOW - 90 * MIN),
            "{kind}"
        );
        let resume = Look {
            policy,
            generation: 3,
            ..gone()
        };
        let (outcome, _) = decide(&job, &json!({}), Some(&suspended), &resume, false);
        assert!(outcome.job.is_empty() && outcome.own == 0, "{kind}: {outcome:?}");
        // An application resumes from its high-availability metadata, which keeps the
        // checkpoint under no path of its own.
        let checkpoint = match kind {
            "FlinkDeployment" => "checkpoint in the high-availability metadata",
            _ => "checkpoint file:/checkpoints/chk-7",
        };
        let error = outcome.error.clone().unwrap_or_default();
        assert!(
            error.contains(&format!(
                "resuming: the newest state, {checkpoint}, is 90 min old"
            )),
            "{kind}: {error}"
        );
    });
}

/// A savepoint job that is not running has no savepoint to give a change: an application,
/// whose high-availability metadata holds a checkpoint, keeps that last state
/// (`kubernetes.operator.job.upgrade.last-state-fallback.enabled`, on by default); a session
/// job, whose session cluster keeps nothing of it, waits for it to run. Without the fallback
/// both wait.
#[test]
fn a_savepoint_job_that_is_not_running_falls_back_to_the_last_state_its_cluster_keeps() {
    for fallback in [true, false] {
        both(|kind, decide| {
            let case = format!("{kind}, fallback {fallback}");
            let job = job_spec(UpgradeMode::Savepoint);
            let stored = started(&job, &json!({}), kind);
            let new = with(job.clone(), "parallelism", json!(4));
            let at = Look {
                policy: Policy {
                    last_state_fallback: fallback,
                    ..Policy::status_only()
                },
                latest_checkpoint: Some(MIN),
                ..changed(FlinkJobState::Restarting)
            };
            let (outcome, _) = decide(&new, &json!({}), Some(&stored), &at, false);
            if fallback && kind == Application::NAME {
                assert!(outcome.recorded_first && outcome.own == 1, "{case}: {outcome:?}");
                assert!(
                    outcome.job.is_empty(),
                    "{case}: no savepoint asked for: {outcome:?}"
                );
                assert!(
                    (outcome.events.iter()).any(|e| e.note.contains("high-availability metadata")),
                    "{case}: {outcome:?}"
                );
            } else {
                assert!(outcome.job.is_empty() && outcome.own == 0, "{case}: {outcome:?}");
                assert_eq!(
                    outcome.reason.as_deref(),
                    Some(Phase::Updating.as_str()),
                    "{case}"
                );
            }
        });
    }
}

/// A last-state change of a running job whose latest checkpoint is older than
/// `kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age` stops it with a
/// savepoint instead, so that the next job does not go back that far; with a younger
/// checkpoint the change is the last-state one it always was.
#[test]
fn a_last_state_change_takes_a_savepoint_when_the_latest_checkpoint_is_too_old() {
    for (checkpoint_age, savepoint) in [(10 * MIN, true), (MIN, false)] {
        both(|kind, decide| {
            let case = format!("{kind}, a checkpoint {} min old", checkpoint_age / MIN);
            let job = job_spec(UpgradeMode::LastState);
            let stored = started(&job, &json!({}), kind);
            let new = with(job.clone(), "parallelism", json!(4));
            let at = Look {
                policy: Policy {
                    last_state_max_checkpoint_age_ms: Some(5 * MIN),
                    savepoint_dir: Some("file:/savepoints".into()),
                    ..Policy::status_only()
                },
                latest_checkpoint: Some(checkpoint_age),
                ..changed(FlinkJobState::Running)
            };
            let (outcome, _) = decide(&new, &json!({}), Some(&stored), &at, false);
            let stopped = matches!(outcome.job.as_slice(), [JobAction::StopWithSavepoint { .. }]);
            assert_eq!(stopped, savepoint, "{case}: {outcome:?}");
        });
    }
}
