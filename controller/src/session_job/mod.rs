//! The FlinkSessionJob loop: its own observe, decide and act, plugged into the shared
//! [`runtime`](crate::runtime) (Controller wiring, back-off, status writes, Events).
//!
//! A session job runs in the session FlinkDeployment named by `spec.deploymentName`; its
//! jar is fetched by the operator (http and https in the background, see [`downloads`];
//! file under the directories the platform lists), uploaded and run through that cluster's
//! REST API. See [`decide`] for the state machine and what is not done yet.

pub mod act;
pub mod artifact;
pub mod decide;
pub mod downloads;
pub mod observe;

use std::time::Duration;

use flink_operator_api::{FlinkDeployment, FlinkSessionJob, FlinkSessionJobStatus};
use kube::{
    ResourceExt,
    runtime::{Controller, reflector::ObjectRef},
};

use crate::{
    caches::{Cache, Caches},
    context::Context,
    events::{EventNote, Reason},
    flink::poll::record_savepoint,
    plan::{Next, Plan, Recovery},
    policy::Policy,
    runtime::{Acted, Reconciler, next::requeue_after},
};

const KIND: &str = flink_operator_api::keys::kinds::FLINK_SESSION_JOB;

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("observing: {0}")]
    Observe(#[source] kube::Error),
    #[error("{0}")]
    Act(#[from] act::ActError),
}

/// The FlinkSessionJob kind's part of its loop.
pub struct SessionJobs;

impl Reconciler for SessionJobs {
    type Kind = FlinkSessionJob;
    type Status = FlinkSessionJobStatus;
    type Observed = observe::Observed;
    type Action = decide::Action;
    type Error = ReconcileError;
    const KIND: &'static str = KIND;

    fn cache(caches: &Caches) -> &Cache<FlinkSessionJob> {
        &caches.session_jobs
    }

    fn status(sj: &FlinkSessionJob) -> Option<&FlinkSessionJobStatus> {
        sj.status.as_ref()
    }

    async fn observe(
        ctx: &Context,
        caches: &Caches,
        sj: &FlinkSessionJob,
    ) -> Result<observe::Observed, ReconcileError> {
        let observed = observe::observe(ctx, caches, sj)
            .await
            .map_err(ReconcileError::Observe)?;
        record_savepoint(
            &ctx.metrics,
            KIND,
            sj.status.as_ref().and_then(|s| s.job_status.as_ref()),
            observed.observation.savepoint.as_ref(),
            observed.observation.now_ms,
        );
        Ok(observed)
    }

    fn decide(
        sj: &FlinkSessionJob,
        observed: &observe::Observed,
    ) -> Plan<FlinkSessionJobStatus, decide::Action> {
        decide::decide(sj, &observed.observation)
    }

    async fn act(
        ctx: &Context,
        sj: &FlinkSessionJob,
        observed: &observe::Observed,
        action: &decide::Action,
    ) -> Result<Acted, ReconcileError> {
        Ok(match action {
            decide::Action::AddFinalizer => Acted::Patched(act::finalizer(ctx, sj, true).await?),
            decide::Action::RemoveFinalizer => {
                act::finalizer(ctx, sj, false).await?;
                Acted::Released
            }
            // Kubernetes objects (snapshots, revisions, the resource itself for a rollback).
            decide::Action::Job(job) if job.on_resources() => Acted::Patched(
                crate::job_actions::on_resources(
                    &ctx.client,
                    sj,
                    flink_operator_api::JobKind::FlinkSessionJob,
                    job,
                    &observed.observation.policy,
                )
                .await
                .map_err(act::ActError::Job)?,
            ),
            _ => {
                act::act(
                    ctx,
                    sj,
                    observed.rest_url.as_deref(),
                    &observed.observation.policy,
                    action,
                )
                .await?;
                Acted::Done
            }
        })
    }

    fn policy(observed: &observe::Observed) -> &Policy {
        &observed.observation.policy
    }

    fn lifecycle_state(status: &FlinkSessionJobStatus) -> Option<&'static str> {
        status.lifecycle_state.map(|s| s.as_str())
    }

    /// A released session job's jar download, running or finished, is cancelled with it.
    fn written(
        _ctx: &Context,
        sj: &FlinkSessionJob,
        _observed: &observe::Observed,
        status: Option<&FlinkSessionJobStatus>,
    ) {
        if status.is_none() {
            downloads::downloads().forget(&sj.uid().unwrap_or_default());
        }
    }

    /// The jar or Flink refused the job: say so in status and try again later, with one
    /// Event per distinct failure rather than one per attempt.
    fn recover(
        sj: &FlinkSessionJob,
        observed: &observe::Observed,
        plan: &Plan<FlinkSessionJobStatus, decide::Action>,
        error: &ReconcileError,
    ) -> Option<Recovery<FlinkSessionJobStatus>> {
        let ReconcileError::Act(error) = error else {
            return None;
        };
        if let Some(why) = error.rescale_failure() {
            return Some(crate::lifecycle::rescale::recovery(
                plan,
                sj.metadata.generation,
                observed.observation.now_ms,
                &why,
            ));
        }
        if !error.is_submission_failure() {
            return None;
        }
        let message = error.to_string();
        let previous = sj.status.as_ref().and_then(|s| s.error.as_deref());
        let events = if previous == Some(message.as_str()) {
            Vec::new()
        } else {
            vec![EventNote::warning(Reason::SubmitFailed, message.clone())]
        };
        let base = plan.status_before.clone().unwrap_or_else(|| plan.status.clone());
        let observation = &observed.observation;
        let status = decide::submission_failed(base, sj.metadata.generation, &message, observation.now_ms);
        let retry = requeue_after(Next::Steady, false, &observation.policy);
        Some(Recovery {
            status,
            events,
            requeue: retry.min(Duration::from_secs(30)),
        })
    }

    /// A session cluster becoming READY (or going away) wakes the jobs that target it.
    fn triggers(
        controller: Controller<FlinkSessionJob>,
        caches: &Caches,
        namespace: Option<&str>,
    ) -> Controller<FlinkSessionJob> {
        let jobs = caches.session_jobs.clone();
        controller
            .watches_shared_stream(
                caches.deployments.changes(namespace),
                move |fd: std::sync::Arc<FlinkDeployment>| {
                    let name = fd.name_any();
                    jobs.list(&fd.namespace().unwrap_or_default(), |sj| {
                        sj.spec.deployment_name.as_deref() == Some(&name)
                    })
                    .into_iter()
                    .map(|sj| ObjectRef::from_obj(&*sj))
                    .collect::<Vec<_>>()
                },
            )
            .watches_shared_stream(caches.snapshots.changes(namespace), |snapshot| {
                crate::lifecycle::snapshot_resources::settled_job(
                    &snapshot,
                    flink_operator_api::JobKind::FlinkSessionJob,
                )
            })
    }
}
