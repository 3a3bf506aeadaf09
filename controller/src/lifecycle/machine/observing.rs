//! What the machine writes into the status being built before the steps after the start
//! can be known (the step table's second phase, see [`crate::lifecycle::step`]): a spec whose
//! changes end no job is recorded, the job is observed, the pending snapshots are settled.
//! Deriving the step reads what these wrote; it writes nothing itself.

use crate::lifecycle::{
    kind::{LifecycleHooks, Observed, Step},
    snapshots, spec,
    step::{self, Before},
};
use flink_operator_api::FlinkSpec;
use flink_operator_api::LifecycleStatus;

/// The step the job is at: the one the stored status says before observing, or, once the
/// job is observed into the status being built, the one after. The kind's admission is
/// written for every step but `Deleting`.
pub fn step_of<'a, K: LifecycleHooks<'a>>(k: &mut K) -> Step<K::Spec> {
    let read = k.recorded();
    let before = step::before_observing(k, read);
    if !matches!(before, Before::Step(Step::Deleting(_))) {
        k.admit();
    }
    match before {
        Before::Step(step) => step,
        Before::Observe(recorded) => {
            let observed = observe_job(k, recorded);
            step::after_observing(k, observed)
        }
    }
}

/// Records a spec whose changes end no job, observes the job, settles pending snapshots.
fn observe_job<'a, K: LifecycleHooks<'a>>(k: &mut K, recorded: K::Spec) -> Observed<K::Spec> {
    let changed = spec::changed(&recorded, k.spec);
    let as_recorded = if !changed && &recorded != k.spec {
        record_ignored_changes(k, &recorded)
    } else {
        recorded.clone()
    };
    let running = k.observe(&recorded, false);
    let recorded = as_recorded;
    let suspended = spec::is_suspended(&recorded);
    // A suspended job has nothing to poll: a trigger left from before is not waited for.
    let pending = !suspended && settle(k, &recorded);
    Observed {
        recorded,
        running,
        changed,
        suspended,
        pending,
    }
}

/// Records a spec whose changes end no job, and returns it as the recorded one; the
/// recorded snapshot nonces stay until their snapshots are triggered.
fn record_ignored_changes<'a, K: LifecycleHooks<'a>>(k: &mut K, recorded: &K::Spec) -> K::Spec {
    let mut spec = spec::with_recorded_nonces(k.spec, recorded);
    // The recorded upgrade mode also says how a suspension left the job's state and how a
    // start that has not run yet restores it (a last-state one: from the HA metadata). A
    // change of the mode alone is recorded once the job runs again, not before: it would
    // lose that.
    if (spec::is_suspended(recorded) || k.standing().never_ran.is_some())
        && let (Some(job), Some(old)) = (spec.job_mut(), recorded.job())
    {
        job.upgrade_mode = old.upgrade_mode;
    }
    let generation = k.facts.generation;
    let (status, _) = k.parts();
    if let Some(rs) = status.reconciliation_mut().as_mut() {
        spec::record(rs, spec.clone());
    }
    *status.observed_generation_mut() = generation;
    spec
}

/// Follows the pending manual or periodic snapshots into status; whether one is pending.
fn settle<'a, K: LifecycleHooks<'a>>(k: &mut K, recorded: &K::Spec) -> bool {
    let facts = k.facts;
    let (status, mut out) = k.parts();
    snapshots::settle(status, &facts, recorded.job(), &mut out)
}
