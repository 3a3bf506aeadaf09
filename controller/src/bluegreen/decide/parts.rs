//! The pieces every stage's plan is made of: its Events, the plan itself, the child specs
//! derived from the template, the job status mirrored from the active child, and instants.

use super::*;

pub(super) fn started(note: String) -> EventNote {
    EventNote::normal(Reason::BlueGreenTransitionStarted, note)
}

/// An Event for each child that `actions` delete, saying `why`.
pub(super) fn deletion_events(input: &Input, actions: &[Action], why: &str) -> Vec<EventNote> {
    actions
        .iter()
        .filter_map(|action| match action {
            Action::DeleteChild { colour } => Some(EventNote::normal(
                Reason::BlueGreenChildDeleted,
                format!("Deleting {}: {why}", input.child_name(*colour)),
            )),
            _ => None,
        })
        .collect()
}

/// A status with `message` as its error, and an Event when the error is new.
pub(super) fn failed(
    before: &Status,
    mut status: Status,
    reason: Reason,
    message: String,
    requeue: Next,
) -> BlueGreenPlan {
    let events = if before.error.as_deref() == Some(message.as_str()) {
        Vec::new()
    } else {
        vec![EventNote::warning(reason, message.clone())]
    };
    status.error = Some(message);
    plan(status, Vec::new(), events, requeue)
}

/// Nothing can be decided: the reason is reported and nothing else changes.
pub(super) fn refused(before: &Status, message: String) -> BlueGreenPlan {
    failed(
        before,
        before.clone(),
        Reason::ValidationError,
        message,
        Next::Steady,
    )
}

pub(super) fn plan(
    status: Status,
    actions: Vec<Action>,
    events: Vec<EventNote>,
    requeue: Next,
) -> BlueGreenPlan {
    Plan::without_before(actions, status, events, requeue)
}

// === Specs and status fields ===

/// The template for a child that already runs: it keeps the state it was started from
/// (changing that would be a change of its own), except on a savepoint redeploy.
pub(super) fn updated_spec(
    template: &FlinkDeploymentSpec,
    child: &Child,
    diff: SpecDiff,
) -> FlinkDeploymentSpec {
    if diff == SpecDiff::SavepointRedeploy {
        return template.clone();
    }
    let job = child.spec.job.as_ref();
    let started_from = job.and_then(|j| j.initial_savepoint_path.clone());
    let mut spec = with_initial_savepoint(template, started_from);
    // The child's redeploy nonce stays its own (one an abort's redeploy of the survivor gave
    // it, or none): the template's, from a redeploy that went to another child, would be new
    // to it, and it would take it for a redeploy of its own, restarting from the
    // initialSavepointPath it was started from (or refusing the change when it has none).
    if let Some(updated) = spec.job.as_mut() {
        updated.savepoint_redeploy_nonce = job.and_then(|j| j.savepoint_redeploy_nonce);
    }
    spec
}

pub(super) fn with_initial_savepoint(
    template: &FlinkDeploymentSpec,
    path: Option<String>,
) -> FlinkDeploymentSpec {
    let mut spec = template.clone();
    if let Some(job) = spec.job.as_mut() {
        job.initial_savepoint_path = path;
    }
    spec
}

pub(super) fn clear_markers(status: &mut Status) {
    status.savepoint_trigger_id = None;
    status.deployment_ready_timestamp = None;
    status.abort_timestamp = None;
}

pub(super) fn job_state(state: FlinkJobState) -> JobStatus {
    JobStatus {
        state: Some(state),
        ..Default::default()
    }
}

/// The active child's job, as the blue/green status shows it (without its snapshots).
pub(super) fn mirrored(child: &Child) -> Option<JobStatus> {
    child.job_status.as_ref().map(|job| JobStatus {
        job_name: job.job_name.clone(),
        job_id: job.job_id.clone(),
        state: job.state.clone(),
        start_time: job.start_time.clone(),
        update_time: job.update_time.clone(),
        ..Default::default()
    })
}

/// The epoch milliseconds of an instant; `None` when unset, unreadable or the epoch (which
/// the Apache operator writes for "unset").
pub fn millis_of(instant: Option<&str>) -> Option<i64> {
    crate::timestamps::millis(instant?).filter(|ms| *ms > 0)
}
