//! A savepoint recorded as a FlinkStateSnapshot (`spec.savepoint.alreadyExists: true`), as
//! the FlinkStateSnapshot loop completes it and the job's loop then sees it, against both
//! kinds: it carries the time stated for it (the operator states its own upgrade
//! savepoints'), or none; with none it ranks below every state of known time, and the
//! restore-age guard refuses it. Recording an old or imported savepoint never makes it the
//! job's newest state.

use flink_operator_api::FlinkStateSnapshot;

use super::*;
use crate::{
    conditions::Phase,
    state_snapshot::decide::{self as snapshot_decide, Target},
};
use flink_operator_api::SnapshotType;

const IMPORTED: &str = "file:/imported/savepoint-0a1b2c-3d4e5f";

/// The FlinkStateSnapshot `name` of the job recording the savepoint at `path`, with the time
/// `stated_ago` ms before [`NOW`] stated for it (None: no time stated), as the
/// FlinkStateSnapshot loop completes it at [`NOW`], and as the job's loop then reads it.
fn recorded(name: &str, path: &str, stated_ago: Option<i64>) -> JobSnapshot {
    let mut snapshot: FlinkStateSnapshot = serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkStateSnapshot",
        "metadata": {"name": name, "namespace": "ns", "uid": "u-1", "generation": 1},
        "spec": {
            "jobReference": {"kind": "FlinkDeployment", "name": "basic"},
            "savepoint": {"path": path, "alreadyExists": true, "disposeOnDelete": false},
        },
    }))
    .unwrap();
    if let Some(ago) = stated_ago {
        snapshot.metadata.annotations = Some(
            [(
                keys::annotations::SAVEPOINT_COMPLETED_AT.to_owned(),
                crate::timestamps::timestamp(NOW - ago),
            )]
            .into(),
        );
    }
    let plan = snapshot_decide::decide(
        &snapshot,
        &snapshot_decide::Observation {
            target: Target::Unreferenced,
            now_ms: NOW,
            ..Default::default()
        },
    );
    snapshot.status = Some(plan.status);
    let seen = snapshot_resources::job_snapshot(&snapshot).unwrap();
    assert_eq!(seen.state, SnapshotState::Completed, "{name}: {seen:?}");
    seen
}

/// What a consumer restored, or why it refused.
#[derive(Debug, PartialEq)]
enum Then {
    Restored(&'static str),
    Refused(&'static str),
}

#[test]
fn a_recorded_savepoint_of_unknown_age_never_outranks_state_of_known_time_nor_passes_the_age_guard() {
    // (case, upgrade mode, Flink's state of the job, a spec change, the latest checkpoint's
    //  age, the recorded savepoint's stated age, policy, what follows)
    type Case = (
        &'static str,
        UpgradeMode,
        FlinkJobState,
        bool,
        Option<i64>,
        Option<i64>,
        Policy,
        Then,
    );
    let restart = Policy {
        restart_failed: true,
        ..Policy::default()
    };
    let guarded_restart = Policy {
        restore_max_state_age_ms: Some(HOUR),
        ..restart.clone()
    };
    let ended_savepoint_job = Policy {
        savepoint_max_age_ms: Some(30 * MIN),
        last_state_fallback: false,
        ..Policy::default()
    };
    let cases: [Case; 8] = [
        (
            "a FAILED job's restart: a 5-minute-old checkpoint, not the imported savepoint",
            UpgradeMode::Savepoint,
            FlinkJobState::Failed,
            false,
            Some(5 * MIN),
            None,
            restart.clone(),
            Then::Restored(CHECKPOINT),
        ),
        (
            "a FAILED job's restart: the imported savepoint, when it is all there is",
            UpgradeMode::Savepoint,
            FlinkJobState::Failed,
            false,
            None,
            None,
            restart.clone(),
            Then::Restored(IMPORTED),
        ),
        (
            "a FAILED job's restart under max-state-age: its unknown age is refused",
            UpgradeMode::Savepoint,
            FlinkJobState::Failed,
            false,
            None,
            None,
            guarded_restart.clone(),
            Then::Refused("the age of savepoint file:/imported/savepoint-0a1b2c-3d4e5f is unknown"),
        ),
        (
            "a FAILED job's restart under max-state-age: a young checkpoint passes",
            UpgradeMode::Savepoint,
            FlinkJobState::Failed,
            false,
            Some(5 * MIN),
            None,
            guarded_restart,
            Then::Restored(CHECKPOINT),
        ),
        (
            "an ended last-state job's change: its checkpoint, not the imported savepoint",
            UpgradeMode::LastState,
            FlinkJobState::Failed,
            true,
            Some(5 * MIN),
            None,
            Policy::default(),
            Then::Restored(CHECKPOINT),
        ),
        (
            "a savepoint job that is not running: no savepoint of unknown age under savepoint.max-age",
            UpgradeMode::Savepoint,
            FlinkJobState::Failed,
            true,
            None,
            None,
            ended_savepoint_job.clone(),
            Then::Refused("needs a running job"),
        ),
        (
            "a savepoint job that is not running: one stated 10 minutes old passes savepoint.max-age",
            UpgradeMode::Savepoint,
            FlinkJobState::Failed,
            true,
            None,
            Some(10 * MIN),
            ended_savepoint_job,
            Then::Restored(IMPORTED),
        ),
        (
            "a FAILED job's restart: a savepoint stated 2 minutes old outranks a 5-minute-old checkpoint",
            UpgradeMode::Savepoint,
            FlinkJobState::Failed,
            false,
            Some(5 * MIN),
            Some(2 * MIN),
            restart,
            Then::Restored(IMPORTED),
        ),
    ];
    for (case, mode, state, change, checkpoint_age, stated_ago, policy, then) in cases {
        both(|kind, decide| {
            let case = format!("{kind} {case}");
            let job = job_spec(mode);
            let stored = started(&job, &json!({}), kind);
            let new = if change {
                with(job.clone(), "parallelism", json!(4))
            } else {
                job.clone()
            };
            let at = Look {
                policy: policy.clone(),
                latest_checkpoint: checkpoint_age,
                snapshots: vec![recorded("imported", IMPORTED, stated_ago)],
                generation: if change { 2 } else { 1 },
                ..with_resources(state.clone())
            };
            let (outcome, _) = decide(&new, &json!({}), Some(&stored), &at, false);
            match then {
                Then::Restored(path) => {
                    assert!(outcome.recorded_first, "{case}: {outcome:?}");
                    assert_eq!(
                        outcome.job_status.upgrade_savepoint_path.as_deref(),
                        Some(path),
                        "{case}: {outcome:?}"
                    );
                    assert_eq!(outcome.own, 1, "{case}: started from it");
                }
                Then::Refused(part) => {
                    assert!(outcome.job.is_empty() && outcome.own == 0, "{case}: {outcome:?}");
                    assert_ne!(
                        outcome.job_status.upgrade_savepoint_path.as_deref(),
                        Some(IMPORTED),
                        "{case}"
                    );
                    let error = outcome.error.clone().unwrap_or_default();
                    assert!(error.contains(part), "{case}: {error}");
                    assert!(
                        matches!(
                            outcome.reason.as_deref().and_then(Phase::from_reason),
                            Some(Phase::Failed | Phase::UpdateFailed)
                        ),
                        "{case}: {outcome:?}"
                    );
                }
            }
        });
    }
}

/// The operator's own upgrade savepoint, recorded as an UPGRADE resource, states the time
/// it completed, so that it keeps ranking by it once the resource is all that holds it.
#[test]
fn an_upgrade_savepoint_recorded_by_the_operator_keeps_its_time() {
    let new = NewSnapshot {
        kind: SnapshotType::Savepoint,
        trigger_type: SnapshotTriggerType::Upgrade,
        at_ms: NOW,
        existing_path: Some("file:/sp/upgrade".into()),
        completed_ms: Some(NOW - 3 * MIN),
        dispose_on_delete: false,
    };
    let mut snapshot = crate::job_actions::new_snapshot(
        &new,
        &new.name("basic"),
        flink_operator_api::JobKind::FlinkDeployment,
        "basic",
        crate::flink::SavepointFormat::Canonical,
    );
    snapshot.metadata.namespace = Some("ns".into());
    let plan = snapshot_decide::decide(
        &snapshot,
        &snapshot_decide::Observation {
            target: Target::Unreferenced,
            now_ms: NOW,
            ..Default::default()
        },
    );
    assert_eq!(
        plan.status.result_timestamp,
        Some(crate::timestamps::timestamp(NOW - 3 * MIN)),
        "{plan:?}"
    );
    // One whose time is not known states none.
    let unknown = crate::job_actions::new_snapshot(
        &NewSnapshot {
            completed_ms: None,
            ..new.clone()
        },
        "basic-x",
        flink_operator_api::JobKind::FlinkDeployment,
        "basic",
        crate::flink::SavepointFormat::Canonical,
    );
    assert_eq!(unknown.metadata.annotations, None);
}

/// A stop-with-savepoint records, before it is sent, the highest checkpoint id the job
/// shows: what its savepoint is told apart by when the JobManager forgets the stop (see
/// [`crate::flink::poll::savepoint_after`]). A savepoint found so is recorded with the
/// time the stop was sent, by the operator's clock, not with the JobManager's or the
/// storage's time, nor with the time it is found.
#[test]
fn a_stop_records_the_jobs_highest_checkpoint_id_first_and_a_late_savepoint_the_time_it_was_sent() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let new = with(job.clone(), "parallelism", json!(4));
        let at = Look {
            checkpoint_id: Some(41),
            ..changed(FlinkJobState::Running)
        };
        let (outcome, stopping) = decide(&new, &json!({}), Some(&stored), &at, false);
        assert!(
            matches!(outcome.job.as_slice(), [JobAction::StopWithSavepoint { .. }]),
            "{kind}: {outcome:?}"
        );
        assert!(outcome.recorded_first, "{kind}");
        let info = outcome.job_status.savepoint_info.clone().unwrap_or_default();
        assert_eq!(
            info.checkpoint_id_at_trigger,
            Some(41),
            "{kind}: recorded before the stop"
        );
        assert_eq!(info.trigger_timestamp, Some(NOW), "{kind}");

        // Found an hour later in the checkpoint history, the JobManager having forgotten it.
        let late = Look {
            later_ms: HOUR,
            ..forgotten(SavepointPoll::UnknownTrigger, found_late())
        };
        let (outcome, _) = decide(&new, &json!({}), Some(&stopping), &late, false);
        assert_eq!(
            outcome.job_status.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/savepoint-late"),
            "{kind}: {outcome:?}"
        );
        let info = outcome.job_status.savepoint_info.clone().unwrap_or_default();
        assert_eq!(
            info.last_savepoint.and_then(|s| s.time_stamp),
            Some(NOW),
            "{kind}: as old as the stop, not as young as its finding"
        );
        assert_eq!(
            info.checkpoint_id_at_trigger, None,
            "{kind}: cleared with the trigger"
        );
    });
}
