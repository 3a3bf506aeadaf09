//! A job's revision history and manual rollback, decided once for FlinkDeployments and
//! FlinkSessionJobs (pure: no I/O; the clock is an input).
//!
//! [`super::history`] wires these decisions into the lifecycle of both job kinds.
//!
//! - **Revisions.** Each spec the operator deploys or upgrades a job to is a revision: an
//!   `apps/v1` ControllerRevision owned by the resource, named `<resource>-<hash>` after its
//!   spec as Kubernetes names a StatefulSet's, numbered 1, 2, 3, ... in its `revision`
//!   field, labelled with the resource's kind and name ([`selector`] lists them), holding the
//!   job's version ([`normalised`]) in its `data` and, in annotations, when it was last
//!   applied and the state (savepoint or checkpoint path) it was started from then.
//! - **What a revision holds** is the job's version only: the spec without the one-shot
//!   requests, consumed once acted on (every nonce: `restartNonce`, and under `job`
//!   `savepointTriggerNonce`, `checkpointTriggerNonce`, `savepointRedeployNonce`,
//!   `autoscalerResetNonce`), and without how the operator runs the job now (`job.state`,
//!   `job.upgradeMode`, the `kubernetes.operator.*` keys of `flinkConfiguration`). Two specs
//!   that differ only there are the same revision, and a rollback keeps those fields as they
//!   are now ([`rollback_spec`]): an old nonce would ask again for what it once asked for (a
//!   redeploy from `initialSavepointPath` rather than from the state just taken), and the new
//!   spec's upgrade mode says how the running job is ended, so an old `stateless` would drop
//!   its state.
//! - **Recording** ([`record`]): a spec equal to a kept revision reuses it and moves it to
//!   the top (its number becomes the highest plus one), as `kubectl rollout` does; one equal
//!   to the newest changes nothing (a restart or a resume is no new version).
//! - **Pruning** ([`prune`]): at most `kubernetes.operator.job.revision-history.limit` are
//!   kept, the oldest go first, never the current one, the last stable one or one an update
//!   or rollback is in the middle of.
//! - **Rollback**: the annotation `flink.apache.org/rollback-to-revision: "N"` asks for
//!   revision N's spec ([`rollback_request`]); it waits for an update in progress, is refused
//!   for a revision that is not kept, and otherwise starts ([`decide_rollback`]). The job
//!   then restores the state taken when it stops for the change, or, with
//!   `flink.apache.org/rollback-restore: revision`, the state revision N was started from.

use std::collections::BTreeMap;

use flink_operator_api::{
    FlinkConfiguration, JobKind,
    keys::{annotations, labels},
};
use k8s_openapi::{
    api::apps::v1::ControllerRevision,
    apimachinery::pkg::{
        apis::meta::v1::{ObjectMeta, OwnerReference},
        runtime::RawExtension,
    },
};
use serde_json::{Map, Value, json};

/// Hex digits of the hash in a revision's name.
pub const HASH_LEN: usize = 10;
/// The longest object name Kubernetes accepts (a DNS subdomain).
const MAX_NAME_LEN: usize = 253;
use flink_operator_api::validation::values::MAX_EVENTFUL_NAME_LENGTH;
/// The longest label value Kubernetes accepts.
const MAX_LABEL_VALUE_LEN: usize = 63;

/// The fields of `spec` that are no part of a job's version (see the module's documentation).
const SPEC_FIELDS_NOT_KEPT: &[&str] = &["restartNonce"];
/// The fields of `spec.job` that are no part of a job's version.
const JOB_FIELDS_NOT_KEPT: &[&str] = &[
    "savepointTriggerNonce",
    "checkpointTriggerNonce",
    "savepointRedeployNonce",
    "autoscalerResetNonce",
    "state",
    "upgradeMode",
];
/// Where a revision's ControllerRevision keeps the spec, in its `data`.
const DATA_SPEC: &str = "spec";

/// One revision of a job, as its ControllerRevision shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// 1, 2, 3, ...: the highest is the one applied last.
    pub number: i64,
    /// `<resource>-<hash>` ([`revision_name`]).
    pub name: String,
    /// The spec as applied ([`normalised`]).
    pub spec: Value,
    /// The savepoint or checkpoint path the job was started from when the revision was last
    /// applied (None: no state).
    pub started_from: Option<String>,
    /// When that state was taken, epoch milliseconds (None: not known).
    pub started_from_ms: Option<i64>,
    /// When it was last applied (created, or reused), epoch milliseconds.
    pub applied_ms: i64,
}

/// `spec` (a FlinkDeployment's or FlinkSessionJob's, as JSON) as a revision holds it: without
/// the one-shot requests and how the operator runs the job now (see the module's
/// documentation), and without members whose value is `null` (the same as absent). Two specs
/// of the same job version are equal once normalised.
pub fn normalised(spec: &Value) -> Value {
    let mut spec = without_nulls(spec);
    let Value::Object(fields) = &mut spec else {
        return spec;
    };
    for field in SPEC_FIELDS_NOT_KEPT {
        fields.remove(*field);
    }
    if let Some(Value::Object(job)) = fields.get_mut("job") {
        for field in JOB_FIELDS_NOT_KEPT {
            job.remove(*field);
        }
    }
    if let Some(config) = fields.remove("flinkConfiguration") {
        match serde_json::from_value::<FlinkConfiguration>(config.clone()) {
            Ok(parsed) => {
                if let Some(kept) = super::spec::without_operator_keys(Some(parsed)) {
                    fields.insert("flinkConfiguration".to_owned(), json!(kept));
                }
            }
            // Not a configuration (the API server's schema prevents it): kept as it is.
            Err(_) => {
                fields.insert("flinkConfiguration".to_owned(), config);
            }
        }
    }
    spec
}

fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// The kept revision whose spec is `spec`'s job version, if any (e.g. the one of the last
/// stable spec, for [`prune`]).
pub fn matching<'a>(revisions: &'a [Revision], spec: &Value) -> Option<&'a Revision> {
    let spec = normalised(spec);
    revisions
        .iter()
        .filter(|r| normalised(&r.spec) == spec)
        .max_by_key(|r| r.number)
}

/// The short hash of a normalised spec in a revision's name: [`HASH_LEN`] lowercase hex
/// digits of the SHA-256 of its JSON with the members of every object in key order (so it
/// does not depend on how the spec was serialised). `collision` > 0 gives another hash for a
/// spec whose name another spec already has, as Kubernetes' collision count does.
pub fn spec_hash(spec: &Value, collision: u32) -> String {
    let mut text = String::new();
    canonical(spec, &mut text);
    if collision > 0 {
        text.push_str(&collision.to_string());
    }
    short_hash(text.as_bytes())
}

/// `<resource>-<hash>` (see [`spec_hash`]): at most 253 characters, a longer resource name
/// being shortened (and then also hashed, so that two such resources differ).
pub fn revision_name(resource: &str, spec: &Value, collision: u32) -> String {
    let spec = normalised(spec);
    let room = MAX_NAME_LEN - 1 - HASH_LEN;
    if resource.len() <= room {
        return format!("{resource}-{}", spec_hash(&spec, collision));
    }
    let mut text = String::new();
    canonical(&spec, &mut text);
    text.push_str(resource);
    if collision > 0 {
        text.push_str(&collision.to_string());
    }
    format!("{}-{}", shortened(resource, room), short_hash(text.as_bytes()))
}

/// The labels of a revision of the resource `kind` `resource`.
pub fn revision_labels(kind: JobKind, resource: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::REVISION_OWNER_KIND.to_owned(), kind.as_str().to_owned()),
        (
            labels::REVISION_OWNER_NAME.to_owned(),
            owner_label_value(resource),
        ),
    ])
}

/// The label selector of the revisions of the resource `kind` `resource` (for a list call, or
/// `kubectl get controllerrevisions -l ...`).
pub fn selector(kind: JobKind, resource: &str) -> String {
    revision_labels(kind, resource)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The value of [`labels::REVISION_OWNER_NAME`]: the resource's name, or, when it is too long
/// for a label value, its first characters and a hash of all of it.
pub fn owner_label_value(resource: &str) -> String {
    if is_label_value(resource) {
        return resource.to_owned();
    }
    let hash = short_hash(resource.as_bytes());
    let prefix = shortened(resource, MAX_LABEL_VALUE_LEN - 1 - HASH_LEN);
    if prefix.is_empty() {
        hash
    } else {
        format!("{prefix}-{hash}")
    }
}

/// The ControllerRevision that records `revision` of the resource `kind` `resource` in
/// `namespace`, owned by it through `owner` (the resource's controller owner reference, so
/// the revision goes with it). Its `data` (`{"spec": ...}`) never changes once created, as
/// Kubernetes requires; a reuse changes only its number and annotations ([`reuse_patch`]).
pub fn controller_revision(
    kind: JobKind,
    resource: &str,
    namespace: &str,
    owner: OwnerReference,
    revision: &Revision,
) -> ControllerRevision {
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(revision.name.clone()),
            namespace: Some(namespace.to_owned()),
            labels: Some(revision_labels(kind, resource)),
            annotations: Some(
                applied_annotations(revision)
                    .into_iter()
                    .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
                    .collect(),
            ),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: RawExtension(json!({ DATA_SPEC: normalised(&revision.spec) })),
        revision: Some(revision.number),
    }
}

/// The JSON merge patch that moves an existing ControllerRevision to `revision` (a
/// [`RevisionStep::Reuse`]): its new number, when and from what state it was applied.
pub fn reuse_patch(revision: &Revision) -> Value {
    let annotations: Map<String, Value> = applied_annotations(revision)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.map_or(Value::Null, Value::String)))
        .collect();
    json!({
        "metadata": { "annotations": annotations },
        "revision": revision.number,
    })
}

fn applied_annotations(revision: &Revision) -> [(&'static str, Option<String>); 3] {
    let time = |ms: i64| {
        k8s_openapi::jiff::Timestamp::from_millisecond(ms)
            .ok()
            .map(|t| t.to_string())
    };
    [
        (annotations::REVISION_APPLIED_AT, time(revision.applied_ms)),
        (annotations::REVISION_STARTED_FROM, revision.started_from.clone()),
        (
            annotations::REVISION_STARTED_FROM_TIME,
            revision.started_from_ms.and_then(time),
        ),
    ]
}

/// The revision a ControllerRevision records (None: not one of ours, without a name, a
/// number or a spec).
pub fn from_controller_revision(object: &ControllerRevision) -> Option<Revision> {
    let name = object.metadata.name.clone()?;
    let number = object.revision?;
    let spec = object.data.0.get(DATA_SPEC)?.clone();
    let annotation = |key: &str| {
        object
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .cloned()
    };
    let time = |key: &str| annotation(key).as_deref().and_then(crate::timestamps::millis);
    let applied_ms = time(annotations::REVISION_APPLIED_AT)
        .or_else(|| {
            object
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.as_millisecond())
        })
        .unwrap_or(0);
    Some(Revision {
        number,
        name,
        spec,
        started_from: annotation(annotations::REVISION_STARTED_FROM).filter(|p| !p.is_empty()),
        started_from_ms: time(annotations::REVISION_STARTED_FROM_TIME),
        applied_ms,
    })
}

/// Whether `object` is a revision of the resource whose uid is `uid`: owned by it, not by an
/// earlier resource of the same name whose revisions are not collected yet.
pub fn owned_by(object: &ControllerRevision, uid: Option<&str>) -> bool {
    object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| Some(o.uid.as_str()) == uid)
}

/// What recording an applied spec does to the history ([`record`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevisionStep {
    /// A new revision: create its ControllerRevision ([`controller_revision`]).
    Create(Revision),
    /// A kept revision holds the same spec: it moves to the top under a new number
    /// ([`reuse_patch`]); `previous` was its number.
    Reuse { previous: i64, revision: Revision },
    /// The newest revision holds the same spec: nothing to write.
    Unchanged(Revision),
}

impl RevisionStep {
    /// The revision the job runs once the step is done (its number goes into the
    /// resource's `flink.apache.org/revision` annotation and its status).
    pub fn current(&self) -> &Revision {
        match self {
            RevisionStep::Create(revision)
            | RevisionStep::Reuse { revision, .. }
            | RevisionStep::Unchanged(revision) => revision,
        }
    }
}

/// Records that the resource `resource` applied `applied_spec`, started from `started_from`
/// (its path and, where known, its time), at `now_ms`, given its `existing` revisions: a new revision numbered one above the
/// highest; a kept revision with the same spec is reused and moved to the top; the newest
/// with the same spec stays as it is.
pub fn record(
    resource: &str,
    existing: &[Revision],
    applied_spec: &Value,
    started_from: Option<(&str, Option<i64>)>,
    now_ms: i64,
) -> RevisionStep {
    let spec = normalised(applied_spec);
    let top = existing.iter().map(|r| r.number).max().unwrap_or(0);
    let started_from = started_from.filter(|(p, _)| !p.is_empty());
    let started_from_ms = started_from.and_then(|(_, ms)| ms);
    let started_from = started_from.map(|(p, _)| p.to_owned());
    if let Some(same) = matching(existing, &spec) {
        if same.number == top {
            return RevisionStep::Unchanged(same.clone());
        }
        return RevisionStep::Reuse {
            previous: same.number,
            revision: Revision {
                number: top + 1,
                name: same.name.clone(),
                spec,
                started_from,
                started_from_ms,
                applied_ms: now_ms,
            },
        };
    }
    // A name another spec already has (a hash collision) takes the next collision count.
    let mut collision = 0;
    let name = loop {
        let name = revision_name(resource, &spec, collision);
        if !existing.iter().any(|r| r.name == name) {
            break name;
        }
        collision += 1;
    };
    RevisionStep::Create(Revision {
        number: top + 1,
        name,
        spec,
        started_from,
        started_from_ms,
        applied_ms: now_ms,
    })
}

/// The names of the revisions to delete so that at most `limit` are kept (a limit below 1
/// counts as 1), oldest first. Never the `current` one, the `last_stable` one or the one an
/// update or rollback is in the middle of (`in_flight`), even when that keeps more than
/// `limit`.
pub fn prune(
    existing: &[Revision],
    limit: usize,
    current: i64,
    last_stable: Option<i64>,
    in_flight: Option<i64>,
) -> Vec<String> {
    let protected = |n: i64| n == current || Some(n) == last_stable || Some(n) == in_flight;
    let mut oldest_first: Vec<&Revision> = existing.iter().collect();
    oldest_first.sort_by_key(|r| r.number);
    let mut excess = oldest_first.len().saturating_sub(limit.max(1));
    let mut gone = Vec::new();
    for revision in oldest_first {
        if excess == 0 {
            break;
        }
        if !protected(revision.number) {
            gone.push(revision.name.clone());
            excess -= 1;
        }
    }
    gone
}

pub use flink_operator_api::validation::rollback::RollbackRequest;

/// The rollback the resource's `annotations` ask for: none without
/// `flink.apache.org/rollback-to-revision`; an error (a sentence naming the annotation and
/// its value, and what to do) for a value that is not a positive whole number, or a
/// `flink.apache.org/rollback-restore` other than `revision` (read as the webhook reads it).
pub fn rollback_request(annotations: &BTreeMap<String, String>) -> Result<Option<RollbackRequest>, String> {
    flink_operator_api::validation::rollback::request(Some(annotations)).map_err(|e| e.to_string())
}

/// What to do about a rollback request ([`decide_rollback`]).
#[derive(Debug, Clone, PartialEq)]
pub enum RollbackDecision {
    /// An update (or another rollback) is in progress: the request stays, and is decided
    /// once it has ended.
    Wait,
    /// The request cannot be carried out (the message says why and what to do); nothing
    /// changes.
    Refuse(String),
    /// Roll back from revision `from` (the current one) to revision `to`: write
    /// [`rollback_spec`]`(spec, current spec)` into the resource's spec, which the normal
    /// update path of the job's upgrade mode then applies.
    Start {
        /// Revision `to`'s spec, as kept ([`normalised`]).
        spec: Value,
        /// Restore `state` (the state revision `to` was started from, then known) rather
        /// than the state taken when the running job stops.
        restore_from_revision_state: bool,
        /// The state revision `to` was started from.
        state: Option<String>,
        from: i64,
        to: i64,
    },
}

/// Decides a rollback `request` given the kept `revisions` (the newest is the current one)
/// and whether an update is in progress (`update_in_progress`: it is waited for).
///
/// `recorded` says whether the operator still has a record of a state's path (see
/// [`super::history::recorded`]): a rollback asked to restore a revision's state that no
/// record lists any more is refused before anything is stopped, since the operator cannot
/// look at the storage itself and the state may have been disposed of.
pub fn decide_rollback(
    request: &RollbackRequest,
    revisions: &[Revision],
    update_in_progress: bool,
    recorded: &dyn Fn(&str) -> bool,
) -> RollbackDecision {
    if update_in_progress {
        return RollbackDecision::Wait;
    }
    let to = request.to;
    let mut kept: Vec<i64> = revisions.iter().map(|r| r.number).collect();
    kept.sort_unstable();
    let Some(&from) = kept.last() else {
        return RollbackDecision::Refuse(format!(
            "Revision {to} cannot be rolled back to: no revision of this job is kept yet. \
             Remove the annotation {}.",
            annotations::ROLLBACK_TO_REVISION
        ));
    };
    let listed = kept.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
    let Some(target) = revisions.iter().find(|r| r.number == to) else {
        let why = if to > from {
            format!("there is no revision {to} yet (the newest is {from})")
        } else {
            format!(
                "revision {to} is no longer kept (the history keeps the newest of them, see \
                 kubernetes.operator.job.revision-history.limit)"
            )
        };
        return RollbackDecision::Refuse(format!(
            "Revision {to} cannot be rolled back to: {why}. The kept revisions are {listed}; set \
             the annotation {} to one of them, or remove it.",
            annotations::ROLLBACK_TO_REVISION
        ));
    };
    if to == from {
        return RollbackDecision::Refuse(format!(
            "Revision {to} is the current revision, so there is nothing to roll back. The kept \
             revisions are {listed}; set the annotation {} to an earlier one, or remove it.",
            annotations::ROLLBACK_TO_REVISION
        ));
    }
    if request.restore_from_revision_state && target.started_from.is_none() {
        return RollbackDecision::Refuse(format!(
            "Revision {to} was started without state, so {}: {} has no state to restore. Remove \
             the annotation {} to restore the state taken when the running job stops.",
            annotations::ROLLBACK_RESTORE,
            annotations::ROLLBACK_RESTORE_REVISION,
            annotations::ROLLBACK_RESTORE
        ));
    }
    if request.restore_from_revision_state
        && let Some(path) = target.started_from.as_deref().filter(|path| !recorded(path))
    {
        return RollbackDecision::Refuse(format!(
            "Revision {to} was started from {path}, which no record of the job lists any more \
             (neither a completed snapshot resource of the job nor its status: last savepoint, \
             savepoint history or the state it was started from): it may have been disposed of, \
             so {}: {} is refused and the running job is left as it is. Remove the annotation {} \
             to restore the state taken when the running job stops.",
            annotations::ROLLBACK_RESTORE,
            annotations::ROLLBACK_RESTORE_REVISION,
            annotations::ROLLBACK_RESTORE
        ));
    }
    RollbackDecision::Start {
        spec: normalised(&target.spec),
        restore_from_revision_state: request.restore_from_revision_state,
        state: target.started_from.clone(),
        from,
        to,
    }
}

/// The spec a rollback writes into the resource: `revision_spec` (a revision's job version)
/// with what is no part of a version (the nonces, `job.state`, `job.upgradeMode`, the
/// `kubernetes.operator.*` keys) as `current_spec` has them now, so that the rollback asks
/// for nothing but the version, is ended as the job's upgrade mode says, and records a
/// revision equal to the one rolled back to.
pub fn rollback_spec(revision_spec: &Value, current_spec: &Value) -> Value {
    let mut spec = normalised(revision_spec);
    let Value::Object(fields) = &mut spec else {
        return spec;
    };
    let now = |path: &[&str]| {
        path.iter()
            .try_fold(current_spec, |v, key| v.get(key))
            .filter(|v| !v.is_null())
            .cloned()
    };
    for field in SPEC_FIELDS_NOT_KEPT {
        if let Some(value) = now(&[field]) {
            fields.insert((*field).to_owned(), value);
        }
    }
    for field in JOB_FIELDS_NOT_KEPT {
        if let Some(value) = now(&["job", field]) {
            let job = fields.entry("job").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(job) = job {
                job.insert((*field).to_owned(), value);
            }
        }
    }
    let operator_keys: Map<String, Value> = match now(&["flinkConfiguration"]) {
        Some(Value::Object(config)) => config
            .into_iter()
            .filter(|(k, _)| k.starts_with(flink_operator_api::keys::operator::PREFIX))
            .collect(),
        _ => Map::new(),
    };
    if !operator_keys.is_empty() {
        let config = fields
            .entry("flinkConfiguration")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(config) = config {
            config.extend(operator_keys);
        }
    }
    spec
}

/// JSON text of `value` with the members of every object in key order.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// [`HASH_LEN`] lowercase hex digits of the SHA-256 of `bytes`.
/// `<resource><suffix>` as the name of an object the operator records Events about (at most
/// [`MAX_EVENTFUL_NAME_LENGTH`] characters, so that its Events' names fit in 253): a name
/// that fits is unchanged (so no running job's objects are renamed), and a resource name too
/// long for it is shortened and followed by a hash of all of it (stable, and different for two
/// such names). A FlinkSessionJob stored before its name had a length rule may have a name of
/// up to 253 characters, so the names of the objects made for it make room this way.
pub fn fitted_name(resource: &str, suffix: &str) -> String {
    if resource.len() + suffix.len() <= MAX_EVENTFUL_NAME_LENGTH {
        return format!("{resource}{suffix}");
    }
    let room = MAX_EVENTFUL_NAME_LENGTH.saturating_sub(suffix.len() + 1 + HASH_LEN);
    format!(
        "{}-{}{suffix}",
        shortened(resource, room),
        short_hash(resource.as_bytes())
    )
}

fn short_hash(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .chars()
        .take(HASH_LEN)
        .collect()
}

/// At most `room` leading characters of a name, ending with a letter or digit (as every part
/// of a DNS subdomain and a label value must).
fn shortened(name: &str, room: usize) -> String {
    let head: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .take(room)
        .collect();
    head.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_owned()
}

/// Whether `value` is a valid label value: at most 63 characters, alphanumerics with `-`,
/// `_` and `.` inside.
fn is_label_value(value: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    value.len() <= MAX_LABEL_VALUE_LEN
        && edge(value.chars().next())
        && edge(value.chars().last())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// What the job's revision history needs written: the revision recorded (None: it is
/// already the newest), the revisions pruned, and the current number shown on the resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRevision {
    pub step: Option<RevisionStep>,
    pub prune: Vec<String>,
    pub current: i64,
}

#[cfg(test)]
#[path = "revisions/tests.rs"]
mod tests;
