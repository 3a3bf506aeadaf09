//! The job autoscaler on real Flink: a job whose source rate steps up and then down (the test
//! job reads its rate from a file, as a real source's load changes) is scaled up in place
//! within its metric window, then down once the scale-down interval has passed, each with a
//! ScalingReport and a Scaling Event. The job keeps its id and its state, the user's spec
//! and its revision do not change, nothing else is rescaled over five minutes, and
//! `flink-operator history` lists both decisions.

use std::{
    collections::BTreeMap,
    path::Path,
    time::{Duration, Instant, SystemTime},
};

use flink_operator_api::{FlinkDeployment, FlinkDeploymentSpec, FlinkJobState, keys};
use flink_operator_controller::flink::{FlinkRestClient, JobId};
use k8s_openapi::api::core::v1::Event;
use kube::Api;
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness, harness,
    harness::LogsOnFailure,
    objects,
    reconcile::{OperatorLogOnFailure, counter_spec_with, create_counter_of},
};

const KEYS: usize = 64;
/// Elements a second at first: 15 a second for each of 2 counter subtasks at 60 ms each is
/// ~90 % busy, over the 0.7 maximum.
const HIGH_RATE: &str = "30";
/// Then: at 4 subtasks, ~9 % busy, under the 0.3 minimum.
const LOW_RATE: &str = "6";

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

/// Waits until the job's counter runs at `parallelism`, all its subtasks running.
async fn counter_runs_at(rest: &FlinkRestClient, job: &JobId, parallelism: u32) -> Instant {
    wait_for(
        &format!("the counter of job {job} running at {parallelism}"),
        Duration::from_secs(300),
        || async {
            let details = rest.job_details(job).await.ok()?;
            let counter = details
                .vertices
                .iter()
                .find(|v| v.name.contains("keyed-counter"))?;
            (details.state == FlinkJobState::Running
                && counter.parallelism == parallelism
                && counter.all_subtasks_running())
            .then(Instant::now)
        },
    )
    .await
}

/// The Events of `reason` in `namespace`, each as often as it happened.
async fn events_of(client: &kube::Client, namespace: &str, reason: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut said = Vec::new();
    for e in events.list(&Default::default()).await.unwrap().items {
        if e.reason.as_deref() == Some(reason) {
            let times = usize::try_from(e.count.unwrap_or(1).max(1)).unwrap_or(1);
            said.extend(std::iter::repeat_n(e.message.clone().unwrap_or_default(), times));
        }
    }
    said
}

/// Every key's count, once every key was counted after `since` (by the job as it runs now).
async fn counts_after(counts: &Path, since: SystemTime) -> BTreeMap<u32, u64> {
    wait_for("every key counted again", Duration::from_secs(120), || async {
        let written = std::fs::read_dir(counts)
            .ok()?
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("key-"))
            .filter(|e| {
                e.metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .is_some_and(|t| t > since)
            })
            .count();
        let read = flink_harness::read_counts(counts);
        (written == KEYS && read.len() == KEYS).then_some(read)
    })
    .await
}

/// The rescaled job went on from its state: no key started counting again.
fn went_on(before: &BTreeMap<u32, u64>, after: &BTreeMap<u32, u64>, what: &str) {
    // A restore from the latest checkpoint may lag the counts last written by a few.
    const LAG: u64 = 10;
    for (key, count) in before {
        assert!(
            after[key] + LAG > *count,
            "{what}: key {key} counted {count} before, {} after",
            after[key]
        );
    }
}

/// The autoscaler's overrides the recorded spec holds, and its `job.parallelism`.
fn recorded(fd: &FlinkDeployment) -> (Option<String>, Option<i32>) {
    let spec: FlinkDeploymentSpec = fd
        .status
        .as_ref()
        .and_then(|s| s.reconciliation_status.as_ref())
        .and_then(|rs| rs.last_reconciled_spec().ok().flatten())
        .unwrap();
    let overrides = spec
        .flink_configuration
        .as_ref()
        .and_then(|c| c.get(keys::operator::AUTOSCALER_PARALLELISM_OVERRIDES));
    (overrides, spec.job.and_then(|j| j.parallelism))
}

fn current_revision(fd: &FlinkDeployment) -> Option<i64> {
    fd.status.as_ref()?.revision.as_ref()?.current
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_autoscaler_scales_a_job_up_then_down_as_its_source_rate_steps_in_place_keeping_its_state() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "autoscaler").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let state = harness::state_dir(&ns.name);
    std::fs::create_dir_all(&state).unwrap();
    let rate = state.join("rate");
    std::fs::write(&rate, HIGH_RATE).unwrap();
    let mut spec = counter_spec_with(
        &version,
        &state,
        "savepoint",
        &[
            ("jobmanager.scheduler", "adaptive"),
            ("job.autoscaler.enabled", "true"),
            ("job.autoscaler.metrics.window", "1 min"),
            ("job.autoscaler.stabilization.interval", "20 s"),
            ("job.autoscaler.utilization.target", "0.5"),
            ("job.autoscaler.target.utilization.boundary", "0.2"),
            ("job.autoscaler.scale-down.interval", "1 min"),
            ("job.autoscaler.vertex.min-parallelism", "2"),
            ("job.autoscaler.vertex.max-parallelism", "4"),
            ("kubernetes.operator.reconcile.interval", "10 s"),
        ],
    )
    .await;
    spec["job"]["args"] = json!([
        "--rate",
        HIGH_RATE,
        "--rate-file",
        "/opt/flink/state/rate",
        "--keys",
        KEYS.to_string(),
        "--work-ms",
        "60",
        "--out",
        "/opt/flink/state/counts",
    ]);
    let api = create_counter_of(&client, &ns.name, spec).await;
    let running = harness::running_job(&api, "counter", None).await;
    let first_ran = Instant::now();
    let job_id = crate::first_hour::job_id(&running);
    let revision = current_revision(&running);
    let job = JobId::from(job_id.as_str());
    let rest = harness::rest_client(&harness::rest_address(&client, &ns.name, "counter").await);
    let counts = state.join("counts");

    // Up: judged over a full window after the stabilization interval, and applied in place.
    let up = cluster_harness::wait_for_event(
        &client,
        &ns.name,
        "the Scaling Event of the scale-up",
        Duration::from_secs(300),
        |e| e.reason.as_deref() == Some("Scaling"),
    )
    .await;
    let before_up = flink_harness::read_counts(&counts);
    let scaled_up = SystemTime::now();
    let report = events_of(&client, &ns.name, "ScalingReport").await;
    eprintln!("ScalingReport: {report:?}\nScaling: {:?}", up.message);
    assert!(
        report.iter().any(|r| changes(r).contains(&(2, 4))),
        "the counter at 2 needs 4 (its bound): {report:?}"
    );
    let up_at = counter_runs_at(&rest, &job, 4).await;
    eprintln!(
        "MEASURED autoscaler: counter 2 -> 4 running {:.0} s after the job first ran",
        up_at.duration_since(first_ran).as_secs_f64()
    );
    went_on(&before_up, &counts_after(&counts, scaled_up).await, "scale-up");

    // Apart from the user's spec: recorded under the operator's key, no new revision.
    let fd = api.get("counter").await.unwrap();
    let (overrides, parallelism) = recorded(&fd);
    assert!(
        overrides.as_deref().is_some_and(|o| o.ends_with(":4")),
        "{overrides:?}"
    );
    assert_eq!(
        parallelism,
        Some(2),
        "the user's parallelism is recorded as it is"
    );
    assert_eq!(fd.spec.job.as_ref().unwrap().parallelism, Some(2));
    assert_eq!(
        current_revision(&fd),
        revision,
        "no revision for the autoscaler's change"
    );

    // Down: the load drops; the scale-down waits for the scale-down interval.
    std::fs::write(&rate, LOW_RATE).unwrap();
    let down = cluster_harness::wait_for_event(
        &client,
        &ns.name,
        "the Scaling Event of the scale-down",
        Duration::from_secs(360),
        |e| e.reason.as_deref() == Some("Scaling") && e.message != up.message,
    )
    .await;
    let before_down = flink_harness::read_counts(&counts);
    let scaled_down = SystemTime::now();
    eprintln!("Scaling: {:?}", down.message);
    let down_at = counter_runs_at(&rest, &job, 2).await;
    eprintln!(
        "MEASURED autoscaler: counter 4 -> 2 running {:.0} s after the rate dropped ({:.0} s after the job first ran)",
        down_at.duration_since(up_at).as_secs_f64(),
        down_at.duration_since(first_ran).as_secs_f64()
    );
    went_on(
        &before_down,
        &counts_after(&counts, scaled_down).await,
        "scale-down",
    );

    // No flapping: nothing more over five minutes of the job's life (and a minute at least
    // after the scale-down).
    let watch_until = (first_ran + Duration::from_secs(300)).max(Instant::now() + Duration::from_secs(60));
    tokio::time::sleep(watch_until.saturating_duration_since(Instant::now())).await;
    let scalings = events_of(&client, &ns.name, "Scaling").await;
    assert_eq!(scalings.len(), 2, "one scale-up, one scale-down: {scalings:?}");
    let fd = api.get("counter").await.unwrap();
    assert_eq!(crate::first_hour::job_id(&fd), job_id);
    assert_eq!(current_revision(&fd), revision);
    let (overrides, _) = recorded(&fd);
    assert!(
        overrides.as_deref().is_some_and(|o| o.ends_with(":2")),
        "{overrides:?}"
    );
    counter_runs_at(&rest, &job, 2).await;

    // The scaling history: both decisions, as the user reads them beside the revisions.
    let (ok, history) = crate::revisions::cli(vec![
        "history".into(),
        "flinkdeployment/counter".into(),
        "-n".into(),
        ns.name.clone(),
    ])
    .await;
    assert!(ok, "{history}");
    let decisions: Vec<&str> = history
        .lines()
        .skip_while(|l| !l.starts_with("Autoscaler decisions"))
        .skip(1)
        .collect();
    assert_eq!(decisions.len(), 2, "{history}");
    assert!(
        decisions[0].contains(" 2 -> 4 (") && decisions[1].contains(" 4 -> 2 ("),
        "{history}"
    );
    assert!(history.contains("the autoscaler's vertex overrides"), "{history}");
}

#[test]
fn a_reports_changes_are_read() {
    assert_eq!(
        changes("vertex a: parallelism 2 -> 4 (x; y); vertex b: parallelism 1 -> 1 (z)"),
        [(2, 4), (1, 1)]
    );
}
