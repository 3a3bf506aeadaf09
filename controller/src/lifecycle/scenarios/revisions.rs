//! Revision history and manual rollback, against both kinds: the revisions a job's applied
//! specs become, and a rollback through the normal update path, with the operator stopped
//! at each of its steps.

use std::collections::BTreeMap;

use flink_operator_api::{RevisionStatus, RollbackPhase, keys::annotations};

use super::*;
use crate::{
    conditions::Phase,
    lifecycle::revisions::{RecordRevision, Revision, RevisionStep},
};
use flink_operator_api::SnapshotType;

/// What the API server keeps of a job's history between two looks: its revisions, the
/// resource's annotations and spec, as the plan's actions left them.
#[derive(Clone)]
struct World {
    revisions: Vec<Revision>,
    annotations: BTreeMap<String, String>,
    job: Value,
    config: Value,
    generation: i64,
}

impl World {
    fn new(job: &Value) -> Self {
        World {
            revisions: Vec::new(),
            annotations: BTreeMap::new(),
            job: job.clone(),
            config: json!({}),
            generation: 1,
        }
    }

    fn look(&self, base: Look) -> Look {
        Look {
            revisions: Some(self.revisions.clone()),
            annotations: self.annotations.clone(),
            generation: self.generation,
            ..base
        }
    }

    fn ask(&mut self, revision: &str) {
        self.annotations
            .insert(annotations::ROLLBACK_TO_REVISION.into(), revision.into());
    }

    fn change(&mut self, job: Value) {
        self.job = job;
        self.generation += 1;
    }

    fn requested(&self, request: &str) -> bool {
        self.annotations
            .get(annotations::ROLLBACK_TO_REVISION)
            .is_some_and(|r| r == request)
    }

    /// Carries out what the plan asked of Kubernetes.
    fn apply(&mut self, outcome: &Outcome) {
        for action in &outcome.job {
            match action {
                JobAction::RecordRevision(record) => {
                    match &record.step {
                        Some(RevisionStep::Create(revision)) => self.revisions.push(revision.clone()),
                        Some(RevisionStep::Reuse { revision, .. }) => {
                            self.revisions.retain(|r| r.name != revision.name);
                            self.revisions.push(revision.clone());
                        }
                        _ => {}
                    }
                    self.revisions.retain(|r| !record.prune.contains(&r.name));
                    self.annotations
                        .insert(annotations::REVISION.into(), record.current.to_string());
                }
                JobAction::RollBack { spec, request, .. } if self.requested(request) => {
                    self.change(spec["job"].clone());
                    self.config = spec.get("flinkConfiguration").cloned().unwrap_or(json!({}));
                    self.annotations.remove(annotations::ROLLBACK_TO_REVISION);
                    self.annotations.remove(annotations::ROLLBACK_RESTORE);
                }
                JobAction::DropRollbackRequest { request } if self.requested(request) => {
                    self.annotations.remove(annotations::ROLLBACK_TO_REVISION);
                }
                _ => {}
            }
        }
    }
}

fn records(outcome: &Outcome) -> Vec<RecordRevision> {
    outcome
        .job
        .iter()
        .filter_map(|a| match a {
            JobAction::RecordRevision(record) => Some(record.clone()),
            _ => None,
        })
        .collect()
}

fn revision_status(status: &Status) -> RevisionStatus {
    match status {
        Status::Application(s) => s.revision.clone(),
        Status::SessionJob(s) => s.revision.clone(),
    }
    .unwrap_or_default()
}

fn rollback_phase(status: &Status) -> Option<RollbackPhase> {
    revision_status(status).rollback.and_then(|r| r.phase)
}

fn reason(status: &Status) -> Option<String> {
    let conditions = match status {
        Status::Application(s) => s.conditions.clone(),
        Status::SessionJob(s) => s.conditions.clone(),
    };
    conditions?.first()?.reason.clone()
}

fn savepoint_job(parallelism: i64) -> Value {
    with(
        job_spec(UpgradeMode::Savepoint),
        "parallelism",
        json!(parallelism),
    )
}

/// A revision of the `kind`'s savepoint job with `parallelism`, as its ControllerRevision
/// holds it.
fn revision(kind: &str, number: i64, parallelism: i64, started_from: Option<&str>) -> Revision {
    let spec = if kind == Application::NAME {
        json!({"image": "flink:1.20", "flinkVersion": "v1_20", "job": savepoint_job(parallelism)})
    } else {
        json!({"deploymentName": "session", "job": savepoint_job(parallelism)})
    };
    Revision {
        number,
        name: format!("job-p{parallelism}"),
        spec: crate::lifecycle::revisions::normalised(&spec),
        started_from: started_from.map(str::to_owned),
        started_from_ms: None,
        applied_ms: NOW - HOUR,
    }
}

/// A kind's decision at one look, as [`both`] hands it to a scenario.
type Decide<'a> = &'a dyn Fn(&Value, &Value, Option<&Status>, &Look, bool) -> (Outcome, Status);

/// Stops the job with a savepoint for the world's spec, completing it at `path`: the
/// outcome of the commit and the status it leaves.
fn upgrade(decide: Decide<'_>, world: &World, stored: &Status, path: &str) -> (Outcome, Status) {
    let (outcome, stopping) = decide(
        &world.job,
        &world.config,
        Some(stored),
        &world.look(running_job()),
        false,
    );
    assert!(
        outcome
            .job
            .iter()
            .any(|a| matches!(a, JobAction::StopWithSavepoint { .. })),
        "{outcome:?}"
    );
    let done = Look {
        savepoint: Some(SavepointPoll::Completed(path.into())),
        ..world.look(look(FlinkJobState::Finished))
    };
    decide(&world.job, &world.config, Some(&stopping), &done, false)
}

#[test]
fn each_applied_spec_is_a_revision_numbered_in_order_and_an_equal_one_is_reused_as_the_newest() {
    both(|kind, decide| {
        let mut world = World::new(&savepoint_job(2));
        let stored = started(&world.job, &world.config, kind);

        // The running job's spec becomes revision 1, shown on the resource and in status.
        let (outcome, first) = decide(
            &world.job,
            &world.config,
            Some(&stored),
            &world.look(running_job()),
            false,
        );
        let [record] = records(&outcome).try_into().expect("one record");
        let Some(RevisionStep::Create(created)) = &record.step else {
            panic!("{kind}: {record:?}")
        };
        assert_eq!((created.number, record.current), (1, 1), "{kind}");
        assert_eq!(revision_status(&first).current, Some(1), "{kind}");
        world.apply(&outcome);

        // Nothing changes: nothing is written.
        let (outcome, steady) = decide(
            &world.job,
            &world.config,
            Some(&first),
            &world.look(running_job()),
            false,
        );
        assert!(records(&outcome).is_empty(), "{kind}: {outcome:?}");
        assert!(
            outcome.job.is_empty() && outcome.events.is_empty(),
            "{kind}: {outcome:?}"
        );
        assert_eq!(revision_status(&steady), revision_status(&first), "{kind}");

        // An upgrade is recorded with the state it starts from once it is committed, not
        // before: the stop that precedes it records nothing.
        world.change(savepoint_job(4));
        let (outcome, upgraded) = upgrade(decide, &world, &first, "file:/sp/to-4");
        let [record] = records(&outcome).try_into().expect("one record");
        let Some(RevisionStep::Create(second)) = &record.step else {
            panic!("{kind}: {record:?}")
        };
        assert_eq!(second.number, 2, "{kind}");
        assert_eq!(second.started_from.as_deref(), Some("file:/sp/to-4"), "{kind}");
        assert_eq!(revision_status(&upgraded).current, Some(2), "{kind}");
        world.apply(&outcome);

        // Back to the first spec (with only a nonce and the upgrade mode different, which
        // are no part of a version): revision 1 is reused as revision 3.
        let running_4 = started(&world.job, &world.config, kind);
        let mut back = with(savepoint_job(2), "savepointTriggerNonce", json!(9));
        back["upgradeMode"] = json!("savepoint");
        world.change(back);
        let (outcome, _) = upgrade(decide, &world, &running_4, "file:/sp/back-to-2");
        let [record] = records(&outcome).try_into().expect("one record");
        match &record.step {
            Some(RevisionStep::Reuse { previous, revision }) => {
                assert_eq!((*previous, revision.number), (1, 3), "{kind}");
                assert_eq!(revision.name, created.name, "{kind}");
                assert_eq!(
                    revision.started_from.as_deref(),
                    Some("file:/sp/back-to-2"),
                    "{kind}"
                );
            }
            other => panic!("{kind}: {other:?}"),
        }
        world.apply(&outcome);
        let mut numbers: Vec<i64> = world.revisions.iter().map(|r| r.number).collect();
        numbers.sort_unstable();
        assert_eq!(numbers, [2, 3], "{kind}");
    });
}

#[test]
fn the_history_is_pruned_to_its_limit_but_never_of_the_current_or_an_in_flight_revision() {
    both(|kind, decide| {
        let mut world = World::new(&savepoint_job(6));
        world.revisions = vec![
            revision(kind, 1, 2, None),
            revision(kind, 2, 4, None),
            revision(kind, 3, 6, None),
        ];
        world.annotations.insert(annotations::REVISION.into(), "3".into());
        let stored = started(&world.job, &world.config, kind);
        let limited = |world: &World| Look {
            policy: Policy {
                revision_history_limit: 1,
                ..Policy::status_only()
            },
            ..world.look(running_job())
        };
        let (outcome, _) = decide(&world.job, &world.config, Some(&stored), &limited(&world), false);
        let [record] = records(&outcome).try_into().expect("one record");
        assert_eq!(record.step, None, "{kind}: the current revision is kept as it is");
        assert_eq!(record.prune, ["job-p2", "job-p4"], "{kind}");

        // While a rollback to revision 1 is under way, revision 1 stays.
        world.ask("1");
        let (outcome, rolling) = decide(
            &world.job,
            &world.config,
            Some(&stored),
            &world.look(running_job()),
            false,
        );
        world.apply(&outcome);
        let (outcome, _) = decide(&world.job, &world.config, Some(&rolling), &limited(&world), false);
        let [record] = records(&outcome).try_into().expect("one record");
        assert_eq!(record.prune, ["job-p4"], "{kind}: {outcome:?}");
    });
}

#[test]
fn a_rollback_request_is_refused_when_it_cannot_be_carried_out_and_waits_for_an_update_in_progress() {
    both(|kind, decide| {
        let mut world = World::new(&savepoint_job(4));
        world.revisions = vec![
            revision(kind, 1, 2, None),
            revision(kind, 2, 4, Some("file:/sp/2")),
        ];
        world.annotations.insert(annotations::REVISION.into(), "2".into());
        let stored = started(&world.job, &world.config, kind);

        for (value, says) in [
            ("two", "not a revision number"),
            ("7", "there is no revision 7 yet (the newest is 2)"),
            ("2", "is the current revision"),
        ] {
            let mut asked = world.clone();
            asked.ask(value);
            let (outcome, next) = decide(
                &asked.job,
                &asked.config,
                Some(&stored),
                &asked.look(running_job()),
                false,
            );
            assert_eq!(outcome.reasons(), [Reason::RollbackRefused], "{kind} {value}");
            assert!(
                outcome.events[0].note.contains(says),
                "{kind} {value}: {:?}",
                outcome.events
            );
            assert_eq!(
                outcome.job,
                [JobAction::DropRollbackRequest {
                    request: value.into()
                }],
                "{kind} {value}: nothing else is done"
            );
            assert_eq!(
                rollback_phase(&next),
                Some(RollbackPhase::Refused),
                "{kind} {value}"
            );
            let message = revision_status(&next)
                .rollback
                .and_then(|r| r.message)
                .unwrap_or_default();
            assert!(message.contains(says), "{kind} {value}: {message}");
            asked.apply(&outcome);
            assert!(
                !asked.annotations.contains_key(annotations::ROLLBACK_TO_REVISION),
                "{kind}"
            );
        }

        // An update in progress (its stop-with-savepoint sent) is waited for: the request
        // stays, and nothing but the update's own steps is done.
        let mut updating = world.clone();
        updating.change(savepoint_job(8));
        let (_, stopping) = decide(
            &updating.job,
            &updating.config,
            Some(&stored),
            &updating.look(running_job()),
            false,
        );
        updating.ask("1");
        let pending = Look {
            savepoint: Some(SavepointPoll::InProgress),
            ..updating.look(running_job())
        };
        let (outcome, next) = decide(&updating.job, &updating.config, Some(&stopping), &pending, false);
        assert!(
            !outcome.job.iter().any(|a| matches!(
                a,
                JobAction::RollBack { .. } | JobAction::DropRollbackRequest { .. }
            )),
            "{kind}: {outcome:?}"
        );
        assert!(!outcome.reasons().contains(&Reason::RollbackRefused), "{kind}");
        assert_eq!(rollback_phase(&next), None, "{kind}");
    });
}

#[test]
fn a_rollback_takes_the_normal_savepoint_update_and_continues_after_a_crash_at_each_step() {
    both(|kind, decide| {
        let mut world = World::new(&savepoint_job(4));
        world.revisions = vec![
            revision(kind, 1, 2, Some("file:/sp/old")),
            revision(kind, 2, 4, Some("file:/sp/2")),
        ];
        world.annotations.insert(annotations::REVISION.into(), "2".into());
        let stored = started(&world.job, &world.config, kind);
        world.ask("1");

        // The rollback is recorded first, then revision 1's spec is written into the resource.
        let (outcome, rolling) = decide(
            &world.job,
            &world.config,
            Some(&stored),
            &world.look(running_job()),
            false,
        );
        assert!(outcome.recorded_first, "{kind}");
        assert_eq!(outcome.reasons(), [Reason::RollingBack], "{kind}");
        assert!(
            outcome.events[0].note.contains("from revision 2 to revision 1"),
            "{kind}: {:?}",
            outcome.events
        );
        let [JobAction::RollBack { spec, request, .. }] = outcome.job.as_slice() else {
            panic!("{kind}: {outcome:?}")
        };
        assert_eq!(request, "1", "{kind}");
        assert_eq!(spec["job"]["parallelism"], json!(2), "{kind}");
        assert_eq!(
            spec["job"]["upgradeMode"],
            json!("savepoint"),
            "{kind}: the current mode"
        );
        assert_eq!(
            rollback_phase(&rolling),
            Some(RollbackPhase::RollingBack),
            "{kind}"
        );
        assert_eq!(
            reason(&rolling).as_deref(),
            Some(Phase::RollingBack.as_str()),
            "{kind}"
        );

        // Stopped before the spec was written: the next look writes it again.
        let (again, _) = decide(
            &world.job,
            &world.config,
            Some(&rolling),
            &world.look(running_job()),
            false,
        );
        assert_eq!(again.job, outcome.job, "{kind}");
        world.apply(&outcome);
        assert!(
            !world.annotations.contains_key(annotations::ROLLBACK_TO_REVISION),
            "{kind}"
        );

        // The spec change takes the savepoint path of the job's upgrade mode.
        let (outcome, stopping) = decide(
            &world.job,
            &world.config,
            Some(&rolling),
            &world.look(running_job()),
            false,
        );
        assert!(
            matches!(outcome.job.as_slice(), [JobAction::StopWithSavepoint { .. }]),
            "{kind}: {outcome:?}"
        );
        assert!(outcome.recorded_first, "{kind}");
        assert_eq!(
            reason(&stopping).as_deref(),
            Some(Phase::RollingBack.as_str()),
            "{kind}"
        );
        assert_eq!(
            outcome.reason.as_deref(),
            Some(Phase::RollingBack.as_str()),
            "{kind}: also in the status written before the stop is sent"
        );

        // Stopped after the savepoint was asked for: it is followed, not taken again.
        let pending = Look {
            savepoint: Some(SavepointPoll::InProgress),
            ..world.look(running_job())
        };
        let (outcome, _) = decide(&world.job, &world.config, Some(&stopping), &pending, false);
        assert!(outcome.job.is_empty(), "{kind}: {outcome:?}");

        // The savepoint just taken is what revision 1's spec starts from, not its old state;
        // the spec is recorded as revision 3, equal to 1.
        let done = Look {
            savepoint: Some(SavepointPoll::Completed("file:/sp/rollback".into())),
            ..world.look(look(FlinkJobState::Finished))
        };
        let (outcome, committed) = decide(&world.job, &world.config, Some(&stopping), &done, false);
        assert_eq!(
            outcome.job_status.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/rollback"),
            "{kind}"
        );
        assert_eq!(outcome.own, 1, "{kind}: the job is started again");
        let [record] = records(&outcome).try_into().expect("one record");
        let Some(RevisionStep::Reuse {
            previous: 1,
            revision,
        }) = &record.step
        else {
            panic!("{kind}: {record:?}")
        };
        assert_eq!(revision.number, 3, "{kind}");
        assert_eq!(
            revision.started_from.as_deref(),
            Some("file:/sp/rollback"),
            "{kind}"
        );

        // Stopped after the start was recorded but before the revision was: recorded next.
        let (outcome, _) = decide(
            &world.job,
            &world.config,
            Some(&committed),
            &world.look(running_job()),
            false,
        );
        assert_eq!(
            records(&outcome).first().map(|r| r.current),
            Some(3),
            "{kind}: {outcome:?}"
        );
        world.apply(&outcome);

        // Once the job runs revision 1's spec, stable: rolled back.
        let mut running = started(&world.job, &world.config, kind);
        match (&mut running, &committed) {
            (Status::Application(r), Status::Application(c)) => r.revision = c.revision.clone(),
            (Status::SessionJob(r), Status::SessionJob(c)) => r.revision = c.revision.clone(),
            _ => unreachable!(),
        }
        let (outcome, ended) = decide(
            &world.job,
            &world.config,
            Some(&running),
            &world.look(running_job()),
            false,
        );
        assert_eq!(outcome.reasons(), [Reason::RolledBack], "{kind}: {outcome:?}");
        assert_eq!(rollback_phase(&ended), Some(RollbackPhase::RolledBack), "{kind}");
        assert_eq!(reason(&ended).as_deref(), Some(Phase::Running.as_str()), "{kind}");
        let (outcome, _) = decide(
            &world.job,
            &world.config,
            Some(&ended),
            &world.look(running_job()),
            false,
        );
        assert!(
            outcome.events.is_empty() && outcome.job.is_empty(),
            "{kind}: {outcome:?}"
        );
    });
}

/// A job running `job` as revision 2 asked to roll back to revision 1 (started from
/// `file:/sp/old`) restoring that state: the world, and the outcome and status of the look
/// that starts the rollback.
fn restoring_revision_1(kind: &str, decide: Decide<'_>, job: Value) -> (World, Outcome, Status) {
    let mut world = World::new(&job);
    world.revisions = vec![
        revision(kind, 1, 2, Some("file:/sp/old")),
        revision(kind, 2, 4, None),
    ];
    world.annotations.insert(annotations::REVISION.into(), "2".into());
    world.annotations.insert(
        annotations::ROLLBACK_RESTORE.into(),
        annotations::ROLLBACK_RESTORE_REVISION.into(),
    );
    // The state revision 1 was started from is still recorded: its savepoint history lists it.
    let stored = started(&world.job, &world.config, kind).with_job(|job| {
        let info = job.savepoint_info.get_or_insert_with(Default::default);
        info.savepoint_history = Some(vec![flink_operator_api::common::Savepoint {
            location: Some("file:/sp/old".into()),
            time_stamp: Some(NOW - 2 * HOUR),
            ..Default::default()
        }]);
    });
    world.ask("1");
    let (outcome, rolling) = decide(
        &world.job,
        &world.config,
        Some(&stored),
        &world.look(running_job()),
        false,
    );
    (world, outcome, rolling)
}

#[test]
fn a_rollback_to_a_revisions_state_no_record_lists_any_more_is_refused_before_the_job_is_stopped() {
    both(|kind, decide| {
        let mut world = World::new(&savepoint_job(4));
        world.revisions = vec![
            revision(kind, 1, 2, Some("file:/sp/gone")),
            revision(kind, 2, 4, None),
        ];
        world.annotations.insert(annotations::REVISION.into(), "2".into());
        world.annotations.insert(
            annotations::ROLLBACK_RESTORE.into(),
            annotations::ROLLBACK_RESTORE_REVISION.into(),
        );
        // Neither the status nor a snapshot resource lists file:/sp/gone (disposed of).
        let stored = started(&world.job, &world.config, kind);
        world.ask("1");
        let (outcome, refused) = decide(
            &world.job,
            &world.config,
            Some(&stored),
            &world.look(running_job()),
            false,
        );
        assert!(
            !outcome.job.iter().any(|a| matches!(
                a,
                JobAction::RollBack { .. } | JobAction::StopWithSavepoint { .. } | JobAction::Cancel { .. }
            )),
            "{kind}: nothing is stopped, no spec written: {outcome:?}"
        );
        assert_eq!(outcome.own, 0, "{kind}");
        assert_eq!(rollback_phase(&refused), Some(RollbackPhase::Refused), "{kind}");
        let said = (outcome.events.iter())
            .find(|e| e.reason == Reason::RollbackRefused)
            .unwrap_or_else(|| panic!("{kind}: {outcome:?}"));
        assert!(
            said.warning
                && said.note.contains("file:/sp/gone")
                && said.note.contains("may have been disposed of"),
            "{kind}: {}",
            said.note
        );
        world.apply(&outcome);
        assert!(!world.requested("1"), "{kind}: the request is removed");

        // Listed by a completed snapshot resource of the job: the rollback starts.
        let mut listed = world.clone();
        listed.ask("1");
        let snapshot = JobSnapshot {
            name: "recorded".into(),
            kind: SnapshotType::Savepoint,
            trigger_type: SnapshotTriggerType::Manual,
            state: SnapshotState::Completed,
            path: Some("file:/sp/gone".into()),
            created_ms: NOW - 2 * HOUR,
            result_ms: None,
            failures: 0,
            deleting: false,
            disposes: true,
        };
        let at = Look {
            snapshots: vec![snapshot.clone()],
            ..listed.look(running_job())
        };
        let (outcome, _) = decide(&listed.job, &listed.config, Some(&stored), &at, false);
        assert!(
            outcome
                .job
                .iter()
                .any(|a| matches!(a, JobAction::RollBack { .. })),
            "{kind}: {outcome:?}"
        );
        // One being deleted with its files is no record.
        let at = Look {
            snapshots: vec![JobSnapshot {
                deleting: true,
                ..snapshot
            }],
            ..listed.look(running_job())
        };
        let (outcome, _) = decide(&listed.job, &listed.config, Some(&stored), &at, false);
        assert!(
            outcome.reasons().contains(&Reason::RollbackRefused),
            "{kind}: {outcome:?}"
        );
    });
}

#[test]
fn the_history_trim_and_the_snapshot_retention_keep_the_state_a_kept_revision_was_started_from() {
    // Savepoint n, taken n hours ago; revision 1 was started from the oldest.
    let history: Vec<flink_operator_api::common::Savepoint> = (1..=5)
        .rev()
        .map(|n| flink_operator_api::common::Savepoint {
            time_stamp: Some(NOW - n * HOUR),
            location: Some(format!("file:/sp/{n}")),
            ..Default::default()
        })
        .collect();
    let resource = |name: &str, hours: i64| JobSnapshot {
        name: name.into(),
        kind: SnapshotType::Savepoint,
        trigger_type: SnapshotTriggerType::Periodic,
        state: SnapshotState::Completed,
        path: Some(format!("file:/sp/{name}")),
        created_ms: NOW - hours * HOUR,
        result_ms: Some(NOW - hours * HOUR),
        failures: 0,
        deleting: false,
        disposes: true,
    };
    both(|kind, decide| {
        let mut world = World::new(&savepoint_job(4));
        world.revisions = vec![
            revision(kind, 1, 2, Some("file:/sp/5")),
            revision(kind, 2, 3, Some("file:/sp/r-old")),
            revision(kind, 3, 4, None),
        ];
        let stored = started(&world.job, &world.config, kind).with_job(|job| {
            let info = job.savepoint_info.get_or_insert_with(Default::default);
            info.last_savepoint = history.last().cloned();
            info.savepoint_history = Some(history.clone());
        });
        let policy = Policy {
            history_max_count: 2,
            history_max_age_ms: 30 * MIN,
            history_cleanup: true,
            snapshot_resources: true,
            ..Policy::status_only()
        };
        let at = Look {
            policy: policy.clone(),
            history_needed_by: nobody_needs(&history),
            ..world.look(running_job())
        };
        let (outcome, next) = decide(&world.job, &world.config, Some(&stored), &at, false);
        let disposed: Vec<&str> = (outcome.job.iter())
            .filter_map(|a| match a {
                JobAction::DisposeSavepoint { path } => Some(path.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            disposed,
            ["file:/sp/4", "file:/sp/3", "file:/sp/2"],
            "{kind}: {outcome:?}"
        );
        let kept: Vec<String> = (job_status_of(&next).savepoint_info)
            .and_then(|i| i.savepoint_history)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|s| s.location)
            .collect();
        assert_eq!(
            kept,
            ["file:/sp/5", "file:/sp/1"],
            "{kind}: revision 1's state stays"
        );

        // The snapshot resources' retention: the one holding revision 2's state stays.
        let at = Look {
            policy,
            snapshots: vec![resource("r-old", 50), resource("r-mid", 40), resource("r-new", 1)],
            ..world.look(running_job())
        };
        let (outcome, _) = decide(&world.job, &world.config, Some(&next), &at, false);
        let deleted: Vec<&str> = (outcome.job.iter())
            .filter_map(|a| match a {
                JobAction::DeleteSnapshot { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deleted, ["r-mid"], "{kind}: {outcome:?}");
    });
}

#[test]
fn a_rollback_asked_to_restore_the_revisions_state_does_so_under_the_restore_age_guard() {
    both(|kind, decide| {
        let (mut world, outcome, rolling) = restoring_revision_1(kind, decide, savepoint_job(4));
        assert!(
            outcome.events[0].note.contains("file:/sp/old"),
            "{kind}: {:?}",
            outcome.events
        );
        world.apply(&outcome);
        let (outcome, committed) = upgrade(decide, &world, &rolling, "file:/sp/rollback");
        assert_eq!(
            outcome.job_status.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/old"),
            "{kind}: {outcome:?}"
        );
        assert_eq!(
            rollback_phase(&committed),
            Some(RollbackPhase::RollingBack),
            "{kind}"
        );

        // With a maximum state age, a state of unknown age is not restored: the rollback
        // fails and the job is left as the update path leaves it.
        let guarded = |base: Look| Look {
            policy: Policy {
                restore_max_state_age_ms: Some(HOUR),
                ..Policy::status_only()
            },
            ..base
        };
        let stopping = decide(
            &world.job,
            &world.config,
            Some(&rolling),
            &guarded(world.look(running_job())),
            false,
        )
        .1;
        let done = Look {
            savepoint: Some(SavepointPoll::Completed("file:/sp/rollback".into())),
            ..guarded(world.look(look(FlinkJobState::Finished)))
        };
        let (outcome, failed) = decide(&world.job, &world.config, Some(&stopping), &done, false);
        assert_eq!(outcome.own, 0, "{kind}: nothing is started");
        assert!(
            outcome.reasons().contains(&Reason::RollbackFailed),
            "{kind}: {:?}",
            outcome.events
        );
        assert_eq!(rollback_phase(&failed), Some(RollbackPhase::Failed), "{kind}");
        let message = revision_status(&failed)
            .rollback
            .and_then(|r| r.message)
            .unwrap_or_default();
        assert!(message.contains("file:/sp/old"), "{kind}: {message}");
    });
}

#[test]
fn a_rollback_ends_the_running_job_as_its_upgrade_mode_says() {
    for mode in [
        UpgradeMode::Savepoint,
        UpgradeMode::LastState,
        UpgradeMode::Stateless,
    ] {
        both(|kind, decide| {
            let in_mode =
                |parallelism: i64| with(savepoint_job(parallelism), "upgradeMode", json!(mode.as_str()));
            let mut world = World::new(&in_mode(4));
            world.revisions = vec![revision(kind, 1, 2, None), revision(kind, 2, 4, None)];
            world.annotations.insert(annotations::REVISION.into(), "2".into());
            let stored = started(&world.job, &world.config, kind);
            world.ask("1");
            let (outcome, rolling) = decide(
                &world.job,
                &world.config,
                Some(&stored),
                &world.look(running_job()),
                false,
            );
            let [JobAction::RollBack { spec, .. }] = outcome.job.as_slice() else {
                panic!("{kind} {mode:?}: {outcome:?}")
            };
            // The mode the job runs in now says how it ends, not the revision's.
            assert_eq!(
                spec["job"]["upgradeMode"],
                json!(mode.as_str()),
                "{kind} {mode:?}"
            );
            world.apply(&outcome);
            // A job with a completed checkpoint: one with none is stopped with a savepoint
            // instead of cancelled (see the retention scenarios).
            let running = Look {
                latest_checkpoint: Some(5_000),
                ..running_job()
            };
            let (outcome, _) = decide(
                &world.job,
                &world.config,
                Some(&rolling),
                &world.look(running),
                false,
            );
            let ended = match (mode, kind == Application::NAME) {
                (UpgradeMode::Savepoint, _) => {
                    matches!(outcome.job.as_slice(), [JobAction::StopWithSavepoint { .. }])
                }
                // An application cluster is deleted (keeping its HA metadata for last-state),
                // with the new spec recorded first.
                (_, true) => outcome.own == 1 && outcome.recorded["parallelism"] == json!(2),
                // A session job is cancelled first.
                (_, false) => matches!(outcome.job.as_slice(), [JobAction::Cancel { .. }]),
            };
            assert!(ended, "{kind} {mode:?}: {outcome:?}");
            assert!(
                !outcome.reasons().contains(&Reason::RollbackFailed),
                "{kind} {mode:?}: {outcome:?}"
            );
        });
    }
}

#[test]
fn a_last_state_application_rolled_back_to_its_revisions_state_restores_that_state_not_its_ha_metadata() {
    both(|kind, decide| {
        if kind != Application::NAME {
            return;
        }
        let last_state =
            |parallelism: i64| with(savepoint_job(parallelism), "upgradeMode", json!("last-state"));
        let (mut world, outcome, rolling) = restoring_revision_1(kind, decide, last_state(4));
        world.apply(&outcome);
        let (outcome, _) = decide(
            &world.job,
            &world.config,
            Some(&rolling),
            &world.look(running_job()),
            false,
        );
        assert_eq!(
            outcome.job_status.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/old"),
            "{outcome:?}"
        );
        let said: Vec<&str> = outcome.events.iter().map(|e| e.note.as_str()).collect();
        assert!(said.iter().any(|n| n.contains("restoring")), "{said:?}");
        assert!(
            !said
                .iter()
                .any(|n| n.contains("keeping its high-availability metadata")),
            "{said:?}"
        );
    });
}

/// A suspended job asked to roll back to a revision restoring that revision's state resumes
/// from it, as a running job's rollback restores it, not from the state the suspension left.
#[test]
fn a_suspended_job_rolled_back_to_its_revisions_state_resumes_from_it() {
    both(|kind, decide| {
        let mut world = World::new(&savepoint_job(4));
        world.revisions = vec![
            revision(kind, 1, 2, Some("file:/sp/old")),
            revision(kind, 2, 4, None),
        ];
        world.annotations.insert(annotations::REVISION.into(), "2".into());
        let stored = started(&world.job, &world.config, kind).with_job(|job| {
            let info = job.savepoint_info.get_or_insert_with(Default::default);
            info.savepoint_history = Some(vec![flink_operator_api::common::Savepoint {
                location: Some("file:/sp/old".into()),
                time_stamp: Some(NOW - 2 * HOUR),
                ..Default::default()
            }]);
        });
        world.change(with(savepoint_job(4), "state", json!("suspended")));
        let (_, suspending) = upgrade(decide, &world, &stored, "file:/sp/suspend");
        let (_, suspended) = decide(
            &world.job,
            &world.config,
            Some(&suspending),
            &world.look(gone()),
            false,
        );
        assert_eq!(
            job_status_of(&suspended).upgrade_savepoint_path.as_deref(),
            Some("file:/sp/suspend"),
            "{kind}"
        );
        world.annotations.insert(
            annotations::ROLLBACK_RESTORE.into(),
            annotations::ROLLBACK_RESTORE_REVISION.into(),
        );
        world.ask("1");
        let (outcome, rolling) = decide(
            &world.job,
            &world.config,
            Some(&suspended),
            &world.look(gone()),
            false,
        );
        assert!(
            matches!(outcome.job.as_slice(), [JobAction::RollBack { .. }, ..]),
            "{kind}: {outcome:?}"
        );
        world.apply(&outcome);
        world.change(with(world.job.clone(), "state", json!("running")));
        let (outcome, _) = decide(
            &world.job,
            &world.config,
            Some(&rolling),
            &world.look(gone()),
            false,
        );
        assert_eq!(
            outcome.job_status.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/old"),
            "{kind}: {outcome:?}"
        );
    });
}

/// A rollback that restored its revision's state has started its job from it: a suspension
/// before that job was seen stable ends the job as its upgrade mode says and resumes from
/// what it left, not from the revision's state again (the job may have checkpointed since).
#[test]
fn a_suspension_after_a_rollback_restored_its_revisions_state_keeps_what_the_rolled_back_job_did() {
    both(|kind, decide| {
        let (mut world, outcome, rolling) = restoring_revision_1(kind, decide, savepoint_job(4));
        world.apply(&outcome);
        let (_, committed) = upgrade(decide, &world, &rolling, "file:/sp/rollback");
        assert_eq!(
            job_status_of(&committed).upgrade_savepoint_path.as_deref(),
            Some("file:/sp/old"),
            "{kind}"
        );
        // The rolled-back job runs, not yet seen stable: the rollback is still under way.
        let mut running = started(&world.job, &world.config, kind);
        match (&mut running, &committed) {
            (Status::Application(r), Status::Application(c)) => r.revision = c.revision.clone(),
            (Status::SessionJob(r), Status::SessionJob(c)) => r.revision = c.revision.clone(),
            _ => unreachable!(),
        }
        assert_eq!(
            rollback_phase(&running),
            Some(RollbackPhase::RollingBack),
            "{kind}"
        );
        world.change(with(world.job.clone(), "state", json!("suspended")));
        let (outcome, suspended) = upgrade(decide, &world, &running, "file:/sp/suspend");
        assert_eq!(
            outcome.job_status.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/suspend"),
            "{kind}: {outcome:?}"
        );
        assert_eq!(
            job_status_of(&suspended).upgrade_savepoint_path.as_deref(),
            Some("file:/sp/suspend"),
            "{kind}"
        );
        // Resumed: from what the suspension left, not from the revision's state again.
        world.change(with(world.job.clone(), "state", json!("running")));
        let (outcome, _) = decide(
            &world.job,
            &world.config,
            Some(&suspended),
            &world.look(gone()),
            false,
        );
        assert_eq!(
            outcome.job_status.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/suspend"),
            "{kind}: {outcome:?}"
        );
        let said: Vec<&str> = outcome.events.iter().map(|e| e.note.as_str()).collect();
        assert!(
            !said.iter().any(|n| n.contains("file:/sp/old")),
            "{kind}: {said:?}"
        );
    });
}
