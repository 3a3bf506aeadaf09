//! Changes of parallelism applied in place, on real Flink: with the adaptive scheduler a
//! change of `job.parallelism` rescales the running job (the same job id, no savepoint, the
//! counts go on), on every tested version; on a standalone cluster in reactive mode
//! `kubectl scale` (the scale subresource) adds a TaskManager and the job takes its slots.

use std::time::{Duration, Instant, SystemTime};

use flink_operator_api::{FlinkJobState, FlinkStateSnapshot, keys};
use flink_operator_controller::flink::{FlinkRestClient, JobId};
use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    kubectl, objects,
    reconcile::{
        OperatorLogOnFailure, counted_to, counter_spec_with, counts_went_on, create_counter,
        create_counter_of, recorded_parallelism,
    },
};

/// Waits until every vertex of `job` that ran at `from` runs at `to`, each of its subtasks
/// running (counted per execution state); returns when that was seen.
async fn runs_at(rest: &FlinkRestClient, job: &JobId, from: u32, to: u32) -> Instant {
    wait_for(
        &format!("job {job} rescaled from {from} to {to}, all tasks running"),
        Duration::from_secs(180),
        || async {
            let details = rest.job_details(job).await.ok()?;
            let rescaled = details.vertices.iter().any(|v| v.parallelism == to)
                && !details.vertices.iter().any(|v| v.parallelism == from);
            let running = details.state == FlinkJobState::Running
                && details.vertices.iter().all(|v| v.all_subtasks_running());
            (rescaled && running).then(Instant::now)
        },
    )
    .await
}

/// No UPGRADE snapshot was taken for the change: the job was not stopped.
async fn no_upgrade_savepoint(client: &kube::Client, namespace: &str) {
    let snapshots: Api<FlinkStateSnapshot> = Api::namespaced(client.clone(), namespace);
    let upgrade = ListParams::default().labels(&format!("{}=UPGRADE", keys::labels::SNAPSHOT_TRIGGER_TYPE));
    let taken = snapshots.list(&upgrade).await.unwrap().items;
    assert!(
        taken.is_empty(),
        "a savepoint was taken for the rescale: {taken:?}"
    );
}

/// The job `counter` in `namespace` with the adaptive scheduler, from parallelism 2 to 3:
/// in place, with a `Scaling` Event; returns the seconds from the change to the new
/// parallelism running.
async fn rescaled_in_place(client: &kube::Client, namespace: &str, version: &str) -> f64 {
    let (api, state) = create_counter(
        client,
        namespace,
        version,
        "savepoint",
        &[("jobmanager.scheduler", "adaptive")],
    )
    .await;
    let counts = state.join("counts");
    let running = harness::running_job(&api, "counter", None).await;
    let job_id = running.status.unwrap().job_status.unwrap().job_id.unwrap();
    let job = JobId::from(job_id.as_str());
    let rest = harness::rest_client(&harness::rest_address(client, namespace, "counter").await);
    harness::wait_for_running_job(&rest, &job).await;
    let before = counted_to(&counts, 30).await;

    let asked = Instant::now();
    let since = SystemTime::now();
    api.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"parallelism": 3}}})),
    )
    .await
    .unwrap();
    let done = runs_at(&rest, &job, 2, 3).await;
    let seconds = done.duration_since(asked).as_secs_f64();

    // The same job, recorded with its new parallelism, STABLE again; nothing stopped it.
    let fd = harness::running_job(&api, "counter", None).await;
    assert_eq!(recorded_parallelism(&fd), Some(3));
    let status = fd.status.clone().unwrap();
    assert_eq!(
        status.job_status.unwrap().job_id.as_deref(),
        Some(job_id.as_str())
    );
    cluster_harness::wait_for_event(
        client,
        namespace,
        "the Scaling Event",
        Duration::from_secs(30),
        |e| e.reason.as_deref() == Some("Scaling"),
    )
    .await;
    no_upgrade_savepoint(client, namespace).await;
    // The scheduler restarted the tasks from their latest checkpoint: the counts go on.
    counts_went_on(&counts, &before, since, 50).await;
    seconds
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallelism_change_of_a_running_job_is_applied_in_place_by_the_adaptive_scheduler() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    for version in flink_harness::versions() {
        let ns = TestNamespace::new(&client, &format!("rescale-{}", version.replace('.', "-"))).await;
        let _logs = LogsOnFailure(ns.name.clone());
        objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
        let seconds = rescaled_in_place(&client, &ns.name, &version).await;
        eprintln!("MEASURED flink {version}: parallelism 2 -> 3 in place, running after {seconds:.1} s");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_scale_on_a_reactive_standalone_cluster_adds_task_managers_whose_slots_the_job_takes() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "reactive").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let state = harness::state_dir(&ns.name);
    let counts = state.join("counts");
    // Reactive mode never reaches the parallelism it wants (the job's maximum): once a
    // TaskManager joins, Flink 2 waits out the stabilization timeout for more before it
    // rescales; 10 s rather than its default minute.
    let mut spec = counter_spec_with(
        &version,
        &state,
        "savepoint",
        &[
            ("scheduler-mode", "reactive"),
            (
                "jobmanager.adaptive-scheduler.executing.resource-stabilization-timeout",
                "10 s",
            ),
        ],
    )
    .await;
    spec["mode"] = json!("standalone");
    spec["taskManager"]["replicas"] = json!(1);
    let api = create_counter_of(&client, &ns.name, spec).await;
    let running = harness::running_job(&api, "counter", None).await;
    let status = running.status.unwrap();
    let task_managers = status.task_manager.clone().unwrap();
    assert_eq!(task_managers.replicas, Some(1));
    assert_eq!(
        task_managers.label_selector.as_deref(),
        Some("component=taskmanager,app=counter")
    );
    let job_id = status.job_status.unwrap().job_id.unwrap();
    let job = JobId::from(job_id.as_str());
    let rest = harness::rest_client(&harness::rest_address(&client, &ns.name, "counter").await);
    harness::wait_for_running_job(&rest, &job).await;
    let before = counted_to(&counts, 30).await;

    // What a user or a HorizontalPodAutoscaler does: the scale subresource.
    let since = SystemTime::now();
    let scaled = kubectl::run(
        &ns.name,
        &["scale", "flinkdeployment/counter", "--replicas=2"],
        None,
    )
    .await;
    assert!(
        scaled.status.success(),
        "{}",
        String::from_utf8_lossy(&scaled.stderr)
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    wait_for("two TaskManagers", Duration::from_secs(60), || async {
        let tm = deployments.get("counter-taskmanager").await.ok()?;
        (tm.spec.replicas == Some(2)).then_some(())
    })
    .await;
    // Two TaskManagers of two slots: reactive mode runs the job at 4 where it ran at 2.
    runs_at(
        &rest,
        &job,
        flink_harness::SLOTS as u32,
        2 * flink_harness::SLOTS as u32,
    )
    .await;
    let fd = wait_for(
        "status.taskManager.replicas 2",
        Duration::from_secs(60),
        || async {
            let fd = api.get("counter").await.ok()?;
            (fd.status.as_ref()?.task_manager.as_ref()?.replicas == Some(2)).then_some(fd)
        },
    )
    .await;
    assert_eq!(
        fd.status.unwrap().job_status.unwrap().job_id.as_deref(),
        Some(job_id.as_str()),
        "the same job"
    );
    no_upgrade_savepoint(&client, &ns.name).await;
    counts_went_on(&counts, &before, since, 50).await;
}

/// How long a job runs at one parallelism before the benchmark changes it again.
const SPACING: Duration = Duration::from_secs(40);

/// Seconds from each parallelism change (2 -> 3, 3 -> 2, 2 -> 3) being stored to the job
/// running at its new parallelism with all tasks running: in place when `in_place`, else by
/// a savepoint upgrade (a new job).
async fn rescale_times(client: &kube::Client, namespace: &str, version: &str, in_place: bool) -> Vec<f64> {
    let enabled = if in_place { "true" } else { "false" };
    let (api, _state) = create_counter(
        client,
        namespace,
        version,
        "savepoint",
        &[
            ("jobmanager.scheduler", "adaptive"),
            ("kubernetes.operator.job.upgrade.inplace-scaling.enabled", enabled),
        ],
    )
    .await;
    let mut job_id = harness::running_job(&api, "counter", None)
        .await
        .status
        .unwrap()
        .job_status
        .unwrap()
        .job_id
        .unwrap();
    let mut times = Vec::new();
    for (from, to) in [(2_u32, 3_u32), (3, 2), (2, 3)] {
        let rest = harness::rest_client(&harness::rest_address(client, namespace, "counter").await);
        let job = JobId::from(job_id.as_str());
        // Every vertex RUNNING: at parallelism 3 one subtask of the test job's source has no
        // split of its sequence and finishes, so the overview never counts all tasks running.
        wait_for("every task running", Duration::from_secs(240), || async {
            rest.job_details(&job)
                .await
                .ok()?
                .all_tasks_running()
                .then_some(())
        })
        .await;
        // Changes minutes apart, as a user or an autoscaler makes them: the adaptive
        // scheduler rescales a job at most once per `scaling-interval.min` (30 s).
        tokio::time::sleep(SPACING).await;
        let asked = Instant::now();
        api.patch(
            "counter",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"job": {"parallelism": to}}})),
        )
        .await
        .unwrap();
        let previous = (!in_place).then_some(job_id.as_str());
        let fd = wait_for("the change recorded", Duration::from_secs(240), || async {
            let fd = api.get("counter").await.ok()?;
            let id = fd.status.as_ref()?.job_status.as_ref()?.job_id.as_deref()?;
            (recorded_parallelism(&fd) == i32::try_from(to).ok() && Some(id) != previous)
                .then_some(fd.clone())
        })
        .await;
        job_id = fd.status.unwrap().job_status.unwrap().job_id.unwrap();
        // A new cluster after an upgrade: another JobManager.
        let rest = harness::rest_client(&harness::rest_address(client, namespace, "counter").await);
        let done = runs_at(&rest, &JobId::from(job_id.as_str()), from, to).await;
        times.push(done.duration_since(asked).as_secs_f64());
        eprintln!(
            "{from} -> {to}: {:.1} s",
            done.duration_since(asked).as_secs_f64()
        );
    }
    times
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: bench/operator.sh rescale"]
async fn bench_rescale_in_place_and_by_upgrade() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::exclusive_operator().await;
    let version = flink_harness::versions().first().unwrap().clone();
    let mut medians = Vec::new();
    for (in_place, how) in [(true, "in place"), (false, "by a savepoint upgrade")] {
        let ns = TestNamespace::new(
            &client,
            if in_place {
                "bench-in-place"
            } else {
                "bench-upgrade"
            },
        )
        .await;
        objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
        let mut times = rescale_times(&client, &ns.name, &version, in_place).await;
        eprintln!(
            "MEASURED flink {version}: parallelism changes {how}, change to new parallelism running: {times:.1?} s"
        );
        times.sort_by(f64::total_cmp);
        let (median, max) = (times[times.len() / 2], times[times.len() - 1]);
        crate::steady_state::summary(
            "rescale",
            &format!("change to new parallelism running, {how} (median / max of 3)"),
            &format!("{median:.1} s / {max:.1} s"),
            "",
        );
        medians.push(median);
    }
    eprintln!(
        "MEASURED in place {:.1} s vs upgrade {:.1} s (median)",
        medians[0], medians[1]
    );
}

/// The operator's REST calls to the JobManagers of FlinkDeployments in `namespace`, and its
/// looks at them (reconciles), so far.
fn rest_calls_and_looks(namespace: &str) -> (f64, f64) {
    let text = crate::operator::probe_get("/metrics");
    let ours = [("kind", "FlinkDeployment"), ("namespace", namespace)];
    let count = |family: &str| crate::steady_state::sum(&text, family, "_total", &ours).unwrap_or(0.0);
    (
        count("flink_operator_flink_requests"),
        count("flink_operator_resource_reconciles"),
    )
}

/// REST calls per minute and per look to the JobManager of a RUNNING counting job over
/// `MEASURED_FOR`, with the autoscaler on or off (both at the default reconcile interval of
/// 60 s: a 3-minute window holds 2 or 3 looks, hence the figure per look too).
async fn rest_calls(client: &kube::Client, namespace: &str, version: &str, autoscaler: bool) -> (f64, f64) {
    const SETTLE: Duration = Duration::from_secs(60);
    const MEASURED_FOR: Duration = Duration::from_secs(180);
    let enabled = if autoscaler { "true" } else { "false" };
    let (api, _state) = create_counter(
        client,
        namespace,
        version,
        "savepoint",
        &[
            ("job.autoscaler.enabled", enabled),
            ("job.autoscaler.stabilization.interval", "30 s"),
            ("job.autoscaler.metrics.window", "2 min"),
        ],
    )
    .await;
    harness::running_job(&api, "counter", None).await;
    tokio::time::sleep(SETTLE).await;
    let (calls, looks) = rest_calls_and_looks(namespace);
    tokio::time::sleep(MEASURED_FOR).await;
    let (calls_after, looks_after) = rest_calls_and_looks(namespace);
    let calls = calls_after - calls;
    (
        calls / MEASURED_FOR.as_secs_f64() * 60.0,
        calls / (looks_after - looks).max(1.0),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: bench/operator.sh rescale"]
async fn bench_autoscaler_rest_calls_per_job() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::exclusive_operator().await;
    let version = flink_harness::versions().first().unwrap().clone();
    let mut rates = Vec::new();
    for (autoscaler, name) in [(false, "bench-autoscaler-off"), (true, "bench-autoscaler-on")] {
        let ns = TestNamespace::new(&client, name).await;
        objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
        let (per_minute, per_look) = rest_calls(&client, &ns.name, &version, autoscaler).await;
        eprintln!(
            "MEASURED REST calls per job, autoscaler {}: {per_minute:.2} per minute, {per_look:.2} per look",
            if autoscaler { "on" } else { "off" }
        );
        rates.push((per_minute, per_look));
    }
    crate::steady_state::summary(
        "rescale",
        "REST calls per job per minute (per look): autoscaler off / on (the test job, 2 vertices, default reconcile interval)",
        &format!(
            "{:.2} ({:.2}) / {:.2} ({:.2})",
            rates[0].0, rates[0].1, rates[1].0, rates[1].1
        ),
        "",
    );
}
