//! Carrying out a plan: idempotent writes (server-side apply, deletes that accept 404).

use flink_operator_api::{FlinkDeployment, keys};
use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams},
};
use serde_json::json;

use super::decide::Action;
use crate::{
    context::Context,
    flink::{FlinkRestClient, JobId, SavepointFormat, TriggerId},
    resources::{
        cluster::{self, ClusterError},
        flink_config::{self, DeployParameters},
    },
};

const MANAGER: &str = "flink-operator";

#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error("building the cluster of {name}: {source}")]
    Build { name: String, source: ClusterError },
    #[error("{what}: {source}")]
    Api { what: String, source: kube::Error },
    #[error("{0}")]
    Flink(String),
}

fn api_error(what: impl Into<String>) -> impl FnOnce(kube::Error) -> ActError {
    let what = what.into();
    move |source| ActError::Api { what, source }
}

pub async fn act(ctx: &Context, fd: &FlinkDeployment, action: &Action) -> Result<(), ActError> {
    match action {
        Action::AddFinalizer | Action::RemoveFinalizer => {
            let finalizers = fd.finalizers();
            let ours = keys::finalizers::FLINK_DEPLOYMENT;
            // JSON Patch: other writers' finalizers are left alone, and a removal first
            // tests that the entry is still ours.
            let add = *action == Action::AddFinalizer;
            let operations = match (add, finalizers.iter().position(|f| f == ours)) {
                (true, Some(_)) | (false, None) => return Ok(()),
                (true, None) if finalizers.is_empty() => {
                    json!([{"op": "add", "path": "/metadata/finalizers", "value": [ours]}])
                }
                (true, None) => json!([{"op": "add", "path": "/metadata/finalizers/-", "value": ours}]),
                (false, Some(i)) => json!([
                    {"op": "test", "path": format!("/metadata/finalizers/{i}"), "value": ours},
                    {"op": "remove", "path": format!("/metadata/finalizers/{i}")},
                ]),
            };
            let patch: json_patch::Patch = serde_json::from_value(operations)
                .map_err(|e| ActError::Flink(format!("building the finalizer patch: {e}")))?;
            let api: Api<FlinkDeployment> =
                Api::namespaced(ctx.client.clone(), &fd.namespace().unwrap_or_default());
            api.patch(&fd.name_any(), &PatchParams::default(), &Patch::Json::<()>(patch))
                .await
                .map_err(api_error("updating the finalizer"))?;
            Ok(())
        }
        Action::Deploy { restore_path, job_id } => {
            deploy(ctx, fd, restore_path.clone(), job_id.clone()).await
        }
        Action::DeleteCluster => delete_cluster(ctx, fd).await,
        Action::StopWithSavepoint { job_id, trigger_id } => {
            let namespace = fd.namespace().unwrap_or_default();
            let url = ctx
                .rest_endpoints
                .base_url(&namespace, &format!("{}-rest", fd.name_any()), ctx.rest_port(fd))
                .await
                .map_err(|e| ActError::Flink(e.to_string()))?;
            let rest = FlinkRestClient::new(&url, ctx.rest_client_config.clone())
                .map_err(|e| ActError::Flink(e.to_string()))?;
            rest.stop_with_savepoint_as(
                &JobId::from(job_id.as_str()),
                &TriggerId::from(trigger_id.as_str()),
                None,
                false,
                SavepointFormat::Canonical,
            )
            .await
            .map_err(|e| ActError::Flink(format!("stop-with-savepoint of job {job_id}: {e}")))?;
            Ok(())
        }
    }
}

async fn deploy(
    ctx: &Context,
    fd: &FlinkDeployment,
    restore_path: Option<String>,
    job_id: Option<String>,
) -> Result<(), ActError> {
    let name = fd.name_any();
    let namespace = fd.namespace().unwrap_or_default();
    let effective = ctx.effective_config(fd);
    let merge_by_name = effective
        .get("kubernetes.operator.pod-template.merge-arrays-by-name")
        .is_some_and(|v| v == "true");
    let deploy = DeployParameters {
        restore_path,
        job_id,
        owner_uid: fd.uid(),
    };
    let build_error = |source: ClusterError| ActError::Build {
        name: name.clone(),
        source,
    };
    let config = flink_config::build(fd, &effective, &deploy).map_err(|e| build_error(e.into()))?;
    let params = PatchParams::apply(MANAGER).force();
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let first = cluster::build(fd, &config, merge_by_name, None).map_err(build_error)?;
    let jm = deployments
        .patch(&name, &params, &Patch::Apply(&first.job_manager))
        .await
        .map_err(api_error(format!("applying Deployment {namespace}/{name}")))?;
    let objects =
        cluster::build(fd, &config, merge_by_name, jm.metadata.uid.as_deref()).map_err(build_error)?;
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    for cm in &objects.config_maps {
        let cm_name = cm.name_any();
        config_maps
            .patch(&cm_name, &params, &Patch::Apply(cm))
            .await
            .map_err(api_error(format!("applying ConfigMap {namespace}/{cm_name}")))?;
    }
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(ctx.client.clone(), &namespace);
    for service in &objects.services {
        let service_name = service.name_any();
        services
            .patch(&service_name, &params, &Patch::Apply(service))
            .await
            .map_err(api_error(format!("applying Service {namespace}/{service_name}")))?;
    }
    if let Some(tm) = &objects.task_manager {
        let tm_name = tm.name_any();
        deployments
            .patch(&tm_name, &params, &Patch::Apply(tm))
            .await
            .map_err(api_error(format!("applying Deployment {namespace}/{tm_name}")))?;
    }
    Ok(())
}

/// Deletes the JobManager and TaskManager Deployments (what they own goes with them) and
/// the cluster's HA ConfigMaps, keeping the autoscaler's.
async fn delete_cluster(ctx: &Context, fd: &FlinkDeployment) -> Result<(), ActError> {
    let name = fd.name_any();
    let namespace = fd.namespace().unwrap_or_default();
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    for deployment in [name.clone(), format!("{name}-taskmanager")] {
        match deployments.delete(&deployment, &DeleteParams::foreground()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(api_error(format!("deleting Deployment {namespace}/{deployment}"))(e)),
        }
    }
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let selector = format!(
        "app={name},type={},component!=autoscaler",
        keys::labels::TYPE_NATIVE
    );
    let ha = config_maps
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(api_error("listing HA ConfigMaps"))?;
    for cm in ha.items {
        let cm_name = cm.name_any();
        match config_maps.delete(&cm_name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(api_error(format!("deleting ConfigMap {namespace}/{cm_name}"))(e)),
        }
    }
    Ok(())
}
