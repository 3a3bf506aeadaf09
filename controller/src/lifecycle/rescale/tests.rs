use std::collections::BTreeMap;

use flink_operator_api::{FlinkDeploymentSpec, FlinkDeploymentStatus, FlinkSessionJobSpec};
use serde_json::json;

use super::*;

fn deployment(spec: serde_json::Value) -> FlinkDeploymentSpec {
    serde_json::from_value(spec).unwrap()
}

fn app(parallelism: i64, extra: serde_json::Value) -> FlinkDeploymentSpec {
    let mut spec = json!({
        "flinkVersion": "v1_20",
        "job": {"jarURI": "local:///job.jar", "parallelism": parallelism, "upgradeMode": "savepoint"},
        "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "2"},
    });
    json_patch::merge(&mut spec, &extra);
    deployment(spec)
}

fn overrides(text: &str) -> serde_json::Value {
    json!({"flinkConfiguration": {"pipeline.jobvertex-parallelism-overrides": text}})
}

#[test]
fn a_change_of_parallelism_alone_is_a_rescale_and_any_other_change_is_not() {
    let base = app(2, json!({}));
    for (case, spec, rescale) in [
        ("job.parallelism", app(4, json!({})), true),
        ("vertex overrides added", app(2, overrides("a:3,b:1")), true),
        (
            "taskManager.replicas",
            app(2, json!({"taskManager": {"replicas": 3}})),
            true,
        ),
        (
            "parallelism and an autoscaler key",
            app(
                3,
                json!({"flinkConfiguration": {"job.autoscaler.enabled": "true"}}),
            ),
            true,
        ),
        (
            "nothing that ends the job",
            app(2, json!({"job": {"savepointTriggerNonce": 1}})),
            false,
        ),
        ("the image too", app(4, json!({"image": "flink:2.1"})), false),
        (
            "a Flink key too",
            app(
                4,
                json!({"flinkConfiguration": {"state.backend.type": "rocksdb"}}),
            ),
            false,
        ),
        (
            "suspended too",
            app(4, json!({"job": {"state": "suspended"}})),
            false,
        ),
        (
            "parallelism removed",
            deployment(json!({
                "flinkVersion": "v1_20",
                "job": {"jarURI": "local:///job.jar", "upgradeMode": "savepoint"},
                "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "2"},
            })),
            false,
        ),
        ("overrides that do not read", app(2, overrides("a=3")), false),
    ] {
        assert_eq!(
            Rescale::between(&base, &spec, Some("j1"), 2).is_some(),
            rescale,
            "{case}"
        );
    }
    // Without a job id there is no running job to rescale.
    assert_eq!(Rescale::between(&base, &app(4, json!({})), None, 2), None);
}

#[test]
fn an_override_removed_is_an_upgrade_and_replicas_count_in_slots() {
    let with = app(2, overrides("a:3"));
    assert_eq!(Rescale::between(&with, &app(2, json!({})), Some("j1"), 2), None);
    let change = Rescale::between(&with, &app(2, overrides("a:5")), Some("j1"), 2).unwrap();
    assert_eq!(change.to.overrides, BTreeMap::from([("a".to_owned(), 5)]));
    let replicas = Rescale::between(
        &app(2, json!({})),
        &app(2, json!({"taskManager": {"replicas": 3}})),
        Some("j1"),
        2,
    )
    .unwrap();
    assert_eq!((replicas.from.default, replicas.to.default), (Some(2), Some(6)));
}

#[test]
fn a_session_job_rescales_by_its_parallelism() {
    let job = |p: i64| -> FlinkSessionJobSpec {
        serde_json::from_value(
            json!({"deploymentName": "s", "job": {"jarURI": "https://x/j.jar", "parallelism": p}}),
        )
        .unwrap()
    };
    let change = Rescale::between(&job(1), &job(3), Some("j1"), 4).unwrap();
    assert_eq!((change.from.default, change.to.default), (Some(1), Some(3)));
}

fn bounds(lower: i64, upper: i64) -> VertexRequirements {
    VertexRequirements {
        parallelism: ParallelismBounds {
            lower_bound: lower,
            upper_bound: upper,
        },
    }
}

#[test]
fn requirements_follow_what_an_upgrade_would_start() {
    let current: ResourceRequirements = [
        ("source".to_owned(), bounds(1, 1)),  // set to 1 in the job's code
        ("counter".to_owned(), bounds(1, 2)), // at the default parallelism
        ("sink".to_owned(), bounds(2, 2)),    // at the default, lower bound 2
        ("keyed".to_owned(), bounds(1, 4)),   // set to 4 in code
    ]
    .into();
    let change = |from: Option<i64>, to: Option<i64>, overrides: &[(&str, i64)]| Rescale {
        job_id: "j1".to_owned(),
        from: Parallelism {
            default: from,
            overrides: BTreeMap::new(),
        },
        to: Parallelism {
            default: to,
            overrides: overrides.iter().map(|(v, p)| ((*v).to_owned(), *p)).collect(),
        },
    };
    fn upper(r: &ResourceRequirements) -> BTreeMap<&str, (i64, i64)> {
        r.iter()
            .map(|(v, b)| (v.as_str(), (b.parallelism.lower_bound, b.parallelism.upper_bound)))
            .collect()
    }
    for (case, rescale, expected) in [
        (
            "up: the default's vertices",
            change(Some(2), Some(3), &[]),
            [
                ("counter", (1, 3)),
                ("keyed", (1, 4)),
                ("sink", (2, 3)),
                ("source", (1, 1)),
            ],
        ),
        (
            "down: a lower bound above the new upper one comes down",
            change(Some(2), Some(1), &[]),
            [
                ("counter", (1, 1)),
                ("keyed", (1, 4)),
                ("sink", (1, 1)),
                ("source", (1, 1)),
            ],
        ),
        (
            "an override wins",
            change(Some(2), Some(2), &[("keyed", 2), ("source", 1)]),
            [
                ("counter", (1, 2)),
                ("keyed", (1, 2)),
                ("sink", (2, 2)),
                ("source", (1, 1)),
            ],
        ),
    ] {
        let wanted = requirements(&current, &rescale);
        assert_eq!(upper(&wanted), BTreeMap::from(expected), "{case}");
    }
    // Requirements that are so already are not sent again.
    let same = change(Some(2), Some(2), &[]);
    assert_eq!(requirements(&current, &same), current);
}

#[test]
fn a_failed_in_place_rescale_is_remembered_for_its_generation_only() {
    let mut status = FlinkDeploymentStatus::default();
    crate::conditions::set_conditions(
        &mut status.conditions,
        Some(4),
        Phase::ScalingFailed,
        "refused",
        0,
    );
    assert!(in_place_failed(Some(&status), Some(4)));
    assert!(!in_place_failed(Some(&status), Some(5)));
    assert!(!in_place_failed(None::<&FlinkDeploymentStatus>, Some(4)));
    let plan: Plan<FlinkDeploymentStatus, ()> = Plan::without_before(
        Vec::new(),
        FlinkDeploymentStatus::default(),
        Vec::new(),
        crate::plan::Next::Steady,
    );
    let recovered = recovery(&plan, Some(5), 0, "Flink said no");
    assert!(in_place_failed(Some(&recovered.status), Some(5)));
    assert_eq!(recovered.events[0].reason, Reason::ScalingFailed);
    assert!(recovered.status.error.unwrap().contains("Flink said no"));
}

#[test]
fn an_event_says_what_changed() {
    let p = |default: Option<i64>, overrides: &[(&str, i64)]| Parallelism {
        default,
        overrides: overrides.iter().map(|(v, p)| ((*v).to_owned(), *p)).collect(),
    };
    let cases = [
        (p(Some(2), &[]), p(Some(3), &[]), "parallelism 2 to 3"),
        (p(Some(2), &[]), p(Some(2), &[("a", 4)]), "vertex a to 4"),
        (
            p(Some(2), &[("a", 4)]),
            p(Some(2), &[("a", 2), ("b", 3)]),
            "vertex a from 4 to 2, vertex b to 3",
        ),
        (
            p(None, &[]),
            p(Some(2), &[]),
            "parallelism the cluster's default to 2",
        ),
    ];
    for (from, to, said) in cases {
        assert_eq!(to.describe_from(&from), said);
    }
}
