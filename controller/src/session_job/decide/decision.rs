//! The decision about one FlinkSessionJob under construction, and its part in the shared
//! lifecycle ([`crate::lifecycle::machine`]): its job runs in a session cluster that outlives
//! it, so it is cancelled over REST for a change and its last state is its retained
//! checkpoints; it is started by submitting its jar, and "ready" is a session cluster whose
//! JobManager is READY.

use std::ops::{Deref, DerefMut};

use flink_operator_api::{
    FlinkSessionJob, FlinkSessionJobSpec, FlinkSessionJobStatus, common::FlinkJobState, keys,
};

use super::{
    Action, CheckpointLookup, EventNote, JobObservation, Observation, Phase, Plan, SessionObservation,
    deletion::{before_deletion_stop, tear_down},
    recorded_job_id,
    start::{commit, continue_submit, first_deployment},
    status::{current_phase, observe_into, wait_for_session},
};
use crate::{
    events::Reason,
    lifecycle::{
        FAST, SLOW,
        kind::{Cause, Checkpoint, Intent, LifecycleHooks, Restore, Standing, Step},
        ledger::Ledger,
        restore::RestorableState,
        spec,
    },
    plan::Next,
};
use flink_operator_api::SnapshotType;

/// The decision about one FlinkSessionJob: the shared [`Ledger`] and the session job's own
/// observation.
pub(super) struct Decision<'a> {
    pub(super) sj: &'a FlinkSessionJob,
    pub(super) obs: &'a Observation,
    ledger: Ledger<'a, FlinkSessionJobSpec, FlinkSessionJobStatus, Action>,
}

impl<'a> Deref for Decision<'a> {
    type Target = Ledger<'a, FlinkSessionJobSpec, FlinkSessionJobStatus, Action>;

    fn deref(&self) -> &Self::Target {
        &self.ledger
    }
}

impl DerefMut for Decision<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.ledger
    }
}

impl<'a> Decision<'a> {
    pub(super) fn new(sj: &'a FlinkSessionJob, obs: &'a Observation) -> Self {
        Decision {
            sj,
            obs,
            ledger: Ledger::new(
                &sj.metadata,
                &sj.spec,
                sj.status.as_ref(),
                obs.facts(sj.metadata.generation),
                &obs.violations,
            ),
        }
    }
}

impl Decision<'_> {
    pub(super) fn event(&mut self, warning: bool, reason: Reason, note: impl Into<String>) {
        self.events.push(EventNote {
            warning,
            reason,
            note: note.into(),
        });
    }

    pub(super) fn session_name(&self) -> &str {
        self.sj.spec.deployment_name.as_deref().unwrap_or_default()
    }

    pub(super) fn job_id(&self) -> String {
        recorded_job_id(&self.status).unwrap_or_default()
    }

    fn observed_state(&self) -> Option<&FlinkJobState> {
        match &self.obs.job {
            Some(JobObservation::Found { state, .. }) => Some(state),
            _ => None,
        }
    }
}

impl Decision<'_> {
    /// What the machine left to this kind, carried out (see [`Intent`]).
    pub(super) fn realize(
        &mut self,
        intent: Intent<FlinkSessionJobSpec, FlinkSessionJobStatus, Action>,
    ) -> Plan {
        match intent {
            Intent::Whole(plan) | Intent::Plan(plan) => plan,
            Intent::Commit { restore, cause, .. } => self.commit(restore, cause),
            Intent::ContinueStart(recorded) => continue_submit(self, &recorded),
            Intent::TearDown(savepoint) => self.tear_down(savepoint.as_deref()),
        }
    }

    /// Records the spec to run and what it starts from, then submits it.
    fn commit(&mut self, restore: Restore, cause: Cause) -> Plan {
        let restore = match restore {
            Restore::State(state) => Some(state),
            // A session job keeps no high-availability metadata of its own.
            Restore::Nothing | Restore::LastState => None,
        };
        match cause {
            Cause::FirstStart => first_deployment(self, restore),
            _ => commit(self, restore),
        }
    }

    /// Cancels the job and lets the resource go; `savepoint`: the deletion's, recorded.
    fn tear_down(&mut self, savepoint: Option<&str>) -> Plan {
        let Some(path) = savepoint else {
            return tear_down(self);
        };
        let job_id = self.job_id();
        self.conditions(
            Phase::Deleting,
            &format!("job {job_id} stopped with savepoint {path}"),
        );
        self.actions.push(Action::RemoveFinalizer);
        self.record_then(SLOW)
    }
}

impl<'a> LifecycleHooks<'a> for Decision<'a> {
    type Spec = FlinkSessionJobSpec;
    type Status = FlinkSessionJobStatus;
    type Action = Action;

    // The session cluster outlives the job: it is cancelled over REST, and only its
    // retained checkpoints keep its last state.
    const ENDS_WITH_ITS_CLUSTER: bool = false;

    fn standing(&self) -> Standing {
        let state = self.observed_state();
        Standing {
            ready: self.obs.session == SessionObservation::Ready,
            state: state.cloned(),
            // Gone (or not found) is ended.
            ended: state.is_none_or(FlinkJobState::is_globally_terminal),
            running: state == Some(&FlinkJobState::Running),
            failed_to_restart: self.obs.policy.restart_failed && state == Some(&FlinkJobState::Failed),
            never_ran: None,
            latest_checkpoint: match &self.obs.checkpoint {
                Some(CheckpointLookup::Found { path, timestamp_ms }) => Checkpoint::Found(RestorableState {
                    kind: SnapshotType::Checkpoint,
                    path: path.clone(),
                    timestamp_ms: *timestamp_ms,
                }),
                Some(CheckpointLookup::None) => Checkpoint::None,
                Some(CheckpointLookup::Unavailable(reason)) => Checkpoint::Unavailable(reason.clone()),
                None => Checkpoint::NotLooked,
            },
            last_state_held: false,
            can_stop_for_deletion: true,
            on_cancel: self.obs.on_cancel.clone(),
            forgotten_with_cluster: None,
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

    fn admit(&mut self) {
        if !self.has_finalizer(keys::finalizers::FLINK_SESSION_JOB) {
            self.actions.push(Action::AddFinalizer);
        }
    }

    fn observe(&mut self, recorded: &FlinkSessionJobSpec, stopping: bool) -> FlinkSessionJobSpec {
        // A suspended job is not looked at; one being stopped is followed by its stop.
        if !stopping && !spec::is_suspended(recorded) {
            observe_into(self, recorded);
        }
        recorded.clone()
    }

    fn phase(&mut self, recorded: &FlinkSessionJobSpec, pending: bool) -> Next {
        let (reason, message) = current_phase(&self.status, recorded);
        self.conditions(reason, &message);
        // Nothing will change by itself once the job runs or has ended.
        let ended = self
            .status
            .job_status
            .as_ref()
            .and_then(|j| j.state.as_ref())
            .is_some_and(FlinkJobState::is_globally_terminal);
        let stable =
            self.status.lifecycle_state == Some(flink_operator_api::common::ResourceLifecycleState::Stable);
        match (stable || ended, pending) {
            (true, false) => SLOW,
            (false, false) if self.obs.session == SessionObservation::Ready => {
                crate::lifecycle::starting(&self.status, self.obs.now_ms)
            }
            _ => FAST,
        }
    }

    fn own_step(&mut self, step: &Step<FlinkSessionJobSpec>) -> Option<Plan> {
        match step {
            Step::Deleting(_) => before_deletion_stop(self),
            Step::UntilReady(recorded) => Some(wait_for_session(self, recorded.as_ref())),
            Step::Change(_) => {
                if recorded_job_id(&self.status).is_none() {
                    return Some(commit(self, None));
                }
                if matches!(self.obs.job, Some(JobObservation::Unreachable(_)) | None) {
                    self.conditions(
                        Phase::Updating,
                        "waiting for the JobManager to answer before changing the job",
                    );
                    return Some(self.done(FAST));
                }
                None
            }
            _ => None,
        }
    }
}
