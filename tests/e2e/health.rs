//! The cluster health check: a job in a restart loop (the counting job's `--fail-at`, under
//! Flink's own fixed-delay restart strategy) goes over the restart threshold, and the
//! operator restarts it with its cluster, as its upgrade mode allows, without losing state.

use std::time::{Duration, Instant};

use flink_operator_api::FlinkDeployment;
use k8s_openapi::api::{apps::v1::Deployment, core::v1::Event};
use kube::{
    Api,
    api::{DeleteParams, ListParams, PostParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, counter_spec_with},
};

/// The history the check keeps in `status.clusterInfo` (the Apache operator's key).
const HISTORY: &str = "ClusterHealthInfo";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_in_a_restart_loop_is_restarted_from_its_last_state_with_an_event() {
    let started = Instant::now();
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    // The newest Flink: its HA ConfigMaps carry fewer labels than 1.x's (the other tests of
    // restores from high-availability metadata run 1.x).
    let version = flink_harness::versions().last().unwrap().clone();
    let ns = TestNamespace::new(&client, "health").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let state = harness::state_dir(&ns.name);
    // As a user writes it: Flink restarts the job a second after each failure, forever; the
    // operator steps in after more than 3 restarts within a minute, and looks every 5 s.
    let mut spec = counter_spec_with(
        &version,
        &state,
        "last-state",
        &[
            ("high-availability.type", "kubernetes"),
            ("high-availability.storageDir", "file:///opt/flink/state/ha"),
            ("restart-strategy.type", "fixed-delay"),
            ("restart-strategy.fixed-delay.attempts", "1000"),
            ("restart-strategy.fixed-delay.delay", "1 s"),
            ("kubernetes.operator.cluster.health-check.enabled", "true"),
            (
                "kubernetes.operator.cluster.health-check.restarts.window",
                "1 min",
            ),
            ("kubernetes.operator.cluster.health-check.restarts.threshold", "3"),
            ("kubernetes.operator.reconcile.interval", "5 s"),
        ],
    )
    .await;
    // Each key fails when it reaches 60 (12 s at 5 counts a second), and again soon after
    // every restore of a checkpoint below that.
    spec["job"]["args"]
        .as_array_mut()
        .unwrap()
        .extend([json!("--fail-at"), json!("60")]);
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    let fd: FlinkDeployment = serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": "counter", "namespace": ns.name},
        "spec": spec,
    }))
    .unwrap();
    api.create(&PostParams::default(), &fd).await.unwrap();
    let counts = state.join("counts");

    // The check samples the job: its history appears in status.
    let sampled = wait_for(
        "the health history in status.clusterInfo",
        Duration::from_secs(180),
        || async {
            let status = api.get("counter").await.ok()?.status?;
            let history = status.cluster_info.as_ref()?.get(HISTORY)?.clone();
            Some((status, history))
        },
    )
    .await;
    let (status, history) = sampled;
    let history: serde_json::Value = serde_json::from_str(&history).unwrap();
    assert!(history["numRestarts"].is_i64(), "{history}");
    assert_eq!(history["healthResult"]["healthy"], json!(true), "{history}");
    let job_id = status.job_status.unwrap().job_id.unwrap();
    let id = flink_operator_controller::flink::JobId::from(job_id.as_str());
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    let first_cluster = deployments.get("counter").await.unwrap().metadata.uid;
    let looping_since = Instant::now();

    // Flink restarts the job over and over: the operator says so, and restarts it.
    let events: Api<Event> = Api::namespaced(client.clone(), &ns.name);
    let _status = StatusOnFailure(api.clone());
    let checkpointed = std::cell::Cell::new(0);
    let event = wait_for(
        "the RestartUnhealthyJob Event",
        Duration::from_secs(120),
        || async {
            // The newest checkpoint of the looping job, while its cluster answers.
            if let Ok(url) = tokio::time::timeout(
                Duration::from_secs(2),
                harness::rest_address(&client, &ns.name, "counter"),
            )
            .await
                && let Ok(statistics) = harness::rest_client(&url).checkpoint_statistics(&id).await
                && let Some(completed) = statistics.latest.completed
            {
                checkpointed.set(checkpointed.get().max(completed.id));
            }
            let events = events.list(&ListParams::default()).await.ok()?.items;
            let refused = events
                .iter()
                .find(|e| e.reason.as_deref() == Some("RestartUnhealthyJobFailed"));
            assert!(refused.is_none(), "not restarted: {refused:?}");
            events
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("RestartUnhealthyJob"))
        },
    )
    .await;
    eprintln!(
        "RestartUnhealthyJob {:?} after the first sample: {}",
        looping_since.elapsed(),
        event.message.clone().unwrap_or_default()
    );
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let message = event.message.unwrap_or_default();
    assert!(
        message.contains("times within 1m, more than the threshold of 3"),
        "{message}"
    );
    assert!(
        message.contains("latest checkpoint in its high-availability metadata"),
        "{message}"
    );
    let checkpointed = checkpointed.get();
    assert!(checkpointed > 0, "the looping job completed checkpoints");

    // A new cluster, the same job id (last-state), and its state restored from the
    // checkpoint the HA metadata kept: a checkpoint at least as new as the last one seen
    // of the looping job (a job started over would count its checkpoints from 1).
    wait_for(
        "a new JobManager Deployment",
        Duration::from_secs(180),
        || async {
            let uid = deployments.get("counter").await.ok()?.metadata.uid;
            (uid.is_some() && uid != first_cluster).then_some(())
        },
    )
    .await;
    let url = harness::rest_address(&client, &ns.name, "counter").await;
    let rest = harness::rest_client(&url);
    let restored = wait_for(
        "the restore in the new cluster's checkpoint statistics",
        Duration::from_secs(120),
        || async { rest.checkpoint_statistics(&id).await.ok()?.latest.restored },
    )
    .await;
    eprintln!(
        "new cluster restored checkpoint {} (the looping job's newest seen: {checkpointed}) {:?} after the first sample",
        restored.id,
        looping_since.elapsed()
    );
    assert!(!restored.is_savepoint, "{restored:?}");
    assert!(
        restored.id >= checkpointed,
        "{restored:?}, newest seen {checkpointed}"
    );
    let status = api.get("counter").await.unwrap().status.unwrap();
    assert_eq!(
        status.job_status.as_ref().unwrap().job_id.as_deref(),
        Some(job_id.as_str()),
        "last-state keeps the job id"
    );
    // The counts never start over: every key stays near the --fail-at of 60.
    let counts = flink_harness::read_counts(&counts);
    assert!(counts.values().all(|count| *count > 40), "state lost: {counts:?}");

    api.delete("counter", &DeleteParams::default()).await.unwrap();
    wait_for("the FlinkDeployment gone", Duration::from_secs(120), || async {
        api.get_opt("counter").await.ok()?.is_none().then_some(())
    })
    .await;
    eprintln!("health check test took {:?}", started.elapsed());
}

/// Shows the resource's status when the test fails.
struct StatusOnFailure(Api<FlinkDeployment>);

impl Drop for StatusOnFailure {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let api = self.0.clone();
        let status = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async { api.get("counter").await.ok()?.status })
        })
        .join()
        .ok()
        .flatten();
        eprintln!(
            "---- status ----\n{}",
            serde_json::to_string_pretty(&status).unwrap_or_default()
        );
    }
}
