//! The FlinkDeployment loop: its own observe, decide and act, plugged into the shared
//! [`runtime`](crate::runtime) (Controller wiring, back-off, status writes, Events).
//!
//! See [`decide`] for what is implemented and what is not yet.

pub mod act;
pub mod decide;
pub mod ha_checkpoint;
pub mod health;
pub mod observe;

use flink_operator_api::{FlinkDeployment, FlinkDeploymentStatus, keys};
use futures::StreamExt;
use kube::{
    ResourceExt,
    runtime::{Controller, reflector::ObjectRef},
};

use crate::{
    caches::{Cache, Caches},
    context::Context,
    flink::poll::record_savepoint,
    plan::Plan,
    policy::Policy,
    runtime::{Acted, Reconciler},
};

const KIND: &str = flink_operator_api::keys::kinds::FLINK_DEPLOYMENT;

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("observing: {0}")]
    Observe(#[source] kube::Error),
    #[error("{0}")]
    Act(#[from] act::ActError),
}

/// The FlinkDeployment kind's part of its loop.
pub struct Deployments;

impl Reconciler for Deployments {
    type Kind = FlinkDeployment;
    type Status = FlinkDeploymentStatus;
    type Observed = decide::Observation;
    type Action = decide::Action;
    type Error = ReconcileError;
    const KIND: &'static str = KIND;

    fn cache(caches: &Caches) -> &Cache<FlinkDeployment> {
        &caches.deployments
    }

    fn status(fd: &FlinkDeployment) -> Option<&FlinkDeploymentStatus> {
        fd.status.as_ref()
    }

    async fn observe(
        ctx: &Context,
        caches: &Caches,
        fd: &FlinkDeployment,
    ) -> Result<decide::Observation, ReconcileError> {
        let observation = observe::observe(ctx, caches, fd)
            .await
            .map_err(ReconcileError::Observe)?;
        record_savepoint(
            &ctx.metrics,
            KIND,
            fd.status.as_ref().and_then(|s| s.job_status.as_ref()),
            observation.savepoint.as_ref(),
            observation.now_ms,
        );
        Ok(observation)
    }

    fn decide(
        fd: &FlinkDeployment,
        observation: &decide::Observation,
    ) -> Plan<FlinkDeploymentStatus, decide::Action> {
        decide::decide(fd, observation)
    }

    async fn act(
        ctx: &Context,
        fd: &FlinkDeployment,
        observation: &decide::Observation,
        action: &decide::Action,
    ) -> Result<Acted, ReconcileError> {
        Ok(match action {
            decide::Action::AddFinalizer => Acted::Patched(act::finalizer(ctx, fd, true).await?),
            decide::Action::RemoveFinalizer => {
                act::finalizer(ctx, fd, false).await?;
                Acted::Released
            }
            // Kubernetes objects (snapshots, revisions, the resource itself for a rollback).
            decide::Action::Job(job) if job.on_resources() => Acted::Patched(
                crate::job_actions::on_resources(
                    &ctx.client,
                    fd,
                    flink_operator_api::JobKind::FlinkDeployment,
                    job,
                    &observation.policy,
                )
                .await
                .map_err(act::ActError::Job)?,
            ),
            _ => {
                let fd = decide::autoscaled(fd, observation);
                act::act(ctx, &fd, &observation.policy, action).await?;
                Acted::Done
            }
        })
    }

    fn policy(observation: &decide::Observation) -> &Policy {
        &observation.policy
    }

    /// Flink refused (or did not answer) an in-place rescale: said in status for the next
    /// look to apply the change by an upgrade.
    fn recover(
        fd: &FlinkDeployment,
        observation: &decide::Observation,
        plan: &crate::plan::Plan<FlinkDeploymentStatus, decide::Action>,
        error: &ReconcileError,
    ) -> Option<crate::plan::Recovery<FlinkDeploymentStatus>> {
        let ReconcileError::Act(error) = error else {
            return None;
        };
        if let act::ActError::Ingress(error) = error
            && let Some(message) = error.refusal()
        {
            let interval =
                std::time::Duration::from_millis(observation.policy.reconcile_interval_ms.max(0) as u64);
            return Some(crate::ingresses::refused(
                &plan.status,
                |s| &mut s.error,
                message,
                interval,
            ));
        }
        let why = error.rescale_failure()?;
        Some(crate::lifecycle::rescale::recovery(
            plan,
            fd.metadata.generation,
            observation.now_ms,
            &why,
        ))
    }

    fn lifecycle_state(status: &FlinkDeploymentStatus) -> Option<&'static str> {
        status.lifecycle_state.map(|s| s.as_str())
    }

    /// Its JobManager Deployment changing (becoming ready, failing, deleted) wakes it, and so
    /// does a JobManager pod of it going away (what the step after a cluster's deletion
    /// waits for), and its Ingress changing.
    fn triggers(
        controller: Controller<FlinkDeployment>,
        caches: &Caches,
        namespace: Option<&str>,
    ) -> Controller<FlinkDeployment> {
        let job_managers = caches.cluster_deployments.changes(namespace).filter(|d| {
            std::future::ready(
                d.labels().get(keys::labels::COMPONENT).map(String::as_str)
                    == Some(keys::labels::COMPONENT_JOB_MANAGER),
            )
        });
        let leaving_pods = caches
            .job_manager_pods
            .changes(namespace)
            .filter(|pod| std::future::ready(pod.metadata.deletion_timestamp.is_some()));
        let controller = match &caches.ingresses {
            // Its Ingress changed or deleted by someone else is put back.
            Some(ingresses) => controller.owns_shared_stream(ingresses.changes(namespace)),
            None => controller,
        };
        controller
            .owns_shared_stream(job_managers)
            .watches_shared_stream(leaving_pods, |pod| {
                // A JobManager pod carries its cluster's name, which is the resource's.
                let cluster = pod.labels().get(keys::labels::APP).cloned();
                cluster.map(|name| ObjectRef::new(&name).within(&pod.namespace().unwrap_or_default()))
            })
            .watches_shared_stream(caches.snapshots.changes(namespace), |snapshot| {
                crate::lifecycle::snapshot_resources::settled_job(
                    &snapshot,
                    flink_operator_api::JobKind::FlinkDeployment,
                )
            })
    }
}

/// How often [`census`] counts.
const CENSUS_INTERVAL: std::time::Duration = std::time::Duration::from_secs(15);

/// Counts the FlinkDeployments in the cache by namespace, Flink version and JobManager
/// Deployment status, until dropped (the Apache operator's FlinkVersion and
/// JmDeploymentStatus counts).
pub async fn census(ctx: std::sync::Arc<Context>, caches: Caches) {
    let mut ticks = tokio::time::interval(CENSUS_INTERVAL);
    loop {
        ticks.tick().await;
        ctx.metrics.deployment_census(&counts(&caches.deployments.all()));
    }
}

/// The census of `deployments`.
pub fn counts(
    deployments: &[std::sync::Arc<FlinkDeployment>],
) -> std::collections::BTreeMap<crate::metrics::DeploymentCount, i64> {
    use kube::ResourceExt;
    let mut counts = std::collections::BTreeMap::new();
    for fd in deployments {
        let count = crate::metrics::DeploymentCount {
            namespace: fd.namespace().unwrap_or_default(),
            flink_version: fd
                .spec
                .flink_version
                .map_or_else(|| "unknown".to_owned(), |v| v.as_str().to_owned()),
            job_manager_status: fd
                .status
                .as_ref()
                .and_then(|s| s.job_manager_deployment_status)
                .map_or("MISSING", |s| s.as_str())
                .to_owned(),
        };
        *counts.entry(count).or_default() += 1;
    }
    counts
}

#[cfg(test)]
mod census_tests {
    use super::*;

    #[test]
    fn deployments_are_counted_by_namespace_version_and_job_manager_status() {
        let fd = |namespace: &str, version: &str, jm: Option<&str>| {
            let mut value = serde_json::json!({
                "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
                "metadata": {"name": "x", "namespace": namespace},
                "spec": {"flinkVersion": version},
            });
            if let Some(jm) = jm {
                value["status"] = serde_json::json!({"jobManagerDeploymentStatus": jm});
            }
            std::sync::Arc::new(serde_json::from_value::<FlinkDeployment>(value).unwrap())
        };
        let counted = counts(&[
            fd("a", "v1_20", Some("READY")),
            fd("a", "v1_20", Some("READY")),
            fd("a", "v2_3", None),
            fd("b", "v1_20", Some("DEPLOYING")),
        ]);
        let key = |namespace: &str, version: &str, jm: &str| crate::metrics::DeploymentCount {
            namespace: namespace.into(),
            flink_version: version.into(),
            job_manager_status: jm.into(),
        };
        assert_eq!(
            counted,
            [
                (key("a", "v1_20", "READY"), 2),
                (key("a", "v2_3", "MISSING"), 1),
                (key("b", "v1_20", "DEPLOYING"), 1),
            ]
            .into()
        );
    }
}
