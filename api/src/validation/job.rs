//! Rules on `spec.job`, shared by FlinkDeployments and FlinkSessionJobs.

use super::Violation;
use crate::JobSpec;

/// `initialSavepointPath` is where a running job was first restored from. Editing it later
/// changes nothing by itself, which misleads: the user believes the job will come back
/// from the new path. The edit is accepted only together with a new
/// `savepointRedeployNonce`, the explicit request to redeploy from that savepoint.
pub(crate) fn initial_savepoint_path_is_immutable(
    new: Option<&JobSpec>,
    old: Option<&JobSpec>,
    out: &mut Vec<Violation>,
) {
    let (Some(new), Some(old)) = (new, old) else {
        return;
    };
    let was = old.initial_savepoint_path.as_deref().filter(|p| !p.is_empty());
    let requested = new.initial_savepoint_path.as_deref().filter(|p| !p.is_empty());
    if was == requested || new.savepoint_redeploy_nonce != old.savepoint_redeploy_nonce {
        return;
    }
    out.push(Violation::new(
        "spec.job.initialSavepointPath",
        format!(
            "cannot be changed on its own (was {}, requested {}): to redeploy the job from a savepoint, \
             change spec.job.savepointRedeployNonce in the same update",
            describe(was),
            describe(requested)
        ),
    ));
}

fn describe(path: Option<&str>) -> String {
    path.map_or_else(|| "unset".to_owned(), |p| format!("{p:?}"))
}

/// A new `savepointRedeployNonce` asks to redeploy from `initialSavepointPath`, which must
/// then name a savepoint (D30).
pub(crate) fn redeploy_needs_a_savepoint(
    new: &JobSpec,
    reconciled: Option<&JobSpec>,
    out: &mut Vec<Violation>,
) {
    let previous = reconciled.and_then(|r| r.savepoint_redeploy_nonce);
    let Some(nonce) = new.savepoint_redeploy_nonce else {
        return;
    };
    if Some(nonce) == previous {
        return;
    }
    if new
        .initial_savepoint_path
        .as_deref()
        .is_none_or(|p| p.trim().is_empty())
    {
        out.push(Violation::new(
            "spec.job.initialSavepointPath",
            "must name a savepoint when spec.job.savepointRedeployNonce changes (the job is redeployed from it)",
        ));
    }
}

/// Parallelism must be positive when the job, not the TaskManager count, sizes the
/// cluster (D17).
pub(crate) fn parallelism_is_positive(job: &JobSpec, out: &mut Vec<Violation>) {
    if job.parallelism.unwrap_or(0) < 1 {
        out.push(Violation::new(
            "spec.job.parallelism",
            format!("must be larger than 0 (got {})", job.parallelism.unwrap_or(0)),
        ));
    }
}
