//! The step table of [`crate::lifecycle::step`], against both kinds: for each (stored
//! status, observation), the step each kind derives. One row per step; a row of a step only
//! one kind takes says what the other derives instead.

use flink_operator_api::LifecycleStatus;
use flink_operator_api::common::{
    ReconciliationState, ReconciliationStatus, ResourceLifecycleState, SavepointInfo,
};

use super::*;
use crate::lifecycle::kind::StepName;

/// The parts of a stored status a row edits, the same for both kinds.
struct Shared {
    rs: Option<ReconciliationStatus>,
    job: JobStatus,
    lifecycle: Option<ResourceLifecycleState>,
}

fn edited<S: LifecycleStatus>(mut status: S, edit: fn(&mut Shared)) -> S {
    let mut shared = Shared {
        rs: status.reconciliation_mut().take(),
        job: std::mem::take(status.job_status_mut()),
        lifecycle: status.lifecycle_state_mut().take(),
    };
    edit(&mut shared);
    *status.reconciliation_mut() = shared.rs;
    *status.job_status_mut() = shared.job;
    *status.lifecycle_state_mut() = shared.lifecycle;
    status
}

/// One row: the resource's `spec.job`, the `spec.job` its stored status runs (None: no
/// status) and how that status is edited, what is observed, and the step each kind derives.
struct Row {
    job: Value,
    stored: Option<Value>,
    edit: fn(&mut Shared),
    look: Look,
    deleting: bool,
    application: fn(&mut fd::Observation),
    session: fn(&mut sj::Observation),
    /// The step of the row.
    step: StepName,
    /// The step a FlinkDeployment derives, and a FlinkSessionJob.
    steps: (StepName, StepName),
}

/// A running job in savepoint mode, looked at unchanged: the row of `step`, which both
/// kinds derive.
fn row(step: StepName) -> Row {
    Row {
        job: job_spec(UpgradeMode::Savepoint),
        stored: Some(job_spec(UpgradeMode::Savepoint)),
        edit: |_| {},
        look: running_job(),
        deleting: false,
        application: |_| {},
        session: |_| {},
        step,
        steps: (step, step),
    }
}

fn stateless(parallelism: i64) -> Value {
    with(
        job_spec(UpgradeMode::Stateless),
        "parallelism",
        json!(parallelism),
    )
}

/// The recorded spec with one field of its job set.
fn recorded_with(s: &mut Shared, field: &str, value: Value) -> String {
    let rs = s.rs.as_mut().expect("a recorded spec");
    let mut spec: Value =
        serde_json::from_str(rs.last_reconciled_spec.as_deref().expect("a recorded spec")).expect("json");
    spec["spec"]["job"][field] = value;
    spec.to_string()
}

/// The recorded spec, with its job's parallelism at 3, as the last stable one.
fn stable_at_parallelism_3(s: &mut Shared) {
    let stable = recorded_with(s, "parallelism", json!(3));
    s.rs.as_mut().expect("recorded").last_stable_spec = Some(stable);
}

/// A savepoint of `trigger_type` triggered a second ago, its trigger id recorded.
fn savepoint_triggered(s: &mut Shared, trigger_type: SnapshotTriggerType) {
    s.job.savepoint_info = Some(SavepointInfo {
        trigger_id: Some("trigger-0".into()),
        trigger_type: Some(trigger_type),
        trigger_timestamp: Some(NOW - 1_000),
        ..SavepointInfo::default()
    });
}

/// The policy of a cluster whose adaptive scheduler rescales jobs in place.
fn adaptive() -> Policy {
    Policy {
        rescaler: Some(crate::policy::Rescaler::Adaptive),
        ..Policy::status_only()
    }
}

fn rows() -> Vec<Row> {
    use StepName::*;
    vec![
        Row {
            deleting: true,
            ..row(Deleting)
        },
        // An application cluster reads an unreadable spec as none recorded.
        Row {
            edit: |s| s.rs.as_mut().expect("recorded").last_reconciled_spec = Some("not a spec".into()),
            steps: (FirstStart, Unreadable),
            ..row(Unreadable)
        },
        Row {
            session: |o| o.session = sj::SessionObservation::NotReady("DEPLOYING".into()),
            steps: (Steady, UntilReady),
            ..row(UntilReady)
        },
        Row {
            edit: |s| savepoint_triggered(s, SnapshotTriggerType::Upgrade),
            look: Look {
                savepoint: Some(SavepointPoll::InProgress),
                ..running_job()
            },
            ..row(FollowingStop)
        },
        Row {
            look: Look {
                violations: vec!["spec.job.parallelism must be positive".into()],
                ..running_job()
            },
            ..row(Invalid)
        },
        Row {
            stored: None,
            ..row(FirstStart)
        },
        Row {
            edit: |s| s.rs.as_mut().expect("recorded").state = Some(ReconciliationState::Upgrading),
            ..row(Starting)
        },
        // A session job does not roll back: a recorded ROLLING_BACK is not a step of it.
        Row {
            edit: |s| s.rs.as_mut().expect("recorded").state = Some(ReconciliationState::RollingBack),
            steps: (RollingBack, Steady),
            ..row(RollingBack)
        },
        Row {
            job: stateless(3),
            stored: Some(stateless(2)),
            edit: |s| {
                stable_at_parallelism_3(s);
                s.rs.as_mut().expect("recorded").state = Some(ReconciliationState::RolledBack);
            },
            look: changed(FlinkJobState::Running),
            steps: (ChangedBack, Change),
            ..row(ChangedBack)
        },
        Row {
            job: with(job_spec(UpgradeMode::Savepoint), "parallelism", json!(3)),
            edit: |s| savepoint_triggered(s, SnapshotTriggerType::Manual),
            look: Look {
                savepoint: Some(SavepointPoll::InProgress),
                ..changed(FlinkJobState::Running)
            },
            ..row(WaitingForSnapshot)
        },
        // Parallelism alone, and a scheduler that rescales the running job in place.
        Row {
            job: with(job_spec(UpgradeMode::Savepoint), "parallelism", json!(3)),
            look: Look {
                policy: adaptive(),
                ..changed(FlinkJobState::Running)
            },
            ..row(Rescaling)
        },
        Row {
            job: with(job_spec(UpgradeMode::Savepoint), "parallelism", json!(3)),
            look: changed(FlinkJobState::Running),
            ..row(Change)
        },
        // Not in place: switched off, a job not RUNNING, another field changed too, or (an
        // application cluster) a job that runs the last stable spec since a rollback.
        Row {
            job: with(job_spec(UpgradeMode::Savepoint), "parallelism", json!(3)),
            look: Look {
                policy: Policy {
                    in_place_scaling: false,
                    ..adaptive()
                },
                ..changed(FlinkJobState::Running)
            },
            ..row(Change)
        },
        Row {
            job: with(job_spec(UpgradeMode::Savepoint), "parallelism", json!(3)),
            look: Look {
                policy: adaptive(),
                ..changed(FlinkJobState::Restarting)
            },
            ..row(Change)
        },
        Row {
            job: stateless(4),
            stored: Some(stateless(2)),
            edit: |s| {
                stable_at_parallelism_3(s);
                s.rs.as_mut().expect("recorded").state = Some(ReconciliationState::RolledBack);
            },
            look: Look {
                policy: adaptive(),
                ..changed(FlinkJobState::Running)
            },
            steps: (Change, Rescaling),
            ..row(Change)
        },
        Row {
            job: with(
                with(job_spec(UpgradeMode::Savepoint), "parallelism", json!(3)),
                "entryClass",
                json!("Other"),
            ),
            look: Look {
                policy: adaptive(),
                ..changed(FlinkJobState::Running)
            },
            ..row(Change)
        },
        // With ignore-pending-savepoint, the change does not wait for the pending one.
        Row {
            job: with(job_spec(UpgradeMode::Savepoint), "parallelism", json!(3)),
            edit: |s| savepoint_triggered(s, SnapshotTriggerType::Manual),
            look: Look {
                savepoint: Some(SavepointPoll::InProgress),
                policy: Policy {
                    ignore_pending_savepoint: true,
                    ..Policy::status_only()
                },
                ..changed(FlinkJobState::Running)
            },
            ..row(Change)
        },
        Row {
            job: with(job_spec(UpgradeMode::Savepoint), "state", json!("suspended")),
            // Suspended once it ran (an application created suspended records nothing).
            edit: |s| {
                let suspended = recorded_with(s, "state", json!("suspended"));
                s.rs.as_mut().expect("recorded").last_reconciled_spec = Some(suspended);
            },
            ..row(Suspended)
        },
        Row {
            application: |o| {
                o.job_manager = fd::JobManagerObservation::Missing;
                o.policy.jm_recovery = true;
            },
            steps: (Recovering, Steady),
            ..row(Recovering)
        },
        Row {
            job: stateless(2),
            stored: Some(stateless(2)),
            look: Look {
                policy: Policy {
                    restart_failed: true,
                    ..Policy::status_only()
                },
                ..look(FlinkJobState::Failed)
            },
            ..row(RestartingFailed)
        },
        Row {
            edit: |s| {
                stable_at_parallelism_3(s);
                s.rs.as_mut().expect("recorded").reconciliation_timestamp = Some(NOW - HOUR);
                s.lifecycle = Some(ResourceLifecycleState::Deployed);
            },
            look: Look {
                policy: Policy {
                    rollback_enabled: true,
                    readiness_timeout_ms: 60_000,
                    ..Policy::status_only()
                },
                ..look(FlinkJobState::Restarting)
            },
            steps: (RollbackDue, Steady),
            ..row(RollbackDue)
        },
        Row {
            edit: |s| {
                s.job.state = Some(FlinkJobState::Finished);
                s.job.update_time = Some((NOW - 25 * HOUR).to_string());
            },
            look: look(FlinkJobState::Finished),
            steps: (ShuttingDown, Steady),
            ..row(ShuttingDown)
        },
        Row {
            job: with(
                job_spec(UpgradeMode::Savepoint),
                "savepointTriggerNonce",
                json!(7),
            ),
            ..row(SnapshotsDue)
        },
        row(Steady),
    ]
}

/// How a kind derives a row's step: its resource, its observation (with the row's edit of
/// it), and its decision's step.
struct Deriving<K: Kind, R, O>(
    fn(&Value, &Value, Option<K::Status>, bool, i64) -> R,
    fn(&Look) -> O,
    fn(&Row) -> fn(&mut O),
    fn(&R, &O) -> StepName,
);

impl<K: Kind, R, O> Deriving<K, R, O> {
    fn step(&self, row: &Row) -> StepName {
        let Deriving(resource, observation, edit, step) = self;
        let config = json!({});
        let stored = (row.stored.as_ref()).map(|job| edited(K::running(job, &config), row.edit));
        let resource = resource(&row.job, &config, stored, row.deleting, row.look.generation);
        let mut observation = observation(&row.look);
        edit(row)(&mut observation);
        step(&resource, &observation)
    }
}

const APPLICATION: Deriving<Application, FlinkDeployment, fd::Observation> = Deriving(
    Application::resource,
    Application::observation,
    |row| row.application,
    fd::step,
);
const SESSION_JOB: Deriving<SessionJob, FlinkSessionJob, sj::Observation> = Deriving(
    SessionJob::resource,
    SessionJob::observation,
    |row| row.session,
    sj::step,
);

#[test]
fn each_kind_derives_the_step_of_the_table_from_its_stored_status_and_observation() {
    let rows = rows();
    for (i, row) in rows.iter().enumerate() {
        let (application_step, session_step) = row.steps;
        assert_eq!(
            APPLICATION.step(row),
            application_step,
            "row {i}: FlinkDeployment"
        );
        assert_eq!(SESSION_JOB.step(row), session_step, "row {i}: FlinkSessionJob");
    }
    // Every step has its rows, in the order the steps are tried.
    let mut named: Vec<StepName> = rows.iter().map(|r| r.step).collect();
    named.dedup();
    assert_eq!(
        named,
        crate::lifecycle::step::ORDER,
        "rows of every step, in the order of the steps"
    );
}
