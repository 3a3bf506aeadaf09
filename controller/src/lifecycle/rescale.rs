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

use std::collections::BTreeMap;

use flink_operator_api::keys::{flink, operator};

use super::{LifecycleStatus, spec};
use crate::{
    conditions::{condition_type, phase},
    events::{EventNote, Reason},
    flink::{ParallelismBounds, ResourceRequirements, VertexRequirements},
    plan::{Plan, Recovery},
    resources::parallelism_overrides::{format_overrides, parse_overrides},
};
use flink_operator_api::FlinkSpec;

/// The parallelism a spec asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parallelism {
    /// The job's default parallelism: an application cluster's `taskManager.replicas` times
    /// its slots when set, else `job.parallelism`.
    pub default: Option<i64>,
    /// `pipeline.jobvertex-parallelism-overrides`, by vertex id.
    pub overrides: BTreeMap<String, i64>,
}

impl Parallelism {
    /// What `spec` asks for, with `slots` per TaskManager; `None` when its overrides do not
    /// read as `<vertex id>:<parallelism>,...` (admission lets Flink judge them).
    pub fn of<S: FlinkSpec>(spec: &S, slots: i64) -> Option<Self> {
        let default = match spec.task_manager_replicas().filter(|r| *r > 0) {
            Some(replicas) => Some(i64::from(replicas) * slots.max(1)),
            None => spec
                .job()
                .and_then(|j| j.parallelism)
                .filter(|p| *p > 0)
                .map(i64::from),
        };
        let mut overrides = match overrides_of(spec) {
            None => BTreeMap::new(),
            Some(text) => parse_overrides(&text)?,
        };
        overrides.extend(autoscaled(spec));
        Some(Parallelism { default, overrides })
    }

    /// What `spec` asks for without the autoscaler's overrides: the user's own.
    pub fn of_user<S: FlinkSpec>(spec: &S, slots: i64) -> Option<Self> {
        Self::of(&with_autoscaled(spec, &BTreeMap::new()), slots)
    }

    /// What changed from `from`, as an Event says it: `parallelism 2 to 3`, `vertex 0a… to 4`.
    pub fn describe_from(&self, from: &Parallelism) -> String {
        let show = |p: Option<i64>| p.map_or_else(|| "the cluster's default".to_owned(), |p| p.to_string());
        let mut parts = Vec::new();
        if self.default != from.default {
            parts.push(format!(
                "parallelism {} to {}",
                show(from.default),
                show(self.default)
            ));
        }
        for (vertex, to) in &self.overrides {
            match from.overrides.get(vertex) {
                Some(was) if was == to => {}
                Some(was) => parts.push(format!("vertex {vertex} from {was} to {to}")),
                None => parts.push(format!("vertex {vertex} to {to}")),
            }
        }
        if parts.is_empty() {
            self.describe()
        } else {
            parts.join(", ")
        }
    }

    /// As an Event says it: `parallelism 2`, `vertex 0a…: 3`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(default) = self.default {
            parts.push(format!("parallelism {default}"));
        }
        parts.extend(self.overrides.iter().map(|(v, p)| format!("vertex {v}: {p}")));
        if parts.is_empty() {
            "the cluster's default parallelism".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

fn overrides_of<S: FlinkSpec>(spec: &S) -> Option<String> {
    spec.flink_configuration()?
        .get(flink::PIPELINE_JOBVERTEX_PARALLELISM_OVERRIDES)
}

/// The job autoscaler's overrides the spec holds (as the operator records them; see
/// [`operator::AUTOSCALER_PARALLELISM_OVERRIDES`]), by vertex id.
pub fn autoscaled<S: FlinkSpec>(spec: &S) -> BTreeMap<String, i64> {
    spec.flink_configuration()
        .and_then(|c| c.get(operator::AUTOSCALER_PARALLELISM_OVERRIDES))
        .and_then(|text| parse_overrides(&text))
        .unwrap_or_default()
}

/// `spec` holding the autoscaler's `overrides` (none: without them).
pub fn with_autoscaled<S: FlinkSpec>(spec: &S, overrides: &BTreeMap<String, i64>) -> S {
    let mut spec = spec.clone();
    let config = spec.flink_configuration_mut();
    if overrides.is_empty() {
        if let Some(c) = config.as_mut() {
            c.0.remove(operator::AUTOSCALER_PARALLELISM_OVERRIDES);
            if c.is_empty() {
                *config = None;
            }
        }
    } else {
        config.get_or_insert_with(Default::default).insert(
            operator::AUTOSCALER_PARALLELISM_OVERRIDES,
            format_overrides(overrides),
        );
    }
    spec
}

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
        super::ledger::said_for(s, condition_type::PROGRESSING, phase::SCALING_FAILED, generation).is_some()
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
        phase::SCALING_FAILED,
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
