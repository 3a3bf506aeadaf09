//! The decision about one FlinkDeployment under construction, and its part in the shared
//! lifecycle ([`crate::lifecycle::machine`]): its job ends with its cluster (the
//! high-availability metadata keeps the last state of a last-state change), it is started
//! by deploying a cluster with it, "ready" is a JobManager whose REST API answers, and its
//! own steps are the session cluster without a job, rollback, JobManager recovery and the shutdown of an ended job's JobManager.

use std::ops::{Deref, DerefMut};

use flink_operator_api::{
    FlinkDeployment, FlinkDeploymentSpec, FlinkDeploymentStatus, JobManagerDeploymentStatus,
    KubernetesDeploymentMode, ReconciledSpec,
    common::{FlinkJobState, JobStatus, ReconciliationState, ResourceLifecycleState},
    keys,
};

use super::{
    Action, FAST, JobObservation, Next, Observation, Phase, Plan, SLOW, deletion, health, is_suspended,
    recovery, rollback, shutdown, start, state::RestorableState, status, upgrade_relevant,
};
use crate::{
    events::Reason,
    lifecycle::{
        JobAction,
        kind::{Cause, Checkpoint, Intent, LifecycleHooks, Restore, Standing, Step, StepName},
        ledger::Ledger,
        rescale::Rescale,
        spec,
    },
    policy::Rescaler,
    resources::flink_config,
};
use flink_operator_api::SnapshotType;

/// The decision about one FlinkDeployment: the shared [`Ledger`] and the deployment's own
/// observation.
pub(super) struct Decision<'a> {
    pub(super) fd: &'a FlinkDeployment,
    pub(super) obs: &'a Observation,
    ledger: Ledger<'a, FlinkDeploymentSpec, FlinkDeploymentStatus, Action>,
    /// The last stable spec a rollback deploys or deployed (see [`rollback::deployed_spec`]).
    rolled_back: Option<FlinkDeploymentSpec>,
}

impl<'a> Deref for Decision<'a> {
    type Target = Ledger<'a, FlinkDeploymentSpec, FlinkDeploymentStatus, Action>;

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
    pub(super) fn new(fd: &'a FlinkDeployment, obs: &'a Observation) -> Self {
        let ledger = Ledger::new(
            &fd.metadata,
            &fd.spec,
            fd.status.as_ref(),
            obs.facts(fd.metadata.generation),
            &obs.violations,
        );
        Decision {
            fd,
            obs,
            rolled_back: rollback::deployed_spec(&ledger.status),
            ledger,
        }
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
            ledger: self.ledger.take(),
            rolled_back: self.rolled_back.clone(),
        }
    }

    /// Conditions for the phase the observed status shows.
    pub(super) fn observed_phase(&mut self) {
        let (reason, message) = status::current_phase(self);
        self.conditions(reason, &message);
    }

    /// The status as it is now is written before `actions` run.
    pub(super) fn record_then_acting(mut self, actions: Vec<Action>) -> Plan {
        self.actions.extend(actions);
        self.record_then(FAST)
    }
}

impl Decision<'_> {
    /// After a rollback, the recorded spec is the one that failed: a failed job of the
    /// stable spec is not restarted with it, and nothing rolls back twice.
    fn rolled_back(&self) -> bool {
        self.rolled_back.is_some()
    }

    fn suspending(&self) -> bool {
        is_suspended(&self.fd.spec)
    }

    /// What the start recorded in status was to restore, as [`start::continue_upgrade`]
    /// deploys it (or, if it ran unseen, the latest checkpoint of its HA metadata): a first deployment its `initialSavepointPath` (the user's), a last-state
    /// start the latest checkpoint in the HA metadata it kept (no path in status names it),
    /// any other the state recorded in status.
    fn restore_of_the_start(&self, job: &JobStatus) -> Restore {
        // Unless it ran unseen after all (its JobManager did not answer, then was lost): the
        // HA metadata then holds a checkpoint of it (a start other than a last-state one
        // deletes the metadata before it), newer than what it started from.
        if self.obs.policy.high_availability && self.obs.ha_checkpoint == Some(true) {
            return Restore::LastState;
        }
        let recorded = (self.status.reconciliation_status.as_ref())
            .and_then(|rs| rs.last_reconciled::<FlinkDeploymentSpec>().ok().flatten());
        match recorded {
            Some(first) if first.is_first_deployment() => {
                let initial = (first.spec.job.as_ref())
                    .and_then(|j| j.initial_savepoint_path.clone())
                    .filter(|p| !p.trim().is_empty());
                Restore::from(initial.map(|path| RestorableState {
                    kind: SnapshotType::Savepoint,
                    path,
                    timestamp_ms: None,
                }))
            }
            Some(recorded) if start::restores_last_state(&recorded.spec, Some(job)) => Restore::LastState,
            _ => Restore::from(crate::lifecycle::restore::recorded(job)),
        }
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

impl Decision<'_> {
    /// Why nothing would point at the job's latest checkpoint once its cluster is deleted.
    /// With high availability the metadata does, unless it holds no checkpoint of the job
    /// while its JobManager does not answer: a job that ended unseen (FAILED) had Flink take
    /// its checkpoints out of that metadata, and then only its JobManager knows the latest.
    fn forgotten_with_cluster(&self) -> Option<String> {
        if !self.obs.policy.high_availability {
            return Some(
                "without high availability no HA metadata keeps the job's latest checkpoint once its cluster is deleted"
                    .to_owned(),
            );
        }
        let unanswered = matches!(self.obs.job, Some(JobObservation::Unreachable(_)));
        (unanswered && self.obs.ha_checkpoint != Some(true)).then(|| {
            "its HA metadata holds no checkpoint of the job and its JobManager does not answer; a job that ended \
             unseen leaves its latest checkpoint known to its JobManager only"
                .to_owned()
        })
    }
}

impl Decision<'_> {
    /// What the machine left to this kind, carried out (see [`Intent`]).
    pub(super) fn realize(
        &mut self,
        intent: Intent<FlinkDeploymentSpec, FlinkDeploymentStatus, Action>,
    ) -> Plan {
        match intent {
            Intent::Whole(plan) | Intent::Plan(plan) => plan,
            Intent::Commit {
                restore,
                cause,
                message,
            } => self.commit(restore, cause, message),
            Intent::ContinueStart(recorded) => start::continue_upgrade(self.take(), &recorded, false),
            Intent::TearDown(savepoint) => self.tear_down(savepoint.as_deref()),
        }
    }

    /// Records the spec to run and what it starts from, then deploys it (or suspends);
    /// `message`: what the lifecycle said of it.
    fn commit(&mut self, restore: Restore, cause: Cause, message: Option<String>) -> Plan {
        match cause {
            Cause::FirstStart if self.suspending() => {
                self.status.lifecycle_state = Some(ResourceLifecycleState::Suspended);
                self.conditions(Phase::Suspended, "created suspended: nothing is deployed");
                self.done(SLOW)
            }
            Cause::FirstStart => start::first_deployment(self.take(), restore),
            Cause::WhileSuspended => {
                // Recorded, applied when resumed.
                let spec = self.fd.spec.clone();
                if let Some(rs) = self.status.reconciliation_status.as_mut() {
                    rs.last_reconciled_spec = ReconciledSpec::new(spec, false).encode().ok();
                }
                self.done(SLOW)
            }
            cause => {
                // A restart runs the recorded spec again.
                let spec = if cause == Cause::Restart {
                    self.recorded_spec()
                } else {
                    self.fd.spec.clone()
                };
                start::commit_noting(self.take(), spec, restore, &message.unwrap_or_default(), None)
            }
        }
    }

    /// Deletes the cluster and lets the resource go; `savepoint`: the deletion's, recorded.
    fn tear_down(&mut self, savepoint: Option<&str>) -> Plan {
        match savepoint {
            Some(path) => deletion::savepoint_recorded(self.take(), path),
            None => {
                let has_finalizer = self.has_finalizer(keys::finalizers::FLINK_DEPLOYMENT);
                deletion::tear_down(self.take(), has_finalizer)
            }
        }
    }
}

impl<'a> LifecycleHooks<'a> for Decision<'a> {
    type Spec = FlinkDeploymentSpec;
    type Status = FlinkDeploymentStatus;
    type Action = Action;

    // Deleting an application cluster ends its job, and its high-availability metadata can
    // keep the latest checkpoint for the next cluster.
    const ENDS_WITH_ITS_CLUSTER: bool = true;
    const ROLLS_BACK: bool = true;

    fn standing(&self) -> Standing {
        let job = self.job_status();
        let state = job.state.clone();
        Standing {
            ready: true,
            ended: job.state().is_some_and(FlinkJobState::is_globally_terminal),
            running: self.fd.spec.job.is_some() && job.is_running(),
            failed_to_restart: !self.rolled_back()
                && self.fd.spec.job.is_some()
                && self.obs.policy.restart_failed
                && job.state() == Some(&FlinkJobState::Failed),
            // A job whose cluster never came up ran nothing since it was started, so what
            // that start was to restore is still the state to start from.
            never_ran: (!job.is_running()
                && job.start_time.is_none()
                && matches!(
                    self.status.job_manager_deployment_status.unwrap_or_default(),
                    JobManagerDeploymentStatus::Error
                        | JobManagerDeploymentStatus::Missing
                        | JobManagerDeploymentStatus::Deploying
                ))
            .then(|| self.restore_of_the_start(&job)),
            latest_checkpoint: match &self.obs.latest_checkpoint {
                Some(c) => Checkpoint::Found(RestorableState {
                    kind: SnapshotType::Checkpoint,
                    path: c.path.clone(),
                    timestamp_ms: Some(c.timestamp_ms),
                }),
                None => Checkpoint::None,
            },
            last_state_held: self.obs.policy.high_availability && self.obs.ha_checkpoint == Some(true),
            can_stop_for_deletion: self.obs.cluster_exists,
            on_cancel: self.obs.on_cancel.clone(),
            forgotten_with_cluster: self.forgotten_with_cluster(),
            state,
        }
    }

    fn recorded(&self) -> Result<Option<FlinkDeploymentSpec>, String> {
        // Unreadable is taken as not recorded: the cluster is deployed from the spec.
        Ok(self
            .status
            .reconciliation_status
            .as_ref()
            .and_then(|rs| rs.last_reconciled_spec().ok().flatten()))
    }

    fn admit(&mut self) {
        if !self.has_finalizer(keys::finalizers::FLINK_DEPLOYMENT) {
            self.actions.push(Action::AddFinalizer);
        }
        self.status.observed_generation = self.fd.metadata.generation;
    }

    fn observe(&mut self, recorded: &FlinkDeploymentSpec, _stopping: bool) -> FlinkDeploymentSpec {
        // What runs: the last stable spec after a rollback (the spec that failed stays
        // recorded, so that it is not deployed again), else the recorded spec.
        let running = self.rolled_back.clone().unwrap_or_else(|| recorded.clone());
        if is_suspended(&running) {
            status::suspended_into(self);
        } else {
            status::observe_into(self, &running);
        }
        health::observe_into(self);
        running
    }

    fn phase(&mut self, recorded: &FlinkDeploymentSpec, pending: bool) -> Next {
        self.observed_phase();
        let next = if status::unanswered_once(self) {
            FAST
        } else {
            status::steady_requeue(&self.status, pending, self.obs.now_ms)
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

    fn own_step_due(&self, step: StepName, spec: &FlinkDeploymentSpec) -> bool {
        match step {
            StepName::ChangedBack => {
                self.rolled_back() && upgrade_relevant(spec) == upgrade_relevant(&self.fd.spec)
            }
            StepName::Recovering => {
                !self.rolled_back()
                    && (recovery::missing(self, spec) || health::unhealthy(self, spec).is_some())
            }
            StepName::RollbackDue => !self.rolled_back() && rollback::due_now(self, spec),
            StepName::ShuttingDown => shutdown::due(self),
            _ => false,
        }
    }

    /// Native: the adaptive scheduler's new requirements (its active resource manager starts
    /// the TaskManagers they need). Standalone: only reactive mode rescales by itself, to the
    /// TaskManagers there are; the adaptive scheduler alone would wait for slots nobody adds.
    fn rescaling(&self, change: &Rescale) -> Option<Action> {
        // After a rollback the job runs the last stable spec, not the recorded one that the
        // change is measured against.
        if self.rolled_back() {
            return None;
        }
        let standalone = self.fd.spec.mode_or_default() == KubernetesDeploymentMode::Standalone;
        match (self.facts.policy.rescaler?, standalone) {
            (Rescaler::Adaptive, false) => Some(Action::Job(JobAction::Rescale(change.clone()))),
            // Reactive mode gives every vertex all the slots: only their number can change in
            // place, not a vertex's share (an override, the user's or the autoscaler's).
            (Rescaler::Reactive, true) if change.from.overrides == change.to.overrides => {
                Some(Action::ScaleTaskManagers {
                    replicas: flink_config::task_manager_replicas(self.spec, self.facts.policy.task_slots),
                })
            }
            _ => None,
        }
    }

    fn own_step(&mut self, step: &Step<FlinkDeploymentSpec>) -> Option<Plan> {
        match step {
            Step::RollingBack(_) => Some(match self.rolled_back.clone() {
                Some(stable) => start::continue_upgrade(self.take(), &stable, true),
                None => self.refuse(
                    Phase::UpdateFailed,
                    "rolling back: status.reconciliationStatus.lastStableSpec cannot be read; nothing is done until the spec changes".to_owned(),
                ),
            }),
            Step::ChangedBack(observed) => {
                // Changed back to what runs since the rollback: recorded, nothing redeployed.
                let spec = spec::with_recorded_nonces(&self.fd.spec, &observed.recorded);
                if let Some(rs) = self.status.reconciliation_status.as_mut() {
                    spec::record(rs, spec);
                    rs.state = Some(ReconciliationState::Deployed);
                }
                self.observed_phase();
                Some(self.done(FAST))
            }
            // A session cluster has no job to end: it is deployed again with its new spec.
            Step::Change(_) if self.fd.spec.job.is_none() => Some(start::commit(
                self.take(),
                self.fd.spec.clone(),
                Restore::Nothing,
                Reason::SpecChanged,
                "redeploying the session cluster with the new spec",
            )),
            Step::Suspended(_) => Some(self.done(SLOW)),
            Step::Recovering(observed) => recovery::recover_if_missing(self, &observed.recorded)
                .or_else(|| health::restart_if_unhealthy(self, &observed.recorded)),
            Step::RollbackDue(observed) => rollback::start_if_due(self, &observed.recorded),
            Step::ShuttingDown(_) => Some(shutdown::shut_down(self)),
            _ => None,
        }
    }
}
