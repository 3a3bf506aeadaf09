//! Rules of FlinkStateSnapshot (the Apache operator's N1–N4, plus our namespace rule).

use kube::ResourceExt;

use super::{SnapshotTarget, Violation};
use crate::{
    FlinkStateSnapshot, FlinkStateSnapshotState, JobKind, keys::annotations::SAVEPOINT_COMPLETED_AT,
};

/// The job a snapshot's reference must be looked up for, if the rules need to know whether
/// it exists: `(kind, name)` in the snapshot's own `namespace`.
pub fn job_to_look_up(snapshot: &FlinkStateSnapshot, namespace: &str) -> Option<(JobKind, String)> {
    let spec = &snapshot.spec;
    if spec.savepoint.is_some() == spec.checkpoint.is_some() || already_exists(snapshot) || !pending(snapshot)
    {
        return None;
    }
    let reference = spec.job_reference.as_ref()?;
    let kind = reference.kind?;
    let name = reference.name.clone().filter(|n| !n.is_empty())?;
    if reference.namespace.as_deref().is_some_and(|ns| ns != namespace) {
        return None;
    }
    Some((kind, name))
}

fn already_exists(snapshot: &FlinkStateSnapshot) -> bool {
    snapshot
        .spec
        .savepoint
        .as_ref()
        .and_then(|s| s.already_exists)
        .unwrap_or(false)
}

/// A snapshot not yet triggered; once it ran, its job may be gone without making the
/// record invalid (N4).
fn pending(snapshot: &FlinkStateSnapshot) -> bool {
    snapshot
        .status
        .as_ref()
        .and_then(|s| s.state)
        .is_none_or(|state| state == FlinkStateSnapshotState::TriggerPending)
}

/// Validates a FlinkStateSnapshot in `namespace`, given what the lookup of its job found.
pub fn validate(
    new: &FlinkStateSnapshot,
    _old: Option<&FlinkStateSnapshot>,
    namespace: &str,
    target: &SnapshotTarget,
) -> Vec<Violation> {
    let mut out = Vec::new();
    let spec = &new.spec;
    match (spec.savepoint.is_some(), spec.checkpoint.is_some()) {
        (true, true) => out.push(Violation::new(
            "spec",
            "exactly one of spec.savepoint or spec.checkpoint must be set, not both",
        )),
        (false, false) => out.push(Violation::new(
            "spec",
            "exactly one of spec.savepoint or spec.checkpoint must be set",
        )),
        _ => {}
    }
    if let Some(limit) = spec.backoff_limit
        && limit < -1
    {
        out.push(Violation::new(
            "spec.backoffLimit",
            format!("must be -1 (retry without limit) or a number of retries >= 0 (got {limit})"),
        ));
    }
    completed_at(new, &mut out);
    if already_exists(new) {
        // Records a savepoint taken elsewhere: no job is triggered, but the path is the record.
        if spec
            .savepoint
            .as_ref()
            .and_then(|s| s.path.as_deref())
            .is_none_or(|p| p.trim().is_empty())
        {
            out.push(Violation::new(
                "spec.savepoint.path",
                "must name the existing savepoint when spec.savepoint.alreadyExists is true",
            ));
        }
        return out;
    }
    let Some(reference) = &spec.job_reference else {
        out.push(Violation::new(
            "spec.jobReference",
            "must be supplied: a snapshot is taken of a FlinkDeployment's or FlinkSessionJob's job",
        ));
        return out;
    };
    if reference.kind.is_none() {
        out.push(Violation::new(
            "spec.jobReference.kind",
            "must be FlinkDeployment or FlinkSessionJob",
        ));
    }
    let name = reference.name.as_deref().unwrap_or_default();
    if name.is_empty() {
        out.push(Violation::new(
            "spec.jobReference.name",
            "must name the job's resource",
        ));
    }
    if let Some(other) = reference.namespace.as_deref()
        && other != namespace
    {
        out.push(Violation::new(
            "spec.jobReference.namespace",
            format!(
                "must be the snapshot's own namespace {namespace:?} (got {other:?}): a snapshot may only trigger \
                 savepoints and checkpoints of jobs in its own namespace"
            ),
        ));
        return out;
    }
    let kind = reference.kind.map_or("job", |k| k.as_str());
    match target {
        SnapshotTarget::NotFound if pending(new) => out.push(Violation::new(
            "spec.jobReference",
            format!("target {kind} {namespace}/{name} was not found"),
        )),
        SnapshotTarget::Unverifiable(reason) if pending(new) => out.push(Violation::new(
            "spec.jobReference",
            format!(
                "target {kind} {namespace}/{name} could not be verified, so the snapshot is refused: {reason}"
            ),
        )),
        _ => {}
    }
    out
}

/// The time a recorded savepoint was completed, as the user or the operator states it: read
/// only for a savepoint recorded with `alreadyExists` (a triggered one gets Flink's), and an
/// RFC 3339 time, or the savepoint would silently stay of unknown age.
fn completed_at(snapshot: &FlinkStateSnapshot, out: &mut Vec<Violation>) {
    let Some(at) = snapshot.annotations().get(SAVEPOINT_COMPLETED_AT) else {
        return;
    };
    let field = format!("metadata.annotations[{SAVEPOINT_COMPLETED_AT}]");
    if !already_exists(snapshot) {
        out.push(Violation::new(
            field,
            "is only read on a snapshot that records an existing savepoint (spec.savepoint.alreadyExists: true); \
             a snapshot the operator triggers gets the time Flink completes it",
        ));
    } else if at.parse::<k8s_openapi::jiff::Timestamp>().is_err() {
        out.push(Violation::new(
            field,
            format!(
                "must be an RFC 3339 time such as 2026-01-31T12:00:00Z, when Flink completed the savepoint (got {at:?})"
            ),
        ));
    }
}
