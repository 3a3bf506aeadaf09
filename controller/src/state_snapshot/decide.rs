//! What a FlinkStateSnapshot needs next, as a pure function of the snapshot and what was
//! observed; no I/O.
//!
//! ```text
//! TRIGGER_PENDING --trigger sent--> IN_PROGRESS --Flink completed it--> COMPLETED
//!       ^   |                           |
//!       |   +-- job gone / not running -+--> ABANDONED
//!       |                               |
//!       +--- failed, retries left <-----+--> FAILED (failures > backoffLimit)
//! ```
//!
//! - The trigger id is recorded (with the trigger time) before the trigger is sent, and a
//!   snapshot that holds one sends it again under the same id: Flink answers a repeated
//!   trigger with the operation it already started, so a crash or a lost answer never takes
//!   a second snapshot. A failed attempt forgets its id, since Flink would answer it with the
//!   failure it keeps for it.
//! - A failure is counted in `failures`, with the time in `resultTimestamp`; the next
//!   attempt waits 10 s x 2^(failures-1) from then (kept in status, so the wait survives a
//!   restart of the operator), until `failures` exceeds `spec.backoffLimit` (-1: no limit),
//!   which ends in FAILED.
//! - A savepoint that records an existing one (`alreadyExists`) completes at once with its
//!   path, without asking Flink.
//! - Deletion: only a COMPLETED savepoint with `disposeOnDelete` holds its object until its
//!   files are disposed of through its job's cluster; an IN_PROGRESS one waits for its
//!   outcome first. When nothing can dispose of it (the job resource or its cluster is gone,
//!   not ready, does not answer twice in a row, or Flink fails the disposal), the object is
//!   released with a Warning Event that names the path left on storage: a deletion never
//!   hangs. Nor is a path that a job resource of the namespace may still need disposed of
//!   (see [`crate::lifecycle::protected`]): the object is released, its files kept, and the
//!   Warning Event names who needs it and why.
//! - The labels `snapshot.type`, `snapshot.trigger-type`, `snapshot.state`,
//!   `job-reference.kind` and `job-reference.name` follow the snapshot; they are patched
//!   only when one differs, so a settled snapshot costs no request.

use std::collections::BTreeMap;

use flink_operator_api::{
    FlinkStateSnapshot, FlinkStateSnapshotSpec, FlinkStateSnapshotState as State, FlinkStateSnapshotStatus,
    SavepointFormatType, SnapshotTriggerType, SnapshotType,
    common::FlinkJobState,
    keys::{self, flink::CHECKPOINTING_SAVEPOINT_DIR, flink::STATE_SAVEPOINTS_DIR},
};
use kube::ResourceExt;

use crate::{
    events::{EventNote, Reason},
    flink::poll::SavepointPoll,
    flink::{CheckpointKind, SavepointFormat},
    plan::{Next, Plan},
    policy::Policy,
};

type Status = FlinkStateSnapshotStatus;

/// How `status.error` begins for a snapshot whose spec breaks the admission rules.
const INVALID: &str = "the snapshot is invalid: ";

/// How long after its trigger a completed checkpoint whose details the JobManager does not
/// show is looked for again before it completes without a path.
pub const DETAILS_LAG_MS: i64 = 30_000;

/// The first retry of a failed snapshot waits this long; each further one twice as long.
pub const FIRST_RETRY_MS: i64 = 10_000;

/// The job resource a snapshot refers to, as the caches show it.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Target {
    /// The snapshot names no job resource.
    #[default]
    Unreferenced,
    /// The job resource, or a session job's session cluster, is not there: why.
    Gone(String),
    /// It is there.
    Found(Job),
}

/// A job resource and the cluster its REST calls go to.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Job {
    /// How messages name it: `FlinkDeployment basic`.
    pub name: String,
    /// The job id its status records.
    pub job_id: Option<String>,
    /// The job state its status records.
    pub state: Option<FlinkJobState>,
    /// Why its cluster (the FlinkDeployment, or a session job's session cluster) cannot be
    /// asked now; `None` when its JobManager is ready.
    pub cluster_not_ready: Option<String>,
    /// The savepoint directory of its configuration.
    pub savepoint_dir: Option<String>,
}

/// Where a completed checkpoint is stored, from its details.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckpointPath {
    Found(String),
    /// The JobManager no longer holds the checkpoint's details (its history is short); why.
    Forgotten(String),
    /// They could not be read now; looked for again.
    Unavailable(String),
}

/// What observe read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observation {
    pub target: Target,
    /// What the admission rules say of the spec (whether its job exists is decided here).
    pub violations: Vec<String>,
    /// Whether every task of the job runs, asked only before a trigger (`None`: not asked).
    /// A job is RUNNING as soon as it is scheduled, while its tasks may still be deploying,
    /// and a snapshot triggered then fails ("Not all required tasks are currently running").
    pub tasks_running: Option<bool>,
    /// The operation under the recorded trigger id, polled while IN_PROGRESS.
    pub operation: Option<SavepointPoll>,
    /// A completed checkpoint's path.
    pub checkpoint_path: Option<CheckpointPath>,
    /// While a COMPLETED savepoint is disposed of: its disposal, under the trigger id recorded
    /// when it was started; `None` when none was started.
    pub disposal: Option<SavepointPoll>,
    /// The JobManager did not answer at the previous look either.
    pub unanswered_again: bool,
    /// While a deleted snapshot's savepoint is to be disposed of: who in its namespace may
    /// still need its path, and why (see [`crate::lifecycle::protected::who_needs`]); its
    /// files are then kept.
    pub needed_by: Vec<String>,
    pub policy: Policy,
    /// The id of the next trigger, if one is sent.
    pub fresh_trigger_id: String,
    pub now_ms: i64,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    AddFinalizer,
    /// Our labels, to these values (sent only when one differs).
    Labels(BTreeMap<String, String>),
    /// Triggers the snapshot through the job's cluster.
    Trigger(Trigger),
    /// Disposes of the savepoint at `path` through the job's cluster, and records the
    /// disposal's trigger id.
    Dispose {
        path: String,
    },
    /// Removes our finalizer: the deleted object goes.
    Release,
}

/// A snapshot to trigger.
#[derive(Debug, Clone, PartialEq)]
pub struct Trigger {
    pub job_id: String,
    pub trigger_id: String,
    pub kind: TriggerKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TriggerKind {
    Savepoint {
        dir: String,
        format: SavepointFormat,
    },
    /// Of the job's `checkpoint.type`: FULL (the default) stands alone; an INCREMENTAL one
    /// shares files with the job's other checkpoints, as its user chose.
    Checkpoint(CheckpointKind),
}

fn has_finalizer(snapshot: &FlinkStateSnapshot) -> bool {
    snapshot
        .finalizers()
        .iter()
        .any(|f| f == keys::finalizers::FLINK_STATE_SNAPSHOT)
}

use crate::timestamps::{millis, timestamp};

/// How long the attempt after `failures` failures waits: 10 s x 2^(failures-1).
pub fn retry_delay_ms(failures: i32) -> i64 {
    let doublings = u32::try_from(failures.saturating_sub(1)).unwrap_or(0).min(40);
    FIRST_RETRY_MS.saturating_mul(1i64 << doublings)
}

/// The plan under construction.
struct Decision {
    status_before: Option<Status>,
    actions: Vec<Action>,
    status: Status,
    events: Vec<EventNote>,
    requeue: Next,
}

pub fn decide(snapshot: &FlinkStateSnapshot, observation: &Observation) -> Plan<Status, Action> {
    let stored = snapshot.status.clone().unwrap_or_default();
    let mut d = Decision {
        status_before: None,
        actions: Vec::new(),
        status: stored,
        events: Vec::new(),
        requeue: Next::Steady,
    };
    if snapshot.metadata.deletion_timestamp.is_some() {
        deletion(snapshot, observation, &mut d);
    } else {
        if snapshot.spec.disposes_on_deletion() && !has_finalizer(snapshot) {
            d.actions.push(Action::AddFinalizer);
        }
        // A fresh snapshot shows its state at once, as the Apache operator's do.
        d.status.state.get_or_insert(State::TriggerPending);
        d.status.failures.get_or_insert(0);
        match State::of(Some(&d.status)) {
            State::TriggerPending => pending(snapshot, observation, &mut d),
            State::InProgress => in_progress(snapshot, observation, &mut d),
            State::Completed | State::Abandoned | State::Failed => d.requeue = Next::Idle,
        }
        let wanted = labels(snapshot, &d.status);
        if wanted.iter().any(|(k, v)| snapshot.labels().get(k) != Some(v)) {
            d.actions.push(Action::Labels(wanted));
        }
    }
    Plan {
        status_before: d.status_before,
        actions: d.actions,
        status: d.status,
        events: d.events,
        requeue: d.requeue,
    }
}

/// Our labels of `snapshot` once it holds `status`: an existing trigger type is kept (the
/// operator's own snapshots carry theirs), any other snapshot is MANUAL.
pub fn labels(snapshot: &FlinkStateSnapshot, status: &Status) -> BTreeMap<String, String> {
    use keys::labels::*;
    let mut labels = BTreeMap::new();
    if let Some(kind) = snapshot.spec.snapshot_type() {
        labels.insert(SNAPSHOT_TYPE.to_owned(), kind.as_str().to_owned());
    }
    let trigger_type = snapshot
        .labels()
        .get(SNAPSHOT_TRIGGER_TYPE)
        .cloned()
        .unwrap_or_else(|| SnapshotTriggerType::Manual.as_str().to_owned());
    labels.insert(SNAPSHOT_TRIGGER_TYPE.to_owned(), trigger_type);
    labels.insert(
        SNAPSHOT_STATE.to_owned(),
        State::of(Some(status)).as_str().to_owned(),
    );
    if let Some(reference) = &snapshot.spec.job_reference {
        if let Some(kind) = reference.kind {
            labels.insert(JOB_REFERENCE_KIND.to_owned(), kind.as_str().to_owned());
        }
        // A resource name may be longer than a label value may be: such a name is left out
        // rather than have the API server refuse every label.
        if let Some(name) = reference.name.as_deref().filter(|n| is_label_value(n)) {
            labels.insert(JOB_REFERENCE_NAME.to_owned(), name.to_owned());
        }
    }
    labels
}

/// Whether `value` is a valid label value: at most 63 characters, alphanumerics with `-`,
/// `_` and `.` inside.
fn is_label_value(value: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    value.is_empty()
        || (value.len() <= 63
            && edge(value.chars().next())
            && edge(value.chars().last())
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
}

/// The job a snapshot can be taken of, or why none can.
enum Reach<'a> {
    Running {
        job_id: &'a str,
        job: &'a Job,
    },
    /// The job resource is gone or its job is not running: the snapshot is abandoned.
    Gone(String),
    /// The job runs but its cluster cannot be asked now: looked at again.
    Waiting,
}

fn reach(target: &Target) -> Reach<'_> {
    let job = match target {
        Target::Unreferenced => return Reach::Gone("the snapshot names no job resource".to_owned()),
        Target::Gone(why) => return Reach::Gone(why.clone()),
        Target::Found(job) => job,
    };
    if job.state != Some(FlinkJobState::Running) {
        let state = job.state.as_ref().map_or("none recorded", FlinkJobState::as_str);
        return Reach::Gone(format!(
            "the job of {} is not running (its state: {state})",
            job.name
        ));
    }
    let Some(job_id) = job.job_id.as_deref() else {
        return Reach::Gone(format!("{} records no job id", job.name));
    };
    if job.cluster_not_ready.is_some() {
        return Reach::Waiting;
    }
    Reach::Running { job_id, job }
}

fn snapshot_name(spec: &FlinkStateSnapshotSpec) -> &'static str {
    match spec.snapshot_type() {
        Some(SnapshotType::Checkpoint) => "checkpoint",
        _ => "savepoint",
    }
}

fn pending(snapshot: &FlinkStateSnapshot, o: &Observation, d: &mut Decision) {
    let spec = &snapshot.spec;
    if !o.violations.is_empty() {
        // Refused on its face (the webhook was bypassed): reported once, acted on never.
        let error = format!("{INVALID}{}", o.violations.join("; "));
        let stored = snapshot.status.as_ref().and_then(|s| s.error.as_deref());
        if stored != Some(error.as_str()) {
            d.events
                .push(EventNote::warning(Reason::ValidationError, error.clone()));
        }
        d.status.error = Some(error);
        return;
    }
    if d.status.error.as_deref().is_some_and(|e| e.starts_with(INVALID)) {
        // Fixed since: the error of a failed attempt would be kept, this one is stale.
        d.status.error = None;
    }
    if let Some(path) = spec
        .savepoint
        .as_ref()
        .filter(|s| s.already_exists == Some(true))
        .and_then(|s| s.path.clone())
    {
        // Nothing is triggered, and the savepoint is as old as Flink made it, not as the
        // record: its time is the one stated with it, or unknown (see `recorded_time`).
        let completed_ms = recorded_time(snapshot, o.now_ms);
        let note = match &completed_ms {
            Ok(at) => format!(
                "Recorded the existing savepoint {path}, completed at {}",
                timestamp(*at)
            ),
            Err(why) => format!(
                "Recorded the existing savepoint {path}; {why}, so its age is unknown: a job restores it \
                 only when it has no other checkpoint or savepoint of known time, never under \
                 kubernetes.operator.job.restore.max-state-age, and always when named in \
                 spec.job.initialSavepointPath"
            ),
        };
        d.events.push(EventNote::normal(Reason::SavepointCompleted, note));
        complete(d, Some(path), o.now_ms);
        d.status.result_timestamp = completed_ms.ok().map(timestamp);
        return;
    }
    let (job_id, job) = match reach(&o.target) {
        Reach::Running { job_id, job } => (job_id, job),
        Reach::Gone(why) => return abandon(spec, d, why, o.now_ms),
        Reach::Waiting => {
            d.requeue = Next::Progress;
            return;
        }
    };
    if o.tasks_running == Some(false) {
        // Taken once the tasks run, rather than failed and counted against the limit.
        d.requeue = Next::Progress;
        return;
    }
    if d.status.trigger_id.is_none()
        && let Some(due_ms) = retry_due_ms(&d.status)
        && o.now_ms < due_ms
    {
        let seconds = u64::try_from(due_ms - o.now_ms)
            .unwrap_or(0)
            .div_ceil(1000)
            .max(1);
        d.requeue = Next::Within(seconds);
        return;
    }
    trigger(spec, o, job_id, job, d);
}

/// When the savepoint a snapshot records (`alreadyExists`) was completed: the time stated in
/// its [`keys::annotations::SAVEPOINT_COMPLETED_AT`] (set by the operator on the savepoints it
/// records, or by the user), never the time it is recorded. Flink's savepoints are on the
/// job's storage, which the operator has no access to in general, so their `_metadata` is
/// not read. Otherwise why the time is unknown.
fn recorded_time(snapshot: &FlinkStateSnapshot, now_ms: i64) -> Result<i64, String> {
    let key = keys::annotations::SAVEPOINT_COMPLETED_AT;
    let Some(stated) = snapshot.annotations().get(key) else {
        return Err(format!("no time is stated for it (annotation {key})"));
    };
    let Some(at) = millis(stated) else {
        return Err(format!(
            "its annotation {key} is not an RFC 3339 time ({stated:?})"
        ));
    };
    if at > now_ms {
        return Err(format!(
            "its annotation {key} ({stated}) is later than now: a savepoint is not completed after it is recorded"
        ));
    }
    Ok(at)
}

/// When a failed snapshot is tried again, if it failed before.
fn retry_due_ms(status: &Status) -> Option<i64> {
    let failures = status.failures.filter(|f| *f > 0)?;
    let failed_at = millis(status.result_timestamp.as_deref()?)?;
    Some(failed_at.saturating_add(retry_delay_ms(failures)))
}

/// Sends the trigger: under the recorded trigger id, else under a fresh one recorded first.
fn trigger(spec: &FlinkStateSnapshotSpec, o: &Observation, job_id: &str, job: &Job, d: &mut Decision) {
    let kind = match trigger_kind(spec, job, o.policy.checkpoint_type) {
        Ok(kind) => kind,
        Err(why) => return fail(spec, d, why, o.now_ms),
    };
    let trigger_id = match d.status.trigger_id.clone() {
        Some(recorded) => recorded,
        None => {
            d.status.trigger_id = Some(o.fresh_trigger_id.clone());
            d.status.trigger_timestamp = Some(timestamp(o.now_ms));
            d.status_before = Some(d.status.clone());
            let (reason, into) = match &kind {
                TriggerKind::Savepoint { dir, .. } => (Reason::SavepointTriggered, format!(" into {dir}")),
                TriggerKind::Checkpoint(_) => (Reason::CheckpointTriggered, String::new()),
            };
            d.events.push(EventNote::normal(
                reason,
                format!(
                    "Triggering a {} of job {job_id} of {}{into}",
                    snapshot_name(spec),
                    job.name
                ),
            ));
            o.fresh_trigger_id.clone()
        }
    };
    d.actions.push(Action::Trigger(Trigger {
        job_id: job_id.to_owned(),
        trigger_id,
        kind,
    }));
    d.status.state = Some(State::InProgress);
    d.requeue = Next::Progress;
}

/// What to take: a savepoint into the spec's path, else into the job's savepoint directory,
/// in the spec's format; or a checkpoint of the job's `checkpoint.type`.
fn trigger_kind(
    spec: &FlinkStateSnapshotSpec,
    job: &Job,
    checkpoint: CheckpointKind,
) -> Result<TriggerKind, String> {
    let Some(savepoint) = &spec.savepoint else {
        return Ok(TriggerKind::Checkpoint(checkpoint));
    };
    let format = match savepoint.format_type.unwrap_or_default() {
        SavepointFormatType::Canonical => SavepointFormat::Canonical,
        SavepointFormatType::Native => SavepointFormat::Native,
        SavepointFormatType::Unknown => {
            return Err("spec.savepoint.formatType UNKNOWN is no format to take a savepoint in: use CANONICAL or NATIVE".to_owned());
        }
    };
    let dir = savepoint
        .path
        .clone()
        .filter(|p| !p.trim().is_empty())
        .or_else(|| job.savepoint_dir.clone())
        .ok_or_else(|| {
            format!(
                "no savepoint directory: set spec.savepoint.path, or {CHECKPOINTING_SAVEPOINT_DIR} \
                 (formerly {STATE_SAVEPOINTS_DIR}) in the configuration of {}",
                job.name
            )
        })?;
    Ok(TriggerKind::Savepoint { dir, format })
}

fn in_progress(snapshot: &FlinkStateSnapshot, o: &Observation, d: &mut Decision) {
    let spec = &snapshot.spec;
    if d.status.trigger_id.is_none() {
        // Nothing to follow (written by someone else): taken again rather than left waiting.
        d.status.state = Some(State::TriggerPending);
        return pending(snapshot, o, d);
    }
    let (job_id, job) = match reach(&o.target) {
        Reach::Running { job_id, job } => (job_id, job),
        Reach::Gone(why) => return abandon(spec, d, why, o.now_ms),
        Reach::Waiting => {
            d.requeue = Next::Progress;
            return;
        }
    };
    match &o.operation {
        None | Some(SavepointPoll::InProgress | SavepointPoll::Unreachable(_)) => d.requeue = awaiting(d, o),
        // The JobManager forgot the trigger (it restarted) or never got it: sent again.
        Some(SavepointPoll::UnknownTrigger) => trigger(spec, o, job_id, job, d),
        Some(SavepointPoll::Failed(reason)) => fail(spec, d, reason.clone(), o.now_ms),
        Some(SavepointPoll::JobGone(reason)) => abandon(
            spec,
            d,
            format!("job {job_id} of {} is gone: {reason}", job.name),
            o.now_ms,
        ),
        Some(SavepointPoll::Completed(result)) if spec.is_checkpoint() => match &o.checkpoint_path {
            Some(CheckpointPath::Found(path)) => {
                d.events.push(EventNote::normal(
                    Reason::CheckpointCompleted,
                    format!("The checkpoint {result} of job {job_id} completed: {path}"),
                ));
                complete(d, Some(path.clone()), o.now_ms);
            }
            Some(CheckpointPath::Forgotten(_))
                if d.status
                    .trigger_timestamp
                    .as_deref()
                    .and_then(millis)
                    .is_some_and(|at| o.now_ms - at < DETAILS_LAG_MS) =>
            {
                // The JobManager answers from a cache of the job refreshed every few seconds:
                // a checkpoint just completed may not be in its details yet.
                d.requeue = awaiting(d, o);
            }
            Some(CheckpointPath::Forgotten(why)) => {
                d.events.push(EventNote::warning(
                    Reason::CheckpointError,
                    format!(
                        "The checkpoint {result} of job {job_id} completed, but its path is unknown: {why}. \
                         Raise web.checkpoints.history in the job's configuration to keep the details of more checkpoints"
                    ),
                ));
                complete(d, None, o.now_ms);
            }
            Some(CheckpointPath::Unavailable(_)) | None => d.requeue = awaiting(d, o),
        },
        Some(SavepointPoll::Completed(path)) => {
            d.events.push(EventNote::normal(
                Reason::SavepointCompleted,
                format!("The savepoint of job {job_id} completed: {path}"),
            ));
            complete(d, Some(path.clone()), o.now_ms);
        }
    }
}

/// The next look at the operation under way, by the time since its trigger.
fn awaiting(d: &Decision, o: &Observation) -> Next {
    let triggered = d.status.trigger_timestamp.as_deref().and_then(millis);
    let for_ms = triggered.map_or(0, |at| u64::try_from(o.now_ms - at).unwrap_or(0));
    Next::Awaiting { for_ms }
}

fn complete(d: &mut Decision, path: Option<String>, now_ms: i64) {
    d.status.state = Some(State::Completed);
    d.status.path = path;
    d.status.error = None;
    d.status.result_timestamp = Some(timestamp(now_ms));
    d.requeue = Next::Idle;
}

fn abandon(spec: &FlinkStateSnapshotSpec, d: &mut Decision, why: String, now_ms: i64) {
    d.events.push(EventNote::warning(
        Reason::SnapshotAbandoned,
        format!("The {} is abandoned: {why}", snapshot_name(spec)),
    ));
    d.status.state = Some(State::Abandoned);
    d.status.path = None;
    d.status.error = Some(why);
    d.status.result_timestamp = Some(timestamp(now_ms));
    d.requeue = Next::Idle;
}

fn fail(spec: &FlinkStateSnapshotSpec, d: &mut Decision, why: String, now_ms: i64) {
    let (status, event, next) = failed(spec, d.status.clone(), &why, now_ms);
    d.status = status;
    d.events.push(event);
    d.requeue = next;
}

/// `status` after a failed attempt: counted, and either tried again after its back-off or,
/// past `spec.backoffLimit`, FAILED for good; with its Event and when to look again.
pub fn failed(
    spec: &FlinkStateSnapshotSpec,
    mut status: Status,
    why: &str,
    now_ms: i64,
) -> (Status, EventNote, Next) {
    let failures = status.failures.unwrap_or(0).saturating_add(1);
    let limit = spec.backoff_limit.unwrap_or(-1);
    status.failures = Some(failures);
    status.error = Some(why.to_owned());
    status.result_timestamp = Some(timestamp(now_ms));
    status.path = None;
    // The next attempt is a new operation: Flink answers a trigger id it knows with that
    // operation's outcome, this failure.
    status.trigger_id = None;
    let reason = match spec.snapshot_type() {
        Some(SnapshotType::Checkpoint) => Reason::CheckpointError,
        _ => Reason::SavepointError,
    };
    let name = snapshot_name(spec);
    if limit >= 0 && failures > limit {
        status.state = Some(State::Failed);
        let note = format!("The {name} failed (attempt {failures}, backoffLimit {limit}), for good: {why}");
        return (status, EventNote::warning(reason, note), Next::Idle);
    }
    status.state = Some(State::TriggerPending);
    let delay_ms = retry_delay_ms(failures);
    let seconds = u64::try_from(delay_ms / 1000).unwrap_or(u64::MAX);
    let note = format!("The {name} failed (attempt {failures}), tried again in {seconds} s: {why}");
    (status, EventNote::warning(reason, note), Next::Within(seconds))
}

fn deletion(snapshot: &FlinkStateSnapshot, o: &Observation, d: &mut Decision) {
    d.requeue = Next::Idle;
    if !has_finalizer(snapshot) {
        return;
    }
    let spec = &snapshot.spec;
    if !spec.disposes_on_deletion() {
        d.actions.push(Action::Release);
        return;
    }
    match State::of(snapshot.status.as_ref()) {
        State::InProgress => settle_before_disposal(o, d),
        State::Completed => match d.status.path.clone().filter(|p| !p.is_empty()) {
            Some(path) => dispose(o, d, path),
            None => d.actions.push(Action::Release),
        },
        // Nothing was written (or nothing of ours): nothing to dispose of.
        State::TriggerPending | State::Failed | State::Abandoned => d.actions.push(Action::Release),
    }
}

/// A savepoint under way when its object is deleted: its outcome is waited for, so that a
/// savepoint completing after the object went is not left behind unnamed.
fn settle_before_disposal(o: &Observation, d: &mut Decision) {
    let Reach::Running { .. } = reach(&o.target) else {
        // No outcome will be seen: what Flink may still write cannot be named.
        return release_undisposed(
            d,
            "its job is no longer running, so the outcome of the savepoint under way is unknown",
            None,
        );
    };
    match &o.operation {
        Some(SavepointPoll::Completed(path)) => {
            // Recorded first, then disposed of as any completed savepoint.
            complete(d, Some(path.clone()), o.now_ms);
            d.requeue = Next::Progress;
        }
        Some(SavepointPoll::Unreachable(why)) if o.unanswered_again => {
            let why = format!(
                "its JobManager does not answer ({why}), so the outcome of the savepoint under way is unknown"
            );
            release_undisposed(d, &why, None);
        }
        None | Some(SavepointPoll::InProgress | SavepointPoll::Unreachable(_)) => d.requeue = Next::Progress,
        // Failed or lost: Flink removes what a failed savepoint wrote.
        Some(SavepointPoll::Failed(_) | SavepointPoll::JobGone(_) | SavepointPoll::UnknownTrigger) => {
            d.actions.push(Action::Release);
        }
    }
}

/// Disposes of the completed savepoint at `path` through the job's cluster, or releases the
/// object naming the path when that cannot be done.
fn dispose(o: &Observation, d: &mut Decision, path: String) {
    let job = match &o.target {
        Target::Found(job) => job,
        Target::Gone(why) => return release_undisposed(d, why, Some(&path)),
        Target::Unreferenced => {
            return release_undisposed(d, "the snapshot names no job resource", Some(&path));
        }
    };
    if let Some(why) = &job.cluster_not_ready {
        return release_undisposed(
            d,
            &format!("the cluster of {} is not ready: {why}", job.name),
            Some(&path),
        );
    }
    match &o.disposal {
        // A path a job may still need is never disposed of (a disposal under way was
        // started before anything needed it, and is followed).
        None | Some(SavepointPoll::UnknownTrigger) if !o.needed_by.is_empty() => {
            let why = crate::lifecycle::protected::still_needed(&o.needed_by);
            release_undisposed(d, &why, Some(&path));
        }
        // Not started, or forgotten by a JobManager that restarted: started (again).
        None | Some(SavepointPoll::UnknownTrigger) => {
            d.actions.push(Action::Dispose { path });
            d.requeue = Next::Progress;
        }
        Some(SavepointPoll::InProgress) => d.requeue = Next::Progress,
        Some(SavepointPoll::Unreachable(why)) if o.unanswered_again => {
            let why = format!("the JobManager of {} does not answer: {why}", job.name);
            release_undisposed(d, &why, Some(&path));
        }
        Some(SavepointPoll::Unreachable(_)) => d.requeue = Next::Progress,
        Some(SavepointPoll::Completed(_)) => {
            d.events.push(EventNote::normal(
                Reason::SavepointDisposed,
                format!("Disposed of the savepoint {path} through {}", job.name),
            ));
            d.actions.push(Action::Release);
        }
        Some(SavepointPoll::Failed(why) | SavepointPoll::JobGone(why)) => {
            release_undisposed(d, &format!("Flink failed to dispose of it: {why}"), Some(&path));
        }
    }
}

fn release_undisposed(d: &mut Decision, why: &str, path: Option<&str>) {
    let note = match path {
        Some(path) => crate::lifecycle::protected::not_disposed(path, why),
        None => format!("A savepoint may be left on storage: {why}"),
    };
    d.events
        .push(EventNote::warning(Reason::SavepointNotDisposed, note));
    d.actions.push(Action::Release);
    d.requeue = Next::Idle;
}
