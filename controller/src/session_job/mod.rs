//! The FlinkSessionJob reconcile loop: observe -> decide -> act -> status and Events.
//!
//! A session job runs in the session FlinkDeployment named by `spec.deploymentName`; its
//! jar is fetched by the operator (http, https, file), uploaded and run through that
//! cluster's REST API. See [`decide`] for the state machine and what is not done yet.

pub mod act;
pub mod artifact;
pub mod decide;
pub mod observe;

use crate::events::Reason;
use std::{sync::Arc, time::Duration};

use flink_operator_api::{FlinkDeployment, FlinkSessionJob, FlinkSessionJobStatus};
use futures::StreamExt;
use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams},
    runtime::{
        Controller,
        controller::{self, Action as Requeue},
        reflector::ObjectRef,
        watcher,
    },
};
use serde_json::Value;
use tracing::Instrument;

use crate::{caches::WatchScope, context::Context, reconcile};

const KIND: &str = flink_operator_api::keys::kinds::FLINK_SESSION_JOB;

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("observing: {0}")]
    Observe(#[source] kube::Error),
    #[error("{0}")]
    Act(#[from] act::ActError),
    #[error("writing status: {0}")]
    Status(#[source] kube::Error),
}

/// Runs the loop over the watched namespaces until the future is dropped.
pub async fn run(ctx: Arc<Context>, scope: WatchScope) {
    let apis: Vec<(Api<FlinkSessionJob>, Api<FlinkDeployment>)> = match scope {
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
    let loops = apis.into_iter().map(|(jobs, deployments)| {
        let ctx = ctx.clone();
        let (store, changes) = reconcile::watch_user_changes(jobs);
        let controller = Controller::for_stream(changes, store);
        // A session cluster becoming READY (or going away) wakes the jobs that target it.
        let store = controller.store();
        controller
            .with_config(controller::Config::default().concurrency(ctx.reconcile_parallelism()))
            .watches(
                deployments,
                watcher::Config::default(),
                move |fd: FlinkDeployment| {
                    let namespace = fd.namespace();
                    let name = fd.name_any();
                    store
                        .state()
                        .into_iter()
                        .filter(|sj| {
                            sj.namespace() == namespace && sj.spec.deployment_name.as_deref() == Some(&name)
                        })
                        .map(|sj| ObjectRef::from_obj(&*sj))
                        .collect::<Vec<_>>()
                },
            )
            .run(reconcile, error_policy, ctx)
            .for_each(|result| async move {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "reconcile loop");
                }
            })
    });
    futures::future::join_all(loops).await;
}

fn error_policy(sj: Arc<FlinkSessionJob>, error: &ReconcileError, _ctx: Arc<Context>) -> Requeue {
    if let ReconcileError::Status(e) = error
        && reconcile::is_conflict(e)
    {
        // Decided on a stale read: look again at the fresh object.
        tracing::debug!(namespace = %sj.namespace().unwrap_or_default(), name = %sj.name_any(), "status changed since it was read; reconciling again");
        return Requeue::requeue(reconcile::AFTER_A_STEP);
    }
    tracing::warn!(namespace = %sj.namespace().unwrap_or_default(), name = %sj.name_any(), %error, "reconcile failed; retrying");
    Requeue::requeue(Duration::from_secs(5))
}

async fn reconcile(sj: Arc<FlinkSessionJob>, ctx: Arc<Context>) -> Result<Requeue, ReconcileError> {
    let span = tracing::info_span!("reconcile", kind = KIND, namespace = %sj.namespace().unwrap_or_default(), name = %sj.name_any());
    let started = std::time::Instant::now();
    let result = reconcile_inner(&sj, &ctx).instrument(span).await;
    let ok = matches!(result, Ok((_, true)));
    ctx.metrics.reconciled(
        KIND,
        &sj.namespace().unwrap_or_default(),
        &sj.name_any(),
        started.elapsed(),
        ok,
    );
    result.map(|(requeue, _)| requeue)
}

/// The requeue, and whether the reconcile did what it planned.
async fn reconcile_inner(sj: &FlinkSessionJob, ctx: &Context) -> Result<(Requeue, bool), ReconcileError> {
    let observed = observe::observe(ctx, sj).await.map_err(ReconcileError::Observe)?;
    let observation = &observed.observation;
    let plan = decide::decide(sj, observation);
    reconcile::record_savepoint(
        ctx,
        KIND,
        sj.status.as_ref().and_then(|s| s.job_status.as_ref()),
        observation.savepoint.as_ref(),
        observation.now_ms,
    );
    let mut stored = Stored {
        status: serde_json::to_value(&sj.status).unwrap_or(Value::Null),
        resource_version: sj.metadata.resource_version.clone(),
    };
    if let Some(before) = &plan.status_before {
        write_status(ctx, sj, &mut stored, before).await?;
    }
    for action in &plan.actions {
        tracing::info!(?action, "acting");
        let done = match action {
            // The finalizer patch changes the resourceVersion that a status write is
            // conditional on.
            decide::Action::AddFinalizer | decide::Action::RemoveFinalizer => {
                act::finalizer(ctx, sj, *action == decide::Action::AddFinalizer)
                    .await
                    .map(|rv| {
                        if rv.is_some() {
                            stored.resource_version = rv;
                        }
                    })
            }
            _ => act::act(ctx, sj, observed.rest_url.as_deref(), action).await,
        };
        if let Err(error) = done {
            if !error.is_submission_failure() {
                reconcile::publish(
                    ctx,
                    &sj.object_ref(&()),
                    true,
                    Reason::ReconcileFailed,
                    error.to_string(),
                )
                .await;
                return Err(error.into());
            }
            // The jar or Flink refused the job: say so in status and try again later, with
            // one Event per distinct failure rather than one per attempt.
            let message = error.to_string();
            let previous = sj.status.as_ref().and_then(|s| s.error.clone());
            if previous.as_deref() != Some(message.as_str()) {
                reconcile::publish(
                    ctx,
                    &sj.object_ref(&()),
                    true,
                    Reason::SubmitFailed,
                    message.clone(),
                )
                .await;
            }
            let base = plan.status_before.clone().unwrap_or_else(|| plan.status.clone());
            let status =
                decide::submission_failed(base, sj.metadata.generation, &message, observation.now_ms);
            write_status(ctx, sj, &mut stored, &status).await?;
            record_lifecycle(ctx, sj, &status, false);
            let retry = reconcile::requeue_after(reconcile::Next::Steady, false, &observation.policy);
            return Ok((Requeue::requeue(retry.min(Duration::from_secs(30))), false));
        }
    }
    for event in &plan.events {
        reconcile::publish(
            ctx,
            &sj.object_ref(&()),
            event.warning,
            event.reason,
            event.note.clone(),
        )
        .await;
    }
    let removed = plan.actions.contains(&decide::Action::RemoveFinalizer);
    let changed = serde_json::to_value(&plan.status).ok() != Some(stored.status.clone());
    if !removed && changed {
        write_status(ctx, sj, &mut stored, &plan.status).await?;
    }
    record_lifecycle(ctx, sj, &plan.status, removed);
    let stepped = plan.status_before.is_some() || !plan.actions.is_empty();
    let requeue = reconcile::requeue_after(plan.requeue, stepped, &observation.policy);
    Ok((Requeue::requeue(requeue), true))
}

fn record_lifecycle(ctx: &Context, sj: &FlinkSessionJob, status: &FlinkSessionJobStatus, removed: bool) {
    let state = status.lifecycle_state.map(|s| s.as_str());
    let namespace = sj.namespace().unwrap_or_default();
    ctx.metrics.lifecycle(
        KIND,
        &namespace,
        &sj.name_any(),
        if removed { None } else { state },
    );
}

/// The status the API server holds, as far as this reconcile knows, and the
/// resourceVersion it holds it at.
struct Stored {
    status: Value,
    resource_version: Option<String>,
}

/// Replaces the status: a merge patch from what is stored to `status`, with every field the
/// new status leaves out set to null at any depth. A plain merge patch of the new status
/// would keep nested fields it omits, such as a settled savepoint's trigger id, which the
/// next reconcile would act on again. The write holds only if the resource is still at the
/// stored resourceVersion, so a plan decided from a stale read is refused (409).
async fn write_status(
    ctx: &Context,
    sj: &FlinkSessionJob,
    stored: &mut Stored,
    status: &FlinkSessionJobStatus,
) -> Result<(), ReconcileError> {
    let value = serde_json::to_value(status).unwrap_or(Value::Null);
    let patch = replacing(&stored.status, &value);
    let mut body = serde_json::json!({ "status": patch });
    if let Some(rv) = &stored.resource_version {
        body["metadata"] = serde_json::json!({ "resourceVersion": rv });
    }
    let api: Api<FlinkSessionJob> = Api::namespaced(ctx.client.clone(), &sj.namespace().unwrap_or_default());
    let written = api
        .patch_status(&sj.name_any(), &PatchParams::default(), &Patch::Merge(body))
        .await
        .map_err(ReconcileError::Status)?;
    ctx.metrics
        .status_written(KIND, &sj.namespace().unwrap_or_default(), &sj.name_any());
    stored.status = value;
    stored.resource_version = written.metadata.resource_version;
    Ok(())
}

/// The JSON merge patch (RFC 7386) that turns `old` into `new`.
fn replacing(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = serde_json::Map::new();
            for (key, value) in new {
                let value = match old.get(key) {
                    Some(previous) => replacing(previous, value),
                    None => value.clone(),
                };
                patch.insert(key.clone(), value);
            }
            for key in old.keys() {
                if !new.contains_key(key) {
                    patch.insert(key.clone(), Value::Null);
                }
            }
            Value::Object(patch)
        }
        _ => new.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_status_write_clears_what_the_new_status_leaves_out_at_any_depth() {
        let old = json!({"jobStatus": {"jobId": "a", "savepointInfo": {"triggerId": "t", "lastSavepoint": {"location": "p"}}}, "error": "e"});
        let new = json!({"jobStatus": {"jobId": "b", "savepointInfo": {"lastSavepoint": {"location": "p"}}}, "lifecycleState": "STABLE"});
        let patch = super::replacing(&old, &new);
        assert_eq!(
            patch,
            json!({"jobStatus": {"jobId": "b", "savepointInfo": {"triggerId": null, "lastSavepoint": {"location": "p"}}},
                   "error": null, "lifecycleState": "STABLE"})
        );
        // Applied as a merge patch, it yields exactly the new status.
        let mut applied = old.clone();
        json_patch::merge(&mut applied, &patch);
        assert_eq!(applied, new);
    }
}
