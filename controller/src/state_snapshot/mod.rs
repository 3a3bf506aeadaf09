//! The FlinkStateSnapshot loop: its own observe, decide and act, plugged into the shared
//! [`runtime`](crate::runtime) (Controller wiring, back-off, status writes, Events).
//!
//! A FlinkStateSnapshot is a savepoint or checkpoint of the job of a FlinkDeployment or
//! FlinkSessionJob in its own namespace (`spec.jobReference`), taken through the REST API of
//! the job's cluster (a session job's: its session cluster's). See [`decide`] for the state
//! machine, its retries and the disposal on deletion. The loop runs unless
//! `kubernetes.operator.snapshot.resource.enabled` is `false` ([`enabled`]); besides it,
//! [`census`] keeps the count of snapshots by type and state.
//!
//! The FlinkDeployment and FlinkSessionJob loops create FlinkStateSnapshots of their own
//! (see [`crate::lifecycle::snapshot_resources`]): this loop takes the manual and periodic
//! ones, and completes the upgrade ones (`alreadyExists`) at once.

pub mod act;
pub mod decide;
pub mod observe;
#[cfg(test)]
mod tests;

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::Duration,
};

use flink_operator_api::{
    FlinkDeployment, FlinkSessionJob, FlinkStateSnapshot, FlinkStateSnapshotState as State,
    FlinkStateSnapshotStatus, JobKind,
};
use kube::{
    ResourceExt,
    runtime::{Controller, reflector::ObjectRef},
};

use crate::{
    caches::{Cache, Caches},
    context::Context,
    metrics::SnapshotCount,
    plan::{Plan, Recovery},
    policy::Policy,
    runtime::{Acted, Reconciler, next::requeue_after},
};

const KIND: &str = flink_operator_api::keys::kinds::FLINK_STATE_SNAPSHOT;

/// The annotation that holds the trigger id of the disposal of a deleted snapshot's
/// savepoint, once started: Flink chooses it, so it is recorded to be polled on later looks.
pub const DISPOSAL_TRIGGER_ID: &str = "flinkstatesnapshots.flink.apache.org/disposal-trigger-id";

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{0}")]
    Act(#[from] act::ActError),
}

/// The FlinkStateSnapshot kind's part of its loop.
pub struct Snapshots;

impl Reconciler for Snapshots {
    type Kind = FlinkStateSnapshot;
    type Status = FlinkStateSnapshotStatus;
    type Observed = observe::Observed;
    type Action = decide::Action;
    type Error = ReconcileError;
    const KIND: &'static str = KIND;

    fn cache(caches: &Caches) -> &Cache<FlinkStateSnapshot> {
        &caches.snapshots
    }

    fn status(snapshot: &FlinkStateSnapshot) -> Option<&FlinkStateSnapshotStatus> {
        snapshot.status.as_ref()
    }

    async fn observe(
        ctx: &Context,
        caches: &Caches,
        snapshot: &FlinkStateSnapshot,
    ) -> Result<observe::Observed, ReconcileError> {
        Ok(observe::observe(ctx, caches, snapshot).await)
    }

    fn decide(
        snapshot: &FlinkStateSnapshot,
        observed: &observe::Observed,
    ) -> Plan<FlinkStateSnapshotStatus, decide::Action> {
        decide::decide(snapshot, &observed.observation)
    }

    async fn act(
        ctx: &Context,
        snapshot: &FlinkStateSnapshot,
        observed: &observe::Observed,
        action: &decide::Action,
    ) -> Result<Acted, ReconcileError> {
        let rest = || {
            let url = observed.rest_url.as_deref().ok_or(act::ActError::NoCluster)?;
            act::client(ctx, snapshot, url).map_err(act::ActError::Client)
        };
        Ok(match action {
            decide::Action::AddFinalizer => Acted::Patched(act::finalizer(ctx, snapshot, true).await?),
            decide::Action::Release => {
                act::finalizer(ctx, snapshot, false).await?;
                Acted::Released
            }
            decide::Action::Labels(labels) => Acted::Patched(act::labels(ctx, snapshot, labels).await?),
            decide::Action::Trigger(trigger) => {
                act::trigger(&rest()?, trigger).await?;
                Acted::Done
            }
            decide::Action::Dispose { path } => {
                Acted::Patched(act::dispose(ctx, snapshot, &rest()?, path).await?)
            }
        })
    }

    fn policy(observed: &observe::Observed) -> &Policy {
        &observed.observation.policy
    }

    fn lifecycle_state(status: &FlinkStateSnapshotStatus) -> Option<&'static str> {
        Some(flink_operator_api::FlinkStateSnapshotState::of(Some(status)).as_str())
    }

    /// Flink refused the trigger (a checkpoint of a Flink without manual checkpoints, a job
    /// that cannot take one): an attempt that failed, counted and tried again after its
    /// back-off, or FAILED past the limit, instead of an error retried at once.
    fn recover(
        snapshot: &FlinkStateSnapshot,
        observed: &observe::Observed,
        plan: &Plan<FlinkStateSnapshotStatus, decide::Action>,
        error: &ReconcileError,
    ) -> Option<Recovery<FlinkStateSnapshotStatus>> {
        let ReconcileError::Act(error) = error;
        if !error.is_refused_trigger() {
            return None;
        }
        let base = plan
            .status_before
            .clone()
            .or_else(|| snapshot.status.clone())
            .unwrap_or_default();
        let observation = &observed.observation;
        let (status, event, next) =
            decide::failed(&snapshot.spec, base, &error.to_string(), observation.now_ms);
        Some(Recovery {
            status,
            events: vec![event],
            requeue: requeue_after(next, false, &observation.policy),
        })
    }

    /// A change of a job resource (its job starting or ending, its cluster becoming ready)
    /// wakes the snapshots waiting on it, rather than leaving them to their next look; so
    /// does a session cluster's change for the snapshots of its session jobs.
    fn triggers(
        controller: Controller<FlinkStateSnapshot>,
        caches: &Caches,
        namespace: Option<&str>,
    ) -> Controller<FlinkStateSnapshot> {
        let (snapshots, session_jobs) = (caches.snapshots.clone(), caches.session_jobs.clone());
        let of_deployment = move |fd: Arc<FlinkDeployment>| {
            let (namespace, name) = (fd.namespace().unwrap_or_default(), fd.name_any());
            let jobs: Vec<String> = session_jobs
                .list(&namespace, |sj| sj.spec.deployment_name.as_deref() == Some(&name))
                .iter()
                .map(|sj| sj.name_any())
                .collect();
            snapshots
                .list(&namespace, |s| {
                    waits_on(s, JobKind::FlinkDeployment, &name)
                        || jobs.iter().any(|job| waits_on(s, JobKind::FlinkSessionJob, job))
                })
                .into_iter()
                .map(|s| ObjectRef::from_obj(&*s))
                .collect::<Vec<_>>()
        };
        let snapshots = caches.snapshots.clone();
        let of_session_job = move |sj: Arc<FlinkSessionJob>| {
            let (namespace, name) = (sj.namespace().unwrap_or_default(), sj.name_any());
            snapshots
                .list(&namespace, |s| waits_on(s, JobKind::FlinkSessionJob, &name))
                .into_iter()
                .map(|s| ObjectRef::from_obj(&*s))
                .collect::<Vec<_>>()
        };
        controller
            .watches_shared_stream(caches.deployments.changes(namespace), of_deployment)
            .watches_shared_stream(caches.session_jobs.changes(namespace), of_session_job)
    }

    /// Counts what the pass changed: a completion (with its time since the trigger), a
    /// failed attempt.
    fn written(
        ctx: &Context,
        snapshot: &FlinkStateSnapshot,
        _observed: &Self::Observed,
        status: Option<&FlinkStateSnapshotStatus>,
    ) {
        let (Some(new), Some(kind)) = (status, snapshot.spec.snapshot_type()) else {
            return;
        };
        let old = snapshot.status.as_ref();
        if new.failures.unwrap_or(0) > old.and_then(|s| s.failures).unwrap_or(0) {
            ctx.metrics.snapshot_failed(kind.as_str());
        }
        let completed_now = flink_operator_api::FlinkStateSnapshotState::of(Some(new)) == State::Completed
            && flink_operator_api::FlinkStateSnapshotState::of(old) != State::Completed;
        // A recorded savepoint (`alreadyExists`) was never triggered: nothing to time.
        if completed_now
            && new.trigger_id.is_some()
            && let (Some(from), Some(to)) = (
                new.trigger_timestamp
                    .as_deref()
                    .and_then(crate::timestamps::millis),
                new.result_timestamp
                    .as_deref()
                    .and_then(crate::timestamps::millis),
            )
        {
            let elapsed = Duration::from_millis(u64::try_from(to - from).unwrap_or(0));
            ctx.metrics.snapshot_completed(kind.as_str(), elapsed);
        }
    }
}

/// Whether `snapshot` waits on the job resource `kind` `name`: it refers to it and is not
/// settled (a settled one is not looked at again until it changes).
fn waits_on(snapshot: &FlinkStateSnapshot, kind: JobKind, name: &str) -> bool {
    let reference = snapshot.spec.job_reference.as_ref();
    reference.and_then(|r| r.kind) == Some(kind)
        && reference.and_then(|r| r.name.as_deref()) == Some(name)
        && matches!(
            flink_operator_api::FlinkStateSnapshotState::of(snapshot.status.as_ref()),
            State::TriggerPending | State::InProgress
        )
}

/// How often [`census`] counts.
const CENSUS_INTERVAL: Duration = Duration::from_secs(15);

/// Counts the FlinkStateSnapshots in the cache by namespace, type and state, until dropped;
/// and forgets the per-resource metrics of snapshots that went without passing through the
/// loop (a snapshot without our finalizer is deleted at once). Counted from the cache, the
/// numbers include snapshots not reconciled yet and never keep a deleted one.
pub async fn census(ctx: Arc<Context>, caches: Caches) {
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    let mut ticks = tokio::time::interval(CENSUS_INTERVAL);
    loop {
        ticks.tick().await;
        let mut counts: BTreeMap<SnapshotCount, i64> = BTreeMap::new();
        let mut now = BTreeSet::new();
        for snapshot in caches.snapshots.all() {
            let namespace = snapshot.namespace().unwrap_or_default();
            if let Some(kind) = snapshot.spec.snapshot_type() {
                let count = SnapshotCount {
                    namespace: namespace.clone(),
                    snapshot_type: kind.as_str(),
                    state: flink_operator_api::FlinkStateSnapshotState::of(snapshot.status.as_ref()).as_str(),
                };
                *counts.entry(count).or_default() += 1;
            }
            now.insert((namespace, snapshot.name_any()));
        }
        ctx.metrics.snapshot_census(&counts);
        for (namespace, name) in seen.difference(&now) {
            ctx.metrics.lifecycle(KIND, namespace, name, None);
        }
        seen = now;
    }
}
