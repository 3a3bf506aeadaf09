//! An application FlinkDeployment in the model: observed as `deployment::observe` reads it
//! (its cluster's Deployments and JobManager pods, the job over REST, its Kubernetes HA
//! ConfigMaps), decided by the real `deployment::decide`, its actions carried out on the
//! simulated application cluster ([`super::cluster`]).

use std::{collections::BTreeMap, sync::Arc};

use flink_operator_api::{
    FlinkDeployment, FlinkDeploymentSpec, FlinkDeploymentStatus, JobKind, JobManagerDeploymentStatus,
    common::UpgradeMode, keys, validation::ValidationContext,
};
use k8s_openapi::api::apps::v1::ControllerRevision;
use serde_json::{Value, json};

use super::{
    cluster::{Deployment, JobManager},
    flink::Refused,
    world::{CHECKPOINT_DIR, Effect, Kind, NAME, World, recorded_paths, recorded_stateless},
};
use crate::{
    deployment::{
        decide::{self as fd, Action, JobManagerObservation, StateObservation},
        ha_checkpoint,
    },
    flink::job::JobObservation,
    flink::poll::CheckpointLookup,
    lifecycle::{Plan, retention::OnCancel},
    policy::Policy,
};

impl Kind for FlinkDeployment {
    type Spec = FlinkDeploymentSpec;
    type Status = FlinkDeploymentStatus;
    type Action = Action;
    const KIND: JobKind = JobKind::FlinkDeployment;
    const FINALIZER: &'static str = keys::finalizers::FLINK_DEPLOYMENT;

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
        json!({
            "image": "flink:1.20", "flinkVersion": "v1_20", "serviceAccount": "flink",
            "flinkConfiguration": config, "job": job,
            "jobManager": {"resource": {"memory": "1g", "cpu": 1}},
            "taskManager": {"resource": {"memory": "1g", "cpu": 1}},
        })
    }

    fn plan(world: &mut World<Self>, read: &Self, unreachable: bool) -> Plan<Self::Status, Action> {
        let observation = observe(world, read, unreachable);
        fd::decide(read, &observation)
    }

    fn act(
        world: &mut World<Self>,
        read: &Self,
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
            Action::Deploy {
                restore_path,
                job_id,
                last_state,
                spec,
                deployed_at_ms,
            } => {
                // A rollback deploys the last stable spec, under the resource's own name.
                let deployed = spec.as_deref().unwrap_or(&read.spec);
                let config = configuration(deployed);
                let generation = read.metadata.generation;
                effects.extend(
                    world.app.deploy(Deployment {
                        job_id: job_id.clone().unwrap_or_default(),
                        restore: restore_path.clone(),
                        last_state: *last_state,
                        ha: Policy::from_config(&config).high_availability,
                        retained: config
                            .get(keys::flink::CHECKPOINTING_EXTERNALIZED_RETENTION)
                            .is_none_or(|v| v != "DELETE_ON_CANCELLATION"),
                        stateless: recorded_stateless(written),
                        generation,
                        rolled_back_generation: spec.is_some().then_some(generation).flatten(),
                        deployed_at_ms: *deployed_at_ms,
                        recorded: written
                            .reconciliation_status
                            .as_ref()
                            .and_then(|r| r.last_reconciled_spec.clone()),
                    }),
                );
                Ok(())
            }
            Action::DeleteCluster { .. } => {
                let ha_pointer = world.app.ha.as_ref().and_then(|ha| ha.pointer());
                if world.app.delete_cluster() {
                    effects.push(Effect::ClusterDeleted {
                        recorded: recorded_paths(written),
                        ha_pointer,
                    });
                }
                Ok(())
            }
            Action::DeleteHaMetadata => {
                let pointer = world.app.delete_ha();
                let recorded = world.object().map(|_| recorded_paths(&world.stored_status()));
                effects.push(Effect::HaDeleted { pointer, recorded });
                Ok(())
            }
            Action::Job(job) => world.act_on_job(job, written, effects, known),
            Action::ScaleTaskManagers { .. } | Action::Ingress(_) => Ok(()),
        }
    }

    fn removes_finalizer(action: &Action) -> bool {
        matches!(action, Action::RemoveFinalizer)
    }

    fn cluster_not_ready(world: &World<Self>) -> Option<String> {
        let jm = (world.object())
            .and_then(|o| o.status.as_ref())
            .and_then(|s| s.job_manager_deployment_status)
            .unwrap_or_default();
        (jm != JobManagerDeploymentStatus::Ready).then(|| format!("the JobManager is {}", jm.as_str()))
    }

    fn who_needs(path: &str, objects: Vec<Arc<Self>>, revisions: &[Arc<ControllerRevision>]) -> Vec<String> {
        crate::lifecycle::protected::who_needs(path, &objects, &[], &[], revisions)
    }
}

fn configuration(spec: &FlinkDeploymentSpec) -> BTreeMap<String, String> {
    (spec.flink_configuration.as_ref())
        .map(|c| c.flattened())
        .unwrap_or_default()
}

/// What the operator's observe reads (deployment::observe with Kubernetes HA).
fn observe(world: &mut World<FlinkDeployment>, fd: &FlinkDeployment, unreachable: bool) -> fd::Observation {
    let config = configuration(&fd.spec);
    let policy = Policy::from_config(&config).with_flink_version(fd.spec.flink_version);
    let cluster = world.app.cluster.clone();
    let deployed = cluster.as_ref().filter(|c| c.deployed);
    let status = fd.status.as_ref();
    let job_status = status.and_then(|s| s.job_status.as_ref());
    let stateful =
        (fd.spec.job.as_ref()).is_some_and(|j| j.upgrade_mode_or_default() != UpgradeMode::Stateless);
    let mut observation = fd::Observation {
        cluster_exists: deployed.is_some(),
        // Deleted in the background: a deleted Deployment is gone at once.
        cluster_deleting: false,
        job_manager_pods_left: cluster.is_some(),
        deployed_generation: deployed.and_then(|c| c.generation),
        rolled_back_generation: deployed.and_then(|c| c.rolled_back_generation),
        deployed_at_ms: deployed.map(|c| c.deployed_at_ms),
        snapshots: world.job_snapshots(&policy, created_ms(fd)),
        revisions: Some(world.revisions.clone()),
        violations: flink_operator_api::validation::deployment::validate(
            fd,
            None,
            &ValidationContext::default(),
        )
        .into_iter()
        .map(|v| v.to_string())
        .collect(),
        fresh_trigger_id: world.fresh_trigger(),
        fresh_job_id: world.fresh_job_id(),
        now_ms: world.flink.now_ms,
        rest_port: 8081,
        ..Default::default()
    };
    let mut answered = true;
    if let Some(cluster) = deployed {
        let up = cluster.job_manager == JobManager::Up;
        let rest_ready = up && !unreachable;
        observation.job_manager = JobManagerObservation::Present {
            ready: i32::from(up),
            replicas: 1,
            problem: match &cluster.job_manager {
                JobManager::CrashLoop(why) => Some(format!(
                    "JobManager pod {NAME}-0 container flink-main-container: CrashLoopBackOff: {why}"
                )),
                _ => None,
            },
            rest_ready,
        };
        answered = rest_ready || !up;
        if up && !rest_ready {
            observation.job = Some(JobObservation::Unreachable("timed out".into()));
        } else if rest_ready && fd.spec.job.is_some() {
            match job_status.and_then(|j| Some((j, j.job_id.as_deref()?))) {
                None => observation.job = Some(JobObservation::NotFound),
                Some((job_status, job_id)) => {
                    let look = world.look(job_status, job_id, true);
                    let live = matches!(&look.job, JobObservation::Found { state, .. } if !state.is_globally_terminal());
                    observation.latest_checkpoint = match (&look.job, look.latest_checkpoint) {
                        (
                            JobObservation::Found { .. },
                            Some(CheckpointLookup::Found {
                                path,
                                timestamp_ms: Some(timestamp_ms),
                            }),
                        ) => Some(StateObservation { path, timestamp_ms }),
                        _ => None,
                    };
                    observation.job = Some(look.job);
                    observation.savepoint = look.savepoint;
                    observation.checkpoint = look.checkpoint;
                    observation.late_savepoint = look.late_savepoint;
                    if live
                        && crate::lifecycle::retention::wanted(
                            stateful,
                            fd.metadata.generation,
                            status.and_then(|s| s.observed_generation),
                            &policy,
                        )
                    {
                        observation.on_cancel = match look.retained {
                            Some(true) => OnCancel::Retained,
                            _ => OnCancel::Deleted("they are deleted on cancellation".into()),
                        };
                    }
                }
            }
        }
    }
    observation.unanswered_before = world.unanswered && !answered;
    world.unanswered = !answered;
    let maps = world
        .app
        .ha
        .as_ref()
        .map(|ha| ha.config_maps())
        .unwrap_or_default();
    observation.ha_metadata = !maps.is_empty();
    if policy.high_availability && fd.spec.job.is_some() {
        let holds = (maps.iter()).any(|(_, keys)| keys.iter().any(|k| k.starts_with("checkpointID-")));
        observation.ha_checkpoint = Some(holds);
    }
    if fd.metadata.deletion_timestamp.is_some()
        && fd.spec.job.is_some()
        && cluster.is_none()
        && observation.ha_metadata
    {
        let filed = ha_checkpoint::in_config_maps(
            NAME,
            maps.iter()
                .map(|(name, keys)| (name.as_str(), keys.iter().map(String::as_str))),
        );
        let job_id = job_status.and_then(|j| j.job_id.as_deref());
        observation.ha_latest_checkpoint = ha_checkpoint::path(filed, job_id, Some(CHECKPOINT_DIR));
    }
    observation.history_needed_by = world.history_needed_by(fd, &observation.snapshots, &policy);
    observation.policy = policy;
    observation
}

fn created_ms(fd: &FlinkDeployment) -> i64 {
    (fd.metadata.creation_timestamp.as_ref()).map_or(0, |t| t.0.as_millisecond())
}
