//! Savepoints and checkpoints of a running job: manual ones (the trigger nonces), periodic
//! savepoints, and the savepoint history with its cleanup (see [`savepoint_history`]).
//!
//! A trigger id is recorded (with the nonce that asked for it) before the trigger is sent,
//! so that a crash before it reaches Flink sends it again under the same id and a nonce is
//! never acted on twice; later reconciles poll it, so nothing waits on Flink. A spec
//! change waits for a pending snapshot: ending the job would lose what the user asked for.

use flink_operator_api::LifecycleStatus;
use flink_operator_api::common::{
    Checkpoint, FlinkJobState, JobSpec, JobStatus, Savepoint, SnapshotTriggerType,
};

use crate::flink::poll::SavepointPoll;

use super::{
    facts::{Facts, JobAction, Out},
    protected::{Protected, not_disposed, still_needed},
    restore, savepoint_history,
    snapshot_resources::{self, JobSnapshot, NewSnapshot},
    trigger::{clear_trigger, trigger_fields},
};
use crate::{
    events::{EventNote, Reason},
    policy::Policy,
};
use flink_operator_api::FlinkSpec;
use flink_operator_api::SnapshotType;

/// A pending savepoint (manual or periodic, not an upgrade's) or manual checkpoint: its
/// trigger id, its type and when it was triggered.
fn pending(job: &JobStatus, kind: SnapshotType) -> Option<(String, SnapshotTriggerType, Option<i64>)> {
    match kind {
        SnapshotType::Savepoint => {
            let info = job.savepoint_info.as_ref()?;
            let trigger_type = info.trigger_type.unwrap_or(SnapshotTriggerType::Manual);
            let trigger_id = info.trigger_id.clone()?;
            (trigger_type != SnapshotTriggerType::Upgrade).then_some((
                trigger_id,
                trigger_type,
                info.trigger_timestamp,
            ))
        }
        SnapshotType::Checkpoint => {
            let info = job.checkpoint_info.as_ref()?;
            Some((
                info.trigger_id.clone()?,
                SnapshotTriggerType::Manual,
                info.trigger_timestamp,
            ))
        }
    }
}

fn trigger_action(kind: SnapshotType, job_id: String, trigger_id: String) -> JobAction {
    match kind {
        SnapshotType::Savepoint => JobAction::TriggerSavepoint { job_id, trigger_id },
        SnapshotType::Checkpoint => JobAction::TriggerCheckpoint { job_id, trigger_id },
    }
}

/// Follows the pending manual or periodic savepoint and manual checkpoint into status;
/// whether one is still pending. `recorded` is the job of the recorded spec, whose nonces
/// asked for them.
pub fn settle<A: From<JobAction>>(
    status: &mut impl LifecycleStatus,
    facts: &Facts,
    recorded: Option<&JobSpec>,
    out: &mut Out<A>,
) -> bool {
    let savepoint = settle_one(status, facts, recorded, SnapshotType::Savepoint, out);
    let checkpoint = settle_one(status, facts, recorded, SnapshotType::Checkpoint, out);
    let resources = facts.policy.snapshot_resources && snapshot_resources::under_way(facts.snapshots);
    savepoint || checkpoint || resources
}

fn settle_one<A: From<JobAction>>(
    status: &mut impl LifecycleStatus,
    facts: &Facts,
    recorded: Option<&JobSpec>,
    kind: SnapshotType,
    out: &mut Out<A>,
) -> bool {
    let Some(job) = status.job_status() else {
        return false;
    };
    let Some((trigger_id, trigger_type, triggered_at)) = pending(job, kind) else {
        return false;
    };
    let job_id = job.job_id.clone().unwrap_or_default();
    let running = job.is_running();
    let name = format!("{} {}", trigger_type.as_str().to_lowercase(), kind.name());
    let periodic = trigger_type == SnapshotTriggerType::Periodic;
    let poll = match kind {
        SnapshotType::Savepoint => facts.savepoint,
        SnapshotType::Checkpoint => facts.checkpoint,
    };
    let job = status.job_status_mut();
    let failed = |job: &mut JobStatus, out: &mut Out<A>, why: String| {
        clear_trigger(job, kind);
        if periodic {
            // The next attempt waits a whole interval instead of retrying at once.
            job.savepoint_info
                .get_or_insert_with(Default::default)
                .last_periodic_savepoint_timestamp = triggered_at;
        }
        let reason = match kind {
            SnapshotType::Savepoint => Reason::SavepointFailed,
            SnapshotType::Checkpoint => Reason::CheckpointFailed,
        };
        out.event(EventNote::warning(
            reason,
            format!("The {name} of job {job_id} {why}"),
        ));
    };
    match poll {
        Some(SavepointPoll::Completed(result)) => {
            clear_trigger(job, kind);
            let nonces = recorded.cloned().unwrap_or_default();
            match kind {
                SnapshotType::Savepoint => {
                    let savepoint = Savepoint {
                        time_stamp: Some(facts.now_ms),
                        location: Some(result.clone()),
                        trigger_type: Some(trigger_type),
                        trigger_nonce: nonces.savepoint_trigger_nonce.filter(|_| !periodic),
                        ..Default::default()
                    };
                    savepoint_history::record(job, savepoint, triggered_at.filter(|_| periodic));
                    out.event(EventNote::normal(
                        Reason::SavepointCompleted,
                        format!("The {name} of job {job_id} completed: {result}"),
                    ));
                }
                SnapshotType::Checkpoint => {
                    // The entry is also where a checkpoint recorded for a restore keeps its
                    // time (`restore::record`), by which it ranks against a savepoint; the
                    // manual entry would drop it. A job that ended has nothing newer than
                    // the checkpoint recorded at its end (this one completed before it), so
                    // that entry stays; the Event says the manual one completed.
                    let ended = (job.state.as_ref()).is_some_and(FlinkJobState::is_globally_terminal);
                    let keeps_record = ended
                        && restore::recorded(job)
                            .is_some_and(|r| r.kind == SnapshotType::Checkpoint && r.timestamp_ms.is_some());
                    if !keeps_record {
                        job.checkpoint_info
                            .get_or_insert_with(Default::default)
                            .last_checkpoint = Some(Checkpoint {
                            time_stamp: Some(facts.now_ms),
                            trigger_type: Some(SnapshotTriggerType::Manual),
                            trigger_nonce: nonces.checkpoint_trigger_nonce,
                            ..Default::default()
                        });
                    }
                    out.event(EventNote::normal(
                        Reason::CheckpointCompleted,
                        format!("The manual checkpoint {result} of job {job_id} completed"),
                    ));
                }
            }
            false
        }
        Some(SavepointPoll::UnknownTrigger) if running => {
            // The trigger never reached the JobManager (or it restarted): sent again, same id.
            out.act(trigger_action(kind, job_id, trigger_id));
            true
        }
        Some(SavepointPoll::Failed(reason) | SavepointPoll::JobGone(reason)) => {
            failed(job, out, format!("failed: {reason}"));
            false
        }
        Some(SavepointPoll::UnknownTrigger) => {
            failed(
                job,
                out,
                "was lost: the JobManager does not know it and the job is not running".to_owned(),
            );
            false
        }
        Some(SavepointPoll::InProgress | SavepointPoll::Unreachable(_)) | None => true,
    }
}

/// The snapshot the running job is due for, if any: one a new nonce asks for (a savepoint
/// first, then a checkpoint), else a periodic savepoint, else a periodic checkpoint.
pub fn due<S: FlinkSpec>(
    spec: &S,
    recorded: &S,
    job: &JobStatus,
    facts: &Facts,
) -> Option<(SnapshotType, SnapshotTriggerType)> {
    if let Some(kind) = super::spec::new_nonce(spec, recorded) {
        return Some((kind, SnapshotTriggerType::Manual));
    }
    [
        (SnapshotType::Savepoint, facts.policy.periodic_savepoint.as_ref()),
        (
            SnapshotType::Checkpoint,
            facts.policy.periodic_checkpoint.as_ref(),
        ),
    ]
    .into_iter()
    .find(|(kind, schedule)| savepoint_history::periodic_due(job, *kind, *schedule, facts.now_ms))
    .map(|(kind, _)| (kind, SnapshotTriggerType::Periodic))
}

/// For a manual snapshot of `kind` (asked for by a new nonce in `spec`), records that nonce
/// in the recorded spec (`recorded` with it), so that it is asked for once.
pub fn record_nonce<S: FlinkSpec>(
    status: &mut impl LifecycleStatus,
    spec: &S,
    recorded: &S,
    kind: SnapshotType,
) {
    let mut with_nonce = recorded.clone();
    if let (Some(job), Some(wanted)) = (with_nonce.job_mut(), spec.job()) {
        match kind {
            SnapshotType::Savepoint => job.savepoint_trigger_nonce = wanted.savepoint_trigger_nonce,
            SnapshotType::Checkpoint => job.checkpoint_trigger_nonce = wanted.checkpoint_trigger_nonce,
        }
    }
    if let Some(rs) = status.reconciliation_mut().as_mut() {
        super::spec::record(rs, with_nonce);
    }
}

/// Records a trigger id for a snapshot of the running job, then sends the trigger (a manual
/// one's nonce is recorded first, see [`record_nonce`]).
pub fn trigger<A: From<JobAction>>(
    status: &mut impl LifecycleStatus,
    (kind, trigger_type): (SnapshotType, SnapshotTriggerType),
    facts: &Facts,
    out: &mut Out<A>,
) {
    let trigger_id = facts.fresh_trigger_id.to_owned();
    let job = status.job_status_mut();
    let job_id = job.job_id.clone().unwrap_or_default();
    let name = format!("{} {}", trigger_type.as_str().to_lowercase(), kind.name());
    let reason = match kind {
        SnapshotType::Savepoint => Reason::SavepointTriggered,
        SnapshotType::Checkpoint => Reason::CheckpointTriggered,
    };
    // A periodic checkpoint's schedule moves when it is asked for, whatever becomes of it (a
    // failed one is not asked for again before its next time).
    if trigger_type == SnapshotTriggerType::Periodic && kind == SnapshotType::Checkpoint {
        job.checkpoint_info
            .get_or_insert_with(Default::default)
            .last_periodic_checkpoint_timestamp = Some(facts.now_ms);
    }
    if facts.policy.snapshot_resources {
        // Taken by the FlinkStateSnapshot loop; the schedule moves now, as with a trigger.
        let new = NewSnapshot {
            kind,
            trigger_type,
            at_ms: facts.now_ms,
            existing_path: None,
            completed_ms: None,
            dispose_on_delete: kind == SnapshotType::Savepoint && facts.policy.dispose_on_delete,
        };
        if trigger_type == SnapshotTriggerType::Periodic && kind == SnapshotType::Savepoint {
            job.savepoint_info
                .get_or_insert_with(Default::default)
                .last_periodic_savepoint_timestamp = Some(facts.now_ms);
        }
        snapshot_resources::mark(job, &new);
        out.event(EventNote::normal(
            reason,
            format!("Requesting a {name} of job {job_id} as a FlinkStateSnapshot resource"),
        ));
        out.act(JobAction::CreateSnapshot(new));
        return;
    }
    let (id, kind_of, at) = trigger_fields(job, kind);
    *id = Some(trigger_id.clone());
    *kind_of = Some(trigger_type);
    *at = Some(facts.now_ms);
    out.event(EventNote::normal(
        reason,
        format!("Triggering a {name} of job {job_id}"),
    ));
    out.act(trigger_action(kind, job_id, trigger_id));
}

/// Which savepoints leave the job's history now (see [`savepoint_history::trim`]): never a
/// path the job may still need (`protected`), nor one a snapshot resource of the job holds
/// (its own retention decides about it).
pub fn history_trim(
    job: &JobStatus,
    policy: &Policy,
    snapshots: &[JobSnapshot],
    protected: &Protected,
    now_ms: i64,
) -> Option<savepoint_history::Trim> {
    let protected = protected
        .clone()
        .with_paths(snapshots.iter().filter_map(|s| s.path.as_deref()));
    savepoint_history::trim(job, policy, &protected, now_ms)
}

/// The paths of a job's status history to look up in its namespace: none unless the history's
/// trim would dispose of some now ([`history_trim`], with the job's own
/// `protected` paths and snapshot resources), so that a history with nothing to dispose of
/// costs no scan of the namespace; then every path of the history, so that one a savepoint
/// completing at this look pushes out is covered too.
pub fn history_to_look_up<'a>(
    job: &'a JobStatus,
    protected: &Protected,
    snapshots: &[JobSnapshot],
    policy: &Policy,
    now_ms: i64,
) -> Vec<&'a str> {
    let disposes = history_trim(job, policy, snapshots, protected, now_ms).is_some_and(|t| t.dispose);
    if !disposes {
        return Vec::new();
    }
    let history = (job.savepoint_info.as_ref())
        .and_then(|info| info.savepoint_history.as_deref())
        .unwrap_or_default();
    history.iter().filter_map(|s| s.location.as_deref()).collect()
}

/// Savepoints beyond the history's count or age leave it ([`history_trim`]), and are disposed
/// of when the cleanup is on, but for those another job resource of the namespace may still
/// need (a job may have been started from a path another job recorded): their files are
/// kept, each with a `SavepointNotDisposed` Warning naming who needs it, as a
/// FlinkStateSnapshot's deletion does. Whether the history changed, or waits for a look whose
/// observation looked its paths up in the namespace (one that a savepoint recorded at this
/// look pushed out): either way the resource is looked at again soon.
pub fn trim_history<A: From<JobAction>>(
    status: &mut impl LifecycleStatus,
    facts: &Facts,
    protected: &Protected,
    out: &mut Out<A>,
) -> bool {
    let Some(job) = status.job_status() else {
        return false;
    };
    let Some(mut trim) = history_trim(job, facts.policy, facts.snapshots, protected, facts.now_ms) else {
        return false;
    };
    let needed_by = facts.history_needed_by;
    if trim.dispose && trim.removed.iter().any(|path| needed_by.of(path).is_none()) {
        return true;
    }
    let mut kept = Vec::new();
    if trim.dispose {
        trim.removed.retain(|path| match needed_by.of(path) {
            Some(who) if !who.is_empty() => {
                kept.push(not_disposed(path, &still_needed(who)));
                false
            }
            _ => true,
        });
    }
    status
        .job_status_mut()
        .savepoint_info
        .get_or_insert_with(Default::default)
        .savepoint_history = Some(trim.keep.clone());
    if !trim.removed.is_empty() {
        out.event(EventNote::normal(trim.reason(), trim.note()));
    }
    for note in kept {
        out.event(EventNote::warning(Reason::SavepointNotDisposed, note));
    }
    if trim.dispose {
        for path in trim.removed {
            out.act(JobAction::DisposeSavepoint { path });
        }
    }
    true
}

/// Snapshot resources of the job beyond the history's or the platform's count or age (see
/// [`snapshot_resources::retention`]) are deleted; whether any are. Without
/// `savepoint.cleanup.enabled` their savepoints' files are kept.
pub fn trim_resources<A: From<JobAction>>(
    status: &impl LifecycleStatus,
    facts: &Facts,
    protected: &Protected,
    out: &mut Out<A>,
) -> bool {
    if !facts.policy.snapshot_resources {
        return false;
    }
    let protected = protected.clone().with_history(status.job_status());
    let gone = snapshot_resources::retention(facts.snapshots, facts.policy, &protected, facts.now_ms);
    if gone.is_empty() {
        return false;
    }
    let names: Vec<&str> = gone.iter().map(|s| s.name.as_str()).collect();
    let files = if facts.policy.history_cleanup {
        "their savepoints are disposed of where disposeOnDelete is set"
    } else {
        "their savepoints' files are kept: kubernetes.operator.savepoint.cleanup.enabled is false"
    };
    out.event(EventNote::normal(
        Reason::SavepointHistoryTrimmed,
        format!(
            "Deleting {} snapshot resource(s) beyond the history's or the platform's count or age ({files}): {}",
            names.len(),
            names.join(", ")
        ),
    ));
    for snapshot in gone {
        out.act(JobAction::DeleteSnapshot {
            name: snapshot.name.clone(),
            keep_files: !facts.policy.history_cleanup && snapshot.disposes,
        });
    }
    true
}
