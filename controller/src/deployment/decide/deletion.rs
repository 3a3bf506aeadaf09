//! Deleting a FlinkDeployment, once the shared lifecycle has stopped its running job with a
//! savepoint where the settings say so ([`crate::lifecycle::machine`]): the cluster is
//! deleted (a session cluster only once no session job uses it), its high-availability
//! metadata once its JobManager has exited (the latest state the job leaves recorded first:
//! the checkpoint that metadata points at last, Kubernetes HA ConfigMaps or ZooKeeper nodes
//! alike; metadata that could not be read is kept, and the deletion waits), and the finalizer
//! removed.

use crate::{
    events::Reason,
    lifecycle::{
        deletion::{Leaving, left_state, record_left_state as record_left_state_in, records_left_state},
        restore::RestorableState,
    },
};
use flink_operator_api::SnapshotType;

use super::{Action, Decision, EventNote, FAST, Phase, Plan};

/// The savepoint of the deletion is recorded: the cluster goes.
pub(super) fn savepoint_recorded(mut d: Decision, path: &str) -> Plan {
    d.conditions(
        Phase::Deleting,
        &format!("the savepoint {path} is recorded; deleting the Flink cluster"),
    );
    cluster_deleted_now(&mut d);
    d.record_then_acting(vec![Action::DeleteCluster { keep_ha: false }])
}

/// When the cluster's deletion is sent, in status before it is: the wait for its JobManager
/// to exit runs from then (see [`super::cleanup`]), not from the resource's deletion, which
/// a deletion savepoint may have followed by longer than that wait.
fn cluster_deleted_now(d: &mut Decision) {
    let now = d.obs.now_ms;
    d.status
        .reconciliation_status
        .get_or_insert_with(Default::default)
        .reconciliation_timestamp = Some(now);
}

pub(super) fn tear_down(mut d: Decision, has_finalizer: bool) -> Plan {
    let session = d.fd.spec.job.is_none();
    let kept_for = if session && d.obs.policy.block_on_session_jobs && !d.obs.session_jobs.is_empty() {
        Some(format!(
            "the session jobs [{}] should be deleted first; the session cluster is kept until they are gone (or set kubernetes.operator.session.deletion.block-on-session-jobs to false)",
            d.obs.session_jobs.join(", ")
        ))
    } else if session && d.obs.policy.block_on_unmanaged_jobs && !d.obs.unmanaged_jobs.is_empty() {
        Some(format!(
            "the session cluster runs jobs no FlinkSessionJob manages [{}]; it is kept until they end (cancel them through its REST API, or set kubernetes.operator.session.deletion.block-on-unmanaged-jobs to false)",
            d.obs.unmanaged_jobs.join(", ")
        ))
    } else {
        None
    };
    if let Some(note) = kept_for {
        return held(d, note);
    }
    d.conditions(Phase::Deleting, "deleting the Flink cluster");
    if d.obs.cluster_exists {
        if d.obs.cluster_deleting {
            return d.done(FAST);
        }
        cluster_deleted_now(&mut d);
        record_latest_checkpoint(&mut d);
        return d.record_then_acting(vec![Action::DeleteCluster { keep_ha: false }]);
    }
    // The resource goes once its JobManager has exited, as it went with a foreground
    // deletion of the cluster: a resource of the same name created next starts clean.
    if let Some(plan) = super::cleanup::wait_for_job_manager_exit(&mut d) {
        return plan;
    }
    // Before the HA metadata goes, the state the job leaves is recorded: that metadata and
    // this status are the only pointers to it. Unread, the metadata stays until it is read:
    // what status names may be older than what the metadata points at.
    if let Some(note) = pointer_unread(&d) {
        return held(d, note);
    }
    let recorded = record_left_state(&mut d);
    if d.obs.ha_metadata {
        d.actions.push(Action::DeleteHaMetadata);
    }
    if has_finalizer {
        d.actions.push(Action::RemoveFinalizer);
    }
    if recorded {
        // The path in status before the metadata is deleted.
        return d.record_then(FAST);
    }
    d.done(FAST)
}

/// The job's latest checkpoint, as its JobManager reports it, into status before its
/// cluster goes, when it is newer than what status names: afterwards only the HA metadata
/// could name it, and none does for a job that ended (Flink's cleanup takes it out, and the
/// operator may not have seen it end) or without high availability. A later one in the HA
/// metadata is still recorded in its place (see [`record_left_state`]).
fn record_latest_checkpoint(d: &mut Decision) {
    let Some(checkpoint) = d.obs.latest_checkpoint.clone() else {
        return;
    };
    if !records_left_state(d.fd.spec.job.as_ref()) {
        return;
    }
    let job = d.job_status_mut();
    let named = crate::lifecycle::restore::newest(job, None);
    if named.is_none_or(|s| {
        s.path != checkpoint.path && s.timestamp_ms.is_none_or(|t| t < checkpoint.timestamp_ms)
    }) {
        let latest = RestorableState {
            kind: SnapshotType::Checkpoint,
            path: checkpoint.path,
            timestamp_ms: Some(checkpoint.timestamp_ms),
        };
        crate::lifecycle::restore::record(job, Some(&latest));
    }
}

/// The deletion waits, saying why in status and (once per reason) a Warning Event.
fn held(mut d: Decision, note: String) -> Plan {
    if d.status.error.as_deref() != Some(note.as_str()) {
        d.events
            .push(EventNote::warning(Reason::CleanupFailed, note.clone()));
    }
    d.status.error = Some(note.clone());
    d.conditions(Phase::Deleting, &note);
    d.done(super::WAIT)
}

/// Why the checkpoint the HA metadata points at last is not known, for a job whose state
/// the deletion records (whatever holds the metadata; only ZooKeeper's can be unreadable,
/// Kubernetes HA ConfigMaps are read from the cache when the API server does not answer).
fn pointer_unread(d: &Decision) -> Option<String> {
    let records = records_left_state(d.fd.spec.job.as_ref());
    let why = d
        .obs
        .ha_source
        .unreadable()
        .filter(|_| d.obs.ha_metadata && records)?;
    Some(format!(
        "the cluster's high-availability metadata could not be read ({why}); it points at the job's latest checkpoint, \
         which the deletion records before that metadata goes: the deletion waits until it can be read \
         (removing the finalizer by hand deletes the resource without that record, leaving the metadata)"
    ))
}

/// Records the latest state the job leaves (the checkpoint its HA metadata points at last,
/// else the newest state its status names; see [`crate::lifecycle::deletion::left_state`]).
/// Whether there was one to record.
fn record_left_state(d: &mut Decision) -> bool {
    let deleted_ms =
        d.fd.metadata
            .deletion_timestamp
            .as_ref()
            .map_or(d.obs.now_ms, |t| t.0.as_millisecond());
    let name = d.fd.metadata.name.clone().unwrap_or_default();
    let job = d.status.job_status.clone();
    // Flink files no time with it. It completed before this look, and it is newer than
    // what status names (see `Leaving::last_checkpoint`): stamped with this look's time, it
    // ranks so in status too, should the pass stop once the metadata is gone and the next
    // one record the state from status (a time unknown would rank below a last savepoint's).
    let last_checkpoint = d.obs.ha_latest_checkpoint.clone().map(|path| RestorableState {
        kind: SnapshotType::Checkpoint,
        path,
        timestamp_ms: Some(d.obs.now_ms),
    });
    let leaving = Leaving {
        resource: &name,
        job: d.fd.spec.job.as_ref(),
        status: job.as_ref(),
        snapshots: &d.obs.snapshots,
        last_checkpoint,
        // Read after the JobManager exited, the HA metadata's is the latest.
        latest_checkpoint: None,
        deleted_ms,
        snapshot_resources: d.obs.policy.snapshot_resources,
    };
    let Some(left) = left_state(&leaving) else {
        return false;
    };
    let (status, mut out) = d.parts();
    record_left_state_in(status, left, &mut out);
    true
}
