//! One table of lifecycle scenarios, run against both job kinds: a job of an application
//! FlinkDeployment and a FlinkSessionJob must go through each the same way (the same
//! requests to Flink, the same Events, the same status), whatever runs them. What only
//! one kind does (cluster objects, submissions) is tested with that kind.

use flink_operator_api::LifecycleStatus;
use flink_operator_api::{
    FlinkDeployment, FlinkJobState, FlinkSessionJob,
    common::{JobStatus, ReconciliationState, ResourceLifecycleState, SnapshotTriggerType, UpgradeMode},
    keys,
};
use serde_json::{Value, json};

use crate::flink::poll::{LateSavepoint, SavepointPoll};

use super::{
    facts::JobAction,
    snapshot_resources::{self, JobSnapshot, NewSnapshot, SnapshotState},
};
use flink_operator_api::SnapshotType;
use flink_operator_api::options::schedule::Schedule;

use crate::flink::job::JobObservation;
use crate::{
    deployment::decide as fd,
    events::{EventNote, Reason},
    plan::Next,
    policy::Policy,
    session_job::decide as sj,
};

use crate::fixtures::NOW;
const JOB_ID: &str = "job-1";
/// The id a job started during a scenario is given.
const NEW_JOB_ID: &str = "job-2";
const CHECKPOINT: &str = "file:/checkpoints/chk-7";
const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;

/// What a scenario observes of the world at one look.
#[derive(Clone, Default)]
struct Look {
    /// Flink's state of the job (None: the JobManager did not answer).
    state: Option<FlinkJobState>,
    /// When the job started, ms before now.
    started_ago: i64,
    savepoint: Option<SavepointPoll>,
    /// The savepoint of a stop the JobManager forgot, looked for elsewhere.
    late_savepoint: Option<LateSavepoint>,
    checkpoint: Option<SavepointPoll>,
    policy: Policy,
    trigger_id: &'static str,
    /// The resource's `metadata.generation`: 1 as started, 2 once the user changed it.
    generation: i64,
    /// Validation problems of the spec.
    violations: Vec<String>,
    /// The job's FlinkStateSnapshot resources.
    snapshots: Vec<JobSnapshot>,
    /// The job's kept revisions (None: its history is not followed).
    revisions: Option<Vec<super::revisions::Revision>>,
    /// Who else in the namespace may still need the savepoints of the job's history.
    history_needed_by: super::protected::NeededBy,
    /// The resource's annotations.
    annotations: std::collections::BTreeMap<String, String>,
    /// Flink's latest completed checkpoint, [`CHECKPOINT`], completed this many ms before
    /// [`NOW`] (None: the job has none).
    latest_checkpoint: Option<i64>,
    /// The job is not there: its session cluster does not know it, its application's
    /// cluster is gone (as once suspended).
    gone: bool,
    /// How long after [`NOW`] the look is.
    later_ms: i64,
    /// What the autoscaler made of the job at this look.
    autoscaler: crate::autoscaler::apply::Looked,
    /// The highest checkpoint id the job's statistics show (None: not read).
    checkpoint_id: Option<i64>,
    /// What becomes of the job's checkpoints if it is cancelled (retained, as the operator
    /// submits every job, unless a scenario says otherwise).
    on_cancel: super::retention::OnCancel,
}

/// A look at a RUNNING job (the one most scenarios start from).
fn running_job() -> Look {
    look(FlinkJobState::Running)
}

fn look(state: FlinkJobState) -> Look {
    Look {
        state: Some(state),
        started_ago: 60_000,
        trigger_id: "trigger-1",
        generation: 1,
        policy: Policy::status_only(),
        on_cancel: super::retention::OnCancel::Retained,
        ..Look::default()
    }
}

/// A look once the job is not there (see [`Look::gone`]).
fn gone() -> Look {
    Look {
        state: None,
        gone: true,
        ..running_job()
    }
}

/// A look at the resource after the user changed its spec.
fn changed(state: FlinkJobState) -> Look {
    Look {
        generation: 2,
        ..look(state)
    }
}

/// What a kind decided at one look, in the lifecycle's vocabulary.
#[derive(Debug)]
struct Outcome {
    /// What was asked of the job over REST.
    job: Vec<JobAction>,
    /// How many of the kind's own actions (start, tear down) came with it.
    own: usize,
    events: Vec<EventNote>,
    /// The job's status, written before acting when `recorded_first`.
    job_status: JobStatus,
    recorded_first: bool,
    error: Option<String>,
    /// The recorded spec's job.
    recorded: Value,
    /// The conditions' reason, as written first.
    reason: Option<String>,
    /// The resource's lifecycle state and the reconciliation's, as written first.
    lifecycle: Option<ResourceLifecycleState>,
    reconciliation: Option<ReconciliationState>,
    /// The status written after acting is not the one written before it (a second write).
    written_twice: bool,
    requeue: Next,
}

impl Outcome {
    fn reasons(&self) -> Vec<Reason> {
        self.events.iter().map(|e| e.reason).collect()
    }
}

/// A job kind under test: the job's spec (`spec.job`) and configuration are the same JSON
/// for both.
trait Kind {
    const NAME: &'static str;
    type Status: LifecycleStatus + Clone + std::fmt::Debug + PartialEq;
    /// The stored status of a job that runs `job` under [`JOB_ID`].
    fn running(job: &Value, config: &Value) -> Self::Status;
    fn decide(
        job: &Value,
        config: &Value,
        status: &Self::Status,
        look: &Look,
        deleting: bool,
    ) -> (Outcome, Self::Status);
}

fn observed(look: &Look) -> Option<JobObservation> {
    look.state.clone().map(|s| {
        let mut found = JobObservation::found(s, Some(NOW - look.started_ago));
        if let JobObservation::Found { checkpoint_id, .. } = &mut found {
            *checkpoint_id = look.checkpoint_id;
        }
        found
    })
}

fn recorded_job(status: &mut impl LifecycleStatus) -> Value {
    status
        .reconciliation_mut()
        .as_ref()
        .and_then(|rs| rs.last_reconciled_spec::<Value>().ok().flatten())
        .map(|spec| spec["job"].clone())
        .unwrap_or(Value::Null)
}

/// A kind's plan in the lifecycle's vocabulary: `job` picks its requests to Flink, `own`
/// its own actions (start, tear down); and the status stored after it.
fn outcome<S: LifecycleStatus + PartialEq, A>(
    plan: super::Plan<S, A>,
    job: impl Fn(&A) -> Option<JobAction>,
    own: impl Fn(&A) -> bool,
) -> (Outcome, S) {
    let mut written = plan.status_before.clone().unwrap_or_else(|| plan.status.clone());
    let outcome = Outcome {
        job: plan.actions.iter().filter_map(&job).collect(),
        own: plan.actions.iter().filter(|a| own(a)).count(),
        events: plan.events.clone(),
        job_status: written.job_status().cloned().unwrap_or_default(),
        recorded_first: plan.status_before.is_some(),
        error: written.error_mut().clone(),
        recorded: recorded_job(&mut written),
        reason: written
            .conditions()
            .and_then(|c| c.first())
            .and_then(|c| c.reason.clone()),
        lifecycle: *written.lifecycle_state_mut(),
        reconciliation: written.reconciliation_mut().as_ref().and_then(|rs| rs.state),
        written_twice: plan
            .status_before
            .as_ref()
            .is_some_and(|before| *before != plan.status),
        requeue: plan.requeue,
    };
    (outcome, plan.status)
}

struct Application;

impl Application {
    fn resource(
        job: &Value,
        config: &Value,
        status: Option<flink_operator_api::FlinkDeploymentStatus>,
        deleting: bool,
        generation: i64,
    ) -> FlinkDeployment {
        let mut value = json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
            "metadata": {"name": "job", "namespace": "ns", "uid": "u", "generation": generation,
                         "finalizers": [keys::finalizers::FLINK_DEPLOYMENT]},
            "spec": {"image": "flink:1.20", "flinkVersion": "v1_20", "flinkConfiguration": config, "job": job},
        });
        if deleting {
            value["metadata"]["deletionTimestamp"] = json!("2027-01-15T08:00:00Z");
        }
        let mut resource: FlinkDeployment = serde_json::from_value(value).expect("a valid FlinkDeployment");
        resource.status = status;
        resource
    }

    fn observation(look: &Look) -> fd::Observation {
        fd::Observation {
            cluster_exists: !look.gone,
            job_manager: match look.gone {
                true => fd::JobManagerObservation::Missing,
                false => fd::JobManagerObservation::Present {
                    ready: 1,
                    replicas: 1,
                    problem: None,
                    rest_ready: look.state.is_some(),
                },
            },
            job: observed(look),
            savepoint: look.savepoint.clone(),
            late_savepoint: look.late_savepoint.clone(),
            checkpoint: look.checkpoint.clone(),
            latest_checkpoint: look.latest_checkpoint.map(|ago| fd::StateObservation {
                path: CHECKPOINT.into(),
                timestamp_ms: NOW - ago,
            }),
            // A running application's HA metadata holds its checkpoints (what a last-state
            // change keeps); the cluster's own tests cover metadata without one.
            ha_checkpoint: Some(true),
            policy: Policy {
                high_availability: true,
                ..look.policy.clone()
            },
            snapshots: look.snapshots.clone(),
            revisions: look.revisions.clone(),
            history_needed_by: look.history_needed_by.clone(),
            violations: look.violations.clone(),
            fresh_trigger_id: look.trigger_id.into(),
            fresh_job_id: NEW_JOB_ID.into(),
            now_ms: NOW + look.later_ms,
            autoscaler: look.autoscaler.clone(),
            on_cancel: look.on_cancel.clone(),
            ..Default::default()
        }
    }
}

impl Kind for Application {
    const NAME: &'static str = "FlinkDeployment";
    type Status = flink_operator_api::FlinkDeploymentStatus;

    fn running(job: &Value, config: &Value) -> Self::Status {
        let first = fd::decide(
            &Self::resource(job, config, None, false, 1),
            &fd::Observation {
                fresh_job_id: JOB_ID.into(),
                now_ms: NOW - HOUR,
                ..Default::default()
            },
        );
        let look = running_job();
        fd::decide(
            &Self::resource(job, config, Some(first.status), false, 1),
            &Self::observation(&look),
        )
        .status
    }

    fn decide(
        job: &Value,
        config: &Value,
        status: &Self::Status,
        look: &Look,
        deleting: bool,
    ) -> (Outcome, Self::Status) {
        let mut resource = Self::resource(job, config, Some(status.clone()), deleting, look.generation);
        resource.metadata.annotations = Some(look.annotations.clone());
        let plan = fd::decide(&resource, &Self::observation(look));
        outcome(
            plan,
            |a| match a {
                fd::Action::Job(job) => Some(job.clone()),
                _ => None,
            },
            |a| matches!(a, fd::Action::Deploy { .. } | fd::Action::DeleteCluster { .. }),
        )
    }
}

struct SessionJob;

impl SessionJob {
    fn resource(
        job: &Value,
        config: &Value,
        status: Option<flink_operator_api::FlinkSessionJobStatus>,
        deleting: bool,
        generation: i64,
    ) -> FlinkSessionJob {
        let mut value = json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
            "metadata": {"name": "job", "namespace": "ns", "uid": "u", "generation": generation,
                         "finalizers": [keys::finalizers::FLINK_SESSION_JOB]},
            "spec": {"deploymentName": "session", "flinkConfiguration": config, "job": job},
        });
        if deleting {
            value["metadata"]["deletionTimestamp"] = json!("2027-01-15T08:00:00Z");
        }
        let mut resource: FlinkSessionJob = serde_json::from_value(value).expect("a valid FlinkSessionJob");
        resource.status = status;
        resource
    }

    fn observation(look: &Look) -> sj::Observation {
        sj::Observation {
            session: sj::SessionObservation::Ready,
            job: match look.state {
                Some(_) => observed(look),
                None if look.gone => Some(JobObservation::NotFound),
                None => Some(JobObservation::Unreachable("timed out".into())),
            },
            savepoint: look.savepoint.clone(),
            late_savepoint: look.late_savepoint.clone(),
            manual_checkpoint: look.checkpoint.clone(),
            checkpoint: Some(match look.latest_checkpoint {
                Some(ago) => sj::CheckpointLookup::Found {
                    path: CHECKPOINT.into(),
                    timestamp_ms: Some(NOW - ago),
                },
                None => sj::CheckpointLookup::None,
            }),
            policy: look.policy.clone(),
            snapshots: look.snapshots.clone(),
            revisions: look.revisions.clone(),
            history_needed_by: look.history_needed_by.clone(),
            violations: look.violations.clone(),
            artifact_policy: Default::default(),
            artifact_headers: Default::default(),
            download: None,
            fresh_trigger_id: look.trigger_id.into(),
            fresh_job_id: NEW_JOB_ID.into(),
            now_ms: NOW + look.later_ms,
            autoscaler: look.autoscaler.clone(),
            on_cancel: look.on_cancel.clone(),
        }
    }
}

impl Kind for SessionJob {
    const NAME: &'static str = "FlinkSessionJob";
    type Status = flink_operator_api::FlinkSessionJobStatus;

    fn running(job: &Value, config: &Value) -> Self::Status {
        let first = sj::decide(
            &Self::resource(job, config, None, false, 1),
            &sj::Observation {
                session: sj::SessionObservation::Ready,
                fresh_job_id: JOB_ID.into(),
                now_ms: NOW - HOUR,
                ..Default::default()
            },
        );
        let look = running_job();
        sj::decide(
            &Self::resource(job, config, Some(first.status), false, 1),
            &Self::observation(&look),
        )
        .status
    }

    fn decide(
        job: &Value,
        config: &Value,
        status: &Self::Status,
        look: &Look,
        deleting: bool,
    ) -> (Outcome, Self::Status) {
        let mut resource = Self::resource(job, config, Some(status.clone()), deleting, look.generation);
        resource.metadata.annotations = Some(look.annotations.clone());
        let plan = sj::decide(&resource, &Self::observation(look));
        outcome(
            plan,
            |a| match a {
                sj::Action::Job(job) => Some(job.clone()),
                _ => None,
            },
            |a| matches!(a, sj::Action::Submit(_)),
        )
    }
}

fn job_spec(mode: UpgradeMode) -> Value {
    json!({"jarURI": "local:///opt/flink/usrlib/job.jar", "parallelism": 2, "upgradeMode": mode.as_str()})
}

fn with(mut job: Value, field: &str, value: Value) -> Value {
    job[field] = value;
    job
}

/// A kind's decision at one look: of `spec.job` and the configuration, over the stored status
/// (None: the job as started), deleting or not.
type Decide = dyn Fn(&Value, &Value, Option<&Status>, &Look, bool) -> (Outcome, Status);

/// Runs `scenario` against both kinds.
fn both(scenario: impl Fn(&str, &Decide)) {
    scenario(Application::NAME, &|job, config, status, look, deleting| {
        let stored = match status {
            Some(Status::Application(s)) => s.clone(),
            _ => Application::running(job, config),
        };
        let (outcome, next) = Application::decide(job, config, &stored, look, deleting);
        (outcome, Status::Application(next))
    });
    scenario(SessionJob::NAME, &|job, config, status, look, deleting| {
        let stored = match status {
            Some(Status::SessionJob(s)) => s.clone(),
            _ => SessionJob::running(job, config),
        };
        let (outcome, next) = SessionJob::decide(job, config, &stored, look, deleting);
        (outcome, Status::SessionJob(next))
    });
}

/// A kind's stored status between two looks of a scenario.
#[derive(Debug, Clone)]
enum Status {
    Application(flink_operator_api::FlinkDeploymentStatus),
    SessionJob(flink_operator_api::FlinkSessionJobStatus),
}

impl Status {
    /// The stored status with its job's part edited.
    fn with_job(&self, edit: impl FnOnce(&mut JobStatus)) -> Status {
        let mut next = self.clone();
        match &mut next {
            Status::Application(s) => edit(s.job_status_mut()),
            Status::SessionJob(s) => edit(s.job_status_mut()),
        }
        next
    }

    /// The stored status with the back-off of its failed upgrade savepoint over.
    fn with_retry_due(&self) -> Status {
        self.with_job(|job| {
            let retry = job
                .savepoint_info
                .as_mut()
                .and_then(|i| i.upgrade_retry.as_mut())
                .expect("a failed attempt is recorded");
            retry.next_attempt_timestamp = Some(NOW - 1);
        })
    }
}

/// The status that `job` started running with (before the scenario's own change).
/// Each path of `history` looked up in the namespace, needed by no other job.
fn nobody_needs(history: &[flink_operator_api::common::Savepoint]) -> super::protected::NeededBy {
    (history.iter().filter_map(|s| s.location.clone()))
        .map(|path| (path, vec![]))
        .collect()
}

fn started(job: &Value, config: &Value, kind: &str) -> Status {
    if kind == Application::NAME {
        Status::Application(Application::running(job, config))
    } else {
        Status::SessionJob(SessionJob::running(job, config))
    }
}

#[test]
fn a_steady_running_job_is_left_alone() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let (outcome, next) = decide(&job, &json!({}), Some(&stored), &running_job(), false);
        assert!(outcome.job.is_empty() && outcome.own == 0, "{kind}: {outcome:?}");
        assert!(outcome.events.is_empty(), "{kind}: {:?}", outcome.events);
        assert!(!outcome.recorded_first, "{kind}");
        // The status written is the status stored: a steady job costs no write.
        match (stored, next) {
            (Status::Application(a), Status::Application(b)) => assert_eq!(a, b, "{kind}"),
            (Status::SessionJob(a), Status::SessionJob(b)) => assert_eq!(a, b, "{kind}"),
            _ => unreachable!(),
        }
    });
}

#[test]
fn snapshots_that_fail_or_are_lost_are_reported_and_resent_only_to_a_running_job() {
    both(|kind, decide| {
        let job = with(
            job_spec(UpgradeMode::Savepoint),
            "savepointTriggerNonce",
            json!(1),
        );
        let stored = started(&job_spec(UpgradeMode::Savepoint), &json!({}), kind);
        let (_, triggered) = decide(&job, &json!({}), Some(&stored), &running_job(), false);
        let cases = [
            (
                SavepointPoll::Failed("disk full".into()),
                FlinkJobState::Running,
                vec![],
                vec![Reason::SavepointFailed],
            ),
            (
                SavepointPoll::UnknownTrigger,
                FlinkJobState::Running,
                vec![JobAction::TriggerSavepoint {
                    job_id: JOB_ID.into(),
                    trigger_id: "trigger-1".into(),
                }],
                vec![],
            ),
            (
                SavepointPoll::UnknownTrigger,
                FlinkJobState::Failed,
                vec![],
                vec![Reason::JobStatusChanged, Reason::SavepointFailed],
            ),
        ];
        for (poll, state, actions, reasons) in cases {
            let at = Look {
                savepoint: Some(poll.clone()),
                trigger_id: "trigger-2",
                ..look(state.clone())
            };
            let (outcome, _) = decide(&job, &json!({}), Some(&triggered), &at, false);
            assert_eq!(outcome.job, actions, "{kind} {poll:?} {state}");
            assert_eq!(outcome.reasons(), reasons, "{kind} {poll:?} {state}");
        }
    });
}

/// A Quartz cron schedule falls due at its next time after the job started (or after the
/// last periodic savepoint), and a steady job is looked at again by then.
#[test]
fn a_cron_schedule_falls_due_at_its_next_time_and_the_job_is_looked_at_by_then() {
    assert_eq!(NOW.rem_euclid(HOUR), 0, "the times below count from a full hour");
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        // At 20 past every hour.
        let policy = Policy {
            periodic_savepoint: Schedule::parse("0 20 * * * ?").unwrap(),
            ..Policy::status_only()
        };
        let stored = started(&job, &json!({}), kind);
        let started_at_ten_to = Look {
            policy: policy.clone(),
            started_ago: 10 * MIN,
            ..running_job()
        };
        let (outcome, _) = decide(&job, &json!({}), Some(&stored), &started_at_ten_to, false);
        assert!(outcome.job.is_empty(), "{kind}: not before 20 past");
        assert_eq!(
            outcome.requeue,
            Next::Within(20 * 60),
            "{kind}: looked at again at 20 past"
        );
        let started_at_ten_past = Look {
            policy,
            started_ago: 50 * MIN,
            ..running_job()
        };
        let (outcome, _) = decide(&job, &json!({}), Some(&stored), &started_at_ten_past, false);
        assert_eq!(
            outcome.job,
            [JobAction::TriggerSavepoint {
                job_id: JOB_ID.into(),
                trigger_id: "trigger-1".into()
            }],
            "{kind}: due since 20 past the previous hour"
        );
    });
}

/// Without snapshot resources a periodic checkpoint is triggered through the JobManager, and
/// its schedule moves when it is asked for: the next look before its next time asks nothing.
#[test]
fn a_periodic_checkpoint_is_triggered_on_its_schedule_and_not_again_before_its_next_time() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let at = Look {
            policy: Policy {
                periodic_checkpoint: Some(Schedule::Every(HOUR)),
                ..Policy::status_only()
            },
            started_ago: 2 * HOUR,
            ..running_job()
        };
        let (outcome, next) = decide(&job, &json!({}), Some(&stored), &at, false);
        assert_eq!(
            outcome.job,
            [JobAction::TriggerCheckpoint {
                job_id: JOB_ID.into(),
                trigger_id: "trigger-1".into()
            }],
            "{kind}"
        );
        assert_eq!(
            outcome
                .job_status
                .checkpoint_info
                .as_ref()
                .and_then(|i| i.last_periodic_checkpoint_timestamp),
            Some(NOW),
            "{kind}"
        );
        let settled = Look {
            checkpoint: Some(SavepointPoll::Completed("8".into())),
            later_ms: 60_000,
            ..at.clone()
        };
        let (outcome, next) = decide(&job, &json!({}), Some(&next), &settled, false);
        assert!(outcome.job.is_empty(), "{kind}: {outcome:?}");
        let (outcome, _) = decide(
            &job,
            &json!({}),
            Some(&next),
            &Look {
                checkpoint: None,
                ..settled
            },
            false,
        );
        assert!(
            outcome.job.is_empty(),
            "{kind}: not again within the hour: {outcome:?}"
        );
    });
}

#[test]
fn a_savepoint_upgrade_stops_the_job_under_a_recorded_trigger_and_starts_the_new_spec_from_it() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let new = with(job.clone(), "parallelism", json!(4));
        let (outcome, stopping) = decide(
            &new,
            &json!({}),
            Some(&stored),
            &changed(FlinkJobState::Running),
            false,
        );
        assert_eq!(
            outcome.job,
            [JobAction::StopWithSavepoint {
                job_id: JOB_ID.into(),
                trigger_id: "trigger-1".into(),
                drain: false
            }],
            "{kind}"
        );
        assert!(outcome.recorded_first, "{kind}");
        assert_eq!(outcome.reasons(), [Reason::SavepointTriggered], "{kind}");
        // The job processes nothing while it stops: its savepoint is polled often, soon
        // after the stop is sent, less often as it takes longer.
        assert_eq!(outcome.requeue, Next::Stopping { for_ms: 0 }, "{kind}");
        let pending = Look {
            savepoint: Some(SavepointPoll::InProgress),
            ..changed(FlinkJobState::Running)
        };
        let (outcome, _) = decide(&new, &json!({}), Some(&stopping), &pending, false);
        assert!(
            matches!(outcome.requeue, Next::Stopping { for_ms } if for_ms < 60_000),
            "{kind}: {:?}",
            outcome.requeue
        );

        // A failed savepoint within the grace period is tried again; the job keeps running.
        let failed = Look {
            savepoint: Some(SavepointPoll::Failed(
                "Not all required tasks are currently running".into(),
            )),
            ..changed(FlinkJobState::Running)
        };
        let (outcome, retrying) = decide(&new, &json!({}), Some(&stopping), &failed, false);
        assert!(outcome.job.is_empty() && outcome.own == 0, "{kind}: {outcome:?}");
        assert_eq!(outcome.reasons(), [Reason::SavepointFailed], "{kind}");
        let failure = outcome.error.clone().expect("the failure in status.error");
        assert!(failure.contains("Not all required tasks"), "{kind}: {failure}");

        // Its back-off over, the stop is sent again; until it ends, the failure it retries
        // stays the reason shown (observing the running job must not clear it).
        let retry_due = retrying.with_retry_due();
        let (outcome, resent) = decide(
            &new,
            &json!({}),
            Some(&retry_due),
            &changed(FlinkJobState::Running),
            false,
        );
        assert_eq!(outcome.job.len(), 1, "{kind}: {outcome:?}");
        assert!(
            outcome
                .error
                .as_deref()
                .is_some_and(|e| e.contains("Not all required tasks")),
            "{kind}: {outcome:?}"
        );
        let (outcome, _) = decide(&new, &json!({}), Some(&resent), &pending, false);
        assert!(
            outcome
                .error
                .as_deref()
                .is_some_and(|e| e.contains("Not all required tasks")),
            "{kind}: {outcome:?}"
        );

        // Completed: the savepoint is the state the new spec starts from, recorded with it
        // before the new job is started.
        let done = Look {
            savepoint: Some(SavepointPoll::Completed("file:/sp/upgrade".into())),
            ..changed(FlinkJobState::Finished)
        };
        let (outcome, _) = decide(&new, &json!({}), Some(&stopping), &done, false);
        assert!(outcome.recorded_first, "{kind}");
        assert!(outcome.reasons().contains(&Reason::SavepointCompleted), "{kind}");
        assert_eq!(
            outcome.job_status.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/upgrade"),
            "{kind}"
        );
        assert_eq!(outcome.recorded["parallelism"], json!(4), "{kind}");
        assert_eq!(
            outcome.own, 1,
            "{kind}: the new job is started (or its old cluster torn down)"
        );
    });
}

#[test]
fn a_suspension_drains_the_job_when_configured() {
    for drain in [false, true] {
        both(|kind, decide| {
            let job = job_spec(UpgradeMode::Savepoint);
            let stored = started(&job, &json!({}), kind);
            let suspend = with(job.clone(), "state", json!("suspended"));
            let at = Look {
                policy: Policy {
                    drain,
                    ..Policy::status_only()
                },
                ..running_job()
            };
            let (outcome, _) = decide(&suspend, &json!({}), Some(&stored), &at, false);
            assert_eq!(
                outcome.job,
                [JobAction::StopWithSavepoint {
                    job_id: JOB_ID.into(),
                    trigger_id: "trigger-1".into(),
                    drain
                }],
                "{kind} drain={drain}"
            );
        });
    }
}

#[test]
fn deletion_keeps_the_state_of_a_savepoint_job_and_records_it_before_anything_goes() {
    // (upgrade mode, savepoint-on-deletion, drain) -> a savepoint, drained?
    let cases = [
        (UpgradeMode::Savepoint, None, false, Some(false)),
        (UpgradeMode::Savepoint, None, true, Some(true)),
        (UpgradeMode::Savepoint, Some(false), false, None),
        (UpgradeMode::LastState, None, false, None),
        (UpgradeMode::Stateless, None, false, None),
        (UpgradeMode::Stateless, Some(true), false, Some(false)),
        (UpgradeMode::LastState, Some(true), true, Some(true)),
    ];
    for (mode, set, drain, expected) in cases {
        both(|kind, decide| {
            let job = job_spec(mode);
            let stored = started(&job, &json!({}), kind);
            let at = Look {
                policy: Policy {
                    savepoint_on_deletion_set: set,
                    drain,
                    ..Policy::status_only()
                },
                ..running_job()
            };
            let (outcome, stopping) = decide(&job, &json!({}), Some(&stored), &at, true);
            let case = format!("{kind} {mode:?} {set:?} drain={drain}");
            match expected {
                Some(drain) => {
                    assert_eq!(
                        outcome.job,
                        [JobAction::StopWithSavepoint {
                            job_id: JOB_ID.into(),
                            trigger_id: "trigger-1".into(),
                            drain
                        }],
                        "{case}"
                    );
                    assert!(outcome.recorded_first, "{case}");
                    let done = Look {
                        savepoint: Some(SavepointPoll::Completed("file:/sp/last".into())),
                        ..at.clone()
                    };
                    let (outcome, _) = decide(&job, &json!({}), Some(&stopping), &done, true);
                    assert!(
                        outcome.recorded_first,
                        "{case}: the path is written before the teardown"
                    );
                    assert_eq!(
                        outcome.job_status.upgrade_savepoint_path.as_deref(),
                        Some("file:/sp/last"),
                        "{case}"
                    );
                    assert_eq!(outcome.reasons(), [Reason::SavepointCompleted], "{case}");
                }
                None => assert!(
                    !outcome
                        .job
                        .iter()
                        .any(|a| matches!(a, JobAction::StopWithSavepoint { .. })),
                    "{case}: {outcome:?}"
                ),
            }
        });
    }
}

#[test]
fn a_failed_job_says_why() {
    both(|kind, _| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let at = look(FlinkJobState::Failed);
        let observation = JobObservation::Found {
            state: FlinkJobState::Failed,
            start_time: Some(NOW - 60_000),
            all_tasks_running: false,
            failure: Some("java.lang.ArithmeticException: / by zero".into()),
            checkpoint_id: None,
        };
        // The failure cause comes with the observation of a FAILED job.
        let (outcome, next) = match kind {
            "FlinkDeployment" => {
                let Status::Application(status) = &stored else {
                    unreachable!()
                };
                let plan = fd::decide(
                    &Application::resource(&job, &json!({}), Some(status.clone()), false, 1),
                    &fd::Observation {
                        job: Some(observation.clone()),
                        ..Application::observation(&at)
                    },
                );
                (
                    plan.events.iter().map(|e| e.reason).collect::<Vec<_>>(),
                    plan.status.error.clone(),
                )
            }
            _ => {
                let Status::SessionJob(status) = &stored else {
                    unreachable!()
                };
                let plan = sj::decide(
                    &SessionJob::resource(&job, &json!({}), Some(status.clone()), false, 1),
                    &sj::Observation {
                        job: Some(observation.clone()),
                        ..SessionJob::observation(&at)
                    },
                );
                (
                    plan.events.iter().map(|e| e.reason).collect::<Vec<_>>(),
                    plan.status.error.clone(),
                )
            }
        };
        assert_eq!(outcome, [Reason::JobStatusChanged, Reason::JobFailed], "{kind}");
        assert_eq!(
            next.as_deref(),
            Some("job job-1 failed: java.lang.ArithmeticException: / by zero"),
            "{kind}"
        );
    });
}

#[test]
fn a_stop_in_flight_is_followed_to_its_end_even_if_the_spec_turned_invalid() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let new = with(job.clone(), "parallelism", json!(4));
        let (_, stopping) = decide(&new, &json!({}), Some(&stored), &running_job(), false);
        let invalid = vec!["spec.job.parallelism: too large".to_owned()];
        // The savepoint completes while the spec is invalid: it is recorded all the same,
        // before the JobManager forgets it.
        let done = Look {
            savepoint: Some(SavepointPoll::Completed("file:/sp/upgrade".into())),
            violations: invalid.clone(),
            ..look(FlinkJobState::Finished)
        };
        let (outcome, committed) = decide(&new, &json!({}), Some(&stopping), &done, false);
        assert!(outcome.reasons().contains(&Reason::SavepointCompleted), "{kind}");
        assert!(outcome.recorded_first, "{kind}");
        assert_eq!(
            outcome.job_status.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/upgrade"),
            "{kind}"
        );
        // Nothing more is done until the spec is valid again.
        let after = Look {
            violations: invalid,
            ..look(FlinkJobState::Finished)
        };
        let (outcome, _) = decide(&new, &json!({}), Some(&committed), &after, false);
        assert!(outcome.job.is_empty() && outcome.own == 0, "{kind}: {outcome:?}");
        assert_eq!(outcome.reasons(), [Reason::ValidationError], "{kind}");
    });
}

#[test]
fn an_invalid_spec_changes_nothing_that_runs() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let new = with(job.clone(), "parallelism", json!(4));
        let at = Look {
            violations: vec!["spec.job.parallelism: too large".to_owned()],
            ..running_job()
        };
        let (outcome, next) = decide(&new, &json!({}), Some(&stored), &at, false);
        assert!(outcome.job.is_empty() && outcome.own == 0, "{kind}: {outcome:?}");
        assert_eq!(outcome.reasons(), [Reason::ValidationError], "{kind}");
        assert_eq!(outcome.recorded["parallelism"], json!(2), "{kind}: not recorded");
        // Reported once.
        let (outcome, _) = decide(&new, &json!({}), Some(&next), &at, false);
        assert!(outcome.events.is_empty(), "{kind}: {:?}", outcome.events);
    });
}

/// A stop that completed while nobody looked: the JobManager keeps its result for
/// `rest.async.store-duration` only (and forgets it when it restarts), then answers its
/// trigger id as unknown, and the job has ended.
fn forgotten(poll: SavepointPoll, late: Option<LateSavepoint>) -> Look {
    Look {
        savepoint: Some(poll),
        late_savepoint: late,
        ..changed(FlinkJobState::Finished)
    }
}

fn found_late() -> Option<LateSavepoint> {
    Some(LateSavepoint::Found {
        path: "file:/sp/savepoint-late".into(),
        checkpoint_id: 12,
        place: "the checkpoint history of job job-1".into(),
    })
}

#[test]
fn a_stop_whose_result_flink_forgot_goes_on_from_its_savepoint_found_elsewhere() {
    for poll in [
        SavepointPoll::UnknownTrigger,
        SavepointPoll::JobGone("Job job-1 not found".into()),
    ] {
        both(|kind, decide| {
            let job = job_spec(UpgradeMode::Savepoint);
            let stored = started(&job, &json!({}), kind);
            let new = with(job.clone(), "parallelism", json!(4));
            let (_, stopping) = decide(
                &new,
                &json!({}),
                Some(&stored),
                &changed(FlinkJobState::Running),
                false,
            );
            let case = format!("{kind} {poll:?}");
            let (outcome, _) = decide(
                &new,
                &json!({}),
                Some(&stopping),
                &forgotten(poll.clone(), found_late()),
                false,
            );
            assert!(
                outcome.recorded_first,
                "{case}: recorded before the new job starts"
            );
            assert_eq!(
                outcome.job_status.upgrade_savepoint_path.as_deref(),
                Some("file:/sp/savepoint-late"),
                "{case}: {outcome:?}"
            );
            let completed = outcome
                .events
                .iter()
                .find(|e| e.reason == Reason::SavepointCompleted)
                .unwrap_or_else(|| panic!("{case}: {outcome:?}"));
            assert!(
                completed.note.contains("the checkpoint history of job job-1"),
                "{case}: {}",
                completed.note
            );
            assert_eq!(outcome.recorded["parallelism"], json!(4), "{case}");
            assert_eq!(outcome.own, 1, "{case}: the new job starts from it");
            assert_eq!(outcome.error, None, "{case}");
        });
    }
}

#[test]
fn a_stop_whose_result_flink_forgot_and_whose_savepoint_is_nowhere_refuses_the_change() {
    let looked = "the checkpoint history of job job-1 holds no savepoint taken since the stop; \
                  the savepoint directory s3://b/sp is not a local file: path the operator can read";
    for poll in [
        SavepointPoll::UnknownTrigger,
        SavepointPoll::JobGone("Job job-1 not found".into()),
    ] {
        both(|kind, decide| {
            let job = job_spec(UpgradeMode::Savepoint);
            let stored = started(&job, &json!({}), kind);
            let new = with(job.clone(), "parallelism", json!(4));
            let (_, stopping) = decide(
                &new,
                &json!({}),
                Some(&stored),
                &changed(FlinkJobState::Running),
                false,
            );
            let case = format!("{kind} {poll:?}");
            let lost = forgotten(poll.clone(), Some(LateSavepoint::NotFound(looked.into())));
            let (outcome, refused) = decide(&new, &json!({}), Some(&stopping), &lost, false);
            assert_eq!(
                outcome.own, 0,
                "{case}: nothing started, from older state or none: {outcome:?}"
            );
            assert!(outcome.job.is_empty(), "{case}: {outcome:?}");
            assert_eq!(
                outcome.recorded["parallelism"],
                json!(2),
                "{case}: the change is not committed"
            );
            let error = outcome.error.clone().unwrap_or_default();
            assert!(error.contains(looked), "{case}: where it was looked for: {error}");
            assert!(
                outcome
                    .events
                    .iter()
                    .any(|e| e.warning && e.note.contains(looked)),
                "{case}: an Event says it: {outcome:?}"
            );
            // It stays refused: the next look starts nothing either.
            let (outcome, _) = decide(
                &new,
                &json!({}),
                Some(&refused),
                &changed(FlinkJobState::Finished),
                false,
            );
            assert_eq!(outcome.own, 0, "{case}: {outcome:?}");
            assert!(outcome.job.is_empty(), "{case}: {outcome:?}");
            assert!(
                outcome.error.as_deref().is_some_and(|e| e.contains(looked)),
                "{case}: {outcome:?}"
            );
        });
    }
}

#[test]
fn a_failed_upgrade_savepoint_is_retried_after_its_back_off_within_the_grace_period_then_the_change_is_refused()
 {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let new = with(job.clone(), "parallelism", json!(4));
        let at = |later_ms: i64, savepoint: Option<SavepointPoll>| Look {
            later_ms,
            savepoint,
            ..changed(FlinkJobState::Running)
        };
        let failed = |later_ms| at(later_ms, Some(SavepointPoll::Failed("disk full".into())));
        let (_, triggered) = decide(
            &new,
            &json!({}),
            Some(&stored),
            &changed(FlinkJobState::Running),
            false,
        );
        // Within the grace period (default 1 min): the reason said, a retry after a back-off.
        let (outcome, retrying) = decide(&new, &json!({}), Some(&triggered), &failed(1_000), false);
        assert!(outcome.job.is_empty(), "{kind}: {outcome:?}");
        assert_eq!(outcome.requeue, Next::Within(2), "{kind}");
        assert_eq!(outcome.reasons(), [Reason::SavepointFailed], "{kind}");
        assert_eq!(
            outcome.reason.as_deref(),
            Some(crate::conditions::Phase::Updating.as_str())
        );
        // Within the back-off nothing is sent; after it, the stop is sent again.
        let (outcome, _) = decide(&new, &json!({}), Some(&retrying), &at(2_000, None), false);
        assert!(outcome.job.is_empty(), "{kind}: {outcome:?}");
        let (outcome, retried) = decide(&new, &json!({}), Some(&retrying), &at(3_500, None), false);
        assert!(
            matches!(outcome.job.as_slice(), [JobAction::StopWithSavepoint { .. }]),
            "{kind}: {outcome:?}"
        );
        // A failure whose back-off would end after the grace period is tried again when the
        // period ends...
        let (outcome, _) = decide(&new, &json!({}), Some(&retried), &failed(58_000), false);
        assert!(outcome.job.is_empty(), "{kind}: {outcome:?}");
        assert_eq!(outcome.requeue, Next::Within(2), "{kind}");
        assert_eq!(
            outcome.reason.as_deref(),
            Some(crate::conditions::Phase::Updating.as_str())
        );
        // ...and one once it is over ends the change: refused, the job keeps running with the
        // previous spec, the same words for both kinds.
        let (outcome, _) = decide(&new, &json!({}), Some(&retried), &failed(61_000), false);
        assert!(outcome.job.is_empty() && outcome.own == 0, "{kind}: {outcome:?}");
        assert!(
            outcome.reasons().contains(&Reason::UpdateFailed),
            "{kind}: {outcome:?}"
        );
        assert_eq!(
            outcome.reason.as_deref(),
            Some(crate::conditions::Phase::UpdateFailed.as_str())
        );
        assert_eq!(
            outcome.error.as_deref(),
            Some(
                "the savepoint failed 2 times, the last time: disk full within kubernetes.operator.savepoint.trigger.grace-period (1 min); job job-1 keeps running with the previous spec"
            ),
            "{kind}"
        );
        assert_eq!(outcome.recorded["parallelism"], json!(2), "{kind}");
    });
}

#[test]
fn a_refused_change_stays_refused_for_its_generation_said_once_and_is_tried_again_when_the_spec_changes() {
    let looked = "the savepoint directory is not known";
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let new = with(job.clone(), "parallelism", json!(4));
        let (_, stopping) = decide(
            &new,
            &json!({}),
            Some(&stored),
            &changed(FlinkJobState::Running),
            false,
        );
        let lost = forgotten(
            SavepointPoll::UnknownTrigger,
            Some(LateSavepoint::NotFound(looked.into())),
        );
        let (first, refused) = decide(&new, &json!({}), Some(&stopping), &lost, false);
        assert!(
            first.reasons().contains(&Reason::UpdateFailed),
            "{kind}: {first:?}"
        );
        // The same generation, looked at again: still refused, and not said again.
        let (again, refused) = decide(
            &new,
            &json!({}),
            Some(&refused),
            &changed(FlinkJobState::Finished),
            false,
        );
        assert!(again.job.is_empty() && again.own == 0, "{kind}: {again:?}");
        assert!(
            !again.reasons().contains(&Reason::UpdateFailed),
            "{kind}: said once: {again:?}"
        );
        assert_eq!(again.error, first.error, "{kind}");
        assert_eq!(
            again.reason.as_deref(),
            Some(crate::conditions::Phase::UpdateFailed.as_str())
        );
        // The user changes the spec again: the change is tried again.
        let newer = with(job.clone(), "parallelism", json!(6));
        let look = Look {
            generation: 3,
            ..changed(FlinkJobState::Running)
        };
        let (retried, _) = decide(&newer, &json!({}), Some(&refused), &look, false);
        assert!(
            matches!(retried.job.as_slice(), [JobAction::StopWithSavepoint { .. }]),
            "{kind}: a new stop-with-savepoint: {retried:?}"
        );
    });
}

#[test]
fn without_the_upgrade_savepoint_the_job_is_cancelled_recorded_first_with_the_same_reasons_then_restores_its_checkpoint()
 {
    let reasons = std::cell::RefCell::new(Vec::new());
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let config = json!({ "kubernetes.operator.job.upgrade.take-savepoint": "false" });
        let stored = started(&job, &config, kind);
        let new = with(job.clone(), "parallelism", json!(4));
        let look = |state| Look {
            policy: Policy {
                take_savepoint: false,
                ..Policy::status_only()
            },
            latest_checkpoint: Some(5_000),
            ..changed(state)
        };
        let (cancelling, status) = decide(&new, &config, Some(&stored), &look(FlinkJobState::Running), false);
        assert_eq!(
            cancelling.job,
            vec![JobAction::Cancel {
                job_id: JOB_ID.into()
            }],
            "{kind}: cancelled, not stopped with a savepoint: {cancelling:?}"
        );
        assert!(
            cancelling.recorded_first,
            "{kind}: why is recorded before the cancel is sent"
        );
        assert_eq!(
            cancelling.reason.as_deref(),
            Some(crate::conditions::Phase::Updating.as_str())
        );
        let note = &cancelling.events.last().expect("an Event").note;
        assert!(
            note.contains("take-savepoint is false") && note.contains("chk-7"),
            "{kind}: the Event says why and what it restores: {note}"
        );
        assert_eq!(
            cancelling.recorded["parallelism"],
            json!(2),
            "{kind}: not committed yet"
        );
        // Cancelled: the new spec is committed with the latest checkpoint.
        let (committed, _) = decide(
            &new,
            &config,
            Some(&status),
            &look(FlinkJobState::Canceled),
            false,
        );
        assert_eq!(
            committed.recorded["parallelism"],
            json!(4),
            "{kind}: {committed:?}"
        );
        // After what was observed, the lifecycle says why the spec is committed, the same for
        // both kinds, before the kind's own Events of its start.
        let said = (committed.events.iter())
            .find(|e| e.reason != Reason::JobStatusChanged)
            .expect("the commit's Event");
        assert_eq!(said.reason, Reason::StateFound, "{kind}: {committed:?}");
        assert!(
            said.note.contains("chk-7"),
            "{kind}: the Event names the state restored: {}",
            said.note
        );
        reasons
            .borrow_mut()
            .push((kind.to_owned(), cancelling.reasons(), said.note.clone()));
    });
    let reasons = reasons.into_inner();
    let [(_, application, application_said), (_, session, session_said)] = &reasons[..] else {
        panic!("both kinds ran: {reasons:?}")
    };
    assert_eq!(
        application, session,
        "the same reasons in the same order: {reasons:?}"
    );
    assert_eq!(application.last(), Some(&Reason::Cancelling));
    assert_eq!(application_said, session_said, "worded once for both kinds");
}

#[test]
fn a_deletion_whose_stop_flink_forgot_records_its_savepoint_found_elsewhere() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let (_, stopping) = decide(&job, &json!({}), Some(&stored), &running_job(), true);
        let at = Look {
            savepoint: Some(SavepointPoll::UnknownTrigger),
            late_savepoint: found_late(),
            ..look(FlinkJobState::Finished)
        };
        let (outcome, _) = decide(&job, &json!({}), Some(&stopping), &at, true);
        assert!(
            outcome.recorded_first,
            "{kind}: the path is written before the teardown"
        );
        assert_eq!(
            outcome.job_status.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/savepoint-late"),
            "{kind}: {outcome:?}"
        );
        assert_eq!(outcome.reasons(), [Reason::SavepointCompleted], "{kind}");
    });
}

#[test]
fn a_deletion_during_an_upgrade_records_the_savepoint_of_the_stop_in_flight() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let new = with(job.clone(), "parallelism", json!(4));
        let (_, stopping) = decide(&new, &json!({}), Some(&stored), &running_job(), false);
        let done = Look {
            savepoint: Some(SavepointPoll::Completed("file:/sp/upgrade".into())),
            ..look(FlinkJobState::Finished)
        };
        let (outcome, _) = decide(&new, &json!({}), Some(&stopping), &done, true);
        assert!(outcome.job.is_empty(), "{kind}: no second stop: {outcome:?}");
        assert_eq!(outcome.reasons(), [Reason::SavepointCompleted], "{kind}");
        assert!(
            outcome.recorded_first,
            "{kind}: the path is written before the teardown"
        );
        assert_eq!(
            outcome.job_status.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/upgrade"),
            "{kind}"
        );
    });
}

// === Snapshot resources (`kubernetes.operator.snapshot.resource.enabled`, the default) ===

/// A look with snapshot resources on, as by default.
fn with_resources(state: FlinkJobState) -> Look {
    Look {
        policy: Policy::default(),
        ..look(state)
    }
}

fn resource(name: &str, trigger_type: SnapshotTriggerType, state: SnapshotState, ago_ms: i64) -> JobSnapshot {
    let completed = state == SnapshotState::Completed;
    JobSnapshot {
        name: name.into(),
        kind: SnapshotType::Savepoint,
        trigger_type,
        state,
        path: completed.then(|| format!("file:/sp/{name}")),
        created_ms: NOW - ago_ms,
        result_ms: completed.then_some(NOW - ago_ms + 1_000),
        failures: 0,
        deleting: false,
        disposes: false,
    }
}

fn created(outcome: &Outcome) -> Vec<NewSnapshot> {
    outcome
        .job
        .iter()
        .filter_map(|a| match a {
            JobAction::CreateSnapshot(new) => Some(new.clone()),
            _ => None,
        })
        .collect()
}

fn job_status_of(status: &Status) -> JobStatus {
    match status {
        Status::Application(s) => s.job_status.clone().unwrap_or_default(),
        Status::SessionJob(s) => s.job_status.clone().unwrap_or_default(),
    }
}

#[test]
fn with_snapshot_resources_a_nonce_or_a_due_period_creates_a_resource_recorded_first_and_created_once() {
    let periodic = Policy {
        periodic_savepoint: Some(Schedule::Every(HOUR)),
        ..Policy::default()
    };
    for (case, field, policy, expected) in [
        (
            "savepoint nonce",
            Some("savepointTriggerNonce"),
            Policy::default(),
            (SnapshotType::Savepoint, SnapshotTriggerType::Manual),
        ),
        (
            "checkpoint nonce",
            Some("checkpointTriggerNonce"),
            Policy::default(),
            (SnapshotType::Checkpoint, SnapshotTriggerType::Manual),
        ),
        (
            "periodic",
            None,
            periodic,
            (SnapshotType::Savepoint, SnapshotTriggerType::Periodic),
        ),
        (
            "periodic checkpoint",
            None,
            Policy {
                periodic_checkpoint: Some(Schedule::Every(HOUR)),
                ..Policy::default()
            },
            (SnapshotType::Checkpoint, SnapshotTriggerType::Periodic),
        ),
    ] {
        both(|kind, decide| {
            let case = format!("{kind} {case}");
            let job = job_spec(UpgradeMode::Savepoint);
            let stored = started(&job, &json!({}), kind);
            let asked = match field {
                Some(field) => with(job.clone(), field, json!(7)),
                None => job.clone(),
            };
            let at = Look {
                policy: policy.clone(),
                started_ago: 2 * HOUR,
                ..with_resources(FlinkJobState::Running)
            };
            let (outcome, next) = decide(&asked, &json!({}), Some(&stored), &at, false);
            let new = created(&outcome);
            assert_eq!(new.len(), 1, "{case}: {outcome:?}");
            assert_eq!((new[0].kind, new[0].trigger_type), expected, "{case}");
            assert_eq!(new[0].at_ms, NOW, "{case}");
            assert_eq!(new[0].existing_path, None, "{case}: taken by the snapshot loop");
            assert_eq!(outcome.job.len(), 1, "{case}: nothing is triggered here");
            // Recorded as to be created before it is, cleared in the status written after.
            assert!(outcome.recorded_first, "{case}");
            assert_eq!(
                snapshot_resources::unrecorded(&outcome.job_status, false),
                new,
                "{case}"
            );
            assert_eq!(
                snapshot_resources::unrecorded(&job_status_of(&next), false),
                vec![],
                "{case}"
            );
            if let Some(field) = field {
                assert_eq!(outcome.recorded[field], json!(7), "{case}: the nonce is consumed");
            }

            // The operator stopped between the status write and the creation: the next look
            // creates the same resource (same name), once.
            let crashed = match &stored {
                Status::Application(s) => {
                    let mut s = s.clone();
                    s.job_status = Some(outcome.job_status.clone());
                    s.reconciliation_status = match &next {
                        Status::Application(n) => n.reconciliation_status.clone(),
                        _ => unreachable!(),
                    };
                    Status::Application(s)
                }
                Status::SessionJob(s) => {
                    let mut s = s.clone();
                    s.job_status = Some(outcome.job_status.clone());
                    s.reconciliation_status = match &next {
                        Status::SessionJob(n) => n.reconciliation_status.clone(),
                        _ => unreachable!(),
                    };
                    Status::SessionJob(s)
                }
            };
            let later = Look {
                policy: policy.clone(),
                started_ago: 2 * HOUR,
                ..with_resources(FlinkJobState::Running)
            };
            let (again, after) = decide(&asked, &json!({}), Some(&crashed), &later, false);
            assert_eq!(created(&again), new, "{case}: created again under the same name");
            assert_eq!(
                snapshot_resources::unrecorded(&job_status_of(&after), false),
                vec![],
                "{case}"
            );

            // Created and under way: nothing more is created, and a spec change waits for it.
            let under_way = Look {
                policy: policy.clone(),
                started_ago: 2 * HOUR,
                snapshots: vec![JobSnapshot {
                    kind: expected.0,
                    ..resource("taken", expected.1, SnapshotState::InProgress, 0)
                }],
                ..with_resources(FlinkJobState::Running)
            };
            let (outcome, _) = decide(&asked, &json!({}), Some(&next), &under_way, false);
            assert!(outcome.job.is_empty(), "{case}: {outcome:?}");
            let upgrade = with(asked.clone(), "parallelism", json!(4));
            let under_way_changed = Look {
                generation: 2,
                ..under_way
            };
            let (outcome, _) = decide(&upgrade, &json!({}), Some(&next), &under_way_changed, false);
            assert!(
                outcome.job.is_empty() && outcome.own == 0,
                "{case}: the change waits for the snapshot: {outcome:?}"
            );
        });
    }
}

#[test]
fn with_snapshot_resources_an_upgrade_savepoint_becomes_an_upgrade_resource_before_the_new_job_starts() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let new = with(job.clone(), "parallelism", json!(4));
        let at = Look {
            generation: 2,
            ..with_resources(FlinkJobState::Running)
        };
        let (_, stopping) = decide(&new, &json!({}), Some(&stored), &at, false);
        let done = Look {
            savepoint: Some(SavepointPoll::Completed("file:/sp/upgrade".into())),
            generation: 2,
            ..with_resources(FlinkJobState::Finished)
        };
        let (outcome, next) = decide(&new, &json!({}), Some(&stopping), &done, false);
        let expected = NewSnapshot {
            kind: SnapshotType::Savepoint,
            trigger_type: SnapshotTriggerType::Upgrade,
            at_ms: NOW,
            existing_path: Some("file:/sp/upgrade".into()),
            completed_ms: Some(NOW),
            dispose_on_delete: false,
        };
        assert_eq!(
            created(&outcome),
            std::slice::from_ref(&expected),
            "{kind}: {outcome:?}"
        );
        assert!(outcome.recorded_first, "{kind}");
        assert_eq!(
            snapshot_resources::unrecorded(&outcome.job_status, false),
            [expected],
            "{kind}: recorded as to be created with the state the job starts from"
        );
        assert_eq!(
            outcome.job_status.upgrade_savepoint_path.as_deref(),
            Some("file:/sp/upgrade"),
            "{kind}"
        );
        let info = job_status_of(&next).savepoint_info.unwrap_or_default();
        assert_eq!(
            info.last_savepoint.and_then(|s| s.location).as_deref(),
            Some("file:/sp/upgrade"),
            "{kind}"
        );
        assert_eq!(
            info.savepoint_history.unwrap_or_default(),
            vec![],
            "{kind}: the history is the resources, not the status"
        );
        assert_eq!(info.trigger_type, None, "{kind}: cleared once created");
        assert_eq!(
            outcome.own, 1,
            "{kind}: the new job is started (or its old cluster torn down)"
        );
    });
}

#[test]
fn with_snapshot_resources_a_restart_restores_the_newest_completed_one_under_the_age_guard() {
    for (case, max_age, restored) in [
        ("newer than the checkpoint", None, Some("file:/sp/recent")),
        ("too old for the guard", Some(1_000), None),
    ] {
        both(|kind, decide| {
            let job = job_spec(UpgradeMode::Savepoint);
            let stored = started(&job, &json!({}), kind);
            let at = Look {
                policy: Policy {
                    restart_failed: true,
                    restore_max_state_age_ms: max_age,
                    ..Policy::default()
                },
                snapshots: vec![
                    resource(
                        "old",
                        SnapshotTriggerType::Manual,
                        SnapshotState::Completed,
                        3 * HOUR,
                    ),
                    resource(
                        "recent",
                        SnapshotTriggerType::Periodic,
                        SnapshotState::Completed,
                        3_000,
                    ),
                    resource(
                        "failed",
                        SnapshotTriggerType::Manual,
                        SnapshotState::Failed,
                        1_000,
                    ),
                ],
                ..with_resources(FlinkJobState::Failed)
            };
            let (outcome, _) = decide(&job, &json!({}), Some(&stored), &at, false);
            let case = format!("{kind} {case}");
            assert_eq!(
                outcome.job_status.upgrade_savepoint_path.as_deref(),
                restored,
                "{case}: {outcome:?}"
            );
            assert_eq!(outcome.own, usize::from(restored.is_some()), "{case}");
        });
    }
}

#[test]
fn with_snapshot_resources_the_history_retention_deletes_resources_beyond_the_count() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let at = Look {
            policy: Policy {
                history_max_count: 2,
                ..Policy::default()
            },
            snapshots: vec![
                resource(
                    "a",
                    SnapshotTriggerType::Periodic,
                    SnapshotState::Completed,
                    40_000,
                ),
                resource(
                    "b",
                    SnapshotTriggerType::Upgrade,
                    SnapshotState::Completed,
                    30_000,
                ),
                resource("m", SnapshotTriggerType::Manual, SnapshotState::Completed, 25_000),
                resource(
                    "c",
                    SnapshotTriggerType::Periodic,
                    SnapshotState::Completed,
                    20_000,
                ),
                resource(
                    "d",
                    SnapshotTriggerType::Periodic,
                    SnapshotState::Completed,
                    10_000,
                ),
            ],
            ..with_resources(FlinkJobState::Running)
        };
        let (outcome, _) = decide(&job, &json!({}), Some(&stored), &at, false);
        assert_eq!(
            outcome.job,
            [
                JobAction::DeleteSnapshot {
                    name: "a".into(),
                    keep_files: false
                },
                JobAction::DeleteSnapshot {
                    name: "b".into(),
                    keep_files: false
                }
            ],
            "{kind}: the manual one is kept"
        );
        assert_eq!(outcome.reasons(), [Reason::SavepointHistoryTrimmed], "{kind}");
    });
}

/// The flood of a schedule the webhook did not judge: a periodic checkpoint due at every look
/// and more checkpoint resources than the platform keeps. The retention goes first, then the
/// snapshot is taken at the next look.
#[test]
fn a_snapshot_due_at_every_look_does_not_keep_the_platform_caps_from_holding() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let checkpoint = |name: &str, ago_ms: i64| JobSnapshot {
            kind: SnapshotType::Checkpoint,
            ..resource(
                name,
                SnapshotTriggerType::Periodic,
                SnapshotState::Completed,
                ago_ms,
            )
        };
        let flood = Look {
            policy: Policy {
                periodic_checkpoint: Some(Schedule::Every(1)),
                checkpoints_retained: 1_000_000,
                snapshot_max_count: 2,
                ..Policy::default()
            },
            started_ago: 2 * HOUR,
            snapshots: vec![
                checkpoint("c1", 40_000),
                checkpoint("c2", 30_000),
                checkpoint("c3", 20_000),
            ],
            ..with_resources(FlinkJobState::Running)
        };
        let (outcome, _) = decide(&job, &json!({}), Some(&stored), &flood, false);
        // Trimmed and asked for in the same pass: the retention does not wait for a look
        // without a due snapshot, nor the snapshot for one without a trim.
        assert_eq!(
            outcome.job.first(),
            Some(&JobAction::DeleteSnapshot {
                name: "c1".into(),
                keep_files: false
            }),
            "{kind}"
        );
        assert!(
            matches!(outcome.job.get(1), Some(JobAction::CreateSnapshot(new)) if new.kind == SnapshotType::Checkpoint),
            "{kind}: {outcome:?}"
        );
        assert_eq!(outcome.job.len(), 2, "{kind}: {outcome:?}");
        assert_eq!(
            outcome.reasons(),
            [Reason::SavepointHistoryTrimmed, Reason::CheckpointTriggered],
            "{kind}"
        );
        // Within the cap, the due checkpoint is asked for.
        let within = Look {
            snapshots: flood.snapshots[1..].to_vec(),
            ..flood.clone()
        };
        let (outcome, _) = decide(&job, &json!({}), Some(&stored), &within, false);
        assert!(
            outcome
                .job
                .iter()
                .all(|a| !matches!(a, JobAction::DeleteSnapshot { .. })),
            "{kind}: {outcome:?}"
        );
        assert_eq!(outcome.reasons(), [Reason::CheckpointTriggered], "{kind}");
    });
}

#[path = "scenarios/revisions.rs"]
mod revisions;

#[path = "scenarios/steps.rs"]
mod steps;

#[path = "scenarios/restores.rs"]
mod restores;

#[path = "scenarios/retention.rs"]
mod retention;

#[path = "scenarios/snapshots.rs"]
mod snapshots;

#[path = "scenarios/rescale.rs"]
mod rescale;

#[path = "scenarios/recorded_times.rs"]
mod recorded_times;
