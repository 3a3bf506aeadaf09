use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;

use crate::fixtures::NOW;
const MIN: i64 = 60_000;
const RESOURCE: &str = "orders";

/// A FlinkDeployment spec whose job runs with `args`.
fn spec(args: &[&str]) -> Value {
    json!({
        "image": "flink:1.20",
        "flinkVersion": "v1_20",
        "flinkConfiguration": {
            "taskmanager.numberOfTaskSlots": "2",
            "kubernetes.operator.periodic.savepoint.interval": "1 h",
        },
        "job": {
            "jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar",
            "args": args,
            "parallelism": 2,
            "upgradeMode": "savepoint",
            "state": "running",
            "savepointTriggerNonce": 3,
        },
    })
}

/// `base` with the JSON members of `changes` set (`null` removes one), `job` merged.
fn with(base: Value, changes: Value) -> Value {
    let mut spec = base;
    merge(&mut spec, &changes);
    spec
}

fn merge(target: &mut Value, changes: &Value) {
    match (target, changes) {
        (Value::Object(target), Value::Object(changes)) => {
            for (key, change) in changes {
                match (target.get_mut(key), change) {
                    (_, Value::Null) => {
                        target.remove(key);
                    }
                    (Some(existing @ Value::Object(_)), Value::Object(_)) => merge(existing, change),
                    _ => {
                        target.insert(key.clone(), change.clone());
                    }
                }
            }
        }
        (target, changes) => *target = changes.clone(),
    }
}

/// Revision `number` of [`RESOURCE`], running with `args`, started from a savepoint.
fn revision(number: i64, args: &[&str]) -> Revision {
    let spec = normalised(&spec(args));
    Revision {
        number,
        name: revision_name(RESOURCE, &spec, 0),
        spec,
        started_from: Some(format!("s3://savepoints/sp-{number}")),
        started_from_ms: None,
        applied_ms: NOW - (10 - number) * MIN,
    }
}

fn numbers(revisions: &[Revision], names: &[String]) -> Vec<i64> {
    names
        .iter()
        .map(|name| {
            revisions
                .iter()
                .find(|r| &r.name == name)
                .map(|r| r.number)
                .expect("a kept revision")
        })
        .collect()
}

// === normalisation and naming ===

#[test]
fn specs_that_differ_only_in_nonces_state_upgrade_mode_or_operator_keys_are_one_revision() {
    let base = spec(&["--fail-at", "100"]);
    let cases: Vec<(&str, Value, bool)> = vec![
        ("the same spec", base.clone(), true),
        (
            "another savepoint trigger nonce",
            with(base.clone(), json!({"job": {"savepointTriggerNonce": 4}})),
            true,
        ),
        (
            "a checkpoint trigger nonce",
            with(base.clone(), json!({"job": {"checkpointTriggerNonce": 1}})),
            true,
        ),
        (
            "a savepoint redeploy nonce",
            with(base.clone(), json!({"job": {"savepointRedeployNonce": 2}})),
            true,
        ),
        (
            "an autoscaler reset nonce",
            with(base.clone(), json!({"job": {"autoscalerResetNonce": 2}})),
            true,
        ),
        (
            "a restart nonce",
            with(base.clone(), json!({"restartNonce": 7})),
            true,
        ),
        (
            "another upgrade mode",
            with(base.clone(), json!({"job": {"upgradeMode": "last-state"}})),
            true,
        ),
        (
            "suspended",
            with(base.clone(), json!({"job": {"state": "suspended"}})),
            true,
        ),
        (
            "another operator key value",
            with(
                base.clone(),
                json!({"flinkConfiguration": {"kubernetes.operator.periodic.savepoint.interval": "2 h"}}),
            ),
            true,
        ),
        (
            "an operator key added",
            with(
                base.clone(),
                json!({"flinkConfiguration": {"kubernetes.operator.job.revision-history.limit": "3"}}),
            ),
            true,
        ),
        (
            "no configuration but operator keys",
            with(
                base.clone(),
                json!({"flinkConfiguration": {"taskmanager.numberOfTaskSlots": null}}),
            ),
            false,
        ),
        (
            "a member set to null is a member left out",
            {
                let mut spec = base.clone();
                spec["serviceAccount"] = Value::Null;
                spec["job"]["entryClass"] = Value::Null;
                spec
            },
            true,
        ),
        (
            "other arguments",
            with(base.clone(), json!({"job": {"args": ["--fail-at", "200"]}})),
            false,
        ),
        (
            "another Flink key value",
            with(
                base.clone(),
                json!({"flinkConfiguration": {"taskmanager.numberOfTaskSlots": "4"}}),
            ),
            false,
        ),
        (
            "another parallelism",
            with(base.clone(), json!({"job": {"parallelism": 4}})),
            false,
        ),
        (
            "another initial savepoint path",
            with(
                base.clone(),
                json!({"job": {"initialSavepointPath": "s3://savepoints/x"}}),
            ),
            false,
        ),
        (
            "another image",
            with(base.clone(), json!({"image": "flink:2.0"})),
            false,
        ),
    ];
    for (name, other, same) in cases {
        assert_eq!(normalised(&base) == normalised(&other), same, "{name}");
        assert_eq!(
            revision_name(RESOURCE, &base, 0) == revision_name(RESOURCE, &other, 0),
            same,
            "{name}: the name follows the normalised spec"
        );
    }
}

#[test]
fn a_normalised_spec_keeps_the_job_version_and_drops_the_rest() {
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "nonces, state, upgrade mode and operator keys go",
            spec(&["a"]),
            json!({
                "image": "flink:1.20",
                "flinkVersion": "v1_20",
                "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "2"},
                "job": {
                    "jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar",
                    "args": ["a"],
                    "parallelism": 2,
                },
            }),
        ),
        (
            "a configuration left empty goes",
            json!({"flinkConfiguration": {"kubernetes.operator.job.restart.failed": "true"}, "job": {}}),
            json!({"job": {}}),
        ),
        (
            "a session job's spec the same way",
            json!({"deploymentName": "session", "restartNonce": 2, "job": {"jarURI": "https://x/j.jar", "state": "running"}}),
            json!({"deploymentName": "session", "job": {"jarURI": "https://x/j.jar"}}),
        ),
        ("not an object: kept", json!("spec"), json!("spec")),
    ];
    for (name, applied, kept) in cases {
        assert_eq!(normalised(&applied), kept, "{name}");
        assert_eq!(
            normalised(&kept),
            kept,
            "{name}: normalising again changes nothing"
        );
    }
}

#[test]
fn revision_names_are_the_resource_and_a_stable_short_hash_of_the_spec() {
    let a = spec(&["a"]);
    let name = revision_name(RESOURCE, &a, 0);
    let hash = name.strip_prefix("orders-").expect("the resource's name first");
    assert_eq!(hash.len(), HASH_LEN, "{name}");
    assert!(
        hash.chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)),
        "{name}: lowercase hex"
    );
    // Pinned: a revision's name must not change with a new version of the operator, or every
    // kept revision would look like another spec. This is the SHA-256 of the canonical text
    // `{"job":{"args":["a"]}}`.
    assert_eq!(spec_hash(&normalised(&a), 0), hash);
    assert_eq!(spec_hash(&json!({"job": {"args": ["a"]}}), 0), "4b8ba64ccd");
    assert_eq!(
        revision_name(RESOURCE, &a, 0),
        name,
        "the same spec, the same name"
    );
    assert_ne!(revision_name(RESOURCE, &spec(&["b"]), 0), name, "another spec");
    assert_ne!(revision_name(RESOURCE, &a, 1), name, "another collision count");
    assert_eq!(
        revision_name("other", &a, 0),
        format!("other-{hash}"),
        "the hash is the spec's alone"
    );
}

#[test]
fn a_long_resource_name_is_shortened_to_a_valid_revision_name() {
    let long = |last: char| format!("{}.{}{last}", "a".repeat(200), "b".repeat(51));
    let (one, two) = (long('x'), long('y'));
    assert_eq!(one.len(), 253);
    let names = [
        revision_name(&one, &spec(&["a"]), 0),
        revision_name(&two, &spec(&["a"]), 0),
    ];
    for name in &names {
        assert!(name.len() <= 253, "{name}");
        let (head, hash) = name.rsplit_once('-').expect("a hash");
        assert_eq!(hash.len(), HASH_LEN);
        assert!(head.ends_with(|c: char| c.is_ascii_alphanumeric()), "{name}");
    }
    assert_ne!(names[0], names[1], "two long names that share their start");
    // Shortened just after a dot: the head ends before it.
    let dotted = format!("{}.{}", "a".repeat(241), "b".repeat(5));
    let name = revision_name(&dotted, &spec(&["a"]), 0);
    assert!(name.starts_with(&format!("{}-", "a".repeat(241))), "{name}");
}

#[test]
fn canonical_json_orders_the_members_of_every_object() {
    let mut text = String::new();
    canonical(
        &json!({"b": 1, "a": [{"d": null, "c": "x\"y"}, 2.5, true]}),
        &mut text,
    );
    assert_eq!(text, r#"{"a":[{"c":"x\"y","d":null},2.5,true],"b":1}"#);
}

#[test]
fn revisions_are_labelled_by_their_resource_so_they_can_be_listed() {
    assert_eq!(
        revision_labels(JobKind::FlinkSessionJob, "orders"),
        BTreeMap::from([
            (
                labels::REVISION_OWNER_KIND.to_owned(),
                "FlinkSessionJob".to_owned()
            ),
            (labels::REVISION_OWNER_NAME.to_owned(), "orders".to_owned()),
        ])
    );
    assert_eq!(
        selector(JobKind::FlinkDeployment, "orders"),
        "flink.apache.org/revision-owner-kind=FlinkDeployment,flink.apache.org/revision-owner-name=orders"
    );
    let long = |last: char| format!("{}{last}", "a".repeat(70));
    let (one, two) = (owner_label_value(&long('x')), owner_label_value(&long('y')));
    for value in [&one, &two] {
        assert!(is_label_value(value), "{value}");
        assert!(value.starts_with("aaaa"), "{value}");
    }
    assert_ne!(one, two, "two long names that share their start");
    assert_eq!(owner_label_value(&long('x')), one, "stable");
}

// === the ControllerRevision ===

#[test]
fn a_revision_becomes_a_controller_revision_owned_by_its_resource_and_reads_back() {
    let owner = OwnerReference {
        api_version: "flink.apache.org/v1beta1".to_owned(),
        kind: "FlinkDeployment".to_owned(),
        name: RESOURCE.to_owned(),
        uid: "uid-1".to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let revision = Revision {
        applied_ms: NOW,
        started_from_ms: Some(NOW - MIN),
        ..revision(3, &["a"])
    };
    let object = controller_revision(
        JobKind::FlinkDeployment,
        RESOURCE,
        "flink",
        owner.clone(),
        &revision,
    );
    let owner_again = owner.clone();
    assert_eq!(object.metadata.name.as_deref(), Some(revision.name.as_str()));
    assert_eq!(object.metadata.namespace.as_deref(), Some("flink"));
    assert_eq!(object.metadata.owner_references, Some(vec![owner]));
    assert_eq!(
        object.metadata.labels,
        Some(revision_labels(JobKind::FlinkDeployment, RESOURCE))
    );
    assert_eq!(object.revision, Some(3));
    assert_eq!(object.data.0, json!({"spec": normalised(&spec(&["a"]))}));
    assert_eq!(
        object.metadata.annotations,
        Some(BTreeMap::from([
            (
                annotations::REVISION_APPLIED_AT.to_owned(),
                "2027-01-15T08:00:00Z".to_owned()
            ),
            (
                annotations::REVISION_STARTED_FROM.to_owned(),
                "s3://savepoints/sp-3".to_owned()
            ),
            (
                annotations::REVISION_STARTED_FROM_TIME.to_owned(),
                "2027-01-15T07:59:00Z".to_owned()
            ),
        ]))
    );
    assert_eq!(from_controller_revision(&object), Some(revision.clone()));

    // Without state, and without the time annotation: the creation time stands in.
    let mut bare = controller_revision(
        JobKind::FlinkDeployment,
        RESOURCE,
        "flink",
        owner_again,
        &Revision {
            started_from: None,
            ..revision.clone()
        },
    );
    bare.metadata.annotations = None;
    bare.metadata.creation_timestamp = Some(Time(
        k8s_openapi::jiff::Timestamp::from_millisecond(NOW - MIN).expect("a time"),
    ));
    assert_eq!(
        from_controller_revision(&bare),
        Some(Revision {
            started_from: None,
            started_from_ms: None,
            applied_ms: NOW - MIN,
            ..revision.clone()
        })
    );
    let mut numberless = bare.clone();
    numberless.revision = None;
    assert_eq!(
        from_controller_revision(&numberless),
        None,
        "no number: not a revision"
    );
    bare.data = RawExtension(json!({}));
    assert_eq!(from_controller_revision(&bare), None, "no spec: not a revision");
}

#[test]
fn a_reuse_patches_the_number_time_and_state_only() {
    let moved = Revision {
        number: 6,
        applied_ms: NOW,
        ..revision(2, &["a"])
    };
    assert_eq!(
        reuse_patch(&moved),
        json!({
            "metadata": {"annotations": {
                "flink.apache.org/revision-applied-at": "2027-01-15T08:00:00Z",
                "flink.apache.org/revision-started-from": "s3://savepoints/sp-2",
                "flink.apache.org/revision-started-from-time": null,
            }},
            "revision": 6,
        })
    );
    let stateless = Revision {
        started_from: None,
        ..moved
    };
    assert_eq!(
        reuse_patch(&stateless)["metadata"]["annotations"]["flink.apache.org/revision-started-from"],
        Value::Null,
        "a state that no longer applies is removed"
    );
}

// === recording ===

#[test]
fn an_applied_spec_is_a_new_revision_or_reuses_the_one_with_its_spec() {
    let kept = vec![revision(3, &["a"]), revision(5, &["b"]), revision(6, &["c"])];
    type Case<'a> = (&'a str, Vec<Revision>, Value, Option<&'a str>, RevisionStep);
    let cases: Vec<Case> = vec![
        (
            "the first spec is revision 1",
            vec![],
            spec(&["a"]),
            Some(""),
            RevisionStep::Create(Revision {
                number: 1,
                started_from: None,
                applied_ms: NOW,
                ..revision(1, &["a"])
            }),
        ),
        (
            "a new spec is numbered above the highest, whatever was pruned",
            kept.clone(),
            spec(&["d"]),
            Some("s3://savepoints/from-6"),
            RevisionStep::Create(Revision {
                number: 7,
                started_from: Some("s3://savepoints/from-6".to_owned()),
                applied_ms: NOW,
                ..revision(7, &["d"])
            }),
        ),
        (
            "an older spec again moves its revision to the top",
            kept.clone(),
            spec(&["b"]),
            Some("s3://savepoints/from-6"),
            RevisionStep::Reuse {
                previous: 5,
                revision: Revision {
                    number: 7,
                    started_from: Some("s3://savepoints/from-6".to_owned()),
                    applied_ms: NOW,
                    ..revision(5, &["b"])
                },
            },
        ),
        (
            "an older spec with other nonces and operator keys is still that revision",
            kept.clone(),
            with(
                spec(&["a"]),
                json!({
                    "job": {"savepointTriggerNonce": 9, "upgradeMode": "last-state"},
                    "flinkConfiguration": {"kubernetes.operator.job.restart.failed": "true"},
                }),
            ),
            None,
            RevisionStep::Reuse {
                previous: 3,
                revision: Revision {
                    number: 7,
                    started_from: None,
                    applied_ms: NOW,
                    ..revision(3, &["a"])
                },
            },
        ),
        (
            "the newest spec again (a restart, a resume) is no new revision",
            kept.clone(),
            with(spec(&["c"]), json!({"restartNonce": 2})),
            Some("s3://savepoints/other"),
            RevisionStep::Unchanged(revision(6, &["c"])),
        ),
    ];
    for (name, existing, applied, started_from, expected) in cases {
        let step = record(
            RESOURCE,
            &existing,
            &applied,
            started_from.map(|p| (p, None)),
            NOW,
        );
        assert_eq!(step, expected, "{name}");
        assert_eq!(step.current().number, expected.current().number, "{name}");
    }
}

#[test]
fn a_new_spec_whose_name_is_taken_by_another_spec_takes_the_next_collision_count() {
    let new = spec(&["new"]);
    let squatter = Revision {
        name: revision_name(RESOURCE, &new, 0),
        ..revision(1, &["old"])
    };
    let step = record(RESOURCE, &[squatter], &new, None, NOW);
    let RevisionStep::Create(created) = step else {
        panic!("a new revision, not {step:?}");
    };
    assert_eq!(created.name, revision_name(RESOURCE, &new, 1));
    assert_eq!(created.number, 2);
}

// === pruning ===

#[test]
fn pruning_keeps_the_limit_oldest_first_and_never_the_current_stable_or_in_flight_revision() {
    type Case<'a> = (&'a str, Vec<i64>, usize, i64, Option<i64>, Option<i64>, Vec<i64>);
    let cases: Vec<Case> = vec![
        ("within the limit", vec![1, 2, 3], 3, 3, None, None, vec![]),
        (
            "beyond it, the oldest go",
            vec![1, 2, 3, 4, 5],
            3,
            5,
            None,
            None,
            vec![1, 2],
        ),
        (
            "whatever order they come in",
            vec![5, 2, 4, 1, 3],
            3,
            5,
            None,
            None,
            vec![1, 2],
        ),
        (
            "the last stable one stays however old",
            vec![1, 2, 3, 4, 5],
            3,
            5,
            Some(1),
            None,
            vec![2, 3],
        ),
        (
            "the one an update or rollback is in the middle of stays",
            vec![1, 2, 3, 4, 5],
            3,
            4,
            None,
            Some(1),
            vec![2, 3],
        ),
        (
            "the current one stays, even when it is not the newest",
            vec![1, 2, 3, 4],
            2,
            1,
            None,
            None,
            vec![2, 3],
        ),
        (
            "limit 1 keeps the current one only",
            vec![1, 2, 3],
            1,
            3,
            None,
            None,
            vec![1, 2],
        ),
        (
            "limit 1 keeps the current, stable and in-flight ones (more than the limit)",
            vec![1, 2, 3, 4, 5],
            1,
            5,
            Some(2),
            Some(4),
            vec![1, 3],
        ),
        (
            "a limit of 0 counts as 1",
            vec![1, 2, 3],
            0,
            3,
            None,
            None,
            vec![1, 2],
        ),
        (
            "all protected: nothing goes",
            vec![1, 2, 3],
            1,
            3,
            Some(1),
            Some(2),
            vec![],
        ),
        ("no revisions", vec![], 1, 0, None, None, vec![]),
    ];
    for (name, kept, limit, current, stable, in_flight, expected) in cases {
        let revisions: Vec<Revision> = kept.iter().map(|n| revision(*n, &[&n.to_string()])).collect();
        let gone = prune(&revisions, limit, current, stable, in_flight);
        assert_eq!(numbers(&revisions, &gone), expected, "{name}");
    }
}

// === the rollback request ===

fn annotated(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_rollback_annotations_are_read_or_refused_with_what_to_do() {
    const TO: &str = annotations::ROLLBACK_TO_REVISION;
    const RESTORE: &str = annotations::ROLLBACK_RESTORE;
    let asked = |to, restore| {
        Ok(Some(RollbackRequest {
            to,
            restore_from_revision_state: restore,
        }))
    };
    /// An error: the value the message must quote.
    type Expected = Result<Option<RollbackRequest>, &'static str>;
    let cases: Vec<(&str, BTreeMap<String, String>, Expected)> = vec![
        ("no annotation", annotated(&[]), Ok(None)),
        (
            "other annotations",
            annotated(&[(annotations::REVISION, "3")]),
            Ok(None),
        ),
        (
            "the restore annotation alone asks for nothing",
            annotated(&[(RESTORE, "revision")]),
            Ok(None),
        ),
        ("a revision", annotated(&[(TO, "2")]), asked(2, false)),
        ("spaces around it", annotated(&[(TO, " 12 ")]), asked(12, false)),
        (
            "restoring the revision's state",
            annotated(&[(TO, "2"), (RESTORE, "revision")]),
            asked(2, true),
        ),
        ("zero", annotated(&[(TO, "0")]), Err("\"0\"")),
        ("negative", annotated(&[(TO, "-1")]), Err("\"-1\"")),
        ("a sign", annotated(&[(TO, "+2")]), Err("\"+2\"")),
        ("a word", annotated(&[(TO, "two")]), Err("\"two\"")),
        ("a fraction", annotated(&[(TO, "2.0")]), Err("\"2.0\"")),
        ("empty", annotated(&[(TO, "")]), Err("\"\"")),
        (
            "too large",
            annotated(&[(TO, "99999999999999999999")]),
            Err("\"99999999999999999999\""),
        ),
        (
            "an unknown restore",
            annotated(&[(TO, "2"), (RESTORE, "savepoint")]),
            Err("\"savepoint\""),
        ),
        (
            "an empty restore",
            annotated(&[(TO, "2"), (RESTORE, "")]),
            Err("\"\""),
        ),
    ];
    for (name, annotations, expected) in cases {
        let got = rollback_request(&annotations);
        match (got, expected) {
            (Ok(got), Ok(expected)) => assert_eq!(got, expected, "{name}"),
            (Err(message), Err(value)) => {
                let annotation = if name.contains("restore") { RESTORE } else { TO };
                assert!(
                    message.contains(annotation) && message.contains(value),
                    "{name}: {message}"
                );
                assert!(
                    message.starts_with("The annotation ") && message.ends_with('.'),
                    "{name}: a sentence: {message}"
                );
                assert!(
                    message.contains("Set it to"),
                    "{name}: says what to do: {message}"
                );
            }
            (got, expected) => panic!("{name}: {got:?}, expected {expected:?}"),
        }
    }
}

// === the rollback decision ===

#[test]
fn a_rollback_waits_for_an_update_is_refused_for_a_revision_not_kept_and_starts_otherwise() {
    let kept = vec![
        revision(3, &["a"]),
        revision(4, &["b"]),
        Revision {
            started_from: None,
            ..revision(5, &["c"])
        },
        revision(6, &["d"]),
    ];
    let request = |to, restore| RollbackRequest {
        to,
        restore_from_revision_state: restore,
    };
    enum Expect {
        Wait,
        Refuse(&'static [&'static str]),
        Start { restore: bool, to: i64 },
    }
    let cases: Vec<(&str, RollbackRequest, Vec<Revision>, bool, Expect)> = vec![
        (
            "an update in progress: wait, even for a revision not kept",
            request(9, false),
            kept.clone(),
            true,
            Expect::Wait,
        ),
        (
            "an update in progress: wait",
            request(4, false),
            kept.clone(),
            true,
            Expect::Wait,
        ),
        (
            "a revision not made yet",
            request(9, false),
            kept.clone(),
            false,
            Expect::Refuse(&["Revision 9", "no revision 9", "the newest is 6", "3, 4, 5, 6"]),
        ),
        (
            "a pruned revision",
            request(2, false),
            kept.clone(),
            false,
            Expect::Refuse(&[
                "Revision 2",
                "no longer kept",
                "revision-history.limit",
                "3, 4, 5, 6",
            ]),
        ),
        (
            "a revision pruned between kept ones",
            request(4, false),
            vec![kept[0].clone(), kept[3].clone()],
            false,
            Expect::Refuse(&["Revision 4", "no longer kept", "3, 6"]),
        ),
        (
            "nothing kept",
            request(1, false),
            vec![],
            false,
            Expect::Refuse(&["Revision 1", "no revision of this job is kept"]),
        ),
        (
            "the current revision",
            request(6, false),
            kept.clone(),
            false,
            Expect::Refuse(&["Revision 6 is the current revision", "3, 4, 5, 6"]),
        ),
        (
            "the revision's state, when it started without one",
            request(5, true),
            kept.clone(),
            false,
            Expect::Refuse(&["Revision 5 was started without state", "rollback-restore"]),
        ),
        (
            "a kept revision, restoring the state taken when the job stops",
            request(4, false),
            kept.clone(),
            false,
            Expect::Start {
                restore: false,
                to: 4,
            },
        ),
        (
            "a kept revision started without state, restoring the state taken when the job stops",
            request(5, false),
            kept.clone(),
            false,
            Expect::Start {
                restore: false,
                to: 5,
            },
        ),
        (
            "a kept revision, restoring the state it was started from",
            request(3, true),
            kept.clone(),
            false,
            Expect::Start { restore: true, to: 3 },
        ),
        (
            "a kept revision whose state no record lists any more, restoring that state",
            request(4, true),
            kept.clone(),
            false,
            Expect::Refuse(&[
                "Revision 4 was started from s3://savepoints/sp-4",
                "no record of the job lists",
                "may have been disposed of",
                "running job is left as it is",
                "Remove the annotation flink.apache.org/rollback-restore",
            ]),
        ),
    ];
    // Revision 4's state was disposed of: no record lists it.
    let recorded = |path: &str| path != "s3://savepoints/sp-4";
    for (name, request, revisions, updating, expected) in cases {
        let decision = decide_rollback(&request, &revisions, updating, &recorded);
        match (decision, expected) {
            (RollbackDecision::Wait, Expect::Wait) => {}
            (RollbackDecision::Refuse(message), Expect::Refuse(says)) => {
                for part in says {
                    assert!(message.contains(part), "{name}: {part:?} in {message}");
                }
                assert!(message.ends_with('.'), "{name}: a sentence: {message}");
            }
            (
                RollbackDecision::Start {
                    spec,
                    restore_from_revision_state,
                    state,
                    from,
                    to,
                },
                Expect::Start { restore, to: want },
            ) => {
                let target = revisions.iter().find(|r| r.number == want).expect("kept");
                assert_eq!(spec, target.spec, "{name}");
                assert_eq!(restore_from_revision_state, restore, "{name}");
                assert_eq!(state, target.started_from, "{name}");
                assert_eq!((from, to), (6, want), "{name}");
            }
            (decision, _) => panic!("{name}: unexpected {decision:?}"),
        }
    }
}

#[test]
fn a_rollback_writes_the_revisions_job_version_and_keeps_everything_else_as_it_is_now() {
    let now = with(
        spec(&["bad"]),
        json!({
            "restartNonce": 4,
            "job": {
                "savepointTriggerNonce": 8,
                "savepointRedeployNonce": 2,
                "upgradeMode": "last-state",
                "state": "suspended",
            },
            "flinkConfiguration": {
                "kubernetes.operator.periodic.savepoint.interval": "2 h",
                "kubernetes.operator.job.restore.max-state-age": "1 d",
            },
        }),
    );
    let old = with(
        spec(&["good"]),
        json!({
            "job": {"upgradeMode": "stateless", "savepointRedeployNonce": 1},
            "flinkConfiguration": {"parallelism.default": "3"},
        }),
    );
    let written = rollback_spec(&normalised(&old), &now);
    assert_eq!(
        written,
        json!({
            "image": "flink:1.20",
            "flinkVersion": "v1_20",
            "restartNonce": 4,
            "flinkConfiguration": {
                "taskmanager.numberOfTaskSlots": "2",
                "parallelism.default": "3",
                "kubernetes.operator.periodic.savepoint.interval": "2 h",
                "kubernetes.operator.job.restore.max-state-age": "1 d",
            },
            "job": {
                "jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar",
                "args": ["good"],
                "parallelism": 2,
                "savepointTriggerNonce": 8,
                "savepointRedeployNonce": 2,
                "upgradeMode": "last-state",
                "state": "suspended",
            },
        }),
        "the old version, the current nonces (none asks again), mode, state and operator keys"
    );
    assert_eq!(
        normalised(&written),
        normalised(&old),
        "the version rolled back to"
    );

    // Nothing of the kind now: nothing is added.
    let bare_now = json!({"job": {"jarURI": "x.jar", "args": ["bad"]}});
    assert_eq!(
        rollback_spec(&json!({"job": {"jarURI": "x.jar", "args": ["good"]}}), &bare_now),
        json!({"job": {"jarURI": "x.jar", "args": ["good"]}})
    );
    // Operator keys now, no configuration in the revision: a configuration of them.
    assert_eq!(
        rollback_spec(
            &json!({"job": {"args": ["good"]}}),
            &json!({"flinkConfiguration": {"kubernetes.operator.job.restart.failed": "true", "a": "b"}}),
        ),
        json!({
            "job": {"args": ["good"]},
            "flinkConfiguration": {"kubernetes.operator.job.restart.failed": "true"},
        })
    );
}

#[test]
fn a_rollback_records_a_revision_equal_to_the_one_rolled_back_to_at_the_top() {
    let history = vec![revision(1, &["v1"]), revision(2, &["v2"]), revision(3, &["v3"])];
    let current = with(spec(&["v3"]), json!({"job": {"savepointTriggerNonce": 5}}));
    let request = rollback_request(&annotated(&[(annotations::ROLLBACK_TO_REVISION, "2")]))
        .expect("a valid request")
        .expect("a request");
    let RollbackDecision::Start {
        spec: kept, from, to, ..
    } = decide_rollback(&request, &history, false, &|_| true)
    else {
        panic!("a rollback that starts");
    };
    assert_eq!((from, to), (3, 2));
    let written = rollback_spec(&kept, &current);
    let step = record(
        RESOURCE,
        &history,
        &written,
        Some(("s3://savepoints/of-3", None)),
        NOW,
    );
    assert_eq!(
        step,
        RevisionStep::Reuse {
            previous: 2,
            revision: Revision {
                number: 4,
                started_from: Some("s3://savepoints/of-3".to_owned()),
                applied_ms: NOW,
                ..revision(2, &["v2"])
            },
        }
    );
    let after: Vec<Revision> = vec![history[0].clone(), history[2].clone(), step.current().clone()];
    assert_eq!(
        prune(&after, 2, 4, Some(3), None),
        vec![history[0].name.clone()],
        "revision 1 goes first; the current (4 = 2) and the last stable (3) stay"
    );
}

#[test]
fn derived_names_fit_with_their_events_and_names_that_fit_are_unchanged() {
    use crate::lifecycle::snapshot_resources::NewSnapshot;
    use flink_operator_api::{SnapshotTriggerType, SnapshotType};
    let snapshot = |kind, trigger_type| NewSnapshot {
        kind,
        trigger_type,
        at_ms: 1_700_000_000_000,
        existing_path: None,
        completed_ms: None,
        dispose_on_delete: false,
    };
    // As the Apache operator names them, for every name that leaves room.
    assert_eq!(
        snapshot(SnapshotType::Savepoint, SnapshotTriggerType::Periodic).name("clicks"),
        "clicks-savepoint-periodic-1700000000000"
    );
    let fits = "a".repeat(236 - "-checkpoint-periodic-1700000000000".len());
    assert_eq!(
        snapshot(SnapshotType::Checkpoint, SnapshotTriggerType::Periodic).name(&fits),
        format!("{fits}-checkpoint-periodic-1700000000000")
    );
    // A FlinkSessionJob of 253 characters: shortened, with a hash of the whole name.
    let long = format!("{}x", "a".repeat(252));
    let other = format!("{}y", "a".repeat(252));
    for kind in [SnapshotType::Savepoint, SnapshotType::Checkpoint] {
        for trigger in [
            SnapshotTriggerType::Manual,
            SnapshotTriggerType::Periodic,
            SnapshotTriggerType::Upgrade,
        ] {
            let name = snapshot(kind, trigger).name(&long);
            // Room for the Events about the snapshot (`<name>.<16 hex digits>`) in 253.
            assert!(name.len() <= 236, "{} {name}", name.len());
            assert!(name.ends_with("-1700000000000"), "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{name}"
            );
            assert_eq!(name, snapshot(kind, trigger).name(&long), "stable");
            assert_ne!(name, snapshot(kind, trigger).name(&other), "distinct");
        }
    }
}
