//! Snapshots a running job is asked for, against both kinds: by a nonce, periodically, and
//! the savepoint history they join, with its retention.

use flink_operator_api::common::Savepoint;

use super::*;
use crate::{conditions::Phase, lifecycle::FAST};

#[test]
fn snapshots_asked_for_by_a_nonce_are_recorded_before_they_are_triggered_and_settled_into_status() {
    for (field, kind_of, trigger, completed, reason) in [
        (
            "savepointTriggerNonce",
            "savepoint",
            JobAction::TriggerSavepoint {
                job_id: JOB_ID.into(),
                trigger_id: "trigger-1".into(),
            },
            Reason::SavepointCompleted,
            Reason::SavepointTriggered,
        ),
        (
            "checkpointTriggerNonce",
            "checkpoint",
            JobAction::TriggerCheckpoint {
                job_id: JOB_ID.into(),
                trigger_id: "trigger-1".into(),
            },
            Reason::CheckpointCompleted,
            Reason::CheckpointTriggered,
        ),
    ] {
        both(|kind, decide| {
            let case = format!("{kind} {kind_of}");
            let job = job_spec(UpgradeMode::Savepoint);
            let stored = started(&job, &json!({}), kind);
            let asked = |nonce: i64| with(job.clone(), field, json!(nonce));
            let (outcome, triggered) = decide(&asked(7), &json!({}), Some(&stored), &running_job(), false);
            assert_eq!(outcome.job, std::slice::from_ref(&trigger), "{case}");
            assert_eq!(outcome.own, 0, "{case}");
            assert!(outcome.recorded_first, "{case}: the trigger id is recorded first");
            assert!(!outcome.written_twice, "{case}: nothing more to write after it");
            assert_eq!(outcome.reasons(), [reason], "{case}");
            assert_eq!(outcome.reason.as_deref(), Some(Phase::Running.as_str()), "{case}");
            assert_eq!(outcome.recorded[field], json!(7), "{case}: the nonce is recorded");
            let (trigger_type, trigger_id) = match kind_of {
                "savepoint" => {
                    let info = outcome.job_status.savepoint_info.clone().unwrap_or_default();
                    (info.trigger_type, info.trigger_id)
                }
                _ => {
                    let info = outcome.job_status.checkpoint_info.clone().unwrap_or_default();
                    (info.trigger_type, info.trigger_id)
                }
            };
            assert_eq!(trigger_type, Some(SnapshotTriggerType::Manual), "{case}");
            assert_eq!(trigger_id.as_deref(), Some("trigger-1"), "{case}");

            // What Flink answers of the snapshot under way.
            let polled = |poll: SavepointPoll, state| Look {
                savepoint: (kind_of == "savepoint").then(|| poll.clone()),
                checkpoint: (kind_of == "checkpoint").then_some(poll),
                trigger_id: "trigger-2",
                ..look(state)
            };
            // The operator stopped before the trigger reached Flink: sent again under the
            // recorded id.
            let (outcome, _) = decide(
                &asked(7),
                &json!({}),
                Some(&triggered),
                &polled(SavepointPoll::UnknownTrigger, FlinkJobState::Running),
                false,
            );
            assert_eq!(outcome.job, std::slice::from_ref(&trigger), "{case}");

            // Under way, or the JobManager silent: nothing is sent twice, looked at again soon.
            for pending in [
                SavepointPoll::InProgress,
                SavepointPoll::Unreachable("timeout".into()),
            ] {
                let (outcome, _) = decide(
                    &asked(7),
                    &json!({}),
                    Some(&triggered),
                    &polled(pending.clone(), FlinkJobState::Running),
                    false,
                );
                assert!(
                    outcome.job.is_empty() && outcome.events.is_empty(),
                    "{case} {pending:?}: {outcome:?}"
                );
                assert_eq!(outcome.requeue, FAST, "{case} {pending:?}");
            }

            let result = match kind_of {
                "savepoint" => "file:/sp/7",
                _ => "42",
            };
            let (outcome, done) = decide(
                &asked(7),
                &json!({}),
                Some(&triggered),
                &polled(SavepointPoll::Completed(result.into()), FlinkJobState::Running),
                false,
            );
            assert!(outcome.job.is_empty(), "{case}");
            assert_eq!(outcome.reasons(), [completed], "{case}");
            let job_status = job_status_of(&done);
            if kind_of == "savepoint" {
                let info = job_status.savepoint_info.expect("savepoint info");
                assert_eq!(info.trigger_id, None, "{case}");
                let last = info.last_savepoint.expect("the last savepoint");
                assert_eq!(last.location.as_deref(), Some("file:/sp/7"), "{case}");
                assert_eq!(last.trigger_nonce, Some(7), "{case}");
                assert_eq!(last.trigger_type, Some(SnapshotTriggerType::Manual), "{case}");
                assert_eq!(info.savepoint_history, Some(vec![last]), "{case}");
            } else {
                let info = job_status.checkpoint_info.expect("checkpoint info");
                assert_eq!(info.trigger_id, None, "{case}");
                let last = info.last_checkpoint.expect("the last checkpoint");
                assert_eq!(last.trigger_nonce, Some(7), "{case}");
                assert_eq!(last.time_stamp, Some(NOW), "{case}");
            }
            // The same nonce asks for nothing more; a new one for another snapshot.
            let (outcome, _) = decide(&asked(7), &json!({}), Some(&done), &running_job(), false);
            assert!(outcome.job.is_empty(), "{case}: {outcome:?}");
            let again = Look {
                generation: 2,
                ..running_job()
            };
            let (outcome, _) = decide(&asked(8), &json!({}), Some(&done), &again, false);
            assert_eq!(outcome.job.len(), 1, "{case}: {outcome:?}");

            // Failed: said, cleared, and not tried again for the same nonce.
            let (outcome, failed) = decide(
                &asked(7),
                &json!({}),
                Some(&triggered),
                &polled(SavepointPoll::Failed("disk full".into()), FlinkJobState::Running),
                false,
            );
            assert!(outcome.job.is_empty(), "{case}");
            assert!(
                (outcome.events.iter()).any(|e| e.warning && e.note.contains("disk full")),
                "{case}: {outcome:?}"
            );
            let (outcome, _) = decide(&asked(7), &json!({}), Some(&failed), &running_job(), false);
            assert!(outcome.job.is_empty(), "{case}: {outcome:?}");

            // A job that is not running: the nonce waits, unrecorded.
            let (outcome, _) = decide(
                &asked(7),
                &json!({}),
                Some(&stored),
                &look(FlinkJobState::Restarting),
                false,
            );
            assert!(outcome.job.is_empty(), "{case}: {outcome:?}");
            assert!(!outcome.recorded_first, "{case}");
            assert_eq!(outcome.recorded[field], Value::Null, "{case}");
        });
    }
}

#[test]
fn a_spec_change_waits_for_a_pending_manual_savepoint_then_goes_ahead_in_the_same_look() {
    both(|kind, decide| {
        let job = with(
            job_spec(UpgradeMode::Savepoint),
            "savepointTriggerNonce",
            json!(1),
        );
        let stored = started(&job_spec(UpgradeMode::Savepoint), &json!({}), kind);
        let asked = Look {
            generation: 2,
            ..running_job()
        };
        let (_, triggered) = decide(&job, &json!({}), Some(&stored), &asked, false);
        let new = with(job.clone(), "parallelism", json!(4));
        let at = |poll| Look {
            savepoint: Some(poll),
            trigger_id: "trigger-2",
            generation: 3,
            ..running_job()
        };
        let (outcome, _) = decide(
            &new,
            &json!({}),
            Some(&triggered),
            &at(SavepointPoll::InProgress),
            false,
        );
        assert!(outcome.job.is_empty() && outcome.own == 0, "{kind}: {outcome:?}");
        assert_eq!(
            outcome.reason.as_deref(),
            Some(Phase::Updating.as_str()),
            "{kind}"
        );
        let done = at(SavepointPoll::Completed("file:/sp/manual".into()));
        let (outcome, _) = decide(&new, &json!({}), Some(&triggered), &done, false);
        assert_eq!(
            outcome.job,
            [JobAction::StopWithSavepoint {
                job_id: JOB_ID.into(),
                trigger_id: "trigger-2".into(),
                drain: false
            }],
            "{kind}"
        );
        assert!(outcome.recorded_first, "{kind}");
        let info = outcome.job_status.savepoint_info.unwrap_or_default();
        assert_eq!(
            info.last_savepoint.and_then(|s| s.location).as_deref(),
            Some("file:/sp/manual"),
            "{kind}: the manual savepoint is recorded with the stop"
        );
        assert_eq!(info.trigger_type, Some(SnapshotTriggerType::Upgrade), "{kind}");
    });
}

#[test]
fn a_manual_checkpoint_polled_as_its_job_fails_keeps_the_time_of_the_checkpoint_recorded_at_the_failure() {
    // The job failed with a manual checkpoint under way, seen completed in the same look as
    // the failure: the failure records Flink's latest checkpoint with its time, which the
    // manual checkpoint's entry must not drop, else an older savepoint would outrank it at
    // a later restore or deletion that only has status to go by.
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind).with_job(|job| {
            job.savepoint_info = Some(flink_operator_api::common::SavepointInfo {
                last_savepoint: Some(Savepoint {
                    time_stamp: Some(NOW - 10 * MIN),
                    location: Some("file:/sp/older".into()),
                    trigger_type: Some(SnapshotTriggerType::Manual),
                    ..Default::default()
                }),
                ..Default::default()
            });
        });
        let asked = with(job.clone(), "checkpointTriggerNonce", json!(1));
        let (_, triggered) = decide(&asked, &json!({}), Some(&stored), &running_job(), false);
        let failed = Look {
            checkpoint: Some(SavepointPoll::Completed("7".into())),
            trigger_id: "trigger-2",
            latest_checkpoint: Some(MIN),
            ..look(FlinkJobState::Failed)
        };
        let (outcome, _) = decide(&asked, &json!({}), Some(&triggered), &failed, false);
        assert!(
            outcome.reasons().contains(&Reason::CheckpointCompleted),
            "{kind}: {outcome:?}"
        );
        let recorded = crate::lifecycle::restore::recorded(&outcome.job_status);
        assert_eq!(
            recorded.as_ref().map(|r| (r.path.as_str(), r.timestamp_ms)),
            Some((CHECKPOINT, Some(NOW - MIN))),
            "{kind}: {outcome:?}"
        );
        let newest = crate::lifecycle::restore::newest(&outcome.job_status, None);
        assert_eq!(newest.map(|s| s.path).as_deref(), Some(CHECKPOINT), "{kind}");
    });
}

#[test]
fn periodic_savepoints_fall_due_an_interval_apart_and_join_the_history() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let hourly = |started_ago, later_ms, savepoint| Look {
            policy: Policy {
                periodic_savepoint: Some(Schedule::Every(HOUR)),
                ..Policy::status_only()
            },
            started_ago,
            later_ms,
            savepoint,
            ..running_job()
        };
        // Not at the start, nor before an interval has passed.
        for minutes in [0, 30, 59] {
            let (outcome, _) = decide(
                &job,
                &json!({}),
                Some(&stored),
                &hourly(minutes * MIN, 0, None),
                false,
            );
            assert!(outcome.job.is_empty(), "{kind} {minutes} min: {outcome:?}");
        }
        for minutes in [60, 61] {
            let (outcome, _) = decide(
                &job,
                &json!({}),
                Some(&stored),
                &hourly(minutes * MIN, 0, None),
                false,
            );
            assert_eq!(outcome.job.len(), 1, "{kind} {minutes} min: due: {outcome:?}");
        }
        // Due: the trigger is recorded first, with no nonce.
        let (outcome, triggered) = decide(&job, &json!({}), Some(&stored), &hourly(HOUR, 0, None), false);
        assert_eq!(
            outcome.job,
            [JobAction::TriggerSavepoint {
                job_id: JOB_ID.into(),
                trigger_id: "trigger-1".into()
            }],
            "{kind}"
        );
        assert!(outcome.recorded_first, "{kind}");
        let info = outcome.job_status.savepoint_info.clone().unwrap_or_default();
        assert_eq!(info.trigger_type, Some(SnapshotTriggerType::Periodic), "{kind}");
        assert_eq!(info.trigger_timestamp, Some(NOW), "{kind}");
        assert_eq!(outcome.recorded, job, "{kind}: the recorded spec is as it was");
        // In progress: nothing new.
        let pending = hourly(HOUR, 0, Some(SavepointPoll::InProgress));
        let (outcome, _) = decide(&job, &json!({}), Some(&triggered), &pending, false);
        assert!(outcome.job.is_empty(), "{kind}: {outcome:?}");
        // Completed: the last savepoint and in the history; the schedule moves to the
        // trigger, so that ten minutes later none is due.
        let completed = Some(SavepointPoll::Completed("file:/sp/periodic-1".into()));
        let (outcome, done) = decide(
            &job,
            &json!({}),
            Some(&triggered),
            &hourly(HOUR, 0, completed),
            false,
        );
        assert!(outcome.job.is_empty(), "{kind}: {outcome:?}");
        let info = job_status_of(&done).savepoint_info.unwrap_or_default();
        assert_eq!(info.trigger_id, None, "{kind}");
        let last = info.last_savepoint.expect("the last savepoint");
        assert_eq!(last.location.as_deref(), Some("file:/sp/periodic-1"), "{kind}");
        assert_eq!(last.trigger_type, Some(SnapshotTriggerType::Periodic), "{kind}");
        assert_eq!(last.trigger_nonce, None, "{kind}");
        assert_eq!(info.savepoint_history, Some(vec![last]), "{kind}");
        assert_eq!(info.last_periodic_savepoint_timestamp, Some(NOW), "{kind}");
        let later = hourly(HOUR + 10 * MIN, 10 * MIN, None);
        let (outcome, _) = decide(&job, &json!({}), Some(&done), &later, false);
        assert!(outcome.job.is_empty(), "{kind}: not due again: {outcome:?}");
        // Failed: nothing recorded, said, and the next one waits a whole interval.
        let failed = Some(SavepointPoll::Failed("disk full".into()));
        let (outcome, failed) = decide(
            &job,
            &json!({}),
            Some(&triggered),
            &hourly(HOUR, 0, failed),
            false,
        );
        let info = job_status_of(&failed).savepoint_info.unwrap_or_default();
        assert_eq!((info.trigger_id, info.last_savepoint), (None, None), "{kind}");
        assert_eq!(info.last_periodic_savepoint_timestamp, Some(NOW), "{kind}");
        let said = (outcome.events.iter())
            .find(|e| e.reason == Reason::SavepointFailed)
            .unwrap_or_else(|| panic!("{kind}: {outcome:?}"));
        assert!(
            said.warning && said.note.contains("periodic savepoint"),
            "{kind}: {}",
            said.note
        );
        let (outcome, _) = decide(&job, &json!({}), Some(&failed), &later, false);
        assert!(outcome.job.is_empty(), "{kind}: {outcome:?}");
    });
}

#[test]
fn the_savepoint_history_is_trimmed_by_count_and_age_keeping_the_newest_and_disposed_of_only_with_cleanup() {
    // Savepoint n, taken this many minutes ago; the newest is the last savepoint.
    let history: Vec<Savepoint> = [(5, 300), (4, 200), (3, 100), (2, 10), (1, 1)]
        .iter()
        .map(|(n, ago)| Savepoint {
            time_stamp: Some(NOW - ago * MIN),
            location: Some(format!("file:/sp/{n}")),
            ..Default::default()
        })
        .collect();
    // (case, history max count, max age, cleanup, the savepoints that leave it, oldest first)
    let cases = [
        ("count 3", 3, 24 * HOUR, true, vec!["file:/sp/5", "file:/sp/4"]),
        (
            "age 150 min",
            10,
            150 * MIN,
            true,
            vec!["file:/sp/5", "file:/sp/4"],
        ),
        (
            "age 1 s keeps the newest",
            10,
            1_000,
            true,
            vec!["file:/sp/5", "file:/sp/4", "file:/sp/3", "file:/sp/2"],
        ),
        ("within limits", 10, 24 * HOUR, true, vec![]),
        (
            "count 1 without cleanup",
            1,
            24 * HOUR,
            false,
            vec!["file:/sp/5", "file:/sp/4", "file:/sp/3", "file:/sp/2"],
        ),
    ];
    for (case, count, max_age, cleanup, dropped) in cases {
        both(|kind, decide| {
            let case = format!("{kind} {case}");
            let job = job_spec(UpgradeMode::Savepoint);
            let stored = started(&job, &json!({}), kind).with_job(|job| {
                let info = job.savepoint_info.get_or_insert_with(Default::default);
                info.last_savepoint = history.last().cloned();
                info.savepoint_history = Some(history.clone());
            });
            let policy = Policy {
                history_max_count: count,
                history_max_age_ms: max_age,
                history_cleanup: cleanup,
                ..Policy::status_only()
            };
            let at = Look {
                policy: policy.clone(),
                // Nobody else in the namespace needs them.
                history_needed_by: nobody_needs(&history),
                ..running_job()
            };
            let (outcome, next) = decide(&job, &json!({}), Some(&stored), &at, false);
            let disposed: Vec<JobAction> = (dropped.iter())
                .filter(|_| cleanup)
                .map(|path| JobAction::DisposeSavepoint {
                    path: path.to_string(),
                })
                .collect();
            assert_eq!(outcome.job, disposed, "{case}");
            // Written after the disposals: a failed disposal keeps them in the history.
            assert!(!outcome.recorded_first, "{case}");
            let kept: Vec<String> = (job_status_of(&next).savepoint_info)
                .and_then(|i| i.savepoint_history)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|s| s.location)
                .collect();
            let expected: Vec<String> = (history.iter())
                .filter_map(|s| s.location.clone())
                .filter(|p| !dropped.contains(&p.as_str()))
                .collect();
            assert_eq!(kept, expected, "{case}");
            if let Some(oldest) = dropped.first() {
                assert!(
                    outcome.events.iter().any(|e| e.note.contains(oldest)),
                    "{case}: {outcome:?}"
                );
            }
            // A job that is not running keeps its history for now.
            let restarting = Look {
                policy,
                ..look(FlinkJobState::Restarting)
            };
            let (outcome, _) = decide(&job, &json!({}), Some(&stored), &restarting, false);
            assert!(outcome.job.is_empty(), "{case}: {outcome:?}");
        });
    }
}

/// A job may have been started from a path another job recorded: the trim disposes of no
/// savepoint another job resource of the namespace may still need, as a FlinkStateSnapshot's
/// deletion does not, and says so with the same Warning; a path its observation did not look
/// up (the history grew at this look) waits for the next look.
#[test]
fn the_savepoint_history_disposes_of_nothing_another_job_of_the_namespace_may_still_need() {
    let history: Vec<Savepoint> = [(3, 300), (2, 200), (1, 1)]
        .iter()
        .map(|(n, ago)| Savepoint {
            time_stamp: Some(NOW - ago * MIN),
            location: Some(format!("file:/sp/{n}")),
            ..Default::default()
        })
        .collect();
    let other =
        "FlinkDeployment other: the state its job was started from (status.jobStatus.upgradeSavepointPath)";
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind).with_job(|job| {
            let info = job.savepoint_info.get_or_insert_with(Default::default);
            info.last_savepoint = history.last().cloned();
            info.savepoint_history = Some(history.clone());
        });
        let policy = Policy {
            history_max_count: 1,
            ..Policy::status_only()
        };
        let needed = Look {
            policy: policy.clone(),
            history_needed_by: [
                ("file:/sp/3", vec![other.to_owned()]),
                ("file:/sp/2", vec![]),
                ("file:/sp/1", vec![]),
            ]
            .into_iter()
            .map(|(path, who)| (path.to_owned(), who))
            .collect(),
            ..running_job()
        };
        let (outcome, next) = decide(&job, &json!({}), Some(&stored), &needed, false);
        // Both leave the history; only the one nobody needs is disposed of.
        assert_eq!(
            outcome.job,
            [JobAction::DisposeSavepoint {
                path: "file:/sp/2".into()
            }],
            "{kind}"
        );
        let left: Vec<String> = (job_status_of(&next).savepoint_info)
            .and_then(|i| i.savepoint_history)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|s| s.location)
            .collect();
        assert_eq!(left, ["file:/sp/1"], "{kind}");
        let warning = (outcome.events.iter())
            .find(|e| e.reason == Reason::SavepointNotDisposed)
            .unwrap_or_else(|| panic!("{kind}: {outcome:?}"));
        assert!(warning.warning, "{kind}");
        // Worded as a FlinkStateSnapshot's deletion words it.
        let protected = crate::lifecycle::protected::not_disposed(
            "file:/sp/3",
            &crate::lifecycle::protected::still_needed(&[other.to_owned()]),
        );
        assert_eq!(warning.note, protected, "{kind}");
        let disposing = (outcome.events.iter())
            .find(|e| e.reason == Reason::SavepointsDisposed)
            .unwrap_or_else(|| panic!("{kind}: {outcome:?}"));
        assert!(
            disposing.note.contains("file:/sp/2") && !disposing.note.contains("file:/sp/3"),
            "{kind}: {}",
            disposing.note
        );

        // Not looked up at this look: nothing leaves or is disposed of yet, and the resource
        // is looked at again soon, when its observation looks them up.
        let unlooked = Look {
            policy,
            ..running_job()
        };
        let (outcome, next) = decide(&job, &json!({}), Some(&stored), &unlooked, false);
        assert!(outcome.job.is_empty(), "{kind}: {outcome:?}");
        assert_eq!(
            job_status_of(&next)
                .savepoint_info
                .and_then(|i| i.savepoint_history),
            Some(history.clone()),
            "{kind}"
        );
        assert_eq!(outcome.requeue, FAST, "{kind}");
    });
}
