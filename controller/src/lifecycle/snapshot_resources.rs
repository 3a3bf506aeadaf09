//! A job's own snapshots as FlinkStateSnapshot resources, when
//! `kubernetes.operator.snapshot.resource.enabled` holds (the default): what the
//! FlinkDeployment and FlinkSessionJob loops decide about them, once for both (pure).
//!
//! - **Recording.** A manual snapshot (a trigger nonce), a periodic savepoint and an
//!   upgrade's savepoint each become a resource named
//!   `<resource>-<savepoint|checkpoint>-<manual|periodic|upgrade>-<epoch ms>`, which the
//!   FlinkStateSnapshot loop then takes (an upgrade's is recorded as `alreadyExists`). The
//!   trigger type and time of a resource to create are written to the job's
//!   `savepointInfo` / `checkpointInfo` (`triggerType`, `triggerTimestamp`, without a
//!   `triggerId`) before it is created and cleared once it is: the name comes from them, so
//!   an operator that crashes in between creates the same resource on its next look, never a
//!   second one, and never forgets it.
//! - **Restores** see the job's newest COMPLETED savepoint resource as its last savepoint
//!   ([`view`]), so an upgrade, a resume or a restart takes it (or the legacy status entry,
//!   whichever is newer), with the restore-age guard on its `resultTimestamp`.
//! - **Retention** ([`retention`]): PERIODIC and UPGRADE resources (and MANUAL ones with
//!   `kubernetes.operator.savepoint.history.include-manual`) beyond
//!   `savepoint.history.max.count` or older than `savepoint.history.max.age` are deleted
//!   (their savepoints disposed of when `disposeOnDelete` says so); checkpoints beyond
//!   `execution.checkpointing.num-retained`. Whatever the job's settings, every resource of
//!   each snapshot type beyond the platform's `snapshot.resource.max.count` or older than its
//!   `snapshot.resource.max.age` is deleted too (without `savepoint.cleanup.enabled`, its
//!   files kept). Never the newest COMPLETED one, one under way, or one whose path the job
//!   may still need ([`Protected`]).
//! - The periodic clock is the later of the status's `lastPeriodicSavepointTimestamp` and the
//!   creation of the newest COMPLETED PERIODIC resource, so it survives anything that loses
//!   the status's value.

pub use flink_operator_api::FlinkStateSnapshotState as SnapshotState;
use flink_operator_api::{
    FlinkStateSnapshot, JobKind, SnapshotType,
    common::{JobStatus, Savepoint, SnapshotTriggerType},
    keys,
};
use kube::ResourceExt;

use super::protected::Protected;
use crate::policy::Policy;

/// One FlinkStateSnapshot of the job, as the cache shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSnapshot {
    pub name: String,
    pub kind: SnapshotType,
    /// From its `snapshot.trigger-type` label (a resource without one is MANUAL).
    pub trigger_type: SnapshotTriggerType,
    pub state: SnapshotState,
    pub path: Option<String>,
    pub created_ms: i64,
    /// When it completed or failed (`status.resultTimestamp`).
    pub result_ms: Option<i64>,
    pub failures: i32,
    /// It is being deleted.
    pub deleting: bool,
    /// Deleting it disposes of its savepoint (`spec.savepoint.disposeOnDelete`, true when
    /// unset, as the FlinkStateSnapshot loop reads it).
    pub disposes: bool,
}

impl JobSnapshot {
    fn completed_with_path(&self) -> Option<&str> {
        (self.state == SnapshotState::Completed)
            .then_some(self.path.as_deref())
            .flatten()
            .filter(|p| !p.is_empty())
    }

    /// Taken now or about to be: triggered, or waiting for its first trigger (not for a
    /// retry's back-off, which may be long).
    pub fn under_way(&self) -> bool {
        !self.deleting
            && match self.state {
                SnapshotState::InProgress => true,
                SnapshotState::TriggerPending => self.failures == 0,
                _ => false,
            }
    }
}

/// A FlinkStateSnapshot the loop creates for its job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSnapshot {
    pub kind: SnapshotType,
    pub trigger_type: SnapshotTriggerType,
    /// The trigger time: the name's epoch milliseconds.
    pub at_ms: i64,
    /// An existing savepoint it records (`alreadyExists`), for an upgrade's.
    pub existing_path: Option<String>,
    /// When that existing savepoint completed (epoch ms), stated on the resource
    /// ([`keys::annotations::SAVEPOINT_COMPLETED_AT`]) so that the FlinkStateSnapshot loop
    /// records it as its `resultTimestamp`; None: not known, and the resource says none.
    pub completed_ms: Option<i64>,
    /// `savepoint.disposeOnDelete` (`kubernetes.operator.savepoint.dispose-on-delete`).
    pub dispose_on_delete: bool,
}

impl NewSnapshot {
    /// `<resource>-<savepoint|checkpoint>-<manual|periodic|upgrade>-<epoch ms>`, as the Apache
    /// operator names them; for a resource whose name leaves no room for the suffix in 253
    /// characters (a FlinkSessionJob may be named so), its name shortened with a hash
    /// ([`crate::lifecycle::revisions::fitted_name`]).
    pub fn name(&self, resource: &str) -> String {
        let suffix = format!(
            "-{}-{}-{}",
            self.kind.name(),
            self.trigger_type.as_str().to_ascii_lowercase(),
            self.at_ms
        );
        crate::lifecycle::revisions::fitted_name(resource, &suffix)
    }

    /// `spec.backoffLimit`: a periodic savepoint that fails is not tried again (the next
    /// period takes another); any other is tried until it succeeds, as the Apache operator's
    /// are.
    pub fn backoff_limit(&self) -> i32 {
        match self.trigger_type {
            SnapshotTriggerType::Periodic => 0,
            _ => -1,
        }
    }
}

/// The resources recorded in `job` as to be created (see the module's documentation).
pub fn unrecorded(job: &JobStatus, dispose_on_delete: bool) -> Vec<NewSnapshot> {
    let mut wanted = Vec::new();
    if let Some(info) = &job.savepoint_info
        && info.trigger_id.is_none()
        && let (Some(trigger_type), Some(at_ms)) = (info.trigger_type, info.trigger_timestamp)
    {
        // An upgrade's savepoint is the one just recorded as the last, with its time.
        let existing = (trigger_type == SnapshotTriggerType::Upgrade)
            .then_some(info.last_savepoint.as_ref())
            .flatten()
            .filter(|s| s.location.is_some());
        let existing_path = existing.and_then(|s| s.location.clone());
        let completed_ms = existing.and_then(|s| s.time_stamp);
        if trigger_type != SnapshotTriggerType::Upgrade || existing_path.is_some() {
            wanted.push(NewSnapshot {
                kind: SnapshotType::Savepoint,
                trigger_type,
                at_ms,
                existing_path,
                completed_ms,
                dispose_on_delete,
            });
        }
    }
    if let Some(info) = &job.checkpoint_info
        && info.trigger_id.is_none()
        && let (Some(trigger_type), Some(at_ms)) = (info.trigger_type, info.trigger_timestamp)
    {
        wanted.push(NewSnapshot {
            kind: SnapshotType::Checkpoint,
            trigger_type,
            at_ms,
            existing_path: None,
            completed_ms: None,
            dispose_on_delete,
        });
    }
    wanted
}

/// Writes into `job` that `new` is to be created (the name's parts), before it is.
pub fn mark(job: &mut JobStatus, new: &NewSnapshot) {
    let (trigger_id, trigger_type, at) = super::trigger::trigger_fields(job, new.kind);
    *trigger_id = None;
    *trigger_type = Some(new.trigger_type);
    *at = Some(new.at_ms);
}

/// Clears what [`mark`] wrote, once the resource is created.
pub fn unmark(job: &mut JobStatus) {
    for new in unrecorded(job, false) {
        super::trigger::clear_trigger(job, new.kind);
    }
}

/// Whether a snapshot resource of the job is under way (a spec change waits for it, and no
/// other is started).
pub fn under_way(snapshots: &[JobSnapshot]) -> bool {
    snapshots.iter().any(JobSnapshot::under_way)
}

/// `job` as restores and the periodic schedule see it: its newest COMPLETED savepoint
/// resource as its last savepoint when that is newer than the status's, every COMPLETED
/// savepoint resource in its history (so that the time of the state it was started from is
/// known), the periodic savepoint clock from the newest COMPLETED PERIODIC savepoint resource,
/// and the periodic checkpoint clock from the newest PERIODIC checkpoint resource. Never
/// written back.
pub fn view(job: &JobStatus, snapshots: &[JobSnapshot]) -> JobStatus {
    let mut job = job.clone();
    // A periodic checkpoint's clock moves when it is asked for, completed or not.
    let periodic_checkpoint = snapshots
        .iter()
        .filter(|s| s.kind == SnapshotType::Checkpoint && s.trigger_type == SnapshotTriggerType::Periodic)
        .map(|s| s.created_ms)
        .max();
    if let Some(created) = periodic_checkpoint {
        let info = job.checkpoint_info.get_or_insert_with(Default::default);
        let clock = info.last_periodic_checkpoint_timestamp.unwrap_or(0).max(created);
        info.last_periodic_checkpoint_timestamp = Some(clock);
    }
    let completed: Vec<(&JobSnapshot, &str)> = snapshots
        .iter()
        .filter(|s| s.kind == SnapshotType::Savepoint && !s.deleting)
        .filter_map(|s| s.completed_with_path().map(|path| (s, path)))
        .collect();
    if completed.is_empty() {
        return job;
    }
    let info = job.savepoint_info.get_or_insert_with(Default::default);
    let as_savepoint = |(s, path): &(&JobSnapshot, &str)| Savepoint {
        time_stamp: s.result_ms,
        location: Some((*path).to_owned()),
        trigger_type: Some(s.trigger_type),
        ..Default::default()
    };
    let newest = completed
        .iter()
        .max_by_key(|(s, _)| s.result_ms.unwrap_or(i64::MIN));
    if let Some(newest) = newest {
        let stored_ms = info.last_savepoint.as_ref().and_then(|s| s.time_stamp);
        if newest.0.result_ms > stored_ms || info.last_savepoint.is_none() {
            info.last_savepoint = Some(as_savepoint(newest));
        }
    }
    let history = info.savepoint_history.get_or_insert_with(Default::default);
    history.extend(completed.iter().map(as_savepoint));
    let periodic = completed
        .iter()
        .filter(|(s, _)| s.trigger_type == SnapshotTriggerType::Periodic)
        .map(|(s, _)| s.created_ms)
        .max();
    if let Some(created) = periodic {
        let clock = info.last_periodic_savepoint_timestamp.unwrap_or(0).max(created);
        info.last_periodic_savepoint_timestamp = Some(clock);
    }
    job
}

/// The resources the retention deletes now, oldest first (see the module's documentation):
/// the job's own history's (with `savepoint.cleanup.enabled`), and the platform's caps on
/// every snapshot resource of the job (whatever its trigger, and whatever the job's own
/// settings). Never one under way, the newest COMPLETED one of the rule's set, or one whose
/// path the job may still need (`protected`).
pub fn retention<'a>(
    snapshots: &'a [JobSnapshot],
    policy: &Policy,
    protected: &Protected,
    now_ms: i64,
) -> Vec<&'a JobSnapshot> {
    let mut gone: Vec<&JobSnapshot> = Vec::new();
    for kind in [SnapshotType::Savepoint, SnapshotType::Checkpoint] {
        let of_kind: Vec<&JobSnapshot> = snapshots
            .iter()
            .filter(|s| s.kind == kind && !s.deleting)
            .collect();
        if policy.history_cleanup {
            let history: Vec<&JobSnapshot> = of_kind
                .iter()
                .copied()
                .filter(|s| match s.trigger_type {
                    SnapshotTriggerType::Periodic | SnapshotTriggerType::Upgrade => true,
                    SnapshotTriggerType::Manual => policy.history_include_manual,
                    SnapshotTriggerType::Unknown => false,
                })
                .collect();
            let (max_count, max_age_ms) = match kind {
                SnapshotType::Savepoint => (policy.history_max_count, Some(policy.history_max_age_ms)),
                SnapshotType::Checkpoint => (policy.checkpoints_retained, None),
            };
            gone.extend(beyond(history, max_count, max_age_ms, protected, now_ms));
        }
        gone.extend(beyond(
            of_kind,
            policy.snapshot_max_count,
            Some(policy.snapshot_max_age_ms),
            protected,
            now_ms,
        ));
    }
    gone.sort_by_key(|s| (s.created_ms, s.name.clone()));
    gone.dedup_by(|a, b| a.name == b.name);
    gone
}

/// Of `candidates`, those beyond `max_count` (the oldest first) or older than `max_age_ms`,
/// but never one under way, the newest COMPLETED one, or one holding a protected path; one
/// alone is never deleted.
fn beyond<'a>(
    mut candidates: Vec<&'a JobSnapshot>,
    max_count: usize,
    max_age_ms: Option<i64>,
    protected: &Protected,
    now_ms: i64,
) -> Vec<&'a JobSnapshot> {
    if candidates.len() < 2 {
        return Vec::new();
    }
    candidates.sort_by_key(|s| (s.created_ms, s.name.clone()));
    let newest_completed = candidates
        .iter()
        .rev()
        .find(|s| s.state == SnapshotState::Completed)
        .map(|s| s.name.clone());
    let mut excess = candidates.len().saturating_sub(max_count.max(1));
    let mut gone = Vec::new();
    for snapshot in candidates {
        let kept = Some(&snapshot.name) == newest_completed.as_ref()
            || snapshot.under_way()
            || snapshot
                .path
                .as_deref()
                .is_some_and(|path| protected.contains(path));
        let too_old = max_age_ms.is_some_and(|max| now_ms - snapshot.created_ms > max);
        if !kept && (excess > 0 || too_old) {
            excess = excess.saturating_sub(1);
            gone.push(snapshot);
        }
    }
    gone
}

/// The FlinkStateSnapshots of the job resource of kind `kind` with `meta`, from the
/// shared cache (observe's part): none when `policy` does not use them, and none created
/// before the resource was (a resource of the same name deleted earlier left those).
pub fn of_job(
    caches: &crate::caches::Caches,
    policy: &Policy,
    kind: JobKind,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Vec<JobSnapshot> {
    if !policy.snapshot_resources {
        return Vec::new();
    }
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    let name = meta.name.as_deref().unwrap_or_default();
    let since_ms = (meta.creation_timestamp.as_ref()).map_or(i64::MIN, |t| t.0.as_millisecond());
    caches
        .snapshots
        .list(namespace, |s| {
            let reference = s.spec.job_reference.as_ref();
            reference.and_then(|r| r.kind) == Some(kind)
                && reference.and_then(|r| r.name.as_deref()) == Some(name)
        })
        .iter()
        .filter_map(|s| job_snapshot(s))
        .filter(|s| s.created_ms >= since_ms - 1000)
        .collect()
}

/// The job resource of kind `kind` that a settled snapshot (COMPLETED, FAILED, ABANDONED)
/// refers to: its loop is woken, so that a change that waited for the snapshot goes on at
/// once rather than at its next look.
pub fn settled_job<K>(
    snapshot: &FlinkStateSnapshot,
    kind: JobKind,
) -> Option<kube::runtime::reflector::ObjectRef<K>>
where
    K: kube::Resource<DynamicType = ()>,
{
    let settled = matches!(
        snapshot.status.as_ref().and_then(|s| s.state),
        Some(SnapshotState::Completed | SnapshotState::Failed | SnapshotState::Abandoned)
    );
    let reference = snapshot.spec.job_reference.as_ref()?;
    let name = reference
        .name
        .as_deref()
        .filter(|_| settled && reference.kind == Some(kind))?;
    Some(kube::runtime::reflector::ObjectRef::new(name).within(&snapshot.namespace().unwrap_or_default()))
}

pub(crate) fn job_snapshot(snapshot: &FlinkStateSnapshot) -> Option<JobSnapshot> {
    let kind = snapshot.spec.snapshot_type()?;
    let status = snapshot.status.as_ref();
    let millis = |t: Option<&String>| t.and_then(|t| crate::timestamps::millis(t));
    Some(JobSnapshot {
        name: snapshot.name_any(),
        kind,
        trigger_type: snapshot
            .labels()
            .get(keys::labels::SNAPSHOT_TRIGGER_TYPE)
            .and_then(|t| t.parse().ok())
            .unwrap_or(SnapshotTriggerType::Manual),
        state: status.and_then(|s| s.state).unwrap_or_default(),
        path: status.and_then(|s| s.path.clone()),
        created_ms: snapshot
            .metadata
            .creation_timestamp
            .as_ref()
            .map_or(0, |t| t.0.as_millisecond()),
        result_ms: millis(status.and_then(|s| s.result_timestamp.as_ref())),
        failures: status.and_then(|s| s.failures).unwrap_or(0),
        deleting: snapshot.metadata.deletion_timestamp.is_some(),
        disposes: snapshot.spec.disposes_on_deletion(),
    })
}

#[cfg(test)]
#[path = "snapshot_resources/tests.rs"]
mod tests;
