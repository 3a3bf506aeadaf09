//! The FlinkDeployment reconcile loop: observe -> decide -> act -> status and Events.
//!
//! See [`decide`] for what is implemented and what is not yet.

pub mod act;
pub mod decide;
pub mod observe;

use crate::events::Reason;
use std::{sync::Arc, time::Duration};

use flink_operator_api::{FlinkDeployment, FlinkDeploymentStatus};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams},
    runtime::{
        Controller,
        controller::{self, Action as Requeue},
        watcher,
    },
};
use serde_json::Value;
use tracing::Instrument;

use crate::{caches::WatchScope, context::Context, reconcile};

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("observing: {0}")]
    Observe(#[source] kube::Error),
    #[error("{0}")]
    Act(#[from] act::ActError),
    #[error("writing status: {0}")]
    Status(#[source] kube::Error),
    #[error("encoding status: {0}")]
    Encode(String),
}

/// Runs the loop over the watched namespaces until the future is dropped.
pub async fn run(ctx: Arc<Context>, scope: WatchScope) {
    let apis: Vec<(Api<FlinkDeployment>, Api<Deployment>)> = match scope {
        WatchScope::All => vec![(Api::all(ctx.client.clone()), Api::all(ctx.client.clone()))],
        WatchScope::Namespaces(namespaces) => namespaces
            .iter()
            .map(|ns| {
                (
                    Api::namespaced(ctx.client.clone(), ns),
                    Api::namespaced(ctx.client.clone(), ns),
                )
            })
            .collect(),
    };
    let loops = apis.into_iter().map(|(resources, deployments)| {
        let ctx = ctx.clone();
        let owned = watcher::Config::default().labels("app,component=jobmanager");
        let (store, changes) = reconcile::watch_user_changes(resources);
        Controller::for_stream(changes, store)
            .with_config(controller::Config::default().concurrency(ctx.reconcile_parallelism()))
            .owns(deployments, owned)
            .run(reconcile, error_policy, ctx)
            .for_each(|result| async move {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "reconcile loop");
                }
            })
    });
    futures::future::join_all(loops).await;
}

fn error_policy(fd: Arc<FlinkDeployment>, error: &ReconcileError, _ctx: Arc<Context>) -> Requeue {
    if let ReconcileError::Status(e) = error
        && reconcile::is_conflict(e)
    {
        // Decided on a stale read: nothing was acted on; look again at the fresh object.
        tracing::debug!(namespace = %fd.namespace().unwrap_or_default(), name = %fd.name_any(), "status changed since it was read; reconciling again");
        return Requeue::requeue(reconcile::AFTER_A_STEP);
    }
    tracing::warn!(namespace = %fd.namespace().unwrap_or_default(), name = %fd.name_any(), %error, "reconcile failed; retrying");
    Requeue::requeue(Duration::from_secs(5))
}

const KIND: &str = flink_operator_api::keys::kinds::FLINK_DEPLOYMENT;

async fn reconcile(fd: Arc<FlinkDeployment>, ctx: Arc<Context>) -> Result<Requeue, ReconcileError> {
    let span = tracing::info_span!("reconcile", namespace = %fd.namespace().unwrap_or_default(), name = %fd.name_any());
    let started = std::time::Instant::now();
    let result = reconcile_inner(&fd, &ctx).instrument(span).await;
    ctx.metrics.reconciled(
        KIND,
        &fd.namespace().unwrap_or_default(),
        &fd.name_any(),
        started.elapsed(),
        result.is_ok(),
    );
    result
}

async fn reconcile_inner(fd: &FlinkDeployment, ctx: &Context) -> Result<Requeue, ReconcileError> {
    let observation = observe::observe(ctx, fd).await.map_err(ReconcileError::Observe)?;
    let plan = decide::decide(fd, &observation);
    reconcile::record_savepoint(
        ctx,
        KIND,
        fd.status.as_ref().and_then(|s| s.job_status.as_ref()),
        observation.savepoint.as_ref(),
        observation.now_ms,
    );
    let mut resource_version = fd.metadata.resource_version.clone();
    if let Some(before) = &plan.status_before {
        resource_version = write_status(ctx, fd, resource_version, before).await?;
    }
    for action in &plan.actions {
        tracing::info!(?action, "acting");
        let done = match action {
            // The finalizer patch changes the resourceVersion that the status write below
            // is conditional on.
            decide::Action::AddFinalizer | decide::Action::RemoveFinalizer => {
                act::finalizer(ctx, fd, *action == decide::Action::AddFinalizer)
                    .await
                    .map(|rv| resource_version = rv.or(resource_version.take()))
            }
            _ => act::act(ctx, fd, action).await,
        };
        if let Err(e) = done {
            reconcile::publish(
                ctx,
                &fd.object_ref(&()),
                true,
                Reason::ReconcileFailed,
                e.to_string(),
            )
            .await;
            return Err(e.into());
        }
    }
    for event in &plan.events {
        reconcile::publish(
            ctx,
            &fd.object_ref(&()),
            event.warning,
            event.reason,
            event.note.clone(),
        )
        .await;
    }
    let removed = plan.actions.contains(&decide::Action::RemoveFinalizer);
    if removed {
        ctx.forget(&fd.uid().unwrap_or_default());
    }
    let written = plan
        .status_before
        .as_ref()
        .unwrap_or_else(|| fd.status.as_ref().unwrap_or(&plan.status));
    if !removed && (fd.status.is_none() || written != &plan.status) {
        write_status(ctx, fd, resource_version, &plan.status).await?;
    }
    let state = plan.status.lifecycle_state.map(|s| s.as_str());
    let namespace = fd.namespace().unwrap_or_default();
    ctx.metrics.lifecycle(
        KIND,
        &namespace,
        &fd.name_any(),
        if removed { None } else { state },
    );
    let stepped = plan.status_before.is_some() || !plan.actions.is_empty();
    Ok(Requeue::requeue(reconcile::requeue_after(
        plan.requeue,
        stepped,
        &observation.policy,
    )))
}

/// Replaces the status as a whole: a field the plan cleared (however deeply nested, such as
/// a savepoint trigger id) is gone afterwards, which a merge patch would not ensure. The
/// write holds only if the resource is still at `resource_version` (what the plan was
/// decided from, or our previous write), so a plan made from a stale read is refused
/// (409) instead of overwriting newer status; returns the new resourceVersion.
async fn write_status(
    ctx: &Context,
    fd: &FlinkDeployment,
    resource_version: Option<String>,
    status: &FlinkDeploymentStatus,
) -> Result<Option<String>, ReconcileError> {
    let value = serde_json::to_value(status).unwrap_or(Value::Null);
    let mut ops = vec![serde_json::json!({"op": "add", "path": "/status", "value": value})];
    if let Some(rv) = resource_version {
        ops.insert(
            0,
            serde_json::json!({"op": "replace", "path": "/metadata/resourceVersion", "value": rv}),
        );
    }
    let patch: json_patch::Patch =
        serde_json::from_value(Value::Array(ops)).map_err(|e| ReconcileError::Encode(e.to_string()))?;
    let api: Api<FlinkDeployment> = Api::namespaced(ctx.client.clone(), &fd.namespace().unwrap_or_default());
    let written = api
        .patch_status(&fd.name_any(), &PatchParams::default(), &Patch::Json::<()>(patch))
        .await
        .map_err(ReconcileError::Status)?;
    ctx.metrics
        .status_written(KIND, &fd.namespace().unwrap_or_default(), &fd.name_any());
    Ok(written.metadata.resource_version)
}
