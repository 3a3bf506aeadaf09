//! Starting a FlinkSessionJob's job: the spec, the state it restores and the job id are
//! recorded first ([`commit`], [`first_deployment`]), then the jar is submitted under that
//! id; a submission interrupted by a crash is continued under the recorded id
//! ([`continue_submit`]).

use flink_operator_api::LifecycleStatus;
use std::collections::BTreeMap;

use flink_operator_api::{
    FlinkSessionJobSpec, FlinkSessionJobStatus,
    common::{JobStatus, ReconciliationState, ReconciliationStatus, ResourceLifecycleState},
    keys,
};

use super::{
    super::{artifact::Fetch, downloads::DownloadState},
    Action, Decision, JobObservation, Observation, Phase, Plan, RECONCILING, Submission, recorded_job_id,
    status::observe_into,
};
use crate::{
    conditions::set_conditions,
    events::Reason,
    lifecycle::{
        FAST, SLOW,
        restore::{self, RestorableState},
        spec,
    },
};

fn submission(
    spec: &FlinkSessionJobSpec,
    job_id: String,
    restore_path: Option<String>,
    obs: &Observation,
) -> Submission {
    let job = spec.job.clone().unwrap_or_default();
    let own = spec
        .flink_configuration
        .as_ref()
        .map(|c| c.flattened())
        .unwrap_or_default();
    let autoscaled = crate::resources::parallelism::merged_overrides(&own);
    let mut configuration: BTreeMap<String, String> = own
        .into_iter()
        .filter(|(k, _)| !k.starts_with(keys::operator::PREFIX))
        .collect();
    if let Some(overrides) = autoscaled {
        configuration.insert(
            keys::flink::PIPELINE_JOBVERTEX_PARALLELISM_OVERRIDES.to_owned(),
            overrides,
        );
    }
    // Every job keeps its checkpoints when it is cancelled, whatever its upgrade mode now:
    // a later change may make it last-state (or savepoint mode without a savepoint), which
    // cancels it and restores its latest checkpoint. A value the job's configuration (its
    // own, its session cluster's or the operator's defaults) sets is left as set; a job
    // whose checkpoints are then deleted on cancellation is stopped with a savepoint
    // instead (see `lifecycle::retention`).
    if !obs.policy.checkpoint_retention_set {
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
        file_allowed_dirs: obs.artifact_policy.file_allowed_dirs.clone(),
    }
}

/// The first spec: recorded (UPGRADING, with the job id) before its jar is submitted, to
/// start from `restore` (`spec.job.initialSavepointPath`).
pub(super) fn first_deployment(d: &mut Decision<'_>, restore: Option<RestorableState>) -> Plan {
    let spec = &d.sj.spec;
    let name = d.session_name().to_owned();
    d.status.error = None;
    if spec::is_suspended(spec) {
        d.status.lifecycle_state = Some(ResourceLifecycleState::Created);
        d.conditions(Phase::Suspended, "the job is suspended: nothing is submitted");
        return d.done(SLOW);
    }
    let restore_path = restore.map(|s| s.path);
    let job_id = d.obs.fresh_job_id.clone();
    d.status.reconciliation_status = Some(ReconciliationStatus {
        reconciliation_timestamp: Some(d.obs.now_ms),
        last_reconciled_spec: spec::encode(spec.clone(), true),
        last_stable_spec: None,
        state: Some(ReconciliationState::Upgrading),
    });
    d.status.observed_generation = d.generation();
    d.status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
    d.status.job_status = Some(JobStatus {
        job_name: d.sj.metadata.name.clone(),
        job_id: Some(job_id.clone()),
        state: Some(RECONCILING),
        upgrade_savepoint_path: restore_path.clone(),
        ..Default::default()
    });
    let message = format!("submitting the job to session cluster {name}");
    submit(
        d,
        Submit {
            spec,
            job_id,
            restore_path,
            session: &name,
        },
        Phase::Deploying,
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

/// Submits under a job id and a restore path already in status, which is written first
/// with `phase` and `message`.
fn submit(d: &mut Decision<'_>, what: Submit<'_>, phase: Phase, message: &str) -> Plan {
    let note = submit_note(&what.job_id, what.session, what.restore_path.as_deref());
    let submission = submission(what.spec, what.job_id, what.restore_path, d.obs);
    if let Some(waiting) = download_first(d, &submission, phase) {
        return waiting;
    }
    d.conditions(phase, message);
    let after = submitted(d, d.status.clone());
    d.actions.push(Action::Submit(submission));
    d.event(false, Reason::Submit, note);
    d.stepped(after, FAST)
}

/// An http(s) jar is downloaded in the background before it is submitted: the download is
/// started, or still runs, and the status (with the job id to submit under) is recorded
/// meanwhile. None: the jar is ready (downloaded, its download failed, or it is not
/// downloaded), the submission goes ahead and reports what became of it.
fn download_first(d: &mut Decision<'_>, submission: &Submission, phase: Phase) -> Option<Plan> {
    let download = d
        .obs
        .download
        .as_ref()
        .filter(|download| submission.jar_uri.as_ref() == Some(&download.uri))?;
    let uri = download.uri.clone();
    let message = match download.state {
        DownloadState::Finished => return None,
        DownloadState::NotStarted => {
            let fetch = Fetch {
                uri: uri.clone(),
                policy: d.obs.artifact_policy.clone(),
                headers: d.obs.artifact_headers.clone(),
            };
            d.actions.push(Action::Fetch(fetch));
            format!("downloading the jar {uri}")
        }
        DownloadState::Running => format!("waiting for the download of the jar {uri}"),
    };
    d.conditions(phase, &message);
    Some(d.record_then(FAST))
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
    set_conditions(
        &mut status.conditions,
        d.generation(),
        Phase::Deploying,
        "the job is submitted",
        d.obs.now_ms,
    );
    status
}

/// UPGRADING: the recorded spec is to run under the recorded job id.
pub(super) fn continue_submit(d: &mut Decision<'_>, recorded: &FlinkSessionJobSpec) -> Plan {
    let name = d.session_name().to_owned();
    let Some(job_id) = recorded_job_id(&d.status) else {
        // A job id is always recorded with UPGRADING; without one, record a new one first.
        let job_id = d.obs.fresh_job_id.clone();
        let job = d.status.job_status_mut();
        job.job_id = Some(job_id);
        job.state = Some(RECONCILING);
        d.conditions(Phase::Deploying, "recording the job id to submit under");
        return d.record_then(FAST);
    };
    match &d.obs.job {
        Some(JobObservation::Found { .. }) => {
            // Submitted before a crash kept the status from saying so.
            d.status = submitted(d, d.status.clone());
            observe_into(d, recorded);
            d.done(FAST)
        }
        Some(JobObservation::NotFound) => {
            let spec = d.sj.spec.clone();
            let now = d.obs.now_ms;
            let generation = d.sj.metadata.generation;
            if let Some(rs) = d.status.reconciliation_status.as_mut() {
                rs.reconciliation_timestamp = Some(now);
                // A spec changed again before the job was submitted is the one submitted.
                if &spec != recorded {
                    rs.last_reconciled_spec = spec::encode(spec.clone(), false);
                    d.status.observed_generation = generation;
                }
            }
            if spec::is_suspended(&spec) {
                if let Some(rs) = d.status.reconciliation_status.as_mut() {
                    rs.state = Some(ReconciliationState::Deployed);
                }
                d.status.lifecycle_state = Some(ResourceLifecycleState::Suspended);
                d.conditions(Phase::Suspended, "the job is suspended");
                d.event(
                    false,
                    Reason::Suspended,
                    "The job is suspended before it was submitted",
                );
                return d.done(SLOW);
            }
            let restore_path = d
                .status
                .job_status
                .as_ref()
                .and_then(|j| j.upgrade_savepoint_path.clone());
            d.status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
            submit(
                d,
                Submit {
                    spec: &spec,
                    job_id,
                    restore_path,
                    session: &name,
                },
                Phase::Deploying,
                &format!("submitting the job to session cluster {name}"),
            )
        }
        Some(JobObservation::Unreachable(_)) | None => {
            d.conditions(
                Phase::Deploying,
                &format!("waiting for session cluster {name} to answer before submitting"),
            );
            d.done(FAST)
        }
    }
}

/// The previous job has ended: record the new spec with the state to restore (and, for a
/// running spec, the job id to submit under) before anything is submitted.
pub(super) fn commit(d: &mut Decision<'_>, restore: Option<RestorableState>) -> Plan {
    let restore_path = restore.as_ref().map(|s| s.path.clone());
    let spec = d.sj.spec.clone();
    let name = d.session_name().to_owned();
    let now = d.obs.now_ms;
    let rs = d
        .status
        .reconciliation_status
        .get_or_insert_with(Default::default);
    rs.last_reconciled_spec = spec::encode(spec.clone(), false);
    rs.reconciliation_timestamp = Some(now);
    d.status.observed_generation = d.sj.metadata.generation;
    d.status.error = None;
    restore::record(d.status.job_status_mut(), restore.as_ref());
    if spec::is_suspended(&spec) {
        if let Some(rs) = d.status.reconciliation_status.as_mut() {
            rs.state = Some(ReconciliationState::Deployed);
        }
        d.status.lifecycle_state = Some(ResourceLifecycleState::Suspended);
        let message = match &restore_path {
            Some(path) => format!("the job is suspended; it resumes from {path}"),
            None => "the job is suspended without state".to_owned(),
        };
        d.conditions(Phase::Suspended, &message);
        d.event(false, Reason::Suspended, message);
        return d.done(SLOW);
    }
    let job_id = d.obs.fresh_job_id.clone();
    if let Some(rs) = d.status.reconciliation_status.as_mut() {
        rs.state = Some(ReconciliationState::Upgrading);
    }
    let now = d.obs.now_ms;
    let job_name = d.sj.metadata.name.clone();
    let job = d.status.job_status_mut();
    job.job_id = Some(job_id.clone());
    job.state = Some(RECONCILING);
    job.start_time = None;
    job.update_time = Some(now.to_string());
    job.job_name = job_name;
    d.status.lifecycle_state = Some(ResourceLifecycleState::Upgrading);
    submit(
        d,
        Submit {
            spec: &spec,
            job_id,
            restore_path,
            session: &name,
        },
        Phase::Updating,
        &format!("submitting the new spec to session cluster {name}"),
    )
}
