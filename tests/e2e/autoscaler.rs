//! The autoscaler's advisory judgement on real Flink: a job whose counter is kept busy by
//! its work per element is judged over a one-minute window, a ScalingReport Event says that
//! its counter needs more parallelism than it has, and nothing is rescaled.

use std::time::Duration;

use kube::Api;
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, counter_spec_with, create_counter_of, recorded_parallelism},
};

/// `vertex <id>: parallelism <from> -> <to> (...)` entries of a ScalingReport.
fn changes(report: &str) -> Vec<(i64, i64)> {
    report
        .split("; vertex ")
        .filter_map(|entry| {
            let rest = entry.split("parallelism ").nth(1)?;
            let (from, rest) = rest.split_once(" -> ")?;
            let to = rest.split(' ').next()?;
            Some((from.parse().ok()?, to.parse().ok()?))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_autoscaler_reports_that_a_busy_vertex_needs_more_parallelism_and_rescales_nothing() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "autoscaler").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let state = harness::state_dir(&ns.name);
    let mut spec = counter_spec_with(
        &version,
        &state,
        "savepoint",
        &[
            ("job.autoscaler.enabled", "true"),
            ("job.autoscaler.metrics.window", "1 min"),
            ("job.autoscaler.stabilization.interval", "20 s"),
            ("job.autoscaler.utilization.target", "0.3"),
            ("job.autoscaler.target.utilization.boundary", "0.1"),
            ("kubernetes.operator.reconcile.interval", "10 s"),
        ],
    )
    .await;
    // 20 elements a second over 2 subtasks, 60 ms each: each counter subtask busy ~60 %.
    spec["job"]["args"]
        .as_array_mut()
        .unwrap()
        .extend([json!("--work-ms"), json!("60")]);
    let api = create_counter_of(&client, &ns.name, spec).await;
    let running = harness::running_job(&api, "counter", None).await;
    let job_id = running.status.unwrap().job_status.unwrap().job_id.unwrap();

    let report = cluster_harness::wait_for_event(
        &client,
        &ns.name,
        "a ScalingReport",
        Duration::from_secs(300),
        |e| e.reason.as_deref() == Some("ScalingReport"),
    )
    .await;
    let note = report.message.clone().unwrap_or_default();
    eprintln!("ScalingReport: {note}");
    let wanted = changes(&note);
    assert!(
        wanted.iter().any(|(from, to)| *from == 2 && *to > 2),
        "the counter at 2 needs more: {note}"
    );
    assert!(note.contains("over the maximum"), "{note}");

    // Advisory: the same job, at the parallelism of its spec, and no rescale asked for.
    let fd = api.get("counter").await.unwrap();
    assert_eq!(recorded_parallelism(&fd), Some(2));
    assert_eq!(
        fd.status.unwrap().job_status.unwrap().job_id.as_deref(),
        Some(job_id.as_str())
    );
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), &ns.name);
    let scaling = events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("Scaling"))
        .count();
    assert_eq!(scaling, 0, "an advisory judgement rescales nothing");
}

#[test]
fn a_reports_changes_are_read() {
    assert_eq!(
        changes("vertex a: parallelism 2 -> 4 (x; y); vertex b: parallelism 1 -> 1 (z)"),
        [(2, 4), (1, 1)]
    );
}
