//! One reconcile of one object: observe, decide, write `status_before`, act, publish, write
//! the status.

use std::time::Duration;

use kube::{Api, Resource, ResourceExt};

use super::{Acted, Reconciler, api_error, events::publish as publish_one, next::next_look, status::Stored};
use crate::{
    caches::Caches,
    context::Context,
    events::{EventNote, Reason},
    plan::Plan,
};

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum PassError<E: std::error::Error + 'static> {
    /// Observing or acting failed; the kind's error says how.
    #[error(transparent)]
    Kind(E),
    /// The status could not be written (a 409 means it changed since it was read).
    #[error("writing status: {}", api_error::api_message(.0))]
    Status(#[source] kube::Error),
    /// This replica may no longer act (its lease was not renewed in time): nothing more
    /// of the plan was sent; the replica that leads next decides again.
    #[error(transparent)]
    Fenced(#[from] crate::fence::Fenced),
    /// The reconcile panicked (a bug): caught, so that only this object fails.
    #[error("internal error (a bug of the operator): {0}")]
    Panicked(String),
}

impl<E: std::error::Error + 'static> PassError<E> {
    /// Whether the object changed since it was read: nothing is lost, the next reconcile
    /// decides again from the fresh object.
    pub fn is_conflict(&self) -> bool {
        matches!(self, PassError::Status(e) if api_error::is_conflict(e))
    }
}

/// How a reconcile ended.
pub struct Passed {
    /// When to look again (`None`: only when the object changes).
    pub requeue: Option<Duration>,
    /// Whether the plan was carried out (not a recovered failure), for the metrics.
    pub completed: bool,
}

/// Reconciles `object` once.
pub async fn pass<R: Reconciler>(
    ctx: &Context,
    caches: &Caches,
    object: &R::Kind,
) -> Result<Passed, PassError<R::Error>> {
    let namespace = object.namespace().unwrap_or_default();
    let name = object.name_any();
    let api: Api<R::Kind> = Api::namespaced(ctx.client.clone(), &namespace);
    let started = std::time::Instant::now();
    let observed = R::observe(ctx, caches, object).await.map_err(PassError::Kind)?;
    // Where a reconcile's time goes, for `RUST_LOG=flink_operator_controller=debug`.
    tracing::debug!(elapsed_ms = millis(started), "observed");
    let plan: Plan<R::Status, R::Action> = R::decide(object, &observed);
    let mut stored = Stored::of(object, R::status(object));
    let write = async |stored: &mut Stored, status: &R::Status| {
        ctx.fence.check()?;
        let sent = stored
            .write(&api, &name, status)
            .await
            .map_err(PassError::Status)?;
        if sent {
            ctx.metrics.status_written(R::KIND, &namespace, &name);
            tracing::debug!(elapsed_ms = millis(started), "status written");
        }
        Ok::<(), PassError<R::Error>>(())
    };
    if let Some(before) = &plan.status_before {
        write(&mut stored, before).await?;
    } else if !plan.actions.is_empty() {
        ctx.fence.check()?;
        stored.confirm(&api, &name).await.map_err(PassError::Status)?;
    }
    let mut released = false;
    // The object at the resourceVersion this pass last wrote or patched: the removal of our
    // finalizer holds only if nothing changed it since (see `finalizer`).
    let mut moved: Option<R::Kind> = None;
    for action in &plan.actions {
        // Checked per action: a replica that lost its lease mid-plan stops between steps.
        ctx.fence.check()?;
        tracing::info!(?action, "acting");
        if stored.resource_version() != object.meta().resource_version.as_deref() {
            let current = moved.get_or_insert_with(|| object.clone());
            current.meta_mut().resource_version = stored.resource_version().map(str::to_owned);
        }
        let target = moved.as_ref().unwrap_or(object);
        match R::act(ctx, target, &observed, action).await {
            Ok(Acted::Done) => tracing::debug!(elapsed_ms = millis(started), "acted"),
            Ok(Acted::Patched(resource_version)) => stored.moved_to(resource_version),
            Ok(Acted::Released) => released = true,
            Err(error) => {
                // A Flink REST write the fence stopped when it was about to be sent (the
                // lease ran out during the action): not this object's failure, nothing to
                // recover or report; the replica that leads next decides again.
                ctx.fence.check()?;
                if let Some(recovery) = R::recover(object, &observed, &plan, &error) {
                    publish(ctx, object, &recovery.events).await;
                    write(&mut stored, &recovery.status).await?;
                    ctx.metrics
                        .lifecycle(R::KIND, &namespace, &name, R::lifecycle_state(&recovery.status));
                    R::written(ctx, object, &observed, Some(&recovery.status));
                    return Ok(Passed {
                        requeue: Some(recovery.requeue),
                        completed: false,
                    });
                }
                let failed = EventNote::warning(Reason::ReconcileFailed, error.to_string());
                publish(ctx, object, std::slice::from_ref(&failed)).await;
                return Err(PassError::Kind(error));
            }
        }
    }
    publish(ctx, object, &plan.events).await;
    if released {
        // The object may be gone: nothing to write, and nothing to keep about it.
        ctx.forget(&object.uid().unwrap_or_default());
        ctx.metrics.lifecycle(R::KIND, &namespace, &name, None);
        R::written(ctx, object, &observed, None);
    } else {
        write(&mut stored, &plan.status).await?;
        ctx.metrics
            .lifecycle(R::KIND, &namespace, &name, R::lifecycle_state(&plan.status));
        R::written(ctx, object, &observed, Some(&plan.status));
    }
    let stepped = plan.status_before.is_some() || !plan.actions.is_empty();
    Ok(Passed {
        requeue: next_look(plan.requeue, stepped, R::policy(&observed)),
        completed: true,
    })
}

fn millis(since: std::time::Instant) -> u128 {
    since.elapsed().as_millis()
}

async fn publish<K: Resource<DynamicType = ()>>(ctx: &Context, object: &K, events: &[EventNote]) {
    if events.is_empty() {
        return;
    }
    let reference = object.object_ref(&());
    for event in events {
        publish_one(ctx, &reference, event.warning, event.reason, event.note.clone()).await;
    }
}
