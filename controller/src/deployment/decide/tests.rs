use super::*;
use flink_operator_api::{
    FlinkJobState, JobManagerDeploymentStatus, ReconciledSpec,
    common::{JobStatus, ReconciliationState, ReconciliationStatus, ResourceLifecycleState},
    keys,
};
use serde_json::json;

use crate::fixtures::{NOW, condition};

fn fd(
    spec: serde_json::Value,
    status: Option<FlinkDeploymentStatus>,
    finalizer: bool,
    deleting: bool,
) -> FlinkDeployment {
    let mut value = json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": "basic", "namespace": "ns", "uid": "u", "generation": 1},
        "spec": spec,
    });
    if finalizer {
        value["metadata"]["finalizers"] = json!([keys::finalizers::FLINK_DEPLOYMENT]);
    }
    if deleting {
        value["metadata"]["deletionTimestamp"] = json!("2027-01-15T08:00:00Z");
    }
    let mut fd: FlinkDeployment = serde_json::from_value(value).unwrap();
    fd.status = status;
    fd
}

fn app_spec() -> serde_json::Value {
    json!({"image": "flink:2.3", "flinkVersion": "v2_3",
           "job": {"jarURI": "local:///opt/flink/usrlib/job.jar", "initialSavepointPath": "file:/sp/1"}})
}

fn obs(job_manager: JobManagerObservation, job: Option<JobObservation>) -> Observation {
    Observation {
        cluster_exists: job_manager != JobManagerObservation::Missing,
        cluster_deleting: false,
        job_manager_pods_left: false,
        ha_metadata: false,
        ha_source: Default::default(),
        job_manager,
        job,
        violations: vec![],
        deployed_generation: None,
        deployed_at_ms: None,
        rolled_back_generation: None,
        savepoint: None,
        late_savepoint: None,
        checkpoint: None,
        ha_checkpoint: None,
        ha_latest_checkpoint: None,
        latest_checkpoint: None,
        // As the operator deploys every job: its checkpoints outlive a cancellation.
        on_cancel: crate::lifecycle::retention::OnCancel::Retained,
        health: None,
        unanswered_before: false,
        policy: Policy::status_only(),
        revisions: None,
        history_needed_by: Default::default(),
        snapshots: vec![],
        session_jobs: vec![],
        unmanaged_jobs: vec![],
        fresh_trigger_id: "trigger".into(),
        fresh_job_id: "fresh".into(),
        now_ms: NOW,
        ingress: Default::default(),
        rest_port: 8081,
        autoscaler: Default::default(),
    }
}

fn ready_jm() -> JobManagerObservation {
    JobManagerObservation::Present {
        ready: 1,
        replicas: 1,
        problem: None,
        rest_ready: true,
    }
}

/// The status after a first deployment, and then after it was acted on.
fn deployed() -> FlinkDeploymentStatus {
    decide(
        &fd(app_spec(), None, true, false),
        &obs(JobManagerObservation::Missing, None),
    )
    .status
}

#[test]
fn a_first_deployment_is_recorded_before_it_is_created() {
    let plan = decide(
        &fd(app_spec(), None, false, false),
        &obs(JobManagerObservation::Missing, None),
    );
    assert_eq!(
        plan.actions,
        [
            Action::AddFinalizer,
            Action::Deploy {
                restore_path: Some("file:/sp/1".into()),
                job_id: Some("fresh".into()),
                last_state: false,
                spec: None,
                deployed_at_ms: NOW,
            }
        ]
    );
    let before = plan.status_before.unwrap();
    let rs = before.reconciliation_status.as_ref().unwrap();
    assert_eq!(rs.state, Some(ReconciliationState::Upgrading));
    let recorded: FlinkDeploymentSpec = rs.last_reconciled_spec().unwrap().unwrap();
    assert_eq!(recorded.image.as_deref(), Some("flink:2.3"));
    assert_eq!(
        before.job_status.as_ref().unwrap().job_id.as_deref(),
        Some("fresh")
    );
    // The state it starts from is in status, as a session job's is: a deletion before the
    // cluster comes up records it.
    assert_eq!(
        before
            .job_status
            .as_ref()
            .unwrap()
            .upgrade_savepoint_path
            .as_deref(),
        Some("file:/sp/1")
    );
    let mut spec = app_spec();
    spec["job"]["upgradeMode"] = json!("savepoint");
    let deleting = fd(spec, Some(before.clone()), true, true);
    let deleted = decide(&deleting, &obs(JobManagerObservation::Missing, None));
    let event = (deleted.events.iter())
        .find(|e| e.reason == Reason::StateRecorded)
        .expect("the state it was to start from recorded");
    assert!(event.note.contains("file:/sp/1"), "{}", event.note);
    assert_eq!(
        condition(&before, "Progressing").reason.as_deref(),
        Some(Phase::Deploying.as_str())
    );
    assert_eq!(
        plan.status.reconciliation_status.unwrap().state,
        Some(ReconciliationState::Deployed)
    );
    assert_eq!(plan.events[0].reason, Reason::Submit);
}

#[test]
fn a_crash_between_recording_and_creating_redeploys_with_the_recorded_job_id() {
    let first = decide(
        &fd(app_spec(), None, true, false),
        &obs(JobManagerObservation::Missing, None),
    );
    // The operator died after writing status_before: the next reconcile sees UPGRADING.
    let recorded = first.status_before.unwrap();
    let plan = decide(
        &fd(app_spec(), Some(recorded), true, false),
        &Observation {
            fresh_job_id: "another".into(),
            ..obs(JobManagerObservation::Missing, None)
        },
    );
    assert_eq!(
        plan.actions,
        [Action::Deploy {
            restore_path: Some("file:/sp/1".into()),
            job_id: Some("fresh".into()),
            last_state: false,
            spec: None,
            deployed_at_ms: NOW,
        }]
    );
}

#[test]
fn observed_states_become_status_and_conditions() {
    let starting = JobManagerObservation::Present {
        ready: 0,
        replicas: 1,
        problem: None,
        rest_ready: false,
    };
    let not_ready = JobManagerObservation::Present {
        ready: 1,
        replicas: 1,
        problem: None,
        rest_ready: false,
    };
    let crashing = JobManagerObservation::Present {
        ready: 0,
        replicas: 1,
        problem: Some("container flink-main-container: CrashLoopBackOff".into()),
        rest_ready: false,
    };
    let found = |state: FlinkJobState| Some(JobObservation::found(state, Some(NOW - 1000)));
    use JobManagerDeploymentStatus as Jm;
    use ResourceLifecycleState as L;
    let cases = [
        (
            starting,
            None,
            Jm::Deploying,
            L::Deployed,
            Phase::Deploying,
            "False",
        ),
        (
            not_ready,
            None,
            Jm::DeployedNotReady,
            L::Deployed,
            Phase::Deploying,
            "False",
        ),
        (crashing, None, Jm::Error, L::Failed, Phase::DeployFailed, "False"),
        (
            JobManagerObservation::Missing,
            None,
            Jm::Missing,
            L::Deployed,
            Phase::DeployFailed,
            "False",
        ),
        (
            ready_jm(),
            Some(JobObservation::NotFound),
            Jm::Ready,
            L::Deployed,
            Phase::Deploying,
            "False",
        ),
        (
            ready_jm(),
            found(FlinkJobState::Running),
            Jm::Ready,
            L::Stable,
            Phase::Running,
            "True",
        ),
        (
            ready_jm(),
            found(FlinkJobState::Restarting),
            Jm::Ready,
            L::Deployed,
            Phase::Restarting,
            "False",
        ),
        (
            ready_jm(),
            found(FlinkJobState::Failed),
            Jm::Ready,
            L::Failed,
            Phase::Failed,
            "False",
        ),
        (
            ready_jm(),
            found(FlinkJobState::Finished),
            Jm::Ready,
            L::Deployed,
            Phase::Succeeded,
            "True",
        ),
        (
            ready_jm(),
            found(FlinkJobState::Canceled),
            Jm::Ready,
            L::Deployed,
            Phase::Cancelled,
            "False",
        ),
    ];
    for (i, (jm, job, jm_status, lifecycle, reason, ready)) in cases.into_iter().enumerate() {
        let plan = decide(&fd(app_spec(), Some(deployed()), true, false), &obs(jm, job));
        assert!(plan.actions.is_empty(), "case {i}: {:?}", plan.actions);
        assert_eq!(
            plan.status.job_manager_deployment_status,
            Some(jm_status),
            "case {i}"
        );
        assert_eq!(plan.status.lifecycle_state, Some(lifecycle), "case {i}");
        let ready_condition = condition(&plan.status, "Ready");
        assert_eq!(
            ready_condition.reason.as_deref(),
            Some(reason.as_str()),
            "case {i}"
        );
        assert_eq!(ready_condition.status.as_deref(), Some(ready), "case {i}");
    }
}

#[test]
fn a_running_job_records_its_stable_spec_and_state() {
    let plan = decide(
        &fd(app_spec(), Some(deployed()), true, false),
        &obs(
            ready_jm(),
            Some(JobObservation::found(FlinkJobState::Running, Some(NOW - 5000))),
        ),
    );
    let job = plan.status.job_status.as_ref().unwrap();
    assert_eq!(job.state, Some(FlinkJobState::Running));
    assert_eq!(job.start_time.as_deref(), Some((NOW - 5000).to_string().as_str()));
    let rs = plan.status.reconciliation_status.as_ref().unwrap();
    assert!(rs.last_stable_spec.is_some());
    assert_eq!(plan.requeue, SLOW);
    assert!(
        plan.events
            .iter()
            .any(|e| e.note == "Job status changed to RUNNING")
    );
}

fn with_generation(mut fd: FlinkDeployment, generation: i64) -> FlinkDeployment {
    fd.metadata.generation = Some(generation);
    fd
}

fn running_job() -> Option<JobObservation> {
    Some(JobObservation::found(FlinkJobState::Running, None))
}

/// The stored status of a job that runs the first spec.
fn running() -> FlinkDeploymentStatus {
    decide(
        &fd(app_spec(), Some(deployed()), true, false),
        &obs(ready_jm(), running_job()),
    )
    .status
}

fn changed(mode: &str) -> serde_json::Value {
    let mut spec = app_spec();
    spec["job"]["parallelism"] = json!(4);
    spec["job"]["upgradeMode"] = json!(mode);
    spec
}

fn reconciliation(status: &FlinkDeploymentStatus) -> &ReconciliationStatus {
    status.reconciliation_status.as_ref().unwrap()
}

#[test]
fn a_stateless_change_records_the_new_spec_then_deletes_the_cluster() {
    let new = with_generation(fd(changed("stateless"), Some(running()), true, false), 2);
    let plan = decide(&new, &obs(ready_jm(), running_job()));
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    let before = plan.status_before.unwrap();
    assert_eq!(
        reconciliation(&before).state,
        Some(ReconciliationState::Upgrading)
    );
    let recorded: FlinkDeploymentSpec = reconciliation(&before).last_reconciled_spec().unwrap().unwrap();
    assert_eq!(recorded, new.spec);
    assert_eq!(before.job_status.as_ref().unwrap().upgrade_savepoint_path, None);
    assert_eq!(
        condition(&before, "Progressing").reason.as_deref(),
        Some(Phase::Updating.as_str())
    );
}

/// The plan waits for the old JobManager's pods, looking again soon.
fn assert_waits_for_the_job_manager(plan: &Plan) {
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert!(
        matches!(plan.requeue, Next::Stopping { .. }),
        "{:?}",
        plan.requeue
    );
}

/// The cluster's Deployments are gone, its HA metadata is there, `after_ms` after the step
/// was recorded; `pods_left`: a JobManager pod still terminates.
fn cluster_gone(pods_left: bool, after_ms: i64) -> Observation {
    Observation {
        cluster_exists: false,
        job_manager_pods_left: pods_left,
        ha_metadata: true,
        now_ms: NOW + after_ms,
        ..obs(JobManagerObservation::Missing, None)
    }
}

#[test]
fn the_ha_metadata_of_a_deleted_cluster_goes_only_once_its_jobmanager_has_exited() {
    let new = with_generation(fd(changed("stateless"), Some(running()), true, false), 2);
    let committed = decide(&new, &obs(ready_jm(), running_job())).status;
    // A cluster whose deletion is under way is not deleted again while it goes.
    let terminating = Observation {
        cluster_deleting: true,
        ..obs(ready_jm(), None)
    };
    let plan = decide(
        &with_generation(fd(changed("stateless"), Some(committed.clone()), true, false), 2),
        &terminating,
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    let new = with_generation(fd(changed("stateless"), Some(committed), true, false), 2);
    let gone = cluster_gone;
    // The Deployments are gone, a JobManager pod still terminates: wait, soon again.
    let plan = decide(&new, &gone(true, 2_000));
    assert_waits_for_the_job_manager(&plan);
    assert_eq!(phase_of(&plan), Phase::Updating.as_str());
    // Exited: the metadata goes, then the new cluster is deployed, in one step.
    let plan = decide(&new, &gone(false, 3_000));
    assert_eq!(plan.actions.len(), 2, "{:?}", plan.actions);
    assert_eq!(plan.actions[0], Action::DeleteHaMetadata);
    assert!(matches!(plan.actions[1], Action::Deploy { .. }));
    // A pod stuck terminating does not hold the upgrade for ever.
    let plan = decide(&new, &gone(true, 61_000));
    assert_eq!(plan.actions[0], Action::DeleteHaMetadata);
    // Without HA metadata the next cluster waits too: it is not started beside the old one.
    let without_ha = |pods_left: bool| Observation {
        ha_metadata: false,
        ..gone(pods_left, 2_000)
    };
    let plan = decide(&new, &without_ha(true));
    assert_waits_for_the_job_manager(&plan);
    let plan = decide(&new, &without_ha(false));
    assert!(matches!(plan.actions[..], [Action::Deploy { .. }]));
    // Deleting the resource: the same wait before the metadata and the finalizer go, with
    // or without metadata.
    let deleting = fd(app_spec(), Some(running()), true, true);
    let plan = decide(&deleting, &gone(true, 2_000));
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    let plan = decide(&deleting, &gone(false, 2_000));
    assert_eq!(plan.actions, [Action::DeleteHaMetadata, Action::RemoveFinalizer]);
    let plan = decide(&deleting, &without_ha(true));
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    let plan = decide(&deleting, &without_ha(false));
    assert_eq!(plan.actions, [Action::RemoveFinalizer]);
}

/// Point 5 of the state review: deleting a last-state deployment deleted its HA metadata,
/// the only pointer to its latest checkpoint, and recorded nothing.
#[test]
fn a_deleted_last_state_deployment_records_its_latest_checkpoint_before_its_ha_metadata_goes() {
    const CHECKPOINT: &str = "s3://cp/a1b2c3d4e5f60718293a4b5c6d7e8f90/chk-42";
    let mut spec = app_spec();
    spec["job"]["upgradeMode"] = json!("last-state");
    let deleting = fd(spec, Some(running()), true, true);
    let exited = Observation {
        ha_latest_checkpoint: Some(CHECKPOINT.to_owned()),
        policy: Policy::default(),
        ..cluster_gone(false, 2_000)
    };
    let plan = decide(&deleting, &exited);
    let deleted_ms = deleting
        .metadata
        .deletion_timestamp
        .as_ref()
        .expect("deleting")
        .0
        .as_millisecond();
    let name = format!("basic-savepoint-upgrade-{deleted_ms}");
    match &plan.actions[..] {
        [
            Action::Job(JobAction::CreateSnapshot(new)),
            Action::DeleteHaMetadata,
            Action::RemoveFinalizer,
        ] => {
            assert_eq!(new.existing_path.as_deref(), Some(CHECKPOINT));
            assert_eq!(new.name("basic"), name);
            assert!(!new.dispose_on_delete);
        }
        actions => panic!("the record first, then the metadata: {actions:?}"),
    }
    let before = plan
        .status_before
        .as_ref()
        .expect("the path written before the metadata goes");
    assert_eq!(
        before
            .job_status
            .as_ref()
            .and_then(|j| j.upgrade_savepoint_path.as_deref()),
        Some(CHECKPOINT)
    );
    let event = plan
        .events
        .iter()
        .find(|e| e.reason == Reason::StateRecorded)
        .expect("an Event with the path");
    assert!(!event.warning);
    assert!(
        event.note.contains(CHECKPOINT) && event.note.contains(&name),
        "{}",
        event.note
    );

    // A retried deletion (the metadata's deletion failed): the record exists, no second.
    let retried = Observation {
        snapshots: vec![crate::lifecycle::snapshot_resources::JobSnapshot {
            name: name.clone(),
            kind: flink_operator_api::SnapshotType::Savepoint,
            trigger_type: flink_operator_api::common::SnapshotTriggerType::Upgrade,
            state: crate::lifecycle::snapshot_resources::SnapshotState::TriggerPending,
            path: Some(CHECKPOINT.to_owned()),
            created_ms: deleted_ms,
            result_ms: None,
            failures: 0,
            deleting: false,
            disposes: false,
        }],
        ..exited.clone()
    };
    let plan = decide(&deleting, &retried);
    assert_eq!(plan.actions, [Action::DeleteHaMetadata, Action::RemoveFinalizer]);
    assert!(plan.events.iter().all(|e| e.reason != Reason::StateRecorded));

    // The operator stopped once the metadata was deleted, before the Event (the only record
    // without snapshot resources) was published: the next pass records the checkpoint status
    // names, not a last savepoint older than it whose time status knows.
    let mut spec = app_spec();
    spec["job"]["upgradeMode"] = json!("last-state");
    let with_savepoint = with_savepoint(running(), "file:/sp/manual", MIN);
    let deleting = fd(spec.clone(), Some(with_savepoint), true, true);
    let plan = decide(&deleting, &exited);
    let written = plan
        .status_before
        .expect("the path written before the metadata goes");
    let plan = decide(
        &fd(spec, Some(written), true, true),
        &Observation {
            ha_metadata: false,
            ..cluster_gone(false, 3_000)
        },
    );
    let event = (plan.events.iter())
        .find(|e| e.reason == Reason::StateRecorded)
        .expect("an Event with the path");
    assert!(event.note.contains(CHECKPOINT), "{}", event.note);

    // A stateless job leaves nothing to record.
    let stateless = fd(changed("stateless"), Some(running()), true, true);
    let plan = decide(&stateless, &exited);
    assert_eq!(plan.actions, [Action::DeleteHaMetadata, Action::RemoveFinalizer]);
}

/// ZooKeeper HA: the checkpoint its nodes point at last is recorded as the ConfigMaps' is;
/// nodes that could not be read are not deleted before they are, since status may name an
/// older state than they point at.
#[test]
fn a_deleted_zookeeper_ha_deployment_records_its_checkpoint_or_waits_until_its_nodes_can_be_read() {
    const CHECKPOINT: &str = "s3://cp/a1b2c3d4e5f60718293a4b5c6d7e8f90/chk-42";
    let deleting = |status| fd(changed("last-state"), Some(status), true, true);
    let zookeeper = |unreadable: Option<&str>| HaMetadata::ZooKeeperNodes {
        path: "/flink/basic".into(),
        unreadable: unreadable.map(str::to_owned),
    };
    let read = Observation {
        ha_source: zookeeper(None),
        ha_latest_checkpoint: Some(CHECKPOINT.to_owned()),
        policy: Policy::default(),
        ..cluster_gone(false, 2_000)
    };
    let plan = decide(&deleting(running()), &read);
    match &plan.actions[..] {
        [
            Action::Job(JobAction::CreateSnapshot(new)),
            Action::DeleteHaMetadata,
            Action::RemoveFinalizer,
        ] => assert_eq!(new.existing_path.as_deref(), Some(CHECKPOINT)),
        actions => panic!("the record first, then the metadata: {actions:?}"),
    }

    let why = "ZooKeeper zk:2181: no connection within 5 s";
    let unread = Observation {
        ha_source: zookeeper(Some(why)),
        ha_latest_checkpoint: None,
        ..read.clone()
    };
    let plan = decide(&deleting(running()), &unread);
    assert!(plan.actions.is_empty(), "nothing goes: {:?}", plan.actions);
    let error = plan.status.error.clone().expect("why it waits");
    assert!(error.contains(why) && error.contains("waits"), "{error}");
    assert_eq!(
        condition(&plan.status, "Progressing").reason.as_deref(),
        Some(Phase::Deleting.as_str())
    );
    let warned = |plan: &Plan| {
        (plan.events.iter())
            .filter(|e| e.warning && e.reason == Reason::CleanupFailed)
            .count()
    };
    assert_eq!(warned(&plan), 1);
    // Said once: the next look, still unread, waits without a second Event.
    let again = decide(&deleting(plan.status), &unread);
    assert!(again.actions.is_empty(), "{:?}", again.actions);
    assert_eq!(warned(&again), 0);
    // Read again: recorded, then deleted.
    let plan = decide(&deleting(again.status), &read);
    assert!(matches!(
        plan.actions[..],
        [
            Action::Job(JobAction::CreateSnapshot(_)),
            Action::DeleteHaMetadata,
            Action::RemoveFinalizer
        ]
    ));

    // A stateless job leaves nothing to record: its deletion does not wait on the read.
    let stateless = fd(changed("stateless"), Some(running()), true, true);
    let plan = decide(&stateless, &unread);
    assert_eq!(plan.actions, [Action::DeleteHaMetadata, Action::RemoveFinalizer]);
}

#[test]
fn a_last_state_upgrade_starts_the_next_cluster_only_once_the_old_jobmanager_has_exited() {
    let new = with_generation(fd(changed("last-state"), Some(running()), true, false), 2);
    let committed = decide(&new, &holding_a_checkpoint(obs(ready_jm(), running_job()))).status;
    assert_eq!(
        decide(&new, &holding_a_checkpoint(obs(ready_jm(), running_job()))).actions,
        [Action::DeleteCluster { keep_ha: true }]
    );
    let new = with_generation(fd(changed("last-state"), Some(committed), true, false), 2);
    let gone = |pods_left: bool| cluster_gone(pods_left, 2_000);
    // Its JobManager still holds the HA metadata the next one restores from.
    let plan = decide(&new, &gone(true));
    assert_waits_for_the_job_manager(&plan);
    // Exited: deployed, keeping the metadata.
    let plan = decide(&new, &gone(false));
    assert!(
        matches!(plan.actions[..], [Action::Deploy { last_state: true, .. }]),
        "{:?}",
        plan.actions
    );
    // The cluster's deletion sent long after the change was committed (the operator stopped
    // before sending it): the wait runs from when it was sent.
    let resent = decide(
        &new,
        &holding_a_checkpoint(later(obs(ready_jm(), running_job()), 5 * MIN)),
    );
    assert_eq!(resent.actions, [Action::DeleteCluster { keep_ha: true }]);
    let written = resent.status_before.expect("the time written before it is sent");
    let new = with_generation(fd(changed("last-state"), Some(written), true, false), 2);
    assert_waits_for_the_job_manager(&decide(&new, &cluster_gone(true, 5 * MIN + 2_000)));
}

#[test]
fn a_savepoint_upgrade_goes_step_by_step_and_survives_a_crash_at_each() {
    let new = |status: FlinkDeploymentStatus| {
        with_generation(fd(changed("savepoint"), Some(status), true, false), 2)
    };
    let old_cluster = || Observation {
        deployed_generation: Some(1),
        ..obs(ready_jm(), running_job())
    };

    // 1. The trigger id is recorded before the stop is sent.
    let plan = decide(&new(running()), &old_cluster());
    assert_eq!(
        plan.actions,
        [Action::Job(JobAction::StopWithSavepoint {
            job_id: "fresh".into(),
            trigger_id: "trigger".into(),
            drain: false,
        })]
    );
    let triggered = plan.status_before.unwrap();
    let info = triggered
        .job_status
        .as_ref()
        .unwrap()
        .savepoint_info
        .as_ref()
        .unwrap();
    assert_eq!(info.trigger_id.as_deref(), Some("trigger"));
    assert_eq!(info.trigger_type, Some(SnapshotTriggerType::Upgrade));

    // Crash before the stop reached Flink: the JobManager does not know the trigger and
    // the job still runs, so the same stop is sent again.
    let plan = decide(
        &new(triggered.clone()),
        &Observation {
            savepoint: Some(SavepointPoll::UnknownTrigger),
            ..old_cluster()
        },
    );
    assert_eq!(
        plan.actions,
        [Action::Job(JobAction::StopWithSavepoint {
            job_id: "fresh".into(),
            trigger_id: "trigger".into(),
            drain: false,
        })]
    );

    // 2. In progress: wait.
    let plan = decide(
        &new(triggered.clone()),
        &Observation {
            savepoint: Some(SavepointPoll::InProgress),
            ..old_cluster()
        },
    );
    assert!(plan.actions.is_empty());
    assert_eq!(
        condition(&plan.status, "Progressing").reason.as_deref(),
        Some(Phase::Updating.as_str())
    );

    // 3. Completed (also after a crash: the JobManager keeps the result): the path is
    // recorded in the same write that commits the new spec, before the cluster goes.
    let plan = decide(
        &new(triggered),
        &Observation {
            savepoint: Some(SavepointPoll::Completed("file:/sp/savepoint-2".into())),
            ..old_cluster()
        },
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    let committed = plan.status_before.unwrap();
    let job = committed.job_status.as_ref().unwrap();
    assert_eq!(
        job.upgrade_savepoint_path.as_deref(),
        Some("file:/sp/savepoint-2")
    );
    assert_eq!(job.savepoint_info.as_ref().unwrap().trigger_id, None);
    assert_eq!(
        job.savepoint_info
            .as_ref()
            .unwrap()
            .last_savepoint
            .as_ref()
            .unwrap()
            .location
            .as_deref(),
        Some("file:/sp/savepoint-2")
    );
    assert_eq!(
        reconciliation(&committed).state,
        Some(ReconciliationState::Upgrading)
    );

    // 4. Crash before the delete finished: the old cluster is deleted again.
    let plan = decide(&new(committed.clone()), &old_cluster());
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);

    // 5. The old cluster is gone: the new one restores the recorded savepoint, under a
    // job id recorded before it is created.
    let gone = Observation {
        fresh_job_id: "new-job".into(),
        ..obs(JobManagerObservation::Missing, None)
    };
    let plan = decide(&new(committed.clone()), &gone);
    assert_eq!(
        plan.actions,
        [Action::Deploy {
            restore_path: Some("file:/sp/savepoint-2".into()),
            job_id: Some("new-job".into()),
            last_state: false,
            spec: None,
            deployed_at_ms: NOW,
        }]
    );
    let deploying = plan.status_before.unwrap();
    assert_eq!(
        deploying.job_status.as_ref().unwrap().job_id.as_deref(),
        Some("new-job")
    );

    // 6. Crash after the deploy, before status said so: the cluster of this generation
    // is recognised, nothing is redeployed.
    let plan = decide(
        &new(deploying.clone()),
        &Observation {
            deployed_generation: Some(2),
            ..obs(ready_jm(), None)
        },
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(
        reconciliation(&plan.status).state,
        Some(ReconciliationState::Deployed)
    );
    // So is it when the spec changed again meanwhile (its job may have run since, and is
    // not deleted without its state): the change is then made as any other.
    let changed_again = |status| {
        let mut spec = changed("savepoint");
        spec["job"]["parallelism"] = json!(7);
        with_generation(fd(spec, Some(status), true, false), 3)
    };
    // A status written since then (a refused spec between) holds a later generation: the
    // cluster's annotation holds the time stamp status held when it was deployed, which
    // is recognised.
    let mut refused_since = deploying.clone();
    refused_since.observed_generation = Some(3);
    let deployed_at_ms = reconciliation(&deploying).reconciliation_timestamp;
    let plan = decide(
        &with_generation(
            fd(changed("savepoint"), Some(refused_since.clone()), true, false),
            4,
        ),
        &Observation {
            deployed_generation: Some(2),
            deployed_at_ms,
            ..obs(ready_jm(), running_job())
        },
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(
        reconciliation(&plan.status).state,
        Some(ReconciliationState::Deployed)
    );
    // Without the annotation (the previous cluster's), it is the one the step deletes.
    let plan = decide(
        &with_generation(fd(changed("savepoint"), Some(refused_since), true, false), 4),
        &Observation {
            deployed_generation: Some(1),
            ..obs(ready_jm(), running_job())
        },
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    let plan = decide(
        &changed_again(deploying),
        &Observation {
            deployed_generation: Some(2),
            ..obs(ready_jm(), running_job())
        },
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    let plan = decide(
        &changed_again(plan.status),
        &Observation {
            deployed_generation: Some(2),
            ..obs(ready_jm(), running_job())
        },
    );
    assert!(
        matches!(
            plan.actions[..],
            [Action::Job(JobAction::StopWithSavepoint { .. })]
        ),
        "{:?}",
        plan.actions
    );
}

#[test]
fn a_savepoint_waits_until_all_tasks_of_the_job_run() {
    let deploying = Some(JobObservation::Found {
        state: FlinkJobState::Running,
        start_time: Some(NOW - 1000),
        all_tasks_running: false,
        failure: None,
        checkpoint_id: None,
    });
    let changed_fd = |status| with_generation(fd(changed("savepoint"), Some(status), true, false), 2);
    let plan = decide(&changed_fd(running()), &obs(ready_jm(), deploying.clone()));
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(plan.status.error, None);
    assert_eq!(
        condition(&plan.status, "Progressing").reason.as_deref(),
        Some(Phase::Updating.as_str())
    );
    // The tasks run: the stop is sent.
    let waiting = plan.status;
    let plan = decide(
        &changed_fd(waiting.clone()),
        &Observation {
            now_ms: NOW + 5_000,
            ..obs(ready_jm(), running_job())
        },
    );
    assert!(
        matches!(
            plan.actions[..],
            [Action::Job(JobAction::StopWithSavepoint { .. })]
        ),
        "{:?}",
        plan.actions
    );
    // They never do: the update fails after the grace period, saying why.
    let plan = decide(
        &changed_fd(waiting),
        &Observation {
            now_ms: NOW + 61_000,
            ..obs(ready_jm(), deploying)
        },
    );
    assert!(plan.actions.is_empty());
    assert!(
        plan.status
            .error
            .as_deref()
            .unwrap()
            .contains("not all tasks of the job are running"),
        "{:?}",
        plan.status.error
    );
    assert_eq!(
        condition(&plan.status, "Degraded").reason.as_deref(),
        Some(Phase::UpdateFailed.as_str())
    );
}

#[test]
fn a_session_cluster_is_redeployed_with_its_new_spec() {
    let spec = json!({"image": "flink:2.3", "flinkVersion": "v2_3"});
    let session = decide(
        &fd(spec.clone(), None, true, false),
        &obs(JobManagerObservation::Missing, None),
    )
    .status;
    let mut changed = spec;
    changed["image"] = json!("flink:2.3.0");
    let plan = decide(
        &with_generation(fd(changed, Some(session), true, false), 2),
        &obs(ready_jm(), None),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
}

#[test]
fn invalid_specs_are_not_deployed() {
    let plan = decide(
        &fd(app_spec(), None, true, false),
        &Observation {
            violations: vec!["spec.image: required".into()],
            ..obs(JobManagerObservation::Missing, None)
        },
    );
    assert!(plan.actions.is_empty());
    assert_eq!(plan.status.error.as_deref(), Some("spec.image: required"));
    assert_eq!(
        condition(&plan.status, "Ready").reason.as_deref(),
        Some(Phase::DeployFailed.as_str())
    );
}

#[test]
fn deletion_removes_the_cluster_then_the_finalizer() {
    let deleting = fd(app_spec(), Some(deployed()), true, true);
    let plan = decide(&deleting, &obs(ready_jm(), None));
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    assert_eq!(
        plan.status.lifecycle_state,
        Some(ResourceLifecycleState::Deleting)
    );
    let plan = decide(&deleting, &obs(JobManagerObservation::Missing, None));
    assert_eq!(plan.actions, [Action::RemoveFinalizer]);
    let plan = decide(
        &fd(app_spec(), None, false, true),
        &obs(JobManagerObservation::Missing, None),
    );
    assert!(plan.actions.is_empty());
}

#[test]
fn the_ingress_follows_spec_ingress_beside_the_lifecycle_and_is_left_alone_when_not_managed() {
    let with_ingress = || {
        let mut spec = app_spec();
        spec["ingress"] = json!({"template": "{{name}}.{{namespace}}.example.com", "className": "nginx"});
        spec
    };
    let managed = |existing: Option<k8s_openapi::api::networking::v1::Ingress>| {
        let mut observation = obs(ready_jm(), running_job());
        observation.ingress = crate::resources::ingress::Observed {
            managed: true,
            existing,
            job_manager: None,
        };
        observation
    };
    let ingress_actions = |plan: &Plan| -> Vec<IngressChange> {
        plan.actions
            .iter()
            .filter_map(|a| match a {
                Action::Ingress(change) => Some(change.clone()),
                _ => None,
            })
            .collect()
    };
    let running_fd = |spec| fd(spec, Some(running()), true, false);

    // Missing: applied, routed to the REST Service on the REST port.
    let plan = decide(&running_fd(with_ingress()), &managed(None));
    let applied: [IngressChange; 1] = ingress_actions(&plan).try_into().unwrap();
    let [IngressChange::Apply { ingress, .. }] = applied else {
        panic!("{:?}", plan.actions)
    };
    let rule = &ingress.spec.as_ref().unwrap().rules.as_ref().unwrap()[0];
    assert_eq!(rule.host.as_deref(), Some("basic.ns.example.com"));
    let backend = rule.http.as_ref().unwrap().paths[0]
        .backend
        .service
        .clone()
        .unwrap();
    assert_eq!(
        (backend.name.as_str(), backend.port.unwrap().number),
        ("basic-rest", Some(8081))
    );
    assert_eq!(ingress.metadata.owner_references.as_ref().unwrap()[0].uid, "u");

    // Cached as applied: nothing, so a steady resource costs no request.
    let mut cached = (*ingress).clone();
    cached.metadata.resource_version = Some("3".into());
    assert!(
        ingress_actions(&decide(
            &running_fd(with_ingress()),
            &managed(Some(cached.clone()))
        ))
        .is_empty()
    );

    // spec.ingress removed: deleted; not managed: left alone; being deleted: goes with it.
    assert_eq!(
        ingress_actions(&decide(&running_fd(app_spec()), &managed(Some(cached.clone())))),
        [IngressChange::Delete {
            name: "basic".into(),
            uid: None
        }]
    );
    assert!(ingress_actions(&decide(&running_fd(app_spec()), &obs(ready_jm(), running_job()))).is_empty());
    assert!(
        ingress_actions(&decide(
            &running_fd(with_ingress()),
            &obs(ready_jm(), running_job())
        ))
        .is_empty()
    );
    let deleting = fd(with_ingress(), Some(running()), true, true);
    assert!(ingress_actions(&decide(&deleting, &managed(None))).is_empty());

    // The Apache operator's Ingress, owned by the JobManager Deployment: the resource's when
    // the observation says that Deployment is the resource's own, someone else's otherwise.
    let mut apache = (*ingress).clone();
    apache.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "basic".into(),
            uid: "jm-uid".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        },
    ]);
    let mut with_job_manager = managed(Some(apache.clone()));
    with_job_manager.ingress.job_manager = Some("jm-uid".into());
    assert_eq!(
        ingress_actions(&decide(&running_fd(with_ingress()), &with_job_manager)),
        [IngressChange::Apply {
            ingress: ingress.clone(),
            job_manager: Some("jm-uid".into())
        }]
    );
    assert!(matches!(
        ingress_actions(&decide(&running_fd(with_ingress()), &managed(Some(apache)))).as_slice(),
        [IngressChange::Refuse { .. }]
    ));
}

// === Upgrade modes, guards, suspend/resume, nonces, snapshots, deletion ===

const MIN: i64 = 60_000;

fn spec_with(mode: &str, changes: &[(&str, serde_json::Value)]) -> serde_json::Value {
    let mut spec = app_spec();
    spec["job"]["upgradeMode"] = json!(mode);
    for (field, value) in changes {
        let mut target = &mut spec;
        let parts: Vec<&str> = field.split('/').collect();
        for part in &parts[..parts.len() - 1] {
            target = &mut target[*part];
        }
        target[*parts.last().unwrap()] = value.clone();
    }
    spec
}

fn job_found(state: FlinkJobState, started: i64) -> Option<JobObservation> {
    Some(JobObservation::found(state, Some(started)))
}

/// The stored status of a job of `spec` observed in `state` (started an hour ago).
fn observed(spec: &serde_json::Value, state: FlinkJobState) -> FlinkDeploymentStatus {
    let deployed = decide(
        &fd(spec.clone(), None, true, false),
        &obs(JobManagerObservation::Missing, None),
    )
    .status;
    decide(
        &fd(spec.clone(), Some(deployed), true, false),
        &obs(ready_jm(), job_found(state, NOW - 60 * MIN)),
    )
    .status
}

fn at(spec: serde_json::Value, status: FlinkDeploymentStatus, generation: i64) -> FlinkDeployment {
    with_generation(fd(spec, Some(status), true, false), generation)
}

/// `observation` of a cluster with high availability whose HA metadata holds a completed
/// checkpoint (what a last-state change restores).
fn holding_a_checkpoint(observation: Observation) -> Observation {
    Observation {
        policy: Policy {
            high_availability: true,
            ..observation.policy
        },
        ha_checkpoint: Some(true),
        ..observation
    }
}

fn with_policy(observation: Observation, policy: Policy) -> Observation {
    Observation {
        policy,
        ..observation
    }
}

fn checkpoint(age_ms: i64) -> Option<StateObservation> {
    Some(StateObservation {
        path: "file:/cp/chk-7".into(),
        timestamp_ms: NOW - age_ms,
    })
}

fn with_savepoint(mut status: FlinkDeploymentStatus, path: &str, age_ms: i64) -> FlinkDeploymentStatus {
    let info = status
        .job_status
        .get_or_insert_with(Default::default)
        .savepoint_info
        .get_or_insert_with(Default::default);
    info.last_savepoint = Some(Savepoint {
        time_stamp: Some(NOW - age_ms),
        location: Some(path.into()),
        trigger_type: Some(SnapshotTriggerType::Periodic),
        ..Default::default()
    });
    status
}

fn phase_of(plan: &Plan) -> &str {
    condition(&plan.status, "Ready").reason.as_deref().unwrap()
}

fn recorded_spec(status: &FlinkDeploymentStatus) -> FlinkDeploymentSpec {
    reconciliation(status).last_reconciled_spec().unwrap().unwrap()
}

use flink_operator_api::common::{Savepoint, SnapshotTriggerType, UpgradeMode};

#[test]
fn a_last_state_upgrade_keeps_the_ha_metadata_and_the_job_id() {
    let old = spec_with("last-state", &[]);
    let new = spec_with("last-state", &[("job/parallelism", json!(4))]);
    let running = observed(&old, FlinkJobState::Running);
    let job_id = running.job_status.as_ref().unwrap().job_id.clone();
    let plan = decide(
        &at(new.clone(), running, 2),
        &holding_a_checkpoint(Observation {
            latest_checkpoint: checkpoint(MIN),
            ..obs(ready_jm(), job_found(FlinkJobState::Running, NOW - 60 * MIN))
        }),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: true }]);
    let committed = plan.status_before.unwrap();
    let job = committed.job_status.as_ref().unwrap();
    assert_eq!(job.upgrade_savepoint_path, None);
    assert_eq!(
        job.checkpoint_info
            .as_ref()
            .unwrap()
            .last_checkpoint
            .as_ref()
            .unwrap()
            .time_stamp,
        Some(NOW - MIN),
        "the checkpoint's time is kept for a later restore guard"
    );
    // Crash before the delete finished: deleted again, HA still kept.
    let plan = decide(&at(new.clone(), committed.clone(), 2), &obs(ready_jm(), None));
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: true }]);
    // Gone: the same job id, no path, job graphs removed from the HA metadata.
    let plan = decide(&at(new, committed, 2), &obs(JobManagerObservation::Missing, None));
    assert_eq!(
        plan.actions,
        [Action::Deploy {
            restore_path: None,
            job_id: job_id.clone(),
            last_state: true,
            spec: None,
            deployed_at_ms: NOW,
        }]
    );
    assert_eq!(plan.status_before.unwrap().job_status.unwrap().job_id, job_id);
}

/// A change while the cluster of a start has not come up starts the next job from what that
/// start was to restore: a last-state start's is the latest checkpoint in the HA metadata,
/// which no path in status names, so the metadata is kept for it (not deleted for a start
/// from nothing); a first deployment's is its `initialSavepointPath`.
#[test]
fn a_change_before_the_cluster_came_up_restores_what_its_start_was_to_restore() {
    let held = |observation: Observation| {
        holding_a_checkpoint(Observation {
            ha_metadata: true,
            ..observation
        })
    };
    let old = spec_with("last-state", &[]);
    let new = spec_with("last-state", &[("job/parallelism", json!(4))]);
    let again = spec_with("savepoint", &[("job/parallelism", json!(2))]);
    let running = observed(&old, FlinkJobState::Running);
    let job_id = running.job_status.as_ref().unwrap().job_id.clone();
    let committed = decide(
        &at(new.clone(), running, 2),
        &holding_a_checkpoint(Observation {
            latest_checkpoint: checkpoint(MIN),
            ..obs(ready_jm(), job_found(FlinkJobState::Running, NOW - 60 * MIN))
        }),
    )
    .status_before
    .unwrap();
    let plan = decide(
        &at(new, committed, 2),
        &holding_a_checkpoint(obs(JobManagerObservation::Missing, None)),
    );
    assert!(matches!(
        plan.actions.as_slice(),
        [Action::Deploy { last_state: true, .. }]
    ));
    // Its JobManager has not come up when the spec changes again.
    let starting = JobManagerObservation::Present {
        ready: 0,
        replicas: 1,
        problem: None,
        rest_ready: false,
    };
    let plan = decide(
        &at(again.clone(), plan.status, 3),
        &holding_a_checkpoint(obs(starting, None)),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: true }]);
    let plan = decide(
        &at(again, plan.status_before.unwrap(), 3),
        &holding_a_checkpoint(Observation {
            ha_metadata: true,
            ..obs(JobManagerObservation::Missing, None)
        }),
    );
    assert_eq!(
        plan.actions,
        [Action::Deploy {
            restore_path: None,
            job_id,
            last_state: true,
            spec: None,
            deployed_at_ms: NOW,
        }]
    );

    // A first deployment whose job ran unseen (its JobManager did not answer, then was
    // lost and is starting again): its HA metadata holds a checkpoint of it, newer than
    // what it started from, which the next job restores.
    let first = spec_with("savepoint", &[]);
    let deployed = decide(
        &fd(first.clone(), None, true, false),
        &obs(JobManagerObservation::Missing, None),
    )
    .status;
    let job_id = deployed.job_status.as_ref().unwrap().job_id.clone();
    let changed = spec_with("savepoint", &[("job/parallelism", json!(4))]);
    let restarting = || {
        held(obs(
            JobManagerObservation::Present {
                ready: 0,
                replicas: 1,
                problem: None,
                rest_ready: false,
            },
            None,
        ))
    };
    let plan = decide(&at(changed.clone(), deployed, 2), &restarting());
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: true }]);
    let plan = decide(
        &at(changed, plan.status_before.unwrap(), 2),
        &held(obs(JobManagerObservation::Missing, None)),
    );
    assert_eq!(
        plan.actions,
        [Action::Deploy {
            restore_path: None,
            job_id,
            last_state: true,
            spec: None,
            deployed_at_ms: NOW,
        }]
    );

    // A first deployment from spec.job.initialSavepointPath (file:/sp/1).
    let first = spec_with("savepoint", &[]);
    let deployed = decide(
        &fd(first, None, true, false),
        &obs(JobManagerObservation::Missing, None),
    )
    .status;
    let changed = spec_with("savepoint", &[("job/parallelism", json!(4))]);
    let starting = JobManagerObservation::Present {
        ready: 0,
        replicas: 1,
        problem: None,
        rest_ready: false,
    };
    let plan = decide(&at(changed.clone(), deployed, 2), &obs(starting, None));
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    let plan = decide(
        &at(changed, plan.status_before.unwrap(), 2),
        &obs(JobManagerObservation::Missing, None),
    );
    match plan.actions.as_slice() {
        [Action::Deploy { restore_path, .. }] => {
            assert_eq!(restore_path.as_deref(), Some("file:/sp/1"))
        }
        other => panic!("{other:?}"),
    }
}

/// A job that failed or was cancelled behind the operator's back keeps its latest checkpoint
/// only in its JobManager's memory (Flink's cleanup of the ended job takes it out of the HA
/// metadata): it is recorded in status while it is known, so that the deletion (or a change)
/// still finds it once the cluster is gone.
#[test]
fn an_ended_jobs_latest_checkpoint_is_recorded_while_its_jobmanager_knows_it() {
    for mode in ["savepoint", "last-state", "stateless"] {
        let spec = spec_with(mode, &[]);
        let running = observed(&spec, FlinkJobState::Running);
        for state in [
            FlinkJobState::Failed,
            FlinkJobState::Canceled,
            FlinkJobState::Running,
        ] {
            let plan = decide(
                &at(spec.clone(), running.clone(), 1),
                &holding_a_checkpoint(Observation {
                    latest_checkpoint: checkpoint(MIN),
                    ..obs(ready_jm(), job_found(state.clone(), NOW - 60 * MIN))
                }),
            );
            let job = plan.status.job_status.unwrap();
            // Otherwise status names the state the job was started from.
            let recorded = match mode != "stateless" && state != FlinkJobState::Running {
                true => "file:/cp/chk-7",
                false => "file:/sp/1",
            };
            assert_eq!(
                job.upgrade_savepoint_path.as_deref(),
                Some(recorded),
                "{mode} {state}"
            );
        }
    }
    // The job runs a stateless spec, and a change to a stateful one is under way: its state
    // is the user's to keep now.
    let running = observed(&spec_with("stateless", &[]), FlinkJobState::Running);
    let changed = spec_with("savepoint", &[("job/parallelism", json!(3))]);
    let plan = decide(
        &at(changed, running, 2),
        &Observation {
            latest_checkpoint: checkpoint(MIN),
            ..obs(ready_jm(), job_found(FlinkJobState::Failed, NOW - 60 * MIN))
        },
    );
    let job = plan.status_before.unwrap_or(plan.status).job_status.unwrap();
    assert_eq!(job.upgrade_savepoint_path.as_deref(), Some("file:/cp/chk-7"));
}

/// A change of `upgradeMode` alone ends no job and is recorded, but not while the recorded
/// mode says how a suspension left the job's state (a last-state one: in the HA metadata)
/// or how a start that has not run yet restores it: recorded then, the resume was refused
/// for want of a recorded path, and a change before the cluster came up deleted the HA
/// metadata for a start from nothing.
#[test]
fn a_change_of_the_upgrade_mode_alone_keeps_how_the_state_was_left() {
    let held = |observation: Observation| {
        holding_a_checkpoint(Observation {
            ha_metadata: true,
            ..observation
        })
    };
    let missing = || held(obs(JobManagerObservation::Missing, None));
    // Suspended in last-state mode, the mode changed, then resumed.
    let running = spec_with("last-state", &[]);
    let suspending = spec_with("last-state", &[("job/state", json!("suspended"))]);
    let plan = decide(
        &at(suspending.clone(), observed(&running, FlinkJobState::Running), 2),
        &held(Observation {
            latest_checkpoint: checkpoint(MIN),
            ..obs(ready_jm(), job_found(FlinkJobState::Running, NOW - 60 * MIN))
        }),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: true }]);
    let suspended = decide(&at(suspending, plan.status_before.unwrap(), 2), &missing()).status;
    let edited = spec_with("savepoint", &[("job/state", json!("suspended"))]);
    let plan = decide(&at(edited, suspended, 3), &missing());
    assert_eq!(
        recorded_spec(&plan.status).job.unwrap().upgrade_mode,
        Some(UpgradeMode::LastState)
    );
    let resumed = spec_with("savepoint", &[]);
    let plan = decide(&at(resumed.clone(), plan.status, 4), &missing());
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: true }]);
    let plan = decide(&at(resumed, plan.status_before.unwrap(), 4), &missing());
    assert!(
        matches!(plan.actions[..], [Action::Deploy { last_state: true, .. }]),
        "{:?}",
        plan.actions
    );

    // A last-state start whose cluster has not come up: the mode changed, then the spec.
    let new = spec_with("last-state", &[("job/parallelism", json!(4))]);
    let committed = decide(
        &at(new.clone(), observed(&running, FlinkJobState::Running), 2),
        &held(Observation {
            latest_checkpoint: checkpoint(MIN),
            ..obs(ready_jm(), job_found(FlinkJobState::Running, NOW - 60 * MIN))
        }),
    )
    .status_before
    .unwrap();
    let deployed = decide(&at(new, committed, 2), &missing()).status;
    let starting = || {
        held(obs(
            JobManagerObservation::Present {
                ready: 0,
                replicas: 1,
                problem: None,
                rest_ready: false,
            },
            None,
        ))
    };
    let moded = spec_with("savepoint", &[("job/parallelism", json!(4))]);
    let plan = decide(&at(moded, deployed, 3), &starting());
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    let again = spec_with("savepoint", &[("job/parallelism", json!(2))]);
    let plan = decide(&at(again, plan.status, 4), &starting());
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: true }]);
}

/// A committed last-state start restores the latest checkpoint the HA metadata holds for
/// the job; Flink's cleanup takes it out once the job ends (it FAILED after the change was
/// committed, before its cluster went). Then the job's latest checkpoint as its JobManager
/// still reports it is recorded and restored instead; with none known, the job is not
/// started from nothing.
#[test]
fn a_last_state_start_whose_ha_metadata_lost_its_checkpoint_restores_the_reported_one_or_waits() {
    let new = spec_with("last-state", &[("job/parallelism", json!(4))]);
    let committed = decide(
        &at(
            new.clone(),
            observed(&spec_with("last-state", &[]), FlinkJobState::Running),
            2,
        ),
        &holding_a_checkpoint(Observation {
            latest_checkpoint: checkpoint(MIN),
            ..obs(ready_jm(), job_found(FlinkJobState::Running, NOW - 60 * MIN))
        }),
    )
    .status_before
    .unwrap();
    let emptied = |observation: Observation| Observation {
        ha_checkpoint: Some(false),
        ha_metadata: true,
        policy: Policy {
            high_availability: true,
            ..observation.policy
        },
        ..observation
    };
    // Its JobManager does not answer: it may hold the only pointer to that checkpoint, so
    // the cluster is not deleted until it answers.
    let plan = decide(
        &at(new.clone(), committed.clone(), 2),
        &emptied(obs(
            ready_jm(),
            Some(JobObservation::Unreachable("timed out".into())),
        )),
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(plan.requeue, FAST);
    // The job failed before its cluster went: its checkpoint is recorded, the cluster goes
    // with the HA metadata (the next job restores that path).
    let plan = decide(
        &at(new.clone(), committed.clone(), 2),
        &emptied(Observation {
            latest_checkpoint: checkpoint(30_000),
            ..obs(ready_jm(), job_found(FlinkJobState::Failed, NOW - 60 * MIN))
        }),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    let recorded = plan.status_before.unwrap();
    assert_eq!(
        recorded
            .job_status
            .as_ref()
            .unwrap()
            .upgrade_savepoint_path
            .as_deref(),
        Some("file:/cp/chk-7")
    );
    let plan = decide(
        &at(new.clone(), recorded, 2),
        &emptied(obs(JobManagerObservation::Missing, None)),
    );
    match plan.actions.as_slice() {
        [
            Action::DeleteHaMetadata,
            Action::Deploy {
                restore_path,
                last_state: false,
                ..
            },
        ] => assert_eq!(restore_path.as_deref(), Some("file:/cp/chk-7")),
        other => panic!("{other:?}"),
    }
    // The cluster gone, nothing names a checkpoint: nothing is deployed, status says why.
    let plan = decide(
        &at(new, committed, 2),
        &emptied(obs(JobManagerObservation::Missing, None)),
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert!(
        plan.status
            .error
            .as_deref()
            .is_some_and(|e| e.contains("high-availability metadata")),
        "{:?}",
        plan.status.error
    );
    // Until the user names the state (as the error says).
    let redeploy = spec_with(
        "last-state",
        &[
            ("job/parallelism", json!(4)),
            ("job/savepointRedeployNonce", json!(1)),
            ("job/initialSavepointPath", json!("file:/sp/mine")),
        ],
    );
    let plan = decide(
        &at(redeploy, plan.status, 3),
        &emptied(obs(JobManagerObservation::Missing, None)),
    );
    match plan.actions.as_slice() {
        [
            Action::DeleteHaMetadata,
            Action::Deploy {
                restore_path,
                last_state: false,
                ..
            },
        ] => assert_eq!(restore_path.as_deref(), Some("file:/sp/mine")),
        other => panic!("{other:?}"),
    }
    assert_eq!(plan.status.error, None);
}

#[test]
fn a_last_state_upgrade_tears_down_only_a_cluster_whose_ha_metadata_holds_a_checkpoint() {
    let old = spec_with("last-state", &[]);
    let new = spec_with("last-state", &[("job/parallelism", json!(4))]);
    let with_ha = Policy {
        high_availability: true,
        ..Policy::status_only()
    };
    let with_savepoint_dir = Policy {
        savepoint_dir: Some("s3://b/sp".into()),
        ..with_ha.clone()
    };
    let without_ha = Policy::status_only();
    let stop = Action::Job(JobAction::StopWithSavepoint {
        job_id: observed(&old, FlinkJobState::Running)
            .job_status
            .unwrap()
            .job_id
            .unwrap(),
        trigger_id: "trigger".into(),
        drain: false,
    });
    // (case, HA metadata holds a checkpoint, job state, policy) -> actions; a refusal's reason
    let cases = vec![
        (
            "a checkpoint in HA: torn down, HA kept",
            Some(true),
            FlinkJobState::Running,
            &with_ha,
            vec![Action::DeleteCluster { keep_ha: true }],
            None,
        ),
        (
            "none in HA, running, a savepoint directory: stopped with a savepoint instead",
            Some(false),
            FlinkJobState::Running,
            &with_savepoint_dir,
            vec![stop],
            None,
        ),
        (
            "none in HA, running, no savepoint directory",
            Some(false),
            FlinkJobState::Running,
            &with_ha,
            vec![],
            Some("execution.checkpointing.savepoint-dir is not set"),
        ),
        (
            "none in HA, not running",
            Some(false),
            FlinkJobState::Restarting,
            &with_savepoint_dir,
            vec![],
            Some("the job is not RUNNING"),
        ),
        (
            "no HA metadata read (high availability off)",
            None,
            FlinkJobState::Running,
            &without_ha,
            vec![],
            Some("holds no completed checkpoint"),
        ),
    ];
    for (case, ha_checkpoint, state, policy, actions, refused) in cases {
        let plan = decide(
            &at(new.clone(), observed(&old, state.clone()), 2),
            &Observation {
                ha_checkpoint,
                latest_checkpoint: checkpoint(MIN),
                ..with_policy(obs(ready_jm(), job_found(state, NOW - 60 * MIN)), policy.clone())
            },
        );
        assert_eq!(plan.actions, actions, "{case}");
        match refused {
            Some(why) => {
                let error = plan.status.error.clone().unwrap_or_default();
                assert!(
                    error.contains("holds no completed checkpoint") && error.contains(why),
                    "{case}: {error}"
                );
                assert!(
                    plan.events
                        .iter()
                        .any(|e| e.warning && e.reason == Reason::UpdateFailed && e.note == error),
                    "{case}: {:?}",
                    plan.events
                );
                assert_eq!(
                    recorded_spec(&plan.status),
                    serde_json::from_value::<FlinkDeploymentSpec>(old.clone()).unwrap(),
                    "{case}: the change is not committed"
                );
            }
            None => assert_eq!(plan.status.error, None, "{case}"),
        }
    }
}

#[test]
fn a_suspended_job_keeps_its_savepoint_and_resumes_from_it() {
    let running_spec = spec_with("savepoint", &[]);
    let suspended_spec = spec_with("savepoint", &[("job/state", json!("suspended"))]);
    let plan = decide(
        &at(
            suspended_spec.clone(),
            observed(&running_spec, FlinkJobState::Running),
            2,
        ),
        &obs(ready_jm(), job_found(FlinkJobState::Running, NOW - 60 * MIN)),
    );
    assert!(matches!(
        plan.actions[..],
        [Action::Job(JobAction::StopWithSavepoint { .. })]
    ));
    let triggered = plan.status_before.unwrap();
    let plan = decide(
        &at(suspended_spec.clone(), triggered, 2),
        &Observation {
            savepoint: Some(SavepointPoll::Completed("file:/sp/suspend".into())),
            ..obs(ready_jm(), job_found(FlinkJobState::Finished, NOW - 60 * MIN))
        },
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    let committed = plan.status_before.unwrap();
    let plan = decide(
        &at(suspended_spec.clone(), committed, 2),
        &obs(JobManagerObservation::Missing, None),
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(
        plan.status.lifecycle_state,
        Some(ResourceLifecycleState::Suspended)
    );
    assert_eq!(phase_of(&plan), Phase::Suspended.as_str());
    assert!(plan.events.iter().any(|e| e.reason == Reason::Suspended));
    let suspended = plan.status;
    // Staying suspended is quiet: no error for the missing cluster.
    let plan = decide(
        &at(suspended_spec, suspended.clone(), 2),
        &obs(JobManagerObservation::Missing, None),
    );
    assert!(plan.actions.is_empty());
    assert_eq!(plan.status.error, None);
    assert_eq!(phase_of(&plan), Phase::Suspended.as_str());
    // Resume: the recorded savepoint is restored by a new job.
    let plan = decide(
        &at(running_spec.clone(), suspended.clone(), 3),
        &obs(JobManagerObservation::Missing, None),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    let resuming = plan.status_before.unwrap();
    let plan = decide(
        &at(running_spec.clone(), resuming, 3),
        &Observation {
            fresh_job_id: "resumed".into(),
            ..obs(JobManagerObservation::Missing, None)
        },
    );
    assert_eq!(
        plan.actions,
        [Action::Deploy {
            restore_path: Some("file:/sp/suspend".into()),
            job_id: Some("resumed".into()),
            last_state: false,
            spec: None,
            deployed_at_ms: NOW,
        }]
    );
}

#[test]
fn a_broken_deployment_is_replaced_from_the_state_it_was_started_from() {
    let old = spec_with("savepoint", &[]);
    let new = spec_with("savepoint", &[("image", json!("flink:2.3.0"))]);
    // Deployed from file:/sp/1 (initialSavepointPath), the JobManager crash-loops.
    let deployed = decide(
        &fd(old, None, true, false),
        &obs(JobManagerObservation::Missing, None),
    )
    .status;
    let crashing = JobManagerObservation::Present {
        ready: 0,
        replicas: 1,
        problem: Some("CrashLoopBackOff".into()),
        rest_ready: false,
    };
    let mut status = decide(&at(app_spec(), deployed, 1), &obs(crashing.clone(), None)).status;
    status.job_status.as_mut().unwrap().upgrade_savepoint_path = Some("file:/sp/1".into());
    let plan = decide(&at(new, status, 2), &obs(crashing, None));
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    assert_eq!(
        plan.status_before
            .unwrap()
            .job_status
            .unwrap()
            .upgrade_savepoint_path
            .as_deref(),
        Some("file:/sp/1")
    );
}

/// A job started again from a state the lifecycle restores (its newest checkpoint for a
/// change without a savepoint, a failed job's restart, an ended job's last savepoint) gets a
/// new cluster without the old one's high-availability metadata, which would restore its
/// own latest checkpoint instead. Which state is restored is the lifecycle's (its
/// scenarios).
#[test]
fn a_job_started_again_from_a_restored_state_gets_a_cluster_without_the_ha_metadata() {
    let old = spec_with("savepoint", &[]);
    let new = spec_with("savepoint", &[("job/parallelism", json!(4))]);
    let stateless = spec_with("stateless", &[]);
    let without_savepoint = Policy {
        take_savepoint: false,
        ..Policy::status_only()
    };
    let restart = Policy {
        restart_failed: true,
        ..Policy::status_only()
    };
    let savepoint_max_age = Policy {
        savepoint_max_age_ms: Some(5 * MIN),
        ..Policy::status_only()
    };
    // (case, the resource, the state observed, the settings, the state restored)
    let cases = [
        (
            "cancelled without a savepoint",
            at(new.clone(), observed(&old, FlinkJobState::Canceled), 2),
            FlinkJobState::Canceled,
            without_savepoint,
            Some("file:/cp/chk-7"),
        ),
        (
            "a failed job restarted",
            at(old.clone(), observed(&old, FlinkJobState::Failed), 1),
            FlinkJobState::Failed,
            restart.clone(),
            Some("file:/cp/chk-7"),
        ),
        (
            "a failed stateless job restarted",
            at(stateless.clone(), observed(&stateless, FlinkJobState::Failed), 1),
            FlinkJobState::Failed,
            restart,
            None,
        ),
        (
            "an ended job upgraded from its last savepoint",
            at(
                new,
                with_savepoint(observed(&old, FlinkJobState::Finished), "file:/sp/recent", MIN),
                2,
            ),
            FlinkJobState::Finished,
            savepoint_max_age,
            Some("file:/sp/recent"),
        ),
    ];
    for (case, resource, state, policy, restored) in cases {
        let plan = decide(
            &resource,
            &with_policy(
                Observation {
                    latest_checkpoint: checkpoint(MIN),
                    ..obs(ready_jm(), job_found(state, NOW - 60 * MIN))
                },
                policy,
            ),
        );
        assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }], "{case}");
        let before = plan.status_before.expect("recorded before the cluster goes");
        assert_eq!(
            before.job_status.unwrap().upgrade_savepoint_path.as_deref(),
            restored,
            "{case}"
        );
    }
}

#[test]
fn nonces_and_ignored_fields() {
    let spec = spec_with("savepoint", &[]);
    let running = || observed(&spec, FlinkJobState::Running);
    let running_obs = || obs(ready_jm(), job_found(FlinkJobState::Running, NOW - 60 * MIN));
    type Check = fn(&Plan);
    let cases: Vec<(&str, serde_json::Value, Check)> = vec![
        (
            "savepointTriggerNonce: a manual savepoint, nonce recorded with the trigger",
            spec_with("savepoint", &[("job/savepointTriggerNonce", json!(7))]),
            |plan| {
                assert_eq!(
                    plan.actions,
                    [Action::Job(JobAction::TriggerSavepoint {
                        job_id: "fresh".into(),
                        trigger_id: "trigger".into()
                    })]
                );
                let before = plan.status_before.as_ref().unwrap();
                assert_eq!(
                    recorded_spec(before).job.unwrap().savepoint_trigger_nonce,
                    Some(7)
                );
                let info = before
                    .job_status
                    .as_ref()
                    .unwrap()
                    .savepoint_info
                    .as_ref()
                    .unwrap();
                assert_eq!(info.trigger_type, Some(SnapshotTriggerType::Manual));
            },
        ),
        (
            "checkpointTriggerNonce: a manual checkpoint",
            spec_with("savepoint", &[("job/checkpointTriggerNonce", json!(3))]),
            |plan| {
                assert!(matches!(
                    plan.actions[..],
                    [Action::Job(JobAction::TriggerCheckpoint { .. })]
                ));
                let before = plan.status_before.as_ref().unwrap();
                assert_eq!(
                    recorded_spec(before).job.unwrap().checkpoint_trigger_nonce,
                    Some(3)
                );
            },
        ),
        (
            "restartNonce: an upgrade in the job's mode",
            spec_with("savepoint", &[("restartNonce", json!(1))]),
            |plan| {
                assert!(matches!(
                    plan.actions[..],
                    [Action::Job(JobAction::StopWithSavepoint { .. })]
                ))
            },
        ),
        (
            "savepointRedeployNonce: redeployed from initialSavepointPath, no savepoint taken",
            spec_with(
                "savepoint",
                &[
                    ("job/savepointRedeployNonce", json!(1)),
                    ("job/initialSavepointPath", json!("file:/sp/chosen")),
                ],
            ),
            |plan| {
                assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
                let job = plan.status_before.as_ref().unwrap().job_status.clone().unwrap();
                assert_eq!(job.upgrade_savepoint_path.as_deref(), Some("file:/sp/chosen"));
                assert!(plan.events.iter().any(|e| e.reason == Reason::SavepointRedeploy));
            },
        ),
        (
            "upgradeMode only: recorded, nothing redeployed",
            spec_with("last-state", &[]),
            |plan| {
                assert!(plan.actions.is_empty());
                assert_eq!(
                    recorded_spec(&plan.status).job.unwrap().upgrade_mode,
                    Some(UpgradeMode::LastState)
                );
            },
        ),
        (
            "operator keys only: recorded, nothing redeployed",
            spec_with(
                "savepoint",
                &[(
                    "flinkConfiguration",
                    json!({"kubernetes.operator.job.restore.max-state-age": "1 h"}),
                )],
            ),
            |plan| {
                assert!(plan.actions.is_empty());
                assert_eq!(phase_of(plan), Phase::Running.as_str());
            },
        ),
    ];
    for (name, new, check) in cases {
        let plan = decide(&at(new, running(), 2), &running_obs());
        eprintln!("case: {name}");
        check(&plan);
    }
}

#[test]
fn deletion_with_a_savepoint_records_it_before_the_cluster_goes() {
    let spec = spec_with("savepoint", &[]);
    let on_deletion = Policy {
        savepoint_on_deletion_set: Some(true),
        ..Policy::status_only()
    };
    let deleting = |status| fd(spec.clone(), Some(status), true, true);
    let plan = decide(
        &deleting(observed(&spec, FlinkJobState::Running)),
        &with_policy(
            obs(ready_jm(), job_found(FlinkJobState::Running, NOW - MIN)),
            on_deletion.clone(),
        ),
    );
    assert!(matches!(
        plan.actions[..],
        [Action::Job(JobAction::StopWithSavepoint { .. })]
    ));
    let triggered = plan.status_before.unwrap();
    assert_eq!(triggered.lifecycle_state, Some(ResourceLifecycleState::Deleting));
    // Failed: the job keeps running, the cluster stays, the reason is shown.
    let plan = decide(
        &deleting(triggered.clone()),
        &with_policy(
            Observation {
                savepoint: Some(SavepointPoll::Failed("disk full".into())),
                ..obs(ready_jm(), job_found(FlinkJobState::Running, NOW - MIN))
            },
            on_deletion.clone(),
        ),
    );
    assert!(plan.actions.is_empty());
    assert!(plan.status.error.unwrap().contains("disk full"));
    // Completed: recorded in the same write that precedes the delete.
    let plan = decide(
        &deleting(triggered),
        &with_policy(
            Observation {
                savepoint: Some(SavepointPoll::Completed("file:/sp/final".into())),
                ..obs(ready_jm(), job_found(FlinkJobState::Finished, NOW - MIN))
            },
            on_deletion,
        ),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    let before = plan.status_before.unwrap().job_status.unwrap();
    assert_eq!(before.upgrade_savepoint_path.as_deref(), Some("file:/sp/final"));
    assert_eq!(
        before
            .savepoint_info
            .unwrap()
            .last_savepoint
            .unwrap()
            .location
            .as_deref(),
        Some("file:/sp/final")
    );
}

/// Without high availability nothing points at a running job's latest checkpoint once its
/// cluster is deleted (no HA metadata keeps it for the deletion's record, and what its
/// JobManager completes while it exits subsumes the one status could name): a stateful job
/// is stopped with a savepoint for its deletion (a `savepoint` one is by default anyway; a
/// `last-state` one, which the rules refuse without HA, says why), unless the user said to
/// delete without one.
#[test]
fn a_deleted_stateful_job_without_high_availability_is_stopped_with_a_savepoint() {
    let running = || obs(ready_jm(), job_found(FlinkJobState::Running, NOW - MIN));
    let without_savepoint = Policy {
        savepoint_on_deletion_set: Some(false),
        ..Policy::status_only()
    };
    for (mode, policy, stops) in [
        ("last-state", Policy::status_only(), true),
        ("savepoint", Policy::status_only(), true),
        ("last-state", holding_a_checkpoint(running()).policy, false),
        ("last-state", without_savepoint.clone(), false),
        ("savepoint", without_savepoint, false),
        ("stateless", Policy::status_only(), false),
    ] {
        let spec = spec_with(mode, &[]);
        let plan = decide(
            &fd(
                spec.clone(),
                Some(observed(&spec, FlinkJobState::Running)),
                true,
                true,
            ),
            &with_policy(running(), policy),
        );
        if stops {
            assert!(
                matches!(
                    plan.actions[..],
                    [Action::Job(JobAction::StopWithSavepoint { .. })]
                ),
                "{mode}: {:?}",
                plan.actions
            );
            let warned = plan
                .events
                .iter()
                .any(|e| e.reason == Reason::Deleting && e.warning);
            assert_eq!(warned, mode == "last-state", "{mode}");
        } else {
            assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }], "{mode}");
        }
    }
}

/// The wait for a deleted cluster's JobManager to exit runs from when its deletion was sent,
/// not from the resource's deletion: a deletion savepoint that took longer than the wait
/// left none, and the finalizer went (a resource of the same name could start its cluster)
/// while the old JobManager still ran.
#[test]
fn a_cluster_deleted_after_a_long_deletion_savepoint_is_waited_for_too() {
    let spec = spec_with("savepoint", &[]);
    let deleting = |status| fd(spec.clone(), Some(status), true, true);
    let stopping = decide(
        &deleting(observed(&spec, FlinkJobState::Running)),
        &obs(ready_jm(), job_found(FlinkJobState::Running, NOW - MIN)),
    )
    .status_before
    .unwrap();
    // The savepoint completes five minutes after the deletion.
    let plan = decide(
        &deleting(stopping),
        &later(
            Observation {
                savepoint: Some(SavepointPoll::Completed("file:/sp/final".into())),
                ..obs(ready_jm(), job_found(FlinkJobState::Finished, NOW - MIN))
            },
            5 * MIN,
        ),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    let recorded = plan.status_before.unwrap();
    let plan = decide(&deleting(recorded.clone()), &cluster_gone(true, 5 * MIN + 2_000));
    assert_waits_for_the_job_manager(&plan);
    let plan = decide(&deleting(recorded), &cluster_gone(true, 6 * MIN + 1_000));
    assert_eq!(plan.actions, [Action::DeleteHaMetadata, Action::RemoveFinalizer]);
    // A cluster deleted without a savepoint, as long after the deletion: the same.
    let stateless = spec_with("stateless", &[]);
    let plan = decide(
        &fd(
            stateless.clone(),
            Some(observed(&stateless, FlinkJobState::Running)),
            true,
            true,
        ),
        &later(
            obs(ready_jm(), job_found(FlinkJobState::Running, NOW - MIN)),
            5 * MIN,
        ),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    let written = plan
        .status_before
        .expect("the deletion's time written before it is sent");
    let plan = decide(
        &fd(stateless, Some(written), true, true),
        &cluster_gone(true, 5 * MIN + 2_000),
    );
    assert_waits_for_the_job_manager(&plan);
}

/// The job's latest checkpoint, as its JobManager reports it, is in status before the
/// cluster of a deleted resource goes: once it has, only HA metadata could name it, and none
/// does for a job that ended (Flink's cleanup takes it out) or without high availability.
#[test]
fn a_deleted_jobs_latest_checkpoint_is_in_status_before_its_cluster_goes() {
    for (mode, state) in [
        ("savepoint", FlinkJobState::Failed),
        ("last-state", FlinkJobState::Failed),
        ("last-state", FlinkJobState::Running),
    ] {
        let spec = spec_with(mode, &[]);
        // Deleted before the operator saw the job fail.
        let plan = decide(
            &fd(
                spec.clone(),
                Some(observed(&spec, FlinkJobState::Running)),
                true,
                true,
            ),
            &holding_a_checkpoint(Observation {
                latest_checkpoint: checkpoint(MIN),
                ..obs(ready_jm(), job_found(state.clone(), NOW - 60 * MIN))
            }),
        );
        assert_eq!(
            plan.actions,
            [Action::DeleteCluster { keep_ha: false }],
            "{mode} {state}"
        );
        let written = plan.status_before.expect("written before the cluster goes");
        assert_eq!(
            written.job_status.unwrap().upgrade_savepoint_path.as_deref(),
            Some("file:/cp/chk-7"),
            "{mode} {state}"
        );
    }
    // A stateless job's is not its state.
    let spec = spec_with("stateless", &[]);
    let plan = decide(
        &fd(
            spec.clone(),
            Some(observed(&spec, FlinkJobState::Running)),
            true,
            true,
        ),
        &Observation {
            latest_checkpoint: checkpoint(MIN),
            ..obs(ready_jm(), job_found(FlinkJobState::Running, NOW - 60 * MIN))
        },
    );
    let written = plan.status_before.unwrap();
    assert_eq!(
        written.job_status.unwrap().upgrade_savepoint_path.as_deref(),
        Some("file:/sp/1"),
        "the state it was started from, not its checkpoint"
    );
}

/// A deletion that stops the running job with a savepoint first does not give the savepoint
/// up because the JobManager did not answer at that look: the cluster would go with the
/// job's latest state (without HA metadata, named nowhere). It looks again soon.
#[test]
fn a_deletion_savepoint_waits_for_a_jobmanager_that_does_not_answer() {
    let spec = spec_with("savepoint", &[]);
    let deleting = fd(
        spec.clone(),
        Some(observed(&spec, FlinkJobState::Running)),
        true,
        true,
    );
    let not_answering = JobManagerObservation::Present {
        ready: 1,
        replicas: 1,
        problem: None,
        rest_ready: false,
    };
    let plan = decide(
        &deleting,
        &obs(
            not_answering,
            Some(JobObservation::Unreachable("timed out".into())),
        ),
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(plan.requeue, FAST);
    // So does a job whose state status never learned (deployed, not seen since).
    let mut unseen = observed(&spec, FlinkJobState::Running);
    unseen.job_status.as_mut().unwrap().state = Some(FlinkJobState::Reconciling);
    let plan = decide(
        &fd(spec.clone(), Some(unseen), true, true),
        &obs(ready_jm(), Some(JobObservation::Unreachable("timed out".into()))),
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    let plan = decide(
        &deleting,
        &obs(ready_jm(), job_found(FlinkJobState::Running, NOW - MIN)),
    );
    assert!(matches!(
        plan.actions[..],
        [Action::Job(JobAction::StopWithSavepoint { .. })]
    ));
    // Without a savepoint to take (a stateless job), the cluster goes as it is.
    let stateless = spec_with("stateless", &[]);
    let plan = decide(
        &fd(
            stateless.clone(),
            Some(observed(&stateless, FlinkJobState::Running)),
            true,
            true,
        ),
        &obs(ready_jm(), Some(JobObservation::Unreachable("timed out".into()))),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
}

/// A last-state job with high availability is deleted with its cluster, its latest
/// checkpoint recorded from the HA metadata once the JobManager exited. Metadata that holds
/// no checkpoint of the job while the JobManager does not answer may be that of a job that
/// FAILED unseen (Flink took its checkpoints out of it): the deletion waits for the
/// JobManager, which alone knows the latest, and then records it.
#[test]
fn a_deletion_waits_for_a_silent_jobmanager_whose_ha_metadata_holds_no_checkpoint() {
    let spec = spec_with("last-state", &[]);
    let deleting = fd(
        spec.clone(),
        Some(observed(&spec, FlinkJobState::Running)),
        true,
        true,
    );
    let silent = Some(JobObservation::Unreachable("timed out".into()));
    let with_ha = |observation: Observation, holds: bool| Observation {
        ha_checkpoint: Some(holds),
        ..holding_a_checkpoint(observation)
    };
    let plan = decide(&deleting, &with_ha(obs(ready_jm(), silent.clone()), false));
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(plan.requeue, FAST);
    // The metadata that points at a checkpoint keeps it for the deletion's record.
    let plan = decide(&deleting, &with_ha(obs(ready_jm(), silent), true));
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    // Answering, the JobManager names the failed job's latest checkpoint: recorded first.
    let plan = decide(
        &deleting,
        &with_ha(
            Observation {
                latest_checkpoint: checkpoint(MIN),
                ..obs(ready_jm(), job_found(FlinkJobState::Failed, NOW - 60 * MIN))
            },
            false,
        ),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    let written = plan.status_before.expect("written before the cluster goes");
    assert_eq!(
        written.job_status.unwrap().upgrade_savepoint_path.as_deref(),
        Some("file:/cp/chk-7")
    );
}

#[test]
fn created_suspended_deploys_nothing_until_running() {
    let spec = spec_with("savepoint", &[("job/state", json!("suspended"))]);
    let plan = decide(
        &fd(spec, None, true, false),
        &obs(JobManagerObservation::Missing, None),
    );
    assert!(plan.actions.is_empty());
    assert_eq!(
        plan.status.lifecycle_state,
        Some(ResourceLifecycleState::Suspended)
    );
    assert_eq!(phase_of(&plan), Phase::Suspended.as_str());
}

#[test]
fn a_change_reverted_while_the_job_stops_still_records_the_savepoint_and_restarts_from_it() {
    let old = spec_with("savepoint", &[]);
    let new = spec_with("savepoint", &[("job/parallelism", json!(4))]);
    let triggered = decide(
        &at(new, observed(&old, FlinkJobState::Running), 2),
        &obs(ready_jm(), job_found(FlinkJobState::Running, NOW - 60 * MIN)),
    )
    .status_before
    .unwrap();
    // The user put the old spec back; the stop already reached Flink and completes.
    let plan = decide(
        &at(old.clone(), triggered, 3),
        &Observation {
            savepoint: Some(SavepointPoll::Completed("file:/sp/stopped".into())),
            ..obs(ready_jm(), job_found(FlinkJobState::Finished, NOW - 60 * MIN))
        },
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    let committed = plan.status_before.unwrap();
    assert_eq!(
        committed
            .job_status
            .as_ref()
            .unwrap()
            .upgrade_savepoint_path
            .as_deref(),
        Some("file:/sp/stopped")
    );
    assert_eq!(recorded_spec(&committed).job.unwrap().parallelism, None);
}

#[test]
fn a_session_cluster_is_kept_while_session_jobs_use_it() {
    let spec = json!({"image": "flink:2.3", "flinkVersion": "v2_3"});
    let deleting = fd(spec, Some(deployed()), true, true);
    let with_jobs = Observation {
        session_jobs: vec!["orders".into()],
        ..obs(ready_jm(), None)
    };
    let plan = decide(&deleting, &with_jobs);
    assert!(plan.actions.is_empty());
    assert!(
        plan.events
            .iter()
            .any(|e| e.reason == Reason::CleanupFailed && e.note.contains("[orders]"))
    );
    // Once said, not repeated.
    let again = decide(
        &fd(
            json!({"image": "flink:2.3", "flinkVersion": "v2_3"}),
            Some(plan.status),
            true,
            true,
        ),
        &with_jobs,
    );
    assert!(again.events.is_empty());
    // Not blocking when configured so, or when no job is left.
    let plan = decide(
        &deleting,
        &with_policy(
            with_jobs.clone(),
            Policy {
                block_on_session_jobs: false,
                ..Policy::status_only()
            },
        ),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    let plan = decide(&deleting, &obs(ready_jm(), None));
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
}

/// A session cluster that still runs a job no FlinkSessionJob manages (submitted by hand, or
/// left behind) is kept, the job named, while
/// `kubernetes.operator.session.deletion.block-on-unmanaged-jobs` is on (the default).
#[test]
fn a_session_cluster_is_kept_while_it_runs_unmanaged_jobs() {
    let spec = json!({"image": "flink:2.3", "flinkVersion": "v2_3"});
    let deleting = fd(spec, Some(deployed()), true, true);
    let with_unmanaged = Observation {
        unmanaged_jobs: vec!["adhoc (a1b2)".into()],
        ..obs(ready_jm(), None)
    };
    let plan = decide(&deleting, &with_unmanaged);
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert!(
        plan.events.iter().any(|e| e.reason == Reason::CleanupFailed
            && e.note.contains("adhoc (a1b2)")
            && e.note.contains("block-on-unmanaged-jobs")),
        "{:?}",
        plan.events
    );
    let plan = decide(
        &deleting,
        &with_policy(
            with_unmanaged,
            Policy {
                block_on_unmanaged_jobs: false,
                ..Policy::status_only()
            },
        ),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
}

#[test]
fn steady_resources_are_looked_at_as_often_as_something_can_change() {
    use JobManagerDeploymentStatus as Jm;
    use ResourceLifecycleState as L;
    let cases = [
        (L::Stable, Jm::Ready, None, false, SLOW),
        (L::Stable, Jm::Ready, None, true, FAST),
        // A job starting, deployed 8 s ago: polled every quarter of that (see `starting`).
        (
            L::Deployed,
            Jm::Ready,
            Some(FlinkJobState::Initializing),
            false,
            Next::Awaiting { for_ms: 8_000 },
        ),
        (L::Deployed, Jm::Deploying, None, false, WAIT),
        (L::Deployed, Jm::DeployedNotReady, None, false, WAIT),
        // Nothing changes by itself: a job that ended, a broken or missing cluster (whose
        // Deployment's watch wakes the resource when it changes).
        (L::Failed, Jm::Ready, Some(FlinkJobState::Failed), false, SLOW),
        (L::Deployed, Jm::Ready, Some(FlinkJobState::Finished), false, SLOW),
        (L::Failed, Jm::Error, None, false, SLOW),
        (L::Deployed, Jm::Missing, None, false, SLOW),
        (L::Failed, Jm::Ready, Some(FlinkJobState::Failed), true, FAST),
    ];
    for (lifecycle, jm, job_state, pending, expected) in cases {
        let status = FlinkDeploymentStatus {
            reconciliation_status: Some(ReconciliationStatus {
                reconciliation_timestamp: Some(NOW - 8_000),
                ..Default::default()
            }),
            lifecycle_state: Some(lifecycle),
            job_manager_deployment_status: Some(jm),
            job_status: job_state.clone().map(|s| JobStatus {
                state: Some(s),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            status::steady_requeue(&status, pending, NOW),
            expected,
            "{lifecycle:?} {jm:?} {job_state:?} pending={pending}"
        );
    }
}

fn rollback_policy() -> Policy {
    Policy {
        rollback_enabled: true,
        readiness_timeout_ms: 5 * MIN,
        ..Policy::status_only()
    }
}

fn crashing_jm() -> JobManagerObservation {
    JobManagerObservation::Present {
        ready: 0,
        replicas: 1,
        problem: Some("CrashLoopBackOff".into()),
        rest_ready: false,
    }
}

/// `old` ran stable; `new` (generation 2) was then deployed at NOW, in `old`'s upgrade mode.
fn upgraded(old: &serde_json::Value, new: &serde_json::Value) -> FlinkDeploymentStatus {
    let committed = decide(
        &at(new.clone(), observed(old, FlinkJobState::Running), 2),
        &holding_a_checkpoint(obs(ready_jm(), running_job())),
    );
    let committed = committed.status_before.unwrap_or(committed.status);
    assert_eq!(
        reconciliation(&committed).state,
        Some(ReconciliationState::Upgrading)
    );
    let deployed = decide(
        &at(new.clone(), committed, 2),
        &obs(JobManagerObservation::Missing, None),
    )
    .status;
    assert_eq!(
        reconciliation(&deployed).state,
        Some(ReconciliationState::Deployed)
    );
    deployed
}

/// `observation`, `ms` later, with a checkpoint in the HA metadata.
fn later(observation: Observation, ms: i64) -> Observation {
    Observation {
        now_ms: NOW + ms,
        ha_checkpoint: Some(true),
        ..observation
    }
}

#[test]
fn a_deployed_spec_is_rolled_back_only_when_enabled_after_the_readiness_timeout() {
    let old = spec_with("last-state", &[]);
    let new = spec_with("last-state", &[("job/parallelism", json!(4))]);
    let status = upgraded(&old, &new);
    let newer_flink = spec_with("last-state", &[("flinkVersion", json!("v2_2"))]);
    let flink_changed = upgraded(&old, &newer_flink);
    // (status, spec, observation, policy, rolls back)
    let cases: Vec<(
        &str,
        FlinkDeploymentStatus,
        serde_json::Value,
        Observation,
        Policy,
        bool,
    )> = vec![
        (
            "crash loop past the timeout",
            status.clone(),
            new.clone(),
            later(obs(crashing_jm(), None), 6 * MIN),
            rollback_policy(),
            true,
        ),
        (
            "failed job past the timeout",
            status.clone(),
            new.clone(),
            later(obs(ready_jm(), job_found(FlinkJobState::Failed, NOW)), 6 * MIN),
            rollback_policy(),
            true,
        ),
        (
            "restarting job past the timeout",
            status.clone(),
            new.clone(),
            later(
                obs(ready_jm(), job_found(FlinkJobState::Restarting, NOW)),
                6 * MIN,
            ),
            rollback_policy(),
            true,
        ),
        (
            "not enabled",
            status.clone(),
            new.clone(),
            later(obs(crashing_jm(), None), 6 * MIN),
            Policy::status_only(),
            false,
        ),
        (
            "within the timeout",
            status.clone(),
            new.clone(),
            later(obs(crashing_jm(), None), 4 * MIN),
            rollback_policy(),
            false,
        ),
        (
            "running",
            status.clone(),
            new.clone(),
            later(obs(ready_jm(), running_job()), 6 * MIN),
            rollback_policy(),
            false,
        ),
        (
            "finished",
            status.clone(),
            new.clone(),
            later(obs(ready_jm(), job_found(FlinkJobState::Finished, NOW)), 6 * MIN),
            rollback_policy(),
            false,
        ),
        (
            "another Flink version",
            flink_changed,
            newer_flink,
            later(obs(crashing_jm(), None), 6 * MIN),
            rollback_policy(),
            false,
        ),
        (
            "never stable",
            deployed(),
            app_spec(),
            later(obs(crashing_jm(), None), 6 * MIN),
            rollback_policy(),
            false,
        ),
        (
            "no checkpoint in the HA metadata",
            status.clone(),
            new.clone(),
            Observation {
                ha_checkpoint: Some(false),
                ..later(obs(crashing_jm(), None), 6 * MIN)
            },
            rollback_policy(),
            false,
        ),
    ];
    for (case, status, spec, observation, policy, rolls_back) in cases {
        let plan = decide(&at(spec, status, 2), &with_policy(observation, policy));
        let state = reconciliation(&plan.status).state;
        if rolls_back {
            assert_eq!(state, Some(ReconciliationState::RollingBack), "{case}");
            assert_eq!(
                plan.status.lifecycle_state,
                Some(ResourceLifecycleState::RollingBack),
                "{case}"
            );
            assert!(
                plan.actions.is_empty(),
                "{case}: recorded before anything is deleted"
            );
            let event = plan.events.iter().find(|e| e.reason == Reason::Rollback).unwrap();
            assert!(
                event.warning && event.note.contains("did not become stable within"),
                "{case}: {}",
                event.note
            );
        } else {
            assert_ne!(state, Some(ReconciliationState::RollingBack), "{case}");
            assert!(
                !plan.events.iter().any(|e| e.reason == Reason::Rollback),
                "{case}"
            );
            assert!(plan.actions.is_empty(), "{case}: {:?}", plan.actions);
        }
        if case == "no checkpoint in the HA metadata" {
            let error = plan.status.error.clone().unwrap();
            assert!(
                error.starts_with("not rolled back: the high-availability metadata holds no checkpoint"),
                "{error}"
            );
            assert!(
                plan.events
                    .iter()
                    .any(|e| e.reason == Reason::RollbackFailed && e.warning)
            );
            // Said once: the stored error is not repeated as an Event.
            let again = decide(
                &at(new.clone(), plan.status.clone(), 2),
                &with_policy(
                    Observation {
                        ha_checkpoint: Some(false),
                        ..later(obs(crashing_jm(), None), 7 * MIN)
                    },
                    rollback_policy(),
                ),
            );
            assert!(!again.events.iter().any(|e| e.reason == Reason::RollbackFailed));
        }
    }
}

#[test]
fn a_rollback_deploys_the_last_stable_spec_from_the_ha_metadata_and_survives_a_crash_at_each_step() {
    let old = spec_with("last-state", &[]);
    let new = spec_with("last-state", &[("job/parallelism", json!(4))]);
    let deployed_new = upgraded(&old, &new);
    let job_id = deployed_new.job_status.clone().unwrap().job_id;
    let policy = rollback_policy();
    let step = |status: FlinkDeploymentStatus, jm: JobManagerObservation, job: Option<JobObservation>| {
        decide(
            &at(new.clone(), status, 2),
            &with_policy(later(obs(jm, job), 6 * MIN), policy.clone()),
        )
    };
    let started = step(deployed_new, crashing_jm(), None);
    let rolling_back = started.status;
    // 1. The failed cluster goes, its HA metadata stays; again after a crash.
    for _ in 0..2 {
        let plan = step(rolling_back.clone(), crashing_jm(), None);
        assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: true }]);
        assert_eq!(
            reconciliation(&plan.status).state,
            Some(ReconciliationState::RollingBack)
        );
    }
    // 2. The stable spec is deployed in last-state mode under the same job id.
    let plan = step(rolling_back.clone(), JobManagerObservation::Missing, None);
    let mut stable: FlinkDeploymentSpec = serde_json::from_value(old.clone()).unwrap();
    stable.job.as_mut().unwrap().upgrade_mode = Some(UpgradeMode::LastState);
    assert_eq!(
        plan.actions,
        [Action::Deploy {
            restore_path: None,
            job_id: job_id.clone(),
            last_state: true,
            spec: Some(Box::new(stable)),
            deployed_at_ms: NOW + 6 * MIN,
        }]
    );
    assert_eq!(
        reconciliation(plan.status_before.as_ref().unwrap()).state,
        Some(ReconciliationState::RollingBack),
        "a crash before the status says it was deployed deploys it again"
    );
    let rolled_back = plan.status;
    assert_eq!(
        reconciliation(&rolled_back).state,
        Some(ReconciliationState::RolledBack)
    );
    assert_eq!(
        recorded_spec(&rolled_back),
        serde_json::from_value::<FlinkDeploymentSpec>(new.clone()).unwrap()
    );
    // A crash (or a stale read) right after the deploy: the rolled-back cluster is taken as
    // deployed, while the failed one would still be deleted.
    let before = plan.status_before.unwrap();
    let taken = decide(
        &at(new.clone(), before.clone(), 2),
        &with_policy(
            Observation {
                deployed_generation: Some(2),
                rolled_back_generation: Some(2),
                ..later(obs(ready_jm(), None), 6 * MIN)
            },
            policy.clone(),
        ),
    );
    assert!(taken.actions.is_empty(), "{:?}", taken.actions);
    assert_eq!(
        reconciliation(&taken.status).state,
        Some(ReconciliationState::RolledBack)
    );
    let failed_cluster = decide(
        &at(new.clone(), before, 2),
        &with_policy(
            Observation {
                deployed_generation: Some(2),
                ..later(obs(crashing_jm(), None), 6 * MIN)
            },
            policy.clone(),
        ),
    );
    assert_eq!(failed_cluster.actions, [Action::DeleteCluster { keep_ha: true }]);
    // 3. It runs: ready and degraded, the failed spec not deployed again, no second rollback.
    let plan = step(rolled_back.clone(), ready_jm(), running_job());
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(
        plan.status.lifecycle_state,
        Some(ResourceLifecycleState::RolledBack)
    );
    assert_eq!(phase_of(&plan), Phase::RolledBack.as_str());
    assert_eq!(condition(&plan.status, "Ready").status.as_deref(), Some("True"));
    assert_eq!(
        condition(&plan.status, "Degraded").status.as_deref(),
        Some("True")
    );
    assert_eq!(
        reconciliation(&plan.status).last_stable_spec,
        reconciliation(&rolled_back).last_stable_spec
    );
    let plan = step(rolled_back.clone(), crashing_jm(), None);
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    // 4. Changed back to the stable spec: recorded, nothing redeployed.
    let plan = decide(
        &at(old.clone(), rolled_back.clone(), 3),
        &with_policy(obs(ready_jm(), running_job()), policy.clone()),
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(
        reconciliation(&plan.status).state,
        Some(ReconciliationState::Deployed)
    );
    assert_eq!(
        recorded_spec(&plan.status),
        serde_json::from_value::<FlinkDeploymentSpec>(old.clone()).unwrap()
    );
    // 5. A new spec is applied as any change, from what runs.
    let third = spec_with("last-state", &[("job/parallelism", json!(3))]);
    let plan = decide(
        &at(third.clone(), rolled_back, 3),
        &holding_a_checkpoint(with_policy(obs(ready_jm(), running_job()), policy)),
    );
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: true }]);
    let committed = plan.status_before.unwrap();
    assert_eq!(
        reconciliation(&committed).state,
        Some(ReconciliationState::Upgrading)
    );
    assert_eq!(
        recorded_spec(&committed),
        serde_json::from_value::<FlinkDeploymentSpec>(third).unwrap()
    );
}

#[test]
fn a_job_that_never_ran_rolls_back_to_the_state_it_was_to_start_from() {
    let old = spec_with("savepoint", &[]);
    let new = spec_with("savepoint", &[("job/parallelism", json!(4))]);
    let mut status = upgraded(
        &spec_with("stateless", &[]),
        &spec_with("stateless", &[("job/parallelism", json!(4))]),
    );
    // As a savepoint upgrade leaves it: a new job id, started from the upgrade savepoint.
    let rs = status.reconciliation_status.as_mut().unwrap();
    rs.last_reconciled_spec = ReconciledSpec::new(
        serde_json::from_value::<FlinkDeploymentSpec>(new.clone()).unwrap(),
        false,
    )
    .encode()
    .ok();
    rs.last_stable_spec =
        ReconciledSpec::new(serde_json::from_value::<FlinkDeploymentSpec>(old).unwrap(), false)
            .encode()
            .ok();
    let job = status.job_status.as_mut().unwrap();
    job.upgrade_savepoint_path = Some("file:/sp/upgrade".into());
    job.job_id = Some("new-job".into());
    let policy = rollback_policy();
    let step = |status: FlinkDeploymentStatus, jm: JobManagerObservation| {
        decide(
            &at(new.clone(), status, 2),
            &with_policy(later(obs(jm, None), 6 * MIN), policy.clone()),
        )
    };
    let rolling_back = step(status, crashing_jm()).status;
    assert_eq!(
        reconciliation(&rolling_back).state,
        Some(ReconciliationState::RollingBack)
    );
    assert_eq!(
        rolling_back
            .job_status
            .as_ref()
            .unwrap()
            .upgrade_savepoint_path
            .as_deref(),
        Some("file:/sp/upgrade")
    );
    let gone = step(rolling_back.clone(), crashing_jm());
    assert_eq!(gone.actions, [Action::DeleteCluster { keep_ha: false }]);
    let plan = step(rolling_back, JobManagerObservation::Missing);
    match plan.actions.as_slice() {
        [
            Action::Deploy {
                restore_path,
                job_id,
                last_state: false,
                spec: Some(_),
                ..
            },
        ] => {
            assert_eq!(restore_path.as_deref(), Some("file:/sp/upgrade"));
            assert_eq!(job_id.as_deref(), Some("fresh"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_jobmanager_of_an_ended_job_is_shut_down_after_its_ttl_keeping_its_ha_metadata() {
    let spec = spec_with("savepoint", &[]);
    let ttl = 10 * MIN;
    let policy = Policy {
        shutdown_ttl_ms: ttl,
        high_availability: true,
        ..Policy::status_only()
    };
    for (state, ended_phase) in [
        (FlinkJobState::Finished, Phase::Succeeded),
        (FlinkJobState::Failed, Phase::Failed),
        (FlinkJobState::Canceled, Phase::Cancelled),
    ] {
        // Ended at NOW: its state's updateTime.
        let ended = observed(&spec, state.clone());
        let look = |now_ms: i64, job_manager: JobManagerObservation| {
            let job = (job_manager != JobManagerObservation::Missing)
                .then(|| JobObservation::found(state.clone(), Some(NOW - 60 * MIN)));
            with_policy(
                Observation {
                    now_ms,
                    ha_checkpoint: Some(true),
                    ..obs(job_manager, job)
                },
                policy.clone(),
            )
        };
        let within = decide(
            &fd(spec.clone(), Some(ended.clone()), true, false),
            &look(NOW + ttl - 1_000, ready_jm()),
        );
        assert!(within.actions.is_empty(), "{state}: {:?}", within.actions);
        let due = decide(
            &fd(spec.clone(), Some(ended.clone()), true, false),
            &look(NOW + ttl, ready_jm()),
        );
        assert_eq!(due.actions, [Action::DeleteCluster { keep_ha: true }], "{state}");
        let said: Vec<_> = due.events.iter().map(|e| e.reason).collect();
        assert_eq!(said, [Reason::JobManagerShutDown], "{state}");
        // Gone: the job stays as it ended, no error of its own, nothing recovered.
        let gone = decide(
            &fd(spec.clone(), Some(due.status), true, false),
            &look(NOW + ttl + 5_000, JobManagerObservation::Missing),
        );
        assert!(gone.actions.is_empty(), "{state}: {:?}", gone.actions);
        assert!(gone.events.is_empty(), "{state}: {:?}", gone.events);
        assert_eq!(gone.status.error, ended.error, "{state}");
        assert_eq!(
            gone.status.job_status.as_ref().unwrap().state,
            Some(state.clone())
        );
        assert_eq!(
            gone.status.job_manager_deployment_status,
            Some(JobManagerDeploymentStatus::Missing)
        );
        assert_eq!(phase_of(&gone), ended_phase.as_str(), "{state}");
    }
    // A running job's JobManager is never shut down, however long ago its state changed.
    let running = observed(&spec, FlinkJobState::Running);
    let plan = decide(
        &fd(spec.clone(), Some(running), true, false),
        &with_policy(
            Observation {
                now_ms: NOW + 100 * ttl,
                ..obs(ready_jm(), job_found(FlinkJobState::Running, NOW - 60 * MIN))
            },
            policy,
        ),
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
}

#[test]
fn a_missing_jobmanager_deployment_is_recovered_from_the_ha_metadata_or_reported() {
    let ha = Policy {
        high_availability: true,
        ..Policy::status_only()
    };
    let missing = |spec: &serde_json::Value,
                   status: FlinkDeploymentStatus,
                   policy: Policy,
                   ha_checkpoint: Option<bool>| {
        decide(
            &fd(spec.clone(), Some(status), true, false),
            &with_policy(
                Observation {
                    ha_checkpoint,
                    ..obs(JobManagerObservation::Missing, None)
                },
                policy,
            ),
        )
    };
    let last_state = spec_with("last-state", &[]);
    let savepoint = spec_with("savepoint", &[]);
    let stateless = spec_with("stateless", &[]);
    // Recovered: (case, spec, policy, HA checkpoint, HA kept)
    for (case, spec, policy, ha_checkpoint, keep_ha) in [
        (
            "last-state with a checkpoint in HA",
            &last_state,
            ha.clone(),
            Some(true),
            true,
        ),
        (
            "savepoint mode with a checkpoint in HA",
            &savepoint,
            ha.clone(),
            Some(true),
            true,
        ),
        ("stateless", &stateless, Policy::status_only(), None, false),
    ] {
        let plan = missing(
            spec,
            observed(spec, FlinkJobState::Running),
            policy,
            ha_checkpoint,
        );
        assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha }], "{case}");
        let recorded = plan.status_before.expect(case);
        assert_eq!(
            reconciliation(&recorded).state,
            Some(ReconciliationState::Upgrading),
            "{case}"
        );
        assert!(
            plan.events.iter().any(|e| e.reason == Reason::RecoverDeployment),
            "{case}"
        );
        // Then deployed again: under the same job id from the HA metadata.
        let job_id = recorded.job_status.clone().unwrap().job_id;
        let deploy = decide(
            &fd(spec.clone(), Some(recorded), true, false),
            &obs(JobManagerObservation::Missing, None),
        );
        match deploy.actions.as_slice() {
            [
                Action::Deploy {
                    last_state,
                    job_id: id,
                    restore_path: None,
                    spec: None,
                    ..
                },
            ] => {
                assert_eq!(*last_state, keep_ha, "{case}");
                if keep_ha {
                    assert_eq!(id, &job_id, "{case}");
                }
            }
            other => panic!("{case}: {other:?}"),
        }
    }
    // A session cluster is deployed again.
    let session = json!({"image": "flink:2.3", "flinkVersion": "v2_3"});
    let running_session = decide(
        &fd(session.clone(), Some(deployed_session(&session)), true, false),
        &obs(ready_jm(), None),
    )
    .status;
    let plan = missing(&session, running_session, Policy::status_only(), None);
    assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha: false }]);
    // Not recovered: (case, spec, status, policy, HA checkpoint, reported)
    for (case, spec, status, policy, ha_checkpoint, reported) in [
        (
            "no checkpoint in HA",
            &last_state,
            observed(&last_state, FlinkJobState::Running),
            ha.clone(),
            Some(false),
            true,
        ),
        (
            "no high availability",
            &savepoint,
            observed(&savepoint, FlinkJobState::Running),
            Policy::status_only(),
            None,
            true,
        ),
        (
            "recovery disabled",
            &stateless,
            observed(&stateless, FlinkJobState::Running),
            Policy {
                jm_recovery: false,
                ..Policy::status_only()
            },
            None,
            false,
        ),
        (
            "not seen since it was deployed",
            &stateless,
            deployed(),
            Policy::status_only(),
            None,
            false,
        ),
    ] {
        let plan = missing(spec, status, policy.clone(), ha_checkpoint);
        assert!(plan.actions.is_empty(), "{case}: {:?}", plan.actions);
        assert_eq!(phase_of(&plan), Phase::DeployFailed.as_str(), "{case}");
        let refused = plan
            .events
            .iter()
            .any(|e| e.reason == Reason::RecoverDeploymentFailed);
        assert_eq!(refused, reported, "{case}");
        if reported {
            let error = plan.status.error.clone().unwrap();
            assert!(error.contains("restore it by hand"), "{case}: {error}");
            // Said once.
            let again = missing(spec, plan.status, policy, ha_checkpoint);
            assert!(
                !again
                    .events
                    .iter()
                    .any(|e| e.reason == Reason::RecoverDeploymentFailed),
                "{case}"
            );
        }
    }
}

/// A session cluster's status right after its first deployment was acted on.
fn deployed_session(spec: &serde_json::Value) -> FlinkDeploymentStatus {
    decide(
        &fd(spec.clone(), None, true, false),
        &obs(JobManagerObservation::Missing, None),
    )
    .status
}

#[test]
fn a_steady_job_keeps_its_status_as_it_is() {
    let steady = running();
    let plan = decide(
        &fd(app_spec(), Some(steady.clone()), true, false),
        &Observation {
            now_ms: NOW + 60_000,
            ..obs(ready_jm(), running_job())
        },
    );
    assert_eq!(plan.status, steady);
    assert!(plan.actions.is_empty() && plan.events.is_empty());
    assert_eq!(plan.requeue, Next::Steady);
}

#[test]
fn a_failed_job_says_why_in_status_the_conditions_and_an_event() {
    let cause = "java.lang.IllegalStateException: key 1 reached --fail-at 5 (a deliberate failure)";
    let failed_job = |failure: Option<&str>| {
        Some(JobObservation::Found {
            state: FlinkJobState::Failed,
            start_time: Some(NOW - 1000),
            all_tasks_running: false,
            failure: failure.map(str::to_owned),
            checkpoint_id: None,
        })
    };
    let plan = decide(
        &fd(app_spec(), Some(running()), true, false),
        &obs(ready_jm(), failed_job(Some(cause))),
    );
    let error = plan.status.error.clone().unwrap();
    assert!(error.contains(cause), "{error}");
    assert_eq!(
        condition(&plan.status, "Degraded").message.as_deref(),
        Some(error.as_str())
    );
    assert_eq!(
        condition(&plan.status, "Degraded").reason.as_deref(),
        Some(Phase::Failed.as_str())
    );
    assert!(
        plan.events
            .iter()
            .any(|e| e.reason == Reason::JobFailed && e.warning && e.note.contains(cause))
    );
    // Looked at again (the cause is not read twice): the reason stays, no new Event.
    let failed = plan.status;
    let plan = decide(
        &fd(app_spec(), Some(failed.clone()), true, false),
        &obs(ready_jm(), failed_job(None)),
    );
    assert_eq!(plan.status, failed);
    assert!(plan.events.is_empty(), "{:?}", plan.events);
}

#[test]
fn a_jobmanager_that_does_not_answer_once_is_looked_at_again_and_reported_the_second_time() {
    let steady = running();
    let unanswered = JobManagerObservation::Present {
        ready: 1,
        replicas: 1,
        problem: None,
        rest_ready: false,
    };
    let silent = Some(JobObservation::Unreachable("timed out after 10 s".into()));
    let plan = decide(
        &fd(app_spec(), Some(steady.clone()), true, false),
        &obs(unanswered.clone(), silent.clone()),
    );
    assert_eq!(plan.status, steady);
    assert_eq!(plan.requeue, Next::Progress);
    let plan = decide(
        &fd(app_spec(), Some(steady), true, false),
        &Observation {
            unanswered_before: true,
            ..obs(unanswered, silent)
        },
    );
    assert_eq!(
        plan.status.job_manager_deployment_status,
        Some(JobManagerDeploymentStatus::DeployedNotReady)
    );
    assert_eq!(
        condition(&plan.status, "Ready").reason.as_deref(),
        Some(Phase::Deploying.as_str())
    );
}

mod health_check {
    use super::*;
    use crate::{
        deployment::health::{CLUSTER_INFO_KEY, HealthHistory, HealthSample},
        policy::HealthSettings,
    };

    const SETTINGS: HealthSettings = HealthSettings {
        restarts_window_ms: 2 * MIN,
        restarts_threshold: 2,
        checkpoint_window_ms: None,
    };

    fn policy(ha: bool, health: Option<HealthSettings>) -> Policy {
        Policy {
            high_availability: ha,
            health,
            ..Policy::status_only()
        }
    }

    /// What a look sees of the job.
    struct Seen {
        state: FlinkJobState,
        /// The restarts the job's metrics say.
        restarts: Option<i64>,
        ha_checkpoint: Option<bool>,
        now_ms: i64,
    }

    /// A look at a job of `spec` that sees `seen`.
    fn look(spec: &serde_json::Value, status: FlinkDeploymentStatus, policy: &Policy, seen: Seen) -> Plan {
        let Seen {
            state,
            restarts,
            ha_checkpoint,
            now_ms,
        } = seen;
        decide(
            &fd(spec.clone(), Some(status), true, false),
            &with_policy(
                Observation {
                    health: restarts.map(|num_restarts| HealthSample {
                        num_restarts,
                        num_completed_checkpoints: 0,
                    }),
                    ha_checkpoint,
                    now_ms,
                    ..obs(ready_jm(), job_found(state, NOW - 60 * MIN))
                },
                policy.clone(),
            ),
        )
    }

    fn history(status: &FlinkDeploymentStatus) -> Option<HealthHistory> {
        HealthHistory::read(status.cluster_info.as_ref())
    }

    /// The status after a first look (the baseline: 1 restart) and a second one a minute
    /// later that saw `restarts`, in `state`.
    fn judged(
        spec: &serde_json::Value,
        policy: &Policy,
        state: FlinkJobState,
        restarts: i64,
        ha_checkpoint: Option<bool>,
    ) -> Plan {
        let first = look(
            spec,
            observed(spec, FlinkJobState::Running),
            policy,
            Seen {
                state: FlinkJobState::Running,
                restarts: Some(1),
                ha_checkpoint,
                now_ms: NOW,
            },
        );
        assert!(first.actions.is_empty(), "{:?}", first.actions);
        assert!(history(&first.status).is_some(), "the baseline is kept");
        look(
            spec,
            first.status,
            policy,
            Seen {
                state,
                restarts: Some(restarts),
                ha_checkpoint,
                now_ms: NOW + MIN,
            },
        )
    }

    #[test]
    fn an_unhealthy_job_is_restarted_as_its_upgrade_mode_allows() {
        // (case, spec, policy, HA checkpoint, HA kept)
        for (case, mode, ha, ha_checkpoint, keep_ha) in [
            ("stateless", "stateless", false, None, false),
            (
                "last-state with a checkpoint in HA",
                "last-state",
                true,
                Some(true),
                true,
            ),
            (
                "savepoint with a checkpoint in HA",
                "savepoint",
                true,
                Some(true),
                true,
            ),
        ] {
            let spec = spec_with(mode, &[]);
            let policy = policy(ha, Some(SETTINGS));
            // 1 to 4: 3 restarts within the window, over the threshold of 2.
            let plan = judged(&spec, &policy, FlinkJobState::Restarting, 4, ha_checkpoint);
            assert_eq!(plan.actions, [Action::DeleteCluster { keep_ha }], "{case}");
            let event = plan
                .events
                .iter()
                .find(|e| e.reason == Reason::RestartUnhealthyJob)
                .unwrap_or_else(|| panic!("{case}: {:?}", plan.events));
            assert!(event.warning, "{case}");
            assert!(
                event.note.contains("restarted 3 times within 2m"),
                "{case}: {}",
                event.note
            );
            // Recorded before the cluster goes, without the history of the job that ends.
            let recorded = plan.status_before.clone().expect(case);
            assert_eq!(
                reconciliation(&recorded).state,
                Some(ReconciliationState::Upgrading),
                "{case}"
            );
            assert_eq!(history(&recorded), None, "{case}");
            // Then deployed again: from the HA metadata under the same job id, or fresh.
            let job_id = recorded.job_status.clone().unwrap().job_id;
            let deploy = decide(
                &fd(spec.clone(), Some(recorded), true, false),
                &with_policy(obs(JobManagerObservation::Missing, None), policy.clone()),
            );
            match deploy.actions.as_slice() {
                [
                    Action::Deploy {
                        last_state,
                        job_id: id,
                        restore_path: None,
                        spec: None,
                        ..
                    },
                ] => {
                    assert_eq!(*last_state, keep_ha, "{case}");
                    if keep_ha {
                        assert_eq!(id, &job_id, "{case}");
                    } else {
                        assert_eq!(id.as_deref(), Some("fresh"), "{case}");
                    }
                }
                other => panic!("{case}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_unhealthy_job_that_would_lose_its_state_is_not_restarted_and_status_says_why() {
        for (case, mode, ha, ha_checkpoint) in [
            ("last-state without high availability", "last-state", false, None),
            (
                "savepoint with no checkpoint in HA",
                "savepoint",
                true,
                Some(false),
            ),
        ] {
            let spec = spec_with(mode, &[]);
            let policy = policy(ha, Some(SETTINGS));
            let plan = judged(&spec, &policy, FlinkJobState::Running, 9, ha_checkpoint);
            assert!(plan.actions.is_empty(), "{case}: {:?}", plan.actions);
            assert!(
                plan.events
                    .iter()
                    .any(|e| e.warning && e.reason == Reason::RestartUnhealthyJobFailed),
                "{case}: {:?}",
                plan.events
            );
            let error = plan.status.error.clone().unwrap();
            assert!(error.contains("is not restarted"), "{case}: {error}");
            // Said once, while more restarts come; the verdict stays.
            let again = look(
                &spec,
                plan.status,
                &policy,
                Seen {
                    state: FlinkJobState::Running,
                    restarts: Some(12),
                    ha_checkpoint,
                    now_ms: NOW + MIN + 1,
                },
            );
            assert!(again.events.is_empty(), "{case}: {:?}", again.events);
            let still = again.status.error.clone().unwrap();
            assert!(still.contains("restarted 11 times"), "{case}: {still}");
            assert_ne!(still, error, "{case}");
        }
    }

    #[test]
    fn a_healthy_ended_or_unchecked_job_is_left_alone() {
        let spec = spec_with("stateless", &[]);
        let on = policy(false, Some(SETTINGS));
        // At the threshold.
        let plan = judged(&spec, &on, FlinkJobState::Running, 3, None);
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
        assert!(history(&plan.status).unwrap().health_result.healthy);
        // Over it, but the job has failed: kubernetes.operator.job.restart.failed decides.
        let plan = judged(&spec, &on, FlinkJobState::Failed, 9, None);
        assert!(plan.actions.is_empty(), "{:?}", plan.actions);
        // The check off: nothing read, and a history left from when it was on goes.
        let plan = judged(&spec, &on, FlinkJobState::Running, 3, None);
        let off = look(
            &spec,
            plan.status,
            &policy(false, None),
            Seen {
                state: FlinkJobState::Running,
                restarts: Some(99),
                ha_checkpoint: None,
                now_ms: NOW + 2 * MIN,
            },
        );
        assert!(off.actions.is_empty(), "{:?}", off.actions);
        assert!(
            off.status
                .cluster_info
                .as_ref()
                .is_none_or(|m| !m.contains_key(CLUSTER_INFO_KEY))
        );
    }

    #[test]
    fn a_look_that_sees_nothing_new_writes_nothing() {
        let spec = spec_with("stateless", &[]);
        let on = policy(false, Some(SETTINGS));
        let first = look(
            &spec,
            observed(&spec, FlinkJobState::Running),
            &on,
            Seen {
                state: FlinkJobState::Running,
                restarts: Some(1),
                ha_checkpoint: None,
                now_ms: NOW,
            },
        );
        let again = look(
            &spec,
            first.status.clone(),
            &on,
            Seen {
                state: FlinkJobState::Running,
                restarts: Some(1),
                ha_checkpoint: None,
                now_ms: NOW + MIN,
            },
        );
        assert_eq!(again.status.cluster_info, first.status.cluster_info);
    }
}

#[test]
fn a_reactive_cluster_takes_new_replicas_in_place_and_a_vertex_override_by_an_upgrade() {
    let base = spec_with(
        "savepoint",
        &[
            ("mode", json!("standalone")),
            ("taskManager", json!({"replicas": 1})),
            ("job/parallelism", json!(2)),
            (
                "flinkConfiguration",
                json!({"scheduler-mode": "reactive", "taskmanager.numberOfTaskSlots": "2"}),
            ),
        ],
    );
    let stored = observed(&base, FlinkJobState::Running);
    let reactive = Policy {
        rescaler: Some(crate::policy::Rescaler::Reactive),
        task_slots: 2,
        ..Policy::status_only()
    };
    let look = with_policy(
        obs(ready_jm(), job_found(FlinkJobState::Running, NOW - 60 * MIN)),
        reactive,
    );
    let mut more_replicas = base.clone();
    more_replicas["taskManager"]["replicas"] = json!(2);
    let plan = decide(&at(more_replicas, stored.clone(), 2), &look);
    assert!(
        plan.actions.contains(&Action::ScaleTaskManagers { replicas: 2 }),
        "{:?}",
        plan.actions
    );

    // The autoscaler's override of a vertex: not something reactive mode can do in place.
    let autoscaled = Observation {
        autoscaler: crate::autoscaler::apply::Looked {
            overrides: std::collections::BTreeMap::from([("v".to_owned(), 4)]),
            ..Default::default()
        },
        ..look
    };
    let plan = decide(&at(base, stored, 1), &autoscaled);
    assert!(
        !plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::ScaleTaskManagers { .. })),
        "{:?}",
        plan.actions
    );
    assert!(
        plan.actions
            .iter()
            .any(|a| matches!(a, Action::Job(JobAction::StopWithSavepoint { .. }))),
        "an upgrade: {:?}",
        plan.actions
    );
}

/// ZooKeeper HA metadata costs a session to read: a steady job's looks need none of it, and
/// every look that may restore from it or remove it does.
mod ha_needs {
    use super::*;
    use crate::{deployment::health::HealthSample, policy::HealthSettings};

    fn policy() -> Policy {
        Policy {
            high_availability: true,
            jm_recovery: true,
            restart_failed: true,
            rollback_enabled: true,
            readiness_timeout_ms: 5 * MIN,
            health: Some(HealthSettings {
                restarts_window_ms: 2 * MIN,
                restarts_threshold: 2,
                checkpoint_window_ms: None,
            }),
            ..Policy::status_only()
        }
    }

    fn sample(restarts: i64) -> HealthSample {
        HealthSample {
            num_restarts: restarts,
            num_completed_checkpoints: 0,
        }
    }

    fn needs(
        fd: &FlinkDeployment,
        job_manager: &JobManagerObservation,
        health: Option<HealthSample>,
        now_ms: i64,
    ) -> bool {
        let policy = policy();
        needs_ha_metadata(
            fd,
            HaLooked {
                job_manager,
                health: health.as_ref(),
                policy: &policy,
                now_ms,
            },
        )
    }

    fn with_job(
        mut status: FlinkDeploymentStatus,
        edit: impl FnOnce(&mut JobStatus),
    ) -> FlinkDeploymentStatus {
        edit(status.job_status.get_or_insert_with(Default::default));
        status
    }

    #[test]
    fn a_steady_job_needs_no_ha_metadata_and_every_look_that_restores_or_removes_it_does() {
        let spec = spec_with("last-state", &[]);
        let steady = observed(&spec, FlinkJobState::Running);
        let missing = JobManagerObservation::Missing;
        let healthy = Some(sample(1));

        // Steady: running, healthy, stable, its JobManager there.
        let plain = fd(spec.clone(), Some(steady.clone()), true, false);
        assert!(!needs(&plain, &ready_jm(), healthy, NOW));
        // An ended job whose JobManager was shut down: nothing to recover.
        let finished = with_job(steady.clone(), |j| j.state = Some(FlinkJobState::Finished));
        assert!(!needs(
            &fd(spec.clone(), Some(finished), true, false),
            &missing,
            None,
            NOW
        ));
        // Suspended: nothing runs, nothing to recover.
        let suspended_spec = spec_with("last-state", &[("job/state", json!("suspended"))]);
        let mut suspended = with_job(steady.clone(), |j| j.state = Some(FlinkJobState::Suspended));
        suspended.job_manager_deployment_status = Some(JobManagerDeploymentStatus::Missing);
        let rs = suspended.reconciliation_status.as_mut().expect("recorded");
        let recorded: FlinkDeploymentSpec = serde_json::from_value(suspended_spec.clone()).expect("a spec");
        crate::lifecycle::spec::record(rs, recorded);
        let at_rest = fd(suspended_spec, Some(suspended), true, false);
        assert!(!needs(&at_rest, &missing, None, NOW));

        // Deleted, never recorded, or a start under way.
        assert!(needs(
            &fd(spec.clone(), Some(steady.clone()), true, true),
            &missing,
            None,
            NOW
        ));
        assert!(needs(&fd(spec.clone(), None, false, false), &missing, None, NOW));
        let mut starting = steady.clone();
        reconciliation_mut(&mut starting).state = Some(ReconciliationState::Upgrading);
        assert!(needs(
            &fd(spec.clone(), Some(starting), true, false),
            &ready_jm(),
            healthy,
            NOW
        ));
        // A change pending (the autoscaler's overrides are in the spec passed), or a stop in
        // flight whose end commits one.
        let parallelism = spec_with("last-state", &[("job/parallelism", json!(4))]);
        assert!(needs(
            &fd(parallelism, Some(steady.clone()), true, false),
            &ready_jm(),
            healthy,
            NOW
        ));
        let stopping = with_job(steady.clone(), |j| {
            let info = j.savepoint_info.get_or_insert_with(Default::default);
            info.trigger_id = Some("trigger".into());
            info.trigger_type = Some(flink_operator_api::common::SnapshotTriggerType::Upgrade);
        });
        assert!(needs(
            &fd(spec.clone(), Some(stopping), true, false),
            &ready_jm(),
            healthy,
            NOW
        ));
        // Its JobManager Deployment missing: recovered from the metadata.
        assert!(needs(&plain, &missing, None, NOW));
        // FAILED, to be restarted.
        let failed = with_job(steady.clone(), |j| j.state = Some(FlinkJobState::Failed));
        assert!(needs(
            &fd(spec.clone(), Some(failed), true, false),
            &ready_jm(),
            None,
            NOW
        ));
        // Judged unhealthy at this look: 1 restart, then 4 a minute later.
        let baseline = decide(
            &plain,
            &with_policy(
                Observation {
                    health: healthy,
                    ..obs(ready_jm(), running_job())
                },
                policy(),
            ),
        )
        .status;
        let judged = fd(spec.clone(), Some(baseline), true, false);
        assert!(!needs(&judged, &ready_jm(), Some(sample(1)), NOW + MIN));
        assert!(needs(&judged, &ready_jm(), Some(sample(4)), NOW + MIN));
        // A deployed spec not stable past the readiness timeout: rolled back from it.
        let new = spec_with("last-state", &[("job/parallelism", json!(4))]);
        let deployed = at(new.clone(), upgraded(&spec, &new), 2);
        assert!(!needs(&deployed, &crashing_jm(), None, NOW + MIN));
        assert!(needs(&deployed, &crashing_jm(), None, NOW + 6 * MIN));
    }

    fn reconciliation_mut(status: &mut FlinkDeploymentStatus) -> &mut ReconciliationStatus {
        status.reconciliation_status.as_mut().expect("recorded")
    }
}
