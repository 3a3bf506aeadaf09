//! Reading the world of one FlinkStateSnapshot: its job resource and that job's cluster from
//! the shared caches, and, only while there is something to ask, the JobManager: the
//! operation under the recorded trigger id, a completed checkpoint's details, a disposal.
//! A snapshot waiting for its back-off or settled costs no call.

use std::{collections::BTreeMap, sync::Arc};

use flink_operator_api::{
    FlinkDeployment, FlinkStateSnapshot, FlinkStateSnapshotState as State, JobKind,
    JobManagerDeploymentStatus, JobStatus, SnapshotType,
    keys::{self, flink::SAVEPOINT_DIR_KEYS},
    validation::{SnapshotTarget, snapshot as rules},
};
use kube::ResourceExt;

use super::decide::{CheckpointPath, Job, Observation, Target};
use crate::{
    caches::Caches,
    context::{Context, RestLook},
    flink::{
        FlinkError, FlinkRestClient, JobId, TriggerId,
        poll::{self, SavepointPoll},
    },
    lifecycle::protected,
    policy::Policy,
};

/// The observation, and the REST address of the job's cluster when it was asked (for act).
pub struct Observed {
    pub observation: Observation,
    pub rest_url: Option<String>,
}

pub async fn observe(ctx: &Context, caches: &Caches, snapshot: &FlinkStateSnapshot) -> Observed {
    let namespace = snapshot.namespace().unwrap_or_default();
    let status = snapshot.status.as_ref();
    let state = flink_operator_api::FlinkStateSnapshotState::of(status);
    let (target, config, cluster) = target(ctx, caches, snapshot, &namespace);
    // Whether the job exists is decided from the cache (gone: abandoned), not by the rule
    // that refuses a new snapshot of a missing job.
    let violations = if state == State::TriggerPending && snapshot.metadata.deletion_timestamp.is_none() {
        ctx.validation()
            .operator_namespace_violation(&namespace)
            .into_iter()
            .chain(rules::validate(
                snapshot,
                None,
                &namespace,
                &SnapshotTarget::NotNeeded,
            ))
            .map(|v| v.to_string())
            .collect()
    } else {
        Vec::new()
    };
    let uid = snapshot.uid().unwrap_or_default();
    let mut observation = Observation {
        target,
        violations,
        policy: Policy::from_config(&config),
        fresh_trigger_id: TriggerId::random().as_str().to_owned(),
        now_ms: k8s_openapi::jiff::Timestamp::now().as_millisecond(),
        ..Default::default()
    };
    let deleting = snapshot.metadata.deletion_timestamp.is_some();
    let trigger_id = status.and_then(|s| s.trigger_id.as_deref()).map(TriggerId::from);
    let follow = trigger_id.filter(|_| state == State::InProgress);
    let ours = snapshot
        .finalizers()
        .iter()
        .any(|f| f == keys::finalizers::FLINK_STATE_SNAPSHOT);
    let dispose = deleting
        && ours
        && state == State::Completed
        && snapshot.spec.disposes_on_deletion()
        && status
            .and_then(|s| s.path.as_deref())
            .is_some_and(|p| !p.is_empty());
    let disposal_trigger = snapshot
        .annotations()
        .get(super::DISPOSAL_TRIGGER_ID)
        .filter(|id| !id.is_empty())
        .map(|id| TriggerId::from(id.as_str()));
    // Who may still need the path, asked once per deletion (before its disposal starts)
    // of the job resources of this namespace only.
    if dispose && disposal_trigger.is_none() {
        let path = status.and_then(|s| s.path.as_deref()).unwrap_or_default();
        observation.needed_by = needed_by(caches, &namespace, path);
        let snapshots = caches.snapshots.list(&namespace, |_| true);
        let own = snapshot.name_any();
        (observation.needed_by).extend(protected::recorded_elsewhere(path, &own, &snapshots));
    }
    let (job_id, ready) = match &observation.target {
        Target::Found(job) => (
            job.job_id.as_deref().map(JobId::from),
            job.cluster_not_ready.is_none(),
        ),
        _ => (None, false),
    };
    // The cluster's REST address: to trigger (resolving it sends no request), to follow
    // the operation, to dispose of the savepoint.
    let triggering = state == State::TriggerPending && !deleting;
    let Some(cluster) = cluster.filter(|_| ready && (triggering || follow.is_some() || dispose)) else {
        return Observed {
            observation,
            rest_url: None,
        };
    };
    let rest = match rest_client(ctx, snapshot, &cluster).await {
        Ok(rest) => rest,
        Err(error) => {
            let unreachable = Some(SavepointPoll::Unreachable(error.to_string()));
            if dispose {
                observation.disposal = unreachable;
            } else {
                observation.operation = unreachable;
            }
            observation.unanswered_again = ctx.unanswered_again(&uid, RestLook::Unanswered);
            return Observed {
                observation,
                rest_url: None,
            };
        }
    };
    let mut answered = true;
    if let (true, Some(job_id)) = (triggering, &job_id) {
        let job = crate::flink::job::observe(&rest, job_id, true).await;
        answered &= !matches!(job, crate::flink::job::JobObservation::Unreachable(_));
        observation.tasks_running = Some(job.ready_for_savepoint());
    }
    if let (Some(trigger), Some(job_id)) = (&follow, &job_id) {
        let operation = match snapshot.spec.snapshot_type() {
            Some(SnapshotType::Checkpoint) => poll::checkpoint_by_trigger(&rest, job_id, trigger).await,
            _ => poll::savepoint_by_trigger(&rest, job_id, trigger).await,
        };
        if let (Some(SnapshotType::Checkpoint), SavepointPoll::Completed(id)) =
            (snapshot.spec.snapshot_type(), &operation)
        {
            observation.checkpoint_path = Some(checkpoint_path(&rest, job_id, id).await);
        }
        answered &= !matches!(operation, SavepointPoll::Unreachable(_));
        observation.operation = Some(operation);
    }
    // A disposal not started yet (no recorded trigger id) has nothing to poll.
    if let Some(trigger) = disposal_trigger.filter(|_| dispose) {
        let disposal = poll::disposal_by_trigger(&rest, &trigger).await;
        answered &= !matches!(disposal, SavepointPoll::Unreachable(_));
        observation.disposal = Some(disposal);
    }
    observation.unanswered_again = ctx.unanswered_again(&uid, RestLook::of(answered, &rest));
    Observed {
        observation,
        rest_url: Some(rest.base_url().to_owned()),
    }
}

/// Who among the job resources of `namespace` may still need `path` (see
/// [`protected::who_needs`]): every job of the namespace, not only the snapshot's own,
/// since a job may have been started from a path another job's snapshot recorded.
fn needed_by(caches: &Caches, namespace: &str, path: &str) -> Vec<String> {
    let looked = protected::NeededBy::look_up(caches, namespace, [path]);
    looked.of(path).map(<[String]>::to_vec).unwrap_or_default()
}

async fn rest_client(
    ctx: &Context,
    snapshot: &FlinkStateSnapshot,
    cluster: &FlinkDeployment,
) -> Result<FlinkRestClient, String> {
    let url = ctx.rest_url(cluster).await.map_err(|e| e.to_string())?;
    super::act::client(ctx, snapshot, &url).map_err(|e| e.to_string())
}

/// The path of the completed checkpoint `id` (as the operation reported it), from its
/// details.
async fn checkpoint_path(rest: &FlinkRestClient, job_id: &JobId, id: &str) -> CheckpointPath {
    let Ok(number) = id.parse::<u64>() else {
        return CheckpointPath::Forgotten(format!("the checkpoint id {id:?} is not a number"));
    };
    match rest.checkpoint_details(job_id, number).await {
        Ok(details) => match details.external_path {
            Some(path) => CheckpointPath::Found(path),
            None => CheckpointPath::Forgotten(format!("checkpoint {number} has no external path")),
        },
        Err(FlinkError::NotFound { message, .. }) => CheckpointPath::Forgotten(message),
        Err(error) => CheckpointPath::Unavailable(error.to_string()),
    }
}

/// The job resource the snapshot refers to, the configuration that job runs with (for the
/// savepoint directory and the loop's intervals), and the FlinkDeployment whose JobManager
/// its REST calls go to.
fn target(
    ctx: &Context,
    caches: &Caches,
    snapshot: &FlinkStateSnapshot,
    namespace: &str,
) -> (Target, BTreeMap<String, String>, Option<Arc<FlinkDeployment>>) {
    let operator = || ctx.validation().operator_settings(namespace);
    let reference = snapshot.spec.job_reference.as_ref();
    let (Some(kind), Some(name)) = (
        reference.and_then(|r| r.kind),
        reference.and_then(|r| r.name.clone()).filter(|n| !n.is_empty()),
    ) else {
        return (Target::Unreferenced, operator(), None);
    };
    let gone = |what: String| (Target::Gone(what), operator(), None);
    match kind {
        JobKind::FlinkDeployment => {
            let Some(fd) = caches.deployments.get(namespace, &name) else {
                return gone(format!("FlinkDeployment {namespace}/{name} was not found"));
            };
            if fd.spec.job.is_none() {
                return gone(format!(
                    "FlinkDeployment {namespace}/{name} is a session cluster, which runs no job of its own"
                ));
            }
            let config = ctx.effective_config(&fd);
            let job = job(
                format!("FlinkDeployment {name}"),
                fd.status.as_ref().and_then(|s| s.job_status.as_ref()),
                &fd,
                &config,
            );
            (Target::Found(job), config, Some(fd))
        }
        JobKind::FlinkSessionJob => {
            let Some(sj) = caches.session_jobs.get(namespace, &name) else {
                return gone(format!("FlinkSessionJob {namespace}/{name} was not found"));
            };
            let session_name = sj.spec.deployment_name.clone().unwrap_or_default();
            let Some(session) = caches.deployments.get(namespace, &session_name) else {
                return gone(format!(
                    "the session cluster FlinkDeployment {namespace}/{session_name} of FlinkSessionJob {name} was not found"
                ));
            };
            let config = ctx.session_job_config(&sj, Some(&*session));
            let job = job(
                format!("FlinkSessionJob {name}"),
                sj.status.as_ref().and_then(|s| s.job_status.as_ref()),
                &session,
                &config,
            );
            (Target::Found(job), config, Some(session))
        }
    }
}

fn job(
    name: String,
    status: Option<&JobStatus>,
    cluster: &FlinkDeployment,
    config: &BTreeMap<String, String>,
) -> Job {
    let jm = cluster
        .status
        .as_ref()
        .and_then(|s| s.job_manager_deployment_status)
        .unwrap_or_default();
    Job {
        name,
        job_id: status.and_then(|s| s.job_id.clone()),
        state: status.and_then(|s| s.state.clone()),
        cluster_not_ready: (jm != JobManagerDeploymentStatus::Ready).then(|| {
            format!(
                "the JobManager of FlinkDeployment {} is {}",
                cluster.name_any(),
                jm.as_str()
            )
        }),
        savepoint_dir: SAVEPOINT_DIR_KEYS
            .iter()
            .find_map(|key| config.get(*key))
            .filter(|dir| !dir.trim().is_empty())
            .cloned(),
    }
}
