//! Changes of parallelism alone, applied to the running job in place (the SCALE class of
//! spec change), for every kind.
//!
//! A spec that differs from the recorded one only in `job.parallelism`,
//! `pipeline.jobvertex-parallelism-overrides` or an application cluster's
//! `taskManager.replicas` (the scale subresource's field) is a [`Rescale`]. Where the
//! cluster's scheduler can take it (see [`crate::policy::Rescaler`]) and
//! `kubernetes.operator.job.upgrade.inplace-scaling.enabled` holds, the job is not ended: the
//! adaptive scheduler is given new resource requirements ([`requirements`]), or a reactive
//! cluster's TaskManagers are scaled. Its job id stays, no savepoint is taken, and it restarts
//! from its latest checkpoint by itself. Otherwise, and when Flink refuses the new
//! requirements ([`in_place_failed`]), the change is an upgrade like any other.
//!
//! The requirements follow what an upgrade would start: a vertex named in the overrides takes
//! that parallelism; one that ran at the job's default parallelism takes the new default; any
//! other (its parallelism set in the job's code) keeps its own. A vertex whose override is
//! removed cannot be told apart from one set in code, so that change is an upgrade, as in the
//! Apache operator.

use flink_operator_api::LifecycleStatus;
use flink_operator_api::keys::{flink, operator};

use super::spec;
use crate::{
    conditions::{Phase, condition_type},
    events::{EventNote, Reason},
    flink::{ParallelismBounds, ResourceRequirements, VertexRequirements},
    plan::{Plan, Recovery},
    resources::parallelism::Parallelism,
};
use flink_operator_api::FlinkSpec;

/// The spec without what a rescale changes (and without what changes no job).
fn without_parallelism<S: FlinkSpec>(spec: &S) -> S {
    let mut spec = spec::upgrade_relevant(spec);
    if let Some(job) = spec.job_mut() {
        job.parallelism = None;
    }
    spec.clear_task_manager_replicas();
    let config = spec.flink_configuration_mut();
    if let Some(c) = config.as_mut() {
        c.0.remove(flink::PIPELINE_JOBVERTEX_PARALLELISM_OVERRIDES);
        c.0.remove(operator::AUTOSCALER_PARALLELISM_OVERRIDES);
        if c.is_empty() {
            *config = None;
        }
    }
    spec
}

/// A change of parallelism alone, of the running job `job_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rescale {
    pub job_id: String,
    pub from: Parallelism,
    pub to: Parallelism,
}

impl Rescale {
    /// The change from `recorded` to `spec` if it is one of parallelism alone that can be
    /// applied in place: no override is removed, and the default parallelism is known on
    /// both sides when it changes.
    pub fn between<S: FlinkSpec>(recorded: &S, spec: &S, job_id: Option<&str>, slots: i64) -> Option<Self> {
        let job_id = job_id.filter(|id| !id.is_empty())?;
        if !spec::changed(recorded, spec) || without_parallelism(recorded) != without_parallelism(spec) {
            return None;
        }
        let from = Parallelism::of(recorded, slots)?;
        let to = Parallelism::of(spec, slots)?;
        let override_removed = from.overrides.keys().any(|v| !to.overrides.contains_key(v));
        let default_unknown = from.default != to.default && (from.default.is_none() || to.default.is_none());
        (!override_removed && !default_unknown).then(|| Rescale {
            job_id: job_id.to_owned(),
            from,
            to,
        })
    }
}

/// The resource requirements that apply `change` to the job's `current` ones (see the
/// module's documentation). A lower bound above the new upper one comes down to it; one
/// below is kept, as new slots may not be had at once.
pub fn requirements(current: &ResourceRequirements, change: &Rescale) -> ResourceRequirements {
    current
        .iter()
        .map(|(vertex, now)| {
            let bounds = now.parallelism;
            let upper = match change.to.overrides.get(vertex) {
                Some(wanted) => *wanted,
                None => match (change.from.default, change.to.default) {
                    (Some(from), Some(to)) if bounds.upper_bound == from => to,
                    _ => bounds.upper_bound,
                },
            };
            let parallelism = ParallelismBounds {
                lower_bound: bounds.lower_bound.min(upper),
                upper_bound: upper,
            };
            (vertex.clone(), VertexRequirements { parallelism })
        })
        .collect()
}

/// Whether an in-place rescale of this generation's change failed (the stored Progressing
/// condition says ScalingFailed for it): the change is then applied by an upgrade.
pub fn in_place_failed<S: LifecycleStatus>(stored: Option<&S>, generation: Option<i64>) -> bool {
    stored.is_some_and(|s| {
        super::terms::said_for(s, condition_type::PROGRESSING, Phase::ScalingFailed, generation).is_some()
    })
}

/// What a kind's recovery writes after its in-place rescale failed: the status as it was
/// written before the attempt, saying why, for the next look to apply the change by an
/// upgrade, with a warning; looked at again at once.
pub fn recovery<S: LifecycleStatus + Clone, A>(
    plan: &Plan<S, A>,
    generation: Option<i64>,
    now_ms: i64,
    why: &str,
) -> Recovery<S> {
    let mut status = plan.status_before.clone().unwrap_or_else(|| plan.status.clone());
    let message = format!("In-place scaling failed ({why}); the change is applied by an upgrade");
    crate::conditions::set_conditions(
        status.conditions_mut(),
        generation,
        Phase::ScalingFailed,
        &message,
        now_ms,
    );
    *status.error_mut() = Some(message.clone());
    Recovery {
        status,
        events: vec![EventNote::warning(Reason::ScalingFailed, message)],
        requeue: std::time::Duration::from_secs(1),
    }
}

#[cfg(test)]
mod tests;
