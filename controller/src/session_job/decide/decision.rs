//! The decision about one FlinkSessionJob under construction, and its part in the shared
//! lifecycle ([`crate::lifecycle::machine`]): its job runs in a session cluster that outlives
//! it, so it is cancelled over REST for a change and its last state is its retained
//! checkpoints; it is started by submitting its jar, and "ready" is a session cluster whose
//! JobManager is READY.

use flink_operator_api::{
    FlinkSessionJob, FlinkSessionJobSpec, FlinkSessionJobStatus,
    common::{ResourceLifecycleState, flink_job_state},
};

use super::{
    Action, CheckpointLookup, EventNote, JobObservation, Observation, Plan, SessionObservation,
    deletion::{before_deletion_stop, tear_down},
    has_finalizer, phase, recorded_job_id,
    start::{commit, continue_submit, first_deployment},
    status::{current_phase, observe_into, refuse, refuse_restart, wait_for_session},
};
use crate::{
    conditions::set_conditions,
    events::Reason,
    lifecycle::{
        FAST, Facts, SLOW, WAIT,
        machine::{Cause, Checkpoint, JobKind, Refusal, Restore, Wait},
        restore::{self, Kind, RestorableState},
        spec,
    },
    runtime::Next,
};

/// The decision under construction: the resource, the observation, and what accumulates.
pub(super) struct Decision<'a> {
    pub(super) sj: &'a FlinkSessionJob,
    pub(super) obs: &'a Observation,
    pub(super) status: FlinkSessionJobStatus,
    pub(super) actions: Vec<Action>,
    pub(super) events: Vec<EventNote>,
}

impl Decision<'_> {
    pub(super) fn event(&mut self, warning: bool, reason: Reason, note: impl Into<String>) {
        self.events.push(EventNote {
            warning,
            reason,
            note: note.into(),
        });
    }

    pub(super) fn generation(&self) -> Option<i64> {
        self.sj.metadata.generation
    }

    pub(super) fn session_name(&self) -> &str {
        self.sj.spec.deployment_name.as_deref().unwrap_or_default()
    }

    pub(super) fn job_id(&self) -> String {
        recorded_job_id(&self.status).unwrap_or_default()
    }

    /// The job's state as Flink reported it now, for messages.
    pub(super) fn state_note(&self) -> String {
        self.obs.facts(None).observed_state().unwrap_or("gone").to_owned()
    }

    pub(super) fn set_conditions(&mut self, reason: &str, message: &str) {
        set_conditions(
            &mut self.status.conditions,
            self.sj.metadata.generation,
            reason,
            message,
            self.obs.now_ms,
        );
    }

    /// A plan that writes the status as it is first, runs its actions, then writes `after`.
    pub(super) fn stepped(&mut self, after: FlinkSessionJobStatus, requeue: Next) -> Plan {
        let mut plan = self.done(requeue);
        plan.status_before = Some(std::mem::replace(&mut plan.status, after));
        plan
    }
}

impl<'a> JobKind<'a> for Decision<'a> {
    type Spec = FlinkSessionJobSpec;
    type Status = FlinkSessionJobStatus;
    type Action = Action;

    // The session cluster outlives the job: it is cancelled over REST, and only its
    // retained checkpoints keep its last state.
    const ENDS_WITH_ITS_CLUSTER: bool = false;

    fn facts(&self) -> Facts<'a> {
        self.obs.facts(self.sj.metadata.generation)
    }

    fn conditions(&mut self, phase: &str, message: &str) {
        self.set_conditions(phase, message);
    }

    fn metadata(&self) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &self.sj.metadata
    }

    fn spec(&self) -> &'a FlinkSessionJobSpec {
        &self.sj.spec
    }

    fn status(&self) -> &FlinkSessionJobStatus {
        &self.status
    }

    fn ledger(&mut self) -> (&mut FlinkSessionJobStatus, &mut Vec<Action>, &mut Vec<EventNote>) {
        (&mut self.status, &mut self.actions, &mut self.events)
    }

    fn deleting(&self) -> bool {
        self.sj.metadata.deletion_timestamp.is_some()
    }

    fn before_deletion_stop(&mut self) -> Option<Plan> {
        before_deletion_stop(self)
    }

    fn deletion_savepoint_recorded(&mut self, path: &str) -> Plan {
        let job_id = self.job_id();
        self.set_conditions(
            phase::DELETING,
            &format!("job {job_id} stopped with savepoint {path}"),
        );
        self.actions.push(Action::RemoveFinalizer);
        self.record_then(SLOW)
    }

    fn tear_down(&mut self) -> Plan {
        tear_down(self)
    }

    fn admit(&mut self) {
        if !has_finalizer(self.sj) {
            self.actions.push(Action::AddFinalizer);
        }
    }

    fn recorded(&self) -> Result<Option<FlinkSessionJobSpec>, String> {
        // Never guess: a wrong guess would submit a second job.
        self.status
            .reconciliation_status
            .clone()
            .unwrap_or_default()
            .last_reconciled_spec::<FlinkSessionJobSpec>()
            .map_err(|e| {
                format!(
                    "status.reconciliationStatus.lastReconciledSpec cannot be read ({e}); nothing is done until it is repaired"
                )
            })
    }

    fn ready(&self) -> bool {
        self.obs.session == SessionObservation::Ready
    }

    fn until_ready(&mut self, recorded: Option<&FlinkSessionJobSpec>) -> Plan {
        wait_for_session(self, recorded)
    }

    fn violations(&self) -> &[String] {
        &self.obs.violations
    }

    fn stored(&self) -> Option<&'a FlinkSessionJobStatus> {
        self.sj.status.as_ref()
    }

    fn first_start(&mut self) -> Plan {
        first_deployment(self)
    }

    fn start_in_progress(&mut self, recorded: &FlinkSessionJobSpec) -> Plan {
        continue_submit(self, recorded)
    }

    fn observe(&mut self, running: &FlinkSessionJobSpec) {
        // A suspended job is not looked at.
        if !spec::is_suspended(running) {
            observe_into(self, running);
        }
    }

    fn changed_while_suspended(&mut self) -> Plan {
        // The state the suspension left stays the one to resume from.
        let left = restore::recorded(&self.status.job_status.clone().unwrap_or_default());
        commit(self, left)
    }

    fn before_ending(&mut self) -> Option<Plan> {
        if recorded_job_id(&self.status).is_none() {
            return Some(commit(self, None));
        }
        if matches!(self.obs.job, Some(JobObservation::Unreachable(_)) | None) {
            self.set_conditions(
                phase::UPDATING,
                "waiting for the JobManager to answer before changing the job",
            );
            return Some(self.done(FAST));
        }
        None
    }

    fn job_state(&self) -> (Option<String>, bool) {
        match &self.obs.job {
            Some(JobObservation::Found { state, .. }) => {
                (Some(state.clone()), flink_job_state::is_globally_terminal(state))
            }
            _ => (None, true),
        }
    }

    fn latest_checkpoint(&self) -> Checkpoint {
        match &self.obs.checkpoint {
            Some(CheckpointLookup::Found { path, timestamp_ms }) => Checkpoint::Found(RestorableState {
                kind: Kind::Checkpoint,
                path: path.clone(),
                timestamp_ms: *timestamp_ms,
            }),
            Some(CheckpointLookup::None) => Checkpoint::None,
            Some(CheckpointLookup::Unavailable(reason)) => Checkpoint::Unavailable(reason.clone()),
            None => Checkpoint::NotLooked,
        }
    }

    fn verb(&self, suspending: bool) -> &'static str {
        if suspending { "suspend" } else { "upgrade" }
    }

    fn stopping(&self, job_id: &str, verb: &str) -> String {
        format!("stopping job {job_id} with a savepoint for the {verb}")
    }

    fn commit(&mut self, restore: Restore, cause: Cause) -> Plan {
        let job_id = self.job_id();
        let verb = self.verb(spec::is_suspended(&self.sj.spec));
        let restore = match restore {
            Restore::State(state) => Some(state),
            // A session job keeps no high-availability metadata of its own.
            Restore::Nothing | Restore::LastState => None,
        };
        let age = restore.as_ref().map(|s| restore::age_note(s, self.obs.now_ms));
        match (cause, age) {
            (Cause::FreshSavepoint, Some(age)) => {
                let state = self.state_note();
                self.event(
                    false,
                    Reason::StateFound,
                    format!(
                        "Job {job_id} is {state}; the {verb} restores {age}, younger than kubernetes.operator.job.upgrade.savepoint.max-age"
                    ),
                );
            }
            (Cause::Ended, Some(age)) => self.event(false, Reason::StateFound, format!("Restoring {age}")),
            (Cause::Redeploy(path), _) => self.event(
                false,
                Reason::SavepointRedeploy,
                format!("Redeploying from spec.job.initialSavepointPath {path}"),
            ),
            (Cause::Restart, age) => self.event(
                false,
                Reason::RestartFailedJob,
                match age {
                    Some(age) => format!("Job {job_id} FAILED; resubmitting it restoring {age}"),
                    None => format!("Job {job_id} FAILED; resubmitting it without state"),
                },
            ),
            _ => {}
        }
        commit(self, restore)
    }

    fn wait(&mut self, what: Wait) -> Plan {
        let job_id = self.job_id();
        let (reason, message, requeue) = match what {
            Wait::ForSnapshot => (
                phase::UPDATING,
                "waiting for the pending manual savepoint or checkpoint before changing the job".to_owned(),
                FAST,
            ),
            Wait::ForRunning => {
                self.status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
                (
                    phase::UPDATING,
                    format!(
                        "waiting for job {job_id} to be RUNNING to take the savepoint (it is {})",
                        self.state_note()
                    ),
                    WAIT,
                )
            }
            Wait::ForCancel => {
                self.status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
                (
                    phase::UPDATING,
                    format!("waiting for job {job_id} to be cancelled"),
                    FAST,
                )
            }
            Wait::ForCheckpoint => (
                phase::UPDATING,
                format!("reading the last checkpoint of job {job_id}"),
                FAST,
            ),
            Wait::ForCheckpointToRestart => (
                phase::FAILED,
                format!("job {job_id} FAILED; reading its last checkpoint to restart it"),
                WAIT,
            ),
        };
        self.set_conditions(reason, &message);
        self.done(requeue)
    }

    fn refuse(&mut self, refusal: Refusal) -> Plan {
        let job_id = self.job_id();
        let verb = self.verb(spec::is_suspended(&self.sj.spec));
        let state = self.state_note();
        let error = match refusal {
            Refusal::Said(note) => note,
            Refusal::StopGaveUp(why) => {
                format!("{verb}: {why}; job {job_id} keeps running with the previous spec")
            }
            Refusal::Ending(why) => format!("the {verb} of job {job_id} ({state}): {why}"),
            Refusal::NotCancelled(why) => format!(
                "{verb}: {}; job {job_id} keeps running",
                why.as_deref()
                    .unwrap_or("no checkpoint or savepoint of the job is known to restore from")
            ),
            Refusal::Ended(why) => format!("{verb}: job {job_id} ended ({state}): {why}"),
            Refusal::GoneWithoutCheckpoint(reason) => format!(
                "job {job_id} is gone and its last checkpoint is unknown ({reason}); manual restore required"
            ),
            Refusal::Restart(why) => {
                return refuse_restart(self, format!("restarting the failed job {job_id}: {why}"));
            }
        };
        refuse(self, error)
    }

    fn restart_due(&self, pending: bool) -> bool {
        !pending
            && self.obs.policy.restart_failed
            && self.obs.facts(None).observed_state() == Some(flink_job_state::FAILED)
    }

    fn job_running(&self) -> bool {
        self.obs.facts(None).running()
    }

    fn phase(&mut self, recorded: &FlinkSessionJobSpec) {
        let (reason, message) = current_phase(&self.status, recorded);
        self.set_conditions(reason, &message);
    }

    fn steady_requeue(&self, _recorded: &FlinkSessionJobSpec, pending: bool) -> Next {
        // Nothing will change by itself once the job runs or has ended.
        let ended = self
            .status
            .job_status
            .as_ref()
            .and_then(|j| j.state.as_deref())
            .is_some_and(flink_job_state::is_globally_terminal);
        if (self.status.lifecycle_state == Some(ResourceLifecycleState::Stable) || ended) && !pending {
            SLOW
        } else {
            FAST
        }
    }
}
