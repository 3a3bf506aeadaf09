//! Ending a running job with a savepoint, for an upgrade or a suspension (and, through
//! [`super::deletion`], a deletion): the trigger id is recorded before the stop is sent;
//! a failed savepoint is retried within `kubernetes.operator.job.upgrade.savepoint.grace-period`
//! (see [`super::savepoint_retry`]), and the job keeps running when it cannot be taken.

use flink_operator_api::LifecycleStatus;
use flink_operator_api::common::{ResourceLifecycleState, Savepoint, SnapshotTriggerType};

use crate::flink::poll::{LateSavepoint, SavepointPoll};

use super::{
    facts::{Facts, JobAction, Out},
    restore::RestorableState,
    savepoint_history,
    savepoint_retry::{self, Attempt, Failure},
    snapshot_resources::{self, NewSnapshot},
    trigger::clear_trigger,
};
use crate::events::{EventNote, Reason};
use crate::flink::job::JobObservation;
use flink_operator_api::SnapshotType;

/// The trigger id of an upgrade (or deletion) savepoint that was started and not settled.
pub fn pending_trigger(status: &impl LifecycleStatus) -> Option<String> {
    let info = status.job_status()?.savepoint_info.as_ref()?;
    info.trigger_id
        .clone()
        .filter(|_| info.trigger_type == Some(SnapshotTriggerType::Upgrade))
}

/// What became of an attempt to stop the job with a savepoint.
#[derive(Debug, Clone, PartialEq)]
pub enum Stopping {
    /// The trigger id is recorded in status and the stop is among the actions: write the
    /// status first.
    Sent,
    /// Not yet: the job's tasks are not all running, or a failed attempt's back-off runs;
    /// look again in this many seconds (`note` says why).
    Wait { seconds: u64, note: String },
    /// No savepoint can be taken within the grace period: the change is refused and the
    /// job keeps running.
    GiveUp(String),
}

/// The job a stop-with-savepoint ends, and whether it drains it (a suspension, when
/// `kubernetes.operator.job.drain-on-savepoint-deletion` says so).
#[derive(Debug, Clone, Copy)]
pub struct StopOf<'a> {
    pub job_id: &'a str,
    pub drain: bool,
}

/// Records a fresh trigger id and stops the job with a savepoint under it, once all the
/// job's tasks run and no back-off of a failed attempt runs. `verb` names what the stop is
/// for ("upgrade", "suspend").
pub fn stop_with_savepoint<A: From<JobAction>>(
    status: &mut impl LifecycleStatus,
    stop: StopOf,
    verb: &str,
    facts: &Facts,
    out: &mut Out<A>,
) -> Stopping {
    let StopOf { job_id, drain } = stop;
    let now = facts.now_ms;
    let recorded = status
        .job_status()
        .and_then(|j| j.savepoint_info.as_ref())
        .and_then(|i| i.upgrade_retry.clone());
    let retry = savepoint_retry::attempts(recorded.as_ref(), facts.generation, now);
    let ready = facts.job.is_some_and(|j| j.ready_for_savepoint());
    match savepoint_retry::before_trigger(&retry, ready, facts.policy.savepoint_grace_ms, now) {
        Attempt::Now => {}
        Attempt::Wait { seconds, note } => {
            let failed = retry.last_failure.is_some();
            status
                .job_status_mut()
                .savepoint_info
                .get_or_insert_with(Default::default)
                .upgrade_retry = Some(retry);
            *status.lifecycle_state_mut() = Some(ResourceLifecycleState::Upgrading);
            // A failure is the reason the change is not done yet; tasks that still deploy
            // are not an error.
            *status.error_mut() = failed.then(|| note.clone());
            return Stopping::Wait {
                seconds: seconds.max(2),
                note,
            };
        }
        Attempt::GiveUp(why) => {
            if let Some(info) = status.job_status_mut().savepoint_info.as_mut() {
                info.upgrade_retry = None;
            }
            return Stopping::GiveUp(why);
        }
    }
    let trigger_id = record_trigger(status, facts);
    if let Some(info) = status.job_status_mut().savepoint_info.as_mut() {
        info.upgrade_retry = Some(retry);
    }
    *status.lifecycle_state_mut() = Some(ResourceLifecycleState::Upgrading);
    out.event(EventNote::normal(
        Reason::SavepointTriggered,
        format!("Stopping job {job_id} with a savepoint for the {verb}"),
    ));
    out.act(JobAction::StopWithSavepoint {
        job_id: job_id.to_owned(),
        trigger_id,
        drain,
    });
    show_retried_failure(status);
    Stopping::Sent
}

/// The failure of the previous attempt, when the stop under way is its retry.
fn retried_failure(status: &impl LifecycleStatus) -> Option<String> {
    status
        .job_status()
        .and_then(|j| j.savepoint_info.as_ref())
        .and_then(|i| i.upgrade_retry.as_ref())
        .filter(|r| r.last_failure.is_some())
        .map(|r| format!("{}; trying again", savepoint_retry::failed_attempts(r)))
}

/// While the attempt after a failed one is under way, that failure stays the reason the
/// change is not done yet: in `status.error` (which observing the running job has just
/// cleared), not only in the Event of the failed attempt.
fn show_retried_failure(status: &mut impl LifecycleStatus) {
    if let Some(note) = retried_failure(status) {
        *status.error_mut() = Some(note);
    }
}

/// The conditions' message for a stop under way: `what`, with the failure of the previous
/// attempt when this one is its retry.
pub fn under_way(status: &impl LifecycleStatus, what: &str) -> String {
    match retried_failure(status) {
        Some(note) => format!("{what} ({note})"),
        None => what.to_owned(),
    }
}

/// Records a fresh trigger id for a stop-with-savepoint (of a change or a deletion) before
/// the stop is sent, with the highest checkpoint id the job shows now (by which its
/// savepoint is found if the JobManager forgets the stop, see [`crate::flink::poll`]);
/// returns it.
pub fn record_trigger(status: &mut impl LifecycleStatus, facts: &Facts) -> String {
    let trigger_id = facts.fresh_trigger_id.to_owned();
    let checkpoint_id = match facts.job {
        Some(JobObservation::Found { checkpoint_id, .. }) => *checkpoint_id,
        _ => None,
    };
    let info = status
        .job_status_mut()
        .savepoint_info
        .get_or_insert_with(Default::default);
    info.trigger_id = Some(trigger_id.clone());
    info.trigger_type = Some(SnapshotTriggerType::Upgrade);
    info.trigger_timestamp = Some(facts.now_ms);
    info.checkpoint_id_at_trigger = checkpoint_id;
    trigger_id
}

/// Where a recorded stop-with-savepoint stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Stopped {
    /// It completed: the savepoint is recorded (last savepoint, history, the path to start
    /// from) and the trigger cleared; the new spec is committed with this state next.
    Completed(RestorableState),
    /// Still under way (or the JobManager did not answer): look again soon.
    Pending,
    /// The stop never reached the JobManager (or it restarted) and the job runs: sent
    /// again under the same trigger id.
    Resent,
    /// It failed and is tried again in this many seconds (the failure is recorded).
    Retry { seconds: u64, note: String },
    /// No savepoint: the change is refused with this reason; the job keeps running if it
    /// still does.
    Refused(String),
}

/// Follows the job's recorded stop-with-savepoint `trigger_id`.
pub fn follow<A: From<JobAction>>(
    status: &mut impl LifecycleStatus,
    stop: StopOf,
    trigger_id: &str,
    facts: &Facts,
    out: &mut Out<A>,
) -> Stopped {
    let StopOf { job_id, drain } = stop;
    // What Flink says now; the recorded state only when the job was not looked at.
    let running = match facts.job {
        Some(_) => facts.running(),
        None => status.job_status().is_some_and(|j| j.is_running()),
    };
    if let Some((path, _, place)) = late_savepoint(facts).filter(|_| !running) {
        // When it completed is known only as Flink's or the storage's clock tells it: it is
        // taken as the time the stop was sent (the operator's clock, as every age it is
        // compared with), which it cannot be older than.
        let sent_ms = status
            .job_status()
            .and_then(|j| j.savepoint_info.as_ref())
            .and_then(|i| i.trigger_timestamp)
            .unwrap_or(facts.now_ms);
        record_savepoint_at(status, path, sent_ms, facts, out);
        if let Some(info) = status.job_status_mut().savepoint_info.as_mut() {
            info.upgrade_retry = None;
        }
        out.event(EventNote::normal(
            Reason::SavepointCompleted,
            format!(
                "The savepoint of job {job_id} completed: {path} (found in {place}; the JobManager no longer keeps the stop's result)"
            ),
        ));
        return Stopped::Completed(RestorableState {
            kind: SnapshotType::Savepoint,
            path: path.to_owned(),
            timestamp_ms: Some(sent_ms),
        });
    }
    let not_found = match facts.late_savepoint {
        Some(LateSavepoint::NotFound(looked)) => Some(looked.as_str()),
        _ => None,
    };
    match facts.savepoint {
        Some(SavepointPoll::Completed(path)) => {
            record_savepoint(status, path, facts, out);
            if let Some(info) = status.job_status_mut().savepoint_info.as_mut() {
                info.upgrade_retry = None;
            }
            out.event(EventNote::normal(
                Reason::SavepointCompleted,
                format!("The savepoint of job {job_id} completed: {path}"),
            ));
            Stopped::Completed(RestorableState {
                kind: SnapshotType::Savepoint,
                path: path.clone(),
                timestamp_ms: Some(facts.now_ms),
            })
        }
        Some(SavepointPoll::UnknownTrigger) if running => {
            out.act(JobAction::StopWithSavepoint {
                job_id: job_id.to_owned(),
                trigger_id: trigger_id.to_owned(),
                drain,
            });
            show_retried_failure(status);
            Stopped::Resent
        }
        Some(SavepointPoll::UnknownTrigger) => {
            clear_trigger(status.job_status_mut(), SnapshotType::Savepoint);
            Stopped::Refused(match not_found {
                // The stop may have written a savepoint no one can point at: starting the
                // job from older state (or none) would drop what the stopped job wrote.
                Some(looked) => format!(
                    "the JobManager no longer knows the stop-with-savepoint of job {job_id} and the job is not running; \
                     its savepoint was not found: {looked}. The job is not started from older state or without state: \
                     to start it from its savepoint, set spec.job.initialSavepointPath to it and change spec.job.savepointRedeployNonce"
                ),
                None => format!(
                    "the JobManager lost the savepoint of job {job_id} and the job is not running; whether a savepoint was written is unknown"
                ),
            })
        }
        Some(SavepointPoll::Failed(reason)) => {
            let info = status
                .job_status()
                .and_then(|j| j.savepoint_info.clone())
                .unwrap_or_default();
            clear_trigger(status.job_status_mut(), SnapshotType::Savepoint);
            match savepoint_retry::failed(
                &info,
                facts.generation,
                reason,
                facts.policy.savepoint_grace_ms,
                facts.now_ms,
            ) {
                Failure::Retry { retry, seconds, note } => {
                    out.event(EventNote::warning(
                        Reason::SavepointFailed,
                        format!("Job {job_id}: {note}; trying again in {seconds} s"),
                    ));
                    status
                        .job_status_mut()
                        .savepoint_info
                        .get_or_insert_with(Default::default)
                        .upgrade_retry = Some(retry);
                    *status.lifecycle_state_mut() = Some(ResourceLifecycleState::Upgrading);
                    *status.error_mut() = Some(note.clone());
                    Stopped::Retry { seconds, note }
                }
                Failure::GiveUp(why) => {
                    if let Some(info) = status.job_status_mut().savepoint_info.as_mut() {
                        info.upgrade_retry = None;
                    }
                    Stopped::Refused(format!(
                        "{why}; job {job_id} keeps running with the previous spec"
                    ))
                }
            }
        }
        Some(SavepointPoll::JobGone(reason)) => {
            clear_trigger(status.job_status_mut(), SnapshotType::Savepoint);
            if let Some(info) = status.job_status_mut().savepoint_info.as_mut() {
                info.upgrade_retry = None;
            }
            Stopped::Refused(match not_found {
                Some(looked) => format!(
                    "job {job_id} ended before its savepoint completed: {reason}; no savepoint of the stop was found: {looked}"
                ),
                None => format!("job {job_id} ended before its savepoint completed: {reason}"),
            })
        }
        Some(SavepointPoll::InProgress | SavepointPoll::Unreachable(_)) | None => {
            *status.lifecycle_state_mut() = Some(ResourceLifecycleState::Upgrading);
            show_retried_failure(status);
            Stopped::Pending
        }
    }
}

/// The savepoint of the recorded stop found after the JobManager forgot the stop (its
/// path, its checkpoint id, where it was found), while the poll says it forgot it.
pub fn late_savepoint<'a>(facts: &Facts<'a>) -> Option<(&'a str, i64, &'a str)> {
    match (facts.savepoint, facts.late_savepoint) {
        (
            Some(SavepointPoll::UnknownTrigger | SavepointPoll::JobGone(_)),
            Some(LateSavepoint::Found {
                path,
                checkpoint_id,
                place,
            }),
        ) => Some((path.as_str(), *checkpoint_id, place.as_str())),
        _ => None,
    }
}

/// Records a completed upgrade (or deletion) savepoint as the last savepoint, in the
/// history, and as the state the next job starts from; clears its trigger.
/// Records the completed savepoint of a stop (for a change or a deletion) as the state the
/// next job starts from and the last savepoint; with snapshot resources, also as an UPGRADE
/// FlinkStateSnapshot that records it (`alreadyExists`), whose history it then is.
pub fn record_savepoint<A: From<JobAction>>(
    status: &mut impl LifecycleStatus,
    path: &str,
    facts: &Facts,
    out: &mut Out<A>,
) {
    record_savepoint_at(status, path, facts.now_ms, facts, out);
}

/// [`record_savepoint`], of a savepoint completed at `completed_ms`.
pub fn record_savepoint_at<A: From<JobAction>>(
    status: &mut impl LifecycleStatus,
    path: &str,
    completed_ms: i64,
    facts: &Facts,
    out: &mut Out<A>,
) {
    let job = status.job_status_mut();
    clear_trigger(job, SnapshotType::Savepoint);
    job.upgrade_savepoint_path = Some(path.to_owned());
    let savepoint = Savepoint {
        time_stamp: Some(completed_ms),
        location: Some(path.to_owned()),
        trigger_type: Some(SnapshotTriggerType::Upgrade),
        ..Default::default()
    };
    if !facts.policy.snapshot_resources {
        savepoint_history::record(job, savepoint, None);
        return;
    }
    job.savepoint_info
        .get_or_insert_with(Default::default)
        .last_savepoint = Some(savepoint);
    let new = NewSnapshot {
        kind: SnapshotType::Savepoint,
        trigger_type: SnapshotTriggerType::Upgrade,
        at_ms: facts.now_ms,
        existing_path: Some(path.to_owned()),
        completed_ms: Some(completed_ms),
        dispose_on_delete: facts.policy.dispose_on_delete,
    };
    snapshot_resources::mark(job, &new);
    out.act(JobAction::CreateSnapshot(new));
}
