//! The trigger of a job's pending snapshot as its status records it (id, type and time, in
//! `savepointInfo` or `checkpointInfo`): written before the trigger is sent, forgotten once
//! the snapshot settled. Read and written alike by the job's snapshots, its snapshot
//! resources, the stop-with-savepoint and deletion.

use flink_operator_api::common::{JobStatus, SnapshotTriggerType};

use flink_operator_api::SnapshotType;

/// The trigger id, type and time of the snapshot of `kind` in `job`.
pub fn trigger_fields(
    job: &mut JobStatus,
    kind: SnapshotType,
) -> (
    &mut Option<String>,
    &mut Option<SnapshotTriggerType>,
    &mut Option<i64>,
) {
    match kind {
        SnapshotType::Savepoint => {
            let info = job.savepoint_info.get_or_insert_with(Default::default);
            (
                &mut info.trigger_id,
                &mut info.trigger_type,
                &mut info.trigger_timestamp,
            )
        }
        SnapshotType::Checkpoint => {
            let info = job.checkpoint_info.get_or_insert_with(Default::default);
            (
                &mut info.trigger_id,
                &mut info.trigger_type,
                &mut info.trigger_timestamp,
            )
        }
    }
}

/// Forgets the trigger of a settled snapshot of `kind`.
pub fn clear_trigger(job: &mut JobStatus, kind: SnapshotType) {
    let present = match kind {
        SnapshotType::Savepoint => job.savepoint_info.is_some(),
        SnapshotType::Checkpoint => job.checkpoint_info.is_some(),
    };
    if present {
        let (id, trigger_type, at) = trigger_fields(job, kind);
        (*id, *trigger_type, *at) = (None, None, None);
        if let (SnapshotType::Savepoint, Some(info)) = (kind, job.savepoint_info.as_mut()) {
            info.checkpoint_id_at_trigger = None;
        }
    }
}
