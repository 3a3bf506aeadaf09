use super::*;
use crate::{
    events::Reason,
    lifecycle::{SLOW, WAIT},
};
use flink_operator_api::common::SnapshotTriggerType;
use flink_operator_api::common::{JobStatus, ReconciliationState, ResourceLifecycleState, UpgradeMode};
use flink_operator_api::keys;
use serde_json::{Value, json};

use crate::fixtures::{NOW, condition};

fn resource(
    spec: Value,
    status: Option<FlinkSessionJobStatus>,
    finalizer: bool,
    deleting: bool,
    generation: i64,
) -> FlinkSessionJob {
    let mut value = json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
        "metadata": {"name": "counter", "namespace": "ns", "uid": "u", "generation": generation},
        "spec": spec,
    });
    if finalizer {
        value["metadata"]["finalizers"] = json!([keys::finalizers::FLINK_SESSION_JOB]);
    }
    if deleting {
        value["metadata"]["deletionTimestamp"] = json!("2027-01-15T08:00:00Z");
    }
    let mut sj: FlinkSessionJob = serde_json::from_value(value).unwrap();
    sj.status = status;
    sj
}

fn spec(mode: &str) -> Value {
    json!({"deploymentName": "session",
           "flinkConfiguration": {"pipeline.max-parallelism": "8", "kubernetes.operator.job.savepoint-on-deletion": "true"},
           "job": {"jarURI": "file:///jobs/job.jar", "entryClass": "jobs.Counter", "args": ["--keys", "4"],
                   "parallelism": 2, "upgradeMode": mode}})
}

/// The spec of `mode` with a changed parallelism and, optionally, a desired job state.
fn changed(mode: &str, state: Option<&str>) -> Value {
    let mut spec = spec(mode);
    spec["job"]["parallelism"] = json!(1);
    if let Some(state) = state {
        spec["job"]["state"] = json!(state);
    }
    spec
}

fn obs(session: SessionObservation, job: Option<JobObservation>) -> Observation {
    Observation {
        session,
        job,
        fresh_trigger_id: "trigger".into(),
        fresh_job_id: "new-job".into(),
        now_ms: NOW,
        policy: Policy::status_only(),
        // As the operator submits every job: its checkpoints outlive a cancellation.
        on_cancel: crate::lifecycle::retention::OnCancel::Retained,
        ..Default::default()
    }
}

fn ready(job: Option<JobObservation>) -> Observation {
    obs(SessionObservation::Ready, job)
}

fn found(state: FlinkJobState) -> Option<JobObservation> {
    Some(JobObservation::found(state, Some(NOW - 1000)))
}

fn not_found() -> Option<JobObservation> {
    Some(JobObservation::NotFound)
}

fn reason(status: &FlinkSessionJobStatus) -> &str {
    condition(status, "Ready").reason.as_deref().unwrap()
}

fn submission(plan: &Plan) -> &Submission {
    plan.actions
        .iter()
        .find_map(|a| match a {
            Action::Submit(s) => Some(s),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no submission in {:?}", plan.actions))
}

fn recorded_spec(status: &FlinkSessionJobStatus) -> FlinkSessionJobSpec {
    status
        .reconciliation_status
        .as_ref()
        .unwrap()
        .last_reconciled_spec()
        .unwrap()
        .unwrap()
}

fn reconciliation_state(status: &FlinkSessionJobStatus) -> Option<ReconciliationState> {
    status.reconciliation_status.as_ref().unwrap().state
}

fn job(status: &FlinkSessionJobStatus) -> &JobStatus {
    status.job_status.as_ref().unwrap()
}

/// The stored status of a job that runs `spec(mode)` as job `old-job`.
fn running(mode: &str) -> FlinkSessionJobStatus {
    let first = decide(
        &resource(spec(mode), None, true, false, 1),
        &Observation {
            fresh_job_id: "old-job".into(),
            ..ready(None)
        },
    );
    let submitted = first.status;
    decide(
        &resource(spec(mode), Some(submitted), true, false, 1),
        &ready(found(FlinkJobState::Running)),
    )
    .status
}

#[test]
fn a_job_waits_for_its_session_cluster_with_one_message_and_one_event() {
    let cases = [
        (
            SessionObservation::Missing,
            "FlinkDeployment session does not exist",
        ),
        (SessionObservation::NotSession, "is an application cluster"),
        (SessionObservation::Deleting, "is being deleted"),
        (
            SessionObservation::NotReady("its JobManager is DEPLOYING".into()),
            "its JobManager is DEPLOYING",
        ),
    ];
    for (session, why) in cases {
        let plan = decide(
            &resource(spec("stateless"), None, false, false, 1),
            &obs(session.clone(), None),
        );
        assert_eq!(plan.actions, [Action::AddFinalizer], "{session:?}");
        let error = plan.status.error.clone().unwrap();
        assert!(
            error.starts_with("waiting for session cluster session: "),
            "{error}"
        );
        assert!(error.contains(why), "{error}");
        assert_eq!(plan.status.lifecycle_state, Some(ResourceLifecycleState::Created));
        assert_eq!(reason(&plan.status), Phase::Deploying.as_str());
        assert_eq!(plan.requeue, WAIT);
        assert_eq!(plan.events.len(), 1);
        // The next reconcile finds the same message stored: no second Event.
        let again = decide(
            &resource(spec("stateless"), Some(plan.status), true, false, 1),
            &obs(session, None),
        );
        assert!(again.events.is_empty(), "{:?}", again.events);
        assert!(again.actions.is_empty());
    }
}

#[test]
fn the_first_submission_is_recorded_with_its_job_id_before_it_is_sent() {
    let mut with_savepoint = spec("savepoint");
    with_savepoint["job"]["initialSavepointPath"] = json!("file:/sp/initial");
    with_savepoint["job"]["allowNonRestoredState"] = json!(true);
    let plan = decide(
        &resource(with_savepoint.clone(), None, false, false, 1),
        &ready(None),
    );
    let expected = Submission {
        job_id: "new-job".into(),
        jar_uri: Some("file:///jobs/job.jar".into()),
        entry_class: Some("jobs.Counter".into()),
        args: vec!["--keys".into(), "4".into()],
        parallelism: Some(2),
        restore_path: Some("file:/sp/initial".into()),
        allow_non_restored_state: Some(true),
        // A savepoint-mode job keeps its checkpoints on cancellation too: a later change
        // to last-state cancels it to restore them.
        configuration: [
            ("pipeline.max-parallelism".to_owned(), "8".to_owned()),
            (
                keys::flink::CHECKPOINTING_EXTERNALIZED_RETENTION.to_owned(),
                "RETAIN_ON_CANCELLATION".to_owned(),
            ),
        ]
        .into(),
        file_allowed_dirs: vec![],
    };
    assert_eq!(plan.actions, [Action::AddFinalizer, Action::Submit(expected)]);
    let before = plan.status_before.unwrap();
    assert_eq!(
        reconciliation_state(&before),
        Some(ReconciliationState::Upgrading)
    );
    assert_eq!(job(&before).job_id.as_deref(), Some("new-job"));
    assert_eq!(
        job(&before).upgrade_savepoint_path.as_deref(),
        Some("file:/sp/initial")
    );
    assert_eq!(
        recorded_spec(&before),
        resource(with_savepoint, None, true, false, 1).spec
    );
    assert_eq!(
        reconciliation_state(&plan.status),
        Some(ReconciliationState::Deployed)
    );
    assert_eq!(
        plan.status.lifecycle_state,
        Some(ResourceLifecycleState::Deployed)
    );
    assert_eq!(plan.events[0].reason, Reason::Submit);
}

#[test]
fn a_crash_between_recording_and_submitting_submits_under_the_recorded_id_once() {
    let first = decide(&resource(spec("stateless"), None, true, false, 1), &ready(None));
    let recorded = first.status_before.unwrap();
    let sj = resource(spec("stateless"), Some(recorded), true, false, 1);
    // The job never reached Flink: submitted again, same id, not the fresh one.
    let plan = decide(
        &sj,
        &Observation {
            fresh_job_id: "another".into(),
            ..ready(not_found())
        },
    );
    assert_eq!(submission(&plan).job_id, "new-job");
    // It did reach Flink: nothing is submitted, the status catches up.
    let plan = decide(&sj, &ready(found(FlinkJobState::Running)));
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(
        reconciliation_state(&plan.status),
        Some(ReconciliationState::Deployed)
    );
    assert_eq!(job(&plan.status).state, Some(FlinkJobState::Running));
    // Flink does not answer: wait, never submit blind.
    let plan = decide(&sj, &ready(Some(JobObservation::Unreachable("timeout".into()))));
    assert!(plan.actions.is_empty());
}

#[test]
fn observed_job_states_become_status_conditions_and_events() {
    use ResourceLifecycleState as L;
    let cases = [
        (
            found(FlinkJobState::Running),
            L::Stable,
            Phase::Running,
            "True",
            false,
        ),
        (
            found(FlinkJobState::Failed),
            L::Failed,
            Phase::Failed,
            "False",
            true,
        ),
        (
            found(FlinkJobState::Finished),
            L::Deployed,
            Phase::Succeeded,
            "True",
            false,
        ),
        (
            found(FlinkJobState::Canceled),
            L::Deployed,
            Phase::Cancelled,
            "False",
            false,
        ),
        (
            found(FlinkJobState::Restarting),
            L::Deployed,
            Phase::Restarting,
            "False",
            false,
        ),
        (
            found(FlinkJobState::Initializing),
            L::Deployed,
            Phase::Deploying,
            "False",
            false,
        ),
        (not_found(), L::Deployed, Phase::DeployFailed, "False", true),
    ];
    let submitted = decide(&resource(spec("stateless"), None, true, false, 1), &ready(None)).status;
    for (observed, lifecycle, phase_, ready_status, warning) in cases {
        let plan = decide(
            &resource(spec("stateless"), Some(submitted.clone()), true, false, 1),
            &ready(observed.clone()),
        );
        assert!(plan.actions.is_empty(), "{observed:?}");
        assert_eq!(plan.status.lifecycle_state, Some(lifecycle), "{observed:?}");
        assert_eq!(reason(&plan.status), phase_.as_str(), "{observed:?}");
        assert_eq!(
            condition(&plan.status, "Ready").status.as_deref(),
            Some(ready_status),
            "{observed:?}"
        );
        assert_eq!(plan.events.len(), 1, "{observed:?}");
        assert_eq!(plan.events[0].warning, warning, "{observed:?}");
        // A job starting is polled every quarter of the time since it was submitted (here,
        // within the same instant: at the 1 s floor).
        if observed == found(FlinkJobState::Initializing) {
            assert_eq!(
                plan.requeue,
                crate::plan::Next::Awaiting { for_ms: 0 },
                "{observed:?}"
            );
        }
    }
    // No Event while the state stays the same; a running job records its stable spec.
    let stable = running("stateless");
    assert!(
        stable
            .reconciliation_status
            .as_ref()
            .unwrap()
            .last_stable_spec
            .is_some()
    );
    let plan = decide(
        &resource(spec("stateless"), Some(stable), true, false, 1),
        &ready(found(FlinkJobState::Running)),
    );
    assert!(plan.events.is_empty());
    assert_eq!(plan.requeue, SLOW);
}

#[test]
fn a_stateless_change_cancels_then_records_the_new_spec_and_job_id_then_submits() {
    let sj =
        |status: FlinkSessionJobStatus| resource(changed("stateless", None), Some(status), true, false, 2);
    // 1. Cancel the running job; the old spec stays recorded until it has ended.
    let plan = decide(&sj(running("stateless")), &ready(found(FlinkJobState::Running)));
    assert_eq!(
        plan.actions,
        [Action::Job(JobAction::Cancel {
            job_id: "old-job".into()
        })]
    );
    let cancelling = plan.status_before.unwrap();
    assert_eq!(recorded_spec(&cancelling).job.unwrap().parallelism, Some(2));
    assert_eq!(reason(&cancelling), Phase::Updating.as_str());
    assert_eq!(
        cancelling.lifecycle_state,
        Some(ResourceLifecycleState::Upgrading)
    );
    // A crash before the cancel reached Flink: cancelled again.
    let plan = decide(&sj(cancelling.clone()), &ready(found(FlinkJobState::Running)));
    assert_eq!(
        plan.actions,
        [Action::Job(JobAction::Cancel {
            job_id: "old-job".into()
        })]
    );
    // 2. Cancelling: wait.
    let plan = decide(&sj(cancelling.clone()), &ready(found(FlinkJobState::Cancelling)));
    assert!(plan.actions.is_empty());
    // 3. Cancelled: the new spec and job id are recorded before the submission.
    let plan = decide(&sj(cancelling.clone()), &ready(found(FlinkJobState::Canceled)));
    let committed = plan.status_before.clone().unwrap();
    assert_eq!(recorded_spec(&committed).job.unwrap().parallelism, Some(1));
    assert_eq!(
        reconciliation_state(&committed),
        Some(ReconciliationState::Upgrading)
    );
    assert_eq!(job(&committed).job_id.as_deref(), Some("new-job"));
    assert_eq!(job(&committed).upgrade_savepoint_path, None);
    assert_eq!(submission(&plan).restore_path, None);
    assert_eq!(submission(&plan).parallelism, Some(1));
    // 4. A crash before the submission: the recorded id is submitted, not a fresh one.
    let plan = decide(
        &sj(committed),
        &Observation {
            fresh_job_id: "yet-another".into(),
            ..ready(not_found())
        },
    );
    assert_eq!(submission(&plan).job_id, "new-job");
}

#[test]
fn a_savepoint_upgrade_goes_step_by_step_and_survives_a_crash_at_each() {
    let sj =
        |status: FlinkSessionJobStatus| resource(changed("savepoint", None), Some(status), true, false, 2);
    let stop = Action::Job(JobAction::StopWithSavepoint {
        job_id: "old-job".into(),
        trigger_id: "trigger".into(),
        drain: false,
    });
    // 1. The trigger id is recorded before the stop is sent.
    let plan = decide(&sj(running("savepoint")), &ready(found(FlinkJobState::Running)));
    assert_eq!(plan.actions, std::slice::from_ref(&stop));
    let triggered = plan.status_before.unwrap();
    let info = job(&triggered).savepoint_info.clone().unwrap();
    assert_eq!(info.trigger_id.as_deref(), Some("trigger"));
    assert_eq!(info.trigger_type, Some(SnapshotTriggerType::Upgrade));
    assert_eq!(recorded_spec(&triggered).job.unwrap().parallelism, Some(2));

    let with = |poll: SavepointPoll, job: Option<JobObservation>| Observation {
        savepoint: Some(poll),
        fresh_trigger_id: "other-trigger".into(),
        ..ready(job)
    };
    // Crash before the stop reached Flink: the same stop, same trigger id, again.
    let plan = decide(
        &sj(triggered.clone()),
        &with(SavepointPoll::UnknownTrigger, found(FlinkJobState::Running)),
    );
    assert_eq!(plan.actions, [stop]);
    // 2. In progress (or the JobManager silent): wait, never block.
    for poll in [
        SavepointPoll::InProgress,
        SavepointPoll::Unreachable("timeout".into()),
    ] {
        let plan = decide(&sj(triggered.clone()), &with(poll, found(FlinkJobState::Running)));
        assert!(plan.actions.is_empty());
        assert_eq!(reason(&plan.status), Phase::Updating.as_str());
    }
    // 3. Completed: the path, the new spec and the new job id are recorded in one write
    // before the new job is submitted restoring from it.
    let plan = decide(
        &sj(triggered.clone()),
        &with(
            SavepointPoll::Completed("file:/sp/sp-1".into()),
            found(FlinkJobState::Finished),
        ),
    );
    let committed = plan.status_before.clone().unwrap();
    let recorded_job = job(&committed);
    assert_eq!(
        recorded_job.upgrade_savepoint_path.as_deref(),
        Some("file:/sp/sp-1")
    );
    let info = recorded_job.savepoint_info.as_ref().unwrap();
    assert_eq!(info.trigger_id, None);
    assert_eq!(
        info.last_savepoint.as_ref().unwrap().location.as_deref(),
        Some("file:/sp/sp-1")
    );
    assert_eq!(recorded_job.job_id.as_deref(), Some("new-job"));
    assert_eq!(recorded_spec(&committed).job.unwrap().parallelism, Some(1));
    assert_eq!(submission(&plan).restore_path.as_deref(), Some("file:/sp/sp-1"));
    assert!(plan.events.iter().any(|e| e.reason == Reason::SavepointCompleted));
    // 4. A crash before the submission: the recorded job id and savepoint are used.
    let plan = decide(
        &sj(committed.clone()),
        &Observation {
            fresh_job_id: "another".into(),
            ..ready(not_found())
        },
    );
    assert_eq!(submission(&plan).job_id, "new-job");
    assert_eq!(submission(&plan).restore_path.as_deref(), Some("file:/sp/sp-1"));
    // 5. The job runs: upgraded.
    let deployed = plan.status;
    let plan = decide(&sj(deployed), &ready(found(FlinkJobState::Running)));
    assert!(plan.actions.is_empty());
    assert_eq!(plan.status.lifecycle_state, Some(ResourceLifecycleState::Stable));
    assert_eq!(reason(&plan.status), Phase::Running.as_str());
}

#[test]
fn a_stop_that_completes_after_the_spec_was_reverted_still_restores_the_job() {
    let triggered = decide(
        &resource(
            changed("savepoint", None),
            Some(running("savepoint")),
            true,
            false,
            2,
        ),
        &ready(found(FlinkJobState::Running)),
    )
    .status_before
    .unwrap();
    let reverted = resource(spec("savepoint"), Some(triggered), true, false, 3);
    let plan = decide(
        &reverted,
        &Observation {
            savepoint: Some(SavepointPoll::Completed("file:/sp/sp-2".into())),
            ..ready(found(FlinkJobState::Finished))
        },
    );
    assert_eq!(submission(&plan).restore_path.as_deref(), Some("file:/sp/sp-2"));
    assert_eq!(submission(&plan).parallelism, Some(2));
}

/// The refusal of a change (here: its savepoint failed past the grace period; the shared
/// rules of that are the lifecycle's scenarios) is what the user has to act on, so a time
/// the session cluster is not ready neither replaces it nor ends it.
#[test]
fn a_refused_change_is_kept_over_a_time_its_session_cluster_is_not_ready() {
    let triggered = decide(
        &resource(
            changed("savepoint", None),
            Some(running("savepoint")),
            true,
            false,
            2,
        ),
        &ready(found(FlinkJobState::Running)),
    )
    .status_before
    .unwrap();
    let plan = decide(
        &resource(changed("savepoint", None), Some(triggered), true, false, 2),
        &Observation {
            savepoint: Some(SavepointPoll::Failed("disk full".into())),
            now_ms: NOW + 61_000,
            ..ready(found(FlinkJobState::Running))
        },
    );
    assert_eq!(reason(&plan.status), Phase::UpdateFailed.as_str(), "{plan:?}");
    let failed = plan.status;
    let waiting = decide(
        &resource(changed("savepoint", None), Some(failed.clone()), true, false, 2),
        &obs(
            SessionObservation::NotReady("its JobManager is DEPLOYING".into()),
            None,
        ),
    );
    assert!(waiting.actions.is_empty() && waiting.events.is_empty());
    assert!(waiting.status.error.as_deref().unwrap().contains("disk full"));
    assert_eq!(reason(&waiting.status), Phase::UpdateFailed.as_str());
    let plan = decide(
        &resource(changed("savepoint", None), Some(waiting.status), true, false, 2),
        &ready(found(FlinkJobState::Running)),
    );
    assert!(plan.actions.is_empty(), "still refused once it is back: {plan:?}");
    assert_eq!(reason(&plan.status), Phase::UpdateFailed.as_str());
}

#[test]
fn savepoint_changes_of_jobs_that_are_not_running_wait_or_are_refused() {
    for (state, waits) in [
        (FlinkJobState::Restarting, true),
        (FlinkJobState::Initializing, true),
        (FlinkJobState::Failed, false),
        (FlinkJobState::Finished, false),
    ] {
        let plan = decide(
            &resource(
                changed("savepoint", None),
                Some(running("savepoint")),
                true,
                false,
                2,
            ),
            &ready(found(state.clone())),
        );
        assert!(plan.actions.is_empty(), "{state}");
        let expected = if waits {
            Phase::Updating
        } else {
            Phase::UpdateFailed
        };
        assert_eq!(reason(&plan.status), expected.as_str(), "{state}");
    }
    // The JobManager knows nothing of the trigger and the job is gone.
    let triggered = decide(
        &resource(
            changed("savepoint", None),
            Some(running("savepoint")),
            true,
            false,
            2,
        ),
        &ready(found(FlinkJobState::Running)),
    )
    .status_before
    .unwrap();
    for poll in [
        SavepointPoll::UnknownTrigger,
        SavepointPoll::JobGone("no job".into()),
    ] {
        let plan = decide(
            &resource(
                changed("savepoint", None),
                Some(triggered.clone()),
                true,
                false,
                2,
            ),
            &Observation {
                savepoint: Some(poll.clone()),
                ..ready(not_found())
            },
        );
        assert!(plan.actions.is_empty(), "{poll:?}");
        assert_eq!(reason(&plan.status), Phase::UpdateFailed.as_str(), "{poll:?}");
        assert_eq!(
            job(&plan.status).savepoint_info.as_ref().unwrap().trigger_id,
            None
        );
    }
}

#[test]
fn a_last_state_change_cancels_then_restores_the_latest_checkpoint_recorded_first() {
    let sj =
        |status: FlinkSessionJobStatus| resource(changed("last-state", None), Some(status), true, false, 2);
    let plan = decide(&sj(running("last-state")), &ready(found(FlinkJobState::Running)));
    assert_eq!(
        plan.actions,
        [Action::Job(JobAction::Cancel {
            job_id: "old-job".into()
        })]
    );
    let cancelling = plan.status_before.unwrap();
    let with = |job: Option<JobObservation>, checkpoint: Option<CheckpointLookup>| Observation {
        checkpoint,
        ..ready(job)
    };
    // Cancelled: the checkpoint's path is recorded with the new spec, then submitted.
    let plan = decide(
        &sj(cancelling.clone()),
        &with(
            found(FlinkJobState::Canceled),
            Some(CheckpointLookup::Found {
                path: "file:/cp/chk-7".into(),
                timestamp_ms: Some(NOW - 60_000),
            }),
        ),
    );
    let committed = plan.status_before.clone().unwrap();
    assert_eq!(
        job(&committed).upgrade_savepoint_path.as_deref(),
        Some("file:/cp/chk-7")
    );
    assert_eq!(job(&committed).job_id.as_deref(), Some("new-job"));
    let submitted = submission(&plan);
    assert_eq!(submitted.restore_path.as_deref(), Some("file:/cp/chk-7"));
    assert_eq!(
        submitted
            .configuration
            .get(keys::flink::CHECKPOINTING_EXTERNALIZED_RETENTION)
            .map(String::as_str),
        Some("RETAIN_ON_CANCELLATION")
    );
    // A crash before the submission restores the recorded checkpoint.
    let plan = decide(&sj(committed), &ready(not_found()));
    assert_eq!(submission(&plan).restore_path.as_deref(), Some("file:/cp/chk-7"));
    // Statistics not read yet: wait. No checkpoint, or the job gone with it: refused.
    let plan = decide(
        &sj(cancelling.clone()),
        &with(
            found(FlinkJobState::Canceled),
            Some(CheckpointLookup::Unavailable("timeout".into())),
        ),
    );
    assert!(plan.actions.is_empty());
    assert_eq!(reason(&plan.status), Phase::Updating.as_str());
    for (job_observation, lookup) in [
        (found(FlinkJobState::Canceled), CheckpointLookup::None),
        (not_found(), CheckpointLookup::Unavailable("job not found".into())),
    ] {
        let plan = decide(&sj(cancelling.clone()), &with(job_observation, Some(lookup)));
        assert!(plan.actions.is_empty());
        assert_eq!(reason(&plan.status), Phase::UpdateFailed.as_str());
    }
}

#[test]
fn suspend_stops_as_the_mode_says_and_resume_restores_what_it_left() {
    // Savepoint mode: stop with a savepoint, record it, no new job.
    let suspend = |status| {
        resource(
            changed("savepoint", Some("suspended")),
            Some(status),
            true,
            false,
            2,
        )
    };
    let plan = decide(
        &suspend(running("savepoint")),
        &ready(found(FlinkJobState::Running)),
    );
    assert!(matches!(
        plan.actions[..],
        [Action::Job(JobAction::StopWithSavepoint { .. })]
    ));
    let triggered = plan.status_before.unwrap();
    let plan = decide(
        &suspend(triggered),
        &Observation {
            savepoint: Some(SavepointPoll::Completed("file:/sp/suspend".into())),
            ..ready(found(FlinkJobState::Finished))
        },
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    let suspended = plan.status.clone();
    assert_eq!(suspended.lifecycle_state, Some(ResourceLifecycleState::Suspended));
    assert_eq!(reason(&plan.status), Phase::Suspended.as_str());
    assert_eq!(
        job(&suspended).upgrade_savepoint_path.as_deref(),
        Some("file:/sp/suspend")
    );
    assert_eq!(
        reconciliation_state(&suspended),
        Some(ReconciliationState::Deployed)
    );
    assert!(plan.events.iter().any(|e| e.reason == Reason::Suspended));
    // Stays suspended without looking at the job.
    let plan = decide(&suspend(suspended.clone()), &ready(not_found()));
    assert!(plan.actions.is_empty());
    assert_eq!(
        plan.status.lifecycle_state,
        Some(ResourceLifecycleState::Suspended)
    );
    // Resume: restore from the recorded savepoint under a recorded new job id.
    let plan = decide(
        &resource(
            changed("savepoint", Some("running")),
            Some(suspended.clone()),
            true,
            false,
            3,
        ),
        &ready(found(FlinkJobState::Finished)),
    );
    assert_eq!(
        submission(&plan).restore_path.as_deref(),
        Some("file:/sp/suspend")
    );
    assert_eq!(
        job(&plan.status_before.unwrap()).job_id.as_deref(),
        Some("new-job")
    );
    // Resuming in stateless mode starts from nothing.
    let plan = decide(
        &resource(
            changed("stateless", Some("running")),
            Some(suspended),
            true,
            false,
            3,
        ),
        &ready(found(FlinkJobState::Finished)),
    );
    assert_eq!(submission(&plan).restore_path, None);

    // Stateless mode: cancel, then suspended without state.
    let suspend = |status| {
        resource(
            changed("stateless", Some("suspended")),
            Some(status),
            true,
            false,
            2,
        )
    };
    let plan = decide(
        &suspend(running("stateless")),
        &ready(found(FlinkJobState::Running)),
    );
    assert_eq!(
        plan.actions,
        [Action::Job(JobAction::Cancel {
            job_id: "old-job".into()
        })]
    );
    let plan = decide(
        &suspend(plan.status_before.unwrap()),
        &ready(found(FlinkJobState::Canceled)),
    );
    assert!(plan.actions.is_empty());
    assert_eq!(
        plan.status.lifecycle_state,
        Some(ResourceLifecycleState::Suspended)
    );
    assert_eq!(job(&plan.status).upgrade_savepoint_path, None);
    // A suspended first spec submits nothing.
    let plan = decide(
        &resource(changed("stateless", Some("suspended")), None, true, false, 1),
        &ready(None),
    );
    assert!(plan.actions.is_empty());
    assert_eq!(reason(&plan.status), Phase::Suspended.as_str());
}

#[test]
fn a_spec_changed_again_before_the_submission_is_the_one_submitted() {
    let first = decide(&resource(spec("stateless"), None, true, false, 1), &ready(None));
    let recorded = first.status_before.unwrap();
    let plan = decide(
        &resource(changed("stateless", None), Some(recorded.clone()), true, false, 2),
        &ready(not_found()),
    );
    assert_eq!(submission(&plan).parallelism, Some(1));
    assert_eq!(submission(&plan).job_id, "new-job");
    assert_eq!(
        recorded_spec(&plan.status_before.unwrap())
            .job
            .unwrap()
            .parallelism,
        Some(1)
    );
    // Suspended before it was submitted: nothing is submitted.
    let plan = decide(
        &resource(
            changed("stateless", Some("suspended")),
            Some(recorded),
            true,
            false,
            2,
        ),
        &ready(not_found()),
    );
    assert!(plan.actions.is_empty());
    assert_eq!(
        plan.status.lifecycle_state,
        Some(ResourceLifecycleState::Suspended)
    );
}

#[test]
fn deletion_stops_the_job_records_its_savepoint_then_releases_the_finalizer() {
    let deleting = |spec: Value, status: Option<FlinkSessionJobStatus>, finalizer| {
        resource(spec, status, finalizer, true, 1)
    };
    let cancel_only = {
        let mut s = spec("stateless");
        s["flinkConfiguration"] = json!({});
        s
    };
    let release = [Action::RemoveFinalizer];
    // The session cluster is gone, or nothing was ever submitted: released at once.
    for session in [
        SessionObservation::Missing,
        SessionObservation::Deleting,
        SessionObservation::NotSession,
    ] {
        let plan = decide(
            &deleting(cancel_only.clone(), Some(running("stateless")), true),
            &obs(session, None),
        );
        assert_eq!(plan.actions, release);
        assert_eq!(
            plan.status.lifecycle_state,
            Some(ResourceLifecycleState::Deleting)
        );
        assert_eq!(reason(&plan.status), Phase::Deleting.as_str());
    }
    let plan = decide(&deleting(cancel_only.clone(), None, true), &ready(None));
    assert_eq!(plan.actions, release);
    // No finalizer: nothing to do.
    let plan = decide(&deleting(cancel_only.clone(), None, false), &ready(None));
    assert!(plan.actions.is_empty());
    // The cluster is not ready: wait.
    let plan = decide(
        &deleting(cancel_only.clone(), Some(running("stateless")), true),
        &obs(
            SessionObservation::NotReady("its JobManager is DEPLOYING".into()),
            None,
        ),
    );
    assert!(plan.actions.is_empty());
    // Cancel, wait, release.
    let plan = decide(
        &deleting(cancel_only.clone(), Some(running("stateless")), true),
        &ready(found(FlinkJobState::Running)),
    );
    assert_eq!(
        plan.actions,
        [Action::Job(JobAction::Cancel {
            job_id: "old-job".into()
        })]
    );
    for (job_observation, actions) in [
        (found(FlinkJobState::Cancelling), vec![]),
        (found(FlinkJobState::Canceled), release.to_vec()),
        (not_found(), release.to_vec()),
    ] {
        let plan = decide(
            &deleting(cancel_only.clone(), Some(running("stateless")), true),
            &ready(job_observation.clone()),
        );
        assert_eq!(plan.actions, actions, "{job_observation:?}");
    }
    // With savepoint-on-deletion: stop with a savepoint under a recorded trigger id.
    let sp = spec("savepoint");
    let observation = Observation {
        ..ready(found(FlinkJobState::Running))
    };
    let plan = decide(
        &deleting(sp.clone(), Some(running("savepoint")), true),
        &observation,
    );
    assert_eq!(
        plan.actions,
        [Action::Job(JobAction::StopWithSavepoint {
            job_id: "old-job".into(),
            trigger_id: "trigger".into(),
            drain: false
        })]
    );
    let triggered = plan.status_before.unwrap();
    // The path is written before the finalizer goes.
    let plan = decide(
        &deleting(sp.clone(), Some(triggered.clone()), true),
        &Observation {
            savepoint: Some(SavepointPoll::Completed("file:/sp/last".into())),
            ..ready(found(FlinkJobState::Finished))
        },
    );
    assert_eq!(plan.actions, release);
    assert_eq!(
        job(&plan.status_before.unwrap())
            .upgrade_savepoint_path
            .as_deref(),
        Some("file:/sp/last")
    );
    // A failed savepoint is reported and tried again, never skipped.
    let plan = decide(
        &deleting(sp.clone(), Some(triggered.clone()), true),
        &Observation {
            savepoint: Some(SavepointPoll::Failed("disk full".into())),
            ..ready(found(FlinkJobState::Running))
        },
    );
    assert!(plan.actions.is_empty());
    assert!(
        plan.events
            .iter()
            .any(|e| e.warning && e.note.contains("disk full"))
    );
    let failed = plan.status_before.unwrap();
    let plan = decide(&deleting(sp, Some(failed), true), &observation);
    assert!(matches!(
        plan.actions[..],
        [Action::Job(JobAction::StopWithSavepoint { .. })]
    ));
}

#[test]
fn invalid_specs_and_unreadable_records_are_reported_not_acted_on() {
    let plan = decide(
        &resource(spec("stateless"), None, true, false, 1),
        &Observation {
            violations: vec!["spec.job.jarURI: scheme \"ftp\" is not in the allowlist".into()],
            ..ready(None)
        },
    );
    assert!(plan.actions.is_empty());
    assert_eq!(reason(&plan.status), Phase::DeployFailed.as_str());
    assert!(plan.events.iter().any(|e| e.reason == Reason::ValidationError));
    let mut broken = running("stateless");
    broken
        .reconciliation_status
        .as_mut()
        .unwrap()
        .last_reconciled_spec = Some("{not json".into());
    let plan = decide(
        &resource(spec("stateless"), Some(broken), true, false, 1),
        &ready(not_found()),
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert!(
        plan.status
            .error
            .as_deref()
            .unwrap()
            .contains("lastReconciledSpec")
    );
}

#[test]
fn a_failed_submission_keeps_the_recorded_step_and_says_why() {
    let first = decide(&resource(spec("stateless"), None, true, false, 1), &ready(None));
    let status = submission_failed(
        first.status_before.unwrap(),
        Some(1),
        "spec.job.jarURI \"s3://b/j.jar\": scheme \"s3\" is not supported",
        NOW,
    );
    assert_eq!(reason(&status), Phase::DeployFailed.as_str());
    assert_eq!(
        reconciliation_state(&status),
        Some(ReconciliationState::Upgrading)
    );
    assert_eq!(job(&status).job_id.as_deref(), Some("new-job"));
    assert!(status.error.as_deref().unwrap().contains("s3"));
}

#[test]
fn conditions_read_back_keep_their_transition_time_while_their_status_holds() {
    let at = |now_ms: i64, job| Observation { now_ms, ..ready(job) };
    let submitted = decide(&resource(spec("stateless"), None, true, false, 1), &ready(None)).status;
    let running = decide(
        &resource(spec("stateless"), Some(submitted), true, false, 1),
        &at(NOW, found(FlinkJobState::Running)),
    )
    .status;
    // Stored and read back: the conditions are part of the status type.
    let value = serde_json::to_value(&running).unwrap();
    assert!(value["conditions"].is_array());
    let stored: FlinkSessionJobStatus = serde_json::from_value(value).unwrap();
    assert_eq!(stored, running);

    let later = decide(
        &resource(spec("stateless"), Some(stored), true, false, 1),
        &at(NOW + 60_000, found(FlinkJobState::Running)),
    )
    .status;
    for type_ in ["Ready", "Progressing", "Degraded"] {
        assert_eq!(
            condition(&later, type_).last_transition_time.as_deref(),
            Some("2027-01-15T08:00:00Z"),
            "{type_}"
        );
    }
    let failed = decide(
        &resource(spec("stateless"), Some(later), true, false, 1),
        &at(NOW + 120_000, found(FlinkJobState::Failed)),
    )
    .status;
    assert_eq!(condition(&failed, "Degraded").status.as_deref(), Some("True"));
    assert_eq!(
        condition(&failed, "Degraded").last_transition_time.as_deref(),
        Some("2027-01-15T08:02:00Z")
    );
    assert_eq!(
        condition(&failed, "Ready").last_transition_time.as_deref(),
        Some("2027-01-15T08:02:00Z")
    );
    // Progressing was False before and still is.
    assert_eq!(
        condition(&failed, "Progressing").last_transition_time.as_deref(),
        Some("2027-01-15T08:00:00Z")
    );
}

const MIN: i64 = 60_000;

/// `observation` with the given operator settings.
fn with_policy(observation: Observation, policy: Policy) -> Observation {
    Observation {
        policy,
        ..observation
    }
}

fn max_age(minutes: i64) -> Policy {
    Policy {
        restore_max_state_age_ms: Some(minutes * MIN),
        ..Policy::status_only()
    }
}

fn checkpoint_at(path: &str, at: i64) -> Option<CheckpointLookup> {
    Some(CheckpointLookup::Found {
        path: path.into(),
        timestamp_ms: Some(at),
    })
}

/// A last-state change of a session job (or a savepoint-mode one without a savepoint)
/// cancels it and submits the new job from its latest checkpoint, which must outlive the
/// cancellation; an application keeps its high-availability metadata instead. The guard is
/// the lifecycle's (its scenarios) but for a checkpoint of unknown age, which only a
/// session job's observation tells from none.
#[test]
fn a_cancelled_job_is_submitted_from_its_checkpoint_retained_on_cancellation_under_the_restore_age_guard() {
    // (name, mode, checkpoint found, Ok(restored path) or Err(part of the refusal))
    type Case<'a> = (
        &'a str,
        &'a str,
        Option<CheckpointLookup>,
        Result<&'a str, &'a str>,
    );
    let cases: Vec<Case> = vec![
        (
            "young checkpoint",
            "last-state",
            checkpoint_at("file:/cp/chk-7", NOW - MIN),
            Ok("file:/cp/chk-7"),
        ),
        (
            "savepoint mode without a savepoint",
            "savepoint",
            checkpoint_at("file:/cp/chk-9", NOW - MIN),
            Ok("file:/cp/chk-9"),
        ),
        (
            "old checkpoint",
            "last-state",
            checkpoint_at("file:/cp/chk-7", NOW - 120 * MIN),
            Err("checkpoint file:/cp/chk-7, is 2 h 0 min old"),
        ),
        (
            "checkpoint of unknown age",
            "last-state",
            Some(CheckpointLookup::Found {
                path: "file:/cp/chk-7".into(),
                timestamp_ms: None,
            }),
            Err("the age of checkpoint file:/cp/chk-7 is unknown"),
        ),
    ];
    for (name, mode, lookup, expected) in cases {
        let policy = Policy {
            take_savepoint: mode == "last-state",
            ..max_age(60)
        };
        let sj = |status: FlinkSessionJobStatus| resource(changed(mode, None), Some(status), true, false, 2);
        // 1. The running job is cancelled (no savepoint), recorded first.
        let plan = decide(
            &sj(running(mode)),
            &with_policy(ready(found(FlinkJobState::Running)), policy.clone()),
        );
        assert_eq!(
            plan.actions,
            [Action::Job(JobAction::Cancel {
                job_id: "old-job".into()
            })],
            "{name}"
        );
        let cancelling = plan.status_before.unwrap();
        // A crash before the cancel reached Flink: cancelled again.
        let plan = decide(
            &sj(cancelling.clone()),
            &with_policy(ready(found(FlinkJobState::Running)), policy.clone()),
        );
        assert!(
            matches!(plan.actions[..], [Action::Job(JobAction::Cancel { .. })]),
            "{name}"
        );
        // 2. Cancelled: the state is guarded, then recorded with the new spec.
        let plan = decide(
            &sj(cancelling),
            &with_policy(
                Observation {
                    checkpoint: lookup,
                    ..ready(found(FlinkJobState::Canceled))
                },
                policy.clone(),
            ),
        );
        match expected {
            Ok(path) => {
                assert_eq!(submission(&plan).restore_path.as_deref(), Some(path), "{name}");
                assert_eq!(
                    submission(&plan)
                        .configuration
                        .get(keys::flink::CHECKPOINTING_EXTERNALIZED_RETENTION)
                        .map(String::as_str),
                    Some("RETAIN_ON_CANCELLATION"),
                    "{name}"
                );
                let committed = plan.status_before.unwrap();
                assert_eq!(
                    job(&committed).upgrade_savepoint_path.as_deref(),
                    Some(path),
                    "{name}"
                );
                // 3. A crash before the submission: the recorded state, not a new look.
                let plan = decide(&sj(committed), &with_policy(ready(not_found()), policy));
                assert_eq!(submission(&plan).restore_path.as_deref(), Some(path), "{name}");
                assert_eq!(submission(&plan).job_id, "new-job", "{name}");
            }
            Err(part) => {
                assert!(plan.actions.is_empty(), "{name}: {:?}", plan.actions);
                assert_eq!(reason(&plan.status), Phase::UpdateFailed.as_str(), "{name}");
                let error = plan.status.error.clone().unwrap();
                assert!(error.contains(part), "{name}: {error}");
                assert!(plan.events.iter().any(|e| e.warning && e.note == error), "{name}");
            }
        }
    }
}

/// A last-state change of a running session job whose latest checkpoint is already too old
/// is refused before the job is cancelled for it.
#[test]
fn a_running_last_state_job_whose_checkpoint_is_too_old_is_not_cancelled_for_a_restore() {
    let plan = decide(
        &resource(
            changed("last-state", None),
            Some(running("last-state")),
            true,
            false,
            2,
        ),
        &with_policy(
            Observation {
                checkpoint: checkpoint_at("file:/cp/chk-3", NOW - 90 * MIN),
                ..ready(found(FlinkJobState::Running))
            },
            max_age(60),
        ),
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(reason(&plan.status), Phase::UpdateFailed.as_str());
    let error = plan.status.error.unwrap();
    assert!(
        error.contains("checkpoint file:/cp/chk-3, is 90 min old") && error.contains("keeps running"),
        "{error}"
    );
}

#[test]
fn changes_of_the_upgrade_mode_or_operator_keys_alone_are_recorded_without_ending_the_job() {
    let edit = |base: &str, change: &dyn Fn(&mut Value)| {
        let mut s = spec(base);
        change(&mut s);
        s
    };
    // (name, the stored status's mode, the new spec)
    let cases: Vec<(&str, &str, Value)> = vec![
        (
            "upgrade mode",
            "stateless",
            edit("stateless", &|s: &mut Value| {
                s["job"]["upgradeMode"] = json!("savepoint")
            }),
        ),
        (
            "operator key added",
            "stateless",
            edit("stateless", &|s: &mut Value| {
                s["flinkConfiguration"]["kubernetes.operator.job.restart.failed"] = json!("true")
            }),
        ),
        (
            "operator keys removed",
            "savepoint",
            edit("savepoint", &|s: &mut Value| {
                s["flinkConfiguration"] = json!({"pipeline.max-parallelism": "8"})
            }),
        ),
        (
            "upgrade mode and operator key",
            "last-state",
            edit("last-state", &|s: &mut Value| {
                s["job"]["upgradeMode"] = json!("stateless");
                s["flinkConfiguration"]["kubernetes.operator.job.restore.max-state-age"] = json!("1 h");
            }),
        ),
    ];
    for (name, mode, new_spec) in cases {
        let sj = resource(new_spec.clone(), Some(running(mode)), true, false, 2);
        let plan = decide(&sj, &ready(found(FlinkJobState::Running)));
        assert!(plan.actions.is_empty(), "{name}: {:?}", plan.actions);
        assert!(plan.status_before.is_none(), "{name}");
        assert_eq!(recorded_spec(&plan.status), sj.spec, "{name}");
        assert_eq!(plan.status.observed_generation, Some(2), "{name}");
        assert_eq!(reason(&plan.status), Phase::Running.as_str(), "{name}");
        assert_eq!(job(&plan.status).job_id.as_deref(), Some("old-job"), "{name}");
        // Recorded in the one write after the (no) actions: a crash before it decides the
        // same again, and once written nothing more happens.
        assert_eq!(decide(&sj, &ready(found(FlinkJobState::Running))), plan, "{name}");
        let again = decide(
            &resource(new_spec, Some(plan.status), true, false, 2),
            &ready(found(FlinkJobState::Running)),
        );
        assert!(again.actions.is_empty(), "{name}");
        assert!(again.events.is_empty(), "{name}");
    }
    // The recorded mode is the one the next change uses.
    let mode_changed = decide(
        &resource(
            edit("stateless", &|s: &mut Value| {
                s["job"]["upgradeMode"] = json!("savepoint")
            }),
            Some(running("stateless")),
            true,
            false,
            2,
        ),
        &ready(found(FlinkJobState::Running)),
    )
    .status;
    let plan = decide(
        &resource(changed("savepoint", None), Some(mode_changed), true, false, 3),
        &ready(found(FlinkJobState::Running)),
    );
    assert!(
        matches!(
            plan.actions[..],
            [Action::Job(JobAction::StopWithSavepoint { .. })]
        ),
        "{:?}",
        plan.actions
    );
    // A mode change with another change ends the job as the new mode says.
    let plan = decide(
        &resource(
            changed("last-state", None),
            Some(running("stateless")),
            true,
            false,
            2,
        ),
        &ready(found(FlinkJobState::Running)),
    );
    assert_eq!(
        plan.actions,
        [Action::Job(JobAction::Cancel {
            job_id: "old-job".into()
        })]
    );
    // While suspended, a mode change alone submits nothing, and the mode the job was
    // suspended in stays recorded: it says how the suspension left the job's state (the new
    // one is applied on resume).
    let suspended = decide(
        &resource(
            changed("stateless", Some("suspended")),
            Some(
                decide(
                    &resource(
                        changed("stateless", Some("suspended")),
                        Some(running("stateless")),
                        true,
                        false,
                        2,
                    ),
                    &ready(found(FlinkJobState::Running)),
                )
                .status_before
                .unwrap(),
            ),
            true,
            false,
            2,
        ),
        &ready(found(FlinkJobState::Canceled)),
    )
    .status;
    let plan = decide(
        &resource(
            changed("last-state", Some("suspended")),
            Some(suspended),
            true,
            false,
            3,
        ),
        &ready(not_found()),
    );
    assert!(plan.actions.is_empty());
    assert_eq!(reason(&plan.status), Phase::Suspended.as_str());
    assert_eq!(
        recorded_spec(&plan.status).job.unwrap().upgrade_mode,
        Some(UpgradeMode::Stateless)
    );
}

/// `spec(mode)` with `spec.job.<field>` set to `nonce`.
fn with_nonce(mode: &str, field: &str, nonce: i64) -> Value {
    let mut s = spec(mode);
    s["job"][field] = json!(nonce);
    s
}

#[test]
fn a_savepoint_redeploy_nonce_cancels_and_restores_the_initial_savepoint_path() {
    let redeploy = |status: FlinkSessionJobStatus, path: Option<&str>| {
        let mut s = with_nonce("savepoint", "savepointRedeployNonce", 1);
        if let Some(path) = path {
            s["job"]["initialSavepointPath"] = json!(path);
        }
        resource(s, Some(status), true, false, 2)
    };
    let chosen = Some("file:/sp/chosen");
    let cancel = [Action::Job(JobAction::Cancel {
        job_id: "old-job".into(),
    })];
    // 1. Cancelled, not stopped with a savepoint; recorded first.
    let plan = decide(
        &redeploy(running("savepoint"), chosen),
        &ready(found(FlinkJobState::Running)),
    );
    assert_eq!(plan.actions, cancel);
    assert!(
        plan.events
            .iter()
            .any(|e| e.reason == Reason::Cancelling && e.note.contains("initialSavepointPath"))
    );
    let cancelling = plan.status_before.unwrap();
    assert_eq!(reason(&cancelling), Phase::Updating.as_str());
    // A crash before the cancel reached Flink: cancelled again.
    let plan = decide(
        &redeploy(cancelling.clone(), chosen),
        &ready(found(FlinkJobState::Running)),
    );
    assert_eq!(plan.actions, cancel);
    // 2. Cancelling: wait.
    let plan = decide(
        &redeploy(cancelling.clone(), chosen),
        &ready(found(FlinkJobState::Cancelling)),
    );
    assert!(plan.actions.is_empty());
    // 3. Ended: the path, the spec (with its nonce) and a new job id are recorded, then
    // the job is submitted restoring the path.
    let plan = decide(
        &redeploy(cancelling, chosen),
        &ready(found(FlinkJobState::Canceled)),
    );
    let committed = plan.status_before.clone().unwrap();
    assert_eq!(
        job(&committed).upgrade_savepoint_path.as_deref(),
        Some("file:/sp/chosen")
    );
    assert_eq!(job(&committed).job_id.as_deref(), Some("new-job"));
    assert_eq!(
        recorded_spec(&committed).job.unwrap().savepoint_redeploy_nonce,
        Some(1)
    );
    assert_eq!(submission(&plan).restore_path.as_deref(), Some("file:/sp/chosen"));
    // 4. A crash before the submission: the recorded job id and path.
    let plan = decide(
        &redeploy(committed, chosen),
        &Observation {
            fresh_job_id: "another".into(),
            ..ready(not_found())
        },
    );
    assert_eq!(submission(&plan).job_id, "new-job");
    assert_eq!(submission(&plan).restore_path.as_deref(), Some("file:/sp/chosen"));
    // Without a path there is nothing to redeploy from: refused, the job runs on.
    let plan = decide(
        &redeploy(running("savepoint"), None),
        &ready(found(FlinkJobState::Running)),
    );
    assert!(plan.actions.is_empty());
    assert_eq!(reason(&plan.status), Phase::UpdateFailed.as_str());
    assert!(
        plan.status
            .error
            .unwrap()
            .contains("spec.job.initialSavepointPath is empty")
    );
}

/// A failed session job restarted (`restart-failed`) is submitted under a new job id,
/// recorded with its state before it is sent. Which state is restored, and when a restart
/// is refused, is the lifecycle's (its scenarios).
#[test]
fn a_restarted_failed_job_is_submitted_under_a_new_job_id_recorded_first() {
    let restart = Policy {
        restart_failed: true,
        ..max_age(60)
    };
    // (name, mode, checkpoint found, restored path)
    let cases = [
        ("stateless: from nothing", "stateless", None, None),
        (
            "a young checkpoint",
            "last-state",
            checkpoint_at("file:/cp/chk-5", NOW - MIN),
            Some("file:/cp/chk-5"),
        ),
    ];
    for (name, mode, checkpoint, path) in cases {
        let sj = |status: FlinkSessionJobStatus| resource(spec(mode), Some(status), true, false, 1);
        let observation = with_policy(
            Observation {
                checkpoint,
                ..ready(found(FlinkJobState::Failed))
            },
            restart.clone(),
        );
        let plan = decide(&sj(running(mode)), &observation);
        // 1. The new job id and the state are recorded, then it is submitted.
        let committed = plan.status_before.clone().unwrap();
        assert_eq!(job(&committed).job_id.as_deref(), Some("new-job"), "{name}");
        assert_eq!(job(&committed).upgrade_savepoint_path.as_deref(), path, "{name}");
        assert_eq!(submission(&plan).job_id, "new-job", "{name}");
        assert_eq!(submission(&plan).restore_path.as_deref(), path, "{name}");
        // 2. A crash before the submission: the recorded id and state, once.
        let plan = decide(
            &sj(committed),
            &with_policy(
                Observation {
                    fresh_job_id: "another".into(),
                    ..ready(not_found())
                },
                restart.clone(),
            ),
        );
        assert_eq!(submission(&plan).job_id, "new-job", "{name}");
        assert_eq!(submission(&plan).restore_path.as_deref(), path, "{name}");
    }
}

/// A session job's observation tells a latest checkpoint that could not be read (its
/// statistics did not answer) from none: a failed job is then not restarted from older
/// state, it waits for the checkpoint to be read.
#[test]
fn a_failed_job_whose_checkpoint_is_not_read_yet_waits_to_be_restarted() {
    let plan = decide(
        &resource(spec("last-state"), Some(running("last-state")), true, false, 1),
        &with_policy(
            Observation {
                checkpoint: Some(CheckpointLookup::Unavailable("timeout".into())),
                ..ready(found(FlinkJobState::Failed))
            },
            Policy {
                restart_failed: true,
                ..max_age(60)
            },
        ),
    );
    assert!(plan.actions.is_empty());
}

/// An http jar's download, started by one reconcile and picked up by a later one: the
/// decision never waits for it.
#[test]
fn an_http_jar_is_downloaded_in_the_background_then_submitted() {
    use crate::session_job::{artifact::DownloadHeaders, downloads::DownloadState};
    const JAR: &str = "https://repo.example.com/job.jar";
    let mut http = spec("stateless");
    http["job"]["jarURI"] = json!(JAR);
    let with = |state: DownloadState, job: Option<JobObservation>| Observation {
        download: Some(JarDownload {
            uri: JAR.into(),
            state,
        }),
        artifact_headers: DownloadHeaders::Platform(super::super::artifact::ArtifactHeaders(vec![(
            "X-Token".into(),
            "t".into(),
        )])),
        ..ready(job)
    };

    // Nothing downloaded yet: the job id is recorded and the download started, no submission.
    let first = decide(
        &resource(http.clone(), None, true, false, 1),
        &with(DownloadState::NotStarted, None),
    );
    let [Action::Fetch(fetch)] = first.actions.as_slice() else {
        panic!("{:?}", first.actions);
    };
    assert_eq!(fetch.uri, JAR);
    assert!(matches!(fetch.headers, DownloadHeaders::Platform(_)));
    assert!(
        fetch.policy.disallow_restricted_hosts,
        "the platform's policy goes with it"
    );
    assert_eq!(first.requeue, crate::lifecycle::FAST);
    let recorded = first.status_before.clone().unwrap();
    assert_eq!(job(&recorded).job_id.as_deref(), Some("new-job"));
    assert_eq!(
        reconciliation_state(&recorded),
        Some(ReconciliationState::Upgrading)
    );
    assert!(
        condition(&first.status, "Ready")
            .message
            .as_deref()
            .unwrap()
            .contains("downloading the jar")
    );

    // Still downloading: wait, without a second download.
    let waiting = decide(
        &resource(http.clone(), Some(recorded.clone()), true, false, 1),
        &with(DownloadState::Running, not_found()),
    );
    assert!(waiting.actions.is_empty(), "{:?}", waiting.actions);
    assert_eq!(waiting.requeue, crate::lifecycle::FAST);
    assert!(
        condition(&waiting.status, "Ready")
            .message
            .as_deref()
            .unwrap()
            .contains("waiting for the download of the jar")
    );

    // Downloaded (or failed: the submission reports it): submitted under the recorded id.
    let submitted = decide(
        &resource(http.clone(), Some(recorded.clone()), true, false, 1),
        &with(DownloadState::Finished, not_found()),
    );
    assert_eq!(submission(&submitted).job_id, "new-job");
    assert_eq!(submission(&submitted).jar_uri.as_deref(), Some(JAR));

    // A download of another jar (the spec changed since) is not this one's.
    let mut stale = with(DownloadState::Finished, not_found());
    stale.download.as_mut().unwrap().uri = "https://repo.example.com/old.jar".into();
    let plan = decide(&resource(http, Some(recorded), true, false, 1), &stale);
    assert!(
        matches!(plan.actions.as_slice(), [Action::Submit(_)]),
        "{:?}",
        plan.actions
    );
}

#[test]
fn every_job_is_submitted_keeping_its_checkpoints_on_cancellation_unless_its_configuration_says_otherwise() {
    let retention = |plan: &Plan| {
        submission(plan)
            .configuration
            .get(keys::flink::CHECKPOINTING_EXTERNALIZED_RETENTION)
            .cloned()
    };
    // Every upgrade mode: a later change may make the job last-state, which cancels it.
    for mode in ["stateless", "savepoint", "last-state"] {
        let plan = decide(&resource(spec(mode), None, false, false, 1), &ready(None));
        assert_eq!(
            retention(&plan).as_deref(),
            Some("RETAIN_ON_CANCELLATION"),
            "{mode}"
        );
    }
    // The job's own value is sent as it is (DELETE_ON_CANCELLATION then makes a cancel-based
    // upgrade stop the job with a savepoint instead, see `lifecycle::retention`).
    let mut own = spec("last-state");
    own["flinkConfiguration"][keys::flink::CHECKPOINTING_EXTERNALIZED_RETENTION] =
        json!("DELETE_ON_CANCELLATION");
    let plan = decide(&resource(own, None, false, false, 1), &ready(None));
    assert_eq!(retention(&plan).as_deref(), Some("DELETE_ON_CANCELLATION"));
    // Set by the session cluster's configuration (or the operator's defaults): left to it.
    let set = Policy {
        checkpoint_retention_set: true,
        ..Policy::status_only()
    };
    let plan = decide(
        &resource(spec("last-state"), None, false, false, 1),
        &with_policy(ready(None), set),
    );
    assert_eq!(retention(&plan), None);
}

/// Point 5 of the state review, for session jobs: deleting one dropped the only pointer to
/// the state it leaves (its status), or to the checkpoint its cancellation retained.
#[test]
fn a_deleted_stateful_session_job_records_the_state_it_leaves_before_the_finalizer_goes() {
    const RETAINED: &str = "file:///cp/old-job/chk-7";
    let mut suspended = running("last-state");
    suspended
        .job_status
        .get_or_insert_with(Default::default)
        .upgrade_savepoint_path = Some(RETAINED.to_owned());
    let with_resources = |observation: Observation| Observation {
        policy: Policy::default(),
        ..observation
    };
    let deleting = resource(spec("last-state"), Some(suspended), true, true, 1);
    let plan = decide(&deleting, &with_resources(obs(SessionObservation::Missing, None)));
    match &plan.actions[..] {
        [
            Action::Job(JobAction::CreateSnapshot(new)),
            Action::RemoveFinalizer,
        ] => {
            assert_eq!(new.existing_path.as_deref(), Some(RETAINED));
            assert_eq!(new.trigger_type, SnapshotTriggerType::Upgrade);
        }
        actions => panic!("the record, then the finalizer: {actions:?}"),
    }
    assert!(plan.status_before.is_some(), "the path in status first");
    assert!(
        plan.events
            .iter()
            .any(|e| e.reason == Reason::StateRecorded && e.note.contains(RETAINED)),
        "{:?}",
        plan.events
    );

    // Cancelled by its deletion: the latest checkpoint Flink retained, newer than status.
    const LATEST: &str = "file:///cp/old-job/chk-9";
    let cancelled = Observation {
        checkpoint: Some(crate::flink::poll::CheckpointLookup::Found {
            path: LATEST.to_owned(),
            timestamp_ms: Some(NOW - 500),
        }),
        ..with_resources(ready(found(FlinkJobState::Canceled)))
    };
    let cancel_only = {
        let mut s = spec("last-state");
        s["flinkConfiguration"] = json!({});
        s
    };
    let plan = decide(
        &resource(cancel_only.clone(), Some(running("last-state")), true, true, 1),
        &cancelled,
    );
    assert!(
        matches!(&plan.actions[..], [Action::Job(JobAction::CreateSnapshot(new)), Action::RemoveFinalizer]
            if new.existing_path.as_deref() == Some(LATEST)),
        "{:?}",
        plan.actions
    );

    // A stateless job leaves nothing.
    let mut stateless = cancel_only;
    stateless["job"]["upgradeMode"] = json!("stateless");
    let plan = decide(
        &resource(stateless, Some(running("stateless")), true, true, 1),
        &cancelled,
    );
    assert_eq!(plan.actions, [Action::RemoveFinalizer]);
}

#[test]
fn a_stateful_job_that_failed_or_was_cancelled_outside_records_its_latest_checkpoint_while_flink_knows_it() {
    use crate::flink::poll::CheckpointLookup;
    const CHECKPOINT: &str = "file:/checkpoints/old-job/chk-7";
    let latest = Some(CheckpointLookup::Found {
        path: CHECKPOINT.into(),
        timestamp_ms: Some(NOW - 5_000),
    });
    for (mode, state, recorded) in [
        ("last-state", FlinkJobState::Failed, Some(CHECKPOINT)),
        ("savepoint", FlinkJobState::Canceled, Some(CHECKPOINT)),
        ("last-state", FlinkJobState::Running, None),
        ("stateless", FlinkJobState::Failed, None),
    ] {
        let plan = decide(
            &resource(spec(mode), Some(running(mode)), true, false, 1),
            &Observation {
                checkpoint: latest.clone(),
                ..ready(found(state.clone()))
            },
        );
        // Written with the state it is seen in: the session cluster forgets an ended job.
        assert_eq!(
            job(&plan.status).upgrade_savepoint_path.as_deref(),
            recorded,
            "{mode} {state}"
        );
    }
}
