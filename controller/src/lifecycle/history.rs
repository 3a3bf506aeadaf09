//! A job's revision history and manual rollback in the lifecycle: where the pure decisions of
//! [`super::revisions`] meet the state machine, once for both job kinds.
//!
//! - **Before the machine's step** ([`rollback_request`]): a rollback the user asked for with
//!   `flink.apache.org/rollback-to-revision` waits for an update in progress, is refused
//!   (an Event, `status.revision.rollback` with the reason, the request's annotations
//!   removed; nothing else changes) or starts: the rollback is written to status first
//!   (`RollingBack`, with the revision's name), then the revision's spec is written into the
//!   resource's spec and the request's annotations are removed in one update, on the
//!   condition that the request is still there. The spec change then takes the normal update
//!   path of the job's upgrade mode.
//! - **After the machine's step** ([`follow`]): the spec the job runs (or is being upgraded
//!   to) is recorded as a revision (created, or an equal one reused and moved to the top),
//!   the history is pruned to its limit, the resource's `flink.apache.org/revision`
//!   annotation and `status.revision.current` show its number, and a rollback in flight is
//!   followed: `RolledBack` once the job runs the revision's spec and is stable, `Failed`
//!   when the update was refused or the spec was changed again meanwhile. While a rollback
//!   (manual, or a FlinkDeployment's automatic one) is being carried out, the conditions'
//!   reason `Updating` reads `RollingBack`.
//!
//! A crash anywhere is picked up from status: a rollback recorded but not yet written into
//! the spec is written again (its request is still there); once written, the spec change is
//! an ordinary update, which continues from its own recorded steps; a revision not yet
//! recorded is recorded by the next pass, from the status that holds the applied spec.

use flink_operator_api::LifecycleStatus;
use flink_operator_api::{
    RollbackPhase, RollbackStatus,
    common::{ReconciliationState, ReconciliationStatus, ResourceLifecycleState},
    keys::annotations,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use super::{
    facts::JobAction,
    kind::LifecycleHooks,
    restore::{self, RestorableState},
    revisions::{self, Revision, RevisionStep, RollbackDecision},
    spec, stop,
    terms::FAST,
};
use crate::{
    conditions::Phase,
    events::{EventNote, Reason},
    plan::Plan,
};
use flink_operator_api::{FlinkSpec, SnapshotType};

use super::revisions::RecordRevision;

/// The kept revisions of the resource of kind `kind` with `meta`, from the cache: those
/// labelled with its kind and name and owned by it (not by an earlier resource of the name
/// whose revisions are not collected yet).
pub fn of_job(
    caches: &crate::caches::Caches,
    kind: flink_operator_api::JobKind,
    meta: &ObjectMeta,
) -> Vec<Revision> {
    let wanted = revisions::revision_labels(kind, meta.name.as_deref().unwrap_or_default());
    let uid = meta.uid.as_deref();
    caches
        .revisions
        .list(meta.namespace.as_deref().unwrap_or_default(), |r| {
            let labels = r.metadata.labels.as_ref();
            wanted
                .iter()
                .all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value))
                && revisions::owned_by(r, uid)
        })
        .iter()
        .filter_map(|r| revisions::from_controller_revision(r))
        .collect()
}

/// Carries out a rollback request before the machine's step: `Some(plan)` when it starts
/// (the plan records it, then writes the revision's spec into the resource). A refusal adds
/// its Event, status and the request's removal to what the step decides; a request that
/// waits changes nothing.
pub fn rollback_request<'a, K: LifecycleHooks<'a>>(k: &mut K) -> Option<Plan<K::Status, K::Action>> {
    let facts = k.facts;
    let kept = facts.revisions?;
    if k.deleting() {
        return None;
    }
    let annotations = k.meta.annotations.as_ref()?;
    let value = annotations.get(annotations::ROLLBACK_TO_REVISION)?.clone();
    let request = match revisions::rollback_request(annotations) {
        Ok(Some(request)) => request,
        Ok(None) => return None,
        Err(why) => {
            refuse(k, None, why, &value);
            return None;
        }
    };
    let in_flight = rollback(&k.status).filter(|r| r.phase == Some(RollbackPhase::RollingBack));
    // A rollback recorded whose spec was not written yet (its write failed, or the operator
    // stopped in between) is written again.
    let unwritten = in_flight
        .filter(|r| r.to == Some(request.to))
        .and_then(|r| {
            kept.iter()
                .find(|rev| Some(&rev.name) == r.revision_name.as_ref())
        })
        .is_some_and(|target| !runs_version(k.spec, target));
    if in_flight.is_some() && !unwritten {
        return None;
    }
    let decision = revisions::decide_rollback(&request, kept, !unwritten && update_in_progress(k), &|path| {
        recorded(k, path)
    });
    match decision {
        RollbackDecision::Wait => None,
        RollbackDecision::Refuse(why) => {
            refuse(k, Some(request.to), why, &value);
            None
        }
        RollbackDecision::Start {
            spec,
            restore_from_revision_state,
            state,
            from,
            to,
        } => {
            let current = serde_json::to_value(k.spec).unwrap_or(Value::Null);
            let written = revisions::rollback_spec(&spec, &current);
            let name = kept.iter().find(|r| r.number == to).map(|r| r.name.clone());
            let restore_path = state.filter(|_| restore_from_revision_state);
            let restoring = match &restore_path {
                Some(path) => format!("restoring {path}, the state revision {to} was started from"),
                None => "restoring the state taken as the running job stops".to_owned(),
            };
            let message = format!("rolling back from revision {from} to revision {to}, {restoring}");
            let now = facts.now_ms;
            let (status, mut out) = k.parts();
            set_rollback(
                status,
                RollbackStatus {
                    from: Some(from),
                    to: Some(to),
                    revision_name: name,
                    restore_path,
                    phase: Some(RollbackPhase::RollingBack),
                    message: Some(message.clone()),
                    timestamp: Some(now),
                },
            );
            out.event(EventNote::normal(
                Reason::RollingBack,
                super::terms::capitalised(&message),
            ));
            out.act(JobAction::RollBack {
                spec: written,
                request: value,
                drop_restore: annotations.contains_key(annotations::ROLLBACK_RESTORE),
            });
            k.conditions(Phase::RollingBack, &message);
            Some(k.record_then(FAST))
        }
    }
}

/// Whether the operator still has a record of the state at `path`: a completed snapshot
/// resource of the job names it (and is not being deleted with its files), or the job's
/// status does (the state it was started from, its last savepoint, its savepoint history).
///
/// The operator cannot look at the storage itself (it may not reach it, and has no
/// credentials of it), so this is what it knows: it disposes of a savepoint only through a
/// snapshot resource's deletion or the history's trim, both of which drop the record, and
/// never of a path a job may still need ([`super::protected`]), a kept revision's state
/// included. A path no record lists was disposed of, by the operator or before, or was
/// never recorded (a checkpoint a last-state upgrade started from, which Flink removes
/// once newer ones complete).
pub fn recorded<'a, K: LifecycleHooks<'a>>(k: &K, path: &str) -> bool {
    let path = path.trim();
    let by_snapshot = k.facts.snapshots.iter().any(|s| {
        s.state == flink_operator_api::FlinkStateSnapshotState::Completed
            && !(s.deleting && s.disposes)
            && s.path.as_deref().map(str::trim) == Some(path)
    });
    let job = k.status.job_status();
    let info = job.and_then(|j| j.savepoint_info.as_ref());
    let by_status = job
        .and_then(|j| j.upgrade_savepoint_path.as_deref())
        .into_iter()
        .chain(
            info.into_iter()
                .flat_map(|i| {
                    i.last_savepoint
                        .iter()
                        .chain(i.savepoint_history.iter().flatten())
                })
                .filter_map(|s| s.location.as_deref()),
        )
        .any(|p| p.trim() == path);
    by_snapshot || by_status
}

/// Whether an update is in progress: a spec not applied yet, a stop-with-savepoint in
/// flight, or a start (or a FlinkDeployment's automatic rollback) not finished.
fn update_in_progress<'a, K: LifecycleHooks<'a>>(k: &K) -> bool {
    let status = &k.status;
    let recorded = k.recorded().ok().flatten();
    let state = status.reconciliation().and_then(|rs| rs.state);
    stop::pending_trigger(status).is_some()
        || matches!(
            state,
            Some(ReconciliationState::Upgrading | ReconciliationState::RollingBack)
        )
        || recorded.is_some_and(|r| spec::changed(&r, k.spec))
}

fn refuse<'a, K: LifecycleHooks<'a>>(k: &mut K, to: Option<i64>, why: String, value: &str) {
    let now = k.facts.now_ms;
    let from = k.status.revision().and_then(|r| r.current);
    let (status, mut out) = k.parts();
    out.event(EventNote::warning(Reason::RollbackRefused, why.clone()));
    set_rollback(
        status,
        RollbackStatus {
            from,
            to,
            phase: Some(RollbackPhase::Refused),
            message: Some(why),
            timestamp: Some(now),
            ..RollbackStatus::default()
        },
    );
    out.act(JobAction::DropRollbackRequest {
        request: value.to_owned(),
    });
}

/// Records the revision the plan's status applies, prunes the history, and follows a
/// rollback in flight (see the module's documentation).
pub fn follow<'a, K: LifecycleHooks<'a>>(k: &K, plan: &mut Plan<K::Status, K::Action>) {
    let facts = k.facts;
    let Some(kept) = facts.revisions else {
        return;
    };
    if k.deleting() {
        return;
    }
    let Some(applied) = applied_spec::<K::Spec>(plan.status.reconciliation()) else {
        return;
    };
    let applied = serde_json::to_value(&applied).unwrap_or(Value::Null);
    let started_from = plan.status.job_status().and_then(restore::recorded);
    let name = k.meta.name.clone().unwrap_or_default();
    let started_from = started_from.as_ref().map(|s| (s.path.as_str(), s.timestamp_ms));
    let step = revisions::record(&name, kept, &applied, started_from, facts.now_ms);
    let current = step.current().clone();
    let after = after_step(kept, &step);
    let last_stable = plan
        .status
        .reconciliation()
        .and_then(|rs| rs.last_stable_spec::<K::Spec>().ok().flatten())
        .and_then(|stable| serde_json::to_value(stable).ok())
        .and_then(|stable| revisions::matching(&after, &stable).map(|r| r.number));
    let target = rollback(&plan.status)
        .filter(|r| r.phase == Some(RollbackPhase::RollingBack))
        .and_then(|r| r.revision_name.clone());
    let in_flight = target
        .as_ref()
        .and_then(|n| after.iter().find(|r| &r.name == n))
        .map(|r| r.number);
    let prune = revisions::prune(
        &after,
        facts.policy.revision_history_limit,
        current.number,
        last_stable,
        in_flight,
    );
    let shown = k
        .meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::REVISION))
        .map(String::as_str);
    let write = !matches!(step, RevisionStep::Unchanged(_));
    if write || !prune.is_empty() || shown != Some(current.number.to_string().as_str()) {
        plan.actions.push(
            JobAction::RecordRevision(RecordRevision {
                step: write.then_some(step),
                prune,
                current: current.number,
            })
            .into(),
        );
    }
    plan.status.revision_mut().current = Some(current.number);
    follow_rollback(k, plan, &current, &after);
}

/// The history once `step` is done.
fn after_step(kept: &[Revision], step: &RevisionStep) -> Vec<Revision> {
    let mut after: Vec<Revision> = kept
        .iter()
        .filter(|r| r.name != step.current().name)
        .cloned()
        .collect();
    after.push(step.current().clone());
    after
}

/// The spec the job runs or is being upgraded to, as the status records it: the last
/// stable one while (or after) a FlinkDeployment's automatic rollback runs it, else the
/// last reconciled one.
fn applied_spec<S: FlinkSpec>(reconciliation: Option<&ReconciliationStatus>) -> Option<S> {
    let rs = reconciliation?;
    if matches!(
        rs.state,
        Some(ReconciliationState::RollingBack | ReconciliationState::RolledBack)
    ) && let Ok(Some(stable)) = rs.last_stable_spec::<S>()
    {
        return Some(stable);
    }
    rs.last_reconciled_spec::<S>().ok().flatten()
}

/// Whether `spec` is `revision`'s job version.
fn runs_version(spec: &impl FlinkSpec, revision: &Revision) -> bool {
    let spec = serde_json::to_value(spec).unwrap_or(Value::Null);
    revisions::normalised(&spec) == revisions::normalised(&revision.spec)
}

fn follow_rollback<'a, K: LifecycleHooks<'a>>(
    k: &K,
    plan: &mut Plan<K::Status, K::Action>,
    current: &Revision,
    after: &[Revision],
) {
    let rolling_back =
        plan.status.reconciliation().and_then(|rs| rs.state) == Some(ReconciliationState::RollingBack);
    let Some(rollback) = rollback(&plan.status)
        .cloned()
        .filter(|r| r.phase == Some(RollbackPhase::RollingBack))
    else {
        if rolling_back {
            rolling_back_phase(plan);
        }
        return;
    };
    let Some(target) = after
        .iter()
        .find(|r| Some(&r.name) == rollback.revision_name.as_ref())
    else {
        return;
    };
    let from = rollback.from.unwrap_or_default();
    let to = rollback.to.unwrap_or_default();
    // Only a request for this very rollback keeps it going while the spec runs something
    // else (its spec write is then made again); a request for another revision, waiting for
    // this one to end, does not: the rollback was superseded.
    let requested = (k.meta.annotations.as_ref())
        .and_then(|a| revisions::rollback_request(a).ok().flatten())
        .is_some_and(|request| Some(request.to) == rollback.to);
    let phase = condition_phase(&plan.status);
    let outcome = if !runs_version(k.spec, target) && !requested {
        Some((
            RollbackPhase::Failed,
            format!(
                "the rollback from revision {from} to revision {to} was superseded: the spec was changed again, and that change is applied instead"
            ),
        ))
    } else if current.name == target.name
        && *plan.status.lifecycle_state_mut() == Some(ResourceLifecycleState::Stable)
    {
        Some((
            RollbackPhase::RolledBack,
            format!(
                "rolled back from revision {from} to revision {to}: the job runs its spec again, as revision {}",
                current.number
            ),
        ))
    } else if matches!(phase, Some(Phase::UpdateFailed | Phase::DeployFailed)) {
        let why = plan.status.error_mut().clone().unwrap_or_default();
        Some((
            RollbackPhase::Failed,
            format!("the rollback from revision {from} to revision {to} failed: {why}"),
        ))
    } else {
        None
    };
    match outcome {
        Some((done, message)) => {
            let event = match done {
                RollbackPhase::RolledBack => {
                    EventNote::normal(Reason::RolledBack, super::terms::capitalised(&message))
                }
                _ => EventNote::warning(Reason::RollbackFailed, super::terms::capitalised(&message)),
            };
            plan.events.push(event);
            set_rollback(
                &mut plan.status,
                RollbackStatus {
                    phase: Some(done),
                    message: Some(message),
                    ..rollback
                },
            );
        }
        None => rolling_back_phase(plan),
    }
}

/// The state a rollback restores instead of the one its update path chose
/// (`flink.apache.org/rollback-restore: revision`), while the spec is the revision's: the
/// state the revision was started from, with its time where a snapshot resource or the
/// savepoint history knows it (the restore-age guard needs it).
pub fn revision_state<'a, K: LifecycleHooks<'a>>(k: &K) -> Option<RestorableState> {
    let rollback = rollback(&k.status).filter(|r| r.phase == Some(RollbackPhase::RollingBack))?;
    let path = rollback.restore_path.clone()?;
    let target = k
        .facts
        .revisions?
        .iter()
        .find(|r| Some(&r.name) == rollback.revision_name.as_ref())?;
    if !runs_version(k.spec, target) {
        return None;
    }
    // Once the revision's spec is recorded to run (the rollback committed), its job starts
    // from that state: a later change (a suspension before the rolled-back job was seen
    // running, say) ends that job as its upgrade mode says, keeping what it did since, and
    // does not go back to the revision's state again. A suspended recorded spec has not run
    // the revision yet: its resume restores the revision's state.
    let committed = applied_spec::<K::Spec>(k.status.reconciliation())
        .is_some_and(|recorded| runs_version(&recorded, target) && !spec::is_suspended(&recorded));
    if committed {
        return None;
    }
    let snapshot = k
        .facts
        .snapshots
        .iter()
        .find(|s| s.path.as_deref() == Some(path.as_str()));
    let savepoint = k
        .status
        .job_status()
        .and_then(|j| j.savepoint_info.as_ref())
        .into_iter()
        .flat_map(|i| {
            i.last_savepoint
                .iter()
                .chain(i.savepoint_history.iter().flatten())
        })
        .find(|s| s.location.as_deref() == Some(path.as_str()));
    let kind = match snapshot.map(|s| s.kind) {
        Some(kind) => kind,
        // Flink names a checkpoint's directory chk-<n>.
        None if savepoint.is_none()
            && path
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .is_some_and(|d| d.starts_with("chk-")) =>
        {
            SnapshotType::Checkpoint
        }
        None => SnapshotType::Savepoint,
    };
    let timestamp_ms = snapshot
        .and_then(|s| s.result_ms)
        .or_else(|| savepoint.and_then(|s| s.time_stamp))
        .or(target
            .started_from_ms
            .filter(|_| target.started_from.as_deref() == Some(path.as_str())));
    Some(RestorableState {
        kind,
        path,
        timestamp_ms,
    })
}

fn rollback(status: &impl LifecycleStatus) -> Option<&RollbackStatus> {
    status.revision()?.rollback.as_ref()
}

fn set_rollback(status: &mut impl LifecycleStatus, rollback: RollbackStatus) {
    status.revision_mut().rollback = Some(rollback);
}

fn condition_phase(status: &impl LifecycleStatus) -> Option<Phase> {
    Phase::from_reason(status.conditions()?.first()?.reason.as_deref()?)
}

/// While a rollback is carried out, the conditions' reason `Updating` reads `RollingBack`
/// (the same readiness), in the status written before the plan's actions too.
fn rolling_back_phase<S: LifecycleStatus, A>(plan: &mut Plan<S, A>) {
    rename_phase(&mut plan.status, Phase::Updating, Phase::RollingBack);
    if let Some(before) = plan.status_before.as_mut() {
        rename_phase(before, Phase::Updating, Phase::RollingBack);
    }
}

/// The conditions' reason `from` reads `to` (a phase of the same readiness).
fn rename_phase(status: &mut impl LifecycleStatus, from: Phase, to: Phase) {
    if let Some(conditions) = status.conditions_mut().as_mut() {
        for condition in conditions {
            if condition.reason.as_deref().and_then(Phase::from_reason) == Some(from) {
                condition.reason = Some(to.as_str().to_owned());
            }
        }
    }
}
