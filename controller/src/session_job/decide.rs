//! What to do about a FlinkSessionJob, decided from its spec, its stored status and what
//! was observed (pure: no I/O; the clock and fresh ids are inputs).
//!
//! The job runs in a session FlinkDeployment. Until that cluster exists, is a session
//! cluster and its JobManager is READY, the job waits (one status message, one Event).
//!
//! A spec change first ends the running job as its upgrade mode prescribes, and only then
//! records the new spec; so `reconciliationStatus.state` UPGRADING always means "the
//! recorded spec is to be submitted under the recorded job id":
//! - `stateless`: cancel, then submit from nothing;
//! - `savepoint`: record a trigger id, stop-with-savepoint under it, poll on later
//!   reconciles; the savepoint's path is recorded together with the new spec and the new
//!   job id, before the new job is submitted restoring from it. A failed savepoint leaves
//!   the old job running and the resource UpdateFailed until the spec changes again;
//! - `last-state`: cancel, then read the cancelled job's latest completed checkpoint and
//!   record its path with the new spec before submitting from it.
//!
//! `job.state: suspended` ends the job the same way and records the path it left; `running`
//! again submits restoring from it (unless the new mode is stateless). Deletion stops the
//! job (with a savepoint when `kubernetes.operator.job.savepoint-on-deletion` is true, its
//! path recorded) before the finalizer goes; a session cluster that is gone releases the
//! finalizer at once.
//!
//! The job id of a submission is recorded before the submission, so a crash between the
//! two finds the job by that id instead of submitting a second one.
//!
//! With `kubernetes.operator.job.upgrade.take-savepoint: false`, a job in `savepoint` mode is
//! cancelled like a last-state one and restored from the newest of its latest checkpoint and
//! its last savepoint. `kubernetes.operator.job.restore.max-state-age` bounds every restore
//! of a checkpoint or savepoint that is not taken for it (last-state, without a savepoint,
//! a resume): a job is not ended for state that is too old where that is known while it
//! runs, and never started from it; the refusal (UpdateFailed, `status.error`, a warning
//! Event) names the state and its age.
//!
//! A change of `upgradeMode` alone, or of `kubernetes.operator.*` keys alone, is recorded
//! without ending the job (the mode applies to the next change).
//!
//! `savepointTriggerNonce` and `checkpointTriggerNonce` take a manual savepoint or checkpoint
//! of the running job: the nonce and a trigger id are recorded before the trigger is sent,
//! later reconciles poll it, and the result goes to `savepointInfo` (last savepoint and
//! history) or `checkpointInfo`; a spec change waits for it. `savepointRedeployNonce` cancels
//! the job without a savepoint and submits the spec restoring `initialSavepointPath`.
//!
//! With `kubernetes.operator.job.restart.failed`, a FAILED job is resubmitted under a new
//! job id recorded first: from nothing in stateless mode, else from its newest checkpoint or
//! savepoint, guarded by the restore age (a refusal leaves it FAILED, with a RestoreRefused
//! Event).
//!
//! A savepoint change of a job that has ended (FAILED, FINISHED, CANCELED or gone) restores
//! its last savepoint if that is younger than `kubernetes.operator.job.upgrade.savepoint.max-age`;
//! otherwise it is refused. A new `restartNonce` is a spec change like any other: the job
//! is ended and submitted again as its upgrade mode says.
//!
//! Periodic savepoints (`kubernetes.operator.periodic.savepoint.interval`) are taken like
//! manual ones, the first an interval after the job started; savepoints beyond the history's
//! count or age are disposed of through the session cluster (see
//! [`crate::savepoint_history`]).
//!
//! Not done: rollbacks (this operator rolls back FlinkDeployments only).

use crate::events::Reason;
use std::collections::BTreeMap;

use flink_operator_api::{
    FlinkSessionJob, FlinkSessionJobSpec, FlinkSessionJobStatus,
    common::{
        JobStatus, ReconciliationState, ReconciliationStatus, ResourceLifecycleState, SnapshotTriggerType,
        UpgradeMode, flink_job_state,
    },
    keys,
};

use crate::lifecycle::{
    Facts, JobAction, LifecycleStatus, Out, Snapshot,
    change::{self, Ending, JobNow, Resume},
    deletion,
    deletion::DeletionSavepoint,
    observe, snapshots, spec,
    stop::{self, Stopped, Stopping},
};
use crate::{
    conditions::set_conditions,
    policy::Policy,
    reconcile::Next,
    restore::{self, Kind, RestorableState},
    savepoint_history,
};

/// What observe found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observation {
    pub session: SessionObservation,
    /// The job under the recorded job id (None: not looked at, e.g. the cluster is not ready).
    pub job: Option<JobObservation>,
    /// The pending savepoint (upgrade or manual), polled by its recorded trigger id.
    pub savepoint: Option<SavepointPoll>,
    /// The pending manual checkpoint, polled by its recorded trigger id.
    pub manual_checkpoint: Option<SavepointPoll>,
    /// The latest completed checkpoint of the recorded job, looked up when its upgrade mode
    /// is not stateless (while it runs too, so that the restore guard is checked before the
    /// job is ended for a restore).
    pub checkpoint: Option<CheckpointLookup>,
    /// Validation problems of the spec (the webhook may have been bypassed).
    pub violations: Vec<String>,
    /// The operator settings from the job's effective configuration.
    pub policy: Policy,
    /// `kubernetes.operator.user.artifacts.disallow-restricted-hosts` (default true), from
    /// the operator configuration only: the job cannot lift the check itself.
    pub restricted_artifact_hosts: bool,
    /// A trigger id to use if a savepoint is started (generated by the caller).
    pub fresh_trigger_id: String,
    /// A job id to use if a new job is submitted (generated by the caller).
    pub fresh_job_id: String,
    /// Now, epoch milliseconds.
    pub now_ms: i64,
}

/// The session FlinkDeployment named by `spec.deploymentName`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum SessionObservation {
    #[default]
    Missing,
    /// It has `spec.job`: an application cluster.
    NotSession,
    /// It is being deleted.
    Deleting,
    /// Its JobManager is not READY (`status.jobManagerDeploymentStatus`, or why its REST
    /// address is unknown).
    NotReady(String),
    Ready,
}

pub use crate::job::JobObservation;

pub use crate::lifecycle::poll::CheckpointLookup;

/// One job submission: upload the jar, run it under `job_id`, delete the jar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    pub job_id: String,
    pub jar_uri: Option<String>,
    pub entry_class: Option<String>,
    pub args: Vec<String>,
    pub parallelism: Option<u32>,
    pub restore_path: Option<String>,
    pub allow_non_restored_state: Option<bool>,
    /// Job configuration sent with the run request (the operator's own keys removed).
    pub configuration: BTreeMap<String, String>,
    /// Refuse http(s) jars whose host resolves to a restricted address.
    pub check_artifact_hosts: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    AddFinalizer,
    Submit(Submission),
    /// Something asked of the running job over the session cluster's REST API.
    Job(JobAction),
    RemoveFinalizer,
}

impl From<JobAction> for Action {
    fn from(action: JobAction) -> Self {
        Action::Job(action)
    }
}

/// What to do about a FlinkSessionJob (see [`crate::lifecycle::Plan`]).
pub type Plan = crate::lifecycle::Plan<FlinkSessionJobStatus, Action>;

impl Observation {
    /// What the shared lifecycle steps decide from.
    fn facts(&self, generation: Option<i64>) -> Facts<'_> {
        Facts {
            job: self.job.as_ref(),
            savepoint: self.savepoint.as_ref(),
            checkpoint: self.manual_checkpoint.as_ref(),
            policy: &self.policy,
            fresh_trigger_id: &self.fresh_trigger_id,
            generation,
            now_ms: self.now_ms,
        }
    }
}

pub use crate::conditions::phase;
pub use crate::reconcile::{EventNote, SavepointPoll};

use crate::lifecycle::{FAST, SLOW, WAIT};

/// The Flink state a job is in right after its id is recorded and before Flink reports it.
const RECONCILING: &str = flink_job_state::RECONCILING;

/// The decision under construction: the resource, the observation, and what accumulates.
struct Decision<'a> {
    sj: &'a FlinkSessionJob,
    obs: &'a Observation,
    actions: Vec<Action>,
    events: Vec<EventNote>,
}

impl Decision<'_> {
    fn event(&mut self, warning: bool, reason: Reason, note: impl Into<String>) {
        self.events.push(EventNote {
            warning,
            reason,
            note: note.into(),
        });
    }

    fn generation(&self) -> Option<i64> {
        self.sj.metadata.generation
    }

    /// Where the shared lifecycle steps put their actions and Events.
    fn out(&mut self) -> Out<'_, Action> {
        Out {
            actions: &mut self.actions,
            events: &mut self.events,
        }
    }

    fn session_name(&self) -> &str {
        self.sj.spec.deployment_name.as_deref().unwrap_or_default()
    }

    fn conditions(&self, status: &mut FlinkSessionJobStatus, reason: &str, message: &str) {
        set_conditions(
            &mut status.conditions,
            self.generation(),
            reason,
            message,
            self.obs.now_ms,
        );
    }

    /// A plan that writes `status` after its actions and nothing before.
    fn done(self, status: FlinkSessionJobStatus, requeue: Next) -> Plan {
        Plan {
            status_before: None,
            actions: self.actions,
            status,
            events: self.events,
            requeue,
        }
    }

    /// A plan that writes `before` first, runs its actions, then writes `after`.
    fn stepped(self, before: FlinkSessionJobStatus, after: FlinkSessionJobStatus, requeue: Next) -> Plan {
        Plan {
            status_before: Some(before),
            actions: self.actions,
            status: after,
            events: self.events,
            requeue,
        }
    }
}

pub fn decide(sj: &FlinkSessionJob, obs: &Observation) -> Plan {
    // Conditions come back with the rest, so their transition times carry over.
    let status = sj.status.clone().unwrap_or_default();
    let has_finalizer = sj
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == keys::finalizers::FLINK_SESSION_JOB);
    let mut d = Decision {
        sj,
        obs,
        actions: Vec::new(),
        events: Vec::new(),
    };
    let reconciliation = status.reconciliation_status.clone().unwrap_or_default();
    let recorded = reconciliation.last_reconciled_spec::<FlinkSessionJobSpec>();

    if sj.metadata.deletion_timestamp.is_some() {
        // An unreadable record is treated as "something may run": the job is still looked
        // up by its recorded id.
        let recorded = recorded.unwrap_or_else(|_| Some(sj.spec.clone()));
        return delete(d, status, has_finalizer, recorded.as_ref());
    }
    if !has_finalizer {
        d.actions.push(Action::AddFinalizer);
    }
    let recorded = match recorded {
        Ok(recorded) => recorded,
        Err(e) => {
            // Never guess: a wrong guess would submit a second job.
            let error = format!(
                "status.reconciliationStatus.lastReconciledSpec cannot be read ({e}); nothing is done until it is repaired"
            );
            return failed(d, status, phase::DEPLOY_FAILED, error);
        }
    };
    let refused = refused_generation(&status, sj, recorded.as_ref());

    if d.obs.session != SessionObservation::Ready {
        return wait_for_session(d, status, recorded.as_ref(), refused);
    }
    if stop::pending_trigger(&status).is_some() {
        return continue_savepoint(d, status);
    }
    if !d.obs.violations.is_empty() {
        let error = d.obs.violations.join("; ");
        let reason = if recorded.is_none() {
            phase::DEPLOY_FAILED
        } else {
            phase::UPDATE_FAILED
        };
        return failed(d, status, reason, error);
    }
    let Some(recorded) = recorded else {
        return first_deployment(d, status);
    };
    if reconciliation.state == Some(ReconciliationState::Upgrading) {
        return continue_submit(d, status, &recorded);
    }
    let mut status = status;
    let relevant_change = spec::changed(&recorded, &sj.spec);
    let recorded = if !relevant_change && recorded != sj.spec {
        record_ignored_changes(&d, &mut status, &recorded)
    } else {
        recorded
    };
    let suspended = spec::is_suspended(&recorded);
    if !suspended {
        observe_into(&mut d, &mut status, &recorded);
    }
    let obs = d.obs;
    let facts = obs.facts(d.generation());
    let pending = !suspended && snapshots::settle(&mut status, &facts, recorded.job.as_ref(), &mut d.out());
    if relevant_change {
        if pending {
            // The change may end the job, which would lose the snapshot the user asked for.
            d.conditions(
                &mut status,
                phase::UPDATING,
                "waiting for the pending manual savepoint or checkpoint before changing the job",
            );
            return d.done(status, FAST);
        }
        return apply_change(d, status, &recorded, refused);
    }
    if !suspended
        && !pending
        && obs.policy.restart_failed
        && facts.observed_state() == Some(flink_job_state::FAILED)
    {
        return restart_failed(d, status);
    }
    let running = !suspended && !pending && facts.running();
    let job = status.job_status.clone().unwrap_or_default();
    if running && let Some(wanted) = snapshots::due(&sj.spec, &recorded, &job, &facts) {
        return trigger_snapshot(d, status, wanted, &recorded);
    }
    let stored_error = sj.status.as_ref().and_then(|s| s.error.as_deref());
    snapshots::report_unsupported_schedule(&mut status, stored_error, &facts, &mut d.out());
    if running && snapshots::trim_history(&mut status, &facts, &mut d.out()) {
        let (reason, message) = current_phase(&status, &recorded);
        d.conditions(&mut status, reason, &message);
        return d.done(status, FAST);
    }
    let (reason, message) = current_phase(&status, &recorded);
    d.conditions(&mut status, reason, &message);
    // Nothing will change by itself once the job runs or has ended.
    let ended = job
        .state
        .as_deref()
        .is_some_and(flink_job_state::is_globally_terminal);
    let requeue = if (status.lifecycle_state == Some(ResourceLifecycleState::Stable) || ended) && !pending {
        SLOW
    } else {
        FAST
    };
    let requeue = savepoint_history::requeue_for_periodic(
        &job,
        d.obs.policy.periodic_savepoint_ms,
        d.obs.now_ms,
        requeue,
    );
    d.done(status, requeue)
}

/// The error of an update this generation already refused (a failed upgrade savepoint), so
/// that it is not retried until the spec changes again.
fn refused_generation(
    status: &FlinkSessionJobStatus,
    sj: &FlinkSessionJob,
    recorded: Option<&FlinkSessionJobSpec>,
) -> Option<String> {
    // observedGeneration is written only when a spec is committed or refused, so equal to
    // the current generation with the spec not committed means refused.
    let refused = recorded.is_some_and(|r| spec::changed(r, &sj.spec))
        && status.observed_generation.is_some()
        && status.observed_generation == sj.metadata.generation;
    status.error.clone().filter(|_| refused)
}

/// Records a spec whose changes do not end the job, and returns it as the recorded one;
/// the recorded snapshot nonces stay until their snapshots are triggered.
fn record_ignored_changes(
    d: &Decision<'_>,
    status: &mut FlinkSessionJobStatus,
    recorded: &FlinkSessionJobSpec,
) -> FlinkSessionJobSpec {
    let spec = spec::with_recorded_nonces(&d.sj.spec, recorded);
    if let Some(rs) = status.reconciliation_status.as_mut() {
        spec::record(rs, spec.clone());
    }
    status.observed_generation = d.generation();
    spec
}

fn recorded_job_id(status: &FlinkSessionJobStatus) -> Option<String> {
    status.job_status.as_ref().and_then(|j| j.job_id.clone())
}

/// The job's error (validation, unreadable status) with no action beyond the finalizer.
fn failed(mut d: Decision<'_>, mut status: FlinkSessionJobStatus, reason: &str, error: String) -> Plan {
    if status.error.as_deref() != Some(error.as_str()) {
        d.event(true, Reason::ValidationError, error.clone());
    }
    status.error = Some(error.clone());
    d.conditions(&mut status, reason, &error);
    d.done(status, SLOW)
}

fn wait_for_session(
    mut d: Decision<'_>,
    mut status: FlinkSessionJobStatus,
    recorded: Option<&FlinkSessionJobSpec>,
    refused: Option<String>,
) -> Plan {
    let name = d.session_name().to_owned();
    let why = match &d.obs.session {
        SessionObservation::Missing => format!("FlinkDeployment {name} does not exist"),
        SessionObservation::NotSession => {
            format!(
                "FlinkDeployment {name} is an application cluster (it has spec.job), not a session cluster"
            )
        }
        SessionObservation::Deleting => format!("FlinkDeployment {name} is being deleted"),
        SessionObservation::NotReady(why) => why.clone(),
        SessionObservation::Ready => String::new(),
    };
    let message = format!("waiting for session cluster {name}: {why}");
    // A refused update keeps its reason: it is what the user has to act on.
    if refused.is_none() && status.error.as_deref() != Some(message.as_str()) {
        d.event(false, Reason::SessionClusterNotReady, message.clone());
        status.error = Some(message.clone());
    }
    let reason = match recorded {
        None => {
            status.lifecycle_state = Some(ResourceLifecycleState::Created);
            phase::DEPLOYING
        }
        Some(r) if spec::is_suspended(r) => phase::SUSPENDED,
        Some(_) => phase::RESTARTING,
    };
    d.conditions(&mut status, reason, &message);
    d.done(status, WAIT)
}

fn submission(
    spec: &FlinkSessionJobSpec,
    job_id: String,
    restore_path: Option<String>,
    obs: &Observation,
) -> Submission {
    let job = spec.job.clone().unwrap_or_default();
    let mut configuration: BTreeMap<String, String> = spec
        .flink_configuration
        .as_ref()
        .map(|c| c.flattened())
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| !k.starts_with(keys::operator::PREFIX))
        .collect();
    if job.upgrade_mode_or_default() == UpgradeMode::LastState
        || (job.upgrade_mode_or_default() == UpgradeMode::Savepoint && !obs.policy.take_savepoint)
    {
        // A last-state upgrade (or a savepoint-mode one without a savepoint) cancels the job
        // and restores its latest checkpoint, which must outlive the cancellation.
        configuration
            .entry(keys::flink::CHECKPOINTING_EXTERNALIZED_RETENTION.to_owned())
            .or_insert_with(|| "RETAIN_ON_CANCELLATION".to_owned());
    }
    Submission {
        job_id,
        jar_uri: job.jar_uri.clone(),
        entry_class: job.entry_class.clone(),
        args: job.args_or_default().to_vec(),
        parallelism: job
            .parallelism
            .and_then(|p| u32::try_from(p).ok())
            .filter(|p| *p > 0),
        restore_path,
        allow_non_restored_state: job.allow_non_restored_state,
        configuration,
        check_artifact_hosts: obs.restricted_artifact_hosts,
    }
}

fn first_deployment(d: Decision<'_>, mut status: FlinkSessionJobStatus) -> Plan {
    let spec = &d.sj.spec;
    let name = d.session_name().to_owned();
    status.error = None;
    if spec::is_suspended(spec) {
        status.lifecycle_state = Some(ResourceLifecycleState::Created);
        d.conditions(
            &mut status,
            phase::SUSPENDED,
            "the job is suspended: nothing is submitted",
        );
        return d.done(status, SLOW);
    }
    let restore_path = spec.job.as_ref().and_then(|j| j.initial_savepoint_path.clone());
    let job_id = d.obs.fresh_job_id.clone();
    status.reconciliation_status = Some(ReconciliationStatus {
        reconciliation_timestamp: Some(d.obs.now_ms),
        last_reconciled_spec: spec::encode(spec.clone(), true),
        last_stable_spec: None,
        state: Some(ReconciliationState::Upgrading),
    });
    status.observed_generation = d.generation();
    status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
    status.job_status = Some(JobStatus {
        job_name: d.sj.metadata.name.clone(),
        job_id: Some(job_id.clone()),
        state: Some(RECONCILING.to_owned()),
        upgrade_savepoint_path: restore_path.clone(),
        ..Default::default()
    });
    let message = format!("submitting the job to session cluster {name}");
    submit(
        d,
        status,
        Submit {
            spec,
            job_id,
            restore_path,
            session: &name,
        },
        phase::DEPLOYING,
        &message,
    )
}

/// What is submitted, where.
struct Submit<'a> {
    spec: &'a FlinkSessionJobSpec,
    job_id: String,
    restore_path: Option<String>,
    session: &'a str,
}

/// Submits under a job id and a restore path already in `status`, which is written first
/// with `phase` and `message`.
fn submit(
    mut d: Decision<'_>,
    mut status: FlinkSessionJobStatus,
    what: Submit<'_>,
    phase: &str,
    message: &str,
) -> Plan {
    d.conditions(&mut status, phase, message);
    let before = status.clone();
    let after = submitted(&d, status);
    let note = submit_note(&what.job_id, what.session, what.restore_path.as_deref());
    d.actions.push(Action::Submit(submission(
        what.spec,
        what.job_id,
        what.restore_path,
        d.obs,
    )));
    d.event(false, Reason::Submit, note);
    d.stepped(before, after, FAST)
}

fn submit_note(job_id: &str, session: &str, restore_path: Option<&str>) -> String {
    match restore_path {
        Some(path) => format!("Submitting job {job_id} to session cluster {session}, restoring from {path}"),
        None => format!("Submitting job {job_id} to session cluster {session} without state"),
    }
}

/// The status once a submission succeeded.
fn submitted(d: &Decision<'_>, mut status: FlinkSessionJobStatus) -> FlinkSessionJobStatus {
    if let Some(rs) = status.reconciliation_status.as_mut() {
        rs.state = Some(ReconciliationState::Deployed);
    }
    status.lifecycle_state = Some(ResourceLifecycleState::Deployed);
    d.conditions(&mut status, phase::DEPLOYING, "the job is submitted");
    status
}

/// UPGRADING: the recorded spec is to run under the recorded job id.
fn continue_submit(
    mut d: Decision<'_>,
    mut status: FlinkSessionJobStatus,
    recorded: &FlinkSessionJobSpec,
) -> Plan {
    let name = d.session_name().to_owned();
    let Some(job_id) = recorded_job_id(&status) else {
        // A job id is always recorded with UPGRADING; without one, record a new one first.
        let job = status.job_status_mut();
        job.job_id = Some(d.obs.fresh_job_id.clone());
        job.state = Some(RECONCILING.to_owned());
        d.conditions(
            &mut status,
            phase::DEPLOYING,
            "recording the job id to submit under",
        );
        let before = status.clone();
        return d.stepped(before, status, FAST);
    };
    match &d.obs.job {
        Some(JobObservation::Found { .. }) => {
            // Submitted before a crash kept the status from saying so.
            let mut status = submitted(&d, status);
            observe_into(&mut d, &mut status, recorded);
            d.done(status, FAST)
        }
        Some(JobObservation::NotFound) => {
            let spec = d.sj.spec.clone();
            if let Some(rs) = status.reconciliation_status.as_mut() {
                rs.reconciliation_timestamp = Some(d.obs.now_ms);
                // A spec changed again before the job was submitted is the one submitted.
                if &spec != recorded {
                    rs.last_reconciled_spec = spec::encode(spec.clone(), false);
                    status.observed_generation = d.generation();
                }
            }
            if spec::is_suspended(&spec) {
                if let Some(rs) = status.reconciliation_status.as_mut() {
                    rs.state = Some(ReconciliationState::Deployed);
                }
                status.lifecycle_state = Some(ResourceLifecycleState::Suspended);
                d.conditions(&mut status, phase::SUSPENDED, "the job is suspended");
                d.event(
                    false,
                    Reason::Suspended,
                    "The job is suspended before it was submitted",
                );
                return d.done(status, SLOW);
            }
            let restore_path = status
                .job_status
                .as_ref()
                .and_then(|j| j.upgrade_savepoint_path.clone());
            status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
            submit(
                d,
                status,
                Submit {
                    spec: &spec,
                    job_id,
                    restore_path,
                    session: &name,
                },
                phase::DEPLOYING,
                &format!("submitting the job to session cluster {name}"),
            )
        }
        Some(JobObservation::Unreachable(_)) | None => {
            d.conditions(
                &mut status,
                phase::DEPLOYING,
                &format!("waiting for session cluster {name} to answer before submitting"),
            );
            d.done(status, FAST)
        }
    }
}

/// The recorded job's state into status, with an Event per change.
fn observe_into(d: &mut Decision<'_>, status: &mut FlinkSessionJobStatus, recorded: &FlinkSessionJobSpec) {
    let name = d.session_name().to_owned();
    let mut job = status.job_status.clone().unwrap_or_default();
    let id = job.job_id.clone().unwrap_or_default();
    match &d.obs.job {
        Some(JobObservation::Found {
            state,
            start_time,
            failure,
            ..
        }) => {
            let previous_error = status.error.take();
            let obs = d.obs;
            observe::job_state_into(&mut job, state, *start_time, obs.now_ms, &mut d.out());
            if state == flink_job_state::FAILED {
                // Flink's root cause, read once when the job is first seen FAILED; kept after.
                status.error = Some(observe::failure(
                    &id,
                    failure.as_ref(),
                    previous_error,
                    &mut d.out(),
                ));
            }
        }
        Some(JobObservation::NotFound) => {
            let error = format!("job {id} is not known to session cluster {name}");
            if status.error.as_deref() != Some(error.as_str()) {
                d.event(true, Reason::Missing, error.clone());
            }
            job.state = Some(RECONCILING.to_owned());
            status.error = Some(error);
        }
        Some(JobObservation::Unreachable(_)) | None => {}
    }
    let state = job.state.clone().unwrap_or_default();
    status.job_status = Some(job);
    let not_found = matches!(d.obs.job, Some(JobObservation::NotFound));
    let failed = state == flink_job_state::FAILED;
    let stable = state == flink_job_state::RUNNING && !not_found;
    observe::lifecycle_into(status, failed, stable, false, recorded, &d.sj.spec);
}

/// The phase (condition reason) and a message for a job whose recorded spec is applied.
fn current_phase(status: &FlinkSessionJobStatus, recorded: &FlinkSessionJobSpec) -> (&'static str, String) {
    if spec::is_suspended(recorded) {
        let path = status
            .job_status
            .as_ref()
            .and_then(|j| j.upgrade_savepoint_path.clone());
        return (
            phase::SUSPENDED,
            match path {
                Some(path) => format!("the job is suspended; it resumes from {path}"),
                None => "the job is suspended".to_owned(),
            },
        );
    }
    if let Some(error) = &status.error
        && status.lifecycle_state != Some(ResourceLifecycleState::Failed)
    {
        return (phase::DEPLOY_FAILED, error.clone());
    }
    let state = status
        .job_status
        .as_ref()
        .and_then(|j| j.state.clone())
        .unwrap_or_default();
    let reason = match state.as_str() {
        flink_job_state::RUNNING => phase::RUNNING,
        flink_job_state::FAILED => phase::FAILED,
        flink_job_state::FINISHED => phase::SUCCEEDED,
        flink_job_state::CANCELED | flink_job_state::CANCELLING => phase::CANCELLED,
        flink_job_state::RESTARTING | flink_job_state::FAILING => phase::RESTARTING,
        _ => phase::DEPLOYING,
    };
    (reason, format!("the job is {state}"))
}

/// The spec differs from the recorded one: end the running job as its upgrade mode says,
/// then commit.
fn apply_change(
    mut d: Decision<'_>,
    mut status: FlinkSessionJobStatus,
    recorded: &FlinkSessionJobSpec,
    refused: Option<String>,
) -> Plan {
    if let Some(error) = refused {
        status.error = Some(error.clone());
        d.conditions(&mut status, phase::UPDATE_FAILED, &error);
        return d.done(status, SLOW);
    }
    let spec = d.sj.spec.clone();
    let suspending = spec::is_suspended(&spec);
    if spec::is_suspended(recorded) {
        return resume(d, status, recorded);
    }
    let Some(job_id) = recorded_job_id(&status) else {
        return commit(d, status, None);
    };
    let verb = if suspending { "suspend" } else { "upgrade" };
    let ended = match &d.obs.job {
        Some(JobObservation::NotFound) => true,
        Some(JobObservation::Found { state, .. }) => flink_job_state::is_globally_terminal(state),
        Some(JobObservation::Unreachable(_)) | None => {
            d.conditions(
                &mut status,
                phase::UPDATING,
                "waiting for the JobManager to answer before changing the job",
            );
            return d.done(status, FAST);
        }
    };
    let state = d.obs.facts(None).observed_state().unwrap_or("gone").to_owned();
    let redeploy_nonce = spec.job.as_ref().and_then(|j| j.savepoint_redeploy_nonce);
    if redeploy_nonce.is_some()
        && redeploy_nonce != recorded.job.as_ref().and_then(|j| j.savepoint_redeploy_nonce)
    {
        return redeploy_from_savepoint(d, status, &job_id, &state, ended);
    }
    let mode = spec::upgrade_mode(&spec);
    let job = status.job_status.clone().unwrap_or_default();
    let facts = d.obs.facts(None);
    let now = JobNow::of(facts.observed_state());
    match change::ending(mode, false, suspending, now, &job, &d.obs.policy, d.obs.now_ms) {
        Ending::WithoutState if !ended => cancel(d, status, &job_id, verb, ""),
        Ending::WithoutState => commit(d, status, None),
        Ending::CancelForNewest { with_savepoints } => {
            if !suspending && let Err(why) = check_before_cancel(&d, &status, with_savepoints) {
                return refuse(d, status, format!("{verb}: {why}; job {job_id} keeps running"));
            }
            let how = if with_savepoints {
                " without a savepoint (kubernetes.operator.job.upgrade.take-savepoint is false)"
            } else {
                ""
            };
            cancel(d, status, &job_id, verb, how)
        }
        Ending::Ended { with_savepoints } => {
            restore_after_cancel(d, status, &job_id, &state, verb, with_savepoints)
        }
        Ending::Savepoint => {
            let obs = d.obs;
            let facts = obs.facts(d.generation());
            let drain = obs.policy.drain && suspending;
            match stop::stop_with_savepoint(&mut status, &job_id, drain, verb, &facts, &mut d.out()) {
                Stopping::Sent => {
                    let message = stop::under_way(
                        &status,
                        &format!("stopping job {job_id} with a savepoint for the {verb}"),
                    );
                    d.conditions(&mut status, phase::UPDATING, &message);
                    let before = status.clone();
                    d.stepped(before, status, crate::reconcile::STOPPING)
                }
                Stopping::Wait { seconds, note } => {
                    d.conditions(&mut status, phase::UPDATING, &format!("{verb}: {note}"));
                    d.done(status, Next::Within(seconds))
                }
                Stopping::GiveUp(why) => refuse(
                    d,
                    status,
                    format!("{verb}: {why}; job {job_id} keeps running with the previous spec"),
                ),
            }
        }
        Ending::WaitForCancel => {
            status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
            d.conditions(
                &mut status,
                phase::UPDATING,
                &format!("waiting for job {job_id} to be cancelled"),
            );
            d.done(status, FAST)
        }
        Ending::WaitForRunning => {
            status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
            d.conditions(
                &mut status,
                phase::UPDATING,
                &format!("waiting for job {job_id} to be RUNNING to take the savepoint (it is {state})"),
            );
            d.done(status, WAIT)
        }
        Ending::FreshSavepoint(savepoint) => {
            d.event(
                false,
                Reason::StateFound,
                format!(
                    "Job {job_id} is {state}; the {verb} restores {}, younger than kubernetes.operator.job.upgrade.savepoint.max-age",
                    restore::age_note(&savepoint, d.obs.now_ms)
                ),
            );
            commit(d, status, Some(savepoint))
        }
        // An application cluster's; a session job has no such runtime.
        Ending::KeepingLastState => cancel(d, status, &job_id, verb, ""),
        Ending::Refuse(why) => refuse(d, status, format!("the {verb} of job {job_id} ({state}): {why}")),
    }
}

/// Cancels the job (its retained checkpoints stay) for a change; the spec is committed once
/// it has ended.
fn cancel(
    mut d: Decision<'_>,
    mut status: FlinkSessionJobStatus,
    job_id: &str,
    verb: &str,
    how: &str,
) -> Plan {
    status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
    d.conditions(
        &mut status,
        phase::UPDATING,
        &format!("cancelling job {job_id} for the {verb}{how}"),
    );
    d.actions.push(Action::Job(JobAction::Cancel {
        job_id: job_id.to_owned(),
    }));
    d.event(
        false,
        Reason::SpecChanged,
        format!("Cancelling job {job_id} for the {verb}{how}"),
    );
    let before = status.clone();
    d.stepped(before, status, FAST)
}

/// The latest completed checkpoint, as observed.
fn observed_checkpoint(obs: &Observation) -> Option<RestorableState> {
    match &obs.checkpoint {
        Some(CheckpointLookup::Found { path, timestamp_ms }) => Some(RestorableState {
            kind: Kind::Checkpoint,
            path: path.clone(),
            timestamp_ms: *timestamp_ms,
        }),
        _ => None,
    }
}

/// What a cancelled job would restore, checked against the restore guard while it still
/// runs (see [`change::before_cancel`]); with savepoints, a job known to have no
/// checkpoint and no savepoint is not ended either.
fn check_before_cancel(
    d: &Decision<'_>,
    status: &FlinkSessionJobStatus,
    with_savepoints: bool,
) -> Result<(), String> {
    let job = status.job_status.clone().unwrap_or_default();
    let checkpoint = observed_checkpoint(d.obs);
    if with_savepoints
        && restore::newest(&job, checkpoint.clone()).is_none()
        && d.obs.checkpoint == Some(CheckpointLookup::None)
    {
        return Err("no checkpoint or savepoint of the job is known to restore from".to_owned());
    }
    change::before_cancel(&job, checkpoint, with_savepoints, &d.obs.policy, d.obs.now_ms)
}

/// The job has ended for a last-state change (or a savepoint-mode one without a savepoint):
/// record its latest checkpoint (without a savepoint: the newest of its checkpoint and
/// savepoints) with the new spec, if the restore guard allows; a suspension keeps the state
/// for the resume, where the guard applies.
fn restore_after_cancel(
    mut d: Decision<'_>,
    mut status: FlinkSessionJobStatus,
    job_id: &str,
    state: &str,
    verb: &str,
    with_savepoints: bool,
) -> Plan {
    let checkpoint = match d.obs.checkpoint.clone() {
        Some(CheckpointLookup::Found { .. }) => observed_checkpoint(d.obs),
        Some(CheckpointLookup::None) => None,
        Some(CheckpointLookup::Unavailable(reason)) if state == "gone" => {
            if !with_savepoints {
                return refuse(
                    d,
                    status,
                    format!(
                        "job {job_id} is gone and its last checkpoint is unknown ({reason}); manual restore required"
                    ),
                );
            }
            None
        }
        Some(CheckpointLookup::Unavailable(_)) | None => {
            d.conditions(
                &mut status,
                phase::UPDATING,
                &format!("reading the last checkpoint of job {job_id}"),
            );
            return d.done(status, FAST);
        }
    };
    let job = status.job_status.clone().unwrap_or_default();
    let suspending = spec::is_suspended(&d.sj.spec);
    let newest = match change::after_end(
        &job,
        checkpoint,
        with_savepoints,
        suspending,
        &d.obs.policy,
        d.obs.now_ms,
    ) {
        Ok(Some(newest)) => newest,
        Ok(None) => return commit(d, status, None),
        Err(why) => return refuse(d, status, format!("{verb}: job {job_id} ended ({state}): {why}")),
    };
    d.event(
        false,
        Reason::StateFound,
        format!("Restoring {}", restore::age_note(&newest, d.obs.now_ms)),
    );
    commit(d, status, Some(newest))
}

/// Suspended, and now to run again (or a new suspended spec to record), see
/// [`change::resume`]; a spec changed while suspended keeps what the suspension left.
fn resume(d: Decision<'_>, status: FlinkSessionJobStatus, recorded: &FlinkSessionJobSpec) -> Plan {
    let spec = &d.sj.spec;
    let job = status.job_status.clone().unwrap_or_default();
    if spec::is_suspended(spec) {
        return commit(d, status, restore::recorded(&job));
    }
    match change::resume(
        spec::upgrade_mode(recorded),
        spec::upgrade_mode(spec),
        &job,
        false,
        &d.obs.policy,
        d.obs.now_ms,
    ) {
        Resume::WithoutState | Resume::LastState => commit(d, status, None),
        Resume::From(state) => commit(d, status, Some(state)),
        Resume::Refuse(why) => refuse(d, status, format!("resuming: {why}")),
    }
}

/// A FAILED job is resubmitted when `kubernetes.operator.job.restart.failed` is true: from
/// nothing in stateless mode, else from its newest checkpoint or savepoint if the restore
/// guard allows.
fn restart_failed(mut d: Decision<'_>, mut status: FlinkSessionJobStatus) -> Plan {
    let job_id = recorded_job_id(&status).unwrap_or_default();
    if spec::upgrade_mode(&d.sj.spec) == UpgradeMode::Stateless {
        d.event(
            false,
            Reason::RestartFailedJob,
            format!("Job {job_id} FAILED; resubmitting it without state"),
        );
        return commit(d, status, None);
    }
    if matches!(d.obs.checkpoint, Some(CheckpointLookup::Unavailable(_)) | None) {
        // Restarting from an older state than the latest checkpoint would lose progress.
        d.conditions(
            &mut status,
            phase::FAILED,
            &format!("job {job_id} FAILED; reading its last checkpoint to restart it"),
        );
        return d.done(status, WAIT);
    }
    let job = status.job_status.clone().unwrap_or_default();
    let newest = match change::newest_allowed(
        &job,
        observed_checkpoint(d.obs),
        true,
        &d.obs.policy,
        d.obs.now_ms,
    ) {
        Ok(newest) => newest,
        Err(why) => return refuse_restart(d, status, format!("restarting the failed job {job_id}: {why}")),
    };
    d.event(
        false,
        Reason::RestartFailedJob,
        format!(
            "Job {job_id} FAILED; resubmitting it restoring {}",
            restore::age_note(&newest, d.obs.now_ms)
        ),
    );
    commit(d, status, Some(newest))
}

/// A restart the restore guard refused: the job stays FAILED with the reason in status, and
/// one Event per new reason (observing the job rewrites `status.error`, so the stored one
/// is compared).
fn refuse_restart(mut d: Decision<'_>, mut status: FlinkSessionJobStatus, error: String) -> Plan {
    let stored = d.sj.status.as_ref().and_then(|s| s.error.as_deref());
    if stored != Some(error.as_str()) {
        d.event(true, Reason::RestoreRefused, error.clone());
    }
    status.error = Some(error.clone());
    d.conditions(&mut status, phase::FAILED, &error);
    d.done(status, SLOW)
}

/// A new `savepointRedeployNonce`: the job is ended without a savepoint, and the spec runs
/// from `spec.job.initialSavepointPath` (the user's choice of state, so no age guard).
fn redeploy_from_savepoint(
    mut d: Decision<'_>,
    mut status: FlinkSessionJobStatus,
    job_id: &str,
    state: &str,
    ended: bool,
) -> Plan {
    let Some(path) =
        d.sj.spec
            .job
            .as_ref()
            .and_then(|j| j.initial_savepoint_path.clone())
            .filter(|p| !p.trim().is_empty())
    else {
        return refuse(
            d,
            status,
            "spec.job.savepointRedeployNonce changed, but spec.job.initialSavepointPath is empty: there is no savepoint to redeploy from".to_owned(),
        );
    };
    status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
    if state == flink_job_state::CANCELLING {
        d.conditions(
            &mut status,
            phase::UPDATING,
            &format!("waiting for job {job_id} to be cancelled"),
        );
        return d.done(status, FAST);
    }
    if !ended {
        let note = format!(
            "Cancelling job {job_id} without a savepoint to redeploy from spec.job.initialSavepointPath {path}"
        );
        d.conditions(&mut status, phase::UPDATING, &note);
        d.actions.push(Action::Job(JobAction::Cancel {
            job_id: job_id.to_owned(),
        }));
        d.event(false, Reason::SavepointRedeploy, note);
        let before = status.clone();
        return d.stepped(before, status, FAST);
    }
    d.event(
        false,
        Reason::SavepointRedeploy,
        format!("Redeploying from spec.job.initialSavepointPath {path}"),
    );
    let restore = RestorableState {
        kind: Kind::Savepoint,
        path,
        timestamp_ms: None,
    };
    commit(d, status, Some(restore))
}

/// A new nonce (or the periodic schedule) asks for a snapshot of the running job.
fn trigger_snapshot(
    mut d: Decision<'_>,
    mut status: FlinkSessionJobStatus,
    wanted: (Snapshot, SnapshotTriggerType),
    recorded: &FlinkSessionJobSpec,
) -> Plan {
    let obs = d.obs;
    let facts = obs.facts(d.generation());
    let sj = d.sj;
    snapshots::trigger(&mut status, &sj.spec, recorded, wanted, &facts, &mut d.out());
    let (reason, message) = current_phase(&status, recorded);
    d.conditions(&mut status, reason, &message);
    let before = status.clone();
    d.stepped(before, status, FAST)
}

/// A pending stop-with-savepoint for an upgrade or a suspension.
fn continue_savepoint(mut d: Decision<'_>, mut status: FlinkSessionJobStatus) -> Plan {
    let job_id = recorded_job_id(&status).unwrap_or_default();
    let trigger_id = stop::pending_trigger(&status).unwrap_or_default();
    let obs = d.obs;
    let facts = obs.facts(d.generation());
    let drain = obs.policy.drain && spec::is_suspended(&d.sj.spec);
    match stop::follow(&mut status, &job_id, &trigger_id, drain, &facts, &mut d.out()) {
        Stopped::Completed(state) => commit(d, status, Some(state)),
        Stopped::Resent => {
            let message = stop::under_way(&status, "stopping the job with a savepoint");
            d.conditions(&mut status, phase::UPDATING, &message);
            d.done(status, FAST)
        }
        Stopped::Retry { seconds, note } => {
            d.conditions(&mut status, phase::UPDATING, &format!("{note}; trying again"));
            d.done(status, Next::Within(seconds))
        }
        Stopped::Refused(why) => refuse(d, status, why),
        Stopped::Pending => {
            let message = stop::under_way(&status, "waiting for the savepoint");
            d.conditions(&mut status, phase::UPDATING, &message);
            d.done(status, crate::reconcile::STOPPING)
        }
    }
}

/// Refuses the current generation's change: the job stays as it is until the spec changes.
fn refuse(mut d: Decision<'_>, mut status: FlinkSessionJobStatus, error: String) -> Plan {
    if status.error.as_deref() != Some(error.as_str()) {
        d.event(true, Reason::UpdateFailed, error.clone());
    }
    status.error = Some(error.clone());
    status.observed_generation = d.generation();
    d.conditions(&mut status, phase::UPDATE_FAILED, &error);
    d.done(status, SLOW)
}

/// The previous job has ended: record the new spec with the state to restore (and, for a
/// running spec, the job id to submit under) before anything is submitted.
fn commit(mut d: Decision<'_>, mut status: FlinkSessionJobStatus, restore: Option<RestorableState>) -> Plan {
    let restore_path = restore.as_ref().map(|s| s.path.clone());
    let spec = d.sj.spec.clone();
    let name = d.session_name().to_owned();
    let rs = status.reconciliation_status.get_or_insert_with(Default::default);
    rs.last_reconciled_spec = spec::encode(spec.clone(), false);
    rs.reconciliation_timestamp = Some(d.obs.now_ms);
    status.observed_generation = d.generation();
    status.error = None;
    restore::record(status.job_status_mut(), restore.as_ref());
    if spec::is_suspended(&spec) {
        if let Some(rs) = status.reconciliation_status.as_mut() {
            rs.state = Some(ReconciliationState::Deployed);
        }
        status.lifecycle_state = Some(ResourceLifecycleState::Suspended);
        let message = match &restore_path {
            Some(path) => format!("the job is suspended; it resumes from {path}"),
            None => "the job is suspended without state".to_owned(),
        };
        d.conditions(&mut status, phase::SUSPENDED, &message);
        d.event(false, Reason::Suspended, message);
        return d.done(status, SLOW);
    }
    let job_id = d.obs.fresh_job_id.clone();
    if let Some(rs) = status.reconciliation_status.as_mut() {
        rs.state = Some(ReconciliationState::Upgrading);
    }
    let job = status.job_status_mut();
    job.job_id = Some(job_id.clone());
    job.state = Some(RECONCILING.to_owned());
    job.start_time = None;
    job.update_time = Some(d.obs.now_ms.to_string());
    job.job_name = d.sj.metadata.name.clone();
    status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
    submit(
        d,
        status,
        Submit {
            spec: &spec,
            job_id,
            restore_path,
            session: &name,
        },
        phase::UPDATING,
        &format!("submitting the new spec to session cluster {name}"),
    )
}

/// Deletion behind the finalizer: stop the job (savepoint or cancel), record what it left,
/// then let the resource go.
fn delete(
    mut d: Decision<'_>,
    mut status: FlinkSessionJobStatus,
    has_finalizer: bool,
    recorded: Option<&FlinkSessionJobSpec>,
) -> Plan {
    status.lifecycle_state = Some(ResourceLifecycleState::Deleting);
    if !has_finalizer {
        d.conditions(&mut status, phase::DELETING, "deleted");
        return d.done(status, SLOW);
    }
    let name = d.session_name().to_owned();
    let release = |mut d: Decision<'_>, mut status: FlinkSessionJobStatus, why: String| {
        d.conditions(&mut status, phase::DELETING, &why);
        d.actions.push(Action::RemoveFinalizer);
        d.event(false, Reason::Deleted, why);
        d.done(status, SLOW)
    };
    match &d.obs.session {
        SessionObservation::Missing | SessionObservation::NotSession | SessionObservation::Deleting => {
            return release(
                d,
                status,
                format!("session cluster {name} is gone; nothing runs the job"),
            );
        }
        SessionObservation::NotReady(why) => {
            let message = format!("waiting for session cluster {name} to stop the job: {why}");
            d.conditions(&mut status, phase::DELETING, &message);
            return d.done(status, WAIT);
        }
        SessionObservation::Ready => {}
    }
    let job_id = match (recorded, recorded_job_id(&status)) {
        (Some(r), Some(id)) if !spec::is_suspended(r) => id,
        _ => return release(d, status, "no job runs".to_owned()),
    };
    let state = d.obs.facts(None).observed_state().map(str::to_owned);
    let running = state.as_deref() == Some(flink_job_state::RUNNING);
    let obs = d.obs;
    let facts = obs.facts(d.generation());
    if let Some(trigger_id) = stop::pending_trigger(&status) {
        match deletion::follow(&mut status, &job_id, &trigger_id, &facts, &mut d.out()) {
            DeletionSavepoint::Recorded(path) => {
                d.conditions(
                    &mut status,
                    phase::DELETING,
                    &format!("job {job_id} stopped with savepoint {path}"),
                );
                let before = status.clone();
                d.actions.push(Action::RemoveFinalizer);
                return d.stepped(before, status, SLOW);
            }
            DeletionSavepoint::Resent => {
                d.conditions(&mut status, phase::DELETING, "stopping the job with a savepoint");
                return d.done(status, FAST);
            }
            DeletionSavepoint::Failed(error) => {
                d.conditions(&mut status, phase::DELETING, &error);
                let before = status.clone();
                return d.stepped(before, status, SLOW);
            }
            DeletionSavepoint::Pending => {
                d.conditions(&mut status, phase::DELETING, "waiting for the savepoint");
                return d.done(status, FAST);
            }
            DeletionSavepoint::Abandoned => {}
        }
    }
    match &d.obs.job {
        Some(JobObservation::NotFound) => release(d, status, format!("job {job_id} is gone")),
        Some(JobObservation::Found { state, .. }) if flink_job_state::is_globally_terminal(state) => {
            let why = format!("job {job_id} ended ({state})");
            release(d, status, why)
        }
        Some(JobObservation::Found { state, .. }) if state == flink_job_state::CANCELLING => {
            d.conditions(
                &mut status,
                phase::DELETING,
                &format!("waiting for job {job_id} to be cancelled"),
            );
            d.done(status, FAST)
        }
        Some(JobObservation::Found { state, .. }) => {
            let wants_savepoint = deletion::wants_savepoint(d.sj.spec.job.as_ref(), &obs.policy);
            if wants_savepoint && running {
                d.conditions(
                    &mut status,
                    phase::DELETING,
                    &format!("stopping job {job_id} with a savepoint"),
                );
                deletion::stop_with_savepoint(&mut status, &job_id, &facts, &mut d.out());
            } else {
                let note = if wants_savepoint {
                    format!("Cancelling job {job_id} without a savepoint: it is {state}, not RUNNING")
                } else {
                    format!("Cancelling job {job_id}")
                };
                d.conditions(&mut status, phase::DELETING, &note);
                d.actions.push(Action::Job(JobAction::Cancel {
                    job_id: job_id.clone(),
                }));
                d.event(false, Reason::Deleting, note);
            }
            let before = status.clone();
            d.stepped(before, status, FAST)
        }
        Some(JobObservation::Unreachable(_)) | None => {
            d.conditions(
                &mut status,
                phase::DELETING,
                &format!("waiting for session cluster {name} to answer"),
            );
            d.done(status, WAIT)
        }
    }
}

/// The status after a submission failed (the jar could not be fetched, Flink refused it):
/// the recorded step stays, so the next reconcile submits again under the same job id.
pub fn submission_failed(
    mut status: FlinkSessionJobStatus,
    generation: Option<i64>,
    error: &str,
    now_ms: i64,
) -> FlinkSessionJobStatus {
    status.error = Some(error.to_owned());
    let first = status
        .reconciliation_status
        .as_ref()
        .and_then(|rs| rs.last_reconciled::<FlinkSessionJobSpec>().ok().flatten())
        .is_none_or(|r| r.is_first_deployment());
    let reason = if first {
        phase::DEPLOY_FAILED
    } else {
        phase::UPDATE_FAILED
    };
    set_conditions(&mut status.conditions, generation, reason, error, now_ms);
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use flink_operator_api::common::Condition;
    use flink_operator_api::common::{Checkpoint, Savepoint};
    use serde_json::{Value, json};

    const NOW: i64 = 1_800_000_000_000;

    fn resource(
        spec: Value,
        status: Option<FlinkSessionJobStatus>,
        finalizer: bool,
        deleting: bool,
        generation: i64,
    ) -> FlinkSessionJob {
        let mut value = json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
            "metadata": {"name": "counter", "namespace": "ns", "uid": "u", "generation": generation},
            "spec": spec,
        });
        if finalizer {
            value["metadata"]["finalizers"] = json!([keys::finalizers::FLINK_SESSION_JOB]);
        }
        if deleting {
            value["metadata"]["deletionTimestamp"] = json!("2027-01-15T08:00:00Z");
        }
        let mut sj: FlinkSessionJob = serde_json::from_value(value).unwrap();
        sj.status = status;
        sj
    }

    fn spec(mode: &str) -> Value {
        json!({"deploymentName": "session",
               "flinkConfiguration": {"pipeline.max-parallelism": "8", "kubernetes.operator.job.savepoint-on-deletion": "true"},
               "job": {"jarURI": "file:///jobs/job.jar", "entryClass": "jobs.Counter", "args": ["--keys", "4"],
                       "parallelism": 2, "upgradeMode": mode}})
    }

    /// The spec of `mode` with a changed parallelism and, optionally, a desired job state.
    fn changed(mode: &str, state: Option<&str>) -> Value {
        let mut spec = spec(mode);
        spec["job"]["parallelism"] = json!(1);
        if let Some(state) = state {
            spec["job"]["state"] = json!(state);
        }
        spec
    }

    fn obs(session: SessionObservation, job: Option<JobObservation>) -> Observation {
        Observation {
            session,
            job,
            restricted_artifact_hosts: true,
            fresh_trigger_id: "trigger".into(),
            fresh_job_id: "new-job".into(),
            now_ms: NOW,
            ..Default::default()
        }
    }

    fn ready(job: Option<JobObservation>) -> Observation {
        obs(SessionObservation::Ready, job)
    }

    fn found(state: &str) -> Option<JobObservation> {
        Some(JobObservation::found(state, Some(NOW - 1000)))
    }

    fn not_found() -> Option<JobObservation> {
        Some(JobObservation::NotFound)
    }

    fn condition<'a>(status: &'a FlinkSessionJobStatus, type_: &str) -> &'a Condition {
        status
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.type_.as_deref() == Some(type_))
            .unwrap()
    }

    fn reason(status: &FlinkSessionJobStatus) -> &str {
        condition(status, "Ready").reason.as_deref().unwrap()
    }

    fn submission(plan: &Plan) -> &Submission {
        plan.actions
            .iter()
            .find_map(|a| match a {
                Action::Submit(s) => Some(s),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no submission in {:?}", plan.actions))
    }

    fn recorded_spec(status: &FlinkSessionJobStatus) -> FlinkSessionJobSpec {
        status
            .reconciliation_status
            .as_ref()
            .unwrap()
            .last_reconciled_spec()
            .unwrap()
            .unwrap()
    }

    fn reconciliation_state(status: &FlinkSessionJobStatus) -> Option<ReconciliationState> {
        status.reconciliation_status.as_ref().unwrap().state
    }

    fn job(status: &FlinkSessionJobStatus) -> &JobStatus {
        status.job_status.as_ref().unwrap()
    }

    /// The stored status of a job that runs `spec(mode)` as job `old-job`.
    fn running(mode: &str) -> FlinkSessionJobStatus {
        let first = decide(
            &resource(spec(mode), None, true, false, 1),
            &Observation {
                fresh_job_id: "old-job".into(),
                ..ready(None)
            },
        );
        let submitted = first.status;
        decide(
            &resource(spec(mode), Some(submitted), true, false, 1),
            &ready(found("RUNNING")),
        )
        .status
    }

    #[test]
    fn a_job_waits_for_its_session_cluster_with_one_message_and_one_event() {
        let cases = [
            (
                SessionObservation::Missing,
                "FlinkDeployment session does not exist",
            ),
            (SessionObservation::NotSession, "is an application cluster"),
            (SessionObservation::Deleting, "is being deleted"),
            (
                SessionObservation::NotReady("its JobManager is DEPLOYING".into()),
                "its JobManager is DEPLOYING",
            ),
        ];
        for (session, why) in cases {
            let plan = decide(
                &resource(spec("stateless"), None, false, false, 1),
                &obs(session.clone(), None),
            );
            assert_eq!(plan.actions, [Action::AddFinalizer], "{session:?}");
            let error = plan.status.error.clone().unwrap();
            assert!(
                error.starts_with("waiting for session cluster session: "),
                "{error}"
            );
            assert!(error.contains(why), "{error}");
            assert_eq!(plan.status.lifecycle_state, Some(ResourceLifecycleState::Created));
            assert_eq!(reason(&plan.status), phase::DEPLOYING);
            assert_eq!(plan.requeue, WAIT);
            assert_eq!(plan.events.len(), 1);
            // The next reconcile finds the same message stored: no second Event.
            let again = decide(
                &resource(spec("stateless"), Some(plan.status), true, false, 1),
                &obs(session, None),
            );
            assert!(again.events.is_empty(), "{:?}", again.events);
            assert!(again.actions.is_empty());
        }
    }

    #[test]
    fn the_first_submission_is_recorded_with_its_job_id_before_it_is_sent() {
        let mut with_savepoint = spec("savepoint");
        with_savepoint["job"]["initialSavepointPath"] = json!("file:/sp/initial");
        with_savepoint["job"]["allowNonRestoredState"] = json!(true);
        let plan = decide(
            &resource(with_savepoint.clone(), None, false, false, 1),
            &ready(None),
        );
        let expected = Submission {
            job_id: "new-job".into(),
            jar_uri: Some("file:///jobs/job.jar".into()),
            entry_class: Some("jobs.Counter".into()),
            args: vec!["--keys".into(), "4".into()],
            parallelism: Some(2),
            restore_path: Some("file:/sp/initial".into()),
            allow_non_restored_state: Some(true),
            configuration: [("pipeline.max-parallelism".to_owned(), "8".to_owned())].into(),
            check_artifact_hosts: true,
        };
        assert_eq!(plan.actions, [Action::AddFinalizer, Action::Submit(expected)]);
        let before = plan.status_before.unwrap();
        assert_eq!(
            reconciliation_state(&before),
            Some(ReconciliationState::Upgrading)
        );
        assert_eq!(job(&before).job_id.as_deref(), Some("new-job"));
        assert_eq!(
            job(&before).upgrade_savepoint_path.as_deref(),
            Some("file:/sp/initial")
        );
        assert_eq!(
            recorded_spec(&before),
            resource(with_savepoint, None, true, false, 1).spec
        );
        assert_eq!(
            reconciliation_state(&plan.status),
            Some(ReconciliationState::Deployed)
        );
        assert_eq!(
            plan.status.lifecycle_state,
            Some(ResourceLifecycleState::Deployed)
        );
        assert_eq!(plan.events[0].reason, Reason::Submit);
    }

    #[test]
    fn a_crash_between_recording_and_submitting_submits_under_the_recorded_id_once() {
        let first = decide(&resource(spec("stateless"), None, true, false, 1), &ready(None));
        let recorded = first.status_before.unwrap();
        let sj = resource(spec("stateless"), Some(recorded), true, false, 1);
        // The job never reached Flink: submitted again, same id, not the fresh one.
        let plan = decide(
            &sj,
            &Observation {
                fresh_job_id: "another".into(),
                ..ready(not_found())
            },
        );
        assert_eq!(submission(&plan).job_id, "new-job");
        // It did reach Flink: nothing is submitted, the status catches up.
        let plan = decide(&sj, &ready(found("RUNNING")));
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
        assert_eq!(
            reconciliation_state(&plan.status),
            Some(ReconciliationState::Deployed)
        );
        assert_eq!(job(&plan.status).state.as_deref(), Some("RUNNING"));
        // Flink does not answer: wait, never submit blind.
        let plan = decide(&sj, &ready(Some(JobObservation::Unreachable("timeout".into()))));
        assert!(plan.actions.is_empty());
    }

    #[test]
    fn observed_job_states_become_status_conditions_and_events() {
        use ResourceLifecycleState as L;
        let cases = [
            (found("RUNNING"), L::Stable, phase::RUNNING, "True", false),
            (found("FAILED"), L::Failed, phase::FAILED, "False", true),
            (found("FINISHED"), L::Deployed, phase::SUCCEEDED, "True", false),
            (found("CANCELED"), L::Deployed, phase::CANCELLED, "False", false),
            (
                found("RESTARTING"),
                L::Deployed,
                phase::RESTARTING,
                "False",
                false,
            ),
            (
                found("INITIALIZING"),
                L::Deployed,
                phase::DEPLOYING,
                "False",
                false,
            ),
            (not_found(), L::Deployed, phase::DEPLOY_FAILED, "False", true),
        ];
        let submitted = decide(&resource(spec("stateless"), None, true, false, 1), &ready(None)).status;
        for (observed, lifecycle, phase_, ready_status, warning) in cases {
            let plan = decide(
                &resource(spec("stateless"), Some(submitted.clone()), true, false, 1),
                &ready(observed.clone()),
            );
            assert!(plan.actions.is_empty(), "{observed:?}");
            assert_eq!(plan.status.lifecycle_state, Some(lifecycle), "{observed:?}");
            assert_eq!(reason(&plan.status), phase_, "{observed:?}");
            assert_eq!(
                condition(&plan.status, "Ready").status.as_deref(),
                Some(ready_status),
                "{observed:?}"
            );
            assert_eq!(plan.events.len(), 1, "{observed:?}");
            assert_eq!(plan.events[0].warning, warning, "{observed:?}");
        }
        // No Event while the state stays the same; a running job records its stable spec.
        let stable = running("stateless");
        assert!(
            stable
                .reconciliation_status
                .as_ref()
                .unwrap()
                .last_stable_spec
                .is_some()
        );
        let plan = decide(
            &resource(spec("stateless"), Some(stable), true, false, 1),
            &ready(found("RUNNING")),
        );
        assert!(plan.events.is_empty());
        assert_eq!(plan.requeue, SLOW);
    }

    #[test]
    fn a_stateless_change_cancels_then_records_the_new_spec_and_job_id_then_submits() {
        let sj = |status: FlinkSessionJobStatus| {
            resource(changed("stateless", None), Some(status), true, false, 2)
        };
        // 1. Cancel the running job; the old spec stays recorded until it has ended.
        let plan = decide(&sj(running("stateless")), &ready(found("RUNNING")));
        assert_eq!(
            plan.actions,
            [Action::Job(JobAction::Cancel {
                job_id: "old-job".into()
            })]
        );
        let cancelling = plan.status_before.unwrap();
        assert_eq!(recorded_spec(&cancelling).job.unwrap().parallelism, Some(2));
        assert_eq!(reason(&cancelling), phase::UPDATING);
        assert_eq!(
            cancelling.lifecycle_state,
            Some(ResourceLifecycleState::Upgrading)
        );
        // A crash before the cancel reached Flink: cancelled again.
        let plan = decide(&sj(cancelling.clone()), &ready(found("RUNNING")));
        assert_eq!(
            plan.actions,
            [Action::Job(JobAction::Cancel {
                job_id: "old-job".into()
            })]
        );
        // 2. Cancelling: wait.
        let plan = decide(&sj(cancelling.clone()), &ready(found("CANCELLING")));
        assert!(plan.actions.is_empty());
        // 3. Cancelled: the new spec and job id are recorded before the submission.
        let plan = decide(&sj(cancelling.clone()), &ready(found("CANCELED")));
        let committed = plan.status_before.clone().unwrap();
        assert_eq!(recorded_spec(&committed).job.unwrap().parallelism, Some(1));
        assert_eq!(
            reconciliation_state(&committed),
            Some(ReconciliationState::Upgrading)
        );
        assert_eq!(job(&committed).job_id.as_deref(), Some("new-job"));
        assert_eq!(job(&committed).upgrade_savepoint_path, None);
        assert_eq!(submission(&plan).restore_path, None);
        assert_eq!(submission(&plan).parallelism, Some(1));
        // 4. A crash before the submission: the recorded id is submitted, not a fresh one.
        let plan = decide(
            &sj(committed),
            &Observation {
                fresh_job_id: "yet-another".into(),
                ..ready(not_found())
            },
        );
        assert_eq!(submission(&plan).job_id, "new-job");
    }

    #[test]
    fn a_savepoint_upgrade_goes_step_by_step_and_survives_a_crash_at_each() {
        let sj = |status: FlinkSessionJobStatus| {
            resource(changed("savepoint", None), Some(status), true, false, 2)
        };
        let stop = Action::Job(JobAction::StopWithSavepoint {
            job_id: "old-job".into(),
            trigger_id: "trigger".into(),
            drain: false,
        });
        // 1. The trigger id is recorded before the stop is sent.
        let plan = decide(&sj(running("savepoint")), &ready(found("RUNNING")));
        assert_eq!(plan.actions, std::slice::from_ref(&stop));
        let triggered = plan.status_before.unwrap();
        let info = job(&triggered).savepoint_info.clone().unwrap();
        assert_eq!(info.trigger_id.as_deref(), Some("trigger"));
        assert_eq!(info.trigger_type, Some(SnapshotTriggerType::Upgrade));
        assert_eq!(recorded_spec(&triggered).job.unwrap().parallelism, Some(2));

        let with = |poll: SavepointPoll, job: Option<JobObservation>| Observation {
            savepoint: Some(poll),
            fresh_trigger_id: "other-trigger".into(),
            ..ready(job)
        };
        // Crash before the stop reached Flink: the same stop, same trigger id, again.
        let plan = decide(
            &sj(triggered.clone()),
            &with(SavepointPoll::UnknownTrigger, found("RUNNING")),
        );
        assert_eq!(plan.actions, [stop]);
        // 2. In progress (or the JobManager silent): wait, never block.
        for poll in [
            SavepointPoll::InProgress,
            SavepointPoll::Unreachable("timeout".into()),
        ] {
            let plan = decide(&sj(triggered.clone()), &with(poll, found("RUNNING")));
            assert!(plan.actions.is_empty());
            assert_eq!(reason(&plan.status), phase::UPDATING);
        }
        // 3. Completed: the path, the new spec and the new job id are recorded in one write
        // before the new job is submitted restoring from it.
        let plan = decide(
            &sj(triggered.clone()),
            &with(
                SavepointPoll::Completed("file:/sp/sp-1".into()),
                found("FINISHED"),
            ),
        );
        let committed = plan.status_before.clone().unwrap();
        let recorded_job = job(&committed);
        assert_eq!(
            recorded_job.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/sp-1")
        );
        let info = recorded_job.savepoint_info.as_ref().unwrap();
        assert_eq!(info.trigger_id, None);
        assert_eq!(
            info.last_savepoint.as_ref().unwrap().location.as_deref(),
            Some("file:/sp/sp-1")
        );
        assert_eq!(recorded_job.job_id.as_deref(), Some("new-job"));
        assert_eq!(recorded_spec(&committed).job.unwrap().parallelism, Some(1));
        assert_eq!(submission(&plan).restore_path.as_deref(), Some("file:/sp/sp-1"));
        assert!(plan.events.iter().any(|e| e.reason == Reason::SavepointCompleted));
        // 4. A crash before the submission: the recorded job id and savepoint are used.
        let plan = decide(
            &sj(committed.clone()),
            &Observation {
                fresh_job_id: "another".into(),
                ..ready(not_found())
            },
        );
        assert_eq!(submission(&plan).job_id, "new-job");
        assert_eq!(submission(&plan).restore_path.as_deref(), Some("file:/sp/sp-1"));
        // 5. The job runs: upgraded.
        let deployed = plan.status;
        let plan = decide(&sj(deployed), &ready(found("RUNNING")));
        assert!(plan.actions.is_empty());
        assert_eq!(plan.status.lifecycle_state, Some(ResourceLifecycleState::Stable));
        assert_eq!(reason(&plan.status), phase::RUNNING);
    }

    #[test]
    fn a_stop_that_completes_after_the_spec_was_reverted_still_restores_the_job() {
        let triggered = decide(
            &resource(
                changed("savepoint", None),
                Some(running("savepoint")),
                true,
                false,
                2,
            ),
            &ready(found("RUNNING")),
        )
        .status_before
        .unwrap();
        let reverted = resource(spec("savepoint"), Some(triggered), true, false, 3);
        let plan = decide(
            &reverted,
            &Observation {
                savepoint: Some(SavepointPoll::Completed("file:/sp/sp-2".into())),
                ..ready(found("FINISHED"))
            },
        );
        assert_eq!(submission(&plan).restore_path.as_deref(), Some("file:/sp/sp-2"));
        assert_eq!(submission(&plan).parallelism, Some(2));
    }

    #[test]
    fn a_failed_savepoint_is_retried_within_the_grace_period_then_the_job_keeps_running_until_the_spec_changes_again()
     {
        let triggered = decide(
            &resource(
                changed("savepoint", None),
                Some(running("savepoint")),
                true,
                false,
                2,
            ),
            &ready(found("RUNNING")),
        )
        .status_before
        .unwrap();
        let failed_poll = |ms: i64| Observation {
            savepoint: Some(SavepointPoll::Failed("disk full".into())),
            now_ms: NOW + ms,
            ..ready(found("RUNNING"))
        };
        // Within the grace period: retried after a back-off, the reason said meanwhile.
        let plan = decide(
            &resource(changed("savepoint", None), Some(triggered), true, false, 2),
            &failed_poll(1_000),
        );
        assert!(plan.actions.is_empty());
        assert!(plan.status.error.as_deref().unwrap().contains("disk full"));
        assert_eq!(reason(&plan.status), phase::UPDATING);
        assert!(
            plan.events
                .iter()
                .any(|e| e.reason == Reason::SavepointFailed && e.warning)
        );
        assert_eq!(plan.requeue, Next::Within(2));
        let retrying = plan.status;
        let plan = decide(
            &resource(changed("savepoint", None), Some(retrying.clone()), true, false, 2),
            &Observation {
                now_ms: NOW + 2_000,
                ..ready(found("RUNNING"))
            },
        );
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
        let plan = decide(
            &resource(changed("savepoint", None), Some(retrying), true, false, 2),
            &Observation {
                now_ms: NOW + 3_500,
                ..ready(found("RUNNING"))
            },
        );
        assert!(
            matches!(
                plan.actions[..],
                [Action::Job(JobAction::StopWithSavepoint { .. })]
            ),
            "{:?}",
            plan.actions
        );
        // A failure whose back-off would end after the grace period is tried again when
        // the period ends...
        let retried = plan.status_before.unwrap();
        let plan = decide(
            &resource(changed("savepoint", None), Some(retried.clone()), true, false, 2),
            &failed_poll(58_000),
        );
        assert!(plan.actions.is_empty());
        assert_eq!(plan.requeue, Next::Within(2));
        assert_eq!(reason(&plan.status), phase::UPDATING);
        // ...and one past it ends the update.
        let plan = decide(
            &resource(changed("savepoint", None), Some(retried), true, false, 2),
            &failed_poll(61_000),
        );
        assert!(plan.actions.is_empty());
        assert!(plan.status.error.as_deref().unwrap().contains("disk full"));
        assert_eq!(reason(&plan.status), phase::UPDATE_FAILED);
        assert_eq!(
            condition(&plan.status, "Degraded").status.as_deref(),
            Some("True")
        );
        assert!(
            plan.events
                .iter()
                .any(|e| e.reason == Reason::UpdateFailed && e.warning)
        );
        assert_eq!(recorded_spec(&plan.status).job.unwrap().parallelism, Some(2));
        let failed = plan.status;
        // The same generation is not retried, and keeps its reason...
        let plan = decide(
            &resource(changed("savepoint", None), Some(failed.clone()), true, false, 2),
            &ready(found("RUNNING")),
        );
        assert!(plan.actions.is_empty());
        assert!(plan.events.is_empty());
        assert!(plan.status.error.as_deref().unwrap().contains("disk full"));
        assert_eq!(reason(&plan.status), phase::UPDATE_FAILED);
        // ...a new one is.
        let plan = decide(
            &resource(changed("savepoint", None), Some(failed), true, false, 3),
            &ready(found("RUNNING")),
        );
        assert!(
            matches!(
                plan.actions[..],
                [Action::Job(JobAction::StopWithSavepoint { .. })]
            ),
            "{:?}",
            plan.actions
        );
    }

    #[test]
    fn savepoint_changes_of_jobs_that_are_not_running_wait_or_are_refused() {
        for (state, waits) in [
            ("RESTARTING", true),
            ("INITIALIZING", true),
            ("FAILED", false),
            ("FINISHED", false),
        ] {
            let plan = decide(
                &resource(
                    changed("savepoint", None),
                    Some(running("savepoint")),
                    true,
                    false,
                    2,
                ),
                &ready(found(state)),
            );
            assert!(plan.actions.is_empty(), "{state}");
            let expected = if waits {
                phase::UPDATING
            } else {
                phase::UPDATE_FAILED
            };
            assert_eq!(reason(&plan.status), expected, "{state}");
        }
        // The JobManager knows nothing of the trigger and the job is gone.
        let triggered = decide(
            &resource(
                changed("savepoint", None),
                Some(running("savepoint")),
                true,
                false,
                2,
            ),
            &ready(found("RUNNING")),
        )
        .status_before
        .unwrap();
        for poll in [
            SavepointPoll::UnknownTrigger,
            SavepointPoll::JobGone("no job".into()),
        ] {
            let plan = decide(
                &resource(
                    changed("savepoint", None),
                    Some(triggered.clone()),
                    true,
                    false,
                    2,
                ),
                &Observation {
                    savepoint: Some(poll.clone()),
                    ..ready(not_found())
                },
            );
            assert!(plan.actions.is_empty(), "{poll:?}");
            assert_eq!(reason(&plan.status), phase::UPDATE_FAILED, "{poll:?}");
            assert_eq!(
                job(&plan.status).savepoint_info.as_ref().unwrap().trigger_id,
                None
            );
        }
    }

    /// A savepoint change of a job that has ended restores its last savepoint only while it
    /// is younger than `savepoint.max-age`; a running job is stopped with a new one anyway.
    #[test]
    fn an_ended_job_is_upgraded_from_its_last_savepoint_only_while_it_is_young_enough() {
        let mut before = running("savepoint");
        before
            .job_status
            .as_mut()
            .unwrap()
            .savepoint_info
            .get_or_insert_with(Default::default)
            .last_savepoint = Some(Savepoint {
            time_stamp: Some(NOW - 20 * MIN),
            location: Some("file:///sp/last".into()),
            ..Default::default()
        });
        for (state, max_age_min, restores) in [
            ("FAILED", Some(30), true),
            ("FINISHED", Some(30), true),
            ("CANCELED", Some(30), true),
            ("FAILED", Some(10), false),
            ("FAILED", None, false),
        ] {
            let policy = Policy {
                savepoint_max_age_ms: max_age_min.map(|m| m * MIN),
                ..Policy::default()
            };
            let sj = resource(changed("savepoint", None), Some(before.clone()), true, false, 2);
            let plan = decide(&sj, &with_policy(ready(found(state)), policy.clone()));
            let case = format!("{state}, max-age {max_age_min:?} min");
            if restores {
                assert_eq!(
                    submission(&plan).restore_path.as_deref(),
                    Some("file:///sp/last"),
                    "{case}"
                );
                assert_eq!(
                    job(&plan.status).upgrade_savepoint_path.as_deref(),
                    Some("file:///sp/last"),
                    "{case}: recorded before the submission"
                );
                let event = plan
                    .events
                    .iter()
                    .find(|e| e.reason == Reason::StateFound)
                    .unwrap();
                assert!(event.note.contains("20 min old"), "{case}: {}", event.note);
            } else {
                assert!(plan.actions.is_empty(), "{case}: {:?}", plan.actions);
                assert_eq!(reason(&plan.status), phase::UPDATE_FAILED, "{case}");
                assert!(
                    plan.status
                        .error
                        .as_deref()
                        .unwrap()
                        .contains("savepoint.max-age"),
                    "{case}: the refusal names the setting that would allow it"
                );
            }
            // A running job is stopped with a new savepoint, however young the last one is.
            let plan = decide(&sj, &with_policy(ready(found("RUNNING")), policy));
            assert!(
                matches!(
                    plan.actions.as_slice(),
                    [Action::Job(JobAction::StopWithSavepoint { .. })]
                ),
                "{case}: {:?}",
                plan.actions
            );
        }
    }

    #[test]
    fn a_last_state_change_cancels_then_restores_the_latest_checkpoint_recorded_first() {
        let sj = |status: FlinkSessionJobStatus| {
            resource(changed("last-state", None), Some(status), true, false, 2)
        };
        let plan = decide(&sj(running("last-state")), &ready(found("RUNNING")));
        assert_eq!(
            plan.actions,
            [Action::Job(JobAction::Cancel {
                job_id: "old-job".into()
            })]
        );
        let cancelling = plan.status_before.unwrap();
        let with = |job: Option<JobObservation>, checkpoint: Option<CheckpointLookup>| Observation {
            checkpoint,
            ..ready(job)
        };
        // Cancelled: the checkpoint's path is recorded with the new spec, then submitted.
        let plan = decide(
            &sj(cancelling.clone()),
            &with(
                found("CANCELED"),
                Some(CheckpointLookup::Found {
                    path: "file:/cp/chk-7".into(),
                    timestamp_ms: Some(NOW - 60_000),
                }),
            ),
        );
        let committed = plan.status_before.clone().unwrap();
        assert_eq!(
            job(&committed).upgrade_savepoint_path.as_deref(),
            Some("file:/cp/chk-7")
        );
        assert_eq!(job(&committed).job_id.as_deref(), Some("new-job"));
        let submitted = submission(&plan);
        assert_eq!(submitted.restore_path.as_deref(), Some("file:/cp/chk-7"));
        assert_eq!(
            submitted
                .configuration
                .get(keys::flink::CHECKPOINTING_EXTERNALIZED_RETENTION)
                .map(String::as_str),
            Some("RETAIN_ON_CANCELLATION")
        );
        // A crash before the submission restores the recorded checkpoint.
        let plan = decide(&sj(committed), &ready(not_found()));
        assert_eq!(submission(&plan).restore_path.as_deref(), Some("file:/cp/chk-7"));
        // Statistics not read yet: wait. No checkpoint, or the job gone with it: refused.
        let plan = decide(
            &sj(cancelling.clone()),
            &with(
                found("CANCELED"),
                Some(CheckpointLookup::Unavailable("timeout".into())),
            ),
        );
        assert!(plan.actions.is_empty());
        assert_eq!(reason(&plan.status), phase::UPDATING);
        for (job_observation, lookup) in [
            (found("CANCELED"), CheckpointLookup::None),
            (not_found(), CheckpointLookup::Unavailable("job not found".into())),
        ] {
            let plan = decide(&sj(cancelling.clone()), &with(job_observation, Some(lookup)));
            assert!(plan.actions.is_empty());
            assert_eq!(reason(&plan.status), phase::UPDATE_FAILED);
        }
    }

    #[test]
    fn suspend_stops_as_the_mode_says_and_resume_restores_what_it_left() {
        // Savepoint mode: stop with a savepoint, record it, no new job.
        let suspend = |status| {
            resource(
                changed("savepoint", Some("suspended")),
                Some(status),
                true,
                false,
                2,
            )
        };
        let plan = decide(&suspend(running("savepoint")), &ready(found("RUNNING")));
        assert!(matches!(
            plan.actions[..],
            [Action::Job(JobAction::StopWithSavepoint { .. })]
        ));
        let triggered = plan.status_before.unwrap();
        let plan = decide(
            &suspend(triggered),
            &Observation {
                savepoint: Some(SavepointPoll::Completed("file:/sp/suspend".into())),
                ..ready(found("FINISHED"))
            },
        );
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
        let suspended = plan.status.clone();
        assert_eq!(suspended.lifecycle_state, Some(ResourceLifecycleState::Suspended));
        assert_eq!(reason(&plan.status), phase::SUSPENDED);
        assert_eq!(
            job(&suspended).upgrade_savepoint_path.as_deref(),
            Some("file:/sp/suspend")
        );
        assert_eq!(
            reconciliation_state(&suspended),
            Some(ReconciliationState::Deployed)
        );
        assert!(plan.events.iter().any(|e| e.reason == Reason::Suspended));
        // Stays suspended without looking at the job.
        let plan = decide(&suspend(suspended.clone()), &ready(not_found()));
        assert!(plan.actions.is_empty());
        assert_eq!(
            plan.status.lifecycle_state,
            Some(ResourceLifecycleState::Suspended)
        );
        // Resume: restore from the recorded savepoint under a recorded new job id.
        let plan = decide(
            &resource(
                changed("savepoint", Some("running")),
                Some(suspended.clone()),
                true,
                false,
                3,
            ),
            &ready(found("FINISHED")),
        );
        assert_eq!(
            submission(&plan).restore_path.as_deref(),
            Some("file:/sp/suspend")
        );
        assert_eq!(
            job(&plan.status_before.unwrap()).job_id.as_deref(),
            Some("new-job")
        );
        // Resuming in stateless mode starts from nothing.
        let plan = decide(
            &resource(
                changed("stateless", Some("running")),
                Some(suspended),
                true,
                false,
                3,
            ),
            &ready(found("FINISHED")),
        );
        assert_eq!(submission(&plan).restore_path, None);

        // Stateless mode: cancel, then suspended without state.
        let suspend = |status| {
            resource(
                changed("stateless", Some("suspended")),
                Some(status),
                true,
                false,
                2,
            )
        };
        let plan = decide(&suspend(running("stateless")), &ready(found("RUNNING")));
        assert_eq!(
            plan.actions,
            [Action::Job(JobAction::Cancel {
                job_id: "old-job".into()
            })]
        );
        let plan = decide(&suspend(plan.status_before.unwrap()), &ready(found("CANCELED")));
        assert!(plan.actions.is_empty());
        assert_eq!(
            plan.status.lifecycle_state,
            Some(ResourceLifecycleState::Suspended)
        );
        assert_eq!(job(&plan.status).upgrade_savepoint_path, None);
        // A suspended first spec submits nothing.
        let plan = decide(
            &resource(changed("stateless", Some("suspended")), None, true, false, 1),
            &ready(None),
        );
        assert!(plan.actions.is_empty());
        assert_eq!(reason(&plan.status), phase::SUSPENDED);
    }

    #[test]
    fn a_spec_changed_again_before_the_submission_is_the_one_submitted() {
        let first = decide(&resource(spec("stateless"), None, true, false, 1), &ready(None));
        let recorded = first.status_before.unwrap();
        let plan = decide(
            &resource(changed("stateless", None), Some(recorded.clone()), true, false, 2),
            &ready(not_found()),
        );
        assert_eq!(submission(&plan).parallelism, Some(1));
        assert_eq!(submission(&plan).job_id, "new-job");
        assert_eq!(
            recorded_spec(&plan.status_before.unwrap())
                .job
                .unwrap()
                .parallelism,
            Some(1)
        );
        // Suspended before it was submitted: nothing is submitted.
        let plan = decide(
            &resource(
                changed("stateless", Some("suspended")),
                Some(recorded),
                true,
                false,
                2,
            ),
            &ready(not_found()),
        );
        assert!(plan.actions.is_empty());
        assert_eq!(
            plan.status.lifecycle_state,
            Some(ResourceLifecycleState::Suspended)
        );
    }

    #[test]
    fn deletion_stops_the_job_records_its_savepoint_then_releases_the_finalizer() {
        let deleting = |spec: Value, status: Option<FlinkSessionJobStatus>, finalizer| {
            resource(spec, status, finalizer, true, 1)
        };
        let cancel_only = {
            let mut s = spec("stateless");
            s["flinkConfiguration"] = json!({});
            s
        };
        let release = [Action::RemoveFinalizer];
        // The session cluster is gone, or nothing was ever submitted: released at once.
        for session in [
            SessionObservation::Missing,
            SessionObservation::Deleting,
            SessionObservation::NotSession,
        ] {
            let plan = decide(
                &deleting(cancel_only.clone(), Some(running("stateless")), true),
                &obs(session, None),
            );
            assert_eq!(plan.actions, release);
            assert_eq!(
                plan.status.lifecycle_state,
                Some(ResourceLifecycleState::Deleting)
            );
            assert_eq!(reason(&plan.status), phase::DELETING);
        }
        let plan = decide(&deleting(cancel_only.clone(), None, true), &ready(None));
        assert_eq!(plan.actions, release);
        // No finalizer: nothing to do.
        let plan = decide(&deleting(cancel_only.clone(), None, false), &ready(None));
        assert!(plan.actions.is_empty());
        // The cluster is not ready: wait.
        let plan = decide(
            &deleting(cancel_only.clone(), Some(running("stateless")), true),
            &obs(
                SessionObservation::NotReady("its JobManager is DEPLOYING".into()),
                None,
            ),
        );
        assert!(plan.actions.is_empty());
        // Cancel, wait, release.
        let plan = decide(
            &deleting(cancel_only.clone(), Some(running("stateless")), true),
            &ready(found("RUNNING")),
        );
        assert_eq!(
            plan.actions,
            [Action::Job(JobAction::Cancel {
                job_id: "old-job".into()
            })]
        );
        for (job_observation, actions) in [
            (found("CANCELLING"), vec![]),
            (found("CANCELED"), release.to_vec()),
            (not_found(), release.to_vec()),
        ] {
            let plan = decide(
                &deleting(cancel_only.clone(), Some(running("stateless")), true),
                &ready(job_observation.clone()),
            );
            assert_eq!(plan.actions, actions, "{job_observation:?}");
        }
        // With savepoint-on-deletion: stop with a savepoint under a recorded trigger id.
        let sp = spec("savepoint");
        let observation = Observation {
            ..ready(found("RUNNING"))
        };
        let plan = decide(
            &deleting(sp.clone(), Some(running("savepoint")), true),
            &observation,
        );
        assert_eq!(
            plan.actions,
            [Action::Job(JobAction::StopWithSavepoint {
                job_id: "old-job".into(),
                trigger_id: "trigger".into(),
                drain: false
            })]
        );
        let triggered = plan.status_before.unwrap();
        // The path is written before the finalizer goes.
        let plan = decide(
            &deleting(sp.clone(), Some(triggered.clone()), true),
            &Observation {
                savepoint: Some(SavepointPoll::Completed("file:/sp/last".into())),
                ..ready(found("FINISHED"))
            },
        );
        assert_eq!(plan.actions, release);
        assert_eq!(
            job(&plan.status_before.unwrap())
                .upgrade_savepoint_path
                .as_deref(),
            Some("file:/sp/last")
        );
        // A failed savepoint is reported and tried again, never skipped.
        let plan = decide(
            &deleting(sp.clone(), Some(triggered.clone()), true),
            &Observation {
                savepoint: Some(SavepointPoll::Failed("disk full".into())),
                ..ready(found("RUNNING"))
            },
        );
        assert!(plan.actions.is_empty());
        assert!(
            plan.events
                .iter()
                .any(|e| e.warning && e.note.contains("disk full"))
        );
        let failed = plan.status_before.unwrap();
        let plan = decide(&deleting(sp, Some(failed), true), &observation);
        assert!(matches!(
            plan.actions[..],
            [Action::Job(JobAction::StopWithSavepoint { .. })]
        ));
    }

    #[test]
    fn invalid_specs_and_unreadable_records_are_reported_not_acted_on() {
        let plan = decide(
            &resource(spec("stateless"), None, true, false, 1),
            &Observation {
                violations: vec!["spec.job.jarURI: scheme \"ftp\" is not in the allowlist".into()],
                ..ready(None)
            },
        );
        assert!(plan.actions.is_empty());
        assert_eq!(reason(&plan.status), phase::DEPLOY_FAILED);
        assert!(plan.events.iter().any(|e| e.reason == Reason::ValidationError));
        let mut broken = running("stateless");
        broken
            .reconciliation_status
            .as_mut()
            .unwrap()
            .last_reconciled_spec = Some("{not json".into());
        let plan = decide(
            &resource(spec("stateless"), Some(broken), true, false, 1),
            &ready(not_found()),
        );
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
        assert!(
            plan.status
                .error
                .as_deref()
                .unwrap()
                .contains("lastReconciledSpec")
        );
    }

    #[test]
    fn a_failed_submission_keeps_the_recorded_step_and_says_why() {
        let first = decide(&resource(spec("stateless"), None, true, false, 1), &ready(None));
        let status = submission_failed(
            first.status_before.unwrap(),
            Some(1),
            "spec.job.jarURI \"s3://b/j.jar\": scheme \"s3\" is not supported",
            NOW,
        );
        assert_eq!(reason(&status), phase::DEPLOY_FAILED);
        assert_eq!(
            reconciliation_state(&status),
            Some(ReconciliationState::Upgrading)
        );
        assert_eq!(job(&status).job_id.as_deref(), Some("new-job"));
        assert!(status.error.as_deref().unwrap().contains("s3"));
    }

    #[test]
    fn conditions_read_back_keep_their_transition_time_while_their_status_holds() {
        let at = |now_ms: i64, job| Observation { now_ms, ..ready(job) };
        let submitted = decide(&resource(spec("stateless"), None, true, false, 1), &ready(None)).status;
        let running = decide(
            &resource(spec("stateless"), Some(submitted), true, false, 1),
            &at(NOW, found("RUNNING")),
        )
        .status;
        // Stored and read back: the conditions are part of the status type.
        let value = serde_json::to_value(&running).unwrap();
        assert!(value["conditions"].is_array());
        let stored: FlinkSessionJobStatus = serde_json::from_value(value).unwrap();
        assert_eq!(stored, running);

        let later = decide(
            &resource(spec("stateless"), Some(stored), true, false, 1),
            &at(NOW + 60_000, found("RUNNING")),
        )
        .status;
        for type_ in ["Ready", "Progressing", "Degraded"] {
            assert_eq!(
                condition(&later, type_).last_transition_time.as_deref(),
                Some("2027-01-15T08:00:00Z"),
                "{type_}"
            );
        }
        let failed = decide(
            &resource(spec("stateless"), Some(later), true, false, 1),
            &at(NOW + 120_000, found("FAILED")),
        )
        .status;
        assert_eq!(condition(&failed, "Degraded").status.as_deref(), Some("True"));
        assert_eq!(
            condition(&failed, "Degraded").last_transition_time.as_deref(),
            Some("2027-01-15T08:02:00Z")
        );
        assert_eq!(
            condition(&failed, "Ready").last_transition_time.as_deref(),
            Some("2027-01-15T08:02:00Z")
        );
        // Progressing was False before and still is.
        assert_eq!(
            condition(&failed, "Progressing").last_transition_time.as_deref(),
            Some("2027-01-15T08:00:00Z")
        );
    }

    const MIN: i64 = 60_000;

    /// `observation` with the given operator settings.
    fn with_policy(observation: Observation, policy: Policy) -> Observation {
        Observation {
            policy,
            ..observation
        }
    }

    fn max_age(minutes: i64) -> Policy {
        Policy {
            restore_max_state_age_ms: Some(minutes * MIN),
            ..Policy::default()
        }
    }

    fn checkpoint_at(path: &str, at: i64) -> Option<CheckpointLookup> {
        Some(CheckpointLookup::Found {
            path: path.into(),
            timestamp_ms: Some(at),
        })
    }

    #[test]
    fn a_resume_is_refused_when_the_state_the_suspension_left_is_too_old() {
        let suspend = |status| {
            resource(
                changed("savepoint", Some("suspended")),
                Some(status),
                true,
                false,
                2,
            )
        };
        let then = NOW - 120 * MIN;
        let triggered = decide(
            &suspend(running("savepoint")),
            &Observation {
                now_ms: then,
                ..ready(found("RUNNING"))
            },
        )
        .status_before
        .unwrap();
        let suspended = decide(
            &suspend(triggered),
            &Observation {
                now_ms: then,
                savepoint: Some(SavepointPoll::Completed("file:/sp/suspend".into())),
                ..ready(found("FINISHED"))
            },
        )
        .status;
        let resume = |status| {
            resource(
                changed("savepoint", Some("running")),
                Some(status),
                true,
                false,
                3,
            )
        };
        // Two hours old, one allowed: not started, UpdateFailed, the state and its age named.
        let plan = decide(
            &resume(suspended.clone()),
            &with_policy(ready(not_found()), max_age(60)),
        );
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
        assert!(plan.status_before.is_none());
        assert_eq!(reason(&plan.status), phase::UPDATE_FAILED);
        let error = plan.status.error.clone().unwrap();
        assert!(
            error.contains("savepoint file:/sp/suspend") && error.contains("2 h 0 min old"),
            "{error}"
        );
        assert!(
            plan.events
                .iter()
                .any(|e| e.warning && e.reason == Reason::UpdateFailed && e.note == error)
        );
        assert_eq!(
            plan.status.lifecycle_state,
            Some(ResourceLifecycleState::Suspended)
        );
        // The refusal holds for this generation, without a second Event.
        let again = decide(
            &resume(plan.status),
            &with_policy(ready(not_found()), max_age(60)),
        );
        assert!(again.actions.is_empty());
        assert!(again.events.is_empty());
        assert_eq!(reason(&again.status), phase::UPDATE_FAILED);
        // Young enough: resumed from it.
        let plan = decide(&resume(suspended), &with_policy(ready(not_found()), max_age(180)));
        assert_eq!(
            submission(&plan).restore_path.as_deref(),
            Some("file:/sp/suspend")
        );
    }

    #[test]
    fn restores_of_a_cancelled_job_pass_the_restore_age_guard() {
        // (name, mode, take-savepoint, last savepoint's age, checkpoint found, allowed age,
        //  Ok(restored path) or Err(part of the refusal))
        type Case<'a> = (
            &'a str,
            &'a str,
            bool,
            Option<i64>,
            Option<CheckpointLookup>,
            i64,
            Result<&'a str, &'a str>,
        );
        let cases: Vec<Case> = vec![
            (
                "last-state, young checkpoint",
                "last-state",
                true,
                None,
                checkpoint_at("file:/cp/chk-7", NOW - MIN),
                60,
                Ok("file:/cp/chk-7"),
            ),
            (
                "last-state, old checkpoint",
                "last-state",
                true,
                None,
                checkpoint_at("file:/cp/chk-7", NOW - 120 * MIN),
                60,
                Err("checkpoint file:/cp/chk-7, is 2 h 0 min old"),
            ),
            (
                "last-state, checkpoint of unknown age",
                "last-state",
                true,
                None,
                Some(CheckpointLookup::Found {
                    path: "file:/cp/chk-7".into(),
                    timestamp_ms: None,
                }),
                60,
                Err("the age of checkpoint file:/cp/chk-7 is unknown"),
            ),
            (
                "no savepoint: the newer checkpoint",
                "savepoint",
                false,
                Some(30 * MIN),
                checkpoint_at("file:/cp/chk-9", NOW - MIN),
                60,
                Ok("file:/cp/chk-9"),
            ),
            (
                "no savepoint: the savepoint when no checkpoint completed",
                "savepoint",
                false,
                Some(30 * MIN),
                Some(CheckpointLookup::None),
                60,
                Ok("file:/sp/manual"),
            ),
            (
                "no savepoint: nothing to restore",
                "savepoint",
                false,
                None,
                Some(CheckpointLookup::None),
                60,
                Err("no checkpoint or savepoint of the job is known to restore from"),
            ),
        ];
        for (name, mode, take_savepoint, savepoint_age, lookup, allowed, expected) in cases {
            let policy = Policy {
                take_savepoint,
                ..max_age(allowed)
            };
            let sj =
                |status: FlinkSessionJobStatus| resource(changed(mode, None), Some(status), true, false, 2);
            let mut status = running(mode);
            if let Some(age) = savepoint_age {
                status
                    .job_status_mut()
                    .savepoint_info
                    .get_or_insert_with(Default::default)
                    .last_savepoint = Some(Savepoint {
                    time_stamp: Some(NOW - age),
                    location: Some("file:/sp/manual".into()),
                    trigger_type: Some(SnapshotTriggerType::Manual),
                    ..Default::default()
                });
            }
            // 1. The running job is cancelled (no savepoint), recorded first.
            let plan = decide(&sj(status), &with_policy(ready(found("RUNNING")), policy.clone()));
            assert_eq!(
                plan.actions,
                [Action::Job(JobAction::Cancel {
                    job_id: "old-job".into()
                })],
                "{name}"
            );
            let cancelling = plan.status_before.unwrap();
            // A crash before the cancel reached Flink: cancelled again.
            let plan = decide(
                &sj(cancelling.clone()),
                &with_policy(ready(found("RUNNING")), policy.clone()),
            );
            assert!(
                matches!(plan.actions[..], [Action::Job(JobAction::Cancel { .. })]),
                "{name}"
            );
            // 2. Cancelled: the state is guarded, then recorded with the new spec.
            let plan = decide(
                &sj(cancelling),
                &with_policy(
                    Observation {
                        checkpoint: lookup,
                        ..ready(found("CANCELED"))
                    },
                    policy.clone(),
                ),
            );
            match expected {
                Ok(path) => {
                    assert_eq!(submission(&plan).restore_path.as_deref(), Some(path), "{name}");
                    assert_eq!(
                        submission(&plan)
                            .configuration
                            .get(keys::flink::CHECKPOINTING_EXTERNALIZED_RETENTION)
                            .map(String::as_str),
                        Some("RETAIN_ON_CANCELLATION"),
                        "{name}"
                    );
                    let committed = plan.status_before.unwrap();
                    assert_eq!(
                        job(&committed).upgrade_savepoint_path.as_deref(),
                        Some(path),
                        "{name}"
                    );
                    // 3. A crash before the submission: the recorded state, not a new look.
                    let plan = decide(&sj(committed), &with_policy(ready(not_found()), policy));
                    assert_eq!(submission(&plan).restore_path.as_deref(), Some(path), "{name}");
                    assert_eq!(submission(&plan).job_id, "new-job", "{name}");
                }
                Err(part) => {
                    assert!(plan.actions.is_empty(), "{name}: {:?}", plan.actions);
                    assert_eq!(reason(&plan.status), phase::UPDATE_FAILED, "{name}");
                    let error = plan.status.error.clone().unwrap();
                    assert!(error.contains(part), "{name}: {error}");
                    assert!(plan.events.iter().any(|e| e.warning && e.note == error), "{name}");
                }
            }
        }
    }

    #[test]
    fn a_running_job_whose_newest_state_is_too_old_is_not_cancelled_for_a_restore() {
        for (mode, take_savepoint) in [("last-state", true), ("savepoint", false)] {
            let plan = decide(
                &resource(changed(mode, None), Some(running(mode)), true, false, 2),
                &with_policy(
                    Observation {
                        checkpoint: checkpoint_at("file:/cp/chk-3", NOW - 90 * MIN),
                        ..ready(found("RUNNING"))
                    },
                    Policy {
                        take_savepoint,
                        ..max_age(60)
                    },
                ),
            );
            assert!(plan.actions.is_empty(), "{mode}: {:?}", plan.actions);
            assert_eq!(reason(&plan.status), phase::UPDATE_FAILED, "{mode}");
            let error = plan.status.error.unwrap();
            assert!(
                error.contains("checkpoint file:/cp/chk-3, is 90 min old") && error.contains("keeps running"),
                "{error}"
            );
        }
        // Without a savepoint and without any state to restore: not cancelled either.
        let plan = decide(
            &resource(
                changed("savepoint", None),
                Some(running("savepoint")),
                true,
                false,
                2,
            ),
            &with_policy(
                Observation {
                    checkpoint: Some(CheckpointLookup::None),
                    ..ready(found("RUNNING"))
                },
                Policy {
                    take_savepoint: false,
                    ..Policy::default()
                },
            ),
        );
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
        assert!(plan.status.error.unwrap().contains("no checkpoint or savepoint"));
    }

    #[test]
    fn a_last_state_suspension_records_the_checkpoint_age_for_the_resume_guard() {
        let suspend = |status| {
            resource(
                changed("last-state", Some("suspended")),
                Some(status),
                true,
                false,
                2,
            )
        };
        let cancelling = decide(&suspend(running("last-state")), &ready(found("RUNNING")))
            .status_before
            .unwrap();
        // Suspending is not guarded: the state is kept for the resume.
        let suspended = decide(
            &suspend(cancelling),
            &with_policy(
                Observation {
                    checkpoint: checkpoint_at("file:/cp/chk-4", NOW - 90 * MIN),
                    ..ready(found("CANCELED"))
                },
                max_age(60),
            ),
        )
        .status;
        assert_eq!(reason(&suspended), phase::SUSPENDED);
        assert_eq!(
            job(&suspended)
                .checkpoint_info
                .as_ref()
                .unwrap()
                .last_checkpoint
                .as_ref()
                .unwrap()
                .time_stamp,
            Some(NOW - 90 * MIN)
        );
        let plan = decide(
            &resource(
                changed("last-state", Some("running")),
                Some(suspended),
                true,
                false,
                3,
            ),
            &with_policy(ready(not_found()), max_age(60)),
        );
        assert!(plan.actions.is_empty());
        assert!(
            plan.status
                .error
                .unwrap()
                .contains("resuming: the newest state, checkpoint file:/cp/chk-4, is 90 min old")
        );
    }

    #[test]
    fn changes_of_the_upgrade_mode_or_operator_keys_alone_are_recorded_without_ending_the_job() {
        let edit = |base: &str, change: &dyn Fn(&mut Value)| {
            let mut s = spec(base);
            change(&mut s);
            s
        };
        // (name, the stored status's mode, the new spec)
        let cases: Vec<(&str, &str, Value)> = vec![
            (
                "upgrade mode",
                "stateless",
                edit("stateless", &|s: &mut Value| {
                    s["job"]["upgradeMode"] = json!("savepoint")
                }),
            ),
            (
                "operator key added",
                "stateless",
                edit("stateless", &|s: &mut Value| {
                    s["flinkConfiguration"]["kubernetes.operator.job.restart.failed"] = json!("true")
                }),
            ),
            (
                "operator keys removed",
                "savepoint",
                edit("savepoint", &|s: &mut Value| {
                    s["flinkConfiguration"] = json!({"pipeline.max-parallelism": "8"})
                }),
            ),
            (
                "upgrade mode and operator key",
                "last-state",
                edit("last-state", &|s: &mut Value| {
                    s["job"]["upgradeMode"] = json!("stateless");
                    s["flinkConfiguration"]["kubernetes.operator.job.restore.max-state-age"] = json!("1 h");
                }),
            ),
        ];
        for (name, mode, new_spec) in cases {
            let sj = resource(new_spec.clone(), Some(running(mode)), true, false, 2);
            let plan = decide(&sj, &ready(found("RUNNING")));
            assert!(plan.actions.is_empty(), "{name}: {:?}", plan.actions);
            assert!(plan.status_before.is_none(), "{name}");
            assert_eq!(recorded_spec(&plan.status), sj.spec, "{name}");
            assert_eq!(plan.status.observed_generation, Some(2), "{name}");
            assert_eq!(reason(&plan.status), phase::RUNNING, "{name}");
            assert_eq!(job(&plan.status).job_id.as_deref(), Some("old-job"), "{name}");
            // Recorded in the one write after the (no) actions: a crash before it decides the
            // same again, and once written nothing more happens.
            assert_eq!(decide(&sj, &ready(found("RUNNING"))), plan, "{name}");
            let again = decide(
                &resource(new_spec, Some(plan.status), true, false, 2),
                &ready(found("RUNNING")),
            );
            assert!(again.actions.is_empty(), "{name}");
            assert!(again.events.is_empty(), "{name}");
        }
        // The recorded mode is the one the next change uses.
        let mode_changed = decide(
            &resource(
                edit("stateless", &|s: &mut Value| {
                    s["job"]["upgradeMode"] = json!("savepoint")
                }),
                Some(running("stateless")),
                true,
                false,
                2,
            ),
            &ready(found("RUNNING")),
        )
        .status;
        let plan = decide(
            &resource(changed("savepoint", None), Some(mode_changed), true, false, 3),
            &ready(found("RUNNING")),
        );
        assert!(
            matches!(
                plan.actions[..],
                [Action::Job(JobAction::StopWithSavepoint { .. })]
            ),
            "{:?}",
            plan.actions
        );
        // A mode change with another change ends the job as the new mode says.
        let plan = decide(
            &resource(
                changed("last-state", None),
                Some(running("stateless")),
                true,
                false,
                2,
            ),
            &ready(found("RUNNING")),
        );
        assert_eq!(
            plan.actions,
            [Action::Job(JobAction::Cancel {
                job_id: "old-job".into()
            })]
        );
        // While suspended, a mode change is recorded and nothing is submitted.
        let suspended = decide(
            &resource(
                changed("stateless", Some("suspended")),
                Some(
                    decide(
                        &resource(
                            changed("stateless", Some("suspended")),
                            Some(running("stateless")),
                            true,
                            false,
                            2,
                        ),
                        &ready(found("RUNNING")),
                    )
                    .status_before
                    .unwrap(),
                ),
                true,
                false,
                2,
            ),
            &ready(found("CANCELED")),
        )
        .status;
        let plan = decide(
            &resource(
                changed("last-state", Some("suspended")),
                Some(suspended),
                true,
                false,
                3,
            ),
            &ready(not_found()),
        );
        assert!(plan.actions.is_empty());
        assert_eq!(reason(&plan.status), phase::SUSPENDED);
        assert_eq!(
            recorded_spec(&plan.status).job.unwrap().upgrade_mode,
            Some(UpgradeMode::LastState)
        );
    }

    /// `spec(mode)` with `spec.job.<field>` set to `nonce`.
    fn with_nonce(mode: &str, field: &str, nonce: i64) -> Value {
        let mut s = spec(mode);
        s["job"][field] = json!(nonce);
        s
    }

    #[test]
    fn snapshot_nonces_take_a_snapshot_of_the_running_job_step_by_step() {
        // (nonce field, trigger action, completed result)
        let cases = [
            (
                "savepointTriggerNonce",
                Action::Job(JobAction::TriggerSavepoint {
                    job_id: "old-job".into(),
                    trigger_id: "trigger".into(),
                }),
                "file:/sp/manual-1",
            ),
            (
                "checkpointTriggerNonce",
                Action::Job(JobAction::TriggerCheckpoint {
                    job_id: "old-job".into(),
                    trigger_id: "trigger".into(),
                }),
                "17",
            ),
        ];
        for (field, trigger, result) in cases {
            let savepoint = field == "savepointTriggerNonce";
            let sj = |status: FlinkSessionJobStatus, nonce: i64, generation: i64| {
                resource(
                    with_nonce("savepoint", field, nonce),
                    Some(status),
                    true,
                    false,
                    generation,
                )
            };
            let poll = |poll: SavepointPoll, job: Option<JobObservation>| {
                let mut observation = Observation {
                    fresh_trigger_id: "other-trigger".into(),
                    ..ready(job)
                };
                if savepoint {
                    observation.savepoint = Some(poll);
                } else {
                    observation.manual_checkpoint = Some(poll);
                }
                observation
            };
            // 1. The nonce and the trigger id are recorded before the trigger; the job runs on.
            let plan = decide(&sj(running("savepoint"), 1, 2), &ready(found("RUNNING")));
            assert_eq!(plan.actions, std::slice::from_ref(&trigger), "{field}");
            let triggered = plan.status_before.clone().unwrap();
            assert_eq!(plan.status, triggered, "{field}");
            assert_eq!(reason(&triggered), phase::RUNNING, "{field}");
            let recorded_job = recorded_spec(&triggered).job.unwrap();
            let (recorded_nonce, trigger_id) = if savepoint {
                let info = job(&triggered).savepoint_info.clone().unwrap();
                assert_eq!(info.trigger_type, Some(SnapshotTriggerType::Manual));
                (recorded_job.savepoint_trigger_nonce, info.trigger_id)
            } else {
                let info = job(&triggered).checkpoint_info.clone().unwrap();
                assert_eq!(info.trigger_type, Some(SnapshotTriggerType::Manual));
                (recorded_job.checkpoint_trigger_nonce, info.trigger_id)
            };
            assert_eq!(recorded_nonce, Some(1), "{field}");
            assert_eq!(trigger_id.as_deref(), Some("trigger"), "{field}");
            assert!(
                plan.events
                    .iter()
                    .any(|e| e.reason.as_str().ends_with("Triggered"))
            );
            // Crash before the trigger reached Flink: sent again under the recorded id.
            let plan = decide(
                &sj(triggered.clone(), 1, 2),
                &poll(SavepointPoll::UnknownTrigger, found("RUNNING")),
            );
            assert_eq!(plan.actions, std::slice::from_ref(&trigger), "{field}");
            // 2. In progress, or the JobManager silent: looked at again soon, nothing sent.
            for pending in [
                SavepointPoll::InProgress,
                SavepointPoll::Unreachable("timeout".into()),
            ] {
                let plan = decide(&sj(triggered.clone(), 1, 2), &poll(pending, found("RUNNING")));
                assert!(plan.actions.is_empty(), "{field}");
                assert_eq!(plan.requeue, FAST, "{field}");
            }
            // 3. Completed: recorded with its nonce, the trigger cleared.
            let plan = decide(
                &sj(triggered.clone(), 1, 2),
                &poll(SavepointPoll::Completed(result.into()), found("RUNNING")),
            );
            assert!(plan.actions.is_empty(), "{field}");
            let done = plan.status.clone();
            let job_done = job(&done);
            if savepoint {
                let info = job_done.savepoint_info.clone().unwrap();
                assert_eq!(info.trigger_id, None);
                let last = info.last_savepoint.clone().unwrap();
                assert_eq!(last.location.as_deref(), Some(result));
                assert_eq!(last.trigger_nonce, Some(1));
                assert_eq!(last.trigger_type, Some(SnapshotTriggerType::Manual));
                assert_eq!(info.savepoint_history, Some(vec![last]));
                assert!(plan.events.iter().any(|e| e.reason == Reason::SavepointCompleted));
            } else {
                let info = job_done.checkpoint_info.clone().unwrap();
                assert_eq!(info.trigger_id, None);
                let last = info.last_checkpoint.unwrap();
                assert_eq!(last.trigger_nonce, Some(1));
                assert_eq!(last.time_stamp, Some(NOW));
                assert!(
                    plan.events
                        .iter()
                        .any(|e| e.reason == Reason::CheckpointCompleted)
                );
            }
            // The same nonce asks for nothing more; a new one for another snapshot.
            let plan = decide(&sj(done.clone(), 1, 2), &ready(found("RUNNING")));
            assert!(plan.actions.is_empty(), "{field}");
            let plan = decide(&sj(done, 2, 3), &ready(found("RUNNING")));
            assert_eq!(plan.actions.len(), 1, "{field}");
            // Failed: reported, cleared, not tried again for the same nonce.
            let plan = decide(
                &sj(triggered.clone(), 1, 2),
                &poll(SavepointPoll::Failed("disk full".into()), found("RUNNING")),
            );
            assert!(plan.actions.is_empty(), "{field}");
            assert!(
                plan.events
                    .iter()
                    .any(|e| e.warning && e.note.contains("disk full")),
                "{field}"
            );
            let plan = decide(&sj(plan.status, 1, 2), &ready(found("RUNNING")));
            assert!(plan.actions.is_empty(), "{field}");
            // A job that is not running: the nonce waits, unrecorded.
            let plan = decide(&sj(running("savepoint"), 1, 2), &ready(found("RESTARTING")));
            assert!(plan.actions.is_empty(), "{field}");
            assert!(plan.status_before.is_none(), "{field}");
        }
    }

    /// Periodic savepoints: the first an interval after the job started, recorded before it
    /// is triggered, into the history when it completes; a failure waits a whole interval.
    #[test]
    fn periodic_savepoints_are_taken_an_interval_apart_and_recorded_in_the_history() {
        let every_10_min = |job: Option<JobObservation>, poll: Option<SavepointPoll>| Observation {
            savepoint: poll,
            ..with_policy(
                ready(job),
                Policy {
                    periodic_savepoint_ms: Some(10 * MIN),
                    ..Policy::default()
                },
            )
        };
        let started =
            |minutes_ago: i64| Some(JobObservation::found("RUNNING", Some(NOW - minutes_ago * MIN)));
        let sj = |status: FlinkSessionJobStatus| resource(spec("savepoint"), Some(status), true, false, 1);
        // Not at the start, nor before an interval has passed.
        for minutes in [0, 9] {
            let plan = decide(&sj(running("savepoint")), &every_10_min(started(minutes), None));
            assert!(plan.actions.is_empty(), "{minutes} min: {:?}", plan.actions);
        }
        // Due: the trigger is recorded first, with no nonce recorded.
        let plan = decide(&sj(running("savepoint")), &every_10_min(started(10), None));
        assert_eq!(
            plan.actions,
            [Action::Job(JobAction::TriggerSavepoint {
                job_id: "old-job".into(),
                trigger_id: "trigger".into(),
            })]
        );
        let triggered = plan.status_before.unwrap();
        let info = job(&triggered).savepoint_info.clone().unwrap();
        assert_eq!(info.trigger_type, Some(SnapshotTriggerType::Periodic));
        assert_eq!(info.trigger_timestamp, Some(NOW));
        assert_eq!(recorded_spec(&triggered), recorded_spec(&running("savepoint")));
        // Completed: the last savepoint and in the history; the schedule moves to the trigger.
        let done = decide(
            &sj(triggered.clone()),
            &every_10_min(
                started(10),
                Some(SavepointPoll::Completed("file:/sp/periodic-1".into())),
            ),
        );
        let info = job(&done.status).savepoint_info.clone().unwrap();
        assert_eq!(info.trigger_id, None);
        let last = info.last_savepoint.unwrap();
        assert_eq!(last.location.as_deref(), Some("file:/sp/periodic-1"));
        assert_eq!(last.trigger_type, Some(SnapshotTriggerType::Periodic));
        assert_eq!(last.trigger_nonce, None);
        assert_eq!(info.savepoint_history.unwrap(), [last]);
        assert_eq!(info.last_periodic_savepoint_timestamp, Some(NOW));
        let next = decide(&sj(done.status), &every_10_min(started(15), None));
        assert!(next.actions.is_empty(), "{:?}", next.actions);
        // Failed: nothing recorded, and the next attempt waits a whole interval.
        let failed = decide(
            &sj(triggered),
            &every_10_min(started(10), Some(SavepointPoll::Failed("disk full".into()))),
        );
        let info = job(&failed.status).savepoint_info.clone().unwrap();
        assert_eq!((info.trigger_id, info.last_savepoint), (None, None));
        assert_eq!(info.last_periodic_savepoint_timestamp, Some(NOW));
        let event = failed
            .events
            .iter()
            .find(|e| e.reason == Reason::SavepointFailed)
            .unwrap();
        assert!(
            event.warning && event.note.contains("periodic savepoint"),
            "{}",
            event.note
        );
    }

    /// Savepoints beyond the history's count leave it: disposed of through the session
    /// cluster when cleanup is on, only dropped from status when it is off.
    #[test]
    fn savepoints_beyond_the_history_are_disposed_of_or_only_dropped_from_status() {
        let mut status = running("savepoint");
        let history: Vec<Savepoint> = (1..=3)
            .map(|n| Savepoint {
                time_stamp: Some(NOW - (4 - n) * MIN),
                location: Some(format!("file:/sp/{n}")),
                ..Default::default()
            })
            .collect();
        let info = status
            .job_status
            .as_mut()
            .unwrap()
            .savepoint_info
            .get_or_insert_with(Default::default);
        info.last_savepoint = history.last().cloned();
        info.savepoint_history = Some(history);
        let sj = resource(spec("savepoint"), Some(status), true, false, 1);
        for cleanup in [true, false] {
            let policy = Policy {
                history_max_count: 1,
                history_cleanup: cleanup,
                ..Policy::default()
            };
            let plan = decide(&sj, &with_policy(ready(found("RUNNING")), policy));
            let kept = job(&plan.status)
                .savepoint_info
                .clone()
                .unwrap()
                .savepoint_history
                .unwrap();
            assert_eq!(kept.len(), 1, "cleanup {cleanup}");
            assert_eq!(
                kept[0].location.as_deref(),
                Some("file:/sp/3"),
                "cleanup {cleanup}"
            );
            let disposed: Vec<Action> = ["file:/sp/1", "file:/sp/2"]
                .into_iter()
                .map(|path| Action::Job(JobAction::DisposeSavepoint { path: path.into() }))
                .collect();
            if cleanup {
                assert_eq!(plan.actions, disposed);
                // Written after the disposals: a failed disposal keeps them in the history.
                assert_eq!(plan.status_before, None);
            } else {
                assert!(plan.actions.is_empty(), "{:?}", plan.actions);
            }
            assert!(plan.events.iter().any(|e| e.note.contains("file:/sp/1")));
        }
        // A job that is not running keeps its history for now.
        let plan = decide(
            &sj,
            &with_policy(
                ready(found("RESTARTING")),
                Policy {
                    history_max_count: 1,
                    ..Policy::default()
                },
            ),
        );
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    }

    #[test]
    fn a_spec_change_waits_for_a_pending_manual_savepoint() {
        let triggered = decide(
            &resource(
                with_nonce("savepoint", "savepointTriggerNonce", 1),
                Some(running("savepoint")),
                true,
                false,
                2,
            ),
            &ready(found("RUNNING")),
        )
        .status_before
        .unwrap();
        let mut new_spec = changed("savepoint", None);
        new_spec["job"]["savepointTriggerNonce"] = json!(1);
        let sj = resource(new_spec, Some(triggered), true, false, 3);
        let plan = decide(
            &sj,
            &Observation {
                savepoint: Some(SavepointPoll::InProgress),
                ..ready(found("RUNNING"))
            },
        );
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
        assert_eq!(reason(&plan.status), phase::UPDATING);
        // Once it completed, the change goes ahead in the same reconcile.
        let plan = decide(
            &sj,
            &Observation {
                savepoint: Some(SavepointPoll::Completed("file:/sp/manual".into())),
                ..ready(found("RUNNING"))
            },
        );
        assert_eq!(
            plan.actions,
            [Action::Job(JobAction::StopWithSavepoint {
                job_id: "old-job".into(),
                trigger_id: "trigger".into(),
                drain: false
            })]
        );
        let before = plan.status_before.unwrap();
        let info = job(&before).savepoint_info.clone().unwrap();
        assert_eq!(
            info.last_savepoint.unwrap().location.as_deref(),
            Some("file:/sp/manual")
        );
        assert_eq!(info.trigger_type, Some(SnapshotTriggerType::Upgrade));
    }

    #[test]
    fn a_savepoint_redeploy_nonce_cancels_and_restores_the_initial_savepoint_path() {
        let redeploy = |status: FlinkSessionJobStatus, path: Option<&str>| {
            let mut s = with_nonce("savepoint", "savepointRedeployNonce", 1);
            if let Some(path) = path {
                s["job"]["initialSavepointPath"] = json!(path);
            }
            resource(s, Some(status), true, false, 2)
        };
        let chosen = Some("file:/sp/chosen");
        let cancel = [Action::Job(JobAction::Cancel {
            job_id: "old-job".into(),
        })];
        // 1. Cancelled, not stopped with a savepoint; recorded first.
        let plan = decide(&redeploy(running("savepoint"), chosen), &ready(found("RUNNING")));
        assert_eq!(plan.actions, cancel);
        assert!(plan.events.iter().any(|e| e.reason == Reason::SavepointRedeploy));
        let cancelling = plan.status_before.unwrap();
        assert_eq!(reason(&cancelling), phase::UPDATING);
        // A crash before the cancel reached Flink: cancelled again.
        let plan = decide(&redeploy(cancelling.clone(), chosen), &ready(found("RUNNING")));
        assert_eq!(plan.actions, cancel);
        // 2. Cancelling: wait.
        let plan = decide(&redeploy(cancelling.clone(), chosen), &ready(found("CANCELLING")));
        assert!(plan.actions.is_empty());
        // 3. Ended: the path, the spec (with its nonce) and a new job id are recorded, then
        // the job is submitted restoring the path.
        let plan = decide(&redeploy(cancelling, chosen), &ready(found("CANCELED")));
        let committed = plan.status_before.clone().unwrap();
        assert_eq!(
            job(&committed).upgrade_savepoint_path.as_deref(),
            Some("file:/sp/chosen")
        );
        assert_eq!(job(&committed).job_id.as_deref(), Some("new-job"));
        assert_eq!(
            recorded_spec(&committed).job.unwrap().savepoint_redeploy_nonce,
            Some(1)
        );
        assert_eq!(submission(&plan).restore_path.as_deref(), Some("file:/sp/chosen"));
        // 4. A crash before the submission: the recorded job id and path.
        let plan = decide(
            &redeploy(committed, chosen),
            &Observation {
                fresh_job_id: "another".into(),
                ..ready(not_found())
            },
        );
        assert_eq!(submission(&plan).job_id, "new-job");
        assert_eq!(submission(&plan).restore_path.as_deref(), Some("file:/sp/chosen"));
        // Without a path there is nothing to redeploy from: refused, the job runs on.
        let plan = decide(&redeploy(running("savepoint"), None), &ready(found("RUNNING")));
        assert!(plan.actions.is_empty());
        assert_eq!(reason(&plan.status), phase::UPDATE_FAILED);
        assert!(
            plan.status
                .error
                .unwrap()
                .contains("spec.job.initialSavepointPath is empty")
        );
    }

    #[test]
    fn a_failed_job_is_restarted_from_its_newest_state_when_restart_failed_is_set() {
        let restart = |minutes: i64| Policy {
            restart_failed: true,
            ..max_age(minutes)
        };
        // (name, mode, checkpoint found, Ok(restored path) or Err(part of the refusal))
        type Case<'a> = (
            &'a str,
            &'a str,
            Option<CheckpointLookup>,
            Result<Option<&'a str>, &'a str>,
        );
        let cases: Vec<Case> = vec![
            ("stateless: from nothing", "stateless", None, Ok(None)),
            (
                "a young checkpoint",
                "last-state",
                checkpoint_at("file:/cp/chk-5", NOW - MIN),
                Ok(Some("file:/cp/chk-5")),
            ),
            (
                "an old checkpoint",
                "savepoint",
                checkpoint_at("file:/cp/chk-5", NOW - 120 * MIN),
                Err(
                    "restarting the failed job old-job: the newest state, checkpoint file:/cp/chk-5, is 2 h 0 min old",
                ),
            ),
            (
                "no state at all",
                "last-state",
                Some(CheckpointLookup::None),
                Err("no checkpoint or savepoint of the job is known to restore from"),
            ),
        ];
        for (name, mode, checkpoint, expected) in cases {
            let sj = |status: FlinkSessionJobStatus| resource(spec(mode), Some(status), true, false, 1);
            let observation = with_policy(
                Observation {
                    checkpoint,
                    ..ready(found("FAILED"))
                },
                restart(60),
            );
            let plan = decide(&sj(running(mode)), &observation);
            match expected {
                Ok(path) => {
                    // 1. The new job id and the state are recorded, then it is submitted.
                    let committed = plan.status_before.clone().unwrap();
                    assert_eq!(job(&committed).job_id.as_deref(), Some("new-job"), "{name}");
                    assert_eq!(job(&committed).upgrade_savepoint_path.as_deref(), path, "{name}");
                    assert_eq!(
                        reconciliation_state(&committed),
                        Some(ReconciliationState::Upgrading),
                        "{name}"
                    );
                    assert_eq!(submission(&plan).restore_path.as_deref(), path, "{name}");
                    assert!(
                        plan.events.iter().any(|e| e.reason == Reason::RestartFailedJob),
                        "{name}"
                    );
                    // 2. A crash before the submission: the recorded id and state, once.
                    let plan = decide(
                        &sj(committed),
                        &with_policy(
                            Observation {
                                fresh_job_id: "another".into(),
                                ..ready(not_found())
                            },
                            restart(60),
                        ),
                    );
                    assert_eq!(submission(&plan).job_id, "new-job", "{name}");
                    assert_eq!(submission(&plan).restore_path.as_deref(), path, "{name}");
                }
                Err(part) => {
                    assert!(plan.actions.is_empty(), "{name}: {:?}", plan.actions);
                    assert_eq!(reason(&plan.status), phase::FAILED, "{name}");
                    let error = plan.status.error.clone().unwrap();
                    assert!(error.contains(part), "{name}: {error}");
                    assert!(
                        plan.events
                            .iter()
                            .any(|e| e.warning && e.reason == Reason::RestoreRefused && e.note == error),
                        "{name}"
                    );
                    // Refused again on the next reconcile, without a second Event.
                    let again = decide(&sj(plan.status), &observation);
                    assert!(again.actions.is_empty(), "{name}");
                    assert!(again.events.is_empty(), "{name}: {:?}", again.events);
                }
            }
        }
        // Without the setting the job stays FAILED.
        let plan = decide(
            &resource(spec("last-state"), Some(running("last-state")), true, false, 1),
            &Observation {
                checkpoint: checkpoint_at("file:/cp/chk-5", NOW - MIN),
                ..ready(found("FAILED"))
            },
        );
        assert!(plan.actions.is_empty());
        assert_eq!(reason(&plan.status), phase::FAILED);
        // The checkpoint not read yet: wait rather than restore older state.
        let plan = decide(
            &resource(spec("last-state"), Some(running("last-state")), true, false, 1),
            &with_policy(
                Observation {
                    checkpoint: Some(CheckpointLookup::Unavailable("timeout".into())),
                    ..ready(found("FAILED"))
                },
                restart(60),
            ),
        );
        assert!(plan.actions.is_empty());
    }

    #[test]
    fn a_manual_checkpoint_does_not_make_the_checkpoint_a_job_started_from_look_young() {
        // The job started from checkpoint chk-2 (two hours old), then took a manual
        // checkpoint; it failed, and Flink's latest checkpoint is the manual one.
        let mut status = running("last-state");
        let started = status.job_status_mut();
        restore::record(
            started,
            Some(&RestorableState {
                kind: Kind::Checkpoint,
                path: "file:/cp/chk-2".into(),
                timestamp_ms: Some(NOW - 120 * MIN),
            }),
        );
        started.checkpoint_info.as_mut().unwrap().last_checkpoint = Some(Checkpoint {
            time_stamp: Some(NOW - MIN),
            trigger_type: Some(SnapshotTriggerType::Manual),
            ..Default::default()
        });
        let plan = decide(
            &resource(spec("last-state"), Some(status), true, false, 1),
            &with_policy(
                Observation {
                    checkpoint: checkpoint_at("file:/cp/chk-9", NOW - 2 * MIN),
                    ..ready(found("FAILED"))
                },
                Policy {
                    restart_failed: true,
                    ..max_age(60)
                },
            ),
        );
        assert_eq!(submission(&plan).restore_path.as_deref(), Some("file:/cp/chk-9"));
    }
}
