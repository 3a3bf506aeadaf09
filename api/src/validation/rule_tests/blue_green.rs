use serde_json::{Value, json};

use super::{RuleCase, assert_single, set, typed};
use crate::{
    FlinkBlueGreenDeployment,
    validation::{ValidationContext, Violation, blue_green::validate},
};

fn base() -> Value {
    json!({
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkBlueGreenDeployment",
        "metadata": {"name": "orders", "namespace": "default"},
        "spec": {
            "transitionMode": "ADVANCED",
            "configuration": {"kubernetes.operator.bluegreen.abort.grace-period": "10 min"},
            "template": {
                "spec": {
                    "image": "flink:1.20",
                    "flinkVersion": "v1_20",
                    "serviceAccount": "flink",
                    "flinkConfiguration": {
                        "execution.checkpointing.dir": "s3://b/c",
                        "execution.checkpointing.savepoint-dir": "s3://b/s"
                    },
                    "jobManager": {"resource": {"memory": "2048m", "cpu": 1}},
                    "taskManager": {"resource": {"memory": "2048m", "cpu": 1}},
                    "job": {"jarURI": "local:///opt/flink/job.jar", "parallelism": 2, "upgradeMode": "savepoint"}
                }
            }
        }
    })
}

fn with(changes: &[(&str, Value)]) -> FlinkBlueGreenDeployment {
    let mut object = base();
    for (path, value) in changes {
        set(&mut object, path, value.clone());
    }
    typed(object)
}

fn check(new: &FlinkBlueGreenDeployment, old: Option<&FlinkBlueGreenDeployment>) -> Vec<Violation> {
    validate(new, old, &ValidationContext::default())
}

#[test]
fn transition_mode_is_immutable() {
    let basic = with(&[("spec/transitionMode", json!("BASIC"))]);
    let advanced = with(&[]);
    assert_single(
        "BASIC to ADVANCED",
        &check(&advanced, Some(&basic)),
        "spec.transitionMode",
        "field is immutable (was BASIC, requested ADVANCED)",
    );
    let unset = with(&[("spec/transitionMode", Value::Null)]);
    assert_single(
        "unset (BASIC) to ADVANCED",
        &check(&advanced, Some(&unset)),
        "spec.transitionMode",
        "was BASIC",
    );
    assert_eq!(check(&basic, Some(&unset)), vec![], "unset means BASIC");
    assert_eq!(check(&advanced, Some(&advanced)), vec![]);
}

#[test]
fn advanced_transitions_refuse_stateless_jobs() {
    assert_single(
        "explicit",
        &check(
            &with(&[("spec/template/spec/job/upgradeMode", json!("stateless"))]),
            None,
        ),
        "spec.template.spec.job.upgradeMode",
        "is stateless, which ADVANCED transitions cannot use",
    );
    assert_single(
        "default",
        &check(
            &with(&[("spec/template/spec/job/upgradeMode", Value::Null)]),
            None,
        ),
        "spec.template.spec.job.upgradeMode",
        "defaults to stateless",
    );
    let basic = with(&[
        ("spec/transitionMode", json!("BASIC")),
        ("spec/template/spec/job/upgradeMode", json!("stateless")),
    ]);
    assert_eq!(check(&basic, None), vec![], "BASIC may run stateless jobs");
}

/// The rule table: each case breaks one rule of [`base`], and the rule's answer is kept.
/// The template is judged as a FlinkDeployment.
pub(super) fn cases() -> Vec<RuleCase> {
    let cases: Vec<(&str, FlinkBlueGreenDeployment, &str, &str)> = vec![
        (
            "no template",
            with(&[("spec/template", Value::Null)]),
            "spec.template.spec",
            "must be defined",
        ),
        (
            "session template",
            with(&[("spec/template/spec/job", Value::Null)]),
            "spec.template.spec.job",
            "application jobs",
        ),
        (
            "template version",
            with(&[("spec/template/spec/flinkVersion", Value::Null)]),
            "spec.template.spec.flinkVersion",
            "must be defined",
        ),
        (
            "template savepoint dir",
            with(&[(
                "spec/template/spec/flinkConfiguration/execution.checkpointing.savepoint-dir",
                Value::Null,
            )]),
            "spec.template.spec.flinkConfiguration.execution.checkpointing.savepoint-dir",
            "upgradeMode savepoint",
        ),
        (
            "name leaves room for -green",
            with(&[("metadata/name", json!("a".repeat(40)))]),
            "metadata.name",
            "at most 39",
        ),
        (
            "durations in configuration",
            with(&[(
                "spec/configuration/kubernetes.operator.bluegreen.abort.grace-period",
                json!("soon"),
            )]),
            "spec.configuration.kubernetes.operator.bluegreen.abort.grace-period",
            "is not a duration",
        ),
        (
            "interval floors in configuration",
            with(&[(
                "spec/configuration/kubernetes.operator.periodic.savepoint.interval",
                json!("1001"),
            )]),
            "spec.configuration.kubernetes.operator.periodic.savepoint.interval",
            "below the floor",
        ),
        (
            "ingress template",
            with(&[("spec/ingress", json!({"className": "nginx"}))]),
            "spec.ingress.template",
            "must be defined",
        ),
    ];
    let mut out: Vec<RuleCase> = cases
        .into_iter()
        .map(|(case, object, field, reason)| RuleCase::new(KIND, case, check(&object, None), field, reason))
        .collect();
    out.extend(update_cases());
    out
}

#[test]
fn a_name_that_leaves_room_for_green_is_allowed() {
    assert_eq!(
        check(&with(&[("metadata/name", json!("a".repeat(39)))]), None),
        vec![]
    );
}

const KIND: &str = crate::keys::kinds::FLINK_BLUE_GREEN_DEPLOYMENT;

/// The transition-mode rules (the tests above check the allowed neighbours).
fn update_cases() -> Vec<RuleCase> {
    let basic = with(&[("spec/transitionMode", json!("BASIC"))]);
    let advanced = with(&[]);
    vec![
        RuleCase::new(
            KIND,
            "transitionMode changed",
            check(&advanced, Some(&basic)),
            "spec.transitionMode",
            "field is immutable (was BASIC, requested ADVANCED)",
        ),
        RuleCase::new(
            KIND,
            "ADVANCED with a stateless job",
            check(
                &with(&[("spec/template/spec/job/upgradeMode", json!("stateless"))]),
                None,
            ),
            "spec.template.spec.job.upgradeMode",
            "is stateless, which ADVANCED transitions cannot use",
        ),
        RuleCase::new(
            KIND,
            "ADVANCED with the default (stateless) upgrade mode",
            check(
                &with(&[("spec/template/spec/job/upgradeMode", Value::Null)]),
                None,
            ),
            "spec.template.spec.job.upgradeMode",
            "defaults to stateless",
        ),
    ]
}

#[test]
fn an_advanced_gate_timeout_must_be_longer_than_the_deletion_delay() {
    let key = |k: &str| format!("spec/configuration/kubernetes.operator.bluegreen.{k}");
    let fine = with(&[
        (&key("gate.timeout"), json!("5 min")),
        (&key("deployment-deletion.delay"), json!("10 s")),
    ]);
    assert!(check(&fine, None).is_empty(), "{:?}", check(&fine, None));
    let short = with(&[
        (&key("gate.timeout"), json!("10 s")),
        (&key("deployment-deletion.delay"), json!("10 s")),
    ]);
    assert_single(
        "gate timeout not longer than the delay",
        &check(&short, None),
        "spec.configuration.kubernetes.operator.bluegreen.gate.timeout",
        "10 s must be longer than kubernetes.operator.bluegreen.deployment-deletion.delay (10000 ms): with \
         ADVANCED transitions the gates hand over that far after the old job's watermark",
    );
    // Unset, the timeout is the abort grace period, which the rule names then.
    let grace = with(&[(&key("deployment-deletion.delay"), json!("20 min"))]);
    let violations = check(&grace, None);
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(
        violations[0].field,
        "spec.configuration.kubernetes.operator.bluegreen.abort.grace-period"
    );
    let not_a_duration = with(&[(&key("gate.timeout"), json!("soon"))]);
    assert_eq!(
        check(&not_a_duration, None)[0].field,
        "spec.configuration.kubernetes.operator.bluegreen.gate.timeout"
    );
    // BASIC has no gates: no such rule.
    let basic = with(&[
        ("spec/transitionMode", json!("BASIC")),
        (&key("gate.timeout"), json!("1 s")),
        (&key("deployment-deletion.delay"), json!("10 s")),
    ]);
    assert!(check(&basic, None).is_empty());
}
