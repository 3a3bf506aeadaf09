//! Savepoints and checkpoints of an application cluster's running job, through the shared
//! lifecycle steps ([`crate::lifecycle::snapshots`]).

use flink_operator_api::FlinkDeploymentSpec;

use super::{Decision, Plan};
use crate::lifecycle::snapshots;

/// Follows pending (non-upgrade) savepoints and checkpoints into status. Returns whether
/// one is still pending.
pub(super) fn settle(d: &mut Decision, recorded: &FlinkDeploymentSpec) -> bool {
    let facts = d.facts();
    let (status, mut out) = d.parts();
    snapshots::settle(status, &facts, recorded.job.as_ref(), &mut out)
}

/// With nothing pending and the job running: a manual savepoint or checkpoint asked for by
/// a new nonce, a periodic savepoint that is due, or the removal of old savepoints.
pub(super) fn schedule(d: &mut Decision, recorded: &FlinkDeploymentSpec) -> Option<Plan> {
    d.fd.spec.job.as_ref()?;
    let job = d.job_status();
    if !job.is_running() {
        return None;
    }
    let facts = d.facts();
    let fd = d.fd;
    if let Some(wanted) = snapshots::due(&fd.spec, recorded, &job, &facts) {
        let (status, mut out) = d.parts();
        snapshots::trigger(status, &fd.spec, recorded, wanted, &facts, &mut out);
        d.observed_phase();
        return Some(d.take().record_then(Vec::new()));
    }
    let stored = fd.status.as_ref().and_then(|s| s.error.as_deref());
    let (status, mut out) = d.parts();
    snapshots::report_unsupported_schedule(status, stored, &facts, &mut out);
    let (status, mut out) = d.parts();
    if snapshots::trim_history(status, &facts, &mut out) {
        d.observed_phase();
        return Some(d.take().done(super::FAST));
    }
    None
}
