//! ZooKeeper high availability, as with Kubernetes HA: a counting job with
//! `high-availability.type: zookeeper` against a real ZooKeeper server (Apache ZooKeeper from
//! Maven Central, on the node's address) goes through a last-state upgrade (same job id, the
//! counts go on: restored from the checkpoint its ZooKeeper metadata points at), the loss of
//! its JobManager Deployment (recovered from ZooKeeper) and its deletion (its ZooKeeper
//! nodes gone, so that a later cluster of the same name starts clean).

use std::time::Duration;

use flink_operator_api::{FlinkDeployment, FlinkJobState};
use flink_operator_controller::zookeeper::HaNodes;
use flink_operator_test_support::zookeeper::ZooKeeper;
use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, counted_to, counts_went_on, create_counter, recorded_parallelism},
};

/// The server's log, should the test fail while it runs.
struct ZooKeeperLogOnFailure<'a>(&'a ZooKeeper);

impl Drop for ZooKeeperLogOnFailure<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.0.log();
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            eprintln!("--- ZooKeeper log (last 60 lines) ---");
            for line in tail.into_iter().rev() {
                eprintln!("{line}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "an older Flink version's variant: run by scripts/test-flink-versions"]
async fn a_zookeeper_ha_job_on_flink_1_keeps_its_state_through_a_last_state_upgrade_and_a_lost_jobmanager() {
    let version = flink_harness::versions().first().unwrap().clone();
    zookeeper_ha(&version).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zookeeper_ha_job_on_flink_2_keeps_its_state_through_a_last_state_upgrade_and_a_lost_jobmanager() {
    let version = flink_harness::versions().last().unwrap().clone();
    zookeeper_ha(&version).await;
}

async fn zookeeper_ha(version: &str) {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let host_ip = tokio::task::spawn_blocking(|| harness::runtime().host_ip.clone())
        .await
        .unwrap();
    let zk = tokio::task::spawn_blocking(move || ZooKeeper::start(&host_ip))
        .await
        .unwrap();
    let _zk_log = ZooKeeperLogOnFailure(&zk);

    let ns = TestNamespace::new(&client, "zk-ha").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    // Each namespace its own root, as a platform shares one ZooKeeper between teams.
    let root = format!("/flink/{}", ns.name);
    let config = [
        ("high-availability.type", "zookeeper"),
        ("high-availability.zookeeper.quorum", zk.address.as_str()),
        ("high-availability.zookeeper.path.root", root.as_str()),
        ("high-availability.storageDir", "file:///opt/flink/state/ha"),
        // The server takes unauthenticated clients (as the operator is one): without this,
        // each JobManager and TaskManager first tries SASL and connects 20 s later.
        ("zookeeper.sasl.disable", "true"),
        // A lost JobManager Deployment is found at the next look of a steady job: every
        // 10 s rather than the default minute.
        ("kubernetes.operator.reconcile.interval", "10 s"),
    ];
    let (api, state) = create_counter(&client, &ns.name, version, "last-state", &config).await;
    let counts = state.join("counts");
    let nodes = HaNodes::of(
        &config
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        "counter",
    )
    .unwrap();

    let first = running(&api, |_| true).await;
    let job_id = first.status.unwrap().job_status.unwrap().job_id;
    // 5 counts a second per key and a checkpoint every 5 s: the latest checkpoint lags the
    // written counts by well under 50, and a job started over would be far below 50.
    let before = counted_to(&counts, 100).await;
    wait_for(
        "a completed checkpoint in the job's ZooKeeper nodes",
        Duration::from_secs(60),
        || async { nodes.look().await.ok()?.checkpoint.then_some(()) },
    )
    .await;

    // A last-state upgrade: the cluster goes, its ZooKeeper metadata stays, and the new
    // cluster restores the latest checkpoint under the same job id.
    api.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"parallelism": 1}}})),
    )
    .await
    .unwrap();
    let upgraded = running(&api, |fd| recorded_parallelism(fd) == Some(1)).await;
    let job = upgraded.status.unwrap().job_status.unwrap();
    assert_eq!(job.job_id, job_id, "last-state keeps the job id");
    assert_eq!(job.upgrade_savepoint_path, None, "no savepoint was taken");
    counts_went_on(&counts, &before, std::time::SystemTime::now(), 50).await;
    let url = harness::rest_address(&client, &ns.name, "counter").await;
    let rest = harness::rest_client(&url);
    let id = flink_operator_controller::flink::JobId::from(job_id.as_deref().unwrap());
    let restored = harness::restored(&rest, &id).await;
    assert!(!restored.is_savepoint, "restored a checkpoint: {restored:?}");

    // The JobManager Deployment deleted by hand: deployed again, and the job restores the
    // latest checkpoint from ZooKeeper under the same job id.
    let before = flink_harness::read_counts(&counts);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    let lost = deployments.get("counter").await.unwrap().metadata.uid;
    let started = api
        .get("counter")
        .await
        .unwrap()
        .status
        .unwrap()
        .job_status
        .unwrap()
        .start_time;
    deployments
        .delete("counter", &DeleteParams::foreground())
        .await
        .unwrap();
    wait_for(
        "a new JobManager Deployment and the job RUNNING again",
        Duration::from_secs(240),
        || async {
            let status = api.get("counter").await.ok()?.status?;
            let job = status.job_status?;
            let running = status.lifecycle_state.map(|l| l.as_str()) == Some("STABLE")
                && job.state == Some(FlinkJobState::Running)
                && job.start_time != started;
            let replaced = deployments.get("counter").await.ok()?.metadata.uid != lost;
            (running && replaced).then_some(())
        },
    )
    .await;
    let status = api.get("counter").await.unwrap().status.unwrap();
    assert_eq!(
        status.job_status.unwrap().job_id,
        job_id,
        "recovered under the same job id"
    );
    counts_went_on(&counts, &before, std::time::SystemTime::now(), 50).await;

    // Deleted: the cluster's ZooKeeper nodes go with it.
    assert!(nodes.look().await.unwrap().exists);
    api.delete("counter", &DeleteParams::default()).await.unwrap();
    wait_for("the FlinkDeployment gone", Duration::from_secs(120), || async {
        api.get_opt("counter").await.ok()?.is_none().then_some(())
    })
    .await;
    let left = nodes.look().await.unwrap();
    assert!(!left.exists && !left.checkpoint, "{left:?} under {}", nodes.path);
}

/// Waits for the job RUNNING, the resource STABLE and `also`; a timeout shows the status.
async fn running(api: &Api<FlinkDeployment>, also: impl Fn(&FlinkDeployment) -> bool) -> FlinkDeployment {
    let deadline = std::time::Instant::now() + Duration::from_secs(240);
    loop {
        let fd = api.get("counter").await.ok();
        let ok = fd.as_ref().is_some_and(|fd| {
            let status = fd.status.clone().unwrap_or_default();
            status.job_status.and_then(|j| j.state) == Some(FlinkJobState::Running)
                && status.lifecycle_state.map(|l| l.as_str()) == Some("STABLE")
                && also(fd)
        });
        if ok {
            return fd.unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for the job RUNNING and the resource STABLE; status: {}",
            serde_json::to_string_pretty(&fd.and_then(|fd| fd.status)).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
