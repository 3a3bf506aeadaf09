//! What a user meets in the first hour with real jobs: a steady job costs nothing, an update
//! right after a restart takes its savepoint once the job's tasks run, a savepoint that
//! cannot be taken ends the update with the reason, and a job that fails says why.

use std::{collections::BTreeMap, time::Duration};

use flink_operator_api::{FlinkDeployment, FlinkJobState};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::LogsOnFailure,
    objects,
    reconcile::{OperatorLogOnFailure, counted_to, counter_spec, counts_went_on},
};

/// The counting job `counter` in a namespace of its own.
struct Job {
    api: Api<FlinkDeployment>,
    ns: TestNamespace,
    counts: std::path::PathBuf,
}

impl Job {
    async fn create(
        client: &Client,
        prefix: &str,
        mode: &str,
        config: &[(&str, &str)],
        args: &[&str],
    ) -> Self {
        let ns = TestNamespace::new(client, prefix).await;
        objects::create_all(client, &objects::flink_service_account(&ns.name)).await;
        let version = flink_harness::versions().last().unwrap().clone();
        let state = crate::harness::state_dir(&ns.name);
        let mut spec = tokio::task::spawn_blocking({
            let (version, state, mode) = (version, state.clone(), mode.to_owned());
            move || counter_spec(&version, &state, &mode)
        })
        .await
        .unwrap();
        for (key, value) in config {
            spec["flinkConfiguration"][*key] = json!(value);
        }
        for arg in args {
            spec["job"]["args"].as_array_mut().unwrap().push(json!(arg));
        }
        let fd: FlinkDeployment = serde_json::from_value(json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
            "metadata": {"name": "counter", "namespace": ns.name},
            "spec": spec,
        }))
        .unwrap();
        let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
        api.create(&PostParams::default(), &fd).await.unwrap();
        Job {
            api,
            ns,
            counts: state.join("counts"),
        }
    }

    /// Waits for the job RUNNING under another id than `previous` and the resource STABLE.
    async fn running(&self, previous: Option<&str>) -> FlinkDeployment {
        crate::harness::running_job(&self.api, "counter", previous).await
    }

    async fn patch(&self, patch: serde_json::Value) {
        self.api
            .patch("counter", &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap();
    }

    async fn delete(&self) {
        self.api
            .delete("counter", &DeleteParams::default())
            .await
            .unwrap();
        wait_for("the FlinkDeployment gone", Duration::from_secs(120), || async {
            self.api.get_opt("counter").await.ok()?.is_none().then_some(())
        })
        .await;
    }

    /// The warning Events about the resource with `reason`, as `kubectl describe` lists them.
    async fn events(&self, client: &Client, reason: &str) -> Vec<String> {
        let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), &self.ns.name);
        events
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| {
                e.reason.as_deref() == Some(reason) && e.involved_object.name.as_deref() == Some("counter")
            })
            .filter_map(|e| e.message)
            .collect()
    }
}

/// The job id the status of `fd` records.
pub(crate) fn job_id(fd: &FlinkDeployment) -> String {
    fd.status
        .as_ref()
        .unwrap()
        .job_status
        .as_ref()
        .unwrap()
        .job_id
        .clone()
        .unwrap()
}

fn condition(fd: &FlinkDeployment, type_: &str) -> (String, String) {
    let c = fd
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_.as_deref() == Some(type_)).cloned())
        .unwrap_or_default();
    (c.reason.unwrap_or_default(), c.message.unwrap_or_default())
}

/// The operator's counters of one resource (kind FlinkDeployment), by metric name.
fn resource_counters(namespace: &str, name: &str) -> BTreeMap<&'static str, u64> {
    let metrics = crate::operator::probe_get("/metrics");
    let labels = format!(r#"{{kind="FlinkDeployment",namespace="{namespace}",name="{name}"}} "#);
    [
        "flink_operator_resource_reconciles_total",
        "flink_operator_status_writes_total",
        "flink_operator_flink_requests_total",
    ]
    .into_iter()
    .map(|metric| {
        let value = metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{metric}{labels}")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        (metric, value)
    })
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_that_changes_nothing_costs_nothing() {
    let client = crate::harness::client().await;
    crate::operator::shared(&client).await;
    // The operator is not restarted meanwhile (its counters would start again): only tests
    // that run alone restart it. The counters are this resource's own, which no other test's
    // work adds to, so this one runs beside another.
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let job = Job::create(&client, "steady", "savepoint", &[], &[]).await;
    let _logs = LogsOnFailure(job.ns.name.clone());
    job.running(None).await;
    // Settled: the first looks after STABLE are done.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = job.api.get("counter").await.unwrap();
    let counters_before = resource_counters(&job.ns.name, "counter");
    tokio::time::sleep(Duration::from_secs(60)).await;
    let after = job.api.get("counter").await.unwrap();
    let counters_after = resource_counters(&job.ns.name, "counter");
    let delta = |metric: &str| counters_after[metric] - counters_before[metric];
    eprintln!(
        "in 60 s: {} reconciles, {} status writes, {} REST calls",
        delta("flink_operator_resource_reconciles_total"),
        delta("flink_operator_status_writes_total"),
        delta("flink_operator_flink_requests_total")
    );
    assert_eq!(
        before.metadata.resource_version, after.metadata.resource_version,
        "a steady resource was rewritten:\nbefore {:?}\nafter {:?}",
        before.status, after.status
    );
    assert!(
        delta("flink_operator_resource_reconciles_total") <= 2,
        "{counters_before:?} -> {counters_after:?}"
    );
    assert!(
        delta("flink_operator_flink_requests_total") <= 4,
        "{counters_before:?} -> {counters_after:?}"
    );
    assert_eq!(delta("flink_operator_status_writes_total"), 0);
    // The job still ran all the while, and the resource says so.
    assert_eq!(condition(&after, "Ready").0, "Running");
    job.delete().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_savepoint_update_right_after_a_restart_waits_for_the_tasks_and_restores_the_savepoint() {
    let client = crate::harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let job = Job::create(&client, "update-after-restart", "savepoint", &[], &[]).await;
    let _logs = LogsOnFailure(job.ns.name.clone());
    let first = job_id(&job.running(None).await);
    counted_to(&job.counts, 20).await;

    // A restart (savepoint mode: stop with a savepoint, start from it)...
    job.patch(json!({"spec": {"restartNonce": 1}})).await;
    // ...and, as soon as the restarted job reports RUNNING, an update.
    let restarted = wait_for("the restarted job RUNNING", Duration::from_secs(240), || async {
        let fd = job.api.get("counter").await.ok()?;
        let j = fd.status.as_ref()?.job_status.as_ref()?;
        (j.state == Some(FlinkJobState::Running) && j.job_id.as_deref() != Some(first.as_str()))
            .then(|| job_id(&fd))
    })
    .await;
    let before = counted_to(&job.counts, 30).await;
    job.patch(json!({"spec": {"job": {"parallelism": 1}}})).await;
    let since = std::time::SystemTime::now();
    let updated = job.running(Some(&restarted)).await;
    let status = updated.status.as_ref().unwrap();
    let savepoint = status
        .job_status
        .as_ref()
        .unwrap()
        .upgrade_savepoint_path
        .clone()
        .unwrap();
    assert!(savepoint.contains("/opt/flink/state/savepoints/"), "{savepoint}");
    let recorded: flink_operator_api::FlinkDeploymentSpec = status
        .reconciliation_status
        .as_ref()
        .unwrap()
        .last_reconciled_spec()
        .unwrap()
        .unwrap();
    assert_eq!(recorded.job.unwrap().parallelism, Some(1));
    assert_eq!(status.error, None);
    counts_went_on(&job.counts, &before, since, 0).await;
    job.delete().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_savepoint_that_cannot_be_taken_ends_the_update_after_the_grace_period_with_the_reason() {
    let client = crate::harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    // A savepoint directory nobody can create directories in; checkpoints work.
    let job = Job::create(
        &client,
        "savepoint-fails",
        "savepoint",
        &[
            (
                "execution.checkpointing.savepoint-dir",
                "file:///proc/flink-savepoints",
            ),
            ("kubernetes.operator.savepoint.trigger.grace-period", "20 s"),
        ],
        &[],
    )
    .await;
    let _logs = LogsOnFailure(job.ns.name.clone());
    let first = job_id(&job.running(None).await);
    // The job counts, so all its tasks run: what fails is the savepoint, not a job whose
    // TaskManager is still starting (on a busy machine that can take longer than the
    // 20 s grace period, and the update then fails for that reason instead).
    counted_to(&job.counts, 10).await;
    job.patch(json!({"spec": {"job": {"parallelism": 1}}})).await;
    let started = std::time::Instant::now();
    // Retried meanwhile, with the reason in status.
    let retrying = wait_for("a failed attempt reported", Duration::from_secs(60), || async {
        let fd = job.api.get("counter").await.ok()?;
        let retry = fd
            .status
            .as_ref()?
            .job_status
            .as_ref()?
            .savepoint_info
            .as_ref()?
            .upgrade_retry
            .clone()?;
        (retry.failures >= 1).then_some(fd)
    })
    .await;
    assert_eq!(condition(&retrying, "Progressing").0, "Updating");
    assert!(retrying.status.as_ref().unwrap().error.is_some());
    let failed = wait_for("UpdateFailed", Duration::from_secs(90), || async {
        let fd = job.api.get("counter").await.ok()?;
        (condition(&fd, "Degraded").0 == "UpdateFailed").then_some(fd)
    })
    .await;
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(15),
        "gave up after {elapsed:?}, before the grace period"
    );
    let error = failed.status.as_ref().unwrap().error.clone().unwrap();
    assert!(
        error.contains("grace-period") && error.contains("keeps running"),
        "{error}"
    );
    assert_eq!(condition(&failed, "Degraded").1, error);
    assert_eq!(condition(&failed, "Ready").1, error);
    // The job that ran keeps running, and still says why the update failed a while later.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let later = job.api.get("counter").await.unwrap();
    let job_status = later.status.as_ref().unwrap().job_status.clone().unwrap();
    assert_eq!(job_status.job_id.as_deref(), Some(first.as_str()));
    assert_eq!(job_status.state, Some(FlinkJobState::Running));
    assert_eq!(
        later.status.as_ref().unwrap().error.as_deref(),
        Some(error.as_str())
    );
    let events = job.events(&client, "UpdateFailed").await;
    assert!(events.iter().any(|e| e == &error), "{events:?}");
    // A job in savepoint mode is stopped with a savepoint before it is deleted, which cannot
    // work here either: the user says to delete it without one.
    job.patch(
        json!({"spec": {"flinkConfiguration": {"kubernetes.operator.job.savepoint-on-deletion": "false"}}}),
    )
    .await;
    job.delete().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_fails_shows_flinks_exception_in_status_the_conditions_and_an_event() {
    let client = crate::harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    // No restarts: the first failure fails the job.
    let job = Job::create(
        &client,
        "job-fails",
        "savepoint",
        &[("restart-strategy.type", "none")],
        &["--fail-at", "15"],
    )
    .await;
    let _logs = LogsOnFailure(job.ns.name.clone());
    let failed = wait_for("the job FAILED", Duration::from_secs(240), || async {
        let fd = job.api.get("counter").await.ok()?;
        let state = fd.status.as_ref()?.job_status.as_ref()?.state.clone()?;
        (state == FlinkJobState::Failed && fd.status.as_ref()?.error.is_some()).then_some(fd)
    })
    .await;
    let error = failed.status.as_ref().unwrap().error.clone().unwrap();
    assert!(
        error.contains("reached --fail-at 15 (a deliberate failure)"),
        "{error}"
    );
    let (reason, message) = condition(&failed, "Degraded");
    assert_eq!((reason.as_str(), message.as_str()), ("Failed", error.as_str()));
    let events = wait_for("the JobFailed Event", Duration::from_secs(30), || async {
        let events = job.events(&client, "JobFailed").await;
        (!events.is_empty()).then_some(events)
    })
    .await;
    assert!(
        events.iter().any(|e| e.contains("reached --fail-at 15")),
        "{events:?}"
    );
    job.delete().await;
}
