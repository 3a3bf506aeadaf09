//! A deleted cluster's JobManager must have exited before anything takes its place: it
//! keeps writing its high-availability metadata (leader records, job graphs, checkpoint
//! pointers) until its process ends, so that metadata is deleted only after it, and a
//! cluster of the same name (the next spec's, or a recovered one) is not started while it
//! runs: two JobManagers of one cluster id would both act on that metadata, and one that
//! finds it deleted fails with a fatal error whose handling may write it again. The
//! cluster's Deployments are deleted in the background, so their pods are what is waited
//! for, through the shared cache (their deletion wakes the resource); the wait is a step of
//! its own, so no reconcile blocks on it.

use super::{Decision, Phase, Plan};
use crate::plan::Next;

/// How long the next step waits for the JobManager pods of a deleted cluster to be gone
/// before it goes ahead anyway (a pod stuck terminating on a lost node).
pub(super) const JOB_MANAGER_EXIT_WAIT_MS: i64 = 60_000;

/// While a JobManager pod of the deleted cluster is left (and not for longer than
/// [`JOB_MANAGER_EXIT_WAIT_MS`] since the step was recorded): a plan that waits, looking
/// again soon. `None` when the next step can be taken now.
pub(super) fn wait_for_job_manager_exit(d: &mut Decision) -> Option<Plan> {
    if !d.obs.job_manager_pods_left {
        return None;
    }
    // Since the cluster's deletion was recorded: the step that deleted it (the change's, or
    // the resource deletion's, written before it is sent), not earlier than the resource's
    // own deletion (a status written before that step was recorded says less).
    let step = (d.status.reconciliation_status.as_ref()).and_then(|rs| rs.reconciliation_timestamp);
    let since = match &d.fd.metadata.deletion_timestamp {
        Some(deleted) => Some(step.unwrap_or(i64::MIN).max(deleted.0.as_millisecond())),
        None => step,
    };
    if since.is_some_and(|at| d.obs.now_ms - at > JOB_MANAGER_EXIT_WAIT_MS) {
        tracing::warn!("JobManager pods still there after 60 s; going on without waiting for them");
        return None;
    }
    let reason = if d.fd.metadata.deletion_timestamp.is_some() {
        Phase::Deleting
    } else {
        Phase::Updating
    };
    d.conditions(reason, "waiting for the previous JobManager to exit");
    let for_ms = since.map_or(0, |at| u64::try_from(d.obs.now_ms - at).unwrap_or(0));
    Some(d.take().done(Next::Stopping { for_ms }))
}
