//! Table tests of the FlinkStateSnapshot decide: every state and transition, the back-off,
//! abandonment, recorded savepoints, disposal and its release, labels and finalizer.

use flink_operator_api::{
    FlinkJobState, FlinkStateSnapshot, FlinkStateSnapshotState as State, FlinkStateSnapshotStatus as Status,
    keys,
};
use serde_json::{Value, json};

use super::decide::{
    Action, CheckpointPath, DETAILS_LAG_MS, Job, Observation, Target, Trigger, TriggerKind, decide, failed,
    labels, retry_delay_ms,
};
use crate::timestamps::timestamp;
use crate::{
    events::Reason,
    flink::poll::SavepointPoll,
    flink::{CheckpointKind, SavepointFormat},
    plan::{Next, Plan},
};

use crate::fixtures::NOW;
const JOB: &str = "e3bc32a1e3bc32a1e3bc32a1e3bc32a1";
const FRESH: &str = "0123456789abcdef0123456789abcdef";
const RECORDED: &str = "fedcba9876543210fedcba9876543210";

// === Fixtures ===

fn savepoint_spec() -> Value {
    json!({"jobReference": {"kind": "FlinkDeployment", "name": "basic"}, "savepoint": {"path": "file:/sp"}})
}

fn checkpoint_spec() -> Value {
    json!({"jobReference": {"kind": "FlinkDeployment", "name": "basic"}, "checkpoint": {}})
}

/// A snapshot with `spec` and `status`, with our finalizer when `finalizer`.
fn snapshot(spec: Value, status: Option<Status>, finalizer: bool) -> FlinkStateSnapshot {
    let mut value = json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkStateSnapshot",
        "metadata": {"name": "sp", "namespace": "ns", "uid": "u-1", "generation": 1},
        "spec": spec,
    });
    if finalizer {
        value["metadata"]["finalizers"] = json!([keys::finalizers::FLINK_STATE_SNAPSHOT]);
    }
    let mut snapshot: FlinkStateSnapshot = serde_json::from_value(value).unwrap();
    snapshot.status = status;
    snapshot
}

/// `snapshot` with the labels decide wants for its own status: nothing to patch.
fn labelled(mut snapshot: FlinkStateSnapshot) -> FlinkStateSnapshot {
    let status = snapshot.status.clone().unwrap_or_default();
    snapshot.metadata.labels = Some(labels(&snapshot, &status));
    snapshot
}

fn deleting(mut snapshot: FlinkStateSnapshot) -> FlinkStateSnapshot {
    snapshot.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::from_millisecond(NOW).unwrap(),
    ));
    snapshot
}

fn status(state: State) -> Status {
    Status {
        state: Some(state),
        failures: Some(0),
        ..Default::default()
    }
}

fn in_progress() -> Status {
    Status {
        trigger_id: Some(RECORDED.into()),
        trigger_timestamp: Some(timestamp(NOW - 5_000)),
        ..status(State::InProgress)
    }
}

/// How an [`in_progress`] snapshot, triggered 5 s ago, is looked at again.
const AWAITING: Next = Next::Awaiting { for_ms: 5_000 };

/// In progress, triggered `ms` ago.
fn in_progress_since(ms: i64) -> Status {
    Status {
        trigger_timestamp: Some(timestamp(NOW - ms)),
        ..in_progress()
    }
}

fn completed(path: Option<&str>) -> Status {
    Status {
        path: path.map(str::to_owned),
        result_timestamp: Some(timestamp(NOW - 60_000)),
        trigger_id: Some(RECORDED.into()),
        ..status(State::Completed)
    }
}

fn job(state: FlinkJobState) -> Job {
    Job {
        name: "FlinkDeployment basic".into(),
        job_id: Some(JOB.into()),
        state: Some(state),
        cluster_not_ready: None,
        savepoint_dir: Some("file:/configured".into()),
    }
}

fn running() -> Target {
    Target::Found(job(FlinkJobState::Running))
}

fn observation(target: Target) -> Observation {
    Observation {
        target,
        fresh_trigger_id: FRESH.into(),
        now_ms: NOW,
        ..Default::default()
    }
}

fn polled(operation: SavepointPoll) -> Observation {
    Observation {
        operation: Some(operation),
        ..observation(running())
    }
}

/// The plan's actions without the label patch (checked on its own).
fn acts(plan: &Plan<Status, Action>) -> Vec<Action> {
    plan.actions
        .iter()
        .filter(|a| !matches!(a, Action::Labels(_)))
        .cloned()
        .collect()
}

fn reasons(plan: &Plan<Status, Action>) -> Vec<(Reason, bool)> {
    plan.events.iter().map(|e| (e.reason, e.warning)).collect()
}

fn trigger(trigger_id: &str, kind: TriggerKind) -> Action {
    Action::Trigger(Trigger {
        job_id: JOB.into(),
        trigger_id: trigger_id.into(),
        kind,
    })
}

fn savepoint_into(dir: &str) -> TriggerKind {
    TriggerKind::Savepoint {
        dir: dir.into(),
        format: SavepointFormat::Canonical,
    }
}

/// What a case expects of a plan.
struct Expect {
    state: State,
    actions: Vec<Action>,
    events: Vec<(Reason, bool)>,
    requeue: Next,
}

fn expect(state: State, actions: Vec<Action>, events: Vec<(Reason, bool)>, requeue: Next) -> Expect {
    Expect {
        state,
        actions,
        events,
        requeue,
    }
}

fn check(
    case: &str,
    snapshot: &FlinkStateSnapshot,
    observation: &Observation,
    expected: &Expect,
) -> Plan<Status, Action> {
    let plan = decide(snapshot, observation);
    assert_eq!(plan.status.state, Some(expected.state), "{case}: state");
    assert_eq!(acts(&plan), expected.actions, "{case}: actions");
    assert_eq!(reasons(&plan), expected.events, "{case}: events");
    assert_eq!(plan.requeue, expected.requeue, "{case}: requeue");
    plan
}

// === Triggering ===

#[test]
fn every_state_moves_as_its_observation_says() {
    use Reason::*;
    let warn = |r| (r, true);
    let note = |r| (r, false);
    let checkpoint_done = |path| Observation {
        checkpoint_path: Some(path),
        ..polled(SavepointPoll::Completed("7".into()))
    };
    let cases: Vec<(&str, FlinkStateSnapshot, Observation, Expect)> = vec![
        (
            "a new savepoint is triggered into its path",
            snapshot(savepoint_spec(), None, true),
            observation(running()),
            expect(
                State::InProgress,
                vec![trigger(FRESH, savepoint_into("file:/sp"))],
                vec![note(SavepointTriggered)],
                Next::Progress,
            ),
        ),
        (
            "a new savepoint without a path goes to the job's savepoint directory",
            snapshot(
                json!({"jobReference": {"kind": "FlinkDeployment", "name": "basic"}, "savepoint": {}}),
                None,
                true,
            ),
            observation(running()),
            expect(
                State::InProgress,
                vec![trigger(FRESH, savepoint_into("file:/configured"))],
                vec![note(SavepointTriggered)],
                Next::Progress,
            ),
        ),
        (
            "a NATIVE savepoint is taken in that format",
            snapshot(
                json!({"jobReference": {"kind": "FlinkDeployment", "name": "basic"}, "savepoint": {"path": "file:/sp", "formatType": "NATIVE"}}),
                None,
                true,
            ),
            observation(running()),
            expect(
                State::InProgress,
                vec![trigger(
                    FRESH,
                    TriggerKind::Savepoint {
                        dir: "file:/sp".into(),
                        format: SavepointFormat::Native,
                    },
                )],
                vec![note(SavepointTriggered)],
                Next::Progress,
            ),
        ),
        (
            "a new checkpoint is triggered (full)",
            snapshot(checkpoint_spec(), None, false),
            observation(running()),
            expect(
                State::InProgress,
                vec![trigger(FRESH, TriggerKind::Checkpoint(CheckpointKind::Full))],
                vec![note(CheckpointTriggered)],
                Next::Progress,
            ),
        ),
        (
            "a new checkpoint is of the job's checkpoint.type",
            snapshot(checkpoint_spec(), None, false),
            Observation {
                policy: crate::policy::Policy {
                    checkpoint_type: CheckpointKind::Incremental,
                    ..Default::default()
                },
                ..observation(running())
            },
            expect(
                State::InProgress,
                vec![trigger(
                    FRESH,
                    TriggerKind::Checkpoint(CheckpointKind::Incremental),
                )],
                vec![note(CheckpointTriggered)],
                Next::Progress,
            ),
        ),
        (
            "a trigger recorded but not known sent is sent again under its id, quietly",
            snapshot(
                checkpoint_spec(),
                Some(Status {
                    trigger_id: Some(RECORDED.into()),
                    ..status(State::TriggerPending)
                }),
                false,
            ),
            observation(running()),
            expect(
                State::InProgress,
                vec![trigger(RECORDED, TriggerKind::Checkpoint(CheckpointKind::Full))],
                vec![],
                Next::Progress,
            ),
        ),
        (
            "a pending snapshot of a job whose cluster is not ready waits",
            snapshot(checkpoint_spec(), Some(status(State::TriggerPending)), false),
            observation(Target::Found(Job {
                cluster_not_ready: Some("the JobManager is DEPLOYING".into()),
                ..job(FlinkJobState::Running)
            })),
            expect(State::TriggerPending, vec![], vec![], Next::Progress),
        ),
        (
            "a pending snapshot of a job resource that is gone is abandoned",
            snapshot(savepoint_spec(), None, true),
            observation(Target::Gone("FlinkDeployment ns/basic was not found".into())),
            expect(
                State::Abandoned,
                vec![],
                vec![warn(SnapshotAbandoned)],
                Next::Idle,
            ),
        ),
        (
            "a pending snapshot of a job that is not running is abandoned",
            snapshot(savepoint_spec(), None, true),
            observation(Target::Found(job(FlinkJobState::Suspended))),
            expect(
                State::Abandoned,
                vec![],
                vec![warn(SnapshotAbandoned)],
                Next::Idle,
            ),
        ),
        (
            "a snapshot that names no job is abandoned",
            snapshot(json!({"checkpoint": {}}), None, false),
            observation(Target::Unreferenced),
            expect(
                State::Abandoned,
                vec![],
                vec![warn(SnapshotAbandoned)],
                Next::Idle,
            ),
        ),
        (
            "a savepoint that already exists is recorded without asking Flink",
            snapshot(
                json!({"savepoint": {"path": "file:/sp/savepoint-1", "alreadyExists": true, "disposeOnDelete": false}}),
                None,
                false,
            ),
            observation(Target::Unreferenced),
            expect(
                State::Completed,
                vec![],
                vec![note(SavepointCompleted)],
                Next::Idle,
            ),
        ),
        (
            "a savepoint still under way is looked at again",
            snapshot(savepoint_spec(), Some(in_progress()), true),
            polled(SavepointPoll::InProgress),
            expect(State::InProgress, vec![], vec![], AWAITING),
        ),
        (
            "a JobManager that does not answer is asked again",
            snapshot(savepoint_spec(), Some(in_progress()), true),
            polled(SavepointPoll::Unreachable("refused".into())),
            expect(State::InProgress, vec![], vec![], AWAITING),
        ),
        (
            "a completed savepoint records its path",
            snapshot(savepoint_spec(), Some(in_progress()), true),
            polled(SavepointPoll::Completed("file:/sp/savepoint-e3bc32".into())),
            expect(
                State::Completed,
                vec![],
                vec![note(SavepointCompleted)],
                Next::Idle,
            ),
        ),
        (
            "a completed checkpoint records its external path",
            snapshot(checkpoint_spec(), Some(in_progress()), false),
            checkpoint_done(CheckpointPath::Found("file:/cp/chk-7".into())),
            expect(
                State::Completed,
                vec![],
                vec![note(CheckpointCompleted)],
                Next::Idle,
            ),
        ),
        (
            "a completed checkpoint whose details are not shown yet is looked for again",
            snapshot(checkpoint_spec(), Some(in_progress()), false),
            checkpoint_done(CheckpointPath::Forgotten(
                "Could not find checkpointing statistics".into(),
            )),
            expect(State::InProgress, vec![], vec![], AWAITING),
        ),
        (
            "a completed checkpoint whose details are forgotten completes without a path, with a warning",
            snapshot(checkpoint_spec(), Some(in_progress_since(DETAILS_LAG_MS)), false),
            checkpoint_done(CheckpointPath::Forgotten(
                "Could not find checkpointing statistics".into(),
            )),
            expect(State::Completed, vec![], vec![warn(CheckpointError)], Next::Idle),
        ),
        (
            "a completed checkpoint whose details could not be read is looked at again",
            snapshot(checkpoint_spec(), Some(in_progress()), false),
            checkpoint_done(CheckpointPath::Unavailable("timeout".into())),
            expect(State::InProgress, vec![], vec![], AWAITING),
        ),
        (
            "a failed savepoint is tried again after 10 s",
            snapshot(savepoint_spec(), Some(in_progress()), true),
            polled(SavepointPoll::Failed("IO-problem detected".into())),
            expect(
                State::TriggerPending,
                vec![],
                vec![warn(SavepointError)],
                Next::Within(10),
            ),
        ),
        (
            "a failed checkpoint is tried again after 10 s",
            snapshot(checkpoint_spec(), Some(in_progress()), false),
            polled(SavepointPoll::Failed("declined".into())),
            expect(
                State::TriggerPending,
                vec![],
                vec![warn(CheckpointError)],
                Next::Within(10),
            ),
        ),
        (
            "a trigger the JobManager forgot is sent again under the same id",
            snapshot(savepoint_spec(), Some(in_progress()), true),
            polled(SavepointPoll::UnknownTrigger),
            expect(
                State::InProgress,
                vec![trigger(RECORDED, savepoint_into("file:/sp"))],
                vec![],
                Next::Progress,
            ),
        ),
        (
            "a savepoint whose job Flink no longer has is abandoned",
            snapshot(savepoint_spec(), Some(in_progress()), true),
            polled(SavepointPoll::JobGone("FlinkJobNotFoundException".into())),
            expect(
                State::Abandoned,
                vec![],
                vec![warn(SnapshotAbandoned)],
                Next::Idle,
            ),
        ),
        (
            "a savepoint under way whose job stopped running is abandoned",
            snapshot(savepoint_spec(), Some(in_progress()), true),
            Observation {
                operation: Some(SavepointPoll::InProgress),
                ..observation(Target::Found(job(FlinkJobState::Canceled)))
            },
            expect(
                State::Abandoned,
                vec![],
                vec![warn(SnapshotAbandoned)],
                Next::Idle,
            ),
        ),
        (
            "a snapshot in progress without a trigger id is taken again",
            snapshot(
                checkpoint_spec(),
                Some(Status {
                    trigger_id: None,
                    ..in_progress()
                }),
                false,
            ),
            observation(running()),
            expect(
                State::InProgress,
                vec![trigger(FRESH, TriggerKind::Checkpoint(CheckpointKind::Full))],
                vec![note(CheckpointTriggered)],
                Next::Progress,
            ),
        ),
        (
            "a completed snapshot stays so",
            snapshot(savepoint_spec(), Some(completed(Some("file:/sp/1"))), true),
            observation(Target::Gone("gone".into())),
            expect(State::Completed, vec![], vec![], Next::Idle),
        ),
        (
            "an abandoned snapshot stays so",
            snapshot(savepoint_spec(), Some(status(State::Abandoned)), true),
            observation(running()),
            expect(State::Abandoned, vec![], vec![], Next::Idle),
        ),
        (
            "a snapshot that failed for good stays so",
            snapshot(savepoint_spec(), Some(status(State::Failed)), true),
            observation(running()),
            expect(State::Failed, vec![], vec![], Next::Idle),
        ),
    ];
    for (case, snapshot, observation, expected) in cases {
        check(case, &snapshot, &observation, &expected);
    }
}

#[test]
fn a_job_whose_tasks_do_not_all_run_yet_is_waited_for_not_failed() {
    for (kind, spec) in [("savepoint", savepoint_spec()), ("checkpoint", checkpoint_spec())] {
        let deploying = Observation {
            tasks_running: Some(false),
            ..observation(running())
        };
        let plan = check(
            &format!("{kind} of a job still deploying its tasks"),
            &snapshot(spec.clone(), None, true),
            &deploying,
            &expect(State::TriggerPending, vec![], vec![], Next::Progress),
        );
        assert_eq!(plan.status.failures, Some(0), "{kind}: not counted as a failure");
        assert_eq!(plan.status.trigger_id, None, "{kind}: no trigger id recorded");
        let ready = Observation {
            tasks_running: Some(true),
            ..observation(running())
        };
        let plan = decide(&snapshot(spec, None, true), &ready);
        assert!(
            acts(&plan).iter().any(|a| matches!(a, Action::Trigger(_))),
            "{kind}: triggered once the tasks run"
        );
    }
}

#[test]
fn the_trigger_id_is_recorded_before_the_trigger_is_sent() {
    let plan = decide(&snapshot(savepoint_spec(), None, true), &observation(running()));
    let before = plan.status_before.expect("written before the trigger");
    assert_eq!(before.state, Some(State::TriggerPending));
    assert_eq!(before.trigger_id.as_deref(), Some(FRESH));
    assert_eq!(before.trigger_timestamp, Some(timestamp(NOW)));
    assert_eq!(plan.status.trigger_id.as_deref(), Some(FRESH));
    assert_eq!(plan.status.trigger_timestamp, Some(timestamp(NOW)));
    // Sent again after a crash: nothing new recorded.
    let resent = decide(
        &snapshot(savepoint_spec(), Some(before), true),
        &observation(running()),
    );
    assert_eq!(resent.status_before, None);
    assert_eq!(acts(&resent), vec![trigger(FRESH, savepoint_into("file:/sp"))]);
}

#[test]
fn outcomes_record_path_error_and_timestamps_as_the_apache_operator_does() {
    let done = decide(
        &snapshot(savepoint_spec(), Some(in_progress()), true),
        &polled(SavepointPoll::Completed("file:/sp/savepoint-1".into())),
    )
    .status;
    assert_eq!(done.path.as_deref(), Some("file:/sp/savepoint-1"));
    assert_eq!(done.result_timestamp, Some(timestamp(NOW)));
    assert_eq!(done.trigger_timestamp, in_progress().trigger_timestamp);
    assert_eq!(done.trigger_id.as_deref(), Some(RECORDED));
    assert_eq!(done.error, None);

    let recorded = decide(
        &snapshot(
            json!({"savepoint": {"path": "file:/sp/savepoint-1", "alreadyExists": true}}),
            None,
            true,
        ),
        &observation(Target::Unreferenced),
    );
    assert_eq!(recorded.status.path.as_deref(), Some("file:/sp/savepoint-1"));
    // Nothing was triggered, and no time is stated for the savepoint: none is lent to it.
    assert_eq!(recorded.status.trigger_timestamp, None);
    assert_eq!(recorded.status.result_timestamp, None);
    assert_eq!(recorded.status.trigger_id, None);

    let abandoned = decide(
        &snapshot(savepoint_spec(), None, true),
        &observation(Target::Gone("FlinkDeployment ns/basic was not found".into())),
    )
    .status;
    assert_eq!(
        abandoned.error.as_deref(),
        Some("FlinkDeployment ns/basic was not found")
    );
    assert_eq!(abandoned.result_timestamp, Some(timestamp(NOW)));
    assert_eq!(abandoned.path, None);

    let checkpoint = decide(
        &snapshot(checkpoint_spec(), Some(in_progress_since(DETAILS_LAG_MS)), false),
        &Observation {
            checkpoint_path: Some(CheckpointPath::Forgotten("gone from the history".into())),
            ..polled(SavepointPoll::Completed("7".into()))
        },
    );
    assert_eq!(checkpoint.status.path, None);
    assert!(
        checkpoint.events[0].note.contains("web.checkpoints.history"),
        "{}",
        checkpoint.events[0].note
    );
}

#[test]
fn a_savepoint_without_a_directory_fails_naming_the_setting() {
    let mut target = job(FlinkJobState::Running);
    target.savepoint_dir = None;
    let plan = decide(
        &snapshot(
            json!({"jobReference": {"kind": "FlinkDeployment", "name": "basic"}, "savepoint": {}}),
            None,
            true,
        ),
        &observation(Target::Found(target)),
    );
    assert_eq!(plan.status.state, Some(State::TriggerPending));
    assert_eq!(plan.status.failures, Some(1));
    let error = plan.status.error.clone().unwrap_or_default();
    for named in [
        "spec.savepoint.path",
        "execution.checkpointing.savepoint-dir",
        "state.savepoints.dir",
        "FlinkDeployment basic",
    ] {
        assert!(error.contains(named), "{named} missing from {error}");
    }
    assert!(acts(&plan).is_empty());

    let unknown = decide(
        &snapshot(
            json!({"jobReference": {"kind": "FlinkDeployment", "name": "basic"}, "savepoint": {"path": "file:/sp", "formatType": "UNKNOWN"}}),
            None,
            true,
        ),
        &observation(running()),
    );
    assert!(
        unknown
            .status
            .error
            .is_some_and(|e| e.contains("formatType UNKNOWN"))
    );
}

#[test]
fn an_invalid_snapshot_is_reported_once_and_never_triggered() {
    let invalid = Observation {
        violations: vec!["spec: exactly one of spec.savepoint or spec.checkpoint must be set".into()],
        ..observation(running())
    };
    let first = decide(
        &snapshot(
            json!({"jobReference": {"kind": "FlinkDeployment", "name": "basic"}}),
            None,
            false,
        ),
        &invalid,
    );
    assert_eq!(first.status.state, Some(State::TriggerPending));
    assert!(acts(&first).is_empty());
    assert_eq!(reasons(&first), vec![(Reason::ValidationError, true)]);
    assert!(
        first
            .status
            .error
            .as_deref()
            .is_some_and(|e| e.contains("exactly one"))
    );
    let again = decide(
        &snapshot(
            json!({"jobReference": {"kind": "FlinkDeployment", "name": "basic"}}),
            Some(first.status.clone()),
            false,
        ),
        &invalid,
    );
    assert!(again.events.is_empty());
    assert_eq!(again.status, first.status);
    // Fixed: the stale error goes as the snapshot is taken.
    let fixed = decide(
        &snapshot(checkpoint_spec(), Some(first.status), false),
        &observation(running()),
    );
    assert_eq!(fixed.status.error, None);
    assert_eq!(
        acts(&fixed),
        vec![trigger(FRESH, TriggerKind::Checkpoint(CheckpointKind::Full))]
    );
}

// === Retries ===

#[test]
fn the_back_off_doubles_from_10_s_and_never_overflows() {
    let delays: Vec<i64> = (1..=5).map(retry_delay_ms).collect();
    assert_eq!(delays, [10_000, 20_000, 40_000, 80_000, 160_000]);
    assert_eq!(retry_delay_ms(0), 10_000);
    assert!(retry_delay_ms(i32::MAX) > 0);
}

#[test]
fn a_failed_snapshot_waits_for_its_back_off_from_the_failure() {
    let failed_at = |ago_ms: i64, failures: i32| Status {
        failures: Some(failures),
        error: Some("IO-problem detected".into()),
        result_timestamp: Some(timestamp(NOW - ago_ms)),
        ..status(State::TriggerPending)
    };
    // (failed how long ago, failures so far, what happens)
    let cases: Vec<(i64, i32, Option<Next>)> = vec![
        (1_000, 1, Some(Next::Within(9))),
        (9_500, 1, Some(Next::Within(1))),
        (10_000, 1, None),
        (15_000, 2, Some(Next::Within(5))),
        (20_000, 2, None),
        (60_000, 3, None),
        (30_000, 4, Some(Next::Within(50))),
    ];
    for (ago, failures, waits) in cases {
        let plan = decide(
            &snapshot(checkpoint_spec(), Some(failed_at(ago, failures)), false),
            &observation(running()),
        );
        match waits {
            Some(next) => {
                assert_eq!(plan.requeue, next, "{ago} ms after failure {failures}");
                assert!(acts(&plan).is_empty(), "{ago} ms after failure {failures}");
                assert_eq!(plan.status.state, Some(State::TriggerPending));
            }
            None => {
                assert_eq!(
                    acts(&plan),
                    vec![trigger(FRESH, TriggerKind::Checkpoint(CheckpointKind::Full))],
                    "{ago} ms after failure {failures}"
                );
                // The failure count and error stay until the snapshot completes.
                assert_eq!(plan.status.failures, Some(failures));
            }
        }
    }
}

#[test]
fn the_backoff_limit_bounds_the_attempts() {
    let spec = |limit: Option<i32>| {
        let mut spec = savepoint_spec();
        if let Some(limit) = limit {
            spec["backoffLimit"] = json!(limit);
        }
        serde_json::from_value::<flink_operator_api::FlinkStateSnapshotSpec>(spec).unwrap()
    };
    // (backoffLimit, failures before this one, state after it, requeue)
    let cases: Vec<(Option<i32>, i32, State, Next)> = vec![
        (Some(0), 0, State::Failed, Next::Idle),
        (Some(2), 0, State::TriggerPending, Next::Within(10)),
        (Some(2), 1, State::TriggerPending, Next::Within(20)),
        (Some(2), 2, State::Failed, Next::Idle),
        (Some(-1), 0, State::TriggerPending, Next::Within(10)),
        (None, 9, State::TriggerPending, Next::Within(5120)),
        (
            None,
            1000,
            State::TriggerPending,
            Next::Within(u64::try_from(retry_delay_ms(1001) / 1000).unwrap()),
        ),
    ];
    for (limit, before, state, next) in cases {
        let stored = Status {
            failures: Some(before),
            trigger_id: Some(RECORDED.into()),
            path: None,
            ..status(State::InProgress)
        };
        let (status, event, requeue) = failed(&spec(limit), stored, "refused", NOW);
        let case = format!("limit {limit:?} after {before} failures");
        assert_eq!(status.state, Some(state), "{case}");
        assert_eq!(status.failures, Some(before + 1), "{case}");
        assert_eq!(status.error.as_deref(), Some("refused"), "{case}");
        assert_eq!(status.result_timestamp, Some(timestamp(NOW)), "{case}");
        assert_eq!(
            status.trigger_id, None,
            "{case}: the next attempt is a new operation"
        );
        assert_eq!(requeue, next, "{case}");
        assert_eq!(
            (event.reason, event.warning),
            (Reason::SavepointError, true),
            "{case}"
        );
    }
}

#[test]
fn a_trigger_flink_refuses_counts_as_a_failed_attempt_and_an_unreachable_one_does_not() {
    use crate::{
        flink::FlinkError,
        job_actions::JobActError,
        runtime::Reconciler,
        state_snapshot::{ReconcileError, Snapshots, act::ActError, observe::Observed},
    };
    let snapshot = snapshot(checkpoint_spec(), None, false);
    let observed = Observed {
        observation: observation(running()),
        rest_url: Some("http://basic-rest.ns:8081".into()),
    };
    let plan = decide(&snapshot, &observed.observation);
    let error = |source| {
        ReconcileError::Act(ActError::Job(JobActError::Flink {
            what: "triggering a checkpoint",
            job_id: JOB.into(),
            source,
        }))
    };
    let refused = error(FlinkError::BadRequest {
        url: "u".into(),
        status: 404,
        message: "Not found: /jobs/x/checkpoints".into(),
    });
    let recovery = Snapshots::recover(&snapshot, &observed, &plan, &refused).expect("a failed attempt");
    assert_eq!(recovery.status.state, Some(State::TriggerPending));
    assert_eq!(recovery.status.failures, Some(1));
    assert_eq!(recovery.status.trigger_id, None);
    assert_eq!(recovery.events[0].reason, Reason::CheckpointError);
    let unreachable = error(FlinkError::Unreachable {
        url: "u".into(),
        reason: "refused".into(),
    });
    assert!(Snapshots::recover(&snapshot, &observed, &plan, &unreachable).is_none());
}

// === Deletion ===

#[test]
fn deletion_disposes_of_completed_savepoints_and_never_hangs() {
    use Reason::*;
    let warn = |r| (r, true);
    let note = |r| (r, false);
    let done = || {
        deleting(snapshot(
            savepoint_spec(),
            Some(completed(Some("file:/sp/savepoint-1"))),
            true,
        ))
    };
    let disposal = |poll| Observation {
        disposal: Some(poll),
        ..observation(running())
    };
    let dispose = Action::Dispose {
        path: "file:/sp/savepoint-1".into(),
    };
    let cases: Vec<(&str, FlinkStateSnapshot, Observation, Expect)> = vec![
        (
            "a checkpoint is released at once",
            deleting(snapshot(
                checkpoint_spec(),
                Some(completed(Some("file:/cp/chk-1"))),
                true,
            )),
            observation(running()),
            expect(State::Completed, vec![Action::Release], vec![], Next::Idle),
        ),
        (
            "a savepoint kept on deletion is released at once",
            deleting(snapshot(
                json!({"jobReference": {"kind": "FlinkDeployment", "name": "basic"}, "savepoint": {"path": "file:/sp", "disposeOnDelete": false}}),
                Some(completed(Some("file:/sp/savepoint-1"))),
                true,
            )),
            observation(running()),
            expect(State::Completed, vec![Action::Release], vec![], Next::Idle),
        ),
        (
            "a pending savepoint is released at once",
            deleting(snapshot(
                savepoint_spec(),
                Some(status(State::TriggerPending)),
                true,
            )),
            observation(running()),
            expect(State::TriggerPending, vec![Action::Release], vec![], Next::Idle),
        ),
        (
            "a failed savepoint is released at once",
            deleting(snapshot(savepoint_spec(), Some(status(State::Failed)), true)),
            observation(running()),
            expect(State::Failed, vec![Action::Release], vec![], Next::Idle),
        ),
        (
            "an abandoned savepoint is released at once",
            deleting(snapshot(savepoint_spec(), Some(status(State::Abandoned)), true)),
            observation(running()),
            expect(State::Abandoned, vec![Action::Release], vec![], Next::Idle),
        ),
        (
            "a completed savepoint without a path is released at once",
            deleting(snapshot(savepoint_spec(), Some(completed(None)), true)),
            observation(running()),
            expect(State::Completed, vec![Action::Release], vec![], Next::Idle),
        ),
        (
            "a completed savepoint's disposal is started",
            done(),
            observation(running()),
            expect(State::Completed, vec![dispose.clone()], vec![], Next::Progress),
        ),
        (
            "a disposal the JobManager forgot (it restarted) is started again",
            done(),
            disposal(SavepointPoll::UnknownTrigger),
            expect(State::Completed, vec![dispose.clone()], vec![], Next::Progress),
        ),
        (
            "a disposal under way is waited for",
            done(),
            disposal(SavepointPoll::InProgress),
            expect(State::Completed, vec![], vec![], Next::Progress),
        ),
        (
            "a disposed savepoint releases its object",
            done(),
            disposal(SavepointPoll::Completed(String::new())),
            expect(
                State::Completed,
                vec![Action::Release],
                vec![note(SavepointDisposed)],
                Next::Idle,
            ),
        ),
        (
            "a disposal Flink failed releases the object naming the path",
            done(),
            disposal(SavepointPoll::Failed("FileNotFoundException".into())),
            expect(
                State::Completed,
                vec![Action::Release],
                vec![warn(SavepointNotDisposed)],
                Next::Idle,
            ),
        ),
        (
            "a JobManager that does not answer once is asked again",
            done(),
            disposal(SavepointPoll::Unreachable("refused".into())),
            expect(State::Completed, vec![], vec![], Next::Progress),
        ),
        (
            "a JobManager that does not answer twice releases the object naming the path",
            done(),
            Observation {
                unanswered_again: true,
                ..disposal(SavepointPoll::Unreachable("refused".into()))
            },
            expect(
                State::Completed,
                vec![Action::Release],
                vec![warn(SavepointNotDisposed)],
                Next::Idle,
            ),
        ),
        (
            "a savepoint whose job resource is gone is released naming the path",
            done(),
            observation(Target::Gone("FlinkDeployment ns/basic was not found".into())),
            expect(
                State::Completed,
                vec![Action::Release],
                vec![warn(SavepointNotDisposed)],
                Next::Idle,
            ),
        ),
        (
            "a savepoint whose cluster is not ready is released naming the path (its job need not run)",
            done(),
            observation(Target::Found(Job {
                cluster_not_ready: Some("the JobManager of FlinkDeployment basic is MISSING".into()),
                ..job(FlinkJobState::Finished)
            })),
            expect(
                State::Completed,
                vec![Action::Release],
                vec![warn(SavepointNotDisposed)],
                Next::Idle,
            ),
        ),
        (
            "a savepoint of a job that finished is disposed of through its ready cluster",
            done(),
            Observation {
                disposal: Some(SavepointPoll::UnknownTrigger),
                ..observation(Target::Found(job(FlinkJobState::Finished)))
            },
            expect(State::Completed, vec![dispose.clone()], vec![], Next::Progress),
        ),
        (
            "a savepoint under way is waited for",
            deleting(snapshot(savepoint_spec(), Some(in_progress()), true)),
            polled(SavepointPoll::InProgress),
            expect(State::InProgress, vec![], vec![], Next::Progress),
        ),
        (
            "a savepoint that completes during deletion is recorded, then disposed of",
            deleting(snapshot(savepoint_spec(), Some(in_progress()), true)),
            polled(SavepointPoll::Completed("file:/sp/savepoint-2".into())),
            expect(State::Completed, vec![], vec![], Next::Progress),
        ),
        (
            "a savepoint under way that failed is released",
            deleting(snapshot(savepoint_spec(), Some(in_progress()), true)),
            polled(SavepointPoll::Failed("declined".into())),
            expect(State::InProgress, vec![Action::Release], vec![], Next::Idle),
        ),
        (
            "a savepoint under way whose job is gone is released with a warning",
            deleting(snapshot(savepoint_spec(), Some(in_progress()), true)),
            observation(Target::Gone("FlinkDeployment ns/basic was not found".into())),
            expect(
                State::InProgress,
                vec![Action::Release],
                vec![warn(SavepointNotDisposed)],
                Next::Idle,
            ),
        ),
        (
            "an object without our finalizer is not ours to hold",
            deleting(snapshot(
                savepoint_spec(),
                Some(completed(Some("file:/sp/1"))),
                false,
            )),
            observation(running()),
            expect(State::Completed, vec![], vec![], Next::Idle),
        ),
    ];
    for (case, snapshot, observation, expected) in cases {
        let plan = check(case, &snapshot, &observation, &expected);
        assert!(
            !plan.actions.iter().any(|a| matches!(a, Action::Labels(_))),
            "{case}: a deleted object's labels are left alone"
        );
        for event in plan
            .events
            .iter()
            .filter(|e| e.reason == Reason::SavepointNotDisposed)
        {
            if snapshot.status.as_ref().and_then(|s| s.path.as_deref()).is_some() {
                assert!(
                    event.note.contains("file:/sp/savepoint-1"),
                    "{case}: {}",
                    event.note
                );
            }
        }
    }
    // The completed path is written before the disposal that follows.
    let settled = decide(
        &deleting(snapshot(savepoint_spec(), Some(in_progress()), true)),
        &polled(SavepointPoll::Completed("file:/sp/savepoint-2".into())),
    );
    assert_eq!(settled.status.path.as_deref(), Some("file:/sp/savepoint-2"));
}

// === Labels and finalizer ===

#[test]
fn a_savepoint_disposed_of_on_deletion_gets_the_finalizer_first() {
    let cases: Vec<(&str, Value, bool)> = vec![
        (
            "a savepoint (disposeOnDelete defaults to true)",
            savepoint_spec(),
            true,
        ),
        (
            "a savepoint kept on deletion",
            json!({"jobReference": {"kind": "FlinkDeployment", "name": "basic"}, "savepoint": {"path": "file:/sp", "disposeOnDelete": false}}),
            false,
        ),
        ("a checkpoint", checkpoint_spec(), false),
    ];
    for (case, spec, wanted) in cases {
        let plan = decide(&snapshot(spec.clone(), None, false), &observation(running()));
        assert_eq!(
            plan.actions.first() == Some(&Action::AddFinalizer),
            wanted,
            "{case}"
        );
        let plan = decide(&snapshot(spec, None, true), &observation(running()));
        assert!(!plan.actions.contains(&Action::AddFinalizer), "{case}: once");
    }
}

#[test]
fn labels_follow_the_snapshot_and_are_patched_only_when_one_differs() {
    let fresh = snapshot(savepoint_spec(), None, true);
    let plan = decide(&fresh, &observation(running()));
    let wanted: std::collections::BTreeMap<String, String> = [
        ("snapshot.type", "SAVEPOINT"),
        ("snapshot.trigger-type", "MANUAL"),
        ("snapshot.state", "IN_PROGRESS"),
        ("job-reference.kind", "FlinkDeployment"),
        ("job-reference.name", "basic"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(plan.actions.last(), Some(&Action::Labels(wanted)));

    // An operator-made snapshot keeps its trigger type; other labels are not ours to set.
    let mut periodic = labelled(snapshot(
        checkpoint_spec(),
        Some(status(State::TriggerPending)),
        false,
    ));
    let labels_of = periodic.metadata.labels.get_or_insert_with(Default::default);
    labels_of.insert("snapshot.trigger-type".into(), "PERIODIC".into());
    labels_of.insert("team".into(), "a".into());
    let plan = decide(&periodic, &observation(running()));
    let Some(Action::Labels(patched)) = plan.actions.last() else {
        panic!("the state label changed: {:?}", plan.actions)
    };
    assert_eq!(patched["snapshot.trigger-type"], "PERIODIC");
    assert_eq!(patched["snapshot.state"], "IN_PROGRESS");
    assert!(!patched.contains_key("team"));

    // A job resource name too long for a label value is left out.
    let long = "j".repeat(64);
    let named = snapshot(
        json!({"jobReference": {"kind": "FlinkSessionJob", "name": long}, "checkpoint": {}}),
        None,
        false,
    );
    let labels = labels(&named, &Status::default());
    assert!(!labels.contains_key("job-reference.name"));
    assert_eq!(labels["job-reference.kind"], "FlinkSessionJob");
    assert_eq!(labels["snapshot.state"], "TRIGGER_PENDING");
}

#[test]
fn a_settled_snapshot_costs_nothing() {
    let settled = [
        labelled(snapshot(
            savepoint_spec(),
            Some(completed(Some("file:/sp/1"))),
            true,
        )),
        labelled(snapshot(checkpoint_spec(), Some(completed(None)), false)),
        labelled(snapshot(savepoint_spec(), Some(status(State::Abandoned)), true)),
        labelled(snapshot(savepoint_spec(), Some(status(State::Failed)), true)),
    ];
    for snapshot in settled {
        for target in [running(), Target::Gone("gone".into())] {
            let plan = decide(&snapshot, &observation(target));
            assert_eq!(plan.status_before, None);
            assert!(plan.actions.is_empty(), "{:?}", plan.actions);
            assert!(plan.events.is_empty());
            assert_eq!(Some(&plan.status), snapshot.status.as_ref(), "no status write");
            assert_eq!(plan.requeue, Next::Idle, "not looked at again until it changes");
        }
    }
    // A snapshot in progress costs its poll, and no write while nothing changes.
    let polling = labelled(snapshot(savepoint_spec(), Some(in_progress()), true));
    let plan = decide(&polling, &polled(SavepointPoll::InProgress));
    assert!(plan.actions.is_empty());
    assert_eq!(Some(&plan.status), polling.status.as_ref());
}

#[test]
fn the_loop_runs_unless_switched_off() {
    let config = |value: Option<&str>| -> std::collections::BTreeMap<String, String> {
        value
            .map(|v| {
                [(keys::operator::SNAPSHOT_RESOURCE_ENABLED.to_owned(), v.to_owned())]
                    .into_iter()
                    .collect()
            })
            .unwrap_or_default()
    };
    let enabled = crate::policy::snapshot_loop_enabled;
    assert!(enabled(&config(None)));
    assert!(enabled(&config(Some("true"))));
    assert!(!enabled(&config(Some(" False "))));
}

#[test]
fn only_unsettled_snapshots_wait_on_their_job_resource() {
    use flink_operator_api::JobKind;
    let waits = |status: Option<Status>| {
        super::waits_on(
            &snapshot(savepoint_spec(), status, true),
            JobKind::FlinkDeployment,
            "basic",
        )
    };
    assert!(waits(None));
    assert!(waits(Some(status(State::TriggerPending))));
    assert!(waits(Some(in_progress())));
    assert!(!waits(Some(completed(Some("file:/sp/1")))));
    assert!(!waits(Some(status(State::Abandoned))));
    assert!(!waits(Some(status(State::Failed))));
    let other = snapshot(savepoint_spec(), None, true);
    assert!(!super::waits_on(&other, JobKind::FlinkDeployment, "other"));
    assert!(!super::waits_on(&other, JobKind::FlinkSessionJob, "basic"));
}

// === A path a job may still need ===

/// The job resources of namespace `ns` as the caches hold them, for
/// [`crate::lifecycle::protected::who_needs`].
mod namespace {
    use std::sync::Arc;

    use flink_operator_api::{FlinkBlueGreenDeployment, FlinkDeployment, FlinkSessionJob, JobKind};
    use k8s_openapi::{api::apps::v1::ControllerRevision, apimachinery::pkg::apis::meta::v1::OwnerReference};
    use serde_json::{Value, json};

    use crate::lifecycle::revisions::{Revision, controller_revision};

    pub fn deployment(name: &str, uid: &str, job: Value, status: Value) -> Arc<FlinkDeployment> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
                "metadata": {"name": name, "namespace": "ns", "uid": uid},
                "spec": {"image": "flink:1.20", "flinkVersion": "v1_20", "job": job},
                "status": status,
            }))
            .unwrap(),
        )
    }

    pub fn session_job(name: &str, uid: &str, job: Value, status: Value) -> Arc<FlinkSessionJob> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
                "metadata": {"name": name, "namespace": "ns", "uid": uid},
                "spec": {"deploymentName": "session", "job": job},
                "status": status,
            }))
            .unwrap(),
        )
    }

    pub fn blue_green(name: &str, job: Value) -> Arc<FlinkBlueGreenDeployment> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkBlueGreenDeployment",
                "metadata": {"name": name, "namespace": "ns", "uid": "u-bg"},
                "spec": {"template": {"spec": {"image": "flink:1.20", "flinkVersion": "v1_20", "job": job}}},
            }))
            .unwrap(),
        )
    }

    /// Revision `number` of FlinkDeployment `resource`, owned by `owner_uid`, started from
    /// `started_from`.
    pub fn revision(
        resource: &str,
        owner_uid: &str,
        number: i64,
        started_from: &str,
    ) -> Arc<ControllerRevision> {
        let owner = OwnerReference {
            api_version: "flink.apache.org/v1beta1".into(),
            kind: "FlinkDeployment".into(),
            name: resource.into(),
            uid: owner_uid.into(),
            controller: Some(true),
            ..Default::default()
        };
        let revision = Revision {
            number,
            name: format!("{resource}-{number}"),
            spec: json!({"job": {"jarURI": format!("local:///v{number}.jar")}}),
            started_from: Some(started_from.into()),
            started_from_ms: None,
            applied_ms: super::NOW,
        };
        Arc::new(controller_revision(
            JobKind::FlinkDeployment,
            resource,
            "ns",
            owner,
            &revision,
        ))
    }

    pub fn jar() -> Value {
        json!({"jarURI": "local:///job.jar", "upgradeMode": "savepoint"})
    }
}

#[test]
fn a_savepoint_a_job_may_still_need_is_kept_on_deletion_naming_who_needs_it() {
    use crate::lifecycle::protected::who_needs;
    use namespace::*;
    const PATH: &str = "file:/sp/savepoint-1";
    let resumed = json!({"jobStatus": {"state": "RUNNING", "upgradeSavepointPath": PATH}});
    let last =
        json!({"jobStatus": {"savepointInfo": {"lastSavepoint": {"location": PATH, "timeStamp": NOW}}}});
    let other = json!({"jobStatus": {"upgradeSavepointPath": "file:/sp/other"}});
    let with_initial = with_initial_path(jar(), PATH);
    // (case, deployments, session jobs, blue/greens, revisions, who is named (None: disposed of))
    type Case<'a> = (
        &'a str,
        Vec<std::sync::Arc<flink_operator_api::FlinkDeployment>>,
        Vec<std::sync::Arc<flink_operator_api::FlinkSessionJob>>,
        Vec<std::sync::Arc<flink_operator_api::FlinkBlueGreenDeployment>>,
        Vec<std::sync::Arc<k8s_openapi::api::apps::v1::ControllerRevision>>,
        Option<&'a str>,
    );
    let cases: Vec<Case> = vec![
        (
            "the job it refers to was resumed from it (and runs)",
            vec![deployment("basic", "u-basic", jar(), resumed.clone())],
            vec![],
            vec![],
            vec![],
            Some("FlinkDeployment basic: the state its job was started from"),
        ),
        (
            "another job of the namespace was resumed from it",
            vec![deployment("basic", "u-basic", jar(), other.clone())],
            vec![session_job("other", "u-other", jar(), resumed.clone())],
            vec![],
            vec![],
            Some("FlinkSessionJob other: the state its job was started from"),
        ),
        (
            "it is a job's last savepoint",
            vec![deployment("basic", "u-basic", jar(), last)],
            vec![],
            vec![],
            vec![],
            Some("FlinkDeployment basic: its last savepoint"),
        ),
        (
            "a kept revision of a job was started from it",
            vec![deployment("basic", "u-basic", jar(), other.clone())],
            vec![],
            vec![],
            vec![revision("basic", "u-basic", 1, PATH)],
            Some("FlinkDeployment basic: the state its revision 1 was started from"),
        ),
        (
            "a job's spec starts from it",
            vec![deployment(
                "basic",
                "u-basic",
                with_initial.clone(),
                other.clone(),
            )],
            vec![],
            vec![],
            vec![],
            Some("FlinkDeployment basic: the state its spec's job.initialSavepointPath names"),
        ),
        (
            "a blue/green deployment's template starts from it",
            vec![],
            vec![],
            vec![blue_green("bg", with_initial)],
            vec![],
            Some("FlinkBlueGreenDeployment bg:"),
        ),
        (
            "nobody needs it",
            vec![deployment("basic", "u-basic", jar(), other.clone())],
            vec![session_job("other", "u-other", jar(), other)],
            vec![],
            vec![],
            None,
        ),
        (
            "a revision of an earlier resource of the same name does not count",
            vec![deployment("basic", "u-basic", jar(), json!({}))],
            vec![],
            vec![],
            vec![revision("basic", "u-earlier", 1, PATH)],
            None,
        ),
    ];
    let deleted = deleting(snapshot(savepoint_spec(), Some(completed(Some(PATH))), true));
    for (case, deployments, session_jobs, blue_greens, revisions, named) in cases {
        let observation = Observation {
            needed_by: who_needs(PATH, &deployments, &session_jobs, &blue_greens, &revisions),
            ..observation(running())
        };
        let plan = decide(&deleted, &observation);
        match named {
            Some(who) => {
                assert_eq!(
                    plan.actions,
                    vec![Action::Release],
                    "{case}: files kept, finalizer released"
                );
                let [event] = plan.events.as_slice() else {
                    panic!("{case}: {:?}", plan.events)
                };
                assert_eq!(event.reason, Reason::SavepointNotDisposed, "{case}");
                assert!(event.warning, "{case}");
                assert!(
                    event.note.contains(PATH) && event.note.contains(who),
                    "{case}: {}",
                    event.note
                );
            }
            None => assert_eq!(
                plan.actions,
                vec![Action::Dispose { path: PATH.into() }],
                "{case}: {:?}",
                plan.events
            ),
        }
    }
    // A disposal already under way (started before anything needed the path) is followed.
    let under_way = Observation {
        needed_by: vec!["FlinkDeployment basic: the state its job was started from".into()],
        disposal: Some(SavepointPoll::InProgress),
        ..observation(running())
    };
    assert_eq!(decide(&deleted, &under_way).actions, vec![]);
}

fn with_initial_path(mut job: Value, path: &str) -> Value {
    job["initialSavepointPath"] = json!(path);
    job
}

#[test]
fn a_recorded_savepoint_carries_the_time_stated_for_it_or_none_never_the_time_it_is_recorded() {
    let key = keys::annotations::SAVEPOINT_COMPLETED_AT;
    // (case, the annotation, resultTimestamp, part of the Event's note)
    let cases = [
        (
            "no time stated: unknown",
            None,
            None,
            "no time is stated for it (annotation flink.apache.org/savepoint-completed-at), so its age is unknown",
        ),
        (
            "a month-old savepoint keeps its month",
            Some(timestamp(NOW - 30 * 86_400_000)),
            Some(timestamp(NOW - 30 * 86_400_000)),
            "completed at",
        ),
        (
            "stated to the millisecond",
            Some(timestamp(NOW - 1_234)),
            Some(timestamp(NOW - 1_234)),
            "completed at",
        ),
        (
            "a time later than now is not believed",
            Some(timestamp(NOW + 60_000)),
            None,
            "is later than now",
        ),
        (
            "not a time (the webhook was bypassed)",
            Some("yesterday".to_owned()),
            None,
            "is not an RFC 3339 time",
        ),
    ];
    for (case, stated, expected, part) in cases {
        let mut recorded = snapshot(
            json!({"savepoint": {"path": "file:/sp/imported", "alreadyExists": true, "disposeOnDelete": false}}),
            None,
            false,
        );
        if let Some(at) = stated {
            recorded
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(key.to_owned(), at);
        }
        let plan = decide(&recorded, &observation(Target::Unreferenced));
        assert_eq!(plan.status.state, Some(State::Completed), "{case}: {plan:?}");
        assert_eq!(plan.status.path.as_deref(), Some("file:/sp/imported"), "{case}");
        assert_eq!(plan.status.result_timestamp, expected, "{case}");
        assert_eq!(
            plan.status.trigger_timestamp, None,
            "{case}: nothing was triggered"
        );
        let note = &plan
            .events
            .first()
            .unwrap_or_else(|| panic!("{case}: {plan:?}"))
            .note;
        assert!(note.contains(part), "{case}: {note}");
    }
}
