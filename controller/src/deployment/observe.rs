//! Reading the world of one FlinkDeployment: its JobManager Deployment and pods, and its
//! job through the Flink REST API.

use flink_operator_api::{FlinkDeployment, validation::ValidationContext};
use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
use kube::{Api, ResourceExt, api::ListParams};

use super::decide::{JobManagerObservation, JobObservation, Observation, SavepointPoll};
use crate::{
    context::Context,
    flink::{FlinkError, FlinkRestClient, JobId, OperationStatus, TriggerId},
};

pub async fn observe(ctx: &Context, fd: &FlinkDeployment) -> Result<Observation, kube::Error> {
    let namespace = fd.namespace().unwrap_or_default();
    let name = fd.name_any();
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let jm = deployments.get_opt(&name).await?;
    let tm = deployments.get_opt(&format!("{name}-taskmanager")).await?;
    let cluster_exists = jm.is_some() || tm.is_some();

    let mut job_manager = JobManagerObservation::Missing;
    let mut job = None;
    let mut savepoint = None;
    let deployed_generation = jm
        .as_ref()
        .and_then(|d| d.metadata.annotations.as_ref())
        .and_then(|a| a.get(flink_operator_api::keys::annotations::DEPLOYMENT_GENERATION))
        .and_then(|g| g.parse().ok());
    if let Some(jm) = &jm {
        let status = jm.status.clone().unwrap_or_default();
        let replicas = jm.spec.replicas.unwrap_or(1);
        let ready = status.ready_replicas.unwrap_or(0);
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
        let selector = format!("app={name},component=jobmanager");
        let pods = pods.list(&ListParams::default().labels(&selector)).await?;
        let problem = pods.items.iter().find_map(pod_problem);
        let mut rest_ready = false;
        if ready > 0 {
            let port = ctx.rest_port(fd);
            match ctx
                .rest_endpoints
                .base_url(&namespace, &format!("{name}-rest"), port)
                .await
            {
                Ok(url) => match FlinkRestClient::new(&url, ctx.rest_client_config.clone()) {
                    Ok(rest) => {
                        let (answered, found) = observe_job(&rest, fd).await;
                        rest_ready = answered;
                        job = found;
                        savepoint = poll_upgrade_savepoint(&rest, fd).await;
                    }
                    Err(e) => job = Some(JobObservation::Unreachable(e.to_string())),
                },
                Err(e) => job = Some(JobObservation::Unreachable(e.to_string())),
            }
        }
        job_manager = JobManagerObservation::Present {
            ready,
            replicas,
            problem,
            rest_ready,
        };
    }

    let violations = flink_operator_api::validation::deployment::validate(
        fd,
        None,
        &ValidationContext::new(ctx.operator_config.clone()),
    )
    .into_iter()
    .map(|v| v.to_string())
    .collect();
    Ok(Observation {
        job_manager,
        cluster_exists,
        job,
        violations,
        deployed_generation,
        savepoint,
        fresh_trigger_id: TriggerId::random().as_str().to_owned(),
        fresh_job_id: JobId::random().as_str().to_owned(),
        now_ms: k8s_openapi::jiff::Timestamp::now().as_millisecond(),
    })
}

/// Whether the REST API answered, and the job (for application deployments).
async fn observe_job(rest: &FlinkRestClient, fd: &FlinkDeployment) -> (bool, Option<JobObservation>) {
    if fd.spec.job.is_none() {
        return match rest.cluster_overview().await {
            Ok(_) => (true, None),
            Err(e) => (false, Some(JobObservation::Unreachable(e.to_string()))),
        };
    }
    let wanted = fd
        .status
        .as_ref()
        .and_then(|s| s.job_status.as_ref())
        .and_then(|j| j.job_id.clone());
    match rest.jobs_overview().await {
        Ok(jobs) => {
            let found = jobs
                .into_iter()
                .find(|j| Some(j.jid.as_str()) == wanted.as_deref());
            let observation = match found {
                Some(job) => JobObservation::Found {
                    state: job.state,
                    start_time: job.start_time,
                },
                None => JobObservation::NotFound,
            };
            (true, Some(observation))
        }
        Err(FlinkError::NotFound { .. }) => (true, Some(JobObservation::NotFound)),
        Err(e) => (false, Some(JobObservation::Unreachable(e.to_string()))),
    }
}

/// The pending upgrade savepoint, by the trigger id recorded in status.
async fn poll_upgrade_savepoint(rest: &FlinkRestClient, fd: &FlinkDeployment) -> Option<SavepointPoll> {
    let job_status = fd.status.as_ref()?.job_status.as_ref()?;
    let info = job_status.savepoint_info.as_ref()?;
    if info.trigger_type != Some(flink_operator_api::SnapshotTriggerType::Upgrade) {
        return None;
    }
    let trigger = TriggerId::from(info.trigger_id.as_deref()?);
    let job = JobId::from(job_status.job_id.as_deref()?);
    Some(match rest.savepoint_status(&job, &trigger).await {
        Ok(OperationStatus::InProgress) => SavepointPoll::InProgress,
        Ok(OperationStatus::Completed(path)) => SavepointPoll::Completed(path),
        Ok(OperationStatus::Failed(failure)) => SavepointPoll::Failed(failure.message),
        Ok(OperationStatus::JobNotFound(reason)) => SavepointPoll::JobGone(reason),
        Ok(OperationStatus::UnknownTrigger(_)) => SavepointPoll::UnknownTrigger,
        Err(e) => SavepointPoll::Unreachable(e.to_string()),
    })
}

/// A crash loop or an image error of a JobManager pod, in words.
fn pod_problem(pod: &Pod) -> Option<String> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    statuses.iter().find_map(|c| {
        let waiting = c.state.as_ref()?.waiting.as_ref()?;
        let reason = waiting.reason.as_deref()?;
        let known = [
            "CrashLoopBackOff",
            "ErrImagePull",
            "ImagePullBackOff",
            "InvalidImageName",
            "CreateContainerConfigError",
            "CreateContainerError",
        ];
        known.contains(&reason).then(|| {
            let message = waiting.message.clone().unwrap_or_default();
            format!(
                "JobManager pod {} container {}: {reason} {message}",
                pod.name_any(),
                c.name
            )
            .trim()
            .to_owned()
        })
    })
}
