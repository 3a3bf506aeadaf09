//! A FlinkSessionJob in the model: observed as `session_job::observe` reads it (its session
//! cluster always ready), decided by the real `session_job::decide`, its actions carried out
//! on the simulated session cluster.

use std::{collections::BTreeMap, sync::Arc};

use flink_operator_api::{FlinkSessionJob, FlinkSessionJobSpec, FlinkSessionJobStatus, JobKind, keys};
use k8s_openapi::api::apps::v1::ControllerRevision;
use serde_json::{Value, json};

use super::{
    flink::Refused,
    world::{Effect, Kind, World, recorded_stateless},
};
use crate::{
    lifecycle::{Plan, retention::OnCancel},
    policy::Policy,
    session_job::decide::{self as sj, Action, SessionObservation},
};

impl Kind for FlinkSessionJob {
    type Spec = FlinkSessionJobSpec;
    type Status = FlinkSessionJobStatus;
    type Action = Action;
    const KIND: JobKind = JobKind::FlinkSessionJob;
    const FINALIZER: &'static str = keys::finalizers::FLINK_SESSION_JOB;

    fn spec(&self) -> &Self::Spec {
        &self.spec
    }

    fn spec_mut(&mut self) -> &mut Self::Spec {
        &mut self.spec
    }

    fn status(&self) -> Option<&Self::Status> {
        self.status.as_ref()
    }

    fn status_mut(&mut self) -> &mut Option<Self::Status> {
        &mut self.status
    }

    fn new_spec(job: Value, config: Value) -> Value {
        json!({"deploymentName": "session", "flinkConfiguration": config, "job": job})
    }

    fn plan(world: &mut World<Self>, read: &Self, unreachable: bool) -> Plan<Self::Status, Action> {
        let observation = observe(world, read, unreachable);
        sj::decide(read, &observation)
    }

    fn act(
        world: &mut World<Self>,
        _read: &Self,
        known: &mut Option<String>,
        action: &Action,
        written: &Self::Status,
        effects: &mut Vec<Effect>,
    ) -> Result<(), Refused> {
        match action {
            Action::AddFinalizer => {
                world.add_finalizer();
                Ok(())
            }
            Action::RemoveFinalizer => world.remove_finalizer(known.as_deref(), effects),
            Action::Fetch(_) => Ok(()),
            Action::Submit(submission) => {
                let retained = submission
                    .configuration
                    .get(keys::flink::CHECKPOINTING_EXTERNALIZED_RETENTION)
                    .is_none_or(|v| v != "DELETE_ON_CANCELLATION");
                let new = !world.flink.jobs.contains_key(&submission.job_id);
                let submitted =
                    (world.flink).submit(&submission.job_id, submission.restore_path.as_deref(), retained);
                if let (Err(_), Some(path)) = (&submitted, &submission.restore_path) {
                    effects.push(Effect::SubmittedFromMissing {
                        job_id: submission.job_id.clone(),
                        path: path.clone(),
                        removed: world.flink.why_missing(path),
                        users_own: world.users_own(path),
                    });
                }
                submitted?;
                if new {
                    effects.push(Effect::Started {
                        job_id: submission.job_id.clone(),
                        restore: submission.restore_path.clone(),
                        stateless: recorded_stateless(written),
                        rolling_back: world.rolling_back(),
                    });
                }
                Ok(())
            }
            Action::Job(job) => world.act_on_job(job, written, effects, known),
        }
    }

    fn removes_finalizer(action: &Action) -> bool {
        matches!(action, Action::RemoveFinalizer)
    }

    fn cluster_not_ready(_world: &World<Self>) -> Option<String> {
        None
    }

    fn who_needs(path: &str, objects: Vec<Arc<Self>>, revisions: &[Arc<ControllerRevision>]) -> Vec<String> {
        crate::lifecycle::protected::who_needs(path, &[], &objects, &[], revisions)
    }
}

/// What the operator's observe reads (session_job::observe and flink::poll::look).
fn observe(world: &mut World<FlinkSessionJob>, sj: &FlinkSessionJob, unreachable: bool) -> sj::Observation {
    let config: BTreeMap<String, String> = (sj.spec.flink_configuration.as_ref())
        .map(|c| c.flattened())
        .unwrap_or_default();
    let policy = Policy::from_config(&config);
    let created_ms = (sj.metadata.creation_timestamp.as_ref()).map_or(0, |t| t.0.as_millisecond());
    let snapshots = world.job_snapshots(&policy, created_ms);
    let mut observation = sj::Observation {
        session: SessionObservation::Ready,
        history_needed_by: world.history_needed_by(sj, &snapshots, &policy),
        snapshots,
        policy,
        revisions: None,
        fresh_trigger_id: world.fresh_trigger(),
        fresh_job_id: world.fresh_job_id(),
        now_ms: world.flink.now_ms,
        ..Default::default()
    };
    let Some(job_status) = sj.status.as_ref().and_then(|s| s.job_status.as_ref()) else {
        return observation;
    };
    let Some(job_id) = job_status.job_id.clone() else {
        return observation;
    };
    if unreachable {
        observation.job = Some(crate::flink::job::JobObservation::Unreachable("timed out".into()));
        return observation;
    }
    let stateful =
        sj.spec.job.as_ref().is_some_and(|j| {
            j.upgrade_mode_or_default() != flink_operator_api::common::UpgradeMode::Stateless
        });
    let look = world.look(job_status, &job_id, stateful);
    let live = matches!(&look.job, crate::flink::job::JobObservation::Found { state, .. }
        if !state.is_globally_terminal());
    observation.job = Some(look.job);
    observation.savepoint = look.savepoint;
    observation.manual_checkpoint = look.checkpoint;
    observation.checkpoint = look.latest_checkpoint;
    observation.late_savepoint = look.late_savepoint;
    if live
        && crate::lifecycle::retention::wanted(
            stateful,
            sj.metadata.generation,
            sj.status.as_ref().and_then(|s| s.observed_generation),
            &observation.policy,
        )
    {
        observation.on_cancel = match look.retained {
            Some(true) => OnCancel::Retained,
            _ => OnCancel::Deleted("they are deleted on cancellation".into()),
        };
    }
    observation
}
