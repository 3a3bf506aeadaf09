//! What the cluster holds of a job resource's state besides its status, looked up at each
//! look the same way for both kinds (observe's part): its FlinkStateSnapshots, its kept
//! revisions, and who in its namespace may still need the savepoints its history's trim
//! would dispose of.

use flink_operator_api::{FlinkSpec, JobKind, LifecycleStatus};
use kube::core::object::{HasSpec, HasStatus};

use super::{
    history,
    protected::{NeededBy, Protected},
    revisions::Revision,
    snapshot_resources::{self, JobSnapshot},
    snapshots,
};
use crate::{caches::Caches, policy::Policy};

/// The records of one job resource.
#[derive(Debug, Clone)]
pub struct Records {
    pub snapshots: Vec<JobSnapshot>,
    pub revisions: Vec<Revision>,
    /// Who may still need the savepoints of its status history (looked up only when its
    /// trim disposes of some).
    pub history_needed_by: NeededBy,
}

/// Looks up the records of `resource`, a job resource of kind `kind`, in the shared caches.
pub fn look_up<R>(caches: &Caches, kind: JobKind, resource: &R, policy: &Policy, now_ms: i64) -> Records
where
    R: kube::Resource + HasSpec<Spec: FlinkSpec> + HasStatus<Status: LifecycleStatus>,
{
    let meta = resource.meta();
    let status = resource.status();
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    let snapshots = snapshot_resources::of_job(caches, policy, kind, meta);
    let revisions = history::of_job(caches, kind, meta);
    // The spec's initialSavepointPath is a path the job may still need.
    let initial = (resource.spec().job()).and_then(|j| j.initial_savepoint_path.as_deref());
    let protected = Protected::of_status(status, Some(&revisions), initial);
    let history = status.and_then(|s| s.job_status());
    let paths = history.map(|h| snapshots::history_to_look_up(h, &protected, &snapshots, policy, now_ms));
    let history_needed_by = NeededBy::look_up(caches, namespace, paths.into_iter().flatten());
    Records {
        snapshots,
        revisions,
        history_needed_by,
    }
}
