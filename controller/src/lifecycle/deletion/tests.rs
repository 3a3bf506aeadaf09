//! What a deletion records of the state a job leaves.

use flink_operator_api::{
    FlinkDeploymentStatus,
    common::{Savepoint, SavepointInfo, SnapshotTriggerType as Trigger},
};

use super::*;
use crate::lifecycle::snapshot_resources::SnapshotState;
use flink_operator_api::SnapshotType;

const DELETED_MS: i64 = 1_765_000_000_000;
const HA: &str = "s3://cp/0000000000000000000000000000000a/chk-42";
const SUSPENDED_AT: &str = "s3://sp/savepoint-suspend";
const RETAINED: &str = "s3://cp/0000000000000000000000000000000a/chk-9";
const STARTED_FROM: &str = "s3://cp/0000000000000000000000000000000a/chk-7";

fn job(mode: &str) -> JobSpec {
    serde_json::from_value(serde_json::json!({"jarURI": "local:///job.jar", "upgradeMode": mode}))
        .expect("a job spec")
}

fn last_savepoint(path: &str, trigger: Trigger) -> JobStatus {
    JobStatus {
        upgrade_savepoint_path: Some(path.to_owned()),
        savepoint_info: Some(SavepointInfo {
            last_savepoint: Some(Savepoint {
                location: Some(path.to_owned()),
                time_stamp: Some(DELETED_MS - 60_000),
                trigger_type: Some(trigger),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn started_from(path: &str) -> JobStatus {
    JobStatus {
        upgrade_savepoint_path: Some(path.to_owned()),
        ..Default::default()
    }
}

fn ha_checkpoint() -> Option<RestorableState> {
    Some(RestorableState {
        kind: SnapshotType::Checkpoint,
        path: HA.to_owned(),
        timestamp_ms: None,
    })
}

fn record_of(path: &str, deleting: bool) -> JobSnapshot {
    JobSnapshot {
        name: "job-savepoint-upgrade-1".to_owned(),
        kind: SnapshotType::Savepoint,
        trigger_type: Trigger::Upgrade,
        state: SnapshotState::Completed,
        path: Some(path.to_owned()),
        created_ms: DELETED_MS,
        result_ms: None,
        failures: 0,
        deleting,
        disposes: false,
    }
}

struct Row {
    name: &'static str,
    mode: Option<&'static str>,
    status: Option<JobStatus>,
    snapshots: Vec<JobSnapshot>,
    ha: Option<RestorableState>,
    /// The latest checkpoint the JobManager reported (a cancelled session job's).
    latest: Option<RestorableState>,
    resources: bool,
    /// The path recorded; None: nothing is.
    recorded: Option<&'static str>,
}

fn row(name: &'static str, mode: &'static str) -> Row {
    Row {
        name,
        mode: Some(mode),
        status: None,
        snapshots: Vec::new(),
        ha: None,
        latest: None,
        resources: true,
        recorded: None,
    }
}

/// Point 5 of the state review: deleting a last-state deployment dropped the only pointer to
/// its latest checkpoint; every stateful job's deletion now records its latest state.
#[test]
fn a_deletion_records_the_latest_state_a_stateful_job_leaves() {
    let rows = vec![
        Row {
            ha: ha_checkpoint(),
            status: Some(started_from(STARTED_FROM)),
            recorded: Some(HA),
            ..row(
                "last-state, running or suspended: the checkpoint its HA metadata points at",
                "last-state",
            )
        },
        Row {
            status: Some(started_from(STARTED_FROM)),
            recorded: Some(STARTED_FROM),
            ..row(
                "last-state without HA metadata: the state status names",
                "last-state",
            )
        },
        Row {
            status: Some(last_savepoint(SUSPENDED_AT, Trigger::Upgrade)),
            resources: false,
            recorded: Some(SUSPENDED_AT),
            ..row(
                "savepoint mode suspended, no snapshot resources: the Event records it",
                "savepoint",
            )
        },
        Row {
            status: Some(last_savepoint(SUSPENDED_AT, Trigger::Manual)),
            recorded: Some(SUSPENDED_AT),
            ..row(
                "savepoint mode, a manual savepoint no resource records",
                "savepoint",
            )
        },
        Row {
            status: Some(last_savepoint(SUSPENDED_AT, Trigger::Upgrade)),
            snapshots: vec![record_of(SUSPENDED_AT, false)],
            ..row(
                "savepoint mode suspended: its UPGRADE resource records it already",
                "savepoint",
            )
        },
        Row {
            status: Some(last_savepoint(SUSPENDED_AT, Trigger::Upgrade)),
            recorded: Some(SUSPENDED_AT),
            ..row(
                "savepoint mode suspended, its UPGRADE resource deleted by the user: recorded again",
                "savepoint",
            )
        },
        Row {
            status: Some({
                let mut job = last_savepoint(SUSPENDED_AT, Trigger::Upgrade);
                let info = job.savepoint_info.as_mut().expect("set");
                info.trigger_type = Some(Trigger::Upgrade);
                info.trigger_timestamp = Some(DELETED_MS);
                job
            }),
            ..row(
                "a deletion's stop: its UPGRADE resource is being created in this pass",
                "savepoint",
            )
        },
        Row {
            status: Some(last_savepoint(SUSPENDED_AT, Trigger::Manual)),
            latest: Some(RestorableState {
                kind: SnapshotType::Checkpoint,
                path: RETAINED.to_owned(),
                timestamp_ms: Some(DELETED_MS - 1_000),
            }),
            recorded: Some(RETAINED),
            ..row(
                "a cancelled session job: its retained checkpoint, newer than its last savepoint",
                "last-state",
            )
        },
        Row {
            status: Some(last_savepoint(SUSPENDED_AT, Trigger::Manual)),
            latest: Some(RestorableState {
                kind: SnapshotType::Checkpoint,
                path: RETAINED.to_owned(),
                timestamp_ms: Some(DELETED_MS - 120_000),
            }),
            recorded: Some(SUSPENDED_AT),
            ..row(
                "a checkpoint older than the last savepoint is not the latest state",
                "last-state",
            )
        },
        Row {
            ha: ha_checkpoint(),
            snapshots: vec![record_of(HA, false)],
            ..row("a retried deletion: its record exists", "last-state")
        },
        Row {
            ha: ha_checkpoint(),
            snapshots: vec![record_of(HA, true)],
            recorded: Some(HA),
            ..row("a record being deleted is none", "last-state")
        },
        Row {
            ha: ha_checkpoint(),
            status: Some(started_from(STARTED_FROM)),
            ..row("stateless: nothing is kept", "stateless")
        },
        Row {
            mode: None,
            ha: ha_checkpoint(),
            ..row("a session cluster runs no job of its own", "last-state")
        },
        Row {
            status: Some(JobStatus::default()),
            ..row("a job that never recorded state", "last-state")
        },
    ];
    for row in rows {
        let spec = row.mode.map(job);
        let leaving = Leaving {
            resource: "job",
            job: spec.as_ref(),
            status: row.status.as_ref(),
            snapshots: &row.snapshots,
            last_checkpoint: row.ha.clone(),
            latest_checkpoint: row.latest.clone(),
            deleted_ms: DELETED_MS,
            snapshot_resources: row.resources,
        };
        let left = left_state(&leaving);
        assert_eq!(
            left.as_ref().map(|l| l.state.path.as_str()),
            row.recorded,
            "{}",
            row.name
        );
        let Some(left) = left else { continue };
        match &left.snapshot {
            Some((name, new)) => {
                assert!(row.resources, "{}", row.name);
                assert_eq!(
                    name,
                    &format!("job-savepoint-upgrade-{DELETED_MS}"),
                    "{}",
                    row.name
                );
                assert_eq!(new.trigger_type, Trigger::Upgrade);
                assert_eq!(new.existing_path.as_deref(), row.recorded);
                assert!(!new.dispose_on_delete, "{}: the files stay the user's", row.name);
            }
            None => assert!(!row.resources, "{}", row.name),
        }
    }
}

#[test]
fn a_long_resource_name_is_shortened_with_a_hash_in_the_records_name() {
    let spec = job("last-state");
    // A name that leaves no room for the suffix is shortened with a hash (the length rule
    // of snapshot names).
    let long = "j".repeat(250);
    let left = left_state(&Leaving {
        resource: &long,
        job: Some(&spec),
        status: None,
        snapshots: &[],
        last_checkpoint: ha_checkpoint(),
        latest_checkpoint: None,
        deleted_ms: DELETED_MS,
        snapshot_resources: true,
    })
    .expect("recorded");
    let (name, _) = left.snapshot.expect("a snapshot resource");
    assert!(name.len() <= 236, "{} characters", name.len());
    assert!(
        name.ends_with(&format!("-savepoint-upgrade-{DELETED_MS}")),
        "{name}"
    );
}

#[test]
fn recording_writes_the_path_to_status_asks_for_the_record_and_says_the_path() {
    let spec = job("last-state");
    let left = left_state(&Leaving {
        resource: "job",
        job: Some(&spec),
        status: None,
        snapshots: &[],
        last_checkpoint: ha_checkpoint(),
        latest_checkpoint: None,
        deleted_ms: DELETED_MS,
        snapshot_resources: true,
    })
    .expect("recorded");
    let mut status = FlinkDeploymentStatus::default();
    let mut actions: Vec<JobAction> = Vec::new();
    let mut events = Vec::new();
    let mut out = Out {
        actions: &mut actions,
        events: &mut events,
    };
    record_left_state(&mut status, left, &mut out);
    assert_eq!(
        status
            .job_status
            .as_ref()
            .and_then(|j| j.upgrade_savepoint_path.as_deref()),
        Some(HA)
    );
    assert!(
        matches!(&actions[..], [JobAction::CreateSnapshot(new)] if new.existing_path.as_deref() == Some(HA)),
        "{actions:?}"
    );
    assert_eq!(events.len(), 1);
    assert!(!events[0].warning);
    assert_eq!(events[0].reason, Reason::StateRecorded);
    assert!(events[0].note.contains(HA), "{}", events[0].note);
    assert!(
        events[0]
            .note
            .contains(&format!("job-savepoint-upgrade-{DELETED_MS}")),
        "{}",
        events[0].note
    );
}
