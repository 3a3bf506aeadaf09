//! Carrying out a plan: idempotent writes (server-side apply, deletes that accept 404).

use flink_operator_api::{FlinkDeployment, keys};
use futures::FutureExt;
use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams},
};
use serde_json::json;

use super::decide::Action;
use crate::{
    context::Context,
    flink::FlinkRestClient,
    policy::{DeletionPropagation, Policy},
    resources::{
        cluster::{self, ClusterError},
        flink_config::{self, DeployParameters},
    },
};

const MANAGER: &str = crate::resources::FIELD_MANAGER;

#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error("building the cluster of {name}: {source}")]
    Build { name: String, source: ClusterError },
    #[error("{what}: {}", crate::runtime::api_error::api_message(source))]
    Api { what: String, source: kube::Error },
    #[error("{0}")]
    Flink(String),
    #[error("{0}")]
    Job(#[from] crate::job_actions::JobActError),
    #[error(
        "scaling TaskManager Deployment {name}: {}",
        crate::runtime::api_error::api_message(source)
    )]
    ScaleTaskManagers { name: String, source: kube::Error },
    #[error("{0}")]
    Ingress(#[source] crate::ingresses::WriteError),
    #[error("the cluster's ZooKeeper HA metadata: {0}")]
    ZooKeeper(#[from] crate::zookeeper::ZkError),
}

impl ActError {
    /// Why an in-place rescale failed, if this is its failure.
    pub fn rescale_failure(&self) -> Option<String> {
        match self {
            ActError::ScaleTaskManagers { .. }
            | ActError::Job(crate::job_actions::JobActError::Rescale { .. }) => Some(self.to_string()),
            _ => None,
        }
    }
}

fn api_error(what: impl Into<String>) -> impl FnOnce(kube::Error) -> ActError {
    let what = what.into();
    move |source| ActError::Api { what, source }
}

/// Adds or removes our finalizer; the resource's new resourceVersion when it was patched.
pub async fn finalizer(ctx: &Context, fd: &FlinkDeployment, add: bool) -> Result<Option<String>, ActError> {
    let api: Api<FlinkDeployment> = Api::namespaced(ctx.client.clone(), &fd.namespace().unwrap_or_default());
    crate::runtime::finalizer::set_finalizer(&api, fd, keys::finalizers::FLINK_DEPLOYMENT, add)
        .await
        .map_err(api_error("updating the finalizer"))
}

pub async fn act(
    ctx: &Context,
    fd: &FlinkDeployment,
    policy: &Policy,
    action: &Action,
) -> Result<(), ActError> {
    match action {
        Action::AddFinalizer | Action::RemoveFinalizer => {
            finalizer(ctx, fd, *action == Action::AddFinalizer).await?;
            Ok(())
        }
        Action::Deploy {
            restore_path,
            job_id,
            last_state,
            spec,
            deployed_at_ms,
        } => {
            if *last_state {
                remove_job_graphs(ctx, fd).await?;
            }
            // So that a later look tells this cluster from the one it replaces.
            let mut fd = fd.clone();
            fd.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(
                    keys::annotations::DEPLOYED_AT.to_owned(),
                    deployed_at_ms.to_string(),
                );
            let fd = &fd;
            match spec {
                // A rollback: the last stable spec, under the resource's own name and owner.
                Some(spec) => {
                    let mut stable = fd.clone();
                    stable.spec = (**spec).clone();
                    // So that a later look tells this cluster from the one that failed.
                    stable
                        .metadata
                        .annotations
                        .get_or_insert_with(Default::default)
                        .insert(
                            keys::annotations::ROLLED_BACK_GENERATION.to_owned(),
                            fd.metadata.generation.unwrap_or_default().to_string(),
                        );
                    deploy(ctx, &stable, restore_path.clone(), job_id.clone()).await
                }
                None => deploy(ctx, fd, restore_path.clone(), job_id.clone()).await,
            }
        }
        // Whether the HA metadata stays is decided later (`Action::DeleteHaMetadata`).
        Action::DeleteCluster { .. } => delete_cluster(ctx, fd, policy.deletion_propagation).await,
        Action::DeleteHaMetadata => delete_ha_metadata(ctx, fd).await,
        Action::ScaleTaskManagers { replicas } => scale_task_managers(ctx, fd, *replicas).await,
        Action::Job(action) => crate::job_actions::run(&rest(ctx, fd).await?, action, policy)
            .await
            .map_err(ActError::Job),
        Action::Ingress(change) => {
            let namespace = fd.namespace().unwrap_or_default();
            crate::ingresses::write(&ctx.client, &namespace, change)
                .await
                .map_err(ActError::Ingress)
        }
    }
}

/// A REST client for `fd`'s JobManager.
async fn rest(ctx: &Context, fd: &FlinkDeployment) -> Result<FlinkRestClient, ActError> {
    let url = ctx
        .rest_url(fd)
        .await
        .map_err(|e| ActError::Flink(e.to_string()))?;
    ctx.rest_client(
        &url,
        super::KIND,
        &fd.namespace().unwrap_or_default(),
        &fd.name_any(),
    )
    .map_err(|e| ActError::Flink(e.to_string()))
}

/// Flink's HA metadata keeps the submitted job graph (1.x) or execution plan (2.x) and
/// recovers it on start; removed, the new spec's job is submitted under the same job id
/// and restores the latest checkpoint that the metadata also keeps.
async fn remove_job_graphs(ctx: &Context, fd: &FlinkDeployment) -> Result<(), ActError> {
    let name = fd.name_any();
    let config = ctx.effective_config(fd);
    if crate::zookeeper::is_zookeeper_ha(&config) {
        let nodes = crate::zookeeper::HaNodes::of(&config, &name)?;
        return Ok(nodes.remove_job_graphs(&config).await?);
    }
    let namespace = fd.namespace().unwrap_or_default();
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let selector = crate::caches::ha::selector(Some(&name));
    let ha = config_maps
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(api_error("listing HA ConfigMaps"))?;
    for cm in ha
        .items
        .into_iter()
        .filter(|cm| crate::caches::ha::is_ha_config_map(&cm.name_any()))
    {
        let removed: serde_json::Map<String, serde_json::Value> = cm
            .data
            .iter()
            .flatten()
            .filter(|(k, _)| k.starts_with("jobGraph-") || k.starts_with("executionPlan-"))
            .map(|(k, _)| (k.clone(), serde_json::Value::Null))
            .collect();
        if removed.is_empty() {
            continue;
        }
        let cm_name = cm.name_any();
        config_maps
            .patch(
                &cm_name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "data": removed })),
            )
            .await
            .map_err(api_error(format!(
                "removing job graphs from ConfigMap {namespace}/{cm_name}"
            )))?;
    }
    Ok(())
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
    let options =
        cluster::BuildOptions::from_effective(&effective).with_default_logging(ctx.default_logging.clone());
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
    let first = cluster::build(fd, &config, &options, None).map_err(build_error)?;
    let jm = deployments
        .patch(&name, &params, &Patch::Apply(&first.job_manager))
        .await
        .map_err(api_error(format!("applying Deployment {namespace}/{name}")))?;
    let objects = cluster::build(fd, &config, &options, jm.metadata.uid.as_deref()).map_err(build_error)?;
    // What the JobManager Deployment owns is applied all at once: its pod starts once its
    // ConfigMaps exist.
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(ctx.client.clone(), &namespace);
    let applied = (objects.config_maps.iter())
        .map(|cm| apply(&config_maps, cm, &params).boxed())
        .chain(
            objects
                .services
                .iter()
                .map(|service| apply(&services, service, &params).boxed()),
        )
        .chain(
            objects
                .task_manager
                .iter()
                .map(|tm| apply(&deployments, tm, &params).boxed()),
        );
    futures::future::try_join_all(applied).await?;
    Ok(())
}

/// Applies `object` (server-side, as the operator's field manager).
async fn apply<K>(api: &Api<K>, object: &K, params: &PatchParams) -> Result<(), ActError>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let name = object.name_any();
    let namespace = object.namespace().unwrap_or_default();
    api.patch(&name, params, &Patch::Apply(object))
        .await
        .map(drop)
        .map_err(api_error(format!("applying {} {namespace}/{name}", K::kind(&()))))
}

/// Deletes the JobManager and TaskManager Deployments, both at once. By default what they own
/// (their ReplicaSets, the pods, a native cluster's TaskManager pods) goes in the background:
/// the Deployments are gone at once, and the decision waits for the JobManager pods themselves
/// (see `decide::cleanup`), not for the garbage collector to remove the chain of owners
/// after them, which a foreground deletion (`resource.deletion.propagation: Foreground`)
/// would.
async fn delete_cluster(
    ctx: &Context,
    fd: &FlinkDeployment,
    propagation: DeletionPropagation,
) -> Result<(), ActError> {
    let params = match propagation {
        DeletionPropagation::Background => DeleteParams::background(),
        DeletionPropagation::Foreground => DeleteParams::foreground(),
    };
    let name = fd.name_any();
    let namespace = fd.namespace().unwrap_or_default();
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let delete = async |deployment: String| match deployments.delete(&deployment, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(api_error(format!("deleting Deployment {namespace}/{deployment}"))(e)),
    };
    let (job_manager, task_manager) =
        tokio::join!(delete(name.clone()), delete(format!("{name}-taskmanager")));
    job_manager.and(task_manager)
}

/// Sets the replicas of the standalone cluster's TaskManager Deployment (reactive mode).
async fn scale_task_managers(ctx: &Context, fd: &FlinkDeployment, replicas: i64) -> Result<(), ActError> {
    let name = format!("{}-taskmanager", fd.name_any());
    let deployments: Api<Deployment> =
        Api::namespaced(ctx.client.clone(), &fd.namespace().unwrap_or_default());
    deployments
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": replicas}})),
        )
        .await
        .map(drop)
        .map_err(|source| ActError::ScaleTaskManagers { name, source })
}

/// Deletes the cluster's high-availability ConfigMaps (the autoscaler's are kept) and, with
/// ZooKeeper HA, its ZooKeeper nodes (`<path.root>/<cluster-id>`, as the Apache operator
/// does); decided once no JobManager pod of it is left (see `decide::cleanup`).
async fn delete_ha_metadata(ctx: &Context, fd: &FlinkDeployment) -> Result<(), ActError> {
    let name = fd.name_any();
    let config = ctx.effective_config(fd);
    // Without a quorum nothing was written (see observe).
    if crate::zookeeper::is_zookeeper_ha(&config)
        && let Ok(nodes) = crate::zookeeper::HaNodes::of(&config, &name)
    {
        nodes.remove_all().await?;
    }
    let namespace = fd.namespace().unwrap_or_default();
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    // Every ConfigMap labelled as the cluster's (its `flink-config-<id>` too), as the Apache
    // operator deletes them. A LIST, not the cache: what is deleted must be every such
    // ConfigMap there is now.
    let selector = crate::caches::ha::selector(Some(&name));
    let ha = config_maps
        .list_metadata(&ListParams::default().labels(&selector))
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
