//! Table tests of the blue/green decide: every stage against every kind of change, the
//! abort, the crash points (a fresh decide from the status written at each step goes on
//! forward and never takes a second savepoint), and one regression test per fault of the
//! Apache operator's BASIC hand-over that this decide avoids.

use flink_operator_api::{
    FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentState as State,
    FlinkBlueGreenDeploymentStatus as Status, FlinkDeploymentSpec,
    common::{FlinkJobState, JobStatus, ResourceLifecycleState as Lifecycle},
};
use serde_json::{Value, json};

use super::ingress::{self as bg_ingress, IngressObservation};
use super::{
    Action, BlueGreenPolicy, Child, Colour, Observation, TransitionSavepoint, decide,
    decide::{BlueGreenPlan, millis_of, timestamp},
    diff,
    gate::{GateStage, HandOver},
    observation::SnapshotState,
    savepoint_name,
};
use crate::{
    events::Reason,
    plan::Next,
    resources::ingress::{self, IngressChange},
};
use flink_operator_api::IngressSpec;
use k8s_openapi::api::networking::v1::Ingress;

#[path = "advanced_tests.rs"]
mod advanced;

use crate::fixtures::NOW;
const SECOND: i64 = 1000;
const GRACE: i64 = 600 * SECOND;
const NAME: &str = "bg";
const ID: &str = "7f3a";
const SAVEPOINT_PATH: &str = "s3://savepoints/savepoint-7f3a";

// === Fixtures ===

/// The template spec every test starts from: a savepoint-mode job.
fn v1() -> Value {
    json!({
        "image": "flink:1.20",
        "flinkVersion": "v1_20",
        "serviceAccount": "flink",
        "job": {"jarURI": "local:///job.jar", "parallelism": 2, "upgradeMode": "savepoint"}
    })
}

/// `v1` with a change that ends the job (a TRANSITION).
fn v2() -> Value {
    with(v1(), &["image"], json!("flink:2.1"))
}

/// `v1` with a change that ends no job (a PATCH_CHILD).
fn patched() -> Value {
    with(v1(), &["job", "upgradeMode"], json!("last-state"))
}

fn suspended(spec: Value) -> Value {
    with(spec, &["job", "state"], json!("suspended"))
}

fn stateless(spec: Value) -> Value {
    with(spec, &["job", "upgradeMode"], json!("stateless"))
}

fn redeploy() -> Value {
    let spec = with(v1(), &["job", "savepointRedeployNonce"], json!(1));
    with(
        spec,
        &["job", "initialSavepointPath"],
        json!("s3://savepoints/manual"),
    )
}

fn with(mut spec: Value, path: &[&str], value: Value) -> Value {
    let mut at = &mut spec;
    for key in &path[..path.len() - 1] {
        at = &mut at[*key];
    }
    at[path[path.len() - 1]] = value;
    spec
}

fn deployment_spec(spec: &Value) -> FlinkDeploymentSpec {
    serde_json::from_value(spec.clone()).expect("a FlinkDeployment spec")
}

fn resource(template: &Value, status: Option<Status>) -> FlinkBlueGreenDeployment {
    let mut resource: FlinkBlueGreenDeployment = serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkBlueGreenDeployment",
        "metadata": {"name": NAME, "namespace": "ns", "uid": "u-1", "generation": 1},
        "spec": {"template": {"spec": template}}
    }))
    .expect("a blue/green deployment");
    resource.status = status;
    resource
}

fn encoded(template: &Value) -> String {
    json!({"spec": {"template": {"spec": template}}}).to_string()
}

/// The template spec a status records as applied.
fn recorded(status: &Status) -> Option<Value> {
    let spec = status.last_reconciled_spec().expect("decodes")?;
    Some(serde_json::to_value(spec.template?.spec?).expect("encodes"))
}

fn job(state: FlinkJobState) -> JobStatus {
    JobStatus {
        state: Some(state),
        job_id: Some("e3bc32a1e3bc32a1e3bc32a1e3bc32a1".to_owned()),
        ..Default::default()
    }
}

/// A child running `spec`, STABLE and RUNNING.
fn stable(spec: &Value) -> Child {
    Child {
        spec: deployment_spec(spec),
        deleting: false,
        lifecycle: Some(Lifecycle::Stable),
        job_status: Some(job(FlinkJobState::Running)),
    }
}

/// A child of `spec` deployed but not stable yet, with its job `job_state` (none: never seen).
fn starting(spec: &Value, job_state: Option<FlinkJobState>) -> Child {
    Child {
        spec: deployment_spec(spec),
        deleting: false,
        lifecycle: Some(Lifecycle::Deployed),
        job_status: job_state.map(job),
    }
}

/// The spec a child gets from `template` started from `path`.
fn started_from(template: &Value, path: Option<&str>) -> Value {
    with(template.clone(), &["job", "initialSavepointPath"], json!(path))
}

fn observe(blue: Option<Child>, green: Option<Child>) -> Observation {
    Observation {
        blue,
        green,
        savepoint: None,
        policy: Ok(BlueGreenPolicy::default()),
        now_ms: NOW,
        fresh_id: ID.to_owned(),
        foreign: Vec::new(),
        gate: None,
        hand_over: HandOver::NotAsked,
        ingress: Default::default(),
        refused: None,
    }
}

fn savepoint(state: SnapshotState) -> TransitionSavepoint {
    TransitionSavepoint {
        name: savepoint_name(NAME, Colour::Blue, ID),
        state,
        path: (state == SnapshotState::Completed).then(|| SAVEPOINT_PATH.to_owned()),
        error: (state == SnapshotState::Failed).then(|| "checkpoint coordinator declined".to_owned()),
    }
}

fn status(state: State, recorded: &Value) -> Status {
    Status {
        blue_green_state: Some(state),
        last_reconciled_spec: Some(encoded(recorded)),
        job_status: Some(job(FlinkJobState::Running)),
        ..Default::default()
    }
}

/// The status written when the savepoint of blue for a transition to `recorded` is taken.
fn savepointing(recorded: &Value) -> Status {
    Status {
        savepoint_trigger_id: Some(savepoint_name(NAME, Colour::Blue, ID)),
        abort_timestamp: Some(timestamp(NOW + GRACE)),
        ..status(State::SavepointingBlue, recorded)
    }
}

/// The status written when green was started for `recorded`, `ago_ms` before now.
fn transitioning(recorded: &Value, ago_ms: i64) -> Status {
    Status {
        savepoint_trigger_id: Some(savepoint_name(NAME, Colour::Blue, ID)),
        abort_timestamp: Some(timestamp(NOW - ago_ms + GRACE)),
        job_status: Some(job(FlinkJobState::Reconciling)),
        ..status(State::TransitioningToGreen, recorded)
    }
}

/// Actions with their colour, for tables.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Create(Colour),
    Update(Colour),
    Suspend(Colour),
    Delete(Colour),
    Savepoint(Colour),
    GateMap(GateStage),
    Revert,
    Ingress(String),
}

fn steps(plan: &BlueGreenPlan) -> Vec<Step> {
    plan.actions
        .iter()
        .map(|action| match action {
            Action::CreateChild { colour, .. } => Step::Create(*colour),
            Action::UpdateChild { colour, .. } => Step::Update(*colour),
            Action::SuspendChild { colour } => Step::Suspend(*colour),
            Action::DeleteChild { colour } => Step::Delete(*colour),
            Action::CreateSavepoint { colour, .. } => Step::Savepoint(*colour),
            Action::WriteGateMap { map, .. } => Step::GateMap(map.stage),
            Action::RevertSpec { .. } => Step::Revert,
            Action::Ingress(change) => Step::Ingress(routed_service(change)),
        })
        .collect()
}

fn child_spec(plan: &BlueGreenPlan) -> Value {
    plan.actions
        .iter()
        .find_map(|action| match action {
            Action::CreateChild { spec, .. } | Action::UpdateChild { spec, .. } => {
                Some(serde_json::to_value(spec).expect("encodes"))
            }
            _ => None,
        })
        .expect("a child spec in the plan")
}

fn state(plan: &BlueGreenPlan) -> Option<State> {
    plan.status.blue_green_state
}

fn reasons(plan: &BlueGreenPlan) -> Vec<Reason> {
    plan.events.iter().map(|e| e.reason).collect()
}

/// No marker of a transition is left.
fn assert_no_markers(status: &Status) {
    assert_eq!(status.savepoint_trigger_id, None, "savepointTriggerId");
    assert_eq!(
        millis_of(status.deployment_ready_timestamp.as_deref()),
        None,
        "deploymentReadyTimestamp"
    );
    assert_eq!(
        millis_of(status.abort_timestamp.as_deref()),
        None,
        "abortTimestamp"
    );
}

// === Every stage against every kind of change ===

struct Case {
    name: &'static str,
    status: Option<Status>,
    spec: Value,
    observation: Observation,
    state: State,
    steps: Vec<Step>,
    /// The template spec recorded as applied afterwards.
    recorded: Option<Value>,
}

fn run(cases: Vec<Case>) {
    for case in cases {
        let plan = decide(&resource(&case.spec, case.status), &case.observation);
        assert_eq!(state(&plan), Some(case.state), "{}: state", case.name);
        assert_eq!(steps(&plan), case.steps, "{}: actions", case.name);
        assert_eq!(
            recorded(&plan.status),
            case.recorded,
            "{}: recorded spec",
            case.name
        );
    }
}

#[test]
fn initializing_against_every_kind_of_change() {
    use Colour::Blue;
    run(vec![
        Case {
            name: "no status: the first child is created",
            status: None,
            spec: v1(),
            observation: observe(None, None),
            state: State::TransitioningToBlue,
            steps: vec![Step::Create(Blue)],
            recorded: Some(v1()),
        },
        Case {
            name: "a suspended template waits",
            status: None,
            spec: suspended(v1()),
            observation: observe(None, None),
            state: State::InitializingBlue,
            steps: vec![],
            recorded: None,
        },
        Case {
            name: "the spec the first child failed with is not tried again",
            status: Some(status(State::InitializingBlue, &v1())),
            spec: v1(),
            observation: observe(Some(starting(&v1(), Some(FlinkJobState::Failed))), None),
            state: State::InitializingBlue,
            steps: vec![],
            recorded: Some(v1()),
        },
        Case {
            name: "an edit after a failed first child removes it first",
            status: Some(status(State::InitializingBlue, &v1())),
            spec: v2(),
            // Settled (its loop is done with the suspension): what it recorded is read.
            observation: observe(
                Some(Child {
                    lifecycle: Some(Lifecycle::Failed),
                    ..starting(&suspended(v1()), Some(FlinkJobState::Failed))
                }),
                None,
            ),
            state: State::InitializingBlue,
            steps: vec![Step::Delete(Blue)],
            recorded: Some(v1()),
        },
        Case {
            name: "an edit after a failed first child, once it is gone, deploys again",
            status: Some(status(State::InitializingBlue, &v1())),
            spec: v2(),
            observation: observe(None, None),
            state: State::TransitioningToBlue,
            steps: vec![Step::Create(Blue)],
            recorded: Some(v2()),
        },
    ]);
}

#[test]
fn active_against_every_kind_of_change() {
    use Colour::{Blue, Green};
    let active = |spec: &Value| Some(status(State::ActiveBlue, spec));
    run(vec![
        Case {
            name: "ignore",
            status: active(&v1()),
            spec: v1(),
            observation: observe(Some(stable(&v1())), None),
            state: State::ActiveBlue,
            steps: vec![],
            recorded: Some(v1()),
        },
        Case {
            name: "suspend: in place",
            status: active(&v1()),
            spec: suspended(v1()),
            observation: observe(Some(stable(&v1())), None),
            state: State::ActiveBlue,
            steps: vec![Step::Update(Blue)],
            recorded: Some(suspended(v1())),
        },
        Case {
            name: "resume: in place",
            status: active(&suspended(v1())),
            spec: v1(),
            observation: observe(Some(starting(&suspended(v1()), None)), None),
            state: State::ActiveBlue,
            steps: vec![Step::Update(Blue)],
            recorded: Some(v1()),
        },
        Case {
            name: "patch child: in place",
            status: active(&v1()),
            spec: patched(),
            observation: observe(Some(stable(&v1())), None),
            state: State::ActiveBlue,
            steps: vec![Step::Update(Blue)],
            recorded: Some(patched()),
        },
        Case {
            name: "a change of a suspended job: in place, applied when it resumes",
            status: active(&suspended(v1())),
            spec: suspended(v2()),
            observation: observe(Some(starting(&suspended(v1()), None)), None),
            state: State::ActiveBlue,
            steps: vec![Step::Update(Blue)],
            recorded: Some(suspended(v2())),
        },
        Case {
            name: "transition: a savepoint of the active child first",
            status: active(&v1()),
            spec: v2(),
            observation: observe(Some(stable(&v1())), None),
            state: State::SavepointingBlue,
            steps: vec![Step::Savepoint(Blue)],
            recorded: Some(v2()),
        },
        Case {
            name: "transition from green",
            status: Some(status(State::ActiveGreen, &v1())),
            spec: v2(),
            observation: observe(None, Some(stable(&v1()))),
            state: State::SavepointingGreen,
            steps: vec![Step::Savepoint(Green)],
            recorded: Some(v2()),
        },
        Case {
            name: "stateless transition: the other child at once",
            status: active(&stateless(v1())),
            spec: stateless(v2()),
            observation: observe(Some(stable(&stateless(v1()))), None),
            state: State::TransitioningToGreen,
            steps: vec![Step::Create(Green)],
            recorded: Some(stateless(v2())),
        },
        Case {
            name: "savepoint redeploy: the other child from initialSavepointPath",
            status: active(&v1()),
            spec: redeploy(),
            observation: observe(Some(stable(&v1())), None),
            state: State::TransitioningToGreen,
            steps: vec![Step::Create(Green)],
            recorded: Some(redeploy()),
        },
        Case {
            name: "a transition first removes a child left by an aborted one",
            status: active(&v1()),
            spec: v2(),
            observation: observe(
                Some(stable(&v1())),
                Some(starting(&suspended(v2()), Some(FlinkJobState::Suspended))),
            ),
            state: State::ActiveBlue,
            steps: vec![Step::Delete(Green)],
            recorded: Some(v1()),
        },
    ]);
}

#[test]
fn savepointing_against_every_kind_of_change() {
    use Colour::Green;
    let with_savepoint = |state| Observation {
        savepoint: Some(savepoint(state)),
        ..observe(Some(stable(&v1())), None)
    };
    let v3 = with(v2(), &["job", "parallelism"], json!(4));
    run(vec![
        Case {
            name: "ignore, savepoint under way: waits",
            status: Some(savepointing(&v2())),
            spec: v2(),
            observation: with_savepoint(SnapshotState::InProgress),
            state: State::SavepointingBlue,
            steps: vec![],
            recorded: Some(v2()),
        },
        Case {
            name: "ignore, savepoint completed: green starts from it",
            status: Some(savepointing(&v2())),
            spec: v2(),
            observation: with_savepoint(SnapshotState::Completed),
            state: State::TransitioningToGreen,
            steps: vec![Step::Create(Green)],
            recorded: Some(v2()),
        },
        Case {
            name: "a further change: green starts with it",
            status: Some(savepointing(&v2())),
            spec: v3.clone(),
            observation: with_savepoint(SnapshotState::Completed),
            state: State::TransitioningToGreen,
            steps: vec![Step::Create(Green)],
            recorded: Some(v3),
        },
        Case {
            name: "suspend: the transition is given up, blue is suspended next",
            status: Some(savepointing(&v2())),
            spec: suspended(v2()),
            observation: with_savepoint(SnapshotState::InProgress),
            state: State::ActiveBlue,
            steps: vec![],
            recorded: Some(v2()),
        },
    ]);
}

#[test]
fn transitioning_against_every_kind_of_change() {
    use Colour::{Blue, Green};
    let old_and_new = |new: Child| observe(Some(stable(&v1())), Some(new));
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    run(vec![
        Case {
            name: "ignore, green starting: waits",
            status: Some(transitioning(&v2(), 30 * SECOND)),
            spec: v2(),
            observation: old_and_new(starting(&green, Some(FlinkJobState::Initializing))),
            state: State::TransitioningToGreen,
            steps: vec![],
            recorded: Some(v2()),
        },
        Case {
            name: "ignore, green stable: blue is deleted and green is active",
            status: Some(transitioning(&v2(), 30 * SECOND)),
            spec: v2(),
            observation: old_and_new(stable(&green)),
            state: State::ActiveGreen,
            steps: vec![Step::Delete(Blue)],
            recorded: Some(v2()),
        },
        Case {
            name: "suspend waits for the end of the transition",
            status: Some(transitioning(&v2(), 30 * SECOND)),
            spec: suspended(v2()),
            observation: old_and_new(starting(&green, None)),
            state: State::TransitioningToGreen,
            steps: vec![],
            recorded: Some(v2()),
        },
        Case {
            name: "patch child goes to the incoming child",
            status: Some(transitioning(&v2(), 30 * SECOND)),
            spec: with(v2(), &["job", "upgradeMode"], json!("last-state")),
            observation: old_and_new(starting(&green, None)),
            state: State::TransitioningToGreen,
            steps: vec![Step::Update(Green)],
            recorded: Some(with(v2(), &["job", "upgradeMode"], json!("last-state"))),
        },
        Case {
            name: "a transition goes to the incoming child",
            status: Some(transitioning(&v2(), 30 * SECOND)),
            spec: with(v2(), &["image"], json!("flink:2.2")),
            observation: old_and_new(starting(&green, None)),
            state: State::TransitioningToGreen,
            steps: vec![Step::Update(Green)],
            recorded: Some(with(v2(), &["image"], json!("flink:2.2"))),
        },
        Case {
            name: "a redeploy goes to the incoming child",
            status: Some(transitioning(&v1(), 30 * SECOND)),
            spec: redeploy(),
            observation: old_and_new(starting(&green, None)),
            state: State::TransitioningToGreen,
            steps: vec![Step::Update(Green)],
            recorded: Some(redeploy()),
        },
    ]);
}

#[test]
fn a_change_for_a_running_child_keeps_the_state_it_started_from() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let spec = with(v2(), &["job", "upgradeMode"], json!("last-state"));
    let plan = decide(
        &resource(&spec, Some(status(State::ActiveGreen, &v2()))),
        &observe(None, Some(stable(&green))),
    );
    assert_eq!(steps(&plan), vec![Step::Update(Colour::Green)]);
    assert_eq!(
        child_spec(&plan)["job"]["initialSavepointPath"],
        json!(SAVEPOINT_PATH)
    );
    assert_eq!(child_spec(&plan)["job"]["upgradeMode"], json!("last-state"));
}

#[test]
fn a_redeploy_starts_the_other_child_from_the_templates_savepoint() {
    let plan = decide(
        &resource(&redeploy(), Some(status(State::ActiveBlue, &v1()))),
        &observe(Some(stable(&v1())), None),
    );
    assert_eq!(
        plan.actions[0].initial_savepoint_path(),
        Some("s3://savepoints/manual")
    );
    assert_eq!(plan.status.savepoint_trigger_id, None);
}

// === The transition, step by step ===

#[test]
fn a_stateful_transition_names_its_savepoint_in_status_before_taking_it() {
    let plan = decide(
        &resource(&v2(), Some(status(State::ActiveBlue, &v1()))),
        &observe(Some(stable(&v1())), None),
    );
    let name = savepoint_name(NAME, Colour::Blue, ID);
    assert_eq!(name, "bg-blue-transition-7f3a");
    let before = plan
        .status_before
        .as_ref()
        .expect("written before the snapshot is created");
    assert_eq!(before.savepoint_trigger_id.as_deref(), Some(name.as_str()));
    assert_eq!(before.blue_green_state, Some(State::SavepointingBlue));
    assert_eq!(millis_of(before.abort_timestamp.as_deref()), Some(NOW + GRACE));
    assert_eq!(
        plan.actions,
        vec![Action::CreateSavepoint {
            name,
            colour: Colour::Blue
        }]
    );
    assert_eq!(reasons(&plan), vec![Reason::BlueGreenTransitionStarted]);
}

#[test]
fn the_new_child_starts_from_the_completed_savepoint() {
    let plan = decide(
        &resource(&v2(), Some(savepointing(&v2()))),
        &Observation {
            savepoint: Some(savepoint(SnapshotState::Completed)),
            ..observe(Some(stable(&v1())), None)
        },
    );
    assert_eq!(plan.actions[0].initial_savepoint_path(), Some(SAVEPOINT_PATH));
    assert_eq!(child_spec(&plan), started_from(&v2(), Some(SAVEPOINT_PATH)));
    assert_eq!(
        millis_of(plan.status.abort_timestamp.as_deref()),
        Some(NOW + GRACE)
    );
    assert_eq!(
        plan.status.job_status.as_ref().and_then(|j| j.state.clone()),
        Some(FlinkJobState::Reconciling)
    );
}

#[test]
fn the_old_child_waits_out_the_deletion_delay() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let observation = Observation {
        policy: Ok(BlueGreenPolicy {
            deletion_delay_ms: 60 * SECOND,
            ..BlueGreenPolicy::default()
        }),
        ..observe(Some(stable(&v1())), Some(stable(&green)))
    };
    let plan = decide(
        &resource(&v2(), Some(transitioning(&v2(), 30 * SECOND))),
        &observation,
    );
    assert_eq!(steps(&plan), vec![]);
    assert_eq!(
        millis_of(plan.status.deployment_ready_timestamp.as_deref()),
        Some(NOW)
    );
    assert_eq!(plan.requeue, Next::Within(60));

    // 59 s later: still waiting; then it is due.
    let later = |ms| Observation {
        now_ms: NOW + ms,
        ..observation.clone()
    };
    let waiting = decide(&resource(&v2(), Some(plan.status.clone())), &later(59 * SECOND));
    assert_eq!(steps(&waiting), vec![]);
    assert_eq!(waiting.requeue, Next::Within(1));
    let due = decide(&resource(&v2(), Some(plan.status.clone())), &later(60 * SECOND));
    assert_eq!(steps(&due), vec![Step::Delete(Colour::Blue)]);
    assert_eq!(state(&due), Some(State::ActiveGreen));
    assert_eq!(
        due.status_before, None,
        "readiness was recorded by the earlier pass"
    );
}

// === Regression tests: the Apache operator's faults ===

/// FLINK-40119, #1159: the old child is deleted only once the new one is STABLE and RUNNING.
#[test]
fn the_old_child_is_deleted_only_after_the_new_one_is_stable_and_running() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let not_yet = [
        Child {
            lifecycle: Some(Lifecycle::Stable),
            ..starting(&green, Some(FlinkJobState::Restarting))
        },
        starting(&green, Some(FlinkJobState::Running)),
        starting(&green, None),
    ];
    for new in not_yet {
        let plan = decide(
            &resource(&v2(), Some(transitioning(&v2(), 30 * SECOND))),
            &observe(Some(stable(&v1())), Some(new.clone())),
        );
        assert_eq!(steps(&plan), vec![], "{new:?}");
        assert_eq!(state(&plan), Some(State::TransitioningToGreen));
    }
}

/// The new child not stable within the abort grace period: the transition is aborted, the
/// new child suspended, the old one untouched.
#[test]
fn a_transition_not_stable_within_the_grace_period_is_aborted_and_the_old_child_untouched() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let observation = observe(
        Some(stable(&v1())),
        Some(starting(&green, Some(FlinkJobState::Restarting))),
    );
    let in_time = decide(
        &resource(&v2(), Some(transitioning(&v2(), GRACE - SECOND))),
        &observation,
    );
    assert_eq!(steps(&in_time), vec![]);

    let plan = decide(&resource(&v2(), Some(transitioning(&v2(), GRACE))), &observation);
    assert_eq!(steps(&plan), vec![Step::Suspend(Colour::Green)]);
    assert_eq!(state(&plan), Some(State::ActiveBlue));
    assert_eq!(reasons(&plan), vec![Reason::BlueGreenTransitionAborted]);
    assert!(plan.events[0].warning);
    let error = plan.status.error.as_deref().expect("the reason in status");
    assert!(
        error.contains("bg-green did not become running and stable within 10 min"),
        "{error}"
    );
    assert!(error.contains("bg-blue keeps running"), "{error}");
}

#[test]
fn an_aborted_new_child_that_never_ran_a_job_is_deleted() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let plan = decide(
        &resource(&v2(), Some(transitioning(&v2(), GRACE))),
        &observe(Some(stable(&v1())), Some(starting(&green, None))),
    );
    assert_eq!(steps(&plan), vec![Step::Delete(Colour::Green)]);
    assert_eq!(state(&plan), Some(State::ActiveBlue));
}

/// FLINK-40119 (#1159) and #1071: an abort leaves no marker behind (a stale ready time made
/// the next transition delete the old child at once; a stale savepoint id was polled in
/// vain).
#[test]
fn an_abort_clears_every_marker_of_the_transition() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let mut became_ready_then_failed = transitioning(&v2(), GRACE);
    became_ready_then_failed.deployment_ready_timestamp = Some(timestamp(NOW - 10 * SECOND));
    let observation = Observation {
        policy: Ok(BlueGreenPolicy {
            deletion_delay_ms: 60 * SECOND,
            ..BlueGreenPolicy::default()
        }),
        ..observe(
            Some(stable(&v1())),
            Some(starting(&green, Some(FlinkJobState::Failing))),
        )
    };
    let plan = decide(&resource(&v2(), Some(became_ready_then_failed)), &observation);
    assert_eq!(state(&plan), Some(State::ActiveBlue));
    assert_no_markers(&plan.status);

    // The next transition starts afresh: a new savepoint, no deletion of blue.
    let v3 = with(v2(), &["job", "parallelism"], json!(4));
    let next = decide(
        &resource(&v3, Some(plan.status.clone())),
        &Observation {
            fresh_id: "9c1d".to_owned(),
            ..observe(Some(stable(&v1())), None)
        },
    );
    assert_eq!(steps(&next), vec![Step::Savepoint(Colour::Blue)]);
    assert_eq!(
        next.status.savepoint_trigger_id.as_deref(),
        Some("bg-blue-transition-9c1d")
    );
    assert_eq!(next.status.deployment_ready_timestamp, None);
}

/// #1072: a transition that cannot start (the active child is not ready) does not record
/// the spec, so it starts once it can, and later edits are not mistaken for no change.
#[test]
fn the_spec_is_not_recorded_until_the_transition_starts() {
    let failing = Child {
        lifecycle: Some(Lifecycle::Deployed),
        ..starting(&v1(), Some(FlinkJobState::Restarting))
    };
    let plan = decide(
        &resource(&v2(), Some(status(State::ActiveBlue, &v1()))),
        &observe(Some(failing), None),
    );
    assert_eq!(steps(&plan), vec![]);
    assert_eq!(state(&plan), Some(State::ActiveBlue));
    assert_eq!(recorded(&plan.status), Some(v1()));
    assert_eq!(reasons(&plan), vec![Reason::BlueGreenTransitionWaiting]);
    assert!(plan.status.error.is_some());

    // Looked at again, still waiting: no second Event.
    let again = decide(
        &resource(&v2(), Some(plan.status.clone())),
        &observe(Some(plan_child_failing()), None),
    );
    assert_eq!(reasons(&again), vec![]);

    // Once blue is ready, the transition starts and records the spec.
    let ready = decide(
        &resource(&v2(), Some(plan.status)),
        &observe(Some(stable(&v1())), None),
    );
    assert_eq!(steps(&ready), vec![Step::Savepoint(Colour::Blue)]);
    assert_eq!(recorded(&ready.status), Some(v2()));
    assert_eq!(ready.status.error, None);
}

fn plan_child_failing() -> Child {
    starting(&v1(), Some(FlinkJobState::Restarting))
}

/// After an abort the failed spec stays recorded (no retry in a loop), but the active child
/// still runs the old one: a later edit is judged against what it runs.
#[test]
fn after_an_abort_an_edit_is_judged_against_the_spec_the_active_child_runs() {
    let mut aborted = status(State::ActiveBlue, &v2());
    aborted.error = Some("Transition aborted".to_owned());
    // Only a change that ends no job compared to the recorded v2...
    let edit = with(v2(), &["job", "upgradeMode"], json!("last-state"));
    assert_eq!(
        diff(
            &serde_json::from_value(json!({"template": {"spec": v2()}})).expect("spec"),
            &serde_json::from_value(json!({"template": {"spec": edit.clone()}})).expect("spec"),
        ),
        super::SpecDiff::PatchChild
    );
    // ...is still a transition for blue, which runs v1.
    let plan = decide(
        &resource(&edit, Some(aborted.clone())),
        &observe(Some(stable(&v1())), None),
    );
    assert_eq!(steps(&plan), vec![Step::Savepoint(Colour::Blue)]);
    // And the failed spec itself is not tried again.
    let same = decide(
        &resource(&v2(), Some(aborted)),
        &observe(Some(stable(&v1())), None),
    );
    assert_eq!(steps(&same), vec![]);
    assert!(same.status.error.is_some());
}

/// FLINK-40092 (#1154, #1161): the deletion of the old child and the final status are one
/// plan, and an old child found gone after the new one was ready finishes forward.
#[test]
fn a_deleted_old_child_is_always_followed_by_the_final_status() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let plan = decide(
        &resource(&v2(), Some(transitioning(&v2(), 30 * SECOND))),
        &observe(Some(stable(&v1())), Some(stable(&green))),
    );
    let before = plan
        .status_before
        .as_ref()
        .expect("readiness recorded before the deletion");
    assert_eq!(millis_of(before.deployment_ready_timestamp.as_deref()), Some(NOW));
    assert_eq!(before.blue_green_state, Some(State::TransitioningToGreen));
    assert_eq!(steps(&plan), vec![Step::Delete(Colour::Blue)]);
    assert_eq!(state(&plan), Some(State::ActiveGreen));
    assert_no_markers(&plan.status);
    assert_eq!(
        reasons(&plan),
        vec![
            Reason::BlueGreenChildDeleted,
            Reason::BlueGreenTransitionCompleted
        ]
    );

    // The final write lost: blue is gone (or going) and green no longer looks ready, even
    // past the deadline. Forward to green, never an abort with nothing to go back to.
    for blue in [
        None,
        Some(Child {
            deleting: true,
            ..stable(&v1())
        }),
    ] {
        let late = Observation {
            now_ms: NOW + 2 * GRACE,
            ..observe(blue, Some(starting(&green, Some(FlinkJobState::Restarting))))
        };
        let forward = decide(&resource(&v2(), Some(before.clone())), &late);
        assert_eq!(state(&forward), Some(State::ActiveGreen));
        assert_eq!(steps(&forward), vec![]);
        assert_no_markers(&forward.status);
    }
}

/// #969 review: a stateless transition starts the new child empty and needs neither a
/// savepoint nor a checkpoint (nor a healthy old job).
#[test]
fn a_stateless_transition_never_takes_a_savepoint() {
    let template = with(
        stateless(v2()),
        &["job", "initialSavepointPath"],
        json!("s3://savepoints/old"),
    );
    for old in [
        stable(&stateless(v1())),
        starting(&stateless(v1()), Some(FlinkJobState::Failing)),
    ] {
        let plan = decide(
            &resource(&template, Some(status(State::ActiveBlue, &stateless(v1())))),
            &observe(Some(old), None),
        );
        assert_eq!(steps(&plan), vec![Step::Create(Colour::Green)]);
        assert_eq!(plan.actions[0].initial_savepoint_path(), None);
        assert_eq!(plan.status_before, None);
        assert_eq!(plan.status.savepoint_trigger_id, None);
        assert_eq!(state(&plan), Some(State::TransitioningToGreen));
    }
}

/// A failed savepoint aborts the transition rather than waiting for ever.
#[test]
fn a_failed_savepoint_aborts_the_transition() {
    for state_of_savepoint in [SnapshotState::Failed, SnapshotState::Abandoned] {
        let plan = decide(
            &resource(&v2(), Some(savepointing(&v2()))),
            &Observation {
                savepoint: Some(savepoint(state_of_savepoint)),
                ..observe(Some(stable(&v1())), None)
            },
        );
        assert_eq!(state(&plan), Some(State::ActiveBlue), "{state_of_savepoint:?}");
        assert_eq!(steps(&plan), vec![]);
        assert_no_markers(&plan.status);
        assert_eq!(reasons(&plan), vec![Reason::BlueGreenTransitionAborted]);
    }
}

/// The Apache operator's SAVEPOINTING waits for ever (a TODO): here the grace period bounds it.
#[test]
fn a_savepoint_that_never_completes_aborts_the_transition_after_the_grace_period() {
    let observation = |now_ms, savepoint| Observation {
        now_ms,
        savepoint,
        ..observe(Some(stable(&v1())), None)
    };
    let pending = Some(savepoint(SnapshotState::InProgress));
    let in_time = decide(
        &resource(&v2(), Some(savepointing(&v2()))),
        &observation(NOW + GRACE - 1, pending.clone()),
    );
    assert_eq!(state(&in_time), Some(State::SavepointingBlue));
    for late in [pending, None] {
        let plan = decide(
            &resource(&v2(), Some(savepointing(&v2()))),
            &observation(NOW + GRACE, late),
        );
        assert_eq!(state(&plan), Some(State::ActiveBlue));
        assert_eq!(steps(&plan), vec![], "no savepoint is created past the deadline");
        assert_no_markers(&plan.status);
        let error = plan.status.error.as_deref().expect("the reason in status");
        assert!(error.contains("did not complete within 10 min"), "{error}");
    }
}

#[test]
fn an_aborted_first_deployment_goes_back_to_initializing() {
    let mut first = transitioning(&v1(), GRACE);
    first.blue_green_state = Some(State::TransitioningToBlue);
    first.savepoint_trigger_id = None;
    let plan = decide(
        &resource(&v1(), Some(first)),
        &observe(Some(starting(&v1(), Some(FlinkJobState::Failed))), None),
    );
    assert_eq!(state(&plan), Some(State::InitializingBlue));
    assert_eq!(steps(&plan), vec![Step::Suspend(Colour::Blue)]);
    assert_no_markers(&plan.status);
}

// === Crash points ===

/// Crashed after the savepoint's name was written, before the snapshot was created: the
/// same snapshot is created, under the recorded name, whatever fresh id comes next.
#[test]
fn after_the_savepoint_was_recorded_the_same_savepoint_is_taken() {
    let first = decide(
        &resource(&v2(), Some(status(State::ActiveBlue, &v1()))),
        &observe(Some(stable(&v1())), None),
    );
    let written = first.status_before.expect("the step's status");
    let resumed = decide(
        &resource(&v2(), Some(written)),
        &Observation {
            fresh_id: "other".to_owned(),
            ..observe(Some(stable(&v1())), None)
        },
    );
    assert_eq!(first.actions, resumed.actions);
    assert_eq!(state(&resumed), Some(State::SavepointingBlue));
}

/// Crashed after green was created, before the status said so: green is created again
/// (the same spec: a no-op) from the recorded savepoint; no second savepoint.
#[test]
fn after_the_new_child_was_created_the_transition_goes_on_without_a_second_savepoint() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let plan = decide(
        &resource(&v2(), Some(savepointing(&v2()))),
        &Observation {
            savepoint: Some(savepoint(SnapshotState::Completed)),
            ..observe(Some(stable(&v1())), Some(starting(&green, None)))
        },
    );
    assert_eq!(steps(&plan), vec![Step::Create(Colour::Green)]);
    assert_eq!(child_spec(&plan), green);
    assert_eq!(state(&plan), Some(State::TransitioningToGreen));

    // And from the status that step writes, it waits for green, then hands over.
    let waiting = decide(
        &resource(&v2(), Some(plan.status.clone())),
        &observe(Some(stable(&v1())), Some(starting(&green, None))),
    );
    assert_eq!(steps(&waiting), vec![]);
    let done = decide(
        &resource(&v2(), Some(plan.status)),
        &observe(Some(stable(&v1())), Some(stable(&green))),
    );
    assert_eq!(steps(&done), vec![Step::Delete(Colour::Blue)]);
}

/// Crashed after blue was deleted, before the final status: finishes forward.
#[test]
fn after_the_old_child_was_deleted_the_transition_finishes() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let first = decide(
        &resource(&v2(), Some(transitioning(&v2(), 30 * SECOND))),
        &observe(Some(stable(&v1())), Some(stable(&green))),
    );
    let written = first.status_before.expect("the step's status");
    let resumed = decide(
        &resource(&v2(), Some(written)),
        &observe(None, Some(stable(&green))),
    );
    assert_eq!(state(&resumed), Some(State::ActiveGreen));
    assert_eq!(steps(&resumed), vec![]);
    assert_eq!(resumed.status, first.status);
}

/// A whole transition, each pass from the status the previous one wrote: one savepoint.
#[test]
fn a_whole_transition_takes_exactly_one_savepoint() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let passes: Vec<Observation> = vec![
        observe(Some(stable(&v1())), None),
        observe(Some(stable(&v1())), None),
        Observation {
            savepoint: Some(savepoint(SnapshotState::InProgress)),
            ..observe(Some(stable(&v1())), None)
        },
        Observation {
            savepoint: Some(savepoint(SnapshotState::Completed)),
            ..observe(Some(stable(&v1())), None)
        },
        observe(Some(stable(&v1())), Some(starting(&green, None))),
        observe(Some(stable(&v1())), Some(stable(&green))),
        observe(None, Some(stable(&green))),
    ];
    let mut status = Some(status(State::ActiveBlue, &v1()));
    let mut all = Vec::new();
    for (pass, observation) in passes.into_iter().enumerate() {
        // Only the first pass's id may name the savepoint.
        let fresh_id = if pass == 0 {
            ID.to_owned()
        } else {
            format!("id{pass}")
        };
        let observation = Observation {
            fresh_id,
            ..observation
        };
        let plan = decide(&resource(&v2(), status), &observation);
        all.extend(plan.actions.clone());
        status = Some(plan.status);
    }
    let savepoints: Vec<&Action> = all
        .iter()
        .filter(|a| matches!(a, Action::CreateSavepoint { .. }))
        .collect();
    assert_eq!(
        savepoints,
        vec![
            &Action::CreateSavepoint {
                name: savepoint_name(NAME, Colour::Blue, ID),
                colour: Colour::Blue
            };
            2
        ],
        "created once, and again under the same name while not yet seen"
    );
    let status = status.expect("status");
    assert_eq!(status.blue_green_state, Some(State::ActiveGreen));
    assert_no_markers(&status);
}

// === Reported, not acted on ===

#[test]
fn an_invalid_option_or_a_missing_template_is_reported_and_nothing_is_done() {
    let invalid = Observation {
        policy: BlueGreenPolicy::from_configuration(Some(
            &[(
                flink_operator_api::keys::bluegreen::ABORT_GRACE_PERIOD.to_owned(),
                "soon".to_owned(),
            )]
            .into_iter()
            .collect(),
        )),
        ..observe(Some(stable(&v1())), None)
    };
    let plan = decide(&resource(&v2(), Some(status(State::ActiveBlue, &v1()))), &invalid);
    assert_eq!(steps(&plan), vec![]);
    assert!(
        plan.status
            .error
            .as_deref()
            .is_some_and(|e| e.contains("abort.grace-period"))
    );

    let mut no_template = resource(&v1(), None);
    no_template.spec.template = None;
    let plan = decide(&no_template, &observe(None, None));
    assert_eq!(steps(&plan), vec![]);
    assert!(plan.status.error.is_some());
}

#[test]
fn a_resource_in_the_operators_namespace_is_refused_and_nothing_is_deployed() {
    // The webhook bypassed: the operator's namespace takes no Flink resources.
    let refused = flink_operator_api::validation::ValidationContext::default()
        .with_operator_namespace(Some("flink-operator".into()))
        .operator_namespace_violation("flink-operator")
        .map(|v| v.to_string());
    assert!(refused.is_some());
    let observation = Observation {
        refused,
        ..observe(None, None)
    };
    let plan = decide(&resource(&v1(), None), &observation);
    assert_eq!(steps(&plan), vec![]);
    let error = plan.status.error.unwrap_or_default();
    assert!(
        error.contains("operator-namespace.flink-resources.enabled"),
        "{error}"
    );
    assert!(!plan.events.is_empty(), "an Event says why");
}

#[test]
fn a_foreign_flink_deployment_with_a_childs_name_is_never_touched() {
    let observation = Observation {
        foreign: vec!["bg-green".to_owned()],
        ..observe(Some(stable(&v1())), None)
    };
    let plan = decide(
        &resource(&v2(), Some(status(State::ActiveBlue, &v1()))),
        &observation,
    );
    assert_eq!(steps(&plan), vec![]);
    assert!(
        plan.status
            .error
            .as_deref()
            .is_some_and(|e| e.contains("bg-green"))
    );
    assert_eq!(reasons(&plan), vec![Reason::BlueGreenRefused]);
    // Reported once: the same error again publishes no second Event.
    let again = decide(&resource(&v2(), Some(plan.status.clone())), &observation);
    assert_eq!(reasons(&again), vec![]);
}

#[test]
fn a_resource_being_deleted_starts_nothing_and_writes_nothing() {
    let mut deleting = resource(&v2(), Some(status(State::ActiveBlue, &v1())));
    deleting.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    ));
    let plan = decide(&deleting, &observe(Some(stable(&v1())), None));
    assert_eq!(steps(&plan), vec![]);
    assert_eq!(Some(plan.status), deleting.status);
    assert_eq!(plan.requeue, Next::Idle);
}

#[test]
fn a_missing_active_child_is_reported() {
    let plan = decide(
        &resource(&v1(), Some(status(State::ActiveBlue, &v1()))),
        &observe(None, None),
    );
    assert_eq!(steps(&plan), vec![]);
    assert_eq!(reasons(&plan), vec![Reason::Missing]);
}

#[test]
fn a_waiting_transition_reverted_by_the_user_leaves_no_error() {
    let mut waiting = status(State::ActiveBlue, &v1());
    waiting.error = Some("The transition to bg-green waits".to_owned());
    let plan = decide(
        &resource(&v1(), Some(waiting)),
        &observe(Some(stable(&v1())), None),
    );
    assert_eq!(steps(&plan), vec![]);
    assert_eq!(plan.status.error, None);
}

#[test]
fn a_change_to_the_incoming_child_gives_it_the_whole_grace_period() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let fixed = with(v2(), &["image"], json!("flink:2.1.1"));
    let plan = decide(
        &resource(&fixed, Some(transitioning(&v2(), GRACE - SECOND))),
        &observe(
            Some(stable(&v1())),
            Some(starting(&green, Some(FlinkJobState::Restarting))),
        ),
    );
    assert_eq!(steps(&plan), vec![Step::Update(Colour::Green)]);
    assert_eq!(child_spec(&plan), started_from(&fixed, Some(SAVEPOINT_PATH)));
    assert_eq!(
        millis_of(plan.status.abort_timestamp.as_deref()),
        Some(NOW + GRACE)
    );
    assert_eq!(
        plan.status.savepoint_trigger_id.as_deref(),
        Some("bg-blue-transition-7f3a"),
        "kept until the transition ends"
    );
}

/// A resource that changes nothing costs nothing: once its status carries the conditions,
/// the next pass (later, with nothing changed) writes nothing and does nothing.
#[test]
fn a_settled_resource_decides_the_same_status_again() {
    for (state, blue, green) in [
        (State::ActiveBlue, Some(stable(&v1())), None),
        (State::ActiveGreen, None, Some(stable(&v1()))),
    ] {
        let observation = observe(blue, green);
        let first = decide(&resource(&v1(), Some(status(state, &v1()))), &observation);
        let later = Observation {
            now_ms: NOW + 3600 * SECOND,
            ..observation
        };
        let second = decide(&resource(&v1(), Some(first.status.clone())), &later);
        assert_eq!(second.status, first.status, "{state:?}");
        assert!(second.actions.is_empty() && second.events.is_empty(), "{state:?}");
        assert_eq!(second.status_before, None);
    }
}

/// The conditions follow the phase: Ready while the active child runs, Progressing during a
/// transition, Ready and Degraded after an abort (the old child still serves).
#[test]
fn the_conditions_show_the_phase_of_each_stage() {
    let condition = |plan: &BlueGreenPlan, type_: &str| {
        let c = plan
            .status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_.as_deref() == Some(type_))
            .cloned()
            .expect("the condition");
        (c.status.expect("status"), c.reason.expect("reason"))
    };
    let t = |s: &str, r: &str| (s.to_owned(), r.to_owned());
    let active = decide(
        &resource(&v1(), Some(status(State::ActiveBlue, &v1()))),
        &observe(Some(stable(&v1())), None),
    );
    assert_eq!(condition(&active, "Ready"), t("True", "Running"));
    assert_eq!(condition(&active, "Progressing"), t("False", "Running"));
    let savepointing = decide(
        &resource(&v2(), Some(status(State::ActiveBlue, &v1()))),
        &observe(Some(stable(&v1())), None),
    );
    assert_eq!(condition(&savepointing, "Progressing"), t("True", "Updating"));
    let aborted = decide(
        &resource(&v2(), Some(transitioning(&v2(), GRACE + SECOND))),
        &observe(Some(stable(&v1())), Some(starting(&v2(), None))),
    );
    assert_eq!(state(&aborted), Some(State::ActiveBlue));
    let settled = decide(
        &resource(&v2(), Some(aborted.status)),
        &observe(Some(stable(&v1())), None),
    );
    assert_eq!(condition(&settled, "Ready"), t("True", "RolledBack"));
    assert_eq!(condition(&settled, "Degraded"), t("True", "RolledBack"));
    // A change waiting for blue, running but not stable yet, is under way.
    let waiting = decide(
        &resource(&v2(), Some(status(State::ActiveBlue, &v1()))),
        &observe(Some(starting(&v1(), Some(FlinkJobState::Running))), None),
    );
    assert_eq!(reasons(&waiting), vec![Reason::BlueGreenTransitionWaiting]);
    assert_eq!(condition(&waiting, "Progressing"), t("True", "Updating"));
}

// === The Ingress ===

/// The Service an Ingress write routes to (`deleted` for a deletion).
fn routed_service(change: &IngressChange) -> String {
    match change {
        IngressChange::Apply { ingress, .. } => {
            let rules = ingress
                .spec
                .as_ref()
                .and_then(|s| s.rules.as_ref())
                .expect("a rule");
            let http = rules[0].http.as_ref().expect("a path");
            let service = http.paths[0].backend.service.as_ref().expect("a Service");
            service.name.clone()
        }
        IngressChange::Delete { .. } => "deleted".to_owned(),
        IngressChange::Refuse { .. } => "refused".to_owned(),
    }
}

fn with_ingress(template: &Value, status: Option<Status>) -> FlinkBlueGreenDeployment {
    let mut resource = resource(template, status);
    resource.spec.ingress = Some(IngressSpec {
        template: Some("{{name}}.example.com".into()),
        ..IngressSpec::default()
    });
    resource
}

fn managed(observation: Observation, existing: Option<Ingress>) -> Observation {
    Observation {
        ingress: IngressObservation {
            cached: ingress::Observed {
                managed: true,
                existing,
                job_manager: None,
            },
            blue_port: 8081,
            green_port: 8081,
        },
        ..observation
    }
}

/// The Ingress the resource has once routed to its active `colour`.
fn routed_to_active(colour: Colour, observation: &Observation) -> Ingress {
    let state = match colour {
        Colour::Blue => State::ActiveBlue,
        Colour::Green => State::ActiveGreen,
    };
    let resource = with_ingress(&v1(), None);
    match bg_ingress::change(&resource, &status(state, &v1()), observation) {
        Some(IngressChange::Apply { ingress, .. }) => *ingress,
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_ingress_routes_to_the_active_child_and_switches_when_a_hand_over_finishes() {
    use Colour::{Blue, Green};
    let both = managed(observe(Some(stable(&v1())), Some(stable(&v2()))), None);
    let blue = Some(routed_to_active(Blue, &both));
    let green = Some(routed_to_active(Green, &both));
    let cases: Vec<(&str, Status, Observation, Vec<Step>)> = vec![
        (
            "active blue, none yet: created, to blue",
            status(State::ActiveBlue, &v2()),
            managed(observe(Some(stable(&v2())), None), None),
            vec![Step::Ingress("bg-blue-rest".into())],
        ),
        (
            "active blue, routed to it: nothing",
            status(State::ActiveBlue, &v2()),
            managed(observe(Some(stable(&v2())), None), blue.clone()),
            vec![],
        ),
        (
            "savepointing blue: still blue",
            savepointing(&v2()),
            Observation {
                savepoint: Some(savepoint(SnapshotState::InProgress)),
                ..managed(observe(Some(stable(&v1())), None), blue.clone())
            },
            vec![],
        ),
        (
            "green starting beside blue: still blue",
            transitioning(&v2(), 10 * SECOND),
            managed(
                observe(Some(stable(&v1())), Some(starting(&v2(), None))),
                blue.clone(),
            ),
            vec![],
        ),
        (
            "green stable: blue deleted and the Ingress switched to green in the same pass",
            transitioning(&v2(), 10 * SECOND),
            managed(observe(Some(stable(&v1())), Some(stable(&v2()))), blue.clone()),
            vec![Step::Delete(Blue), Step::Ingress("bg-green-rest".into())],
        ),
        (
            "active green, routed to it: nothing",
            status(State::ActiveGreen, &v2()),
            managed(observe(None, Some(stable(&v2()))), green.clone()),
            vec![],
        ),
        (
            "the first child starting: no Ingress yet",
            Status {
                abort_timestamp: Some(timestamp(NOW + GRACE)),
                ..status(State::TransitioningToBlue, &v2())
            },
            managed(observe(Some(starting(&v2(), None)), None), None),
            vec![],
        ),
    ];
    for (name, status, observation, expected) in cases {
        let plan = decide(&with_ingress(&v2(), Some(status)), &observation);
        assert_eq!(steps(&plan), expected, "{name}");
    }

    // spec.ingress removed: deleted; not managed: left alone.
    let removed = decide(
        &resource(&v2(), Some(status(State::ActiveGreen, &v2()))),
        &managed(observe(None, Some(stable(&v2()))), green.clone()),
    );
    assert_eq!(steps(&removed), vec![Step::Ingress("deleted".into())]);
    let unmanaged = decide(
        &with_ingress(&v2(), Some(status(State::ActiveGreen, &v2()))),
        &observe(None, Some(stable(&v2()))),
    );
    assert_eq!(steps(&unmanaged), vec![]);
}

#[test]
fn a_childs_ingress_template_carries_its_colour_and_is_no_change_of_the_template() {
    let template = with(v1(), &["ingress"], json!({"template": "{{name}}.example.com"}));
    let plan = decide(&resource(&template, None), &observe(None, None));
    let Some(Action::CreateChild { spec, .. }) = plan.actions.last() else {
        panic!("{:?}", plan.actions)
    };
    assert_eq!(
        spec.ingress.as_ref().and_then(|i| i.template.as_deref()),
        Some("blue-{{name}}.example.com")
    );

    // Blue runs the template with its prefix: the template unchanged is no change, and a
    // change that ends no job is made in place, not by a transition.
    let running = stable(&with(
        v1(),
        &["ingress"],
        json!({"template": "blue-{{name}}.example.com"}),
    ));
    let active = Some(status(State::ActiveBlue, &template));
    let plan = decide(
        &resource(&template, active.clone()),
        &observe(Some(running.clone()), None),
    );
    assert_eq!(steps(&plan), vec![]);
    let suspended = suspended(template.clone());
    let plan = decide(&resource(&suspended, active), &observe(Some(running), None));
    assert_eq!(steps(&plan), vec![Step::Update(Colour::Blue)]);
}

// === An abort that leaves no child running keeps the job's state ===

/// `v2` edited again (another change that ends the job).
fn v3() -> Value {
    with(v1(), &["image"], json!("flink:2.2"))
}

/// The status of a transition to green whose old child (blue) is gone, past its deadline.
fn transitioning_alone() -> Status {
    Status {
        transition_savepoint_path: Some(SAVEPOINT_PATH.to_owned()),
        ..transitioning(&v2(), GRACE)
    }
}

/// The status an abort with no child left running wrote.
fn aborted_alone() -> Status {
    Status {
        transition_savepoint_path: Some(SAVEPOINT_PATH.to_owned()),
        error: Some("Transition aborted".to_owned()),
        ..status(State::InitializingBlue, &v2())
    }
}

/// A child started from `path` whose job ran, then was suspended by an abort, recording
/// `own` as the state it resumes from.
fn suspended_after_running(path: &str, own: Option<&str>) -> Child {
    Child {
        spec: deployment_spec(&suspended(started_from(&v2(), Some(path)))),
        deleting: false,
        lifecycle: Some(Lifecycle::Suspended),
        job_status: Some(JobStatus {
            upgrade_savepoint_path: own.map(str::to_owned),
            ..job(FlinkJobState::Finished)
        }),
    }
}

#[test]
fn the_transition_savepoint_is_kept_in_status_from_the_start_of_the_new_child() {
    let plan = decide(
        &resource(&v2(), Some(savepointing(&v2()))),
        &Observation {
            savepoint: Some(savepoint(SnapshotState::Completed)),
            ..observe(Some(stable(&v1())), None)
        },
    );
    assert_eq!(steps(&plan), vec![Step::Create(Colour::Green)]);
    assert_eq!(
        plan.status.transition_savepoint_path.as_deref(),
        Some(SAVEPOINT_PATH)
    );
}

#[test]
fn an_abort_with_no_child_left_running_keeps_the_transition_savepoint() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    for (new, step) in [
        (
            starting(&green, Some(FlinkJobState::Restarting)),
            Step::Suspend(Colour::Green),
        ),
        (starting(&green, None), Step::Delete(Colour::Green)),
    ] {
        let plan = decide(
            &resource(&v2(), Some(transitioning_alone())),
            &observe(None, Some(new)),
        );
        assert_eq!(state(&plan), Some(State::InitializingBlue));
        assert_eq!(steps(&plan), vec![step]);
        assert_no_markers(&plan.status);
        assert_eq!(
            plan.status.transition_savepoint_path.as_deref(),
            Some(SAVEPOINT_PATH),
            "the only pointer to the job's state"
        );
        let error = plan.status.error.as_deref().expect("the reason in status");
        assert!(error.contains(SAVEPOINT_PATH), "{error}");
    }
    // The new child gone as well: the same.
    let plan = decide(
        &resource(&v2(), Some(transitioning_alone())),
        &observe(None, None),
    );
    assert_eq!(state(&plan), Some(State::InitializingBlue));
    assert_eq!(
        plan.status.transition_savepoint_path.as_deref(),
        Some(SAVEPOINT_PATH)
    );
}

#[test]
fn an_abort_with_the_old_child_running_or_a_finished_transition_lets_the_savepoint_go() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let aborted = decide(
        &resource(&v2(), Some(transitioning_alone())),
        &observe(
            Some(stable(&v1())),
            Some(starting(&green, Some(FlinkJobState::Restarting))),
        ),
    );
    assert_eq!(state(&aborted), Some(State::ActiveBlue));
    assert_eq!(aborted.status.transition_savepoint_path, None);

    let done = decide(
        &resource(&v2(), Some(transitioning_alone())),
        &observe(None, Some(stable(&green))),
    );
    assert_eq!(state(&done), Some(State::ActiveGreen));
    assert_eq!(done.status.transition_savepoint_path, None);
}

/// Point 4 of the state review: the edit after such an abort started the job empty.
#[test]
fn an_edit_after_an_abort_with_no_child_left_starts_from_the_kept_state() {
    struct Row {
        name: &'static str,
        spec: Value,
        blue: Option<Child>,
        green: Option<Child>,
        steps: Vec<Step>,
        /// The state the created child starts from, and the path kept in status.
        from: Option<&'static str>,
    }
    let own = "s3://savepoints/savepoint-green-suspended";
    let rows = vec![
        Row {
            name: "no child left: from the transition savepoint",
            spec: v3(),
            blue: None,
            green: None,
            steps: vec![Step::Create(Colour::Blue)],
            from: Some(SAVEPOINT_PATH),
        },
        Row {
            name: "a stateless template too: the job's state is not dropped by an abort",
            spec: stateless(v3()),
            blue: None,
            green: None,
            steps: vec![Step::Create(Colour::Blue)],
            from: Some(SAVEPOINT_PATH),
        },
        Row {
            name: "the suspended green ran from it: from its newer state",
            spec: v3(),
            blue: None,
            green: Some(suspended_after_running(SAVEPOINT_PATH, Some(own))),
            steps: vec![Step::Create(Colour::Blue)],
            from: Some(own),
        },
        Row {
            name: "a suspended blue that ran from it: its state kept, then it is deleted",
            spec: v3(),
            blue: Some(suspended_after_running(SAVEPOINT_PATH, Some(own))),
            green: None,
            steps: vec![Step::Delete(Colour::Blue)],
            from: Some(own),
        },
        Row {
            name: "a suspended child that recorded nothing: the transition savepoint",
            spec: v3(),
            blue: None,
            green: Some(suspended_after_running(SAVEPOINT_PATH, None)),
            steps: vec![Step::Create(Colour::Blue)],
            from: Some(SAVEPOINT_PATH),
        },
        Row {
            name: "a leftover that ran from other state is no candidate",
            spec: v3(),
            blue: None,
            green: Some(suspended_after_running("s3://savepoints/older", Some(own))),
            steps: vec![Step::Create(Colour::Blue)],
            from: Some(SAVEPOINT_PATH),
        },
        Row {
            name: "a path the user names in the edit wins",
            spec: with(
                v3(),
                &["job", "initialSavepointPath"],
                json!("s3://savepoints/mine"),
            ),
            blue: None,
            green: Some(suspended_after_running(SAVEPOINT_PATH, Some(own))),
            steps: vec![Step::Create(Colour::Blue)],
            from: Some("s3://savepoints/mine"),
        },
    ];
    for row in rows {
        let plan = decide(
            &resource(&row.spec, Some(aborted_alone())),
            &observe(row.blue, row.green),
        );
        assert_eq!(steps(&plan), row.steps, "{}", row.name);
        assert_eq!(
            plan.status.transition_savepoint_path.as_deref(),
            row.from,
            "{}: kept in status",
            row.name
        );
        if let Some(create) = plan
            .actions
            .iter()
            .find(|a| matches!(a, Action::CreateChild { .. }))
        {
            assert_eq!(create.initial_savepoint_path(), row.from, "{}", row.name);
            assert_eq!(state(&plan), Some(State::TransitioningToBlue), "{}", row.name);
            let note = &plan.events.last().expect("an Event").note;
            assert!(
                note.contains(row.from.unwrap_or_default()),
                "{}: {note}",
                row.name
            );
        }
    }
}

#[test]
fn an_edit_waits_while_a_child_that_ran_from_the_kept_state_is_being_suspended() {
    let suspending = Child {
        lifecycle: Some(Lifecycle::Upgrading),
        ..suspended_after_running(SAVEPOINT_PATH, Some(SAVEPOINT_PATH))
    };
    let plan = decide(
        &resource(&v3(), Some(aborted_alone())),
        &observe(None, Some(suspending)),
    );
    assert_eq!(steps(&plan), vec![]);
    assert_eq!(state(&plan), Some(State::InitializingBlue));
    assert_eq!(reasons(&plan), vec![Reason::BlueGreenTransitionWaiting]);
    let error = plan.status.error.as_deref().expect("the reason in status");
    assert!(error.contains("bg-green"), "{error}");
    assert_eq!(
        plan.status.transition_savepoint_path.as_deref(),
        Some(SAVEPOINT_PATH)
    );
}

/// The whole story: savepoint, new child, the old child lost, the new one never stable,
/// the abort, an edit: the job goes on from the transition savepoint, never empty.
#[test]
fn a_job_whose_transition_aborted_with_no_child_left_is_never_started_empty() {
    let taken = decide(
        &resource(&v2(), Some(savepointing(&v2()))),
        &Observation {
            savepoint: Some(savepoint(SnapshotState::Completed)),
            ..observe(Some(stable(&v1())), None)
        },
    );
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let late = Observation {
        now_ms: NOW + GRACE,
        ..observe(None, Some(starting(&green, None)))
    };
    let aborted = decide(&resource(&v2(), Some(taken.status)), &late);
    assert_eq!(steps(&aborted), vec![Step::Delete(Colour::Green)]);
    let retried = decide(&resource(&v2(), Some(aborted.status.clone())), &late);
    assert_eq!(steps(&retried), vec![], "the same spec is not tried again");
    let edited = decide(&resource(&v3(), Some(aborted.status)), &late);
    let create = edited
        .actions
        .iter()
        .find(|a| matches!(a, Action::CreateChild { .. }))
        .expect("the first child again");
    assert_eq!(create.initial_savepoint_path(), Some(SAVEPOINT_PATH));
}

// === Found by the blue/green lifecycle model ===

/// The status an aborted first deployment of `recorded` wrote: no child runs the job, and no
/// transition savepoint was ever taken.
fn aborted_first(recorded: &Value) -> Status {
    Status {
        error: Some("Transition aborted".to_owned()),
        ..status(State::InitializingBlue, recorded)
    }
}

/// A first child of `template` (started from nothing) whose job ran, then was suspended by
/// the abort, recording `own`; `lifecycle` as its loop shows it.
fn first_child_after_running(template: &Value, own: &str, lifecycle: Lifecycle) -> Child {
    Child {
        spec: deployment_spec(&suspended(template.clone())),
        deleting: false,
        lifecycle: Some(lifecycle),
        job_status: Some(JobStatus {
            upgrade_savepoint_path: Some(own.to_owned()),
            ..job(FlinkJobState::Finished)
        }),
    }
}

/// A first child whose job ran and checkpointed, then was aborted (not stable in time) and
/// suspended, left the job's state: the next edit deleted it and started a new first child
/// from nothing.
#[test]
fn an_edit_after_an_aborted_first_deployment_starts_from_the_state_its_child_left() {
    let own = "s3://savepoints/savepoint-blue-suspended";
    let ran = first_child_after_running(&v1(), own, Lifecycle::Suspended);
    let plan = decide(
        &resource(&v2(), Some(aborted_first(&v1()))),
        &observe(Some(ran), None),
    );
    assert_eq!(steps(&plan), vec![Step::Delete(Colour::Blue)]);
    assert_eq!(
        plan.status.transition_savepoint_path.as_deref(),
        Some(own),
        "the state it left, in status before it goes"
    );
    let plan = decide(&resource(&v2(), Some(plan.status)), &observe(None, None));
    assert_eq!(steps(&plan), vec![Step::Create(Colour::Blue)]);
    let create = plan
        .actions
        .iter()
        .find(|a| matches!(a, Action::CreateChild { .. }))
        .expect("created");
    assert_eq!(create.initial_savepoint_path(), Some(own));
    assert_eq!(plan.status.transition_savepoint_path.as_deref(), Some(own));

    // Still being suspended: the edit waits for the state it leaves.
    let suspending = first_child_after_running(&v1(), own, Lifecycle::Upgrading);
    let plan = decide(
        &resource(&v2(), Some(aborted_first(&v1()))),
        &observe(Some(suspending), None),
    );
    assert_eq!(steps(&plan), vec![]);
    assert_eq!(reasons(&plan), vec![Reason::BlueGreenTransitionWaiting]);

    // A first child that never ran leaves nothing: the template as it is.
    let never_ran = Child {
        job_status: None,
        ..first_child_after_running(&v1(), own, Lifecycle::Suspended)
    };
    let plan = decide(
        &resource(&v2(), Some(aborted_first(&v1()))),
        &observe(None, Some(never_ran)),
    );
    assert_eq!(steps(&plan), vec![Step::Create(Colour::Blue)]);
    assert_eq!(child_spec(&plan)["job"]["initialSavepointPath"], Value::Null);
}

/// A pass created the new child from the completed transition savepoint and stopped before
/// its status was written; the user then suspended the resource: the suspension won over
/// the hand-over, back to the old child, and the new child ran the job beside it, with
/// nothing to stop it (and later, resumed, the old child ran beside it).
#[test]
fn a_new_child_the_resource_lost_track_of_is_suspended_outside_a_transition() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let taken = Observation {
        savepoint: Some(savepoint(SnapshotState::Completed)),
        ..observe(Some(stable(&v1())), Some(starting(&green, None)))
    };
    let plan = decide(&resource(&suspended(v2()), Some(savepointing(&v2()))), &taken);
    assert_eq!(state(&plan), Some(State::ActiveBlue));
    assert_eq!(steps(&plan), vec![Step::Suspend(Colour::Green)]);
    assert_eq!(reasons(&plan), vec![Reason::Suspended]);

    // A pass that did not see it yet (a cache behind its creation) went back to blue: the
    // next one sees it running beside blue and suspends it.
    let running = observe(Some(stable(&v1())), Some(stable(&green)));
    let active = status(State::ActiveBlue, &v2());
    let plan = decide(&resource(&v2(), Some(active.clone())), &running);
    assert_eq!(state(&plan), Some(State::ActiveBlue));
    assert!(
        steps(&plan).contains(&Step::Suspend(Colour::Green)),
        "{:?}",
        steps(&plan)
    );

    // One suspended already (an abort's), or being deleted, is left as it is.
    for left in [
        Child {
            spec: deployment_spec(&suspended(green.clone())),
            ..stable(&green)
        },
        Child {
            deleting: true,
            ..stable(&green)
        },
    ] {
        let plan = decide(
            &resource(&v2(), Some(active.clone())),
            &observe(Some(stable(&v1())), Some(left)),
        );
        assert!(!steps(&plan).contains(&Step::Suspend(Colour::Green)));
    }
}

/// A pass created the new child from the completed transition savepoint and stopped before
/// its status was written; the savepoint's record then went (deleted by hand) and the step
/// timed out: the abort went back to the old child and left the new one running beside it.
#[test]
fn an_abort_of_the_savepoint_step_gives_up_a_new_child_created_before_a_crash() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let past_deadline = Status {
        abort_timestamp: Some(timestamp(NOW - SECOND)),
        ..savepointing(&v2())
    };
    for (new, step) in [
        (stable(&green), Step::Suspend(Colour::Green)),
        (starting(&green, None), Step::Delete(Colour::Green)),
    ] {
        let plan = decide(
            &resource(&v2(), Some(past_deadline.clone())),
            &observe(Some(stable(&v1())), Some(new)),
        );
        assert_eq!(state(&plan), Some(State::ActiveBlue));
        assert_eq!(steps(&plan), vec![step]);
        assert_eq!(reasons(&plan)[0], Reason::BlueGreenTransitionAborted);
    }
}

/// The state a suspended leftover recorded was copied into the status written after the
/// leftover's deletion: an operator that stopped in between lost it, and the next pass started
/// the first child without it.
#[test]
fn the_state_a_leftover_recorded_is_in_status_before_it_is_deleted() {
    let own = "s3://savepoints/savepoint-blue-suspended";
    for (status, leftover) in [
        (
            aborted_first(&v1()),
            first_child_after_running(&v1(), own, Lifecycle::Suspended),
        ),
        (
            aborted_alone(),
            suspended_after_running(SAVEPOINT_PATH, Some(own)),
        ),
    ] {
        let plan = decide(&resource(&v3(), Some(status)), &observe(Some(leftover), None));
        assert_eq!(steps(&plan), vec![Step::Delete(Colour::Blue)]);
        let before = plan.status_before.expect("a status written before the deletion");
        assert_eq!(before.transition_savepoint_path.as_deref(), Some(own));
    }
    // Nothing taken from it: nothing to write first.
    let plan = decide(
        &resource(&v2(), Some(status(State::ActiveGreen, &v1()))),
        &observe(
            Some(starting(&suspended(v1()), Some(FlinkJobState::Failed))),
            Some(stable(&v1())),
        ),
    );
    assert_eq!(steps(&plan), vec![Step::Delete(Colour::Blue)]);
    assert_eq!(plan.status_before, None);
}

/// A pass created the first child (after an abort, or at the very first deployment) and
/// stopped before its status was written: the next pass took that child for the aborted one
/// and waited, for ever, for it to be suspended; it is the child that pass started.
#[test]
fn a_first_child_created_before_a_crash_is_started_not_waited_for() {
    for (status, from) in [
        (aborted_first(&v1()), None),
        (aborted_alone(), Some(SAVEPOINT_PATH)),
    ] {
        let created = Child {
            job_status: Some(JobStatus {
                job_id: Some("e3bc32a1e3bc32a1e3bc32a1e3bc32a1".to_owned()),
                upgrade_savepoint_path: from.map(str::to_owned),
                ..Default::default()
            }),
            ..starting(&started_from(&v3(), from), None)
        };
        let plan = decide(&resource(&v3(), Some(status)), &observe(Some(created), None));
        assert_eq!(state(&plan), Some(State::TransitioningToBlue), "from {from:?}");
        assert_eq!(steps(&plan), vec![Step::Create(Colour::Blue)], "from {from:?}");
    }
}

/// A pass created the first child and stopped before its status was written; the user then
/// suspended the resource: it recorded the suspension and left that child running the job,
/// untracked (a resume then started another first child beside it).
#[test]
fn a_first_child_created_before_a_crash_is_suspended_with_the_resource() {
    let created = starting(&v1(), Some(FlinkJobState::Running));
    let plan = decide(
        &resource(&suspended(v1()), None),
        &observe(Some(created.clone()), None),
    );
    assert_eq!(state(&plan), Some(State::InitializingBlue));
    assert_eq!(steps(&plan), vec![Step::Suspend(Colour::Blue)]);
    assert_eq!(reasons(&plan), vec![Reason::Suspended]);
    // Resumed: the next first child starts from the state that child left.
    let own = "s3://savepoints/savepoint-blue-suspended";
    let plan = decide(
        &resource(&v1(), Some(plan.status)),
        &observe(
            Some(first_child_after_running(&v1(), own, Lifecycle::Suspended)),
            None,
        ),
    );
    assert_eq!(steps(&plan), vec![Step::Delete(Colour::Blue)]);
    assert_eq!(plan.status.transition_savepoint_path.as_deref(), Some(own));
    // Suspended already: nothing more.
    let plan = decide(
        &resource(&suspended(v1()), None),
        &observe(
            Some(Child {
                spec: deployment_spec(&suspended(v1())),
                ..created
            }),
            None,
        ),
    );
    assert_eq!(steps(&plan), vec![]);
}

/// A pass created the new child from the transition savepoint and stopped before its status
/// was written; the savepoint's FlinkStateSnapshot was then deleted, so the step took another:
/// the new child, found there, was taken as started from it (a 409), and ran from the older
/// one while the status named the newer.
#[test]
fn a_new_child_created_from_another_savepoint_is_replaced_by_one_from_the_transition_savepoint() {
    let older = "s3://savepoints/savepoint-older";
    let taken = |green: Option<Child>| Observation {
        savepoint: Some(savepoint(SnapshotState::Completed)),
        ..observe(Some(stable(&v1())), green)
    };
    let from_older = starting(&started_from(&v2(), Some(older)), Some(FlinkJobState::Running));
    let plan = decide(
        &resource(&v2(), Some(savepointing(&v2()))),
        &taken(Some(from_older)),
    );
    assert_eq!(state(&plan), Some(State::SavepointingBlue));
    assert_eq!(steps(&plan), vec![Step::Delete(Colour::Green)]);
    let plan = decide(&resource(&v2(), Some(savepointing(&v2()))), &taken(None));
    assert_eq!(steps(&plan), vec![Step::Create(Colour::Green)]);
    assert_eq!(plan.actions[0].initial_savepoint_path(), Some(SAVEPOINT_PATH));
    // One created from this very savepoint (the same step before a crash) is kept.
    let from_it = starting(&started_from(&v2(), Some(SAVEPOINT_PATH)), None);
    let plan = decide(&resource(&v2(), Some(savepointing(&v2()))), &taken(Some(from_it)));
    assert_eq!(state(&plan), Some(State::TransitioningToGreen));
    assert_eq!(steps(&plan), vec![Step::Create(Colour::Green)]);
}

/// A redeploy during the first child's start (after an abort that kept the job's state) gave
/// the incoming child the path it names; that child ran, was aborted and suspended: the next
/// edit did not take it for the aborted attempt's child (it had not started from the kept
/// path) and started the next first child from the kept path, dropping what it had left.
#[test]
fn a_child_a_redeploy_restarted_leaves_its_state_to_the_next_first_child() {
    let named = "s3://savepoints/named";
    let own = "s3://savepoints/savepoint-blue-suspended";
    let redeployed = with(
        with(v2(), &["job", "savepointRedeployNonce"], json!(1)),
        &["job", "initialSavepointPath"],
        json!(named),
    );
    let aborted = Status {
        transition_savepoint_path: Some(SAVEPOINT_PATH.to_owned()),
        error: Some("Transition aborted".to_owned()),
        ..status(State::InitializingBlue, &redeployed)
    };
    let edited = with(redeployed.clone(), &["image"], json!("flink:2.2"));
    let plan = decide(
        &resource(&edited, Some(aborted)),
        &observe(Some(suspended_after_running(named, Some(own))), None),
    );
    assert_eq!(steps(&plan), vec![Step::Delete(Colour::Blue)]);
    assert_eq!(plan.status.transition_savepoint_path.as_deref(), Some(own));
}

/// A savepoint redeploy made while a suspension waited for a transition to end (or one that
/// was aborted) left its nonce in the template; the active child, suspended in place then,
/// was given that nonce, new to it, and its own loop took it for a redeploy of its own: it
/// dropped its job without a savepoint and recorded the initialSavepointPath it was started
/// from, so the resume went back there.
#[test]
fn an_update_in_place_keeps_the_active_childs_own_redeploy_nonce() {
    let redeployed = with(
        with(v1(), &["job", "savepointRedeployNonce"], json!(3)),
        &["job", "initialSavepointPath"],
        json!("s3://savepoints/named"),
    );
    let running = started_from(&v1(), Some(SAVEPOINT_PATH));
    for (own, expected) in [(None, Value::Null), (Some(1), json!(1))] {
        let mut child = stable(&running);
        if let Some(job) = child.spec.job.as_mut() {
            job.savepoint_redeploy_nonce = own;
        }
        let plan = decide(
            &resource(
                &suspended(redeployed.clone()),
                Some(status(State::ActiveGreen, &redeployed)),
            ),
            &observe(None, Some(child)),
        );
        assert_eq!(steps(&plan), vec![Step::Update(Colour::Green)]);
        let spec = child_spec(&plan);
        assert_eq!(spec["job"]["savepointRedeployNonce"], expected, "own {own:?}");
        assert_eq!(spec["job"]["initialSavepointPath"], json!(SAVEPOINT_PATH));
        assert_eq!(spec["job"]["state"], json!("suspended"));
    }
}

/// After an aborted first deployment, an edit started a new first child and the operator
/// stopped before its status was written; the user then set the spec back to the one the
/// aborted child had: the resource took it for that spec, waited for an edit, and left the new
/// child running the job untracked.
#[test]
fn a_first_child_created_before_a_crash_for_a_spec_edited_back_is_suspended() {
    let created = starting(&v2(), Some(FlinkJobState::Running));
    let plan = decide(
        &resource(&v1(), Some(aborted_first(&v1()))),
        &observe(Some(created), None),
    );
    assert_eq!(state(&plan), Some(State::InitializingBlue));
    assert_eq!(steps(&plan), vec![Step::Suspend(Colour::Blue)]);
    // The aborted child itself, suspended by the abort: nothing to do.
    let aborted = starting(&suspended(v1()), Some(FlinkJobState::Failed));
    let plan = decide(
        &resource(&v1(), Some(aborted_first(&v1()))),
        &observe(Some(aborted), None),
    );
    assert_eq!(steps(&plan), vec![]);
}

/// After an aborted first deployment, an edit started a new first child and the operator
/// stopped before its status was written; its job ran, and the user edited the spec again:
/// that child was deleted for one of the new spec, started from nothing, and the state its
/// job had (the savepoint of its deletion) was named nowhere.
#[test]
fn a_first_child_created_before_a_crash_for_a_spec_edited_since_leaves_its_state_to_the_next() {
    let created = starting(&v2(), Some(FlinkJobState::Running));
    let plan = decide(
        &resource(&v3(), Some(aborted_first(&v1()))),
        &observe(Some(created), None),
    );
    assert_eq!(state(&plan), Some(State::InitializingBlue));
    assert_eq!(steps(&plan), vec![Step::Suspend(Colour::Blue)]);

    // Suspended: the next child starts from the state it left, as after an abort.
    let own = "s3://savepoints/savepoint-blue-suspended";
    let left = first_child_after_running(&v2(), own, Lifecycle::Suspended);
    let plan = decide(
        &resource(&v3(), Some(aborted_first(&v1()))),
        &observe(Some(left), None),
    );
    assert_eq!(steps(&plan), vec![Step::Delete(Colour::Blue)]);
    assert_eq!(plan.status.transition_savepoint_path.as_deref(), Some(own));

    // One whose job never ran holds nothing: it goes at once.
    let never_ran = starting(&v2(), None);
    let plan = decide(
        &resource(&v3(), Some(aborted_first(&v1()))),
        &observe(Some(never_ran), None),
    );
    assert_eq!(steps(&plan), vec![Step::Delete(Colour::Blue)]);
}

/// A redeploy during a transition restarted the incoming child from the path it named; then
/// both children were deleted by hand: the abort kept the transition savepoint, and the next
/// edit started the job from it, older than the state the redeploy named.
#[test]
fn a_redeploy_during_a_transition_is_the_state_an_abort_keeps() {
    let green = started_from(&v2(), Some(SAVEPOINT_PATH));
    let plan = decide(
        &resource(&redeploy(), Some(transitioning_alone())),
        &observe(None, Some(starting(&green, Some(FlinkJobState::Running)))),
    );
    assert_eq!(steps(&plan), vec![Step::Update(Colour::Green)]);
    assert_eq!(
        plan.status.transition_savepoint_path.as_deref(),
        Some("s3://savepoints/manual")
    );
    let plan = decide(&resource(&redeploy(), Some(plan.status)), &observe(None, None));
    assert_eq!(state(&plan), Some(State::InitializingBlue));
    let plan = decide(
        &resource(
            &with(redeploy(), &["image"], json!("flink:2.2")),
            Some(plan.status),
        ),
        &observe(None, None),
    );
    assert_eq!(steps(&plan), vec![Step::Create(Colour::Blue)]);
    assert_eq!(
        plan.actions[0].initial_savepoint_path(),
        Some("s3://savepoints/manual")
    );
}
