//! The blue/green state machine: one pure function from the resource and what was observed
//! to the next [`Plan`]. Each pass takes at most one step, and every step's status is written
//! before the next step starts; where a crash between acting and writing would lose track
//! of something (the name of a savepoint, the readiness that allows a deletion), the plan's
//! `status_before` records it first.
//!
//! | stage | does | next |
//! |---|---|---|
//! | INITIALIZING_BLUE | creates the blue child from the template (unless suspended, or the spec already failed once) | TRANSITIONING_TO_BLUE |
//! | ACTIVE_X | SUSPEND, RESUME, PATCH_CHILD: updates X in place. TRANSITION: names and creates a savepoint of X (none when stateless: starts Y at once). SAVEPOINT_REDEPLOY: starts Y from `initialSavepointPath` | SAVEPOINTING_X, TRANSITIONING_TO_Y |
//! | SAVEPOINTING_X | waits for the savepoint; COMPLETED starts Y from it; FAILED or late aborts | TRANSITIONING_TO_Y, ACTIVE_X |
//! | TRANSITIONING_TO_Y | Y stable: records when, waits the deletion delay, deletes X and finishes; not stable in time: aborts | ACTIVE_Y, ACTIVE_X |
//!
//! `savepointTriggerId` holds the name of the transition's FlinkStateSnapshot, not a Flink
//! trigger id: the operator's snapshot service takes the savepoint, and this loop only
//! creates the resource and reads its state and path.

use std::collections::BTreeMap;

use flink_operator_api::{
    FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentSpec, FlinkBlueGreenDeploymentStatus as Status,
    FlinkDeploymentSpec, ReconciledSpec, TransitionMode,
    common::{FlinkJobState, JobState, JobStatus, ResourceLifecycleState, UpgradeMode},
    keys,
    options::duration_text,
};
use kube::ResourceExt;

use super::{
    BlueGreenPolicy, Child, Colour, Observation, SpecDiff, Stage, child_name,
    diff::{diff, ends_job},
    gate::{self, GateMap, GateStage, HandOver, Named},
    observation::SnapshotState,
    phase,
    policy::whole_secs,
    savepoint_name,
};
use crate::{
    events::{EventNote, Reason},
    lifecycle::spec::{is_suspended, upgrade_mode},
    plan::{Next, Plan},
    resources::ingress::IngressChange,
};

mod hand_over;
mod parts;

pub use crate::timestamps::timestamp;
use hand_over::{abort_hand_over, advanced_refusal, handing_over};
pub use parts::millis_of;
use parts::{
    clear_markers, deletion_events, failed, job_state, mirrored, plan, refused, started, updated_spec,
    with_initial_savepoint,
};

/// A blue/green plan.
pub type BlueGreenPlan = Plan<Status, Action>;

/// One step the act carries out.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create (or replace) the child of `colour` with `spec`. Its `job.initialSavepointPath`
    /// is the state it starts from (see [`Action::initial_savepoint_path`]); the owner
    /// reference and the blue/green type label are the act's part.
    CreateChild {
        colour: Colour,
        spec: FlinkDeploymentSpec,
    },
    /// Replace the spec of the existing child of `colour` (a change that ends no job, a
    /// suspension or a resumption, or a change during a transition).
    UpdateChild {
        colour: Colour,
        spec: FlinkDeploymentSpec,
    },
    /// Suspend the child of `colour` (`job.state: suspended`), keeping it for inspection.
    SuspendChild { colour: Colour },
    /// Delete the child of `colour`.
    DeleteChild { colour: Colour },
    /// Create the FlinkStateSnapshot `name`: a savepoint of the child of `colour` (its
    /// FlinkDeployment as the job reference). One that already exists under that name is that
    /// savepoint (a retry after a crash). The name is in `savepointTriggerId` already.
    CreateSavepoint { name: String, colour: Colour },
    /// ADVANCED: bring the coordination ConfigMap to `map` with the merge patch `patch`
    /// (`None` values remove keys), on the resourceVersion observed (`None`: create it).
    WriteGateMap {
        map: GateMap,
        patch: BTreeMap<String, Option<String>>,
        resource_version: Option<String>,
    },
    /// Bring the resource's Ingress to the active child.
    Ingress(IngressChange),
    /// Put the applied spec back into the resource: it changed `spec.transitionMode`, which
    /// cannot change once deployed (a cluster without the webhook lets that through).
    RevertSpec { spec: Box<FlinkBlueGreenDeploymentSpec> },
}

impl Action {
    /// The state a created child starts from.
    pub fn initial_savepoint_path(&self) -> Option<&str> {
        match self {
            Self::CreateChild { spec, .. } => spec.job.as_ref()?.initial_savepoint_path.as_deref(),
            _ => None,
        }
    }
}

/// The next step for `resource`, given what was observed; the statuses it writes carry the
/// conditions of their phase.
pub fn decide(resource: &FlinkBlueGreenDeployment, observation: &Observation) -> BlueGreenPlan {
    if resource.metadata.deletion_timestamp.is_some() {
        // The children go with it (their owner reference): nothing is started or written.
        let before = resource.status.clone().unwrap_or_default();
        return plan(before, Vec::new(), Vec::new(), Next::Idle);
    }
    let mut plan = step(resource, observation);
    let generation = resource.metadata.generation;
    for status in std::iter::once(&mut plan.status).chain(plan.status_before.as_mut()) {
        let recorded = status.last_reconciled_spec().ok().flatten();
        let pending = recorded.as_ref() != Some(&resource.spec);
        phase::set_conditions(status, observation, generation, pending);
    }
    // After the step: a hand-over that finishes in this pass switches the Ingress with it.
    plan.actions
        .extend(super::ingress::change(resource, &plan.status, observation).map(Action::Ingress));
    plan
}

/// The step of the stage recorded in status.
fn step(resource: &FlinkBlueGreenDeployment, observation: &Observation) -> BlueGreenPlan {
    let before = resource.status.clone().unwrap_or_default();
    if !observation.foreign.is_empty() {
        let message = format!(
            "FlinkDeployment {} has the name of a child but is not owned by this resource: \
             rename or delete it; nothing is deployed until then",
            observation.foreign.join(", ")
        );
        return failed(
            &before,
            before.clone(),
            Reason::BlueGreenRefused,
            message,
            Next::Steady,
        );
    }
    if let Some(reason) = &observation.refused {
        return refused(&before, reason.clone());
    }
    let policy = match &observation.policy {
        Ok(policy) => *policy,
        Err(error) => return refused(&before, format!("Invalid blue/green option {error}")),
    };
    let Some(template) = resource.spec.deployment_spec() else {
        return refused(
            &before,
            "spec.template.spec is missing: there is nothing to deploy".to_owned(),
        );
    };
    let recorded = match before.last_reconciled_spec() {
        Ok(recorded) => recorded,
        Err(error) => {
            return refused(
                &before,
                format!("status.lastReconciledSpec cannot be read: {error}"),
            );
        }
    };
    let mode = resource.spec.transition_mode.unwrap_or_default();
    if let Some(applied) = &recorded
        && applied.transition_mode.unwrap_or_default() != mode
    {
        let message = format!(
            "spec.transitionMode cannot change once deployed (was {}, requested {mode}): the spec is set back \
             to the one applied",
            applied.transition_mode.unwrap_or_default()
        );
        let mut plan = failed(
            &before,
            before.clone(),
            Reason::ValidationError,
            message,
            Next::Steady,
        );
        plan.actions = vec![Action::RevertSpec {
            spec: Box::new(applied.clone()),
        }];
        return plan;
    }
    let advanced = mode == TransitionMode::Advanced;
    if advanced && let Some(reason) = advanced_refusal(template, &policy) {
        return refused(&before, reason);
    }
    let input = Input {
        name: resource.name_any(),
        spec: &resource.spec,
        template,
        recorded,
        before: &before,
        obs: observation,
        policy,
        advanced,
        generation: resource.metadata.generation.unwrap_or_default().to_string(),
    };
    match Stage::of(before.blue_green_state) {
        Stage::Initializing => initializing(&input),
        Stage::Active(colour) => active(&input, colour),
        Stage::Savepointing(colour) => savepointing(&input, colour),
        Stage::TransitioningTo(colour) => transitioning(&input, colour),
    }
}

/// What every stage reads.
struct Input<'a> {
    name: String,
    spec: &'a FlinkBlueGreenDeploymentSpec,
    template: &'a FlinkDeploymentSpec,
    recorded: Option<FlinkBlueGreenDeploymentSpec>,
    before: &'a Status,
    obs: &'a Observation,
    policy: BlueGreenPolicy,
    /// `transitionMode: ADVANCED`: the gates hand over record by record.
    advanced: bool,
    /// The resource's generation: the id of a transition (or first deployment) started now.
    generation: String,
}

impl Input<'_> {
    /// The change since the spec was last applied (none applied yet: all of it).
    fn diff(&self) -> SpecDiff {
        self.recorded
            .as_ref()
            .map_or(SpecDiff::Transition, |recorded| diff(recorded, self.spec))
    }

    fn child_name(&self, colour: Colour) -> String {
        child_name(&self.name, colour)
    }

    fn now(&self) -> i64 {
        self.obs.now_ms
    }

    fn past_abort_deadline(&self) -> bool {
        millis_of(self.before.abort_timestamp.as_deref()).is_some_and(|deadline| self.now() >= deadline)
    }

    fn poll(&self) -> Next {
        Next::Within(self.policy.reschedule_secs())
    }

    /// Records the spec as applied, now (the time is kept when the spec was recorded
    /// already: a transition's savepoint step and its start record the same spec, and the
    /// transition's duration counts from the first).
    fn record(&self, status: &mut Status) {
        let recorded = ReconciledSpec {
            spec: self.spec.clone(),
            resource_metadata: None,
        };
        let encoded = recorded.encode().ok();
        if encoded != status.last_reconciled_spec || status.last_reconciled_timestamp.is_none() {
            status.last_reconciled_timestamp = Some(timestamp(self.now()));
        }
        status.last_reconciled_spec = encoded;
    }

    /// `spec` as the child of `colour` created by `transition` runs it: in ADVANCED mode,
    /// with the keys its gate reads.
    fn child_spec(&self, spec: FlinkDeploymentSpec, colour: Colour, transition: &str) -> FlinkDeploymentSpec {
        let spec = super::ingress::for_child(spec, colour);
        if self.advanced {
            gate::inject(&spec, &self.name, colour, transition)
        } else {
            spec
        }
    }

    /// The transition that created `child` (its injected key), else the current one.
    fn transition_of(&self, child: &Child) -> String {
        gate::transition_of(&child.spec).unwrap_or_else(|| self.generation.clone())
    }

    /// The map the gates read, in ADVANCED mode, for `stage` with `active` (created by
    /// `transition`) and `standby`.
    fn gate_map(&self, transition: &str, stage: GateStage, active: Named, standby: Option<Named>) -> GateMap {
        GateMap {
            transition_id: transition.to_owned(),
            stage,
            active,
            standby,
            deletion_delay_ms: self.policy.deletion_delay_ms,
        }
    }

    /// The write that brings the observed map to `map`, keeping what the gates wrote in this
    /// transition; none when it is there already.
    fn gate_write(&self, map: GateMap) -> Option<Action> {
        self.gate_write_with(map, false)
    }

    /// The write that brings the observed map to `map`, dropping what the gates wrote when
    /// `drop_gate_keys` (an abort); none when it is there already.
    fn gate_write_with(&self, map: GateMap, drop_gate_keys: bool) -> Option<Action> {
        if !self.advanced {
            return None;
        }
        let observed = self.obs.gate.as_ref();
        let before = observed.and_then(|o| o.map.as_ref());
        let gate_keys_left = drop_gate_keys && observed.is_some_and(|o| o.toggle.is_some());
        if before == Some(&map) && !gate_keys_left {
            return None;
        }
        Some(Action::WriteGateMap {
            patch: map.patch(before, drop_gate_keys),
            map,
            resource_version: observed.map(|o| o.resource_version.clone()),
        })
    }

    /// The toggle the standby set in this transition's map, if any.
    fn toggle(&self) -> Option<i64> {
        self.obs.gate.as_ref()?.toggle
    }

    fn arm_abort_deadline(&self, status: &mut Status) {
        status.abort_timestamp = Some(timestamp(self.now() + self.policy.abort_grace_period_ms));
    }
}

// === Stages ===

fn initializing(input: &Input) -> BlueGreenPlan {
    let mut status = input.before.clone();
    status.blue_green_state = Some(Stage::Initializing.state());
    if is_suspended(input.template) {
        status.job_status = Some(job_state(FlinkJobState::Suspended));
        let mut plan = plan(status, Vec::new(), Vec::new(), Next::Steady);
        // A first child that a pass which stopped before its status was written created is
        // suspended with the resource (its state kept for the resume, as an abort keeps it).
        for colour in [Colour::Blue, Colour::Green] {
            let why = "the resource is suspended and no child is active (it was started by a pass that \
                       stopped before its status recorded it)";
            suspend_stray(input, colour, why, &mut plan);
        }
        return plan;
    }
    if input.recorded.is_some() && input.diff() == SpecDiff::Ignore {
        // The first child failed with this very spec: an edit of the spec tries again. A
        // child that a pass which stopped before its status was written created for another
        // spec (edited back since) is suspended meanwhile.
        let mut plan = plan(status, Vec::new(), Vec::new(), Next::Steady);
        let recorded = input.recorded.as_ref().and_then(|r| r.deployment_spec());
        for colour in [Colour::Blue, Colour::Green] {
            // Its template, but for the state it starts from and its desired state.
            let bare = |spec: &FlinkDeploymentSpec| {
                let mut spec = with_initial_savepoint(spec, None);
                if let Some(job) = spec.job.as_mut() {
                    job.state = None;
                }
                spec
            };
            let other_spec = (input.obs.live_child(colour))
                .zip(recorded)
                .is_some_and(|(child, recorded)| bare(&template_of(child, colour)) != bare(recorded));
            if other_spec {
                let why = "no child is active: the first one was aborted with this very spec (this one, \
                           for another, was started by a pass that stopped before its status recorded it)";
                suspend_stray(input, colour, why, &mut plan);
            }
        }
        return plan;
    }
    let kept = match kept_state(input) {
        Ok(kept) => kept,
        Err(message) => {
            return failed(
                input.before,
                status,
                Reason::BlueGreenTransitionWaiting,
                message,
                input.poll(),
            );
        }
    };
    let template = match &kept {
        Some(path) => with_initial_savepoint(input.template, Some(path.clone())),
        None => input.template.clone(),
    };
    let spec = input.child_spec(template, Colour::Blue, &input.generation);
    // A first child that a pass which stopped before its status was written created for
    // another spec, and whose job ran, holds the job's state: deleted, it would take that
    // state with it. It is suspended first, as an abort suspends it, and the next child
    // starts from what it leaves (`kept_state`).
    if let Some(stray) = input.obs.live_child(Colour::Blue)
        && stray.ever_ran()
        && !is_suspended(&stray.spec)
        && stray.spec != spec
    {
        let mut plan = plan(status, Vec::new(), Vec::new(), input.poll());
        let why = "the spec changed before its status recorded it, and the next child starts from the state \
                   its job leaves";
        suspend_stray(input, Colour::Blue, why, &mut plan);
        return plan;
    }
    // In status before the child that held it (a leftover) is deleted.
    status.transition_savepoint_path = kept.clone();
    if let Some(waiting) = clear_leftover(input, &status, Colour::Blue, Some(&spec)) {
        return waiting;
    }
    status.savepoint_trigger_id = None;
    let note = match &kept {
        Some(path) => format!(
            "Deploying the first child {} from {path}: the job's state, kept since the aborted attempt",
            input.child_name(Colour::Blue)
        ),
        None => format!("Deploying the first child {}", input.child_name(Colour::Blue)),
    };
    start(input, status, Colour::Blue, spec, vec![started(note)])
}

/// The state the next child starts from after an abort that left no child running: the
/// kept path (`transitionSavepointPath`), or the newer state that the aborted child recorded
/// when the abort suspended it, if it ran from where the aborted attempt started (the kept
/// path, or the `initialSavepointPath` applied, which a redeploy during the transition sets,
/// or none for a first deployment from nothing). A
/// path the user names in this edit (`initialSavepointPath` changed) wins. `Err`: why the
/// child waits (a suspended child that ran the job is still writing its own state).
fn kept_state(input: &Input) -> Result<Option<String>, String> {
    let kept = input.before.transition_savepoint_path.clone();
    let named = input
        .template
        .job
        .as_ref()
        .and_then(|j| j.initial_savepoint_path.clone())
        .filter(|p| !p.trim().is_empty());
    // With no spec applied yet, a child was created by a pass that stopped before its status
    // was written, from the template.
    let applied = match input.recorded.as_ref() {
        Some(recorded) => recorded
            .deployment_spec()
            .and_then(|s| s.job.as_ref())
            .and_then(|j| j.initial_savepoint_path.clone()),
        None => named.clone(),
    };
    if let Some(named) = named
        && applied.as_deref() != Some(named.as_str())
    {
        return Ok(Some(named));
    }
    // Where the aborted attempt's child started: the kept path, or what the spec applied
    // named (a redeploy during the transition changes it), or, for a first deployment from
    // nothing, nothing.
    let starts = [kept.clone(), applied.clone()];
    let started_there = |from: Option<&str>| {
        (starts.iter()).any(|s| s.as_deref() == from) && (from.is_some() || kept.is_none())
    };
    for colour in [Colour::Blue, Colour::Green] {
        let Some(child) = input.obs.child(colour) else {
            continue;
        };
        let from = child
            .spec
            .job
            .as_ref()
            .and_then(|j| j.initial_savepoint_path.clone());
        // One the abort suspended (not the next child, created by a pass that stopped before
        // its status was written: that one is kept and its start recorded).
        let aborted = is_suspended(&child.spec) || child.deleting;
        if !aborted || !child.ever_ran() || !started_there(from.as_deref()) {
            continue;
        }
        let settled = matches!(
            child.lifecycle,
            Some(ResourceLifecycleState::Suspended | ResourceLifecycleState::Failed)
        );
        if !settled && !child.deleting {
            let child_name = input.child_name(colour);
            return Err(match &from {
                Some(from) => format!(
                    "The next child waits for {child_name} to be suspended: it ran from the job's state {from} and \
                     what it leaves is newer (delete it to start from {from})"
                ),
                None => format!(
                    "The next child waits for {child_name} to be suspended: it ran the job and what it leaves is \
                     the job's state (delete it to start without it)"
                ),
            });
        }
        let own = child
            .job_status
            .as_ref()
            .and_then(|j| j.upgrade_savepoint_path.clone())
            .filter(|p| !p.trim().is_empty());
        if let Some(own) = own {
            return Ok(Some(own));
        }
    }
    Ok(kept)
}

fn active(input: &Input, colour: Colour) -> BlueGreenPlan {
    let mut plan = active_step(input, colour);
    // ADVANCED: outside a transition the map names the active child alone (written again if
    // a crash or an edit left it otherwise).
    if let (Some(child), Some(Stage::Active(now))) = (
        input.obs.live_child(colour),
        plan.status.blue_green_state.map(|s| Stage::of(Some(s))),
    ) && now == colour
    {
        let own = input.transition_of(child);
        let transition = input
            .obs
            .gate
            .as_ref()
            .and_then(|g| g.map.as_ref())
            .map_or_else(|| own.clone(), |m| m.transition_id.clone());
        let active = Named {
            colour,
            transition_id: own,
        };
        let map = input.gate_map(&transition, GateStage::Running, active, None);
        if let Some(write) = input.gate_write(map) {
            plan.actions.insert(0, write);
        }
    }
    if plan.status.blue_green_state == Some(Stage::Active(colour).state()) {
        stop_stray(input, colour, &mut plan);
    }
    plan
}

/// Outside a transition, a child of the other colour that is to run the job (neither
/// suspended nor being deleted) is suspended: the pass that created it for a transition
/// stopped before its status was written, and the next one went back to the active child (a
/// suspension that wins over the hand-over), or an abort did not see it (a cache behind the
/// creation). Left alone, it would run the job beside the active child with nothing to stop
/// it. Suspended, it is kept as an aborted transition's new child is.
fn stop_stray(input: &Input, active: Colour, plan: &mut BlueGreenPlan) {
    let why = format!(
        "it runs the job beside the active child {} outside a transition (its transition was given up \
         before its status recorded it)",
        input.child_name(active)
    );
    suspend_stray(input, active.other(), &why, plan);
}

/// Suspends the child of `colour` if it is to run the job (neither suspended nor being
/// deleted) and `plan` does nothing else to it, with a warning Event saying `why`.
fn suspend_stray(input: &Input, colour: Colour, why: &str, plan: &mut BlueGreenPlan) {
    let Some(stray) = input.obs.live_child(colour) else {
        return;
    };
    let acted = plan.actions.iter().any(|a| match a {
        Action::CreateChild { colour: c, .. }
        | Action::UpdateChild { colour: c, .. }
        | Action::SuspendChild { colour: c }
        | Action::DeleteChild { colour: c } => *c == colour,
        _ => false,
    });
    if is_suspended(&stray.spec) || acted {
        return;
    }
    plan.actions.push(Action::SuspendChild { colour });
    let note = format!("Suspending {}: {why}", input.child_name(colour));
    plan.events.push(EventNote::warning(Reason::Suspended, note));
}

fn active_step(input: &Input, colour: Colour) -> BlueGreenPlan {
    let mut status = input.before.clone();
    status.blue_green_state = Some(Stage::Active(colour).state());
    let Some(active) = input.obs.live_child(colour) else {
        let message = format!("The active child {} is missing", input.child_name(colour));
        return failed(input.before, status, Reason::Missing, message, Next::Steady);
    };
    status.job_status = mirrored(active).or(status.job_status);
    let diff = input.diff();
    match diff {
        SpecDiff::Ignore => {
            // An error stays while the active child does not run the recorded spec (an
            // aborted transition); one about a change that was then reverted goes.
            let recorded = input.recorded.as_ref().and_then(|r| r.deployment_spec());
            if recorded.is_some_and(|recorded| !ends_job(&template_of(active, colour), recorded)) {
                status.error = None;
            }
            plan(status, Vec::new(), Vec::new(), Next::Steady)
        }
        SpecDiff::Suspend | SpecDiff::Resume => update_in_place(input, status, colour, active, diff),
        // The active child's own spec decides: after an aborted transition the recorded spec
        // is not the one it runs, and a change that ends no job of it is made in place.
        SpecDiff::PatchChild | SpecDiff::Transition
            if is_suspended(input.template) || !ends_job(&template_of(active, colour), input.template) =>
        {
            update_in_place(input, status, colour, active, diff)
        }
        SpecDiff::PatchChild | SpecDiff::Transition => start_transition(input, status, colour, active),
        SpecDiff::SavepointRedeploy => {
            let incoming = colour.other();
            let spec = input.child_spec(input.template.clone(), incoming, &input.generation);
            if let Some(waiting) = clear_leftover(input, &status, incoming, Some(&spec)) {
                return waiting;
            }
            status.savepoint_trigger_id = None;
            let note = format!(
                "Transition from {} to {} from initialSavepointPath (savepointRedeployNonce)",
                input.child_name(colour),
                input.child_name(incoming)
            );
            start(input, status, incoming, spec, vec![started(note)])
        }
    }
}

/// The child of `colour` as the template it was made from: without what the operator put in
/// (the gate's keys, the colour of its ingress template).
fn template_of(child: &Child, colour: Colour) -> FlinkDeploymentSpec {
    super::ingress::as_template(gate::strip(&child.spec), colour)
}

fn start_transition(input: &Input, mut status: Status, from: Colour, active: &Child) -> BlueGreenPlan {
    let to = from.other();
    // A stateless job starts empty, as a FlinkDeployment's stateless upgrade does: it needs
    // neither a savepoint nor a checkpoint, nor the old job to be healthy.
    let stateless = upgrade_mode(input.template) == UpgradeMode::Stateless;
    let stateless_spec = stateless.then(|| {
        input.child_spec(
            with_initial_savepoint(input.template, None),
            to,
            &input.generation,
        )
    });
    if let Some(waiting) = clear_leftover(input, &status, to, stateless_spec.as_ref()) {
        return waiting;
    }
    if let Some(spec) = stateless_spec {
        status.savepoint_trigger_id = None;
        let note = format!(
            "Transition from {} to {} without state (upgradeMode stateless)",
            input.child_name(from),
            input.child_name(to)
        );
        return start(input, status, to, spec, vec![started(note)]);
    }
    if !active.is_ready() {
        // Not recorded as applied: the transition starts once the active child can be
        // savepointed, and until then the spec is still a change.
        let message = format!(
            "The transition to {} waits: {} is not running and stable, so no savepoint of it can be taken",
            input.child_name(to),
            input.child_name(from)
        );
        return failed(
            input.before,
            status,
            Reason::BlueGreenTransitionWaiting,
            message,
            input.poll(),
        );
    }
    let name = savepoint_name(&input.name, from, &input.obs.fresh_id);
    status.blue_green_state = Some(Stage::Savepointing(from).state());
    status.savepoint_trigger_id = Some(name.clone());
    status.deployment_ready_timestamp = None;
    status.error = None;
    input.arm_abort_deadline(&mut status);
    input.record(&mut status);
    let note = format!(
        "Transition from {} to {}: taking savepoint {name}",
        input.child_name(from),
        input.child_name(to)
    );
    Plan {
        // The name is in status before the snapshot exists: a crash in between creates the
        // same one again, never a second.
        status_before: Some(status.clone()),
        actions: vec![Action::CreateSavepoint { name, colour: from }],
        status,
        events: vec![started(note)],
        requeue: input.poll(),
    }
}

fn savepointing(input: &Input, from: Colour) -> BlueGreenPlan {
    let to = from.other();
    let mut status = input.before.clone();
    let Some(name) = input.before.savepoint_trigger_id.clone() else {
        return aborted(
            input,
            from,
            None,
            "no transition savepoint is recorded".to_owned(),
        );
    };
    if is_suspended(input.template) {
        // Suspending wins over the hand-over: back to the active child, which is then
        // suspended in place (and a new child a pass that stopped before its status was
        // written created from the savepoint, with it).
        status.blue_green_state = Some(Stage::Active(from).state());
        clear_markers(&mut status);
        let mut plan = plan(status, Vec::new(), Vec::new(), input.poll());
        stop_stray(input, from, &mut plan);
        return plan;
    }
    let savepoint = input.obs.savepoint_named(&name);
    let completed_path = savepoint
        .filter(|s| s.state == SnapshotState::Completed)
        .and_then(|s| s.path.clone())
        .filter(|p| !p.is_empty());
    if let Some(path) = completed_path {
        let spec = input.child_spec(
            with_initial_savepoint(input.template, Some(path.clone())),
            to,
            &input.generation,
        );
        let taken = format!(
            "Transition savepoint {name} of {} completed: {path}",
            input.child_name(from)
        );
        let created = format!("Starting {} from savepoint {path}", input.child_name(to));
        let events = vec![
            EventNote::normal(Reason::SavepointCompleted, taken),
            EventNote::normal(Reason::BlueGreenChildCreated, created),
        ];
        // A new child created from another savepoint is deleted first: a pass that created
        // it stopped before its status was written, and that savepoint's record was deleted
        // since, so that this one was taken again; kept, it would run from the older one.
        if let Some(waiting) = clear_leftover(input, &status, to, Some(&spec)) {
            return waiting;
        }
        // Kept until the new child is stable: an abort that leaves no child running starts
        // the next one from it.
        status.transition_savepoint_path = Some(path);
        return start(input, status, to, spec, events);
    }
    match savepoint {
        Some(s)
            if matches!(
                s.state,
                SnapshotState::Failed | SnapshotState::Abandoned | SnapshotState::Completed
            ) =>
        {
            let why = s.error.as_deref().unwrap_or("no path");
            aborted(input, from, None, format!("savepoint {name} failed: {why}"))
        }
        _ if input.past_abort_deadline() => aborted(
            input,
            from,
            None,
            format!(
                "savepoint {name} did not complete within {}",
                duration_text(input.policy.abort_grace_period_ms)
            ),
        ),
        None => plan(
            status,
            vec![Action::CreateSavepoint { name, colour: from }],
            Vec::new(),
            input.poll(),
        ),
        Some(_) => plan(status, Vec::new(), Vec::new(), input.poll()),
    }
}

fn transitioning(input: &Input, to: Colour) -> BlueGreenPlan {
    let from = to.other();
    let mut status = input.before.clone();
    let old = input.obs.live_child(from);
    let ready_at = millis_of(input.before.deployment_ready_timestamp.as_deref());
    let Some(new) = input.obs.live_child(to) else {
        let why = format!("the new child {} is gone", input.child_name(to));
        return aborted(input, from, None, why);
    };
    if old.is_none() && ready_at.is_some() {
        // The old child was deleted once the new one was ready (a crash, or a failed write,
        // lost the final status): there is nothing to go back to, so the hand-over ends.
        return finished(input, status, to, new, OldChildDeletion::default());
    }
    let diff = input.diff();
    if !matches!(diff, SpecDiff::Ignore | SpecDiff::Suspend) {
        // A change during a transition goes to the incoming child; a suspension waits for
        // the transition to end.
        let spec = input.child_spec(
            updated_spec(input.template, new, diff),
            to,
            &input.transition_of(new),
        );
        input.record(&mut status);
        // A redeploy restarts the incoming child from the path it names: that, not the
        // transition savepoint, is the state an abort that leaves no child running keeps.
        if diff == SpecDiff::SavepointRedeploy
            && status.transition_savepoint_path.is_some()
            && let Some(named) = spec.job.as_ref().and_then(|j| j.initial_savepoint_path.clone())
        {
            status.transition_savepoint_path = Some(named);
        }
        // The changed child gets the whole grace period (a fix of a child that could not
        // start is not aborted for the time its broken spec took).
        input.arm_abort_deadline(&mut status);
        status.deployment_ready_timestamp = None;
        status.job_status = Some(job_state(FlinkJobState::Reconciling));
        let note = format!(
            "Spec change applied to the incoming child {}",
            input.child_name(to)
        );
        return plan(
            status,
            vec![Action::UpdateChild { colour: to, spec }],
            vec![EventNote::normal(Reason::SpecChanged, note)],
            input.poll(),
        );
    }
    if input.advanced {
        return handing_over(input, status, to, (old, new), ready_at);
    }
    if new.is_ready() {
        let ready_at = ready_at.unwrap_or(input.now());
        status.deployment_ready_timestamp = Some(timestamp(ready_at));
        if old.is_none() {
            return finished(input, status, to, new, OldChildDeletion::default());
        }
        let due = ready_at + input.policy.deletion_delay_ms;
        if input.now() < due {
            let wait = Next::Within(whole_secs(due - input.now()));
            return plan(status, Vec::new(), Vec::new(), wait);
        }
        // Readiness is recorded before the deletion, so that a crash after it finishes
        // forward (above) rather than aborting.
        let status_before = (status != *input.before).then(|| status.clone());
        let deletion = OldChildDeletion {
            actions: vec![Action::DeleteChild { colour: from }],
            status_before,
        };
        return finished(input, status, to, new, deletion);
    }
    deploying(input, status, from, new)
}

/// A new child that is not running and stable yet: aborted past the deadline, else awaited.
fn deploying(input: &Input, mut status: Status, from: Colour, new: &Child) -> BlueGreenPlan {
    let to = from.other();
    if input.past_abort_deadline() {
        let why = format!(
            "{} did not become running and stable within {}",
            input.child_name(to),
            duration_text(input.policy.abort_grace_period_ms)
        );
        return aborted(input, from, Some((to, new)), why);
    }
    status.job_status = Some(job_state(FlinkJobState::Reconciling));
    plan(status, Vec::new(), Vec::new(), input.poll())
}

/// Creates the child `colour` with `spec`: the transition (or first deployment) has started,
/// so the spec is recorded as applied now, with the deadline of the new child.
fn start(
    input: &Input,
    mut status: Status,
    colour: Colour,
    spec: FlinkDeploymentSpec,
    events: Vec<EventNote>,
) -> BlueGreenPlan {
    status.blue_green_state = Some(Stage::TransitioningTo(colour).state());
    status.deployment_ready_timestamp = None;
    status.error = None;
    status.job_status = Some(job_state(FlinkJobState::Reconciling));
    input.arm_abort_deadline(&mut status);
    input.record(&mut status);
    // ADVANCED: the map names the new child before it runs, so that its gate knows its part
    // from its first record: alone it writes everything, next to the old child nothing yet.
    let transition = gate::transition_of(&spec).unwrap_or_else(|| input.generation.clone());
    let incoming = Named {
        colour,
        transition_id: transition.clone(),
    };
    let map = match input.obs.live_child(colour.other()) {
        Some(old) => {
            let standby = Named {
                colour: colour.other(),
                transition_id: input.transition_of(old),
            };
            input.gate_map(&transition, GateStage::Initializing, incoming, Some(standby))
        }
        None => input.gate_map(&transition, GateStage::Running, incoming, None),
    };
    let mut actions: Vec<Action> = input.gate_write(map).into_iter().collect();
    actions.push(Action::CreateChild { colour, spec });
    plan(status, actions, events, input.poll())
}

/// Updates the child `colour` in place to the template.
fn update_in_place(
    input: &Input,
    mut status: Status,
    colour: Colour,
    child: &Child,
    diff: SpecDiff,
) -> BlueGreenPlan {
    let spec = input.child_spec(
        updated_spec(input.template, child, diff),
        colour,
        &input.transition_of(child),
    );
    input.record(&mut status);
    status.error = None;
    let (reason, what) = match diff {
        SpecDiff::Suspend => (Reason::Suspended, "Suspending"),
        SpecDiff::Resume => (Reason::Resume, "Resuming"),
        _ => (Reason::SpecChanged, "Updating in place"),
    };
    let note = format!("{what} the active child {}", input.child_name(colour));
    plan(
        status,
        vec![Action::UpdateChild { colour, spec }],
        vec![EventNote::normal(reason, note)],
        input.poll(),
    )
}

/// The deletion of the old child that ends a hand-over.
#[derive(Default)]
struct OldChildDeletion {
    /// Empty when the old child is gone already (or was never there).
    actions: Vec<Action>,
    /// The status to write before deleting, when it changed: readiness recorded first makes
    /// a crash after the deletion finish forward rather than abort.
    status_before: Option<Status>,
}

/// Ends the hand-over to `to`: no marker of it stays.
fn finished(
    input: &Input,
    mut status: Status,
    to: Colour,
    new: &Child,
    deletion: OldChildDeletion,
) -> BlueGreenPlan {
    let OldChildDeletion {
        actions,
        status_before,
    } = deletion;
    status.blue_green_state = Some(Stage::Active(to).state());
    clear_markers(&mut status);
    // The new child is stable: its own status keeps the state it started from.
    status.transition_savepoint_path = None;
    status.error = None;
    status.job_status = mirrored(new).or(Some(job_state(FlinkJobState::Running)));
    let note = format!("{} runs the job", input.child_name(to));
    let why = if input.advanced {
        "its gates handed over and it stopped with a savepoint"
    } else {
        "the new child is stable"
    };
    let mut events = deletion_events(input, &actions, why);
    // ADVANCED: the new child alone, named before the old one is deleted.
    let transition = input.transition_of(new);
    let alone = Named {
        colour: to,
        transition_id: transition.clone(),
    };
    let mut actions = actions;
    if let Some(write) = input.gate_write(input.gate_map(&transition, GateStage::Running, alone, None)) {
        actions.insert(0, write);
    }
    events.push(EventNote::normal(Reason::BlueGreenTransitionCompleted, note));
    Plan {
        status_before,
        actions,
        status,
        events,
        requeue: Next::Steady,
    }
}

/// Gives up the transition away from `from`: the old child is left as it is, the new one
/// (if started) suspended, or deleted when no job of it ever ran, and every marker of the
/// attempt cleared (a stale one would mislead the next attempt). The spec stays recorded, so
/// that the same spec is not tried again in a loop: an edit starts the next attempt.
fn aborted(input: &Input, from: Colour, started: Option<(Colour, &Child)>, why: String) -> BlueGreenPlan {
    // A new child that a pass which stopped before its status was written created (in the
    // savepoint step) is the attempt's too: left alone, it would run beside the old child.
    let to = from.other();
    let started = started.or_else(|| {
        (input.obs.live_child(to))
            .filter(|c| !is_suspended(&c.spec))
            .map(|c| (to, c))
    });
    let mut status = input.before.clone();
    let survivor = input.obs.live_child(from).is_some();
    let stage = if survivor {
        Stage::Active(from)
    } else {
        Stage::Initializing
    };
    status.blue_green_state = Some(stage.state());
    clear_markers(&mut status);
    status.job_status = Some(job_state(FlinkJobState::Failing));
    let mut outcome = if survivor {
        // The old child's job runs on: its state is newer than the transition savepoint.
        status.transition_savepoint_path = None;
        format!("{} keeps running", input.child_name(from))
    } else if let Some(path) = &status.transition_savepoint_path {
        // Nothing else points at the job's state any more: it is kept for the next child.
        format!("no child runs the job; its state, {path}, is kept and the next child starts from it")
    } else {
        "no child runs the job".to_owned()
    };
    let mut actions = match started {
        Some((colour, child)) if child.ever_ran() => vec![Action::SuspendChild { colour }],
        Some((colour, _)) => vec![Action::DeleteChild { colour }],
        None => Vec::new(),
    };
    let mut events = deletion_events(input, &actions, "it never ran a job");
    if let (true, Some(old)) = (input.advanced, input.obs.live_child(from)) {
        let (writes, redeploy) = abort_hand_over(input, from, old, started.map(|(_, c)| c));
        if let Some(note) = redeploy {
            outcome = note;
        }
        for (i, write) in writes.into_iter().enumerate() {
            // The map first: the aborted job's gate stops writing at once.
            if matches!(write, Action::WriteGateMap { .. }) {
                actions.insert(i, write);
            } else {
                actions.push(write);
            }
        }
    }
    let message = format!("Transition aborted: {why}; {outcome}. Edit the spec to try again.");
    status.error = Some(message.clone());
    events.insert(0, EventNote::warning(Reason::BlueGreenTransitionAborted, message));
    plan(status, actions, events, Next::Steady)
}

/// A leftover child of `colour` (suspended by an earlier abort, say) is deleted before a
/// new one of that colour is created: a suspended FlinkDeployment resumes from its own
/// state, not from the one it is given. One that already has `intended` was created by this
/// very step before a crash and is kept. `None` when there is nothing to wait for.
fn clear_leftover(
    input: &Input,
    status: &Status,
    colour: Colour,
    intended: Option<&FlinkDeploymentSpec>,
) -> Option<BlueGreenPlan> {
    let leftover = input.obs.child(colour)?;
    if leftover.deleting {
        return Some(plan(status.clone(), Vec::new(), Vec::new(), input.poll()));
    }
    (intended != Some(&leftover.spec)).then(|| {
        let actions = vec![Action::DeleteChild { colour }];
        let events = deletion_events(input, &actions, "a new one of its colour is started");
        Plan {
            // What the status takes from the leftover (the state it recorded) is written
            // before it goes: a crash in between would leave that state named nowhere.
            status_before: (status != input.before).then(|| status.clone()),
            ..plan(status.clone(), actions, events, input.poll())
        }
    })
}
