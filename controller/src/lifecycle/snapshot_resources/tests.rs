use flink_operator_api::common::{SavepointInfo, SnapshotTriggerType as Trigger};

use super::*;
use flink_operator_api::SnapshotType;

use crate::fixtures::NOW;
const MIN: i64 = 60_000;

fn snapshot(name: &str, trigger: Trigger, state: SnapshotState, minutes_ago: i64) -> JobSnapshot {
    JobSnapshot {
        name: name.to_owned(),
        kind: SnapshotType::Savepoint,
        trigger_type: trigger,
        state,
        path: (state == SnapshotState::Completed).then(|| format!("file:///sp/{name}")),
        created_ms: NOW - minutes_ago * MIN,
        result_ms: (state == SnapshotState::Completed).then(|| NOW - minutes_ago * MIN + 1000),
        failures: 0,
        deleting: false,
        disposes: true,
    }
}

fn completed(name: &str, trigger: Trigger, minutes_ago: i64) -> JobSnapshot {
    snapshot(name, trigger, SnapshotState::Completed, minutes_ago)
}

fn checkpoint(name: &str, minutes_ago: i64) -> JobSnapshot {
    JobSnapshot {
        kind: SnapshotType::Checkpoint,
        ..completed(name, Trigger::Manual, minutes_ago)
    }
}

fn policy(max_count: usize, max_age_min: i64) -> Policy {
    Policy {
        history_max_count: max_count,
        history_max_age_ms: max_age_min * MIN,
        ..Policy::default()
    }
}

fn names(gone: &[&JobSnapshot]) -> Vec<String> {
    gone.iter().map(|s| s.name.clone()).collect()
}

#[test]
fn retention_keeps_the_count_and_age_and_never_the_newest_completed_one_under_way_or_started_from() {
    use SnapshotState::*;
    use Trigger::*;
    type Case<'a> = (&'a str, Vec<JobSnapshot>, Policy, Option<&'a str>, &'a [&'a str]);
    let cases: Vec<Case> = vec![
        (
            "within count and age",
            vec![completed("a", Periodic, 30), completed("b", Periodic, 20)],
            policy(2, 60),
            None,
            &[],
        ),
        (
            "beyond the count: the oldest go first",
            vec![
                completed("a", Periodic, 30),
                completed("b", Upgrade, 20),
                completed("c", Periodic, 10),
            ],
            policy(1, 600),
            None,
            &["a", "b"],
        ),
        (
            "beyond the age: the newest COMPLETED stays however old",
            vec![completed("a", Periodic, 300), completed("b", Periodic, 200)],
            policy(10, 60),
            None,
            &["a"],
        ),
        (
            "a newer failed one does not count as the newest COMPLETED",
            vec![
                completed("a", Periodic, 300),
                snapshot("b", Periodic, Failed, 200),
            ],
            policy(1, 60),
            None,
            &["b"],
        ),
        (
            "one under way is never deleted",
            vec![
                completed("a", Periodic, 30),
                completed("b", Periodic, 20),
                snapshot("c", Periodic, InProgress, 1),
            ],
            policy(1, 600),
            None,
            &["a"],
        ),
        (
            "the state the job started from stays",
            vec![
                completed("a", Upgrade, 30),
                completed("b", Periodic, 20),
                completed("c", Periodic, 10),
            ],
            policy(1, 600),
            Some("file:///sp/a"),
            &["b"],
        ),
        (
            "manual ones are kept, as the Apache operator keeps them",
            vec![
                completed("a", Manual, 30),
                completed("b", Manual, 20),
                completed("c", Periodic, 10),
            ],
            policy(1, 600),
            None,
            &[],
        ),
        (
            "manual ones count with include-manual",
            vec![
                completed("a", Manual, 30),
                completed("b", Manual, 20),
                completed("c", Periodic, 10),
            ],
            Policy {
                history_include_manual: true,
                ..policy(1, 600)
            },
            None,
            &["a", "b"],
        ),
        (
            "nothing without cleanup",
            vec![completed("a", Periodic, 30), completed("b", Periodic, 20)],
            Policy {
                history_cleanup: false,
                ..policy(1, 600)
            },
            None,
            &[],
        ),
        (
            "a single one is never deleted",
            vec![completed("a", Periodic, 3000)],
            policy(1, 1),
            None,
            &[],
        ),
        (
            "checkpoints keep num-retained, with no age limit",
            vec![
                checkpoint("a", 3000),
                checkpoint("b", 2000),
                checkpoint("c", 1000),
            ],
            Policy {
                history_include_manual: true,
                checkpoints_retained: 2,
                ..policy(1, 1)
            },
            None,
            &["a"],
        ),
    ];
    for (case, snapshots, policy, started_from, expected) in cases {
        let protected = Protected::default().with_paths(started_from);
        let gone = retention(&snapshots, &policy, &protected, NOW);
        assert_eq!(names(&gone), *expected, "{case}");
    }
}

/// The platform's caps bound every snapshot resource of the job, whatever its trigger and
/// whatever the job's own settings: the flood of a spec asking for a million retained
/// checkpoints, or of manual snapshots the history never removes.
#[test]
fn the_platform_caps_bound_every_snapshot_resource_but_never_one_the_job_may_need() {
    use SnapshotState::*;
    use Trigger::*;
    let capped = |count: usize, age_min: i64| Policy {
        snapshot_max_count: count,
        snapshot_max_age_ms: age_min * MIN,
        checkpoints_retained: 1_000_000,
        history_max_count: 1_000_000,
        history_max_age_ms: i64::MAX,
        ..Policy::default()
    };
    let flood: Vec<JobSnapshot> = (0..6)
        .map(|i| JobSnapshot {
            trigger_type: Periodic,
            ..checkpoint(&format!("cp{i}"), 60 - i)
        })
        .collect();
    type Case<'a> = (&'a str, Vec<JobSnapshot>, Policy, Protected, &'a [&'a str]);
    let cases: Vec<Case> = vec![
        (
            "checkpoints beyond the cap whatever num-retained says",
            flood.clone(),
            capped(3, 600),
            Protected::default(),
            &["cp0", "cp1", "cp2"],
        ),
        (
            "manual savepoints, which the history keeps, beyond the cap",
            vec![
                completed("a", Manual, 30),
                completed("b", Manual, 20),
                completed("c", Manual, 10),
            ],
            capped(2, 600),
            Protected::default(),
            &["a"],
        ),
        (
            "older than the platform's age, of any trigger; the newest completed stays",
            vec![
                completed("a", Unknown, 300),
                completed("b", Upgrade, 200),
                snapshot("c", Manual, Failed, 100),
            ],
            capped(100, 60),
            Protected::default(),
            &["a", "c"],
        ),
        (
            "without savepoint cleanup the caps still hold",
            flood.clone(),
            Policy {
                history_cleanup: false,
                ..capped(4, 600)
            },
            Protected::default(),
            &["cp0", "cp1"],
        ),
        (
            "a path the job may still need stays, under way stays",
            vec![
                completed("a", Manual, 30),
                completed("b", Periodic, 20),
                snapshot("c", Periodic, InProgress, 1),
                completed("d", Periodic, 10),
            ],
            capped(1, 600),
            Protected::default().with_paths(["file:///sp/a"]),
            &["b"],
        ),
        (
            "within the caps nothing goes",
            flood.clone(),
            capped(6, 600),
            Protected::default(),
            &[],
        ),
    ];
    for (case, snapshots, policy, protected, expected) in cases {
        assert_eq!(
            names(&retention(&snapshots, &policy, &protected, NOW)),
            *expected,
            "{case}"
        );
    }
}

#[test]
fn one_being_deleted_is_neither_counted_nor_deleted_again() {
    let mut old = completed("a", Trigger::Periodic, 30);
    old.deleting = true;
    let snapshots = vec![
        old,
        completed("b", Trigger::Periodic, 20),
        completed("c", Trigger::Periodic, 10),
    ];
    assert_eq!(
        names(&retention(
            &snapshots,
            &policy(2, 600),
            &Protected::default(),
            NOW
        )),
        Vec::<String>::new()
    );
}

#[test]
fn restores_see_the_newest_completed_savepoint_resource_as_the_last_savepoint() {
    let status_last = |minutes_ago: i64| JobStatus {
        savepoint_info: Some(SavepointInfo {
            last_savepoint: Some(Savepoint {
                time_stamp: Some(NOW - minutes_ago * MIN),
                location: Some("file:///sp/legacy".into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let snapshots = vec![
        completed("old", Trigger::Manual, 50),
        completed("new", Trigger::Periodic, 10),
        snapshot("failed", Trigger::Manual, SnapshotState::Failed, 1),
        checkpoint("cp", 1),
    ];
    let last = |job: &JobStatus| {
        job.savepoint_info
            .as_ref()
            .and_then(|i| i.last_savepoint.as_ref())
            .and_then(|s| s.location.clone())
    };
    // A resource newer than the status's entry wins; an older one does not.
    assert_eq!(
        last(&view(&status_last(30), &snapshots)).as_deref(),
        Some("file:///sp/new")
    );
    assert_eq!(
        last(&view(&status_last(5), &snapshots)).as_deref(),
        Some("file:///sp/legacy")
    );
    assert_eq!(
        last(&view(&JobStatus::default(), &snapshots)).as_deref(),
        Some("file:///sp/new")
    );
    // Its time is the resource's resultTimestamp (what the restore-age guard reads).
    let seen = view(&JobStatus::default(), &snapshots);
    let info = seen.savepoint_info.unwrap();
    assert_eq!(
        info.last_savepoint.unwrap().time_stamp,
        Some(NOW - 10 * MIN + 1000)
    );
    // Every completed savepoint resource is known by path, so the age of the state a job
    // started from is known.
    let known: Vec<_> = info
        .savepoint_history
        .unwrap()
        .into_iter()
        .filter_map(|s| s.location)
        .collect();
    assert_eq!(known, ["file:///sp/old", "file:///sp/new"]);
    // The periodic clock: the newest COMPLETED PERIODIC one's creation.
    assert_eq!(info.last_periodic_savepoint_timestamp, Some(NOW - 10 * MIN));
    // Nothing to see: the status as it is.
    assert_eq!(view(&status_last(5), &[]), status_last(5));
}

#[test]
fn a_resource_to_create_is_marked_by_its_name_parts_and_found_again_until_unmarked() {
    let mut job = JobStatus::default();
    let periodic = NewSnapshot {
        kind: SnapshotType::Savepoint,
        trigger_type: Trigger::Periodic,
        at_ms: NOW,
        existing_path: None,
        completed_ms: None,
        dispose_on_delete: true,
    };
    let manual_checkpoint = NewSnapshot {
        kind: SnapshotType::Checkpoint,
        trigger_type: Trigger::Manual,
        at_ms: NOW + 1,
        existing_path: None,
        completed_ms: None,
        dispose_on_delete: true,
    };
    mark(&mut job, &periodic);
    mark(&mut job, &manual_checkpoint);
    assert_eq!(
        unrecorded(&job, true),
        vec![periodic.clone(), manual_checkpoint.clone()]
    );
    assert_eq!(periodic.name("basic"), format!("basic-savepoint-periodic-{NOW}"));
    assert_eq!(
        manual_checkpoint.name("basic"),
        format!("basic-checkpoint-manual-{}", NOW + 1)
    );
    unmark(&mut job);
    assert_eq!(unrecorded(&job, true), vec![]);

    // An upgrade's records the last savepoint, the one its stop took, with its time.
    let upgrade = NewSnapshot {
        kind: SnapshotType::Savepoint,
        trigger_type: Trigger::Upgrade,
        at_ms: NOW,
        existing_path: Some("file:///sp/up".into()),
        completed_ms: Some(NOW - 1_000),
        dispose_on_delete: false,
    };
    job.savepoint_info
        .get_or_insert_with(Default::default)
        .last_savepoint = Some(Savepoint {
        location: Some("file:///sp/up".into()),
        time_stamp: Some(NOW - 1_000),
        ..Default::default()
    });
    mark(&mut job, &upgrade);
    assert_eq!(unrecorded(&job, false), vec![upgrade]);

    // A legacy trigger (with a trigger id) is not a resource to create.
    let legacy = JobStatus {
        savepoint_info: Some(SavepointInfo {
            trigger_id: Some("abc".into()),
            trigger_type: Some(Trigger::Manual),
            trigger_timestamp: Some(NOW),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(unrecorded(&legacy, true), vec![]);
}

#[test]
fn only_a_snapshot_being_taken_holds_back_a_change() {
    use SnapshotState::*;
    let mut backing_off = snapshot("b", Trigger::Manual, TriggerPending, 1);
    backing_off.failures = 2;
    for (snapshot, under) in [
        (snapshot("a", Trigger::Manual, TriggerPending, 1), true),
        (snapshot("a", Trigger::Periodic, InProgress, 1), true),
        (backing_off, false),
        (completed("a", Trigger::Manual, 1), false),
        (snapshot("a", Trigger::Manual, Failed, 1), false),
        (snapshot("a", Trigger::Manual, Abandoned, 1), false),
    ] {
        assert_eq!(under_way(std::slice::from_ref(&snapshot)), under, "{snapshot:?}");
    }
}
