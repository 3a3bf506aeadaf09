//! The decision about one job resource under construction, the same for every kind: what
//! it decides from (the resource's metadata, spec and stored status, the facts observed,
//! the spec's violations) and what it accumulates (the status being built, the actions,
//! the Events). Each kind's decision embeds one and adds its own observation; the lifecycle
//! machine reads and writes the job through it, so that the order in which status and
//! actions are written, the conditions, refusals and the rule for a generation already
//! refused exist once.

use flink_operator_api::LifecycleStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{
    facts::{Facts, JobAction, Out},
    terms::{SLOW, said_for},
};
use crate::{
    conditions::{Phase, condition_type, set_conditions},
    events::{EventNote, Reason},
    plan::{Next, Plan},
};

/// What one decision reads and accumulates (see the module doc).
pub struct Ledger<'a, Spec, Status, Action> {
    pub meta: &'a ObjectMeta,
    pub spec: &'a Spec,
    /// The status as stored (observing rewrites the one being built).
    pub stored: Option<&'a Status>,
    pub facts: Facts<'a>,
    /// Validation problems of the spec (the webhook may have been bypassed).
    pub violations: &'a [String],
    /// The status being built.
    pub status: Status,
    pub actions: Vec<Action>,
    pub events: Vec<EventNote>,
}

impl<'a, Spec, Status: LifecycleStatus, Action> Ledger<'a, Spec, Status, Action> {
    /// A decision about a resource before anything is decided: the status being built starts
    /// as the stored one, so that conditions keep their transition times.
    pub fn new(
        meta: &'a ObjectMeta,
        spec: &'a Spec,
        stored: Option<&'a Status>,
        facts: Facts<'a>,
        violations: &'a [String],
    ) -> Self {
        Ledger {
            meta,
            spec,
            stored,
            facts,
            violations,
            status: stored.cloned().unwrap_or_default(),
            actions: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Moves what was accumulated into a ledger of its own (the status as it is now), to
    /// finish it into a plan where the decision is only borrowed.
    pub fn take(&mut self) -> Self {
        Ledger {
            meta: self.meta,
            spec: self.spec,
            stored: self.stored,
            facts: self.facts,
            violations: self.violations,
            status: self.status.clone(),
            actions: std::mem::take(&mut self.actions),
            events: std::mem::take(&mut self.events),
        }
    }

    pub fn generation(&self) -> Option<i64> {
        self.meta.generation
    }

    pub fn deleting(&self) -> bool {
        self.meta.deletion_timestamp.is_some()
    }

    /// Whether the resource holds `finalizer`.
    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.meta.finalizers.iter().flatten().any(|f| f == finalizer)
    }

    /// The conditions for `phase` with `message`, at this generation.
    pub fn conditions(&mut self, phase: Phase, message: &str) {
        set_conditions(
            self.status.conditions_mut(),
            self.meta.generation,
            phase,
            message,
            self.facts.now_ms,
        );
    }

    pub fn event(&mut self, event: EventNote) {
        self.events.push(event);
    }

    /// The status and where the shared steps put their actions and Events.
    pub fn parts(&mut self) -> (&mut Status, Out<'_, Action>) {
        (
            &mut self.status,
            Out {
                actions: &mut self.actions,
                events: &mut self.events,
            },
        )
    }

    /// A plan that writes the status after its actions; what was accumulated goes with it.
    pub fn done(&mut self, requeue: Next) -> Plan<Status, Action> {
        Plan {
            status_before: None,
            actions: std::mem::take(&mut self.actions),
            status: std::mem::take(&mut self.status),
            events: std::mem::take(&mut self.events),
            requeue,
        }
    }

    /// A plan that writes the status before its actions (and keeps it).
    pub fn record_then(&mut self, requeue: Next) -> Plan<Status, Action> {
        let mut plan = self.done(requeue);
        plan.status_before = Some(plan.status.clone());
        plan
    }

    /// A plan that writes the status as it is first, runs its actions, then writes `after`.
    pub fn stepped(&mut self, after: Status, requeue: Next) -> Plan<Status, Action> {
        let mut plan = self.done(requeue);
        plan.status_before = Some(std::mem::replace(&mut plan.status, after));
        plan
    }

    /// Refuses a change (`Phase::UpdateFailed`) or a restore of a failed job
    /// (`Phase::Failed`) with `note`: what runs stays as it is until the spec changes. One
    /// Event per new reason, compared with the stored error (observing the job rewrites the
    /// one being built, and comparing with that would say it again at every look).
    pub fn refuse(&mut self, phase: Phase, note: String) -> Plan<Status, Action> {
        let said = self.stored.and_then(LifecycleStatus::error);
        if said != Some(note.as_str()) {
            let reason = if phase == Phase::Failed {
                Reason::RestoreRefused
            } else {
                Reason::UpdateFailed
            };
            self.events.push(EventNote::warning(reason, note.clone()));
        }
        *self.status.error_mut() = Some(note.clone());
        *self.status.observed_generation_mut() = self.meta.generation;
        self.conditions(phase, &note);
        self.done(SLOW)
    }

    /// The note of this generation's change if it was already refused (see
    /// [`already_refused`]).
    pub fn already_refused(&self) -> Option<String> {
        already_refused(self.stored, self.meta.generation)
    }
}

impl<Spec, Status, Action: From<JobAction>> Ledger<'_, Spec, Status, Action> {
    pub fn act(&mut self, action: JobAction) {
        self.actions.push(action.into());
    }
}

/// The note of this generation's change if it was already refused (the stored Degraded
/// condition says UpdateFailed for this generation; one rule for every kind): it stays
/// refused, as it was said, until the spec changes. Read from the stored status, as observing
/// the running job has cleared the error from the one being built.
pub fn already_refused<S: LifecycleStatus>(stored: Option<&S>, generation: Option<i64>) -> Option<String> {
    let stored = stored?;
    let refused = said_for(stored, condition_type::DEGRADED, Phase::UpdateFailed, generation)?;
    Some(
        stored
            .error()
            .map(str::to_owned)
            .or_else(|| refused.message.clone().filter(|m| !m.is_empty()))
            .unwrap_or_else(|| "the update failed; change the spec to try again".to_owned()),
    )
}
