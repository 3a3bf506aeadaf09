//! What the cluster holds of a job resource's state besides its status, looked up at each
//! look the same way for both kinds (observe's part): its FlinkStateSnapshots, its kept
//! revisions, and who in its namespace may still need the savepoints its history's trim
//! would dispose of.

use flink_operator_api::JobKind;
use flink_operator_api::LifecycleStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{
    history,
    protected::{NeededBy, Protected},
    revisions::Revision,
    snapshot_resources::{self, JobSnapshot},
    snapshots,
};
use crate::{caches::Caches, policy::Policy};

/// The job resource whose records are looked up.
#[derive(Debug, Clone, Copy)]
pub struct JobOf<'a, S> {
    pub kind: JobKind,
    pub meta: &'a ObjectMeta,
    pub status: Option<&'a S>,
    /// The spec's `job.initialSavepointPath` (a path the job may still need).
    pub initial_savepoint_path: Option<&'a str>,
}

/// The records of one job resource.
#[derive(Debug, Clone)]
pub struct Records {
    pub snapshots: Vec<JobSnapshot>,
    pub revisions: Vec<Revision>,
    /// Who may still need the savepoints of its status history (looked up only when its
    /// trim disposes of some).
    pub history_needed_by: NeededBy,
}

/// Looks up the records of `job` in the shared caches.
pub fn look_up<S: LifecycleStatus>(
    caches: &Caches,
    job: JobOf<'_, S>,
    policy: &Policy,
    now_ms: i64,
) -> Records {
    let namespace = job.meta.namespace.as_deref().unwrap_or_default();
    let snapshots = snapshot_resources::of_job(caches, policy, job.kind, job.meta);
    let revisions = history::of_job(caches, job.kind, job.meta);
    let protected = Protected::of_status(job.status, Some(&revisions), job.initial_savepoint_path);
    let history = job.status.and_then(|s| s.job_status());
    let paths = history.map(|h| snapshots::history_to_look_up(h, &protected, &snapshots, policy, now_ms));
    let history_needed_by = NeededBy::look_up(caches, namespace, paths.into_iter().flatten());
    Records {
        snapshots,
        revisions,
        history_needed_by,
    }
}
