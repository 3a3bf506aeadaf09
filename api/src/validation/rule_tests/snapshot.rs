use serde_json::{Value, json};

use super::{RuleCase, set, typed};
use crate::{
    FlinkStateSnapshot, JobKind,
    validation::{
        SnapshotTarget,
        snapshot::{job_to_look_up, validate},
    },
};

fn base() -> Value {
    json!({
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkStateSnapshot",
        "metadata": {"name": "manual-savepoint", "namespace": "team-a"},
        "spec": {
            "backoffLimit": 1,
            "jobReference": {"kind": "FlinkDeployment", "name": "orders", "namespace": "team-a"},
            "savepoint": {"path": "s3://b/savepoints", "formatType": "CANONICAL", "disposeOnDelete": true}
        }
    })
}

fn with(changes: &[(&str, Value)]) -> FlinkStateSnapshot {
    let mut object = base();
    for (path, value) in changes {
        set(&mut object, path, value.clone());
    }
    typed(object)
}

#[test]
fn an_existing_job_in_the_same_namespace_is_allowed() {
    assert_eq!(
        validate(&with(&[]), None, "team-a", &SnapshotTarget::Found),
        vec![]
    );
    let checkpoint = with(&[("spec/savepoint", Value::Null), ("spec/checkpoint", json!({}))]);
    assert_eq!(
        validate(&checkpoint, None, "team-a", &SnapshotTarget::Found),
        vec![]
    );
}

/// The rule table: each case breaks one rule of [`base`], and the rule's answer is kept.
pub(super) fn cases() -> Vec<RuleCase> {
    let found = SnapshotTarget::Found;
    let cases: Vec<(&str, FlinkStateSnapshot, SnapshotTarget, &str, &str)> = vec![
        (
            "N1 both",
            with(&[("spec/checkpoint", json!({}))]),
            found.clone(),
            "spec",
            "not both",
        ),
        (
            "N1 neither",
            with(&[("spec/savepoint", Value::Null)]),
            found.clone(),
            "spec",
            "exactly one of spec.savepoint or spec.checkpoint",
        ),
        (
            "N3 no reference",
            with(&[("spec/jobReference", Value::Null)]),
            SnapshotTarget::NotNeeded,
            "spec.jobReference",
            "must be supplied",
        ),
        (
            "no name",
            with(&[("spec/jobReference/name", Value::Null)]),
            SnapshotTarget::NotNeeded,
            "spec.jobReference.name",
            "must name",
        ),
        (
            "no kind",
            with(&[("spec/jobReference/kind", Value::Null)]),
            found.clone(),
            "spec.jobReference.kind",
            "FlinkDeployment or FlinkSessionJob",
        ),
        (
            "cross-namespace reference",
            with(&[("spec/jobReference/namespace", json!("team-b"))]),
            SnapshotTarget::NotNeeded,
            "spec.jobReference.namespace",
            r#"must be the snapshot's own namespace "team-a" (got "team-b")"#,
        ),
        (
            "N4 dangling",
            with(&[]),
            SnapshotTarget::NotFound,
            "spec.jobReference",
            "target FlinkDeployment team-a/orders was not found",
        ),
        (
            "unverifiable fails closed",
            with(&[("spec/jobReference/kind", json!("FlinkSessionJob"))]),
            SnapshotTarget::Unverifiable("API unreachable".into()),
            "spec.jobReference",
            "FlinkSessionJob team-a/orders could not be verified, so the snapshot is refused: API unreachable",
        ),
        (
            "backoff limit",
            with(&[("spec/backoffLimit", json!(-2))]),
            found.clone(),
            "spec.backoffLimit",
            "got -2",
        ),
        (
            "already exists needs a path",
            with(&[
                ("spec/savepoint/alreadyExists", json!(true)),
                ("spec/savepoint/path", Value::Null),
            ]),
            SnapshotTarget::NotNeeded,
            "spec.savepoint.path",
            "must name the existing savepoint",
        ),
    ];
    let mut out: Vec<RuleCase> = cases
        .into_iter()
        .map(|(case, snapshot, target, field, reason)| {
            RuleCase::new(
                KIND,
                case,
                validate(&snapshot, None, "team-a", &target),
                field,
                reason,
            )
        })
        .collect();
    out.extend(update_cases());
    out
}

#[test]
fn a_recorded_savepoint_needs_no_job() {
    let snapshot = with(&[
        ("spec/savepoint/alreadyExists", json!(true)),
        ("spec/jobReference", Value::Null),
    ]);
    assert_eq!(job_to_look_up(&snapshot, "team-a"), None);
    assert_eq!(
        validate(&snapshot, None, "team-a", &SnapshotTarget::NotNeeded),
        vec![]
    );
}

#[test]
fn a_snapshot_that_already_ran_may_outlive_its_job() {
    let snapshot = with(&[("status/state", json!("COMPLETED"))]);
    assert_eq!(job_to_look_up(&snapshot, "team-a"), None);
    assert_eq!(
        validate(&snapshot, None, "team-a", &SnapshotTarget::NotFound),
        vec![]
    );
    let pending = with(&[("status/state", json!("TRIGGER_PENDING"))]);
    assert_eq!(
        validate(&pending, None, "team-a", &SnapshotTarget::NotFound).len(),
        1
    );
}

#[test]
fn the_lookup_is_asked_only_for_a_same_namespace_reference() {
    assert_eq!(
        job_to_look_up(&with(&[]), "team-a"),
        Some((JobKind::FlinkDeployment, "orders".to_owned()))
    );
    let defaulted = with(&[("spec/jobReference/namespace", Value::Null)]);
    assert_eq!(
        job_to_look_up(&defaulted, "team-a"),
        Some((JobKind::FlinkDeployment, "orders".to_owned()))
    );
    assert_eq!(
        job_to_look_up(
            &with(&[("spec/jobReference/namespace", json!("team-b"))]),
            "team-a"
        ),
        None
    );
    assert_eq!(
        job_to_look_up(&with(&[("spec/checkpoint", json!({}))]), "team-a"),
        None,
        "N1 fails first"
    );
}

#[test]
fn the_time_of_a_recorded_savepoint_is_an_rfc_3339_time_on_a_recorded_savepoint_only() {
    let key = crate::keys::annotations::SAVEPOINT_COMPLETED_AT;
    let field = format!("metadata.annotations[{key}]");
    let recorded = |at: &str| {
        let mut snapshot = with(&[("spec/savepoint/alreadyExists", json!(true))]);
        snapshot
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(key.to_owned(), at.to_owned());
        snapshot
    };
    // (case, the snapshot, part of the refusal or None)
    let cases = [
        ("a time", recorded("2026-01-31T12:00:00Z"), None),
        ("with an offset", recorded("2026-01-31T13:00:00.250+01:00"), None),
        (
            "not a time",
            recorded("last tuesday"),
            Some(
                r#"must be an RFC 3339 time such as 2026-01-31T12:00:00Z, when Flink completed the savepoint (got "last tuesday")"#,
            ),
        ),
        (
            "epoch milliseconds",
            recorded("1769860800000"),
            Some("must be an RFC 3339 time"),
        ),
        (
            "a triggered savepoint",
            {
                let mut snapshot = recorded("2026-01-31T12:00:00Z");
                snapshot.spec.savepoint.as_mut().unwrap().already_exists = Some(false);
                snapshot
            },
            Some("is only read on a snapshot that records an existing savepoint"),
        ),
    ];
    for (case, snapshot, refusal) in cases {
        let found = validate(&snapshot, None, "team-a", &SnapshotTarget::Found);
        match refusal {
            None => assert_eq!(found, vec![], "{case}"),
            Some(part) => {
                assert_eq!(found.len(), 1, "{case}: {found:?}");
                assert_eq!(found[0].field, field, "{case}");
                assert!(found[0].reason.contains(part), "{case}: {}", found[0].reason);
            }
        }
    }
}

const KIND: &str = crate::keys::kinds::FLINK_STATE_SNAPSHOT;

/// The snapshot rules are all in the table above.
fn update_cases() -> Vec<RuleCase> {
    Vec::new()
}
