//! The decision about one FlinkDeployment under construction, and its part in the shared
//! lifecycle ([`crate::lifecycle::machine`]): its job ends with its cluster (the
//! high-availability metadata keeps the last state of a last-state change), it is started
//! by deploying a cluster with it, "ready" is a JobManager whose REST API answers, and its
//! own steps are the session cluster without a job, rollback and JobManager recovery.

use flink_operator_api::{
    FlinkDeployment, FlinkDeploymentSpec, FlinkDeploymentStatus, JobManagerDeploymentStatus, ReconciledSpec,
    common::{JobStatus, ReconciliationState, ResourceLifecycleState, flink_job_state},
    keys,
};

use super::{
    Action, EventNote, FAST, Next, Observation, Plan, SLOW, WAIT, deletion, health, is_suspended, phase,
    recovery, rollback, set_conditions, start,
    state::{self, Kind, RestorableState},
    status, upgrade_relevant,
};
use crate::{
    events::Reason,
    lifecycle::{
        Facts, Out,
        machine::{Cause, Checkpoint, JobKind, Refusal, Restore, Wait},
        spec,
        step::Step,
    },
};

impl Plan {
    /// A plan whose status is written before its actions (and stays as written).
    pub(super) fn recorded_first(
        actions: Vec<Action>,
        status: FlinkDeploymentStatus,
        events: Vec<EventNote>,
    ) -> Self {
        Plan {
            status_before: Some(status.clone()),
            actions,
            status,
            events,
            requeue: FAST,
        }
    }
}

/// Everything the steps share while deciding about one resource.
pub(super) struct Decision<'a> {
    pub(super) fd: &'a FlinkDeployment,
    pub(super) obs: &'a Observation,
    pub(super) status: FlinkDeploymentStatus,
    pub(super) actions: Vec<Action>,
    pub(super) events: Vec<EventNote>,
    /// The last stable spec a rollback deploys or deployed (see [`rollback::deployed_spec`]).
    rolled_back: Option<FlinkDeploymentSpec>,
}

impl<'a> Decision<'a> {
    pub(super) fn new(fd: &'a FlinkDeployment, obs: &'a Observation) -> Self {
        let status = fd.status.clone().unwrap_or_default();
        Decision {
            fd,
            obs,
            rolled_back: rollback::deployed_spec(&status),
            status,
            actions: Vec::new(),
            events: Vec::new(),
        }
    }

    pub(super) fn generation(&self) -> Option<i64> {
        self.fd.metadata.generation
    }

    pub(super) fn conditions(&mut self, reason: &str, message: &str) {
        set_conditions(
            &mut self.status,
            self.fd.metadata.generation,
            reason,
            message,
            self.obs.now_ms,
        );
    }

    /// What the shared lifecycle steps decide from.
    pub(super) fn facts(&self) -> Facts<'a> {
        self.obs.facts(self.fd.metadata.generation)
    }

    /// The status and where the shared lifecycle steps put their actions and Events.
    pub(super) fn parts(&mut self) -> (&mut FlinkDeploymentStatus, Out<'_, Action>) {
        (
            &mut self.status,
            Out {
                actions: &mut self.actions,
                events: &mut self.events,
            },
        )
    }

    pub(super) fn job_status(&self) -> JobStatus {
        self.status.job_status.clone().unwrap_or_default()
    }

    pub(super) fn job_status_mut(&mut self) -> &mut JobStatus {
        self.status.job_status.get_or_insert_with(Default::default)
    }

    /// Moves the decision out of a `&mut` borrow, to finish it into a plan.
    pub(super) fn take(&mut self) -> Decision<'a> {
        Decision {
            fd: self.fd,
            obs: self.obs,
            status: self.status.clone(),
            actions: std::mem::take(&mut self.actions),
            events: std::mem::take(&mut self.events),
            rolled_back: self.rolled_back.clone(),
        }
    }

    /// Conditions for the phase the observed status shows.
    pub(super) fn observed_phase(&mut self) {
        let (reason, message) = status::current_phase(self);
        self.conditions(reason, &message);
    }

    pub(super) fn done(self, requeue: Next) -> Plan {
        Plan::without_before(self.actions, self.status, self.events, requeue)
    }

    /// The status as it is now is written before `actions` run.
    pub(super) fn record_then(mut self, actions: Vec<Action>) -> Plan {
        self.actions.extend(actions);
        Plan::recorded_first(self.actions, self.status, self.events)
    }

    /// Refuses a change (or a restore) with `note`, keeping what runs; one Event per new
    /// reason. The stored error is what was said: observing the job has rewritten the one
    /// being built, and comparing with that would say it again at every look.
    pub(super) fn refuse(mut self, reason: &'static str, note: String) -> Plan {
        let said = self.fd.status.as_ref().and_then(|s| s.error.as_deref());
        if said != Some(note.as_str()) {
            self.events.push(EventNote::warning(
                if reason == phase::FAILED {
                    Reason::RestoreRefused
                } else {
                    Reason::UpdateFailed
                },
                note.clone(),
            ));
        }
        self.status.error = Some(note.clone());
        self.conditions(reason, &note);
        self.done(SLOW)
    }
}

impl Decision<'_> {
    fn has_finalizer(&self) -> bool {
        self.fd
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == keys::finalizers::FLINK_DEPLOYMENT)
    }

    /// After a rollback, the recorded spec is the one that failed: a failed job of the
    /// stable spec is not restarted with it, and nothing rolls back twice.
    fn rolled_back(&self) -> bool {
        self.rolled_back.is_some()
    }

    fn suspending(&self) -> bool {
        is_suspended(&self.fd.spec)
    }

    fn age_note(&self, state: &RestorableState) -> String {
        state::age_note(state, self.obs.now_ms)
    }

    /// The job's state for messages.
    fn state_note(&self) -> String {
        self.job_status().state().unwrap_or("unknown").to_owned()
    }

    /// The spec a restart runs again: the recorded one.
    fn recorded_spec(&self) -> FlinkDeploymentSpec {
        self.status
            .reconciliation_status
            .as_ref()
            .and_then(|rs| rs.last_reconciled_spec::<FlinkDeploymentSpec>().ok().flatten())
            .unwrap_or_else(|| self.fd.spec.clone())
    }
}

impl<'a> JobKind<'a> for Decision<'a> {
    type Spec = FlinkDeploymentSpec;
    type Status = FlinkDeploymentStatus;
    type Action = Action;

    // Deleting an application cluster ends its job, and its high-availability metadata can
    // keep the latest checkpoint for the next cluster.
    const ENDS_WITH_ITS_CLUSTER: bool = true;
    const ROLLS_BACK: bool = true;

    fn metadata(&self) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &self.fd.metadata
    }

    fn spec(&self) -> &'a FlinkDeploymentSpec {
        &self.fd.spec
    }

    fn facts(&self) -> Facts<'a> {
        Decision::facts(self)
    }

    fn status(&self) -> &FlinkDeploymentStatus {
        &self.status
    }

    fn ledger(&mut self) -> (&mut FlinkDeploymentStatus, &mut Vec<Action>, &mut Vec<EventNote>) {
        (&mut self.status, &mut self.actions, &mut self.events)
    }

    fn conditions(&mut self, phase: &str, message: &str) {
        Decision::conditions(self, phase, message);
    }

    fn deleting(&self) -> bool {
        self.fd.metadata.deletion_timestamp.is_some()
    }

    fn can_stop_for_deletion(&self) -> bool {
        self.obs.cluster_exists
    }

    fn deletion_savepoint_recorded(&mut self, path: &str) -> Plan {
        deletion::savepoint_recorded(self.take(), path)
    }

    fn tear_down(&mut self) -> Plan {
        let has_finalizer = self.has_finalizer();
        deletion::tear_down(self.take(), has_finalizer)
    }

    fn admit(&mut self) {
        if !self.has_finalizer() {
            self.actions.push(Action::AddFinalizer);
        }
        self.status.observed_generation = self.fd.metadata.generation;
    }

    fn recorded(&self) -> Result<Option<FlinkDeploymentSpec>, String> {
        // Unreadable is taken as not recorded: the cluster is deployed from the spec.
        Ok(self
            .status
            .reconciliation_status
            .as_ref()
            .and_then(|rs| rs.last_reconciled_spec().ok().flatten()))
    }

    fn violations(&self) -> &[String] {
        &self.obs.violations
    }

    fn stored(&self) -> Option<&'a FlinkDeploymentStatus> {
        self.fd.status.as_ref()
    }

    fn first_start(&mut self) -> Plan {
        if self.suspending() {
            self.status.lifecycle_state = Some(ResourceLifecycleState::Suspended);
            self.conditions(phase::SUSPENDED, "created suspended: nothing is deployed");
            return self.take().done(SLOW);
        }
        start::first_deployment(self.take())
    }

    fn start_in_progress(&mut self, recorded: &FlinkDeploymentSpec) -> Plan {
        start::continue_upgrade(self.take(), recorded, false)
    }

    fn running_spec(&self, recorded: &FlinkDeploymentSpec) -> FlinkDeploymentSpec {
        // What runs: the last stable spec after a rollback (the spec that failed stays
        // recorded, so that it is not deployed again), else the recorded spec.
        self.rolled_back.clone().unwrap_or_else(|| recorded.clone())
    }

    fn observe(&mut self, running: &FlinkDeploymentSpec) {
        if is_suspended(running) {
            status::suspended_into(self);
        } else {
            status::observe_into(self, running);
        }
        health::observe_into(self);
    }

    fn observe_while_stopping(&mut self, running: &FlinkDeploymentSpec) {
        self.observe(running);
    }

    fn changed_while_suspended(&mut self) -> Plan {
        // Recorded, applied when resumed.
        let spec = self.fd.spec.clone();
        if let Some(rs) = self.status.reconciliation_status.as_mut() {
            rs.last_reconciled_spec = ReconciledSpec::new(spec, false).encode().ok();
        }
        self.take().done(SLOW)
    }

    fn before_ending(&mut self) -> Option<Plan> {
        // A session cluster has no job to end: it is deployed again with its new spec.
        self.fd.spec.job.as_ref().is_none().then(|| {
            start::commit(
                self.take(),
                self.fd.spec.clone(),
                Restore::Nothing,
                Reason::SpecChanged,
                "redeploying the session cluster with the new spec",
            )
        })
    }

    fn job_state(&self) -> (Option<String>, bool) {
        let job = self.job_status();
        let ended = job.state().is_some_and(flink_job_state::is_globally_terminal);
        (job.state.clone(), ended)
    }

    fn never_ran(&self) -> bool {
        // A job whose cluster never came up ran nothing since it started from its recorded
        // state, so that state is still the one to start from.
        let job = self.job_status();
        !job.is_running()
            && job.start_time.is_none()
            && matches!(
                self.status.job_manager_deployment_status.unwrap_or_default(),
                JobManagerDeploymentStatus::Error
                    | JobManagerDeploymentStatus::Missing
                    | JobManagerDeploymentStatus::Deploying
            )
    }

    fn latest_checkpoint(&self) -> Checkpoint {
        match &self.obs.latest_checkpoint {
            Some(c) => Checkpoint::Found(RestorableState {
                kind: Kind::Checkpoint,
                path: c.path.clone(),
                timestamp_ms: Some(c.timestamp_ms),
            }),
            None => Checkpoint::None,
        }
    }

    fn last_state_held(&self) -> bool {
        self.obs.policy.high_availability && self.obs.ha_checkpoint == Some(true)
    }

    fn verb(&self, suspending: bool) -> &'static str {
        if suspending { "suspending" } else { "upgrading" }
    }

    fn stopping(&self, _job_id: &str, _verb: &str) -> String {
        "stopping the job with a savepoint".to_owned()
    }

    fn commit(&mut self, restore: Restore, cause: Cause) -> Plan {
        let suspending = self.suspending();
        let verb = self.verb(suspending);
        let restart = cause == Cause::Restart;
        let restored = match &restore {
            Restore::State(state) => Some(self.age_note(state)),
            _ => None,
        };
        let (reason, note) = match cause {
            Cause::WithoutState if suspending => (
                Reason::SpecChanged,
                "cancelling the job to suspend it without state".to_owned(),
            ),
            Cause::WithoutState => (
                Reason::SpecChanged,
                "cancelling the job to start it without state".to_owned(),
            ),
            Cause::KeepingLastState => (
                Reason::SpecChanged,
                format!("{verb}: deleting the cluster and keeping its high-availability metadata"),
            ),
            Cause::Savepoint => (
                Reason::SpecChanged,
                format!("{verb}: the savepoint is recorded; deleting the previous cluster"),
            ),
            Cause::Ended => (
                Reason::SpecChanged,
                match (&restore, suspending) {
                    (Restore::State(s), true) => {
                        format!("suspending the stopped job; it resumes from {}", s.path)
                    }
                    (_, true) => "suspending the stopped job; no state of it is known".to_owned(),
                    (Restore::State(_), false) => {
                        format!("{verb}, restoring {}", restored.unwrap_or_default())
                    }
                    (_, false) => format!("{verb} without state"),
                },
            ),
            Cause::FreshSavepoint => (
                Reason::SpecChanged,
                format!(
                    "{verb}: the job is not running; restoring {}, younger than kubernetes.operator.job.upgrade.savepoint.max-age",
                    restored.unwrap_or_default()
                ),
            ),
            Cause::Resume => (
                Reason::Resume,
                match &restore {
                    Restore::Nothing => "resuming the job without state".to_owned(),
                    Restore::State(_) => format!("resuming the job from {}", restored.unwrap_or_default()),
                    Restore::LastState => {
                        "resuming the job from the latest checkpoint in its high-availability metadata"
                            .to_owned()
                    }
                },
            ),
            Cause::Redeploy(path) => (
                Reason::SavepointRedeploy,
                format!("redeploying from spec.job.initialSavepointPath {path} without taking a savepoint"),
            ),
            Cause::NeverRan => (
                Reason::SpecChanged,
                format!(
                    "{verb}: the previous cluster never ran its job, so the new one starts from the same state"
                ),
            ),
            Cause::Restart => (
                Reason::RestartFailedJob,
                match &restored {
                    Some(age) => format!("restarting the failed job, restoring {age}"),
                    None => "restarting the failed job without state".to_owned(),
                },
            ),
        };
        let spec = if restart {
            self.recorded_spec()
        } else {
            self.fd.spec.clone()
        };
        start::commit(self.take(), spec, restore, reason, &note)
    }

    fn wait(&mut self, what: Wait) -> Plan {
        let (message, requeue) = match what {
            Wait::ForSnapshot => (
                "waiting for the pending savepoint before upgrading".to_owned(),
                FAST,
            ),
            Wait::ForRunning | Wait::ForCancel => (
                format!(
                    "waiting for the job ({}) to run to take its savepoint",
                    self.state_note()
                ),
                WAIT,
            ),
            Wait::ForCheckpoint | Wait::ForCheckpointToRestart => {
                ("waiting for the latest checkpoint of the job".to_owned(), FAST)
            }
        };
        self.conditions(phase::UPDATING, &message);
        self.take().done(requeue)
    }

    fn refuse(&mut self, refusal: Refusal) -> Plan {
        let verb = self.verb(self.suspending());
        let (phase, note) = match refusal {
            Refusal::Said(note) => (phase::UPDATE_FAILED, note),
            Refusal::StopGaveUp(why) => (
                phase::UPDATE_FAILED,
                format!("{verb}: {why}; the job keeps running with the previous spec"),
            ),
            Refusal::Ending(why) => {
                let newest = state::newest(&self.status, self.obs)
                    .map(|s| format!(" (the newest known state is {})", self.age_note(&s)))
                    .unwrap_or_default();
                (
                    phase::UPDATE_FAILED,
                    format!("{verb}: the job is {}{newest}: {why}", self.state_note()),
                )
            }
            Refusal::NotCancelled(None) => (
                phase::UPDATE_FAILED,
                format!(
                    "{verb} without a savepoint: no checkpoint or savepoint of the job is known yet; the job keeps running"
                ),
            ),
            Refusal::NotCancelled(Some(why)) => (
                phase::UPDATE_FAILED,
                format!("{verb} without a savepoint: {why}; the job keeps running"),
            ),
            Refusal::Ended(why) | Refusal::GoneWithoutCheckpoint(why) => {
                (phase::UPDATE_FAILED, format!("{verb}: {why}"))
            }
            Refusal::Restart(why) => (phase::FAILED, format!("restarting the failed job: {why}")),
        };
        self.take().refuse(phase, note)
    }

    fn own_step_due(&self, step: Step, spec: &FlinkDeploymentSpec) -> bool {
        match step {
            Step::ChangedBack => {
                self.rolled_back() && upgrade_relevant(spec) == upgrade_relevant(&self.fd.spec)
            }
            Step::Recovering => {
                !self.rolled_back()
                    && (recovery::missing(self, spec) || health::unhealthy(self, spec).is_some())
            }
            Step::RollbackDue => !self.rolled_back() && rollback::due_now(self, spec),
            _ => false,
        }
    }

    fn own_step(&mut self, step: Step, recorded: &FlinkDeploymentSpec) -> Option<Plan> {
        match step {
            Step::RollingBack => Some(match self.rolled_back.clone() {
                Some(stable) => start::continue_upgrade(self.take(), &stable, true),
                None => self.take().refuse(
                    phase::UPDATE_FAILED,
                    "rolling back: status.reconciliationStatus.lastStableSpec cannot be read; nothing is done until the spec changes".to_owned(),
                ),
            }),
            Step::ChangedBack => {
                // Changed back to what runs since the rollback: recorded, nothing redeployed.
                let spec = spec::with_recorded_nonces(&self.fd.spec, recorded);
                if let Some(rs) = self.status.reconciliation_status.as_mut() {
                    spec::record(rs, spec);
                    rs.state = Some(ReconciliationState::Deployed);
                }
                self.observed_phase();
                Some(self.take().done(FAST))
            }
            Step::Suspended => Some(self.take().done(SLOW)),
            Step::Recovering if !self.rolled_back() => recovery::recover_if_missing(self, recorded)
                .or_else(|| health::restart_if_unhealthy(self, recorded)),
            Step::RollbackDue if !self.rolled_back() => rollback::start_if_due(self, recorded),
            _ => None,
        }
    }

    fn restart_due(&self, _pending: bool) -> bool {
        !self.rolled_back()
            && self.fd.spec.job.is_some()
            && self.obs.policy.restart_failed
            && self.job_status().state() == Some(flink_job_state::FAILED)
    }

    fn job_running(&self) -> bool {
        self.fd.spec.job.is_some() && self.job_status().is_running()
    }

    fn phase(&mut self, _recorded: &FlinkDeploymentSpec) {
        self.observed_phase();
    }

    fn steady_requeue(&self, recorded: &FlinkDeploymentSpec, pending: bool) -> Next {
        let next = if status::unanswered_once(self) {
            FAST
        } else {
            status::steady_requeue(&self.status, pending)
        };
        // A rollback falls due at the readiness timeout, not at the next steady look.
        if !self.rolled_back()
            && next == SLOW
            && let Some(due) = rollback::due_at(self, recorded)
        {
            return Next::Within(
                u64::try_from(due - self.obs.now_ms)
                    .unwrap_or(0)
                    .div_ceil(1000)
                    .max(1),
            );
        }
        next
    }
}
