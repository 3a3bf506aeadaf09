//! The ADVANCED hand-over: the coordination map written before each step that needs it, the
//! gate phase bounded by the gate timeout, the old job stopped with a savepoint once its
//! gates handed over, both aborts (before and after the toggle), and the crash points.

use flink_operator_api::{TransitionMode, common::JobStatus};

use super::*;
use crate::bluegreen::gate::{self, GateMap, Named, ObservedMap, data};

/// The generation of the resource in these tests: the id of a transition started now.
const GENERATION: i64 = 5;
/// The transition that created the running blue child.
const BLUE_TRANSITION: &str = "2";
/// A toggle the standby set.
const TOGGLE: i64 = NOW - 60 * SECOND;

fn advanced(template: &Value, status: Option<Status>) -> FlinkBlueGreenDeployment {
    let mut resource = resource(template, status);
    resource.spec.transition_mode = Some(TransitionMode::Advanced);
    resource.metadata.generation = Some(GENERATION);
    resource
}

/// `status` recording `template` under the ADVANCED mode.
fn advanced_status(state: State, template: &Value) -> Status {
    let spec = advanced(template, None).spec;
    Status {
        last_reconciled_spec: flink_operator_api::ReconciledSpec {
            spec,
            resource_metadata: None,
        }
        .encode()
        .ok(),
        ..status(state, template)
    }
}

/// A child as the operator created it: `template` with the keys of its gate.
fn injected(template: &Value, colour: Colour, transition: &str) -> Value {
    let spec = gate::inject(&deployment_spec(template), NAME, colour, transition);
    serde_json::to_value(spec).expect("encodes")
}

fn blue() -> Named {
    Named {
        colour: Colour::Blue,
        transition_id: BLUE_TRANSITION.to_owned(),
    }
}

fn green() -> Named {
    Named {
        colour: Colour::Green,
        transition_id: GENERATION.to_string(),
    }
}

fn gate_map(stage: GateStage, active: Named, standby: Option<Named>) -> GateMap {
    GateMap {
        transition_id: active.transition_id.clone(),
        stage,
        active,
        standby,
        deletion_delay_ms: 0,
    }
}

fn observed(map: GateMap, toggle: Option<i64>) -> ObservedMap {
    let mut data = map.data();
    if let Some(toggle) = toggle {
        data.insert(data::TOGGLE.to_owned(), toggle.to_string());
    }
    ObservedMap::of(&data, "7".to_owned())
}

fn with_gate(
    observation: Observation,
    map: GateMap,
    toggle: Option<i64>,
    hand_over: HandOver,
) -> Observation {
    Observation {
        gate: Some(observed(map, toggle)),
        hand_over,
        ..observation
    }
}

/// The map a plan writes, if it writes one.
fn written_map(plan: &BlueGreenPlan) -> Option<GateMap> {
    plan.actions.iter().find_map(|a| match a {
        Action::WriteGateMap { map, .. } => Some(map.clone()),
        _ => None,
    })
}

/// The blue child running v1, created by transition 2.
fn running_blue() -> Child {
    stable(&injected(&v1(), Colour::Blue, BLUE_TRANSITION))
}

/// Green started for v2 from the transition savepoint.
fn green_spec() -> Value {
    injected(
        &started_from(&v2(), Some(SAVEPOINT_PATH)),
        Colour::Green,
        &GENERATION.to_string(),
    )
}

/// TRANSITIONING_TO_GREEN with green found stable `ready_ago` before now (None: not yet).
fn handing_over_status(ready_ago: Option<i64>) -> Status {
    let mut status = Status {
        savepoint_trigger_id: Some(savepoint_name(NAME, Colour::Blue, ID)),
        abort_timestamp: Some(timestamp(NOW + GRACE)),
        job_status: Some(job(FlinkJobState::Reconciling)),
        ..advanced_status(State::TransitioningToGreen, &v2())
    };
    if let Some(ago) = ready_ago {
        status.deployment_ready_timestamp = Some(timestamp(NOW - ago));
        status.abort_timestamp = Some(timestamp(NOW - ago + GRACE));
    }
    status
}

#[test]
fn the_first_child_is_named_in_the_map_before_it_is_created_and_carries_its_gates_keys() {
    let plan = decide(&advanced(&v1(), None), &observe(None, None));
    assert_eq!(
        steps(&plan),
        vec![Step::GateMap(GateStage::Running), Step::Create(Colour::Blue)]
    );
    let map = written_map(&plan).expect("a map");
    assert_eq!(map.active.colour, Colour::Blue);
    assert_eq!(map.active.transition_id, GENERATION.to_string());
    assert_eq!(map.standby, None);
    let spec = deployment_spec(&child_spec(&plan));
    let config = spec.flink_configuration.clone().expect("configuration");
    assert_eq!(config.get(gate::injected::COLOUR).as_deref(), Some("BLUE"));
    assert_eq!(
        config.get(gate::injected::CONFIGMAP).as_deref(),
        Some("bg-configmap")
    );
    assert_eq!(gate::transition_of(&spec), Some(GENERATION.to_string()));
    // No map yet: it is created, not patched.
    assert!(matches!(
        plan.actions[0],
        Action::WriteGateMap {
            resource_version: None,
            ..
        }
    ));
}

#[test]
fn the_new_child_starts_with_the_old_one_as_standby_and_no_toggle() {
    let observation = Observation {
        savepoint: Some(savepoint(SnapshotState::Completed)),
        ..with_gate(
            observe(Some(running_blue()), None),
            gate_map(GateStage::Running, blue(), None),
            None,
            HandOver::NotAsked,
        )
    };
    let status = Status {
        savepoint_trigger_id: Some(savepoint_name(NAME, Colour::Blue, ID)),
        ..advanced_status(State::SavepointingBlue, &v2())
    };
    let plan = decide(&advanced(&v2(), Some(status)), &observation);
    assert_eq!(
        steps(&plan),
        vec![
            Step::GateMap(GateStage::Initializing),
            Step::Create(Colour::Green)
        ]
    );
    assert_eq!(
        written_map(&plan),
        Some(gate_map(GateStage::Initializing, green(), Some(blue())))
    );
    let Some(Action::WriteGateMap { patch, .. }) = plan.actions.first() else {
        panic!("a map write first");
    };
    // A new transition: nothing a gate wrote before is kept.
    assert_eq!(patch[data::TOGGLE], None);
    assert_eq!(child_spec(&plan), green_spec());
}

#[test]
fn a_stable_new_child_opens_the_gate_phase_under_the_gate_timeout() {
    let observation = with_gate(
        observe(Some(running_blue()), Some(stable(&green_spec()))),
        gate_map(GateStage::Initializing, green(), Some(blue())),
        None,
        HandOver::NotAsked,
    );
    let plan = decide(&advanced(&v2(), Some(handing_over_status(None))), &observation);
    assert_eq!(steps(&plan), vec![Step::GateMap(GateStage::Transitioning)]);
    assert_eq!(
        written_map(&plan),
        Some(gate_map(GateStage::Transitioning, green(), Some(blue())))
    );
    assert_eq!(
        millis_of(plan.status.deployment_ready_timestamp.as_deref()),
        Some(NOW)
    );
    // No gate timeout set: the abort grace period bounds the hand-over.
    assert_eq!(
        millis_of(plan.status.abort_timestamp.as_deref()),
        Some(NOW + GRACE)
    );
    assert_eq!(reasons(&plan), vec![Reason::BlueGreenHandOverStarted]);
    assert_eq!(state(&plan), Some(State::TransitioningToGreen));
}

#[test]
fn the_old_job_is_stopped_with_a_savepoint_only_once_every_gate_subtask_handed_over() {
    let map = gate_map(GateStage::Transitioning, green(), Some(blue()));
    let waiting = [
        HandOver::NotAsked,
        HandOver::Pending(vec![1.0, 0.0]),
        HandOver::NoGate,
        HandOver::Unknown("connection refused".to_owned()),
    ];
    for hand_over in waiting {
        let observation = with_gate(
            observe(Some(running_blue()), Some(stable(&green_spec()))),
            map.clone(),
            Some(TOGGLE),
            hand_over.clone(),
        );
        let plan = decide(
            &advanced(&v2(), Some(handing_over_status(Some(30 * SECOND)))),
            &observation,
        );
        assert_eq!(steps(&plan), vec![], "{hand_over:?}");
        assert_eq!(state(&plan), Some(State::TransitioningToGreen));
    }
    let observation = with_gate(
        observe(Some(running_blue()), Some(stable(&green_spec()))),
        map,
        Some(TOGGLE),
        HandOver::Done,
    );
    let plan = decide(
        &advanced(&v2(), Some(handing_over_status(Some(30 * SECOND)))),
        &observation,
    );
    assert_eq!(steps(&plan), vec![Step::Update(Colour::Blue)]);
    let stopping = deployment_spec(&child_spec(&plan));
    let job = stopping.job.expect("a job");
    assert_eq!(job.state, Some(flink_operator_api::common::JobState::Suspended));
    assert_eq!(
        job.upgrade_mode,
        Some(flink_operator_api::common::UpgradeMode::Savepoint)
    );
    assert_eq!(reasons(&plan), vec![Reason::BlueGreenHandedOver]);
}

#[test]
fn the_stopped_old_child_is_deleted_after_the_map_names_the_new_one_alone() {
    let stopping = with(
        injected(&v1(), Colour::Blue, BLUE_TRANSITION),
        &["job", "state"],
        json!("suspended"),
    );
    let map = gate_map(GateStage::Transitioning, green(), Some(blue()));
    let still_running = Child {
        lifecycle: Some(Lifecycle::Upgrading),
        ..stable(&stopping)
    };
    let stopped = Child {
        lifecycle: Some(Lifecycle::Suspended),
        job_status: Some(job(FlinkJobState::Finished)),
        ..stable(&stopping)
    };
    let ready = Some(handing_over_status(Some(40 * SECOND)));
    let plan = decide(
        &advanced(&v2(), ready.clone()),
        &with_gate(
            observe(Some(still_running), Some(stable(&green_spec()))),
            map.clone(),
            Some(TOGGLE),
            HandOver::NotAsked,
        ),
    );
    assert_eq!(steps(&plan), vec![], "the old job's stop is awaited");
    let plan = decide(
        &advanced(&v2(), ready),
        &with_gate(
            observe(Some(stopped), Some(stable(&green_spec()))),
            map,
            Some(TOGGLE),
            HandOver::NotAsked,
        ),
    );
    assert_eq!(
        steps(&plan),
        vec![Step::GateMap(GateStage::Running), Step::Delete(Colour::Blue)]
    );
    assert_eq!(
        written_map(&plan),
        Some(gate_map(GateStage::Running, green(), None))
    );
    let Some(Action::WriteGateMap { patch, .. }) = plan.actions.first() else {
        panic!("a map write first");
    };
    // Green's watermark may trail blue's: the toggle stays for it.
    assert!(!patch.contains_key(data::TOGGLE), "{patch:?}");
    assert_eq!(state(&plan), Some(State::ActiveGreen));
    assert_no_markers(&plan.status);

    // Killed after the deletion, before the status: the next look finishes forward and
    // writes the map again if it had not been.
    let plan = decide(
        &advanced(&v2(), Some(handing_over_status(Some(40 * SECOND)))),
        &with_gate(
            observe(None, Some(stable(&green_spec()))),
            gate_map(GateStage::Transitioning, green(), Some(blue())),
            Some(TOGGLE),
            HandOver::NotAsked,
        ),
    );
    assert_eq!(steps(&plan), vec![Step::GateMap(GateStage::Running)]);
    assert_eq!(state(&plan), Some(State::ActiveGreen));
}

/// The gate phase past its timeout, green's gates not handed over, with `toggle` set or not.
fn past_the_gate_timeout(toggle: Option<i64>) -> BlueGreenPlan {
    let mut status = handing_over_status(Some(GRACE + SECOND));
    status.abort_timestamp = Some(timestamp(NOW - SECOND));
    decide(
        &advanced(&v2(), Some(status)),
        &with_gate(
            observe(Some(running_blue()), Some(stable(&green_spec()))),
            gate_map(GateStage::Transitioning, green(), Some(blue())),
            toggle,
            HandOver::Pending(vec![0.0]),
        ),
    )
}

#[test]
fn a_hand_over_past_the_gate_timeout_before_the_toggle_aborts_with_nothing_to_redeploy() {
    let plan = past_the_gate_timeout(None);
    // The map first: green's gate, no longer named, stops writing at once.
    assert_eq!(
        steps(&plan),
        vec![Step::GateMap(GateStage::Running), Step::Suspend(Colour::Green)]
    );
    let map = written_map(&plan).expect("a map");
    assert_eq!(map.active, blue());
    assert_eq!(map.standby, None);
    assert_eq!(
        map.transition_id,
        GENERATION.to_string(),
        "the aborted transition's id stays"
    );
    assert_eq!(state(&plan), Some(State::ActiveBlue));
    assert_no_markers(&plan.status);
    let error = plan.status.error.clone().expect("an error");
    assert!(error.contains("not every gate subtask"), "{error}");
    assert!(!error.contains("starts again"), "{error}");
}

#[test]
fn a_hand_over_aborted_after_the_toggle_redeploys_the_survivor_from_the_transition_savepoint() {
    let plan = past_the_gate_timeout(Some(TOGGLE));
    assert_eq!(
        steps(&plan),
        vec![
            Step::GateMap(GateStage::Running),
            Step::Suspend(Colour::Green),
            Step::Update(Colour::Blue)
        ]
    );
    let Some(Action::WriteGateMap { patch, .. }) = plan.actions.first() else {
        panic!("a map write first");
    };
    // The survivor writes everything again: no toggle is left for it.
    assert_eq!(patch[data::TOGGLE], None);
    let survivor = deployment_spec(&child_spec(&plan));
    let job = survivor.job.clone().expect("a job");
    assert_eq!(job.initial_savepoint_path.as_deref(), Some(SAVEPOINT_PATH));
    assert_eq!(job.savepoint_redeploy_nonce, Some(1));
    assert_eq!(
        gate::transition_of(&survivor).as_deref(),
        Some(BLUE_TRANSITION),
        "the survivor keeps its own gate keys"
    );
    let error = plan.status.error.clone().expect("an error");
    assert!(
        error.contains("starts again from the transition savepoint"),
        "{error}"
    );
}

#[test]
fn a_new_child_that_never_becomes_stable_is_aborted_under_the_grace_period_before_any_gate_phase() {
    let mut status = handing_over_status(None);
    status.abort_timestamp = Some(timestamp(NOW - SECOND));
    let plan = decide(
        &advanced(&v2(), Some(status)),
        &with_gate(
            observe(Some(running_blue()), Some(starting(&green_spec(), None))),
            gate_map(GateStage::Initializing, green(), Some(blue())),
            None,
            HandOver::NotAsked,
        ),
    );
    assert_eq!(
        steps(&plan),
        vec![Step::GateMap(GateStage::Running), Step::Delete(Colour::Green)]
    );
    assert_eq!(state(&plan), Some(State::ActiveBlue));
}

#[test]
fn a_spec_change_during_the_gate_phase_goes_to_the_new_child_and_keeps_the_toggle() {
    let v3 = with(v2(), &["job", "parallelism"], json!(4));
    let plan = decide(
        &advanced(&v3, Some(handing_over_status(Some(30 * SECOND)))),
        &with_gate(
            observe(Some(running_blue()), Some(stable(&green_spec()))),
            gate_map(GateStage::Transitioning, green(), Some(blue())),
            Some(TOGGLE),
            HandOver::Pending(vec![0.0]),
        ),
    );
    assert_eq!(steps(&plan), vec![Step::Update(Colour::Green)], "no map write");
    let updated = deployment_spec(&child_spec(&plan));
    assert_eq!(gate::transition_of(&updated), Some(GENERATION.to_string()));
    assert_eq!(updated.job.expect("job").parallelism, Some(4));
}

#[test]
fn outside_a_transition_the_map_names_the_active_child_alone_and_a_settled_one_is_not_written() {
    let blue_alone = gate_map(GateStage::Running, blue(), None);
    let settled = decide(
        &advanced(&v1(), Some(advanced_status(State::ActiveBlue, &v1()))),
        &with_gate(
            observe(Some(running_blue()), None),
            blue_alone.clone(),
            None,
            HandOver::NotAsked,
        ),
    );
    assert_eq!(steps(&settled), vec![]);
    // A map lost (deleted by hand) is written again.
    let lost = decide(
        &advanced(&v1(), Some(advanced_status(State::ActiveBlue, &v1()))),
        &observe(Some(running_blue()), None),
    );
    assert_eq!(steps(&lost), vec![Step::GateMap(GateStage::Running)]);
    // The toggle of the transition that made blue active stays: blue's gate leaves what lies
    // before it to the old job until its own watermark passes it.
    let ended = decide(
        &advanced(&v1(), Some(advanced_status(State::ActiveBlue, &v1()))),
        &with_gate(
            observe(Some(running_blue()), None),
            blue_alone,
            Some(TOGGLE),
            HandOver::NotAsked,
        ),
    );
    assert_eq!(steps(&ended), vec![]);
}

#[test]
fn the_injected_keys_are_no_change_of_the_template() {
    // Blue carries its gate keys; the template does not: nothing to do.
    let plan = decide(
        &advanced(&v1(), Some(advanced_status(State::ActiveBlue, &v1()))),
        &with_gate(
            observe(Some(running_blue()), None),
            gate_map(GateStage::Running, blue(), None),
            None,
            HandOver::NotAsked,
        ),
    );
    assert_eq!(steps(&plan), vec![]);
    // A change that ends no job is made in place, keeping blue's own gate keys.
    let plan = decide(
        &advanced(&patched(), Some(advanced_status(State::ActiveBlue, &v1()))),
        &with_gate(
            observe(Some(running_blue()), None),
            gate_map(GateStage::Running, blue(), None),
            None,
            HandOver::NotAsked,
        ),
    );
    assert_eq!(steps(&plan), vec![Step::Update(Colour::Blue)]);
    let spec = deployment_spec(&child_spec(&plan));
    assert_eq!(gate::transition_of(&spec).as_deref(), Some(BLUE_TRANSITION));
}

#[test]
fn a_changed_transition_mode_is_set_back_with_a_warning() {
    // Stored past the webhook (a cluster without it): BASIC applied, ADVANCED requested.
    let plan = decide(
        &advanced(&v1(), Some(status(State::ActiveBlue, &v1()))),
        &observe(Some(stable(&v1())), None),
    );
    assert_eq!(steps(&plan), vec![Step::Revert]);
    assert_eq!(reasons(&plan), vec![Reason::ValidationError]);
    let Some(Action::RevertSpec { spec }) = plan.actions.first() else {
        panic!("a revert");
    };
    assert_eq!(spec.transition_mode.unwrap_or_default(), TransitionMode::Basic);
    let error = plan.status.error.clone().expect("an error");
    assert!(error.contains("spec.transitionMode"), "{error}");
}

#[test]
fn an_advanced_resource_that_cannot_hand_over_is_refused_naming_the_field() {
    let plan = decide(&advanced(&stateless(v1()), None), &observe(None, None));
    assert_eq!(steps(&plan), vec![]);
    let error = plan.status.error.clone().expect("an error");
    assert!(error.contains("spec.template.spec.job.upgradeMode"), "{error}");

    let observation = Observation {
        policy: Ok(BlueGreenPolicy {
            deletion_delay_ms: 60 * SECOND,
            gate_timeout_ms: Some(30 * SECOND),
            ..BlueGreenPolicy::default()
        }),
        ..observe(None, None)
    };
    let plan = decide(&advanced(&v1(), None), &observation);
    assert_eq!(steps(&plan), vec![]);
    let error = plan.status.error.clone().expect("an error");
    assert!(
        error.contains("kubernetes.operator.bluegreen.gate.timeout"),
        "{error}"
    );
}

#[test]
fn a_stable_first_child_ends_the_deployment_with_the_map_naming_it_alone() {
    // A first child that is stable finishes with the map naming it alone.
    let status = Status {
        job_status: Some(JobStatus::default()),
        ..advanced_status(State::TransitioningToBlue, &v1())
    };
    let blue_first = stable(&injected(&v1(), Colour::Blue, &GENERATION.to_string()));
    let plan = decide(&advanced(&v1(), Some(status)), &observe(Some(blue_first), None));
    assert_eq!(steps(&plan), vec![Step::GateMap(GateStage::Running)]);
    assert_eq!(state(&plan), Some(State::ActiveBlue));
}

#[test]
fn a_suspension_during_the_hand_over_waits_for_its_end_and_then_suspends_the_new_child() {
    let suspended_v2 = suspended(v2());
    let during = decide(
        &advanced(&suspended_v2, Some(handing_over_status(Some(30 * SECOND)))),
        &with_gate(
            observe(Some(running_blue()), Some(stable(&green_spec()))),
            gate_map(GateStage::Transitioning, green(), Some(blue())),
            Some(TOGGLE),
            HandOver::Pending(vec![0.0]),
        ),
    );
    assert_eq!(steps(&during), vec![], "the hand-over goes on");
    assert_eq!(state(&during), Some(State::TransitioningToGreen));
    // Once green is active alone, the suspension is applied to it in place, with its keys.
    let after = decide(
        &advanced(&suspended_v2, Some(advanced_status(State::ActiveGreen, &v2()))),
        &with_gate(
            observe(None, Some(stable(&green_spec()))),
            gate_map(GateStage::Running, green(), None),
            Some(TOGGLE),
            HandOver::NotAsked,
        ),
    );
    assert_eq!(steps(&after), vec![Step::Update(Colour::Green)]);
    let spec = deployment_spec(&child_spec(&after));
    assert_eq!(
        spec.job.as_ref().and_then(|j| j.state),
        Some(flink_operator_api::common::JobState::Suspended)
    );
    assert_eq!(gate::transition_of(&spec), Some(GENERATION.to_string()));
}
