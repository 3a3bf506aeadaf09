//! Chaos: two replicas of the operator installed by the chart, as it runs them by default,
//! and the leader's pod deleted with no grace period (its process SIGKILLed, as when its
//! node is lost) at a random point of each of several savepoint upgrades in a row. The other
//! replica takes over within the lease duration and finishes the upgrade: each upgrade takes
//! exactly one savepoint, the new job restores it, and the counts go on. The Deployment
//! replaces the lost pod, which then follows.

use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::api::{coordination::v1::Lease, core::v1::Pod};
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, OPERATOR_LEASE, OPERATOR_NAMESPACE, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, counted_to, counts_went_on, create_counter},
};

/// Savepoint upgrades in a row, each with its leader killed.
const UPGRADES: u64 = 3;
/// The kill comes this long at most after the spec change: the upgrade's savepoint, the old
/// cluster's teardown and the new one's start all fall in this window on this machine.
const LATEST_KILL: Duration = Duration::from_secs(6);
/// The chart's defaults (the Apache operator's).
const LEASE_DURATION: Duration = Duration::from_secs(15);
const RETRY_PERIOD: Duration = Duration::from_secs(2);

/// A small deterministic generator: the seed is printed, and `FAILOVER_SEED` replays a run.
struct Random(u64);

impl Random {
    fn new() -> Self {
        let seed = std::env::var("FAILOVER_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap()
                    .subsec_nanos() as u64
            });
        eprintln!("failover: seed {seed} (FAILOVER_SEED={seed} replays these kill points)");
        Self(seed | 1)
    }

    fn below(&mut self, bound: u64) -> u64 {
        // xorshift64
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases.get(OPERATOR_LEASE).await.ok()?.spec?.holder_identity
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_killed_at_random_points_of_savepoint_upgrades_is_replaced_and_each_upgrade_restores_its_one_savepoint()
 {
    let client = harness::client().await;
    let operator = crate::operator::shared(&client).await;
    let _alone = cluster_harness::exclusive_operator().await;
    let _operator_log = OperatorLogOnFailure;
    let _replicas = operator.scaled(2).await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let pods: Api<Pod> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);

    let ns = TestNamespace::new(&client, "failover").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let (api, state) = create_counter(&client, &ns.name, &version, "savepoint", &[]).await;
    let counts = state.join("counts");
    let mut job = harness::running_job(&api, "counter", None)
        .await
        .status
        .unwrap()
        .job_status
        .unwrap()
        .job_id;
    let mut before = counted_to(&counts, 50).await;
    let mut random = Random::new();
    let mut takeovers = Vec::new();

    for upgrade in 1..=UPGRADES {
        let parallelism = if upgrade % 2 == 1 { 1 } else { 2 };
        api.patch(
            "counter",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"job": {"parallelism": parallelism}}})),
        )
        .await
        .unwrap();
        let delay = Duration::from_millis(random.below(LATEST_KILL.as_millis() as u64));
        tokio::time::sleep(delay).await;

        let leader = holder(&leases).await.expect("the Lease names a leader");
        let killed = Instant::now();
        pods.delete(&leader, &DeleteParams::default().grace_period(0))
            .await
            .unwrap();
        let other = wait_for(
            "the other replica to take the Lease",
            LEASE_DURATION + RETRY_PERIOD * 3,
            || async { holder(&leases).await.filter(|h| *h != leader) },
        )
        .await;
        let takeover = killed.elapsed();
        eprintln!(
            "upgrade {upgrade}: {leader} killed {delay:?} after the spec change; {other} took over after {takeover:?}"
        );
        takeovers.push(takeover);
        // The Deployment's new pod follows, as the next kill's other replica.
        operator.wait_for_replicas(2).await;

        let upgraded = harness::running_job(&api, "counter", job.as_deref()).await;
        let since = SystemTime::now();
        let status = upgraded.status.unwrap();
        let job_status = status.job_status.unwrap();
        let savepoint = job_status.upgrade_savepoint_path.clone().unwrap();
        let recorded: flink_operator_api::FlinkDeploymentSpec = status
            .reconciliation_status
            .unwrap()
            .last_reconciled_spec()
            .unwrap()
            .unwrap();
        assert_eq!(recorded.job.unwrap().parallelism, Some(parallelism));
        // Exactly one savepoint per upgrade, whoever finished it...
        let taken: Vec<String> = std::fs::read_dir(state.join("savepoints"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            taken.len() as u64,
            upgrade,
            "upgrade {upgrade}: savepoints on disk: {taken:?}"
        );
        assert!(
            taken.iter().any(|t| savepoint.ends_with(t.as_str())),
            "{savepoint} is none of {taken:?}"
        );
        // ...restored by the new job...
        let endpoints = flink_operator_controller::flink::RestEndpoints::new(
            client.clone(),
            flink_operator_controller::flink::RestEndpointMode::EndpointSlice,
        );
        let url = endpoints
            .base_url(
                &ns.name,
                "counter-rest",
                8081,
                flink_operator_controller::flink::Scheme::Http,
            )
            .await
            .unwrap();
        let rest = flink_operator_controller::flink::FlinkRestClient::new(&url, Default::default()).unwrap();
        let id = flink_operator_controller::flink::JobId::from(job_status.job_id.as_deref().unwrap());
        let restored = harness::restored(&rest, &id).await;
        assert!(restored.is_savepoint);
        assert_eq!(restored.external_path.as_deref(), Some(savepoint.as_str()));
        // ...and the counts go on from the old job's.
        counts_went_on(&counts, &before, since, 0).await;
        before = flink_harness::read_counts(&counts);
        job = job_status.job_id;
    }
    let slowest = takeovers.iter().max().unwrap();
    eprintln!("failover: {UPGRADES} upgrades, takeovers {takeovers:?}, slowest {slowest:?}");
    assert!(*slowest <= LEASE_DURATION + RETRY_PERIOD);

    api.delete("counter", &DeleteParams::default()).await.unwrap();
    wait_for("the FlinkDeployment gone", Duration::from_secs(120), || async {
        api.get_opt("counter").await.ok()?.is_none().then_some(())
    })
    .await;
}
